// The one JSON view of a supervised job, shared by `fulcrum status --json` and the agent's
// /v1/jobs, so that both render the same object for the same row (field names are a documented
// contract: docs/API.md). Unknown values are null: spend_usd is null when the job has no price
// and has spent nothing. The command line (argv) is not part of it: it may carry secrets and the
// API does not serve it; `status --json` adds it. Pure functions; thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "store/jobs.h"

namespace fulcrum::store {

// `now` (Unix seconds) turns timestamps into ages; `slurm_state` is squeue/sacct's word when the
// caller asked Slurm (null otherwise). The state is EffectiveState(job).
nlohmann::json JobJson(const JobRecord& job, double now,
                       const std::optional<std::string>& slurm_state = std::nullopt);

// [{"name", "reason"}]: the job row's skipped checkpoints, as the view and jobs.db store them.
nlohmann::json SkippedCheckpointsJson(const std::vector<SkippedCheckpointRecord>& skipped);

}  // namespace fulcrum::store
