// The re-quote of a running job: from its plan (store::JobPlan), the sliding-window measurement
// and the spend so far, the remaining time and cost with a P90, and the odds of meeting the
// deadline and the budget. Shared by the status view (store/job_view) and the supervisor's
// deadline and budget alerts, so that both say the same. Pure functions; thread-safe. Seconds, USD.
#pragma once

#include <optional>

#include "store/jobs.h"

namespace fulcrum::store {

struct JobProjection {
  std::optional<double> planned_step_seconds;
  std::optional<double> measured_step_seconds;
  std::optional<double> speed_vs_plan;      // planned / measured step time (0.71 = 71 % of planned)
  std::optional<double> progress_fraction;  // step / planned total steps
  std::optional<double> eta_seconds;        // remaining time, P50
  std::optional<double> eta_p90_seconds;
  std::optional<double> projected_cost_usd;  // spend so far + remaining time at the price
  std::optional<double> projected_cost_p90_usd;
  std::optional<double> deadline_met_probability;
  std::optional<double> deadline_miss_seconds;  // P50 finish minus deadline (> 0: late)
  std::optional<double> budget_exceeded_probability;
  // Spot (a job planned on spot, or one preempted already): the spot model's interruption rate
  // for the job's offer (the plan's expected interruptions / planned hours), the rate after the
  // preemptions seen, the interruptions expected in the remaining time, and the work each loses.
  std::optional<double> spot_model_interruptions_per_hour;
  std::optional<double> spot_interruptions_per_hour;
  std::optional<double> expected_remaining_interruptions;
  std::optional<double> seconds_lost_per_interruption;
};

// The spread of the remaining time: the log of the future step time is normal around the
// measured (else planned) step time with sigma = the plan's own P50..P90 spread
// (ln(p90/p50) / 1.2816), or kDefaultStepSigma without it, times sqrt(1 - progress): the interval
// narrows as the run proceeds and is zero at the end.
inline constexpr double kDefaultStepSigma = 0.15;
//
// Preemptions: the rate is a Gamma-Poisson update of the spot model's rate lambda0 (a prior worth
// the planned hours T0) by the k preemptions seen in the t hours run so far:
// (k + lambda0 T0) / (t + T0). The remaining time holds N = rate x remaining hours of them, each
// losing half the planned checkpoint interval of work (the tau / 2 term of Young/Daly,
// spot::OverheadFraction; restart and re-provisioning are not counted); the P90 adds
// N + 1.28 sqrt(N) of them (Poisson, normal approximation). t = billed hours where the price is
// known, else since the job was created.

// `now` in Unix seconds. A finished job (succeeded, failed, crash_loop) has no remaining time.
JobProjection ProjectJob(const JobRecord& job, double now);

}  // namespace fulcrum::store
