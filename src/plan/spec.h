// A planning request: what to train (model, data, sequence length, batch, precision, method),
// the constraints (deadline, budget, max GPUs, providers, regions, pricing models, interruptible)
// and the ranking weights. Read from a YAML spec (examples/*.yaml) and/or command-line flags
// (flags override the file). Plain values; parsers never throw and name file:line/field on
// error. Units in names (seconds, USD, Gbit/s).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "workload/training.h"

namespace fulcrum::catalog {
struct Offer;
}  // namespace fulcrum::catalog

namespace fulcrum {
class YamlNode;
}

namespace fulcrum::plan {

// kSpot: spot only, waiting through preemptions; kSpotWithFallback: spot that switches to
// on-demand when the deadline needs it (the simulator's greedy / uniform-progress policies).
enum class PricingModel : uint8_t { kOnDemand, kReserved1y, kReserved3y, kSpot, kSpotWithFallback };
inline constexpr int kPricingModelCount = 5;

// on_demand | reserved_1y | reserved_3y | spot | spot_with_fallback
std::string_view PricingModelName(PricingModel p);
Result<PricingModel> ParsePricingModel(std::string_view text);  // also on-demand, reserved-1y...
// Whether the model runs on interruptible capacity (spot, spot_with_fallback).
inline bool IsSpot(PricingModel p) {
  return p == PricingModel::kSpot || p == PricingModel::kSpotWithFallback;
}

// How candidates that meet the deadline (P90) and the budget are ranked (they always come
// before those that do not): balanced = the weighted score (score.h), cheapest = expected cost
// (P90 cost breaks ties), fastest = P90 time.
enum class Objective : uint8_t { kBalanced, kCheapest, kFastest };
std::string_view ObjectiveName(Objective o);  // balanced | cheapest | fastest
Result<Objective> ParseObjective(std::string_view text);

// `rank_unconfirmed` / --rank-unconfirmed: "last" -> true (PlanSpec::unconfirmed_last),
// "mixed" -> false, anything else nullopt.
std::optional<bool> ParseRankUnconfirmed(std::string_view text);
// The same for the --rank-unconfirmed flag (InvalidInput naming the flag and what was found) and
// for the spec key rank_unconfirmed (the node's file:line error): plan and serve-plan.
Result<bool> RankUnconfirmedFlag(std::string_view text);
Result<bool> RankUnconfirmedField(const YamlNode& node);
// The table's footnote for rows marked "?": ranked after the confirmed ones (`last`) or by
// `order` alone ("the objective", "cost"), and which rows come first under `last`.
std::string UnconfirmedFootnote(bool last, std::string_view first_rows, std::string_view order);

// Criteria weights of the score (defaults from the issue: 0.30/0.25/0.20/0.15/0.10).
struct Weights {
  double stability = 0.30;
  double performance = 0.25;
  double cost = 0.20;
  double usability = 0.15;
  double support = 0.10;
};
// "stability=0.4,cost=0.3" (unnamed criteria keep their defaults; all >= 0; sum > 0; the weights
// are used as given, not renormalised).
Result<Weights> ParseWeights(std::string_view text, Weights base = {});

// Where each offer filter came from, as errors name it: the flag, or the spec key by default.
struct FilterOrigins {
  std::string gpus = "constraints.gpus";
  std::string providers = "constraints.providers";
  std::string regions = "constraints.regions";
  std::string pricing = "constraints.pricing";
};

// What one launcher can start (plan --launcher; plan/export.h LauncherFilterOf): the plan keeps
// the offers it can start, up to its node limit there, in the pricing models it can buy.
struct LauncherFilter {
  std::string name;  // "SkyPilot", for messages
  // The most nodes of one task it can start on the offer (nullopt in the optional: no limit);
  // an outer nullopt: it cannot start the offer at all.
  std::function<std::optional<std::optional<int>>(const catalog::Offer&)> max_nodes;
  std::vector<PricingModel> pricing;
};

struct Constraints {
  std::optional<double> deadline_seconds;
  std::optional<double> budget_usd;
  int max_gpus = 512;
  std::vector<std::string> providers;  // empty = all
  std::vector<std::string> regions;    // empty = all
  std::vector<std::string> gpus;       // GPU names or aliases; empty = all
  std::vector<PricingModel> pricing = {PricingModel::kOnDemand, PricingModel::kSpot};
  FilterOrigins filter_origins;
  bool interruptible = true;  // false: no spot
  // Memory headroom a layout must keep (fraction of GPU memory free at the peak).
  double min_headroom = 0.10;
  // Multi-node layouts need the offer's network bandwidth; where the catalog does not know it,
  // they are skipped unless this assumption (Gbit/s per node) is given.
  std::optional<double> assume_network_gbps;
  std::optional<int> max_nodes;  // at most this many nodes per candidate
  // The frameworks the job runs (`framework:` / --framework, a list); 0: read from the command
  // (plan/frameworks.h), every framework without one. Each layout is tried under each of them
  // that runs it.
  workload::FrameworkMask frameworks = 0;
  // Data parallelism may use a global batch within this fraction of the spec's (126 or 129 for
  // 128 on 3 GPUs) where no layout keeps it exactly; flagged global-batch-changed.
  double batch_tolerance = 0.05;
  bool strict_batch = false;  // only the spec's global batch, exactly
  // Drop candidates whose node's known host RAM or vCPUs fall short of the job's (plan/host.h);
  // without it they stay, flagged host-ram-short / host-cpu-short and scored lower.
  bool strict_host = false;
  // A precision the GPU cannot run in tensor cores: false skips the GPU, true plans it in fp16
  // (with a precision-fallback warning).
  bool allow_precision_fallback = false;
  // Reserved capacity already paid for: a reserved row costs its marginal (hourly) price, not
  // the term's full commitment.
  bool reserved_owned = false;
  std::optional<LauncherFilter> launcher;  // unset: every offer
};

// Optional run-cost terms beyond the instances.
struct ExtraCosts {
  double storage_gb = 0;
  double storage_usd_per_gb_month = 0;
  double egress_gb = 0;
  double egress_usd_per_gb = 0;
  // Priced by the planner from the provider's sourced storage prices (StorageNeeds): USD per
  // month of run time (disks and checkpoints while the run lasts) and USD after it (checkpoints
  // kept for keep_days).
  double priced_storage_usd_per_month = 0;
  double retained_storage_usd = 0;
  double priced_egress_usd = 0;
};

// Storage and transfer the job needs; priced per provider (catalog/storage_prices.csv). Disks
// bill while the run lasts (a stopped instance still bills its disks); checkpoints bill while
// the run lasts and keep_days after it; egress_gb leaves the region once (data or checkpoints).
struct StorageNeeds {
  double disk_gb = 0;
  double checkpoint_gb = 0;
  double keep_days = 0;
  double egress_gb = 0;
};

// What a finished or running job measured (`fulcrum plan --calibrate-from JOB`; cli/ reads it
// from jobs.db): measured / planned step time and peak memory per GPU on the job's hardware
// class (GPU model, GPUs per node, interconnect). The step-time factor applies to offers of that
// class only; other classes keep the estimator's figure (a slow node, driver or framework build
// on one GPU says nothing about another). The memory factor applies to every offer (the
// estimator's memory error is the job's: framework buffers, allocator, activations), and only
// upwards: a peak seen so far bounds the true peak from below. 1 = no correction.
struct MeasuredFactors {
  std::string gpu;           // catalog GPU name of the measured class
  int gpus_per_node = 0;     // of the measured offer
  std::string interconnect;  // catalog::InterconnectLabel ("nvlink", "pcie", "unknown")
  double step_time_factor = 1;
  double memory_factor = 1;
};

struct PlanSpec {
  std::string origin;  // file name or "flags"
  // Exactly one of: a preset name, a HuggingFace config.json path, an inline model YAML text.
  std::string model_preset;
  std::string hf_config_path;
  std::string model_yaml;
  // Work: tokens, or samples x epochs (for samples of a transformer, tokens = samples x seq_len).
  std::optional<double> tokens;
  std::optional<double> samples;
  double epochs = 1;
  // Training setup; the planner fills tp/pp/dp/zero/recompute/micro_batch/framework.
  workload::Training training;
  bool global_batch_given = false;
  bool checkpointing = true;                       // the job writes checkpoints and can resume
  std::optional<double> checkpoint_every_seconds;  // --checkpoint-every; nullopt = planned
  std::string command;                             // the user's training command (for --export)
  Constraints constraints;
  Weights weights;
  Objective objective = Objective::kBalanced;
  ExtraCosts extra;
  StorageNeeds storage;
  int top = 10;
  // Among candidates that meet the constraints, those with an unconfirmed price or interconnect
  // (Candidate::unconfirmed) rank after every confirmed one (`rank_unconfirmed: last`, the
  // default; docs/RANKING.md says why); false (`mixed`): the objective alone orders them.
  bool unconfirmed_last = true;
  // Sequences longer than the model's context (max_seq_len) are refused unless this is set.
  bool allow_long_context = false;
  // Skip simulating spot candidates that provably cannot reach the top N or the Pareto front
  // (search.cc, SpotCandidatesToSimulate); false simulates every spot candidate.
  bool prune_spot = true;
  // A job's measured efficiency applied to the search (see MeasuredFactors); nullopt = none.
  std::optional<MeasuredFactors> measured;
};

// The model of a YAML spec (plan and serve-plan): `model: <preset>` or an inline mapping (kept
// as YAML text for workload::ParseModelYaml), and `hf_config: path` resolved against `base_dir`
// when relative. Errors name the node (a model that is neither a scalar nor a mapping).
struct SpecModel {
  std::string preset, hf_config_path, yaml;
};
Status ParseSpecModel(const YamlNode& root, const std::string& base_dir, SpecModel& model);

// Parses a YAML spec. Fields (all optional except the model and the work):
//   model: <preset> | {inline model document}      hf_config: path/to/config.json
//   tokens: 20B | samples: 1.28M  epochs: 90       seq_len: 4096  global_batch: 512 (sequences)
//   precision: bf16  method: full|lora|qlora  lora_rank: 16  optimizer: adamw
//   flash_attention: true  checkpointing: true  command: "torchrun ... train.py"
//   constraints: {deadline: 7d, budget_usd: 20000, max_gpus: 64, providers: [aws],
//                 regions: [us-east-1], gpus: [H100], pricing: [on_demand, spot],
//                 interruptible: true, min_headroom: 0.1, assume_network_gbps: 100}
//   weights: {stability: 0.3, performance: 0.25, cost: 0.2, usability: 0.15, support: 0.1}
//   costs: {storage_gb: 500, storage_usd_per_gb_month: 0.08, egress_gb: 0, egress_usd_per_gb: 0}
//   storage: {disk_gb: 500, checkpoint_gb: 200, keep_days: 30}   egress_gb: 200
//   objective: balanced|cheapest|fastest
//   rank_unconfirmed: last|mixed
//   top: 10
// Relative hf_config paths are resolved against the spec file's directory (`base_dir`).
// A batch tolerance as written ("5" or "5%": percent, 0 to 50) as a fraction; nullopt otherwise.
// The one reader of --batch-tolerance and `batch_tolerance`.
std::optional<double> BatchToleranceFraction(std::string_view text);

Result<PlanSpec> ParsePlanYaml(std::string_view text, const std::string& origin,
                               const std::string& base_dir = "");
Result<PlanSpec> LoadPlanFile(const std::string& path);

// Bounds of the work and the deadline (issue 19): tokens or samples x epochs up to 1e15, a
// deadline up to 10 years, each far beyond any published run.
inline constexpr double kMaxWorkUnits = 1e15;
inline constexpr double kMaxDeadlineSeconds = 10 * 8760 * 3600.0;

// Checks a finished spec: a model given, positive finite work within kMaxWorkUnits, a sequence
// length, sane constraints.
Status ValidateSpec(const PlanSpec& spec);

}  // namespace fulcrum::plan
