// The "Memory at resume" section of docs/ACCURACY.md: each resume measurement of
// data/calibration/resume.csv (the peak of a process that resumed from a checkpoint, with the same
// configuration's fresh-run peak beside it) against estimate::EstimateResumeMemory, by checkpoint
// format. The memory model has no fitted constant, so the figures are left-out figures too.
// Deterministic; appended by fulcrum-calibrate so that calibration_no_drift covers it.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace fulcrum::calibrate {

// Appends the section to the docs/ACCURACY.md entry of `outputs`; false (with a message on
// stderr) when data/calibration/resume.csv cannot be read.
bool AddResumeAccuracy(const std::string& root,
                       std::vector<std::pair<std::string, std::string>>& outputs);

}  // namespace fulcrum::calibrate
