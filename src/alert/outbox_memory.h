// The memory-backed outboxes of the alert side (beside store/outbox_sqlite.h, the SQLite one), for
// the durable outbox between the evaluator and the delivery worker: the port and its plain record
// are store::Outbox / store::Notification (store/outbox.h); the agent uses
// FallbackOutbox over store::SqliteOutbox (alerts never wait on the disk: what agent.db cannot
// take is kept and delivered from memory), tests and the supervisor MemoryOutbox. Both are
// thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/mutex.h"
#include "core/status.h"
#include "store/outbox.h"

namespace spdlog {
class logger;
}

namespace fulcrum::alert {

// The outbox record and port live in the store (which knows no alert types); alert code
// names them through these aliases.
using store::DeliveryState;
using store::Notification;
using store::Outbox;

// In-memory Outbox for tests, the supervisor, and FallbackOutbox's spill. Thread-safe.
class MemoryOutbox final : public Outbox {
 public:
  Status Enqueue(const Notification& notification) override;
  Result<std::vector<Notification>> FetchDue(double now_mono, size_t limit,
                                             const std::string& receiver = "") override;
  Status MarkDelivered(const std::string& id, double delivered_at) override;
  Status ScheduleRetry(const Notification& n) override;
  Status MarkFailed(const std::string& id, int attempts, const std::string& error) override;
  Result<size_t> PendingCount() override;
  Result<std::vector<std::string>> PendingIds(const std::string& receiver,
                                              const std::string& order_key) override;
  Status Rebase(double now_mono) override;
  // Enqueues `notification` ahead of every pending one (delivery order, PendingInOrder): the
  // agent's own disk_full alert goes out first. Existing id: no change, ok.
  Status EnqueueFirst(const Notification& notification);

  // Test inspection: state of an id (NotFound if never enqueued), and a copy of the entry.
  Result<DeliveryState> StateOf(const std::string& id);
  Result<Notification> Get(const std::string& id);
  // The pending notifications in enqueue order, and removal of one (FallbackOutbox's restore).
  std::vector<Notification> PendingInOrder();
  bool Contains(const std::string& id);
  void Erase(const std::string& id);

 private:
  struct Entry {
    Notification notification;
    DeliveryState state = DeliveryState::kPending;
    double delivered_at = 0;
    int64_t sequence = 0;  // delivery order: enqueue order, EnqueueFirst's below every other
  };
  Status Insert(const Notification& notification, int64_t sequence) REQUIRES(mutex_);
  Mutex mutex_;
  std::map<std::string, Entry> entries_ GUARDED_BY(mutex_);
  int64_t next_sequence_ GUARDED_BY(mutex_) = 0;
  int64_t next_first_sequence_ GUARDED_BY(mutex_) = -1;  // EnqueueFirst counts down
};

// The agent's outbox: `durable` (agent.db) while it takes writes; a notification it cannot store
// (disk full, I/O error, locked) is kept in memory and delivered from there, and an update it
// cannot take (delivered, rescheduled) is remembered, so that nothing waits for disk space. Once
// anything is held in memory every new notification joins it (so each alert's notifications keep
// their order); at most once per second it moves them back to the store in order. EnqueueFirst
// holds one ahead of all the others (the agent's own disk_full alert). At-least-once
// holds for what the store took; what only memory holds is lost if the agent stops first.
// DegradedReason() says so for /v1/health. Store errors are logged at most once a minute.
class FallbackOutbox final : public Outbox {
 public:
  // `durable` and `clock` must outlive this. `logger` null = spdlog's default.
  FallbackOutbox(Outbox& durable, const Clock& clock,
                 std::shared_ptr<spdlog::logger> logger = nullptr);

  Status Enqueue(const Notification& notification) override;
  Result<std::vector<Notification>> FetchDue(double now_mono, size_t limit,
                                             const std::string& receiver = "") override;
  Status MarkDelivered(const std::string& id, double delivered_at) override;
  Status ScheduleRetry(const Notification& n) override;
  Status MarkFailed(const std::string& id, int attempts, const std::string& error) override;
  Result<size_t> PendingCount() override;
  Result<std::vector<std::string>> PendingIds(const std::string& receiver,
                                              const std::string& order_key) override;
  Status Rebase(double now_mono) override;
  // Holds `notification` in memory ahead of every pending one, stored or not: FetchDue returns
  // it (when due) before the others, and it moves to the store with the rest once the store
  // works. For the agent's own disk_full alert, which the store is refusing anyway.
  Status EnqueueFirst(const Notification& notification);

  // The store's last refusal since it last took a write: its error and when (monotonic
  // seconds); at_mono < 0 when there is none.
  struct StoreRefusal {
    std::string error;
    double at_mono = -1;
  };
  StoreRefusal LastStoreRefusal();

  // "" while the store holds every notification and update; else why it does not (the store's
  // error) and how many notifications live in memory only.
  std::string DegradedReason();

 private:
  struct Unsaved {  // an update the store refused, applied again by Restore
    DeliveryState state = DeliveryState::kPending;
    Notification notification;  // kPending: the rescheduled fields
    double delivered_at = 0;
    int attempts = 0;
    std::string error;
  };
  Status Apply(const std::string& id, const Unsaved& update) REQUIRES(mutex_);
  void Update(const std::string& id, Unsaved update) REQUIRES(mutex_);
  void Restore(bool force) REQUIRES(mutex_);
  void NoteStoreError(const Status& status, const char* what) REQUIRES(mutex_);
  bool Finished(const std::string& id) const REQUIRES(mutex_);

  Outbox& durable_;
  const Clock& clock_;
  std::shared_ptr<spdlog::logger> logger_;
  MemoryOutbox memory_;  // notifications the store did not take (thread-safe itself)
  Mutex mutex_;
  std::map<std::string, Unsaved> unsaved_ GUARDED_BY(mutex_);
  std::string store_error_ GUARDED_BY(mutex_);
  double store_error_mono_ GUARDED_BY(mutex_) = -1;  // when store_error_ was set
  std::set<std::string> first_ GUARDED_BY(mutex_);   // EnqueueFirst's ids held in memory
  double last_restore_mono_ GUARDED_BY(mutex_) = -1e18;
  double last_log_mono_ GUARDED_BY(mutex_) = -1e18;
  size_t unlogged_errors_ GUARDED_BY(mutex_) = 0;
};

}  // namespace fulcrum::alert
