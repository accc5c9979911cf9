#include "store/jobs_accuracy.h"

#include <array>
#include <cmath>

namespace fulcrum::store {
namespace {

void Add(ErrorStats& stats, double& abs_sum, const std::optional<double>& predicted,
         const std::optional<double>& measured) {
  if (!predicted || !measured || !(*predicted > 0)) return;
  const double error = (*measured - *predicted) / *predicted;
  const int n = ++stats.jobs;
  stats.bias = stats.bias.value_or(0) + (error - stats.bias.value_or(0)) / n;
  abs_sum += std::abs(error);
  stats.mean_abs = abs_sum / n;
  if (!stats.worst || std::abs(error) > std::abs(*stats.worst)) stats.worst = error;
}

}  // namespace

std::string ClassLabel(const std::string& gpu, std::optional<int> gpus_per_node) {
  if (gpu.empty()) return "unknown GPU";
  return gpu + (gpus_per_node ? " x" + std::to_string(*gpus_per_node) : "");
}

std::vector<ClassAccuracy> AccuracyByClass(const std::vector<PredictionRecord>& log) {
  std::vector<ClassAccuracy> out;
  std::vector<std::array<double, 4>> abs_sums;
  for (const PredictionRecord& r : log) {
    size_t k = 0;
    while (k < out.size() && (out[k].gpu != r.gpu || out[k].gpus_per_node != r.gpus_per_node)) ++k;
    if (k == out.size()) {
      out.push_back({r.gpu, r.gpus_per_node, 0, {}, {}, {}, {}});
      abs_sums.push_back({0, 0, 0, 0});
    }
    ClassAccuracy& c = out[k];
    ++c.jobs;
    Add(c.step_time, abs_sums[k][0], r.predicted_step_seconds, r.measured_step_seconds);
    Add(c.memory, abs_sums[k][1], r.predicted_peak_bytes_per_gpu, r.measured_peak_bytes_per_gpu);
    Add(c.hours, abs_sums[k][2], r.predicted_hours, r.measured_hours);
    Add(c.cost, abs_sums[k][3], r.predicted_cost_usd, r.measured_cost_usd);
  }
  return out;
}

}  // namespace fulcrum::store
