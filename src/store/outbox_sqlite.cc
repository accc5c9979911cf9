#include "store/outbox_sqlite.h"

#include "store/agent_db.h"

namespace fulcrum::store {

Status InsertNotification(Database& db, const Notification& n) {
  FULCRUM_ASSIGN_OR_RETURN(
      Statement s,
      db.Prepare("INSERT OR IGNORE INTO outbox (id, receiver, format, body, created_at, attempts, "
                 "next_attempt_at, last_error, state) VALUES (?,?,?,?,?,?,?,?,'pending')"));
  s.Bind(1, std::string_view(n.id))
      .Bind(2, std::string_view(n.receiver))
      .Bind(3, std::string_view(n.format))
      .Bind(4, std::string_view(n.body))
      .Bind(5, n.created_at)
      .Bind(6, static_cast<int64_t>(n.attempts))
      .Bind(7, n.next_attempt_at)
      .Bind(8, std::string_view(n.last_error));
  return s.Run();
}

Result<std::unique_ptr<SqliteOutbox>> SqliteOutbox::Open(const std::string& path) {
  // Migrates if this is the first connection (idempotent when AgentDb opened it already).
  { FULCRUM_ASSIGN_OR_RETURN(AgentDb created, AgentDb::Open(path)); }
  FULCRUM_ASSIGN_OR_RETURN(Database db, Database::Open(path));
  return std::unique_ptr<SqliteOutbox>(new SqliteOutbox(std::move(db)));
}

Status SqliteOutbox::Enqueue(const Notification& notification) {
  MutexLock lock(mutex_);
  return InsertNotification(db_, notification);
}

Result<std::vector<Notification>> SqliteOutbox::FetchDue(double now, size_t limit,
                                                         const std::string& receiver) {
  MutexLock lock(mutex_);
  FULCRUM_ASSIGN_OR_RETURN(
      Statement s,
      db_.Prepare("SELECT id, receiver, format, body, created_at, attempts, next_attempt_at, "
                  "last_error FROM outbox WHERE state = 'pending' AND next_attempt_at <= ?1 "
                  "AND (?3 = '' OR receiver = ?3) ORDER BY created_at, rowid LIMIT ?2"));
  s.Bind(1, now).Bind(2, static_cast<int64_t>(limit)).Bind(3, std::string_view(receiver));
  std::vector<Notification> out;
  while (s.Step()) {
    Notification n;
    n.id = s.ColumnText(0);
    n.receiver = s.ColumnText(1);
    n.format = s.ColumnText(2);
    n.body = s.ColumnText(3);
    n.created_at = s.ColumnDouble(4);
    n.attempts = static_cast<int>(s.ColumnInt(5));
    n.next_attempt_at = s.ColumnDouble(6);
    n.last_error = s.ColumnText(7);
    out.push_back(std::move(n));
  }
  FULCRUM_RETURN_IF_ERROR(s.status());
  return out;
}

Status SqliteOutbox::MarkDelivered(const std::string& id, double delivered_at) {
  MutexLock lock(mutex_);
  FULCRUM_ASSIGN_OR_RETURN(
      Statement s,
      db_.Prepare(
          "UPDATE outbox SET state = 'delivered', delivered_at = ?, attempts = attempts + 1 "
          "WHERE id = ?"));
  return s.Bind(1, delivered_at).Bind(2, std::string_view(id)).Run();
}

Status SqliteOutbox::ScheduleRetry(const std::string& id, int attempts, double next_attempt_at,
                                   const std::string& error) {
  MutexLock lock(mutex_);
  FULCRUM_ASSIGN_OR_RETURN(
      Statement s,
      db_.Prepare("UPDATE outbox SET attempts = ?, next_attempt_at = ?, last_error = ? "
                  "WHERE id = ? AND state = 'pending'"));
  return s.Bind(1, static_cast<int64_t>(attempts))
      .Bind(2, next_attempt_at)
      .Bind(3, std::string_view(error))
      .Bind(4, std::string_view(id))
      .Run();
}

Status SqliteOutbox::MarkFailed(const std::string& id, int attempts, const std::string& error) {
  MutexLock lock(mutex_);
  FULCRUM_ASSIGN_OR_RETURN(
      Statement s, db_.Prepare("UPDATE outbox SET state = 'failed', attempts = ?, last_error = ? "
                               "WHERE id = ?"));
  return s.Bind(1, static_cast<int64_t>(attempts))
      .Bind(2, std::string_view(error))
      .Bind(3, std::string_view(id))
      .Run();
}

Result<size_t> SqliteOutbox::PendingCount() {
  MutexLock lock(mutex_);
  FULCRUM_ASSIGN_OR_RETURN(Statement s,
                           db_.Prepare("SELECT COUNT(*) FROM outbox WHERE state = 'pending'"));
  if (!s.Step()) return s.status();
  return static_cast<size_t>(s.ColumnInt(0));
}

Result<std::string> SqliteOutbox::StateOf(const std::string& id) {
  MutexLock lock(mutex_);
  FULCRUM_ASSIGN_OR_RETURN(Statement s, db_.Prepare("SELECT state FROM outbox WHERE id = ?"));
  s.Bind(1, std::string_view(id));
  if (!s.Step()) {
    FULCRUM_RETURN_IF_ERROR(s.status());
    return Status::NotFound("no outbox entry " + id);
  }
  return s.ColumnText(0);
}

}  // namespace fulcrum::store
