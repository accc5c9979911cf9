// The estimator's uncertainty bands from the calibration rows (estimate/uncertainty.h): per
// source family the quantiles of measured / predicted step time with the family left out of
// the fit, with each row's GPU architecture left out of the fit, and of measured / predicted
// peak memory (per family; per network for generic models; per model kind where a family has
// both); plus one resemblance point per time row. A family with fewer than kMinRowsForBand
// rows for a quantity takes the pooled band of all rows of its model kind (a P90 of a handful of
// rows is the worst of them by chance). Rendered as the generated
// src/estimate/uncertainty_fitted.cc and a section of docs/ACCURACY.md. Pure; deterministic.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "calibration_data.h"
#include "estimate/compute.h"
#include "estimate/uncertainty.h"

namespace fulcrum::calibrate {

inline constexpr int kMinRowsForBand = 5;

struct GeneratedFamilyBand {
  std::string family;
  estimate::RatioBand step, step_new_architecture, memory;
  bool step_pooled = false, step_new_architecture_pooled = false, memory_pooled = false;
};

struct GeneratedBands {
  std::vector<GeneratedFamilyBand> families;  // sorted by name
  std::vector<estimate::CalibrationPoint> points;
  // The published production, mixture-of-experts and FP8 runs' step-time ratios
  // (tools/published_runs.h SetPublishedRunBands).
  estimate::RatioBand production_step;
  estimate::RatioBand moe_step;
  estimate::RatioBand fp8_step;
};

// Nearest-rank P10 and P90 of `ratios` (rows = their count; 1, 1 when empty).
estimate::RatioBand BandOf(std::vector<double> ratios);

// `left_out_family`: family -> the fit without it; `left_out_architecture`: GPU architecture ->
// the fit without its rows; `fitted`: the fit on all rows (memory rows need no fit).
GeneratedBands ComputeBands(
    const std::vector<CalibrationRow>& rows, const estimate::TimeCalibration& fitted,
    const std::map<std::string, estimate::TimeCalibration>& left_out_family,
    const std::map<std::string, estimate::TimeCalibration>& left_out_architecture);

// The architecture of a row's GPU ("" when the row was refused).
std::string ArchitectureOf(const CalibrationRow& row);

// The generated src/estimate/uncertainty_fitted.cc.
std::string UncertaintySource(const GeneratedBands& bands);
// The "Uncertainty bands" section of docs/ACCURACY.md (a markdown table per family).
std::string UncertaintyMarkdown(const GeneratedBands& bands);

}  // namespace fulcrum::calibrate
