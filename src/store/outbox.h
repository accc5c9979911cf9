// The durable outbox port: the plain record of one outgoing notification and the contract of a
// store that keeps them. The store knows no alert types: a notification is a receiver name, a
// format name and an opaque body. A notification is enqueued once (its id is the idempotency
// key; enqueueing an existing id is a no-op), fetched when due, then marked delivered,
// rescheduled with a growing attempt count, or marked failed (permanent error). SqliteOutbox
// (store/outbox_sqlite.h) implements it on agent.db; alert::MemoryOutbox serves tests.
// Implementations must be thread-safe: the sampling thread enqueues while delivery fetches.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "core/status.h"

namespace fulcrum::store {

struct Notification {
  std::string id;              // idempotency key, unique; sent as the Idempotency-Key header
  std::string receiver;        // receiver name (not its URL: secrets stay out of the store)
  std::string format;          // "generic", "alertmanager", ... (opaque to the store)
  std::string body;            // request body
  double created_at = 0;       // unix seconds
  int attempts = 0;            // POSTs tried so far
  double next_attempt_at = 0;  // unix seconds; due when <= now (created_at on enqueue)
  std::string last_error;      // redacted, for /v1 and logs
};

enum class DeliveryState { kPending, kDelivered, kFailed };

class Outbox {
 public:
  virtual ~Outbox() = default;
  // Stores `notification` (pending, due at its next_attempt_at). Existing id: no change, ok.
  virtual Status Enqueue(const Notification& notification) = 0;
  // Pending notifications with next_attempt_at <= now, oldest created first, at most `limit`;
  // only those for `receiver` unless it is "" (the delivery worker of one receiver).
  virtual Result<std::vector<Notification>> FetchDue(double now, size_t limit,
                                                     const std::string& receiver = "") = 0;
  // Delivered: no further attempts; attempts += 1 (the successful POST).
  virtual Status MarkDelivered(const std::string& id, double delivered_at) = 0;
  // Keeps it pending: attempts and next_attempt_at replaced, last_error recorded.
  virtual Status ScheduleRetry(const std::string& id, int attempts, double next_attempt_at,
                               const std::string& error) = 0;
  // Gives up (permanent HTTP 4xx, or too old): no further attempts.
  virtual Status MarkFailed(const std::string& id, int attempts, const std::string& error) = 0;
  // Pending notifications (due or not).
  virtual Result<size_t> PendingCount() = 0;
};

}  // namespace fulcrum::store
