// The local queue's GPU shares in jobs.db (table gpu_shares, created on first write; readers of
// a file without it see no shares): per job, what `fulcrum submit --gpu-memory/--gpu-fraction`
// asked for and, once the queue placed it, the GPU (or MIG instance), the bytes reserved there,
// the mechanism, and when the job was found over its reservation. Sizes are bytes, times Unix
// seconds, unknown is nullopt. Free functions over a JobsDb's connection; as thread-safe as it.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "store/sqlite.h"

namespace fulcrum::store {

struct GpuShareRecord {
  std::string job_id;
  // The request.
  std::optional<double> memory_bytes;  // --gpu-memory
  std::optional<double> fraction;      // --gpu-fraction
  std::optional<double> reserve_fraction;
  std::optional<double> reserve_bytes;
  std::string share = "auto";  // auto | mps
  bool enforce = false;
  // The placement (nullopt / "" while queued).
  std::optional<int> gpu;
  std::optional<double> reservation_bytes;
  std::string mode;  // time | mps | mig
  std::string mig_uuid;
  std::string mig_profile;
  std::optional<double> over_at;  // when a gpu-memory-over alert was raised for the job
};

// Inserts or replaces the row of `share.job_id`.
Status UpsertGpuShare(Database& db, const GpuShareRecord& share);
Status DeleteGpuShare(Database& db, const std::string& job_id);
// Every row (empty when the table does not exist yet).
Result<std::vector<GpuShareRecord>> ListGpuShares(Database& db);
Result<std::optional<GpuShareRecord>> GetGpuShare(Database& db, const std::string& job_id);

// The share as `status --json` shows it ("gpu_share" of a job row): {gpu, reservation_bytes,
// mode, mig_uuid, mig_profile, memory_bytes, fraction, enforce, over_at} (null where unknown);
// the job's measured peak is the row's measured_peak_bytes_per_gpu.
nlohmann::json GpuShareJson(const GpuShareRecord& share);

}  // namespace fulcrum::store
