// The values the planner's stages pass on (search.h's RunPlan composes them): a layout found
// for one hardware class and node count (BestLayout, searched under LayoutOptions), a costed and
// scored candidate (offer x nodes x pricing model), and the whole result. Plain values; a
// Candidate refers to its offer by index into Catalog::offers().
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "catalog/catalog.h"
#include "estimate/compute.h"
#include "estimate/memory.h"
#include "estimate/resume.h"
#include "estimate/uncertainty.h"
#include "plan/cost.h"
#include "plan/frameworks.h"
#include "plan/score.h"
#include "plan/spec.h"
#include "workload/model.h"
#include "workload/training.h"

namespace fulcrum::plan {

// The best layout for one hardware class and node count.
struct BestLayout {
  bool found = false;
  workload::Training training;  // the full setup (tp, pp, vpp, dp, zero, recompute, micro-batch)
  estimate::MemoryBreakdown memory;
  estimate::ResumeMemory resume;  // the same layout resumed from its checkpoint
  estimate::StepTime step;
  double headroom_fraction = 0;  // of the larger of the fresh and the resume peak
  int64_t evaluated = 0;         // layouts whose memory (and, when they fit, time) was computed
};

// What a layout may be. The global batch is base.global_batch where dp x micro-batch divides it;
// with `allow_batch_change`, also the nearest multiple within `batch_tolerance` of it (126 or 129
// for 128 on 3 GPUs), competing on speed (the candidate is then flagged global-batch-changed).
// Where the batch is fulcrum's default (`batch_given` false) rather than the user's, it may
// change by up to 10 %, so a default batch that dp does not divide never forces model
// parallelism on a model that needs none (BERT-large pipelined over 3 GPUs). Each layout is
// tried under every framework of `frameworks` that runs it.
struct LayoutOptions {
  workload::FrameworkMask frameworks = workload::kEveryFramework;
  bool data_parallel_only = false;  // tp, pp, cp and ep 1 (JobFrameworks::data_parallel_only)
  // What the job's command fixes (JobFrameworks::zero_stage, micro_batch): -1 / 0 = search all.
  // A fixed ZeRO stage is the stage wherever there is something to shard (dp x cp > 1), 0 where
  // there is not.
  int zero_stage = -1;
  int micro_batch = 0;
  bool allow_batch_change = true;
  double batch_tolerance = 0.05;
  bool batch_given = true;
  // A measured job's correction on this hardware class (MeasuredFactors in spec.h): the step time
  // and the peak memory of every layout are the estimator's times these (1 = uncorrected).
  double step_time_factor = 1;
  double memory_factor = 1;
};

// What a candidate's numbers rest on that the catalog cannot confirm (bits of
// Candidate::unconfirmed): its price (the offer's caveat price-unverified: not found on the
// provider's own pages, or contradicted by another source), or, on a node of several GPUs, how
// they are connected (planned as PCIe, so the time is conservative, but the hardware rented is
// not known: a slice of a marketplace machine need not have NVLink).
enum Unconfirmed : uint8_t {
  kUnconfirmedPrice = 1u << 0,
  kUnconfirmedInterconnect = 1u << 1,
};

struct Candidate {
  int offer = -1;  // index into Catalog::offers()
  int nodes = 1;
  PricingModel pricing = PricingModel::kOnDemand;
  BestLayout layout;
  double capacity_bytes = 0;
  double work_units_per_second = 0;  // tokens/s (samples/s for generic models), whole run
  estimate::StepBand band;           // the estimator's uncertainty for this setup (scales run.p90)
  // Step time at the conservative network over the step time at the assumed one (1 where the
  // catalog publishes the network or the run is one node); multiplies the band's P90.
  double network_p90_ratio = 1;
  RunCost run;
  Scores score;
  uint32_t warnings = 0;          // Pitfall bits
  uint8_t unconfirmed = 0;        // Unconfirmed bits (ranking.h UnconfirmedOf)
  bool meets_constraints = true;  // deadline (P90) and budget (expected) hold
  // How far it misses: the larger of P90 time / deadline and expected cost / budget (0 when
  // meets_constraints).
  double miss_factor = 0;
  workload::Precision precision = workload::Precision::kBf16Mixed;  // as planned (fallback: fp16)
  bool pareto = false;
  int rank = 0;  // 1-based, by (meets_constraints, score)
};

struct PlanResult {
  workload::Model model;
  PlanSpec spec;
  std::vector<Candidate> candidates;  // ranked: rank 1 first
  std::vector<int> pareto;            // indices into candidates, by increasing total time
  double work_units = 0;              // tokens (or samples for generic models)
  bool units_are_samples = false;
  int64_t configurations = 0;     // layouts evaluated (memory; time where it fits)
  int64_t offers_considered = 0;  // offers that passed the filters
  int64_t spot_pruned = 0;        // spot candidates provably outside the top N and the Pareto front
  int64_t hardware_classes = 0;
  double seconds = 0;  // wall time of the search
  int threads = 1;
  std::vector<std::string> notes;  // assumptions worth telling the user
  // The frameworks searched (plan/frameworks.h JobFrameworksOf) and why ("" = every framework,
  // for want of a command).
  workload::FrameworkMask frameworks = workload::kEveryFramework;
  std::string frameworks_reason;
  // How the command's script takes the layout (JobFrameworks::layout_arguments): an export of a
  // megatron pick sets it as the script's arguments.
  LayoutArguments layout_arguments = LayoutArguments::kNone;
  Objective objective = Objective::kBalanced;
  ScoreReference reference;  // what the balanced score was relative to
  // The smallest miss_factor of a candidate that misses (0: none misses). Misses up to
  // nearest_miss_factor x (1 + kNearMissTolerance) are "near misses", ordered by cost.
  double nearest_miss_factor = 0;
};

// Misses within this share of the nearest miss count as equally near: among them cost decides
// (cheapest: expected cost; balanced: P90 cost; fastest: P90 time still), farther misses follow
// by how far they miss. 5 % (1.5 days of a 30-day deadline) is within the estimator's own
// P10-P90 step-time band (-7/+5 % for the 70B pre-train of examples/llama-70b-pretrain.yaml on
// 1024 H200, -42/+32 % for llama-3-8b on 8 H100: time.step_seconds_p10/p90), so a P90 nearer by
// less than that is not a better-known time, while a row that costs 50 % more is.
inline constexpr double kNearMissTolerance = 0.05;

// The facts of a costed candidate that the score reads.
inline RunFacts FactsOf(const Candidate& c) {
  return {c.run.p90_seconds, c.run.expected_usd, c.run.expected_interruptions, c.nodes,
          c.run.p90_usd};
}

// What the stages after the layout search read: the request with its constraints resolved
// (ResolvePlanOffers) and its batch settled. RunPlan builds it once; it refers to values the
// caller keeps alive for the plan's duration.
struct PlanInputs {
  const catalog::Catalog& catalog;
  const workload::Model& model;
  const PlanSpec& spec;
  const CostAssumptions& assumptions;
  workload::Training base;  // spec.training with the batch settled (the default where not given)
  double work_units = 0;    // tokens, or samples for generic models
  double trained_parameters = 0;  // estimate::TrainableParameterCount(model, base)
  int threads = 0;                // <= 0: the hardware's
  JobFrameworks frameworks;       // the frameworks searched and why (JobFrameworksOf(spec))
};

}  // namespace fulcrum::plan
