#include "store/gpu_shares.h"

namespace fulcrum::store {
namespace {

constexpr const char* kCreate =
    "CREATE TABLE IF NOT EXISTS gpu_shares ("
    " job_id TEXT PRIMARY KEY, memory_bytes REAL, fraction REAL, reserve_fraction REAL,"
    " reserve_bytes REAL, share TEXT NOT NULL, enforce INTEGER NOT NULL, gpu INTEGER,"
    " reservation_bytes REAL, mode TEXT NOT NULL, mig_uuid TEXT NOT NULL,"
    " mig_profile TEXT NOT NULL, over_at REAL)";

constexpr const char* kColumns =
    "job_id, memory_bytes, fraction, reserve_fraction, reserve_bytes, share, enforce, gpu, "
    "reservation_bytes, mode, mig_uuid, mig_profile, over_at";

Result<bool> TableExists(Database& db) {
  FULCRUM_ASSIGN_OR_RETURN(
      Statement s,
      db.Prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'gpu_shares'"));
  const bool found = s.Step();
  FULCRUM_RETURN_IF_ERROR(s.status());
  return found;
}

GpuShareRecord ReadRow(const Statement& s) {
  GpuShareRecord r;
  r.job_id = s.ColumnText(0);
  r.memory_bytes = s.ColumnOptionalDouble(1);
  r.fraction = s.ColumnOptionalDouble(2);
  r.reserve_fraction = s.ColumnOptionalDouble(3);
  r.reserve_bytes = s.ColumnOptionalDouble(4);
  r.share = s.ColumnText(5);
  r.enforce = s.ColumnInt(6) != 0;
  if (!s.ColumnIsNull(7)) r.gpu = static_cast<int>(s.ColumnInt(7));
  r.reservation_bytes = s.ColumnOptionalDouble(8);
  r.mode = s.ColumnText(9);
  r.mig_uuid = s.ColumnText(10);
  r.mig_profile = s.ColumnText(11);
  r.over_at = s.ColumnOptionalDouble(12);
  return r;
}

Result<std::vector<GpuShareRecord>> Query(Database& db, const std::string& where,
                                          const std::string& job_id) {
  std::vector<GpuShareRecord> out;
  FULCRUM_ASSIGN_OR_RETURN(bool exists, TableExists(db));
  if (!exists) return out;
  FULCRUM_ASSIGN_OR_RETURN(
      Statement s, db.Prepare(std::string("SELECT ") + kColumns + " FROM gpu_shares " + where +
                              " ORDER BY job_id"));
  if (!job_id.empty()) s.Bind(1, job_id);
  while (s.Step()) out.push_back(ReadRow(s));
  FULCRUM_RETURN_IF_ERROR(s.status());
  return out;
}

}  // namespace

Status UpsertGpuShare(Database& db, const GpuShareRecord& r) {
  FULCRUM_RETURN_IF_ERROR(db.Exec(kCreate));
  FULCRUM_ASSIGN_OR_RETURN(
      Statement s, db.Prepare(std::string("INSERT OR REPLACE INTO gpu_shares (") + kColumns +
                              ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"));
  s.Bind(1, r.job_id).Bind(2, r.memory_bytes).Bind(3, r.fraction).Bind(4, r.reserve_fraction);
  s.Bind(5, r.reserve_bytes).Bind(6, r.share).Bind(7, static_cast<int64_t>(r.enforce ? 1 : 0));
  if (r.gpu) {
    s.Bind(8, static_cast<int64_t>(*r.gpu));
  } else {
    s.BindNull(8);
  }
  s.Bind(9, r.reservation_bytes).Bind(10, r.mode).Bind(11, r.mig_uuid).Bind(12, r.mig_profile);
  s.Bind(13, r.over_at);
  return s.Run();
}

Status DeleteGpuShare(Database& db, const std::string& job_id) {
  FULCRUM_ASSIGN_OR_RETURN(bool exists, TableExists(db));
  if (!exists) return Status::Ok();
  FULCRUM_ASSIGN_OR_RETURN(Statement s, db.Prepare("DELETE FROM gpu_shares WHERE job_id = ?"));
  s.Bind(1, job_id);
  return s.Run();
}

nlohmann::json GpuShareJson(const GpuShareRecord& r) {
  const auto opt = [](const std::optional<double>& v) {
    return v ? nlohmann::json(*v) : nlohmann::json();
  };
  const auto text = [](const std::string& v) {
    return v.empty() ? nlohmann::json() : nlohmann::json(v);
  };
  return {{"gpu", r.gpu ? nlohmann::json(*r.gpu) : nlohmann::json()},
          {"reservation_bytes", opt(r.reservation_bytes)},
          {"mode", text(r.mode)},
          {"mig_uuid", text(r.mig_uuid)},
          {"mig_profile", text(r.mig_profile)},
          {"memory_bytes", opt(r.memory_bytes)},
          {"fraction", opt(r.fraction)},
          {"enforce", r.enforce},
          {"over_at", opt(r.over_at)}};
}

Result<std::vector<GpuShareRecord>> ListGpuShares(Database& db) { return Query(db, "", ""); }

Result<std::optional<GpuShareRecord>> GetGpuShare(Database& db, const std::string& job_id) {
  FULCRUM_ASSIGN_OR_RETURN(auto rows, Query(db, "WHERE job_id = ?", job_id));
  if (rows.empty()) return std::optional<GpuShareRecord>();
  return std::optional<GpuShareRecord>(rows.front());
}

}  // namespace fulcrum::store
