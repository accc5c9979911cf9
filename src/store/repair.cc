#include "store/repair.h"

#include <sqlite3.h>

#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <set>

#include "store/agent_db.h"
#include "store/jobs.h"
#include "store/sqlite.h"

namespace fulcrum::store {
namespace {
namespace fs = std::filesystem;

// The database header (https://www.sqlite.org/fileformat2.html, section 1.3 "The Database
// Header"): the magic string at offset 0, the page size (big-endian u16 at 16; 1 = 65536),
// the maximum / minimum / leaf payload fractions (bytes 21-23), which "must be 64, 32, 32".
constexpr char kMagic[16] = {'S', 'Q', 'L', 'i', 't', 'e', ' ', 'f',
                             'o', 'r', 'm', 'a', 't', ' ', '3', '\0'};
constexpr size_t kHeaderBytes = 100;
// SQLITE_DEFAULT_PAGE_SIZE since SQLite 3.12.0 (https://www.sqlite.org/pgszchng2016.html);
// fulcrum never sets page_size, so its files have it.
constexpr unsigned kDefaultPageSize = 4096;

std::string UtcStamp(double now_unix) {
  const std::time_t t = static_cast<std::time_t>(now_unix);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y%m%dT%H%M%SZ", &tm);
  return text;
}

unsigned PageSizeOf(const std::string& header) {
  const unsigned raw =
      (static_cast<unsigned char>(header[16]) << 8) | static_cast<unsigned char>(header[17]);
  const unsigned size = raw == 1 ? 65536 : raw;
  const bool power_of_two = size != 0 && (size & (size - 1)) == 0;
  return power_of_two && size >= 512 && size <= 65536 ? size : 0;
}

void PutBigEndian32(std::string& header, size_t offset, uint32_t value) {
  for (int i = 0; i < 4; ++i)
    header[offset + static_cast<size_t>(i)] = static_cast<char>(value >> (24 - 8 * i));
}

Status RemoveFileAndJournals(const std::string& path) {
  std::error_code ec;
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) fs::remove(path + suffix, ec);
  return Status::Ok();
}

// Copies `from` (and its -wal, when there is one) to `to` (and `to`-wal).
Status CopyWithWal(const std::string& from, const std::string& to) {
  for (const char* suffix : {"", "-wal"}) {
    std::error_code ec;
    const std::string source = from + suffix;
    if (*suffix != '\0' && !fs::exists(source, ec)) continue;
    fs::copy_file(source, to + suffix, fs::copy_options::overwrite_existing, ec);
    if (ec)
      return Status::IoError("cannot copy " + source + " to " + to + suffix + ": " + ec.message());
  }
  return Status::Ok();
}

Result<std::vector<std::string>> TableNames(Database& db, const std::string& schema) {
  FULCRUM_ASSIGN_OR_RETURN(Statement s, db.Prepare("SELECT name FROM " + schema +
                                                   ".sqlite_master WHERE type = 'table' AND "
                                                   "name NOT LIKE 'sqlite_%' ORDER BY rootpage"));
  std::vector<std::string> names;
  while (s.Step()) names.push_back(s.ColumnText(0));
  FULCRUM_RETURN_IF_ERROR(s.status());
  return names;
}

Result<std::set<std::string>> ColumnNames(Database& db, const std::string& schema,
                                          const std::string& table) {
  FULCRUM_ASSIGN_OR_RETURN(Statement s,
                           db.Prepare("PRAGMA " + schema + ".table_info(\"" + table + "\")"));
  std::set<std::string> names;
  while (s.Step()) names.insert(s.ColumnText(1));
  FULCRUM_RETURN_IF_ERROR(s.status());
  return names;
}

std::string Quote(const std::string& name) { return "\"" + name + "\""; }

// Copies the rows `select` reads on `from` into `to` with `insert`, row by row, so that a
// damaged page ends the scan, not the copy (two connections: an error reading the damaged file
// cannot touch the fresh file's transaction). `complete`: the scan reached the end.
int64_t CopyRows(sqlite3* from, const std::string& select, sqlite3* to, const std::string& insert,
                 int columns, bool& complete) {
  sqlite3_stmt* read = nullptr;
  sqlite3_stmt* write = nullptr;
  int64_t rows = 0;
  complete = false;
  if (sqlite3_prepare_v2(from, select.c_str(), -1, &read, nullptr) == SQLITE_OK &&
      sqlite3_prepare_v2(to, insert.c_str(), -1, &write, nullptr) == SQLITE_OK) {
    int rc = SQLITE_OK;
    while ((rc = sqlite3_step(read)) == SQLITE_ROW) {
      for (int i = 0; i < columns; ++i) {
        sqlite3_bind_value(write, i + 1, sqlite3_column_value(read, i));
      }
      if (sqlite3_step(write) == SQLITE_DONE) rows += sqlite3_changes(to);
      sqlite3_reset(write);
    }
    complete = rc == SQLITE_DONE;
  }
  sqlite3_finalize(read);
  sqlite3_finalize(write);
  return rows;
}

// Salvages the rows of every table of the fresh file's schema from `damaged` (the columns both
// have; rows breaking a constraint are left out): a forward scan, and when it meets damage, a
// backward scan (by rowid) that gets the rows after the damaged pages.
Status CopyRecoveredRows(Database& damaged, Database& fresh, RepairReport& report) {
  FULCRUM_ASSIGN_OR_RETURN(std::vector<std::string> tables, TableNames(fresh, "main"));
  auto found = TableNames(damaged, "main");
  if (!found.ok()) {
    report.recover_error = "its list of tables (page 1) is unreadable: " + found.status().message();
    found = std::vector<std::string>{};
  }
  const std::set<std::string> recovered(found->begin(), found->end());
  FULCRUM_RETURN_IF_ERROR(fresh.Begin());
  for (const std::string& table : tables) {
    int64_t rows = 0;
    auto theirs = ColumnNames(damaged, "main", table);
    if (recovered.count(table) > 0 && theirs.ok()) {
      FULCRUM_ASSIGN_OR_RETURN(auto ours, ColumnNames(fresh, "main", table));
      std::string columns, slots;
      int count = 0;
      for (const std::string& c : ours) {
        if (theirs->count(c) == 0) continue;
        columns += (columns.empty() ? "" : ", ") + Quote(c);
        slots += count++ == 0 ? "?" : ", ?";
      }
      const std::string select = "SELECT " + columns + " FROM " + Quote(table);
      const std::string insert =
          "INSERT OR IGNORE INTO " + Quote(table) + " (" + columns + ") VALUES (" + slots + ")";
      bool complete = false;
      if (count > 0) rows = CopyRows(damaged.raw(), select, fresh.raw(), insert, count, complete);
      if (count > 0 && !complete) {
        bool ignored = false;  // a WITHOUT ROWID table has no rowid to scan backwards by
        rows += CopyRows(damaged.raw(), select + " ORDER BY rowid DESC", fresh.raw(), insert, count,
                         ignored);
        report.incomplete.push_back(table);
      }
    }
    report.rows.emplace_back(table, rows);
  }
  return fresh.Commit();
}

// Attaches the file at `path` to `db` as `recovered`.
Status AttachRecovered(Database& db, const std::string& path) {
  FULCRUM_ASSIGN_OR_RETURN(Statement attach, db.Prepare("ATTACH DATABASE ? AS recovered"));
  return attach.Bind(1, std::string_view(path)).Run();
}

// "agent.db" or "jobs.db": by the file's name, else by the tables of `work` (its copy).
Result<std::string> KindOf(const std::string& path, const std::string& work) {
  const std::string name = fs::path(path).filename().string();
  for (const char* kind : {"agent.db", "jobs.db"}) {
    if (name.rfind(kind, 0) == 0) return std::string(kind);
  }
  FULCRUM_ASSIGN_OR_RETURN(Database probe, Database::Open(":memory:"));
  FULCRUM_RETURN_IF_ERROR(AttachRecovered(probe, work));
  FULCRUM_ASSIGN_OR_RETURN(std::vector<std::string> tables, TableNames(probe, "recovered"));
  const std::set<std::string> have(tables.begin(), tables.end());
  if (have.count("samples") > 0) return std::string("agent.db");
  if (have.count("jobs") > 0) return std::string("jobs.db");
  return Status::InvalidInput(path + ": neither an agent.db nor a jobs.db (by its name or by " +
                              "the tables recovered from it): nothing to rebuild it as");
}

// A fresh file at `path` with the current schema of `kind`.
Status CreateFresh(const std::string& path, const std::string& kind) {
  (void)RemoveFileAndJournals(path);
  if (kind == "agent.db") return AgentDb::Open(path).status();
  return JobsDb::Open(path).status();
}

Result<bool> PassesQuickCheck(const std::string& path) {
  Database::Options options;
  options.read_only = true;
  auto db = Database::Open(path, options);
  if (!db.ok()) return false;
  auto check = db->Prepare("PRAGMA quick_check");
  if (!check.ok()) return false;
  return check->Step() && check->ColumnText(0) == "ok";
}

}  // namespace

bool HeaderLooksValid(const std::string& header) {
  if (header.size() < kHeaderBytes) return false;
  if (std::memcmp(header.data(), kMagic, sizeof kMagic) != 0) return false;
  if (PageSizeOf(header) == 0) return false;
  return header[21] == 64 && header[22] == 32 && header[23] == 32;
}

Status RebuildHeader(const std::string& path) {
  std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
  std::string header(kHeaderBytes, '\0');
  if (!file || !file.read(header.data(), static_cast<std::streamsize>(kHeaderBytes))) {
    return Status::IoError(path + ": cannot read its first " + std::to_string(kHeaderBytes) +
                           " bytes");
  }
  const unsigned page_size = PageSizeOf(header) != 0 ? PageSizeOf(header) : kDefaultPageSize;
  std::string rebuilt(kHeaderBytes, '\0');
  std::memcpy(rebuilt.data(), kMagic, sizeof kMagic);
  rebuilt[16] = static_cast<char>(page_size == 65536 ? 0 : page_size >> 8);
  rebuilt[17] = static_cast<char>(page_size == 65536 ? 1 : page_size & 0xff);
  rebuilt[18] = 1;  // file format write / read version: 1 = legacy (rollback journal)
  rebuilt[19] = 1;
  rebuilt[21] = 64;
  rebuilt[22] = 32;
  rebuilt[23] = 32;
  PutBigEndian32(rebuilt, 24, 1);  // file change counter
  // 28: size in pages 0 with 92 (version-valid-for) 0: SQLite takes the size from the file.
  PutBigEndian32(rebuilt, 40, 1);  // schema cookie
  PutBigEndian32(rebuilt, 44, 4);  // schema format number 4
  PutBigEndian32(rebuilt, 56, 1);  // text encoding 1 = UTF-8
  PutBigEndian32(rebuilt, 96, static_cast<uint32_t>(SQLITE_VERSION_NUMBER));
  file.seekp(0);
  file.write(rebuilt.data(), static_cast<std::streamsize>(kHeaderBytes));
  file.flush();
  if (!file) return Status::IoError(path + ": cannot write its header");
  return Status::Ok();
}

Result<std::string> MoveDamagedAside(const std::string& path, double now_unix) {
  const std::string moved = path + ".damaged-" + UtcStamp(now_unix);
  for (const char* suffix : {"", "-wal", "-shm"}) {
    std::error_code ec;
    const std::string from = path + suffix;
    if (*suffix != '\0' && !fs::exists(from, ec)) continue;
    fs::rename(from, moved + suffix, ec);
    if (ec)
      return Status::IoError("cannot move " + from + " aside to " + moved + suffix + ": " +
                             ec.message());
  }
  return moved;
}

Result<RepairReport> RepairDatabase(const std::string& path, double now_unix) {
  RepairReport report;
  report.path = path;
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return Status::NotFound(path + ": no such database file");
  FULCRUM_ASSIGN_OR_RETURN(report.healthy, PassesQuickCheck(path));
  if (report.healthy) return report;

  report.backup_path = path + ".damaged-" + UtcStamp(now_unix);
  FULCRUM_RETURN_IF_ERROR(CopyWithWal(path, report.backup_path));
  const std::string work = path + ".repair-work", fresh_path = path + ".repair-new";
  auto cleanup = [&] {
    for (const std::string& p : {work, fresh_path}) (void)RemoveFileAndJournals(p);
  };
  cleanup();
  FULCRUM_RETURN_IF_ERROR(CopyWithWal(path, work));
  std::string header(kHeaderBytes, '\0');
  std::ifstream(work, std::ios::binary).read(header.data(), kHeaderBytes);
  if (!HeaderLooksValid(header)) {
    fs::remove(work + "-wal", ec);  // its frames belong to the header that is gone
    FULCRUM_RETURN_IF_ERROR(RebuildHeader(work));
    report.header_rebuilt = true;
  }
  auto kind = KindOf(path, work);
  if (!kind.ok()) {
    cleanup();
    return kind.status();
  }
  report.kind = *kind;
  Status status = CreateFresh(fresh_path, report.kind);
  if (status.ok()) {
    Database::Options read_only;
    read_only.read_only = true;
    auto damaged = Database::Open(work, read_only);
    auto fresh = Database::Open(fresh_path);
    status = !damaged.ok() ? damaged.status() : fresh.ok() ? Status::Ok() : fresh.status();
    if (status.ok()) status = CopyRecoveredRows(*damaged, *fresh, report);
  }
  if (status.ok()) {
    (void)RemoveFileAndJournals(path);
    fs::rename(fresh_path, path, ec);
    if (ec)
      status = Status::IoError("cannot move " + fresh_path + " to " + path + ": " + ec.message());
  }
  cleanup();
  return status.ok() ? Result<RepairReport>(report) : Result<RepairReport>(status);
}

}  // namespace fulcrum::store
