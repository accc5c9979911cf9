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

// Multi-node spot: a gang of n nodes runs only while all n are held. GangRisk scales the
// single-instance MTTI and outage for n nodes; available_fraction is the share of time n
// instances were obtainable at once.
struct GangRisk {
  int nodes = 1;
  double mtti_factor = 1;    // gang MTTI / one instance's MTTI
  double outage_factor = 1;  // gang outage mean / one instance's outage mean
  double available_fraction = 1;
};
struct GangTable {
  std::vector<GangRisk> by_nodes;  // by_nodes[n - 1] for n = 1 .. the traces' largest count
  std::string source;              // for notes
};
// From the availability traces in catalog_dir/spot-traces/availability-16node/*.json
// (skypilot-org/spot-traces: obtainable instances of 16 wanted per tick): for each n the gang
// is up while count >= n; MTTI = up time / (>= n -> < n transitions) and outage = down time /
// the same transitions, pooled over the traces, relative to n = 1. NotFound without traces.
Result<GangTable> CalibratedGangRisk(const std::string& catalog_dir);
// The gang figures for `nodes`: the table's row; beyond its largest count N, independent groups
// of N (MTTI factor x N / nodes, availability ^ (nodes / N)); an empty table assumes
// independent nodes (MTTI / nodes, as if each failed on its own).
GangRisk GangRiskFor(const GangTable& table, int nodes);

}  // namespace fulcrum::spot
