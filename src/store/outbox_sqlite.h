// SqliteOutbox: the Outbox contract on the agent's store (table `outbox` of agent.db).
// Every call is its own committed transaction, so a notification once enqueued survives kill -9
// and is delivered at least once. Thread-safe: one connection guarded by a mutex (the sampler
// enqueues, usually through AgentDb::Write in the same transaction as its alert; the delivery
// thread fetches and marks).
#pragma once

#include <memory>
#include <string>

#include "core/mutex.h"
#include "store/outbox.h"
#include "store/sqlite.h"

namespace fulcrum::store {

// Inserts `n` as pending unless its id exists (used inside AgentDb::Write's transaction too).
Status InsertNotification(Database& db, const Notification& n);

class SqliteOutbox final : public Outbox {
 public:
  // Opens its own connection to the agent.db at `path` (created and migrated by AgentDb::Open
  // first).
  static Result<std::unique_ptr<SqliteOutbox>> Open(const std::string& path);

  Status Enqueue(const Notification& notification) override;
  Result<std::vector<Notification>> FetchDue(double now, size_t limit,
                                             const std::string& receiver = "") override;
  Status MarkDelivered(const std::string& id, double delivered_at) override;
  Status ScheduleRetry(const Notification& n) override;
  Status MarkFailed(const std::string& id, int attempts, const std::string& error) override;
  Result<size_t> PendingCount() override;
  Result<std::vector<std::string>> PendingIds(const std::string& receiver,
                                              const std::string& order_key) override;
  Status Rebase(double now_mono) override;

  // "pending" | "delivered" | "failed"; kNotFound for an unknown id. For tests and /v1.
  Result<std::string> StateOf(const std::string& id);

 private:
  explicit SqliteOutbox(Database db) : db_(std::move(db)) {}
  Mutex mutex_;
  Database db_ GUARDED_BY(mutex_);
};

}  // namespace fulcrum::store
