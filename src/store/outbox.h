// The durable outbox port: the plain record of one outgoing notification and the contract of a
// store that keeps them. The store knows no alert types: a notification is a receiver name, a
// format name, an ordering key and an opaque body. A notification is enqueued once (its id is the
// idempotency key; enqueueing an existing id is a no-op), fetched when due, then marked delivered,
// rescheduled with a growing attempt count, or marked failed (permanent error). Scheduling runs on
// the monotonic clock (due_mono, touched_mono: Clock::MonotonicSeconds); the wall-clock times are
// kept for humans only, so a wall-clock step neither holds nor ages a notification.
// SqliteOutbox (store/outbox_sqlite.h) implements it on agent.db; alert::MemoryOutbox serves tests.
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
  std::string order_key;       // same receiver and key: delivered in enqueue order ("" = no order)
  double created_at = 0;       // unix seconds (for humans)
  int attempts = 0;            // POSTs tried so far
  double next_attempt_at = 0;  // unix seconds of the planned next attempt (for humans)
  std::string last_error;      // redacted, for /v1 and logs
  // Scheduling, on the monotonic clock of the process that delivers (Outbox::Rebase moves the
  // stamps of an earlier process onto the current one).
  double due_mono = 0;       // attempted when due_mono <= now (0: at once)
  double age_seconds = 0;    // time spent pending up to touched_mono
  double touched_mono = -1;  // when age_seconds was measured; < 0: not yet (age counts from the
                             // first time a worker reschedules it)
};

enum class DeliveryState { kPending, kDelivered, kFailed };

class Outbox {
 public:
  virtual ~Outbox() = default;
  // Stores `notification` (pending, due at its due_mono). Existing id: no change, ok.
  virtual Status Enqueue(const Notification& notification) = 0;
  // Pending notifications with due_mono <= now_mono that have no earlier pending notification of
  // the same receiver and non-empty order_key (an alert's firing goes before its resolved), in
  // enqueue order, at most `limit`; only those for `receiver` unless it is "".
  virtual Result<std::vector<Notification>> FetchDue(double now_mono, size_t limit,
                                                     const std::string& receiver = "") = 0;
  // Delivered: no further attempts; attempts += 1 (the successful POST).
  virtual Status MarkDelivered(const std::string& id, double delivered_at) = 0;
  // Keeps `n.id` pending with n's attempts, next_attempt_at, due_mono, age_seconds, touched_mono
  // and last_error.
  virtual Status ScheduleRetry(const Notification& n) = 0;
  // Gives up (permanent HTTP 4xx, or too old): no further attempts.
  virtual Status MarkFailed(const std::string& id, int attempts, const std::string& error) = 0;
  // Pending notifications (due or not).
  virtual Result<size_t> PendingCount() = 0;
  // Ids of the pending notifications of `receiver` with `order_key`, in enqueue order.
  virtual Result<std::vector<std::string>> PendingIds(const std::string& receiver,
                                                      const std::string& order_key) = 0;
  // A new process's monotonic clock: every pending notification becomes due at `now_mono`, and
  // its age stamp moves there (the time the agent was down is not counted as pending).
  virtual Status Rebase(double now_mono) = 0;
};

}  // namespace fulcrum::store
