// The "Published runs" section of docs/ACCURACY.md: each run of data/calibration/published_runs.csv
// (the layout its paper, model card or benchmark table reports) against the estimate under the
// fitted constants, with the estimator's P10-P90 band (the bands fulcrum-calibrate generates) and
// whether the published figure lies inside it; tuned benchmarks and production runs apart.
// Deterministic; appended by fulcrum-calibrate so that calibration_no_drift covers it.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "calibration_bands.h"
#include "estimate/compute.h"

namespace fulcrum::calibrate {

// Sets bands.production_step: the quantiles of measured / predicted step time (under `fitted`)
// over the production runs of data/calibration/published_runs.csv; false (with a message on
// stderr) when the file cannot be read.
bool AddProductionBand(const std::string& root, const estimate::TimeCalibration& fitted,
                       GeneratedBands& bands);

// Appends the section to the docs/ACCURACY.md entry of `outputs`; false (with a message on
// stderr) when data/calibration/published_runs.csv cannot be read.
// `left_out`: the constants fitted without each calibration family (family -> fit).
bool AddPublishedRuns(const std::string& root, const estimate::TimeCalibration& fitted,
                      const std::map<std::string, estimate::TimeCalibration>& left_out,
                      const GeneratedBands& bands,
                      std::vector<std::pair<std::string, std::string>>& outputs);

}  // namespace fulcrum::calibrate
