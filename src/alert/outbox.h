// The alert side of the durable outbox between the evaluator and the delivery worker: the port
// and its plain record are store::Outbox / store::Notification (store/outbox.h); the agent uses
// store::SqliteOutbox, tests MemoryOutbox (in memory, thread-safe).
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "core/mutex.h"
#include "core/status.h"
#include "store/outbox.h"

namespace fulcrum::alert {

// The outbox record and port live in the store (which knows no alert types); alert code
// names them through these aliases.
using store::DeliveryState;
using store::Notification;
using store::Outbox;

// In-memory Outbox for tests (and a fallback without a store). Thread-safe.
class MemoryOutbox final : public Outbox {
 public:
  Status Enqueue(const Notification& notification) override;
  Result<std::vector<Notification>> FetchDue(double now, size_t limit,
                                             const std::string& receiver = "") override;
  Status MarkDelivered(const std::string& id, double delivered_at) override;
  Status ScheduleRetry(const std::string& id, int attempts, double next_attempt_at,
                       const std::string& error) override;
  Status MarkFailed(const std::string& id, int attempts, const std::string& error) override;
  Result<size_t> PendingCount() override;

  // Test inspection: state of an id (NotFound if never enqueued), and a copy of the entry.
  Result<DeliveryState> StateOf(const std::string& id);
  Result<Notification> Get(const std::string& id);

 private:
  struct Entry {
    Notification notification;
    DeliveryState state = DeliveryState::kPending;
    double delivered_at = 0;
    size_t sequence = 0;  // enqueue order, breaks created_at ties
  };
  Mutex mutex_;
  std::map<std::string, Entry> entries_ GUARDED_BY(mutex_);
  size_t next_sequence_ GUARDED_BY(mutex_) = 0;
};

}  // namespace fulcrum::alert
