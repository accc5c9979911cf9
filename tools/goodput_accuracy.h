// The goodput section of docs/ACCURACY.md: each published run of catalog/goodput.csv against
// the plan's quote for its GPUs and steady-state days, with the fit on every run and with that
// run left out (plan::FitGoodput), and whether its end-to-end time was inside the quote's P90.
// Deterministic; appended by fulcrum-calibrate so that calibration_no_drift covers it.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace fulcrum::calibrate {

// Appends the section to the docs/ACCURACY.md entry of `outputs`; false (with a message on
// stderr) when catalog/goodput.csv cannot be read.
bool AddGoodputAccuracy(const std::string& root,
                        std::vector<std::pair<std::string, std::string>>& outputs);

}  // namespace fulcrum::calibrate
