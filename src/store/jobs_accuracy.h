// The planner's running error on this machine's own jobs (`fulcrum cost --accuracy`): the
// prediction log (store::PredictionRecord, one row per finished job) grouped by hardware class
// (GPU model x GPUs per node), each quantity's error = (measured - predicted) / predicted over
// the rows where both are known. Pure functions; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "store/jobs.h"

namespace fulcrum::store {

struct ErrorStats {
  int jobs = 0;                    // rows with both figures
  std::optional<double> bias;      // mean signed error (+0.43 = measured 43 % above)
  std::optional<double> mean_abs;  // mean |error|
  std::optional<double> worst;     // the signed error of the largest |error|
};

struct ClassAccuracy {
  std::string gpu;  // "" for jobs whose plan named no GPU
  std::optional<int> gpus_per_node;
  int jobs = 0;  // prediction rows of the class
  ErrorStats step_time, memory, hours, cost;
};

// By class, the classes in order of first appearance in `log` (oldest finish first).
std::vector<ClassAccuracy> AccuracyByClass(const std::vector<PredictionRecord>& log);

// "A100-PCIe-80GB x1" ("unknown GPU" without one).
std::string ClassLabel(const std::string& gpu, std::optional<int> gpus_per_node);

}  // namespace fulcrum::store
