#include "calibration_fit.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>

namespace fulcrum::calibrate {
namespace {

using estimate::TimeCalibration;

// Mean over families of (median + mean / 2) of |ln(predicted / measured)|: the log ratio treats
// a factor of 2 too fast and too slow alike (a relative error would count +100 % against -50 %).
double Objective(const std::vector<const CalibrationRow*>& rows, const TimeCalibration& c) {
  std::map<std::string, std::vector<double>> by_family;
  for (const CalibrationRow* row : rows) {
    if (const std::optional<double> e = RelativeError(*row, c)) {
      by_family[row->family].push_back(std::abs(std::log1p(std::max(*e, -0.99))));
    }
  }
  if (by_family.empty()) return 0;
  double total = 0;
  for (auto& [family, errors] : by_family) {
    const ErrorSummary s = Summarize(errors);
    total += s.median + s.mean / 2;
  }
  return total / static_cast<double>(by_family.size());
}

double RoundSignificant(double value, int digits) {
  if (value == 0 || !std::isfinite(value)) return value;
  char text[64];
  std::snprintf(text, sizeof text, "%.*g", digits, value);
  return std::strtod(text, nullptr);
}

}  // namespace

const std::vector<FittedConstant>& FittedConstants() {
  using TC = TimeCalibration;
  static const std::vector<FittedConstant> kConstants = {
      {"ampere.gemm_max_efficiency", [](TC& c) -> double& { return c.ampere.gemm_max_efficiency; },
       0.05, 1, 0.1},
      {"ampere.flash_attention_efficiency",
       [](TC& c) -> double& { return c.ampere.flash_attention_efficiency; }, 0.05, 1, 0.1},
      {"hopper.gemm_max_efficiency", [](TC& c) -> double& { return c.hopper.gemm_max_efficiency; },
       0.05, 1, 0.1},
      {"hopper.flash_attention_efficiency",
       [](TC& c) -> double& { return c.hopper.flash_attention_efficiency; }, 0.05, 1, 0.1},
      {"volta.gemm_max_efficiency", [](TC& c) -> double& { return c.volta.gemm_max_efficiency; },
       0.05, 1, 0.1},
      {"gemm_half_dim", [](TC& c) -> double& { return c.gemm_half_dim; }, 1, 4096, 10},
      {"fp8_gemm_relative_efficiency",
       [](TC& c) -> double& { return c.fp8_gemm_relative_efficiency; }, 0.1, 1, 0.1},
      {"fp32_simt_relative_efficiency",
       [](TC& c) -> double& { return c.fp32_simt_relative_efficiency; }, 0.2, 5, 0.1},
      {"memory_bandwidth_efficiency",
       [](TC& c) -> double& { return c.memory_bandwidth_efficiency; }, 0.1, 1, 0.1},
      {"elementwise_hidden_elements",
       [](TC& c) -> double& { return c.elementwise_hidden_elements; }, 0, 200, 1},
      {"elementwise_ffn_elements", [](TC& c) -> double& { return c.elementwise_ffn_elements; }, 0,
       50, 0.5},
      {"attention_score_elements", [](TC& c) -> double& { return c.attention_score_elements; }, 0,
       20, 0.5},
      {"nvlink_efficiency", [](TC& c) -> double& { return c.nvlink_efficiency; }, 0.05, 1, 0.1},
      {"network_efficiency", [](TC& c) -> double& { return c.network_efficiency; }, 0.05, 1, 0.1},
      {"dp_overlap_fraction", [](TC& c) -> double& { return c.dp_overlap_fraction; }, 0, 1, 0.1},
      {"per_layer_overhead_seconds", [](TC& c) -> double& { return c.per_layer_overhead_seconds; },
       0, 1e-3, 5e-6},
      {"generic_model_efficiency", [](TC& c) -> double& { return c.generic_model_efficiency; },
       0.01, 0.8, 0.05},
      {"generic_half_batch", [](TC& c) -> double& { return c.generic_half_batch; }, 0, 1024, 2},
      {"generic_tf32_relative_efficiency",
       [](TC& c) -> double& { return c.generic_tf32_relative_efficiency; }, 0.1, 2, 0.1},
      {"generic_traffic_per_element",
       [](TC& c) -> double& { return c.generic_traffic_per_element; }, 0, 100, 1},
      {"generic_depthwise_efficiency",
       [](TC& c) -> double& { return c.generic_depthwise_efficiency; }, 0.005, 1, 0.01},
      {"generic_seconds_per_layer", [](TC& c) -> double& { return c.generic_seconds_per_layer; }, 0,
       1e-3, 2e-5},
      {"unfused_attention_score_elements",
       [](TC& c) -> double& { return c.unfused_attention_score_elements; }, 0, 50, 1},
  };
  return kConstants;
}

std::optional<double> RelativeError(const CalibrationRow& row, const TimeCalibration& c) {
  const std::optional<double> predicted = Predict(row, c);
  if (!predicted || row.measured <= 0) return std::nullopt;
  const double e = (*predicted - row.measured) / row.measured;
  if (!std::isfinite(e)) return 10.0;
  return std::clamp(e, -10.0, 10.0);
}

ErrorSummary Summarize(std::vector<double> errors) {
  ErrorSummary s;
  s.rows = errors.size();
  if (errors.empty()) return s;
  std::sort(errors.begin(), errors.end());
  const size_t n = errors.size();
  s.median = n % 2 == 1 ? errors[n / 2] : (errors[n / 2 - 1] + errors[n / 2]) / 2;
  // Nearest-rank P90.
  s.p90 = errors[static_cast<size_t>(std::ceil(0.9 * static_cast<double>(n))) - 1];
  double sum = 0;
  for (double e : errors) sum += e;
  s.mean = sum / static_cast<double>(n);
  s.max = errors.back();
  return s;
}

TimeCalibration Fit(const std::vector<const CalibrationRow*>& all_rows) {
  std::vector<const CalibrationRow*> rows;
  for (const CalibrationRow* row : all_rows) {
    if (!row->IsMemory() && row->not_fitted.empty()) rows.push_back(row);
  }
  TimeCalibration best;  // the priors
  double best_objective = Objective(rows, best);
  for (const double step : {0.2, 0.05, 0.01, 0.0025}) {
    for (int pass = 0; pass < 60; ++pass) {
      bool improved = false;
      for (const FittedConstant& k : FittedConstants()) {
        for (const double sign : {1.0, -1.0}) {
          TimeCalibration candidate = best;
          double& x = k.ref(candidate);
          x = std::clamp(x + sign * step * std::max(std::abs(x), k.scale), k.lower, k.upper);
          if (x == k.ref(best)) continue;
          const double objective = Objective(rows, candidate);
          if (objective < best_objective - 1e-12) {
            best = candidate;
            best_objective = objective;
            improved = true;
          }
        }
      }
      if (!improved) break;
    }
  }
  for (const FittedConstant& k : FittedConstants()) {
    double& x = k.ref(best);
    x = RoundSignificant(x, 3);
  }
  return best;
}

}  // namespace fulcrum::calibrate
