// `fulcrum plan --calibrate-from JOB`: reads the job from <data-dir>/jobs.db (its plan and what the
// supervisor and the agent measured of it), hands the planner the plain plan::MeasuredFactors of
// the job's hardware class, and says what the new plan changes versus the job's plan (another
// offer, more nodes, on-demand for the rest). The planner never sees the store: this is the one
// place that knows both. A job still under way is re-planned for the rest of its work.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "catalog/catalog.h"
#include "core/status.h"
#include "plan/search.h"
#include "plan/spec.h"
#include "store/jobs.h"

namespace fulcrum::cli {

struct Calibration {
  store::JobRecord job;
  plan::MeasuredFactors factors;
  std::optional<double> remaining_fraction;  // the work left of a job under way (else nullopt)
  std::vector<std::string> notes;            // what was not measured or not applied, and why
};

// The job `job_id` of `data_dir`'s jobs.db and its factors. Errors (exit 2): no such job (with
// the nearest names), a job without a plan file (no hardware class), no measured step time yet.
Result<Calibration> ReadCalibration(const std::string& data_dir, const std::string& job_id,
                                    const catalog::Catalog& catalog);

// Applies a job under way to the spec: the work scaled to what is left, and, without a deadline
// of the user's, the job's own deadline from now. Adds what it did to `calibration.notes`.
void ApplyCalibration(Calibration& calibration, double now, plan::PlanSpec& spec);

// The `calibrated_from` object of `plan --json`, and the block the table prints before the plan.
nlohmann::json CalibrationJson(const Calibration& calibration, const plan::PlanResult& result,
                               const catalog::Catalog& catalog);
std::string CalibrationText(const Calibration& calibration, const plan::PlanResult& result,
                            const catalog::Catalog& catalog);

}  // namespace fulcrum::cli
