// Billing and the cost of one planned run: hourly price per pricing model (on-demand, reserved
// 1y/3y effective hourly, spot), billing granularity and minimum per provider, total time =
// work / throughput + start-up + checkpoint overhead (every 30 min, or Young's optimum when
// shorter), failure recovery (restart + checkpoint load + lost work) and the losses of long runs
// beyond hardware interruptions (fitted on published end-to-end ratios, catalog/goodput.csv),
// expected and P90 cost. Spot goes through EstimateSpotRun, the one place where the spot
// simulator plugs in. All money in USD (the catalog converts offer prices with
// catalog/currency.csv). Pure, allocation-free, thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "catalog/catalog.h"
#include "plan/spec.h"
#include "spot/job_estimate.h"
#include "spot/spot_catalog.h"

namespace fulcrum::plan {

// Assumptions of the cost model, in one place, each with its source.
struct CostAssumptions {
  // Provisioning + image pull + model load per start: fulcrum's own assumption (10 minutes).
  double startup_seconds = 600;
  // Checkpoint size: weights + optimizer ~ 14 bytes per trained parameter in mixed precision
  // (PyTorch blog "Reducing Model Checkpointing Times by Over 10x", https://pytorch.org/blog/
  // reducing-checkpointing-times: 7 B ~ 98 GB); frozen weights are not saved.
  double checkpoint_bytes_per_trained_param = 14;
  // Checkpoint write bandwidth per node where the instance has no row of its own: fulcrum's
  // assumption (1 GB/s to network storage) until LoadCostAssumptions reads the default kind of
  // catalog/storage.csv (`checkpoint_write_kind`, "" = none read).
  double checkpoint_write_bytes_per_second_per_node = 1e9;
  std::string checkpoint_write_kind;
  // catalog/storage.csv: the kinds, among them the rows that say what a provider's instances
  // write their checkpoints to (CheckpointStorageFor); empty = none known.
  std::vector<spot::StorageKind> storage_kinds;
  // Checkpoint cadence: at most every 30 minutes (the seeds' rule, and `fulcrum run
  // --checkpoint-every`'s default in src/supervise/run_flags.cc), so that a crash of the user's
  // code, which no hardware failure rate sees, loses at most that much; Young's optimum when it
  // is shorter; never so often that one write costs more than 5 % of the interval (issue 25).
  double max_checkpoint_interval_seconds = 1800;
  double max_checkpoint_overhead = 0.05;
  // What long runs lose beyond the hardware interruptions above (rollbacks after loss spikes,
  // evaluation and checkpoint pauses, stragglers, restarts the failure model does not see): the
  // extra wall time per steady-state second (so it grows with the days) of a run of at least
  // `goodput_reference_gpus` GPUs, fitted by FitGoodput on catalog/goodput.csv; smaller runs get
  // it in proportion to their GPUs (a one-node job has no stragglers or rendezvous to lose time
  // to). The share does not depend on the run's length, so a faster layout is not quoted a
  // smaller share. 0 = no table (only the hardware model).
  double goodput_extra_overhead = 0;
  double goodput_reference_gpus = 0;
  std::string goodput_source;  // for the JSON and notes; empty = no table
  // Unplanned interruptions of a run, split by what fails, from Llama 3 (arXiv 2407.21783,
  // section 3.3.4, Table 5): 419 unexpected interruptions in 54 days on 16,384 H100 GPUs in
  // servers of 8 GPUs (2,048 servers, section 3.3.1). The GPU rows of Table 5 (faulty GPU 148,
  // HBM3 72, SRAM 19, system processor 17, SDC 6, thermal/sensor 6: 268) count per GPU-hour
  // when the provider's failure rate is unknown; the other 151 (software, switches and cables,
  // host maintenance, CPU, NIC, ...) come with the servers and their links, per node-hour. An
  // 8-GPU node has the paper's rate (419 per 54 days per 16,384 GPUs); the same GPUs in more,
  // smaller nodes are interrupted more often (more hosts, NICs and switch ports).
  double interruptions_per_gpu_hour = 268.0 / (54.0 * 24.0 * 16384.0);
  double interruptions_per_node_hour = (419.0 - 268.0) / (54.0 * 24.0 * 2048.0);
  // Billing granularity and minimum when the provider's terms are unknown: per minute with a
  // one-minute minimum (fulcrum's assumption, conservative against the per-second terms most
  // sourced providers publish); such rows are flagged billing-terms-unknown.
  double unknown_granularity_seconds = 60;
  double unknown_minimum_billed_seconds = 60;
  // Spot: mean time to interruption of one instance (spot::DefaultMttiSeconds from
  // catalog/spot_bands.csv, loaded by LoadCostAssumptions); 0 = unknown, spot rows are then
  // list price x time and flagged as not risk-adjusted.
  double spot_mtti_seconds_per_instance = 0;
  // Mean time spot capacity stays away after a preemption (spot::CalibratedSpotRisk), and what
  // the spot figures come from (stated in the plan's notes).
  double spot_outage_mean_seconds = 0;
  std::string spot_risk_source;
  // Multi-node spot: the gang's MTTI and outage relative to one instance, by node count
  // (spot::CalibratedGangRisk on catalog/spot-traces/availability-16node/); empty = independent
  // nodes (MTTI / nodes).
  spot::RiskScaleTable spot_gang;
  // Larger instances are interrupted more often: MTTI and outage by GPUs per instance relative
  // to a 1-GPU one (spot::CalibratedInstanceSizeRisk on catalog/spot-traces/availability-1node/);
  // empty = the single-GPU figures for every size.
  spot::RiskScaleTable spot_instance_size;
  // Monte Carlo trials per spot candidate (spot::EstimateSpotJob) and the seed (deterministic).
  int spot_trials = 100;
  // Per-provider storage and egress prices (catalog/storage_prices.csv); empty = none known.
  std::vector<spot::StoragePrice> storage_prices;
  // GPU architectures the step-time calibration covers (estimate::CalibratedArchitectures);
  // nullopt = coverage unknown (no rows flagged uncalibrated-gpu).
  std::optional<std::vector<std::string>> calibrated_architectures;
  uint64_t spot_seed = 1;
  // How often the job polls for a preemption notice (the calibration README: poll instance
  // metadata every 5 s) and the margin kept free at the end of the notice (fulcrum's assumption).
  double spot_notice_poll_seconds = 5;
  double spot_notice_margin_seconds = 10;
};

// The assumptions with the catalog's sourced tables where they exist: the default storage
// kind's write bandwidth (catalog/storage.csv), the spot MTTI and outage calibrated on the
// public traces in catalog/spot-traces/ (else the default band of catalog/spot_bands.csv), the
// published runs' losses fitted on catalog/goodput.csv (FitGoodput). Missing or unreadable
// tables keep the defaults above (and a note says so, naming the file and line).
CostAssumptions LoadCostAssumptions(const std::string& catalog_dir, std::string* note);

// The first error of a cost table that is in `catalog_dir` but does not load (storage.csv,
// storage_prices.csv, spot_bands.csv, goodput.csv): file:line and what was expected. A table
// that is absent is not an error (LoadCostAssumptions then notes its default); one that is
// present and broken must not be dropped silently, so `plan` and `catalog validate` refuse it.
Status CheckCostTables(const std::string& catalog_dir);
// LoadCostAssumptions and CheckCostTables in one load of the tables (what `plan` needs): the
// assumptions, or the first table that is there but does not load.
Result<CostAssumptions> LoadCheckedCostAssumptions(const std::string& catalog_dir,
                                                   std::string* note);

// What the run stores: spec.storage, and where it names no checkpoint storage (no
// `checkpoint_gb`, no flat `costs.storage_gb`) while the job checkpoints, one checkpoint of the
// planned size (trained parameters x checkpoint_bytes_per_trained_param) for as long as the run
// lasts; *checkpoint_assumed says so.
StorageNeeds PlannedStorageNeeds(const PlanSpec& spec, double trained_parameters,
                                 const CostAssumptions& assumptions, bool* checkpoint_assumed);

// The extras of a run on `provider`: `base` (the spec's flat costs) plus `needs` priced at the
// provider's sourced prices. Each part the run needs but the catalog has no price for ("disk",
// "checkpoint storage", "egress") is appended to *unpriced; those parts cost 0 in the result.
ExtraCosts ExtrasFor(const ExtraCosts& base, const StorageNeeds& needs, const std::string& provider,
                     const CostAssumptions& assumptions, std::vector<std::string>* unpriced);

// The kind `offer` writes its checkpoints to (a provider's row of catalog/storage.csv covering
// the instance); nullptr = none known (the default kind's bandwidth applies).
const spot::StorageKind* CheckpointStorageFor(const catalog::Offer& offer,
                                              const CostAssumptions& assumptions);

// USD per instance-hour for `pricing`, nullopt when the offer/provider has no such price
// (no spot price, or no sourced reserved discount). Reserved = on-demand x (1 - discount).
std::optional<double> HourlyPriceUsd(const catalog::Offer& offer, const catalog::Provider* provider,
                                     PricingModel pricing);

// Seconds billed for one instance running `seconds`: rounded up to the provider's granularity,
// at least its minimum (the assumed terms where the provider's are unknown).
double BilledSeconds(double seconds, const catalog::Provider* provider,
                     const CostAssumptions& assumptions = {});
// Whether the provider's billing granularity is unknown (BilledSeconds assumes per minute).
bool BillingTermsUnknown(const catalog::Provider* provider);

// Length of a reservation / committed-use term (1 or 3 years of 8760 h); 0 for on-demand/spot.
double ReservedTermSeconds(PricingModel pricing);

struct RunInput {
  double work_seconds = 0;  // tokens / throughput (no overheads)
  int nodes = 1;
  int gpus = 1;  // all GPUs of the run
  double trained_parameters = 0;
  bool checkpointing = true;
  double hourly_usd = 0;  // per instance
  PricingModel pricing = PricingModel::kOnDemand;
  const catalog::Provider* provider = nullptr;
  ExtraCosts extra;
  std::optional<double> deadline_seconds;        // for the spot policy's safety net
  std::optional<double> on_demand_usd_per_hour;  // per instance, the spot fallback price
  bool reserved_owned = false;  // reserved: the term is already paid for (marginal cost)
  std::optional<double> checkpoint_every_seconds;  // --checkpoint-every: overrides the cadence
  // Bytes per second one node writes its checkpoint shard at (CheckpointStorageFor); nullopt =
  // CostAssumptions::checkpoint_write_bytes_per_second_per_node.
  std::optional<double> checkpoint_write_bytes_per_second_per_node;
  // The estimator's P90 step time over its point estimate (estimate::BandFor: the left-out
  // error of the calibration family the setup resembles, wider on an uncalibrated
  // architecture); the run's P90 scales its time past the start-up by max(1, this).
  double step_p90_ratio = 1;
};

// Where the expected cost goes (USD; sums to RunCost::expected_usd).
struct CostBreakdown {
  double compute_usd = 0;   // instance time for the work, start-up and billing rounding
  double storage_usd = 0;   // persistent disks and checkpoint storage
  double egress_usd = 0;    // data and checkpoints leaving the region
  double failures_usd = 0;  // work lost since the last checkpoint (failures, preemptions)
  // Restarts (start-up, rendezvous, checkpoint load after each interruption) and the other
  // losses of long runs beyond hardware interruptions (CostAssumptions::goodput_extra_overhead).
  double restarts_usd = 0;
  double checkpoint_usd = 0;  // instance time spent writing checkpoints
  double commitment_usd = 0;  // reserved: the part of the term the job does not use
};

struct RunCost {
  double total_seconds = 0;  // expected wall time incl. start-up, checkpoints, failures
  double p90_seconds = 0;
  double expected_usd = 0;
  double p90_usd = 0;
  double checkpoint_interval_seconds = 0;  // planned (Young: sqrt(2 delta M)); 0 = none
  double checkpoint_write_seconds = 0;
  bool risk_adjusted = true;         // false: spot priced as list price x time (no simulator input)
  std::string_view spot_policy;      // spot: the simulated policy ("greedy", "uniform-progress")
  double deadline_met_fraction = 1;  // spot: share of simulated runs that met the deadline
  double expected_interruptions = 0;  // hardware failures (+ spot preemptions) over the run
  double failure_seconds = 0;         // expected time lost to hardware failures (restarts)
  double other_loss_seconds = 0;      // the published runs' losses beyond hardware failures
  double goodput_fraction = 1;        // steady-state time (work) / total_seconds
  bool goodput_published = false;     // other_loss_seconds comes from catalog/goodput.csv
  CostBreakdown breakdown;
  bool reserved_commitment = false;  // reserved row priced as the term's full commitment
};

// The run's time and cost for one pricing model. p90_seconds is the one P90 of the run: the
// interruptions' P90 (Poisson failures, or the spot simulation's) with the work past the
// start-up scaled by the estimator's band (RunInput::step_p90_ratio), conservative: the product
// of the two P90s is at least the P90 of the product. p90_usd follows it.
RunCost EstimateRunCost(const RunInput& input, const CostAssumptions& assumptions = {});

// The planned checkpoint interval: min(Young's optimum, max_checkpoint_interval_seconds), unless
// one write then costs more than max_checkpoint_overhead of it (then the interval where it costs
// exactly that); capped at the work. `every` (--checkpoint-every) wins when given.
double PlannedCheckpointIntervalSeconds(double write_seconds, double mtbf_seconds,
                                        double work_seconds, const CostAssumptions& assumptions,
                                        std::optional<double> every = std::nullopt);

// One published training run (catalog/goodput.csv): its GPUs, trained parameters, steady-state
// days (the work at its steady throughput) and end-to-end days.
struct GoodputRun {
  std::string run;
  int gpus = 0;
  double trained_parameters = 0;
  double steady_days = 0;
  double end_to_end_days = 0;
  std::string source;
};
Result<std::vector<GoodputRun>> LoadGoodputRuns(const std::string& catalog_dir);

// The extra overhead beyond the hardware model, fitted on `runs`: for each run, its end-to-end /
// steady-state - 1 less what EstimateRunCost's hardware model (8-GPU nodes, the run's GPUs,
// parameters and steady days) already explains, at least 0; the mean over the runs. The
// reference size is the smallest run's GPU count. Sets a.goodput_extra_overhead,
// a.goodput_reference_gpus and a.goodput_source.
void FitGoodput(const std::vector<GoodputRun>& runs, CostAssumptions& a);

// The quote for a published run under `a` (its GPUs in 8-GPU nodes, its steady days, no first
// start-up): for the accuracy check, where leave-one-out fits are compared with what it took.
RunCost QuotePublishedRun(const GoodputRun& run, const CostAssumptions& a);

// Spot: expected and P90 time/cost of the run on interruptible capacity. THE place where the
// spot simulator (spot::EstimateSpotJob) plugs in: preemptions at the gang MTTI of the nodes
// (the 1-GPU instance MTTI x spot::InstanceSizeRiskFor(GPUs per node) x spot::GangRiskFor(nodes),
// outages likewise),
// Daly-interval checkpoints, Uniform Progress with a deadline (greedy without), on-demand
// fallback at the offer's on-demand price (greedy when the offer has none). Without an MTTI it
// falls back to list price x time, flagged as not risk-adjusted (RunCost::risk_adjusted = false).
RunCost EstimateSpotRun(const RunInput& input, const RunCost& uninterrupted,
                        const CostAssumptions& assumptions);

}  // namespace fulcrum::plan
