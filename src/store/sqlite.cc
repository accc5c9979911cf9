#include "store/sqlite.h"

#include <fcntl.h>
#include <grp.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <thread>
#include <utility>
#include <vector>

namespace fulcrum::store {
namespace {

// What a damaged file's error carries in its ErrorDetail (IsDamagedDatabase looks for it).
constexpr const char* kDamagedExpected = "a readable SQLite database file";

// A damaged file (SQLITE_CORRUPT "database disk image is malformed", SQLITE_NOTADB "file is not
// a database"; https://www.sqlite.org/rescode.html) names itself and the way out.
Status DamagedError(sqlite3* db, std::string_view what) {
  const char* file = db ? sqlite3_db_filename(db, "main") : nullptr;
  const std::string path = file && *file ? file : "(in-memory database)";
  const std::string found = sqlite3_errmsg(db);
  ErrorDetail detail;
  detail.file = path;
  detail.expected = kDamagedExpected;
  detail.found = found;
  return Status::InvalidInput(path + ": " + std::string(what) + ": " + found +
                              ": the file is damaged; back it up, recover what can be read and "
                              "start a fresh file with: fulcrum doctor --repair-db " +
                              path)
      .WithDetail(std::move(detail));
}

Status SqliteError(sqlite3* db, std::string_view what) {
  int code = db ? sqlite3_errcode(db) : SQLITE_NOMEM;
  if (code == SQLITE_CORRUPT || code == SQLITE_NOTADB) return DamagedError(db, what);
  std::string message = std::string(what) + ": " + (db ? sqlite3_errmsg(db) : "out of memory");
  if (code == SQLITE_BUSY || code == SQLITE_LOCKED) return Status::Unavailable(message);
  return Status::IoError(message);
}

}  // namespace

bool IsDamagedDatabase(const Status& status) {
  return status.detail() != nullptr && status.detail()->expected == kDamagedExpected;
}

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

DataModes DataFileModes() {
  DataModes modes;
  std::vector<char> buffer(16384);
  group grp{};
  group* found = nullptr;
  if (getgrnam_r("fulcrum", &grp, buffer.data(), buffer.size(), &found) == 0 && found != nullptr) {
    // Only a member (or root) can hand a file to the group; otherwise stay private.
    bool member = getegid() == found->gr_gid || geteuid() == 0;
    std::vector<gid_t> groups(static_cast<size_t>(std::max(0, getgroups(0, nullptr))));
    int n = groups.empty() ? 0 : getgroups(static_cast<int>(groups.size()), groups.data());
    for (int i = 0; i < n && !member; ++i) member = groups[static_cast<size_t>(i)] == found->gr_gid;
    if (member) modes = {0640, 0750, static_cast<int>(found->gr_gid)};
  }
  return modes;
}

Status CreateDataDir(const std::string& dir) {
  namespace fs = std::filesystem;
  const DataModes modes = DataFileModes();
  std::vector<fs::path> missing;
  std::error_code ec;
  for (fs::path p = fs::absolute(dir, ec); !p.empty() && !fs::exists(p, ec); p = p.parent_path()) {
    missing.push_back(p);
    if (p == p.parent_path()) break;
  }
  for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
    if (::mkdir(it->c_str(), modes.dir_mode) != 0 && errno != EEXIST) {
      return Status::IoError("cannot create directory " + it->string() + ": " + strerror(errno));
    }
    // mkdir's mode is filtered by the umask; the data dir's mode must not depend on it.
    if (modes.group >= 0) (void)::chown(it->c_str(), static_cast<uid_t>(-1), modes.group);
    (void)::chmod(it->c_str(), modes.dir_mode);
  }
  return Status::Ok();
}

Status CreateDataFile(const std::string& path) {
  const DataModes modes = DataFileModes();
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, modes.file_mode);
  if (fd < 0) {
    if (errno == EEXIST) return Status::Ok();
    return Status::IoError("cannot create " + path + ": " + strerror(errno));
  }
  if (modes.group >= 0) (void)::fchown(fd, static_cast<uid_t>(-1), modes.group);
  (void)::fchmod(fd, modes.file_mode);
  ::close(fd);
  return Status::Ok();
}

namespace {

// Switches a database to WAL (which then stays: the journal mode is persistent, sqlite.org/wal.html
// "Persistence of WAL mode"; on a database already in WAL the pragma changes nothing). The switch
// needs the database to itself, and when several processes open a new database at once SQLite
// answers "database is locked" at once rather than through the busy handler (seen here: 3 of 550
// rounds of 20 concurrent `fulcrum run` on a new data dir, StoreHardeningTest), so the switch is
// retried for as long as the busy timeout allows.
Status UseWal(Database& db, int busy_timeout_ms) {
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(std::max(0, busy_timeout_ms));
  for (;;) {
    Status status = db.Exec("PRAGMA journal_mode=WAL");
    // SqliteError makes SQLITE_BUSY / SQLITE_LOCKED kUnavailable; anything else is final.
    if (status.ok() || status.code() != StatusCode::kUnavailable ||
        std::chrono::steady_clock::now() >= deadline) {
      return status;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

}  // namespace

Result<Database> Database::Open(const std::string& path, const Options& options) {
  sqlite3* raw = nullptr;
  // SQLite gives the -wal and -shm files the database file's mode and owner.
  if (!options.read_only && path != ":memory:" && !path.empty()) {
    FULCRUM_RETURN_IF_ERROR(CreateDataFile(path));
  }
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
    FULCRUM_RETURN_IF_ERROR(UseWal(db, options.busy_timeout_ms));
  }
  FULCRUM_RETURN_IF_ERROR(db.Exec("PRAGMA synchronous=" + options.synchronous));
  FULCRUM_RETURN_IF_ERROR(db.Exec("PRAGMA foreign_keys=ON"));
  return db;
}

Status Database::Exec(std::string_view sql) {
  std::string text(sql);
  // No error-message out-parameter: SqliteError reads sqlite3_errmsg, and the copy it would
  // allocate had to be freed with sqlite3_free, whose tail call into pthread_mutex_unlock
  // ThreadSanitizer attributes to this file while the lock happened inside libsqlite3.
  if (sqlite3_exec(db_, text.c_str(), nullptr, nullptr, nullptr) != SQLITE_OK) {
    return SqliteError(db_, "sqlite exec '" + text.substr(0, 60) + "'");
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
  FULCRUM_ASSIGN_OR_RETURN(int seen, UserVersion());
  FULCRUM_RETURN_IF_ERROR(CheckNotNewer(seen, target_version));
  if (seen == target_version) return Status::Ok();
  // Many first users of a new data dir migrate at once (20 `fulcrum run`, 50 `submit`): BEGIN
  // IMMEDIATE takes the write lock (waiting up to the busy timeout), and the version read again
  // under it is the truth; whoever came first has done the work, the others find nothing to do.
  FULCRUM_RETURN_IF_ERROR(Begin().WithContext(path_ + ": migration: cannot lock the database"));
  Result<int> current = UserVersion();
  Status status = current.ok() ? CheckNotNewer(*current, target_version) : current.status();
  for (int v = current.ok() ? *current : target_version; status.ok() && v < target_version; ++v) {
    status = Exec(migrations[v]);
    if (!status.ok()) {
      status = status.WithContext(path_ + ": migration to schema version " + std::to_string(v + 1));
    }
  }
  if (status.ok() && *current < target_version) {
    status = Exec("PRAGMA user_version=" + std::to_string(target_version));
  }
  if (!status.ok()) {
    (void)Rollback();
    return status;
  }
  return Commit();
}

Status Database::CheckNotNewer(int version, int target_version) const {
  if (version <= target_version) return Status::Ok();
  return Status::InvalidInput(path_ + ": schema version " + std::to_string(version) +
                              " is newer than this fulcrum understands (" +
                              std::to_string(target_version) + "); upgrade fulcrum");
}

Status Database::Begin() { return Exec("BEGIN IMMEDIATE"); }
Status Database::Commit() { return Exec("COMMIT"); }
Status Database::Rollback() { return Exec("ROLLBACK"); }
int64_t Database::LastInsertRowId() const { return sqlite3_last_insert_rowid(db_); }
int Database::Changes() const { return sqlite3_changes(db_); }

}  // namespace fulcrum::store
