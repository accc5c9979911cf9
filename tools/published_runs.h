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

// The quantiles of measured / predicted step time (under `fitted`) over the production runs of
// `runs` (data/calibration/published_runs.csv, LoadPublishedRuns).
estimate::RatioBand ProductionBand(const std::vector<PublishedRun>& runs,
                                   const estimate::TimeCalibration& fitted);
// The published mixture-of-experts runs' band (either kind): measured / predicted step time under
// `fitted` (UncertaintyTable::moe_step).
estimate::RatioBand MoeBand(const std::vector<PublishedRun>& runs,
                            const estimate::TimeCalibration& fitted);

// The published FP8 runs' band (either kind): measured / predicted step time under `fitted`
// (UncertaintyTable::fp8_step).
estimate::RatioBand Fp8Band(const std::vector<PublishedRun>& runs,
                            const estimate::TimeCalibration& fitted);

// Appends the section, for `runs`, to the docs/ACCURACY.md entry of `outputs`.
// `left_out`: the constants fitted without each calibration family (family -> fit).
void AddPublishedRuns(const std::string& root, const std::vector<PublishedRun>& runs,
                      const estimate::TimeCalibration& fitted,
                      const std::map<std::string, estimate::TimeCalibration>& left_out,
                      const GeneratedBands& bands,
                      std::vector<std::pair<std::string, std::string>>& outputs);

}  // namespace fulcrum::calibrate
