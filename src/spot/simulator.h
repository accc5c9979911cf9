// Event-driven Monte Carlo simulation of one training job on spot and on-demand capacity
// (after Wu et al., "Can't Be Late", NSDI'24): work W, deadline D, changeover delay d on every
// launch after t = 0 (plus a restart cost to load the checkpoint), periodic checkpoints of
// interval tau and cost delta on spot, a preemption notice, and per-instance billing rounded up
// to a granularity with a minimum. Policies: on-demand only; greedy spot; Uniform Progress.
// Spot-only runs on spot and waits through every preemption and outage (no on-demand ever).
// Greedy and Uniform Progress keep the safety net (switch to on-demand for good when the time
// left R < C + 2d, C = work left counting only progress that survives a preemption), so they
// meet the deadline whenever D >= W. Deterministic: trial i uses TrialSeed(seed, i) whatever
// the thread count. All times in seconds, money in USD. Functions are thread-safe.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "spot/interval.h"
#include "spot/preemption.h"

namespace fulcrum::spot {

enum class Policy { kOnDemand, kGreedy, kUniformProgress, kSpotOnly };

// "on-demand", "greedy", "uniform-progress", "spot-only"
std::string_view PolicyName(Policy policy);
Result<Policy> ParsePolicy(std::string_view name);

struct JobParams {
  double work_seconds = 0;        // compute the job needs (W)
  double deadline_seconds = 0;    // from the start (D); kNever = no deadline
  double changeover_seconds = 0;  // launch + set-up of every instance after the first (d)
  double restart_seconds = 0;     // loading the checkpoint after a launch (R)
  double checkpoint_interval_seconds = kNever;  // compute between checkpoints on spot (tau)
  double checkpoint_cost_seconds = 0;           // one checkpoint write (delta)
  NoticeSettings notice;  // a checkpoint that fits in the usable notice saves all progress
  double on_demand_usd_per_hour = 0;
  double spot_usd_per_hour = 0;
  double billing_granularity_seconds = 1;  // each instance's run is rounded up to this...
  double minimum_billed_seconds = 0;       // ...and billed at least this
  // Jump over checkpoint cycles in which nothing can happen (same results up to rounding);
  // false walks every checkpoint as an event (tests compare the two).
  bool skip_routine_cycles = true;
};

// InvalidInput naming the first bad field (negative, non-finite, interval <= 0, ...).
Status ValidateJob(const JobParams& job);

struct TrialResult {
  double cost_usd = 0;
  double finish_seconds = 0;     // wall time until the work is done
  double spot_seconds = 0;       // instance time on spot (before billing rounding)
  double on_demand_seconds = 0;  // instance time on on-demand
  double lost_work_seconds = 0;  // compute thrown away by preemptions
  int preemptions = 0;
  int events = 0;  // loop steps the simulator took (for speed work)
  bool deadline_met = false;
};

// One job run. `availability` must be fresh (at t = 0). Allocation-free.
TrialResult SimulateTrial(const JobParams& job, Policy policy, AvailabilityCursor& availability);

struct SimulationOptions {
  int trials = 10000;
  uint64_t seed = 1;
  int threads = 0;  // 0 = hardware concurrency; 1 = run on the calling thread
};

struct PolicySummary {
  Policy policy = Policy::kOnDemand;
  int trials = 0;
  double mean_cost_usd = 0, p50_cost_usd = 0, p90_cost_usd = 0;
  double mean_hours = 0, p90_hours = 0;
  double deadline_met_fraction = 0;
  double spot_hours = 0, on_demand_hours = 0;  // means per run
  double preemptions_mean = 0;
  double lost_work_hours_mean = 0;
  double lost_work_per_preemption_hours = 0;  // total lost / total preemptions (0 if none)
};

// Runs options.trials trials of `policy`. `results`, when given, receives every trial.
Result<PolicySummary> Simulate(const JobParams& job, const PreemptionModel& model, Policy policy,
                               const SimulationOptions& options,
                               std::vector<TrialResult>* results = nullptr);

// Billed seconds of one instance run: rounded up to the granularity, at least the minimum.
double BilledSeconds(double run_seconds, double granularity_seconds, double minimum_seconds);

}  // namespace fulcrum::spot
