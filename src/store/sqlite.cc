#include "store/sqlite.h"

#include <sqlite3.h>

#include <utility>

namespace fulcrum::store {
namespace {

Status SqliteError(sqlite3* db, std::string_view what) {
  std::string message = std::string(what) + ": " + (db ? sqlite3_errmsg(db) : "out of memory");
  int code = db ? sqlite3_errcode(db) : SQLITE_NOMEM;
  if (code == SQLITE_BUSY || code == SQLITE_LOCKED) return Status::Unavailable(message);
  if (code == SQLITE_CORRUPT || code == SQLITE_NOTADB) return Status::InvalidInput(message);
  return Status::IoError(message);
}

}  // namespace

Statement::~Statement() {
  if (stmt_) sqlite3_finalize(stmt_);
}

Statement::Statement(Statement&& other) noexcept
    : db_(std::exchange(other.db_, nullptr)),
      stmt_(std::exchange(other.stmt_, nullptr)),
      status_(std::move(other.status_)) {}

Statement& Statement::operator=(Statement&& other) noexcept {
  if (this != &other) {
    if (stmt_) sqlite3_finalize(stmt_);
    db_ = std::exchange(other.db_, nullptr);
    stmt_ = std::exchange(other.stmt_, nullptr);
    status_ = std::move(other.status_);
  }
  return *this;
}

Statement& Statement::Bind(int index, int64_t value) {
  sqlite3_bind_int64(stmt_, index, value);
  return *this;
}
Statement& Statement::Bind(int index, double value) {
  sqlite3_bind_double(stmt_, index, value);
  return *this;
}
Statement& Statement::Bind(int index, std::string_view value) {
  sqlite3_bind_text(stmt_, index, value.data(), static_cast<int>(value.size()), SQLITE_TRANSIENT);
  return *this;
}
Statement& Statement::Bind(int index, std::optional<double> value) {
  if (value) return Bind(index, *value);
  return BindNull(index);
}
Statement& Statement::BindNull(int index) {
  sqlite3_bind_null(stmt_, index);
  return *this;
}

bool Statement::Step() {
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc != SQLITE_DONE && status_.ok()) status_ = SqliteError(db_, "sqlite step");
  return false;
}

Status Statement::Run() {
  while (Step()) {
  }
  Status result = status_;
  Reset();
  return result;
}

void Statement::Reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
  status_ = Status::Ok();
}

int64_t Statement::ColumnInt(int column) const { return sqlite3_column_int64(stmt_, column); }
double Statement::ColumnDouble(int column) const { return sqlite3_column_double(stmt_, column); }
std::string Statement::ColumnText(int column) const {
  const unsigned char* text = sqlite3_column_text(stmt_, column);
  return text ? std::string(reinterpret_cast<const char*>(text),
                            static_cast<size_t>(sqlite3_column_bytes(stmt_, column)))
              : std::string();
}
bool Statement::ColumnIsNull(int column) const {
  return sqlite3_column_type(stmt_, column) == SQLITE_NULL;
}
std::optional<double> Statement::ColumnOptionalDouble(int column) const {
  if (ColumnIsNull(column)) return std::nullopt;
  return ColumnDouble(column);
}

Database::~Database() {
  if (db_) sqlite3_close_v2(db_);
}

Database::Database(Database&& other) noexcept
    : db_(std::exchange(other.db_, nullptr)), path_(std::move(other.path_)) {}

Database& Database::operator=(Database&& other) noexcept {
  if (this != &other) {
    if (db_) sqlite3_close_v2(db_);
    db_ = std::exchange(other.db_, nullptr);
    path_ = std::move(other.path_);
  }
  return *this;
}

Result<Database> Database::Open(const std::string& path, const Options& options) {
  sqlite3* raw = nullptr;
  int flags =
      options.read_only ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  flags |= SQLITE_OPEN_NOMUTEX;
  if (sqlite3_open_v2(path.c_str(), &raw, flags, nullptr) != SQLITE_OK) {
    Status status = SqliteError(raw, "cannot open database " + path);
    sqlite3_close_v2(raw);
    return status;
  }
  Database db(raw, path);
  sqlite3_busy_timeout(raw, options.busy_timeout_ms);
  if (path != ":memory:" && !options.read_only) {
    FULCRUM_RETURN_IF_ERROR(db.Exec("PRAGMA journal_mode=WAL"));
  }
  FULCRUM_RETURN_IF_ERROR(db.Exec("PRAGMA synchronous=" + options.synchronous));
  FULCRUM_RETURN_IF_ERROR(db.Exec("PRAGMA foreign_keys=ON"));
  return db;
}

Status Database::Exec(std::string_view sql) {
  std::string text(sql);
  char* error = nullptr;
  if (sqlite3_exec(db_, text.c_str(), nullptr, nullptr, &error) != SQLITE_OK) {
    Status status = SqliteError(db_, "sqlite exec");
    sqlite3_free(error);
    return status;
  }
  return Status::Ok();
}

Result<Statement> Database::Prepare(std::string_view sql) {
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v2(db_, sql.data(), static_cast<int>(sql.size()), &stmt, nullptr) !=
      SQLITE_OK) {
    return SqliteError(db_, "sqlite prepare '" + std::string(sql.substr(0, 60)) + "'");
  }
  return Statement(db_, stmt);
}

Result<int> Database::UserVersion() {
  FULCRUM_ASSIGN_OR_RETURN(Statement stmt, Prepare("PRAGMA user_version"));
  if (!stmt.Step())
    return stmt.status().ok() ? Status::Internal("no user_version row") : stmt.status();
  return static_cast<int>(stmt.ColumnInt(0));
}

Status Database::Migrate(int target_version, const char* const* migrations) {
  FULCRUM_ASSIGN_OR_RETURN(int current, UserVersion());
  if (current > target_version) {
    return Status::InvalidInput(path_ + ": schema version " + std::to_string(current) +
                                " is newer than this fulcrum understands (" +
                                std::to_string(target_version) + "); upgrade fulcrum");
  }
  for (int v = current; v < target_version; ++v) {
    FULCRUM_RETURN_IF_ERROR(Begin());
    Status status = Exec(migrations[v]);
    if (status.ok()) status = Exec("PRAGMA user_version=" + std::to_string(v + 1));
    if (!status.ok()) {
      (void)Rollback();
      return status.WithContext(path_ + ": migration to schema version " + std::to_string(v + 1));
    }
    FULCRUM_RETURN_IF_ERROR(Commit());
  }
  return Status::Ok();
}

Status Database::Begin() { return Exec("BEGIN IMMEDIATE"); }
Status Database::Commit() { return Exec("COMMIT"); }
Status Database::Rollback() { return Exec("ROLLBACK"); }
int64_t Database::LastInsertRowId() const { return sqlite3_last_insert_rowid(db_); }
int Database::Changes() const { return sqlite3_changes(db_); }

}  // namespace fulcrum::store
