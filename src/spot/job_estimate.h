// The planner's entry to the spot simulator: what a job really costs on spot, how long it
// takes at P90 and how likely it meets its deadline, in one call.
//
//   spot::SpotJobInput in;              // work, deadline, prices, MTTI, checkpoint cost...
//   in.mtti_seconds = *spot::DefaultMttiSeconds(catalog_dir);  // when the offer has no band
//   auto est = spot::EstimateSpotJob(in);  // -> expected / P90 cost, P90 hours, policy, interval
//
// Defaults: the policy is Uniform Progress with a deadline and greedy without; the checkpoint
// interval is Daly's optimum for the MTTI (none when a checkpoint fits in the preemption
// notice); the MTTI, when the catalog has no band for an offer, is the default band of
// catalog/spot_bands.csv (">20%" per month, AWS Spot Advisor bands). Cost per call: one vector
// of `trials` results; threads = 1 runs on the calling thread (right inside a planner loop).
// Thread-safe; deterministic for a given seed.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "spot/interval.h"
#include "spot/simulator.h"

namespace fulcrum::spot {

struct SpotJobInput {
  double work_seconds = 0;                 // compute time of the job on this offer
  std::optional<double> deadline_seconds;  // nullopt = no deadline (no safety net needed)
  double on_demand_usd_per_hour = 0;
  double spot_usd_per_hour = 0;
  double mtti_seconds = 0;             // mean time to interruption (DefaultMttiSeconds or a band's)
  double outage_mean_seconds = 0;      // mean time spot stays unavailable after a preemption
  double changeover_seconds = 0;       // launch + set-up of a replacement instance
  double restart_seconds = 0;          // loading the checkpoint
  double checkpoint_cost_seconds = 0;  // CheckpointCostSeconds(params, bytes/param, bandwidth)
  std::optional<double> checkpoint_interval_seconds;  // nullopt = AutoCheckpointIntervalSeconds
  NoticeSettings notice;                              // provider's notice, poll lag, margin
  double billing_granularity_seconds = 1;
  double minimum_billed_seconds = 0;
  std::optional<Policy> policy;  // nullopt = uniform-progress with a deadline, else greedy
  int trials = 2000;
  uint64_t seed = 1;
  int threads = 1;
};

struct SpotJobEstimate {
  std::string_view policy;                            // PolicyName(); static storage
  std::optional<double> checkpoint_interval_seconds;  // nullopt = no periodic checkpoints
  double expected_cost_usd = 0;
  double p90_cost_usd = 0;
  double expected_hours = 0;
  double p90_hours = 0;
  double deadline_met_fraction = 0;
  double preemptions_mean = 0;
  double mtti_seconds = 0;
};

Result<SpotJobEstimate> EstimateSpotJob(const SpotJobInput& input);

// Daly's optimum for the checkpoint cost and MTTI, or kNever (no periodic checkpoints) when a
// checkpoint fits in the usable notice or preemptions never come; at least 1 s.
double AutoCheckpointIntervalSeconds(double checkpoint_cost_seconds, double mtti_seconds,
                                     const NoticeSettings& notice);

// The MTTI of the default band in catalog_dir/spot_bands.csv.
Result<double> DefaultMttiSeconds(const std::string& catalog_dir);

// Spot risk calibrated on the public preemption traces in catalog_dir/spot-traces/
// preemption-1node/*.json (skypilot-org/spot-traces, V100 on AWS), pooled: MTTI = available
// time / available->unavailable transitions, outage = unavailable time / outages. NotFound when
// there are no traces.
struct SpotRisk {
  double mtti_seconds = 0;
  double outage_mean_seconds = 0;
  int traces = 0;
  std::string source;  // what the figures come from, for notes
};
Result<SpotRisk> CalibratedSpotRisk(const std::string& catalog_dir);

// How spot risk scales with what is rented: relative to one single-GPU instance, the MTTI and
// outage of a gang of n nodes (all held at once) or of one instance of g GPUs, and the share of
// time it was obtainable. Measured on the public availability traces of catalog/spot-traces/.
struct RiskScale {
  int count = 1;                  // nodes of the gang, or GPUs of the instance
  double mtti_factor = 1;         // its MTTI / a single-GPU instance's
  double outage_factor = 1;       // its outage mean / a single-GPU instance's
  double available_fraction = 1;  // share of the traces' time it was obtainable
};
struct RiskScaleTable {
  std::vector<RiskScale> rows;  // by increasing count; the first row is count 1 (factors 1)
  std::string source;           // for notes
};

// Gangs, from catalog_dir/spot-traces/availability-16node/*.json (skypilot-org/spot-traces:
// obtainable instances of 16 wanted per tick): a gang of n is up while count >= n; MTTI = up
// time / (>= n -> < n transitions), outage = down time / the same transitions, pooled over the
// traces; rows n = 1 .. the largest count. NotFound without traces.
Result<RiskScaleTable> CalibratedGangRisk(const std::string& catalog_dir);
// The gang figures for `nodes`: the table's row; beyond its largest count N, independent groups
// of N (MTTI factor x N / nodes, availability ^ (nodes / N)); an empty table assumes
// independent nodes (MTTI / nodes, as if each failed on its own).
RiskScale GangRiskFor(const RiskScaleTable& table, int nodes);

// Instance sizes, from catalog_dir/spot-traces/availability-1node/*_<gpus>.json (the same
// zones and days traced for 1-GPU and 8-GPU instances): pooled MTTI and outage per size,
// relative to size 1. NotFound without a size-1 trace.
Result<RiskScaleTable> CalibratedInstanceSizeRisk(const std::string& catalog_dir);
// The figures for an instance of `gpus` GPUs: log-linear in log2(gpus) between the measured
// sizes, the nearest measured size outside them; an empty table: factors 1.
RiskScale InstanceSizeRiskFor(const RiskScaleTable& table, int gpus);

}  // namespace fulcrum::spot
