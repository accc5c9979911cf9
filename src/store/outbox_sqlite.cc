#include "store/outbox_sqlite.h"

#include "store/agent_db.h"

namespace fulcrum::store {

Status InsertNotification(Database& db, const Notification& n) {
  FULCRUM_ASSIGN_OR_RETURN(
      Statement s,
      db.Prepare("INSERT OR IGNORE INTO outbox (id, receiver, format, body, created_at, attempts, "
                 "next_attempt_at, last_error, state, order_key, due_mono, age_seconds, "
                 "touched_mono) VALUES (?,?,?,?,?,?,?,?,'pending',?,?,?,?)"));
  s.Bind(1, std::string_view(n.id))
      .Bind(2, std::string_view(n.receiver))
      .Bind(3, std::string_view(n.format))
      .Bind(4, std::string_view(n.body))
      .Bind(5, n.created_at)
      .Bind(6, static_cast<int64_t>(n.attempts))
      .Bind(7, n.next_attempt_at)
      .Bind(8, std::string_view(n.last_error))
      .Bind(9, std::string_view(n.order_key))
      .Bind(10, n.due_mono)
      .Bind(11, n.age_seconds)
      .Bind(12, n.touched_mono);
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

Result<std::vector<Notification>> SqliteOutbox::FetchDue(double now_mono, size_t limit,
                                                         const std::string& receiver) {
  MutexLock lock(mutex_);
  // rowid is the enqueue order (the wall-clock created_at may step back). A notification waits
  // while an earlier one of its receiver and order_key is pending, due or not.
  FULCRUM_ASSIGN_OR_RETURN(
      Statement s,
      db_.Prepare(
          "SELECT id, receiver, format, body, created_at, attempts, next_attempt_at, last_error, "
          "order_key, due_mono, age_seconds, touched_mono FROM outbox AS o "
          "WHERE state = 'pending' AND due_mono <= ?1 AND (?3 = '' OR receiver = ?3) "
          "AND (order_key = '' OR NOT EXISTS (SELECT 1 FROM outbox AS p WHERE "
          "p.state = 'pending' AND p.receiver = o.receiver AND p.order_key = o.order_key "
          "AND p.rowid < o.rowid)) ORDER BY rowid LIMIT ?2"));
  s.Bind(1, now_mono).Bind(2, static_cast<int64_t>(limit)).Bind(3, std::string_view(receiver));
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
    n.order_key = s.ColumnText(8);
    n.due_mono = s.ColumnDouble(9);
    n.age_seconds = s.ColumnDouble(10);
    n.touched_mono = s.ColumnDouble(11);
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

Status SqliteOutbox::ScheduleRetry(const Notification& n) {
  MutexLock lock(mutex_);
  FULCRUM_ASSIGN_OR_RETURN(
      Statement s,
      db_.Prepare("UPDATE outbox SET attempts = ?, next_attempt_at = ?, last_error = ?, "
                  "due_mono = ?, age_seconds = ?, touched_mono = ? "
                  "WHERE id = ? AND state = 'pending'"));
  return s.Bind(1, static_cast<int64_t>(n.attempts))
      .Bind(2, n.next_attempt_at)
      .Bind(3, std::string_view(n.last_error))
      .Bind(4, n.due_mono)
      .Bind(5, n.age_seconds)
      .Bind(6, n.touched_mono)
      .Bind(7, std::string_view(n.id))
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

Result<std::vector<std::string>> SqliteOutbox::PendingIds(const std::string& receiver,
                                                          const std::string& order_key) {
  MutexLock lock(mutex_);
  FULCRUM_ASSIGN_OR_RETURN(Statement s,
                           db_.Prepare("SELECT id FROM outbox WHERE state = 'pending' AND "
                                       "receiver = ? AND order_key = ? ORDER BY rowid"));
  s.Bind(1, std::string_view(receiver)).Bind(2, std::string_view(order_key));
  std::vector<std::string> ids;
  while (s.Step()) ids.push_back(s.ColumnText(0));
  FULCRUM_RETURN_IF_ERROR(s.status());
  return ids;
}

Status SqliteOutbox::Rebase(double now_mono) {
  MutexLock lock(mutex_);
  FULCRUM_ASSIGN_OR_RETURN(
      Statement s,
      db_.Prepare("UPDATE outbox SET due_mono = ?1, "
                  "touched_mono = CASE WHEN touched_mono < 0 THEN touched_mono ELSE ?1 END "
                  "WHERE state = 'pending'"));
  return s.Bind(1, now_mono).Run();
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
