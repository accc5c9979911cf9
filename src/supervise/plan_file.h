// A plan file as `fulcrum run --plan` reads it: the JSON that `fulcrum plan --json` prints
// ({"candidates": [...], "work": {...}}), reduced to the plain figures the supervisor records
// (store::JobPlan) for one picked candidate. supervise/ reads the file's documented JSON fields,
// never the planner's types. Pure functions; thread-safe.
#pragma once

#include <optional>
#include <string>

#include "core/status.h"
#include "store/jobs.h"

namespace fulcrum::supervise {

struct PlannedRun {
  store::JobPlan plan;                 // deadline_at unset: the run's --deadline sets it
  std::optional<double> usd_per_hour;  // the candidate's price (cost.usd_per_hour)
  // The spec's limits (top-level constraints.deadline_seconds / budget_usd; nullopt where the
  // plan had none): the run's --deadline and --budget-usd unless those are given.
  std::optional<double> deadline_seconds;
  std::optional<double> budget_usd;
  // The candidate's node as the file names it ("" / 0 where it does not), for `bench --expect`.
  std::string provider, instance_type, region, gpu, precision;
  int gpus_per_node = 0;
};

// Candidate of rank `pick` (1 = the first) from the JSON text of `path` (named in errors).
Result<PlannedRun> ParsePlanJson(const std::string& text, const std::string& path, int pick);
// Reads (core ReadTextFile: at most 16 MiB) and parses the file at `path`.
Result<PlannedRun> ReadPlanFile(const std::string& path, int pick);

}  // namespace fulcrum::supervise
