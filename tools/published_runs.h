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
#include "calibration_data.h"
#include "estimate/compute.h"

namespace fulcrum::calibrate {

// The published-run bands of `bands`: the quantiles of measured / predicted step time (under
// `fitted`) over the runs of `runs` (data/calibration/published_runs.csv, LoadPublishedRuns) each
// holds: production_step the production runs of transformers, moe_step the runs of
// mixture-of-experts models and fp8_step the FP8 runs, either kind for those two
// (estimate::UncertaintyTable).
void SetPublishedRunBands(const std::vector<PublishedRun>& runs,
                          const estimate::TimeCalibration& fitted, GeneratedBands& bands);

// Appends the section, for `runs`, to the docs/ACCURACY.md entry of `outputs`.
// `left_out`: the constants fitted without each calibration family (family -> fit).
void AddPublishedRuns(const std::string& root, const std::vector<PublishedRun>& runs,
                      const estimate::TimeCalibration& fitted,
                      const std::map<std::string, estimate::TimeCalibration>& left_out,
                      const GeneratedBands& bands,
                      std::vector<std::pair<std::string, std::string>>& outputs);

}  // namespace fulcrum::calibrate
