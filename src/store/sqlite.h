// A small RAII wrapper over SQLite (the C API), shared by every module that stores state: the
// agent's samples, rollups, alerts and outbox, and the supervisor's jobs and ledger. A Database
// owns one connection (WAL mode, busy timeout, foreign keys on); a Statement owns one prepared
// statement. Neither is thread-safe: give each thread its own Database (SQLite serialises
// writers between connections). Schema versions are kept in PRAGMA user_version and checked on
// open, so a newer file is refused instead of misread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/status.h"

struct sqlite3;
struct sqlite3_stmt;

namespace fulcrum::store {

// Permissions of fulcrum's data files (agent.db, jobs.db and their -wal/-shm, locks, logs) and
// of the directories it creates for them: 0640 / 0750 owned by group `fulcrum` where that group
// exists and this process may give files to it (the packaged unit creates it, so the agent and a
// user's `fulcrum run` can share one data dir); otherwise 0600 / 0700.
struct DataModes {
  unsigned file_mode = 0600;
  unsigned dir_mode = 0700;
  int group = -1;  // gid of `fulcrum`, -1 = none
};
DataModes DataFileModes();
// Creates `dir` and its missing parents with DataFileModes() (existing ones are left as
// they are).
Status CreateDataDir(const std::string& dir);
// Creates `path` empty with DataFileModes() unless it exists; an existing file keeps its mode.
Status CreateDataFile(const std::string& path);

// Whether `status` is SQLite's report of a damaged file (corrupt pages, or not a database at
// all). Its message names the file and the way out (`fulcrum doctor --repair-db PATH`); its
// detail().file is the path.
bool IsDamagedDatabase(const Status& status);

class Statement {
 public:
  Statement() = default;
  ~Statement();
  Statement(Statement&& other) noexcept;
  Statement& operator=(Statement&& other) noexcept;
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  // Binds are 1-based like SQLite's. nullopt binds NULL.
  Statement& Bind(int index, int64_t value);
  Statement& Bind(int index, double value);
  Statement& Bind(int index, std::string_view value);
  Statement& Bind(int index, std::optional<double> value);
  Statement& BindNull(int index);

  // Advances: true when a row is available, false when done; a failure is kept in status().
  bool Step();
  // Runs to completion (for INSERT/UPDATE/DELETE); returns the first error.
  Status Run();
  // Resets for re-execution with new binds (keeps the compiled statement).
  void Reset();

  int64_t ColumnInt(int column) const;
  double ColumnDouble(int column) const;
  std::string ColumnText(int column) const;
  bool ColumnIsNull(int column) const;
  std::optional<double> ColumnOptionalDouble(int column) const;

  const Status& status() const { return status_; }

 private:
  friend class Database;
  Statement(sqlite3* db, sqlite3_stmt* stmt) : db_(db), stmt_(stmt) {}
  sqlite3* db_ = nullptr;
  sqlite3_stmt* stmt_ = nullptr;
  Status status_;
};

class Database {
 public:
  struct Options {
    bool read_only = false;
    int busy_timeout_ms = 5000;
    // "NORMAL" is durable to the last committed transaction across process crashes in WAL mode
    // (kill -9 loses nothing committed); "FULL" also survives power loss.
    std::string synchronous = "NORMAL";
  };

  ~Database();
  Database(Database&& other) noexcept;
  Database& operator=(Database&& other) noexcept;
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  // Opens (creating if needed, with CreateDataFile's modes) the file at `path` (":memory:" for
  // a private in-memory DB).
  static Result<Database> Open(const std::string& path, const Options& options);
  static Result<Database> Open(const std::string& path) { return Open(path, Options{}); }

  // Runs one or more ';'-separated statements without results.
  Status Exec(std::string_view sql);
  Result<Statement> Prepare(std::string_view sql);

  // Schema versioning. Migrate brings user_version from its current value up to
  // `target_version` by running migrations[v] for each v in [current, target), all in one
  // BEGIN IMMEDIATE transaction that reads the version again under the write lock: concurrent
  // first users of a new file all succeed (one migrates, the others find it done). It refuses a
  // file whose version is newer than `target_version`.
  Result<int> UserVersion();
  Status Migrate(int target_version, const char* const* migrations);

  // BEGIN IMMEDIATE / COMMIT / ROLLBACK.
  Status Begin();
  Status Commit();
  Status Rollback();

  int64_t LastInsertRowId() const;
  int Changes() const;
  const std::string& path() const { return path_; }
  sqlite3* raw() const { return db_; }

 private:
  Status CheckNotNewer(int version, int target_version) const;
  explicit Database(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  sqlite3* db_ = nullptr;
  std::string path_;
};

}  // namespace fulcrum::store
