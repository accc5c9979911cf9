// Repair of a damaged fulcrum database (agent.db, jobs.db): what `fulcrum doctor --repair-db`
// does, and the agent's "move the damaged file aside and start fresh". A repair backs the file up
// (a copy beside it), rebuilds a header whose fixed fields were overwritten, salvages the rows
// SQLite can still read table by table (Debian 12's `sqlite3 .recover` cannot run: its libsqlite3
// 3.40 lacks the sqlite_dbpage table it needs, and the library has no recovery API), and replaces
// the file with a fresh one at the current schema holding them. Not thread-safe; nothing else may
// have the file open while it runs (stop the agent / the job first).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"

namespace fulcrum::store {

struct RepairReport {
  std::string path;
  bool healthy = false;         // the file passed PRAGMA quick_check: nothing was done
  std::string kind;             // "agent.db" | "jobs.db": the schema the fresh file was given
  std::string backup_path;      // the damaged file as it was (its -wal beside it with "-wal")
  bool header_rebuilt = false;  // the first 100 bytes were rebuilt before recovery
  std::string recover_error;    // why nothing could be salvaged ("" when the tables were read)
  // Rows carried into the fresh file, per table of its schema, in schema order.
  std::vector<std::pair<std::string, int64_t>> rows;
  // Tables whose scan met damaged pages: some of their rows stay in the backup only.
  std::vector<std::string> incomplete;
};

// Repairs the file at `path` (see the header comment). NotFound when it does not exist;
// kInvalidInput when it is neither an agent.db nor a jobs.db (by name or by its tables).
// `now_unix` stamps the backup's name (<path>.damaged-YYYYMMDDTHHMMSSZ).
Result<RepairReport> RepairDatabase(const std::string& path, double now_unix);

// Renames the damaged file at `path` (and its -wal, -shm) to <path>.damaged-<UTC stamp> so that
// a fresh file can take its place; returns the new path.
Result<std::string> MoveDamagedAside(const std::string& path, double now_unix);

// "SQLite format 3\0" and the other fixed fields of a database header (the file's first 100
// bytes). Whether `header` (at least 100 bytes) has them; RebuildHeader writes them into the
// file at `path`, keeping a valid page size and otherwise assuming SQLite's default of 4096.
bool HeaderLooksValid(const std::string& header);
Status RebuildHeader(const std::string& path);

}  // namespace fulcrum::store
