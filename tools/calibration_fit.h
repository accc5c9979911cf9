// Fitting estimate::TimeCalibration to calibration rows: a deterministic coordinate descent from
// the struct's prior values (the member initialisers of estimate/compute.h) on the mean over
// source families of (median + mean / 2) of |ln(predicted / measured)|, so that a family with
// many rows does not outvote one with few. Fitted values are rounded to 3 significant digits
// (what the generated source holds). Pure functions; thread-compatible.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "calibration_data.h"
#include "estimate/compute.h"

namespace fulcrum::calibrate {

// One fitted constant: its C++ member path in TimeCalibration (also the generated source's
// assignment target), bounds, and the step scale for values near zero.
struct FittedConstant {
  std::string member;  // e.g. "ampere.gemm_max_efficiency"
  std::function<double&(estimate::TimeCalibration&)> ref;
  double lower = 0, upper = 1, scale = 0.1;
};

const std::vector<FittedConstant>& FittedConstants();

// (predicted - measured) / measured, capped at +-10; nullopt when the row has no prediction.
std::optional<double> RelativeError(const CalibrationRow& row,
                                    const estimate::TimeCalibration& calibration);

// The fit on the time rows of `rows` (memory rows carry no fitted constant and are ignored, as
// are rows marked not_fitted).
estimate::TimeCalibration Fit(const std::vector<const CalibrationRow*>& rows);

// Summary of absolute errors.
struct ErrorSummary {
  size_t rows = 0;
  double median = 0, p90 = 0, mean = 0, max = 0;
};
ErrorSummary Summarize(std::vector<double> absolute_errors);

}  // namespace fulcrum::calibrate
