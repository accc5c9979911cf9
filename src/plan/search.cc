#include "plan/search.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <set>
#include <thread>
#include <tuple>

#include <fmt/format.h>

#include "core/parse.h"
#include "estimate/estimate.h"
#include "estimate/uncertainty.h"
#include "plan/pitfalls.h"

namespace fulcrum::plan {
namespace {

using workload::Recompute;

constexpr int kMicroBatches[] = {1, 2, 4, 8, 16, 32, 64};
constexpr Recompute kRecomputes[] = {Recompute::kNone, Recompute::kSelective, Recompute::kFull};
// Node counts tried (multi-node runs in steps that keep common data-parallel sizes).
constexpr int kNodeCounts[] = {1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256};
// A global batch rounded up to a multiple of dp x micro-batch may grow by at most this factor.
constexpr double kMaxBatchRounding = 1.10;
// Context parallelism is tried for long sequences only (from 16k tokens: where activations, not
// model states, dominate; Megatron-LM and torchtitan use cp 2-8 from 16k-32k up), within a node
// with tp (the K/V ring wants NVLink).
constexpr int64_t kContextParallelMinSeqLen = 16384;
constexpr int kMaxContextParallel = 8;

// Whether a common framework runs the layout with the training's method. Full training: every
// layout FrameworkRunsLayout allows. LoRA under Megatron conventions (tp, pp, cp, ep, the
// distributed optimizer) runs on NeMo Megatron-Bridge PEFT, which trains LoRA on Megatron-Core
// with tensor and pipeline parallelism (docs.nvidia.com/nemo/megatron-bridge: "pretraining, SFT
// and LoRA ... tensor and pipeline parallelism"); the plan labels it megatron-bridge
// (FrameworkLabel). QLoRA's 4-bit NF4 base is bitsandbytes, which HF PEFT shards only with FSDP
// or DeepSpeed ZeRO-3 (PEFT 0.10 release notes, "QLoRA with DeepSpeed ZeRO3 and FSDP";
// huggingface.co/docs/peft/accelerate/fsdp): plain data parallel, no tp, pp, cp or ep.
bool PeftRunsLayout(const workload::Training& t) {
  if (t.method != workload::Method::kQlora) return true;
  return t.tp == 1 && t.pp == 1 && t.cp == 1 && t.ep == 1 &&
         t.framework != workload::Framework::kMegatron;
}

// The estimator's memory times a measured job's factor (every part scales alike).
estimate::MemoryBreakdown PlannedMemory(const workload::Model& model, const workload::Training& t,
                                        double factor) {
  estimate::MemoryBreakdown m = estimate::EstimateMemory(model, t);
  if (factor == 1) return m;
  for (double* part :
       {&m.weights_bytes, &m.gradients_bytes, &m.optimizer_bytes, &m.activations_bytes,
        &m.logits_bytes, &m.comm_buffer_bytes, &m.cuda_context_bytes, &m.allocator_reserve_bytes,
        &m.other_bytes, &m.allocated_bytes, &m.reserved_bytes, &m.peak_bytes_per_gpu}) {
    *part *= factor;
  }
  return m;
}

// Tries one layout; updates `best`. Returns false when it does not fit in memory.
bool TryLayout(const workload::Model& model, workload::Training& t, const estimate::Hardware& hw,
               double usable_bytes, double capacity_bytes, const LayoutOptions& options,
               BestLayout& best) {
  ++best.evaluated;
  const estimate::MemoryBreakdown mem = PlannedMemory(model, t, options.memory_factor);
  if (!(mem.peak_bytes_per_gpu <= usable_bytes)) return false;
  const estimate::StepTime st = PlannedStepTime(model, t, hw, options.step_time_factor);
  if (!std::isfinite(st.step_seconds)) return true;
  const double headroom = estimate::HeadroomFraction(mem.peak_bytes_per_gpu, capacity_bytes);
  const double rate = st.tokens_per_second_per_gpu;
  const double best_rate = best.found ? best.step.tokens_per_second_per_gpu : -1;
  if (!best.found || rate > best_rate || (rate == best_rate && headroom > best.headroom_fraction)) {
    best.found = true;
    best.training = t;
    best.memory = mem;
    best.step = st;
    best.headroom_fraction = headroom;
  }
  return true;
}

void ScanMicroBatches(const workload::Model& model, workload::Training& t,
                      const estimate::Hardware& hw, double usable, double capacity,
                      int64_t global_batch, bool exact_batch, const LayoutOptions& options,
                      BestLayout& best) {
  for (int mb : kMicroBatches) {
    const int64_t per_step = mb * t.dp;
    if (per_step > global_batch * kMaxBatchRounding) break;
    const int64_t steps = (global_batch + per_step - 1) / per_step;
    const int64_t effective = steps * per_step;
    if (exact_batch ? effective != global_batch
                    : static_cast<double>(effective) >
                          static_cast<double>(global_batch) * kMaxBatchRounding) {
      continue;
    }
    t.micro_batch = mb;
    t.global_batch = effective;
    // Memory grows with the micro-batch: once one does not fit, larger ones cannot.
    if (!TryLayout(model, t, hw, usable, capacity, options, best)) break;
  }
}

void ScanLayouts(const workload::Model& model, const workload::Training& base,
                 const estimate::Hardware& hw, double capacity_bytes, int gpus, double min_headroom,
                 const LayoutOptions& options, bool exact_batch, BestLayout& best) {
  const double usable = capacity_bytes * (1.0 - min_headroom);
  const bool generic = model.kind == workload::ModelKind::kGeneric;
  const int64_t layers = generic ? 1 : model.layers;
  const int64_t kv_heads = model.kv_heads > 0 ? model.kv_heads : model.heads;
  workload::Training t = base;
  const int max_cp = generic || base.seq_len < kContextParallelMinSeqLen ? 1 : kMaxContextParallel;
  for (int tp = 1; tp <= hw.gpus_per_node && tp <= gpus; tp *= 2) {
    if (gpus % tp != 0 || hw.gpus_per_node % tp != 0) continue;
    if (generic && tp > 1) break;
    if (!generic && (model.heads % tp != 0 || kv_heads % tp != 0)) continue;
    for (int cp = 1; cp <= max_cp && tp * cp <= hw.gpus_per_node; cp *= 2) {
      if (gpus % (tp * cp) != 0 || (cp > 1 && base.seq_len % (2 * cp) != 0)) continue;
      for (int pp = 1; pp <= gpus / (tp * cp) && pp <= layers; ++pp) {
        // pp need not divide the layers: the stages then hold the floor or the ceiling of
        // layers / pp, the first and last the floor (workload::PipelineStageLayers; Megatron-LM
        // --decoder-first/last-pipeline-num-layers, as Llama 3 405B's pp16 over 126 layers with
        // one layer less on the first and the last stage, arXiv 2407.21783 Sec. 3.3.2).
        // Interleaving (vpp > 1) needs pp x vpp to divide them.
        if ((gpus / (tp * cp)) % pp != 0) continue;
        const int dp = gpus / (tp * cp * pp);
        for (int vpp = 1; vpp <= (pp > 1 ? 2 : 1); ++vpp) {
          if (vpp > 1 && layers % (static_cast<int64_t>(pp) * vpp) != 0) continue;
          // ZeRO shards over dp x cp (nothing to shard at 1); stages 2/3 do not combine with
          // pipeline parallelism (DeepSpeed refuses ZeRO-2/3 with pipeline parallelism).
          // Generic (FLOPs-only) models run plain data parallel (DDP): their time model does not
          // distinguish ZeRO stages, and a CNN's states are small.
          const int max_zero = dp * cp == 1 || generic ? 0 : (pp > 1 ? 1 : 3);
          for (int zero = 0; zero <= max_zero; ++zero) {
            // Mixture of experts: expert parallelism carved out of dp (ep divides dp and the
            // experts).
            for (int ep = 1; ep <= (workload::IsMoe(model) ? dp : 1); ep *= 2) {
              if (dp % ep != 0 || (ep > 1 && model.experts % ep != 0)) continue;
              for (Recompute rc : kRecomputes) {
                t.tp = tp;
                t.pp = pp;
                t.vpp = vpp;
                t.cp = cp;
                t.dp = dp;
                t.ep = ep;
                t.zero_stage = zero;
                t.recompute = rc;
                t.sequence_parallel = tp > 1;
                t.framework = options.framework.value_or(workload::DefaultFrameworkFor(t));
                if (!workload::FrameworkRunsLayout(t.framework, t) || !PeftRunsLayout(t)) {
                  continue;
                }
                ScanMicroBatches(model, t, hw, usable, capacity_bytes, base.global_batch,
                                 exact_batch, options, best);
              }
            }
          }
        }
      }
    }
  }
}

}  // namespace

estimate::StepTime PlannedStepTime(const workload::Model& model, const workload::Training& t,
                                   const estimate::Hardware& hardware, double step_time_factor) {
  estimate::StepTime st = estimate::EstimateStepTime(model, t, hardware);
  if (step_time_factor == 1 || !(step_time_factor > 0)) return st;
  for (double* part : {&st.step_seconds, &st.compute_seconds, &st.communication_seconds,
                       &st.bubble_seconds, &st.exposed_seconds}) {
    *part *= step_time_factor;
  }
  st.tokens_per_second_per_gpu /= step_time_factor;
  st.mfu /= step_time_factor;
  st.hfu /= step_time_factor;
  return st;
}

BestLayout SearchLayouts(const workload::Model& model, const workload::Training& base,
                         const estimate::Hardware& hw, double capacity_bytes, int gpus,
                         double min_headroom, const LayoutOptions& options) {
  BestLayout best;
  if (!options.batch_given && options.allow_batch_change) {
    ScanLayouts(model, base, hw, capacity_bytes, gpus, min_headroom, options, false, best);
    return best;
  }
  ScanLayouts(model, base, hw, capacity_bytes, gpus, min_headroom, options, true, best);
  if (!best.found && options.allow_batch_change) {
    ScanLayouts(model, base, hw, capacity_bytes, gpus, min_headroom, options, false, best);
  }
  return best;
}

std::vector<int> ParetoFront(const std::vector<double>& x, const std::vector<double>& y) {
  std::vector<int> order(x.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(),
            [&](int a, int b) { return x[a] != x[b] ? x[a] < x[b] : y[a] < y[b]; });
  std::vector<int> front;
  double best_y = std::numeric_limits<double>::infinity();
  for (int i : order) {
    if (y[i] < best_y) {
      front.push_back(i);
      best_y = y[i];
    }
  }
  return front;
}

namespace {

// Offers that share hardware share one layout search.
struct HardwareClass {
  const catalog::Gpu* gpu = nullptr;
  estimate::Hardware hardware;
  double capacity_bytes = 0;
  bool network_known = false;
  bool network_assumed = false;
  // Network assumed (not published) and above the conservative figure: the same node at the
  // conservative figure, for which multi-node layouts are chosen and the P90 is planned
  // (ConservativeNetwork).
  std::optional<estimate::Hardware> conservative;
  workload::Precision precision = workload::Precision::kBf16Mixed;
  bool precision_fallback = false;
  std::vector<int> node_counts;
  // A measured job's correction for this class (spec.measured): the step time on the measured
  // class only, the memory on every class.
  double step_time_factor = 1;
  double memory_factor = 1;
};

// Whether an offer is of a measured job's hardware class: same GPU model, GPUs per node and
// interconnect.
bool OfMeasuredClass(const MeasuredFactors& m, const catalog::Offer& o) {
  return m.gpu == o.gpu && m.gpus_per_node == o.gpu_count &&
         m.interconnect == catalog::InterconnectLabel(o.interconnect);
}

// The conservative inter-node network of an offer whose provider publishes none: the lowest
// per-GPU figure any multi-GPU offer of the catalog publishes (each row carries its source;
// today GCP's A2 machines, "up to 100 Gbps" over ordinary gVNIC Ethernet without RDMA, for 16
// GPUs in a2-megagpu-16g: cloud.google.com/compute/docs/gpus/gpu-network-bandwidth) times the
// offer's GPUs. A spec's `assume_network_gbps` plans the mean; the P90 uses this figure, so an
// optimistic assumption spread over many nodes is not credited in the deadline check or the
// balanced cost.
struct ConservativeNetwork {
  double gbps_per_gpu = 0;  // 0: no offer publishes a figure
  const catalog::Offer* from = nullptr;
};

ConservativeNetwork ConservativeNetworkOf(const catalog::Catalog& catalog) {
  ConservativeNetwork out;
  for (const catalog::Offer& o : catalog.offers()) {
    if (!o.network_gbps || o.gpu_count < 1) continue;
    const double per_gpu = *o.network_gbps / o.gpu_count;
    if (out.from == nullptr || per_gpu < out.gbps_per_gpu) {
      out.gbps_per_gpu = per_gpu;
      out.from = &o;
    }
  }
  return out;
}

struct Task {
  int hardware_class;
  int nodes;
};

bool Matches(const std::vector<std::string>& filter, std::string_view value) {
  if (filter.empty()) return true;
  for (const std::string& f : filter) {
    if (EqualsIgnoreCase(f, value)) return true;
  }
  return false;
}

bool GpuMatches(const catalog::Catalog& catalog, const std::vector<std::string>& filter,
                const std::string& gpu) {
  if (filter.empty()) return true;
  for (const std::string& f : filter) {
    const catalog::Gpu* g = catalog.FindGpu(f);
    if (g != nullptr && g->name == gpu) return true;
  }
  return false;
}

double WorkUnits(const workload::Model& model, const PlanSpec& spec, bool* samples_out) {
  const bool generic = model.kind == workload::ModelKind::kGeneric;
  *samples_out = generic;
  if (spec.tokens) return *spec.tokens;  // RunPlan refuses tokens for generic models
  const double samples = *spec.samples * spec.epochs;
  return generic ? samples : samples * static_cast<double>(spec.training.seq_len);
}

workload::Training BaseTraining(const workload::Model& model, const PlanSpec& spec) {
  workload::Training t = spec.training;
  if (!spec.global_batch_given) {
    // Default batch: 256 samples for generic models (ResNet-50's classic batch, Goyal et al.
    // 2017 use 256 per 8 GPUs); 2^20 tokens for transformers (fulcrum's default).
    t.global_batch =
        model.kind == workload::ModelKind::kGeneric
            ? 256
            : std::max<int64_t>(1, (int64_t{1} << 20) / std::max<int64_t>(1, t.seq_len));
  }
  return t;
}

// A candidate waiting to be costed.
struct Pending {
  Candidate cand;
  RunInput run;
  const HardwareClass* hc;
};

RunFacts FactsOf(const Candidate& c) {
  return {c.run.p90_seconds, c.run.expected_usd, c.run.expected_interruptions, c.nodes,
          c.run.p90_usd};
}

// The balanced score's reference: the cheapest feasible expected cost (shown) and P90 cost (what
// the cost criterion is relative to), and the saturation time (from the fastest feasible P90
// when there is no deadline). Feasible = meets the deadline and the budget; when none does,
// every candidate.
ScoreReference ReferenceOf(const std::vector<Candidate>& candidates,
                           std::optional<double> deadline_seconds) {
  const bool any_feasible = std::any_of(candidates.begin(), candidates.end(),
                                        [](const Candidate& c) { return c.meets_constraints; });
  double cheapest = std::numeric_limits<double>::infinity();
  double fastest = cheapest, cheapest_p90 = cheapest;
  for (const Candidate& c : candidates) {
    if (any_feasible && !c.meets_constraints) continue;
    cheapest = std::min(cheapest, c.run.expected_usd);
    cheapest_p90 = std::min(cheapest_p90, c.run.p90_usd);
    fastest = std::min(fastest, c.run.p90_seconds);
  }
  return {SaturationSeconds(deadline_seconds, fastest), cheapest, cheapest_p90};
}

// How far a candidate misses its constraints: the larger of P90 time / deadline and expected
// cost / budget (at most 1 for a constraint it meets, 0 without constraints). Among candidates
// that miss, the nearest misses come first (BetterMiss): when nothing meets a 30-day deadline, a
// run of 31 days is the answer to show, not the cheapest run of 159 days, and of two runs of 30.1
// and 30.3 days the one that costs a third less.
double Violation(const Candidate& c, const Constraints& k) {
  double v = 0;
  if (k.deadline_seconds) v = std::max(v, c.run.p90_seconds / *k.deadline_seconds);
  if (k.budget_usd) v = std::max(v, c.run.expected_usd / *k.budget_usd);
  return v;
}

// The order among candidates that miss: near misses (within kNearMissTolerance of the nearest
// one) first, by cost (by P90 time for the fastest objective), then the farther misses by how
// far they miss. Keyed on the miss and the cost only, so it is a strict weak order.
bool BetterMiss(const Candidate& a, const Candidate& b, double near_limit, Objective objective) {
  const bool near_a = a.miss_factor <= near_limit, near_b = b.miss_factor <= near_limit;
  if (near_a != near_b) return near_a;
  if (near_a && objective != Objective::kFastest) {
    const double ca = objective == Objective::kCheapest ? a.run.expected_usd : a.run.p90_usd;
    const double cb = objective == Objective::kCheapest ? b.run.expected_usd : b.run.p90_usd;
    if (ca != cb) return ca < cb;
  }
  if (a.miss_factor != b.miss_factor) return a.miss_factor < b.miss_factor;
  return a.run.expected_usd < b.run.expected_usd;
}

// The objective's order among candidates with the same feasibility.
bool BetterByObjective(const Candidate& a, const Candidate& b, Objective objective) {
  switch (objective) {
    case Objective::kCheapest:
      if (a.run.expected_usd != b.run.expected_usd) return a.run.expected_usd < b.run.expected_usd;
      return a.run.p90_usd < b.run.p90_usd;
    case Objective::kFastest:
      if (a.run.p90_seconds != b.run.p90_seconds) return a.run.p90_seconds < b.run.p90_seconds;
      return a.run.expected_usd < b.run.expected_usd;
    case Objective::kBalanced:
      if (a.score.total != b.score.total) return a.score.total > b.score.total;
      return a.run.expected_usd < b.run.expected_usd;
  }
  return false;
}

// Which spot candidates need the (expensive) simulator. A spot run takes at least its work plus
// the start-up (T_lb, a lower bound of its total and P90 time) and costs at least that time at
// min(spot, on-demand) price on every node plus the extras (C_lb). With the exact (non-spot)
// candidates costed, a spot candidate is left out only when it provably cannot (1) change the
// balanced score's reference (the cheapest feasible cost, expected or P90, or without a deadline
// the fastest feasible P90: T_lb and C_lb are not below the exact feasible bests), (2) be on the
// Pareto front (an exact candidate is at least as fast and as cheap as its lower bounds, strictly
// in one), nor (3) reach the top N by the objective: at least N exact candidates meet the
// constraints and the N-th best of them beats the spot candidate's bound (cheapest: C_lb;
// fastest: T_lb; balanced: its score upper bound, perf and cost at its lower bounds and no
// interruptions, against the exact lower-bound scores at the lowest reference the kept spot
// rows could give). Everything left out would rank below N and off the front.
std::vector<size_t> SpotCandidatesToSimulate(const std::vector<Pending>& pending,
                                             const std::vector<size_t>& exact,
                                             const std::vector<size_t>& spot, const PlanSpec& spec,
                                             const CostAssumptions& a) {
  const size_t n = spot.size();
  std::vector<double> t_lb(n), c_lb(n);
  for (size_t k = 0; k < n; ++k) {
    const RunInput& r = pending[spot[k]].run;
    const double price = std::min(r.hourly_usd, r.on_demand_usd_per_hour.value_or(r.hourly_usd));
    t_lb[k] = r.work_seconds + a.startup_seconds;
    c_lb[k] = price * r.nodes * t_lb[k] / 3600.0 + r.extra.egress_gb * r.extra.egress_usd_per_gb +
              r.extra.priced_egress_usd + r.extra.retained_storage_usd;
  }
  std::vector<const Candidate*> feasible;
  for (size_t i : exact) {
    if (pending[i].cand.meets_constraints) feasible.push_back(&pending[i].cand);
  }
  const size_t top = static_cast<size_t>(std::max(1, spec.top));
  if (feasible.size() < top) return spot;  // the top N or the reference may need any of them
  const std::optional<double> deadline = spec.constraints.deadline_seconds;
  // The cost references: the cheapest feasible expected cost (shown) and P90 cost (scored);
  // C_lb bounds both from below.
  double feasible_c = std::numeric_limits<double>::infinity(), feasible_p90 = feasible_c;
  double feasible_p90_c = feasible_c;
  for (const Candidate* c : feasible) {
    feasible_c = std::min(feasible_c, c->run.expected_usd);
    feasible_p90_c = std::min(feasible_p90_c, c->run.p90_usd);
    feasible_p90 = std::min(feasible_p90, c->run.p90_seconds);
  }
  std::vector<bool> keep(n, false);
  // The lowest reference the kept rows could give.
  double low_c = feasible_c, low_p90_c = feasible_p90_c, low_p90 = feasible_p90;
  for (size_t k = 0; k < n; ++k) {
    const bool sets_saturation =
        !deadline && t_lb[k] < feasible_p90 && feasible_p90 > kSaturationWithoutDeadlineSeconds;
    if (c_lb[k] < feasible_p90_c || sets_saturation) {
      keep[k] = true;
      low_c = std::min(low_c, c_lb[k]);
      low_p90_c = std::min(low_p90_c, c_lb[k]);
      low_p90 = std::min(low_p90, t_lb[k]);
    }
  }
  const ScoreReference low{SaturationSeconds(deadline, low_p90), low_c, low_p90_c};
  const ScoreReference high{SaturationSeconds(deadline, feasible_p90), feasible_c, feasible_p90_c};
  // The N-th best key among the exact feasible candidates (higher is better for scores).
  std::vector<double> keys;
  for (const Candidate* c : feasible) {
    switch (spec.objective) {
      case Objective::kCheapest:
        keys.push_back(c->run.expected_usd);
        break;
      case Objective::kFastest:
        keys.push_back(c->run.p90_seconds);
        break;
      case Objective::kBalanced: {
        Scores s = c->score;
        FinishScores(s, FactsOf(*c), low, spec.weights);
        keys.push_back(s.total);
        break;
      }
    }
  }
  const bool higher_is_better = spec.objective == Objective::kBalanced;
  if (higher_is_better) {
    std::nth_element(keys.begin(), keys.begin() + (top - 1), keys.end(), std::greater<double>());
  } else {
    std::nth_element(keys.begin(), keys.begin() + (top - 1), keys.end());
  }
  const double threshold = keys[top - 1];
  std::vector<size_t> out;
  for (size_t k = 0; k < n; ++k) {
    const Pending& p = pending[spot[k]];
    bool dominated = false;
    for (size_t i : exact) {
      const RunCost& e = pending[i].cand.run;
      if (e.total_seconds <= t_lb[k] && e.expected_usd <= c_lb[k] &&
          (e.total_seconds < t_lb[k] || e.expected_usd < c_lb[k])) {
        dominated = true;
        break;
      }
    }
    bool below_top = false;
    switch (spec.objective) {
      case Objective::kCheapest:
        below_top = c_lb[k] > threshold;
        break;
      case Objective::kFastest:
        below_top = t_lb[k] > threshold;
        break;
      case Objective::kBalanced: {
        Scores upper = OfferScores(p.run.provider, PricingModel::kSpot, p.cand.nodes);
        FinishScores(upper, RunFacts{t_lb[k], c_lb[k], 0, p.cand.nodes}, high, spec.weights);
        below_top = upper.total < threshold;
        break;
      }
    }
    if (keep[k] || !dominated || !below_top) out.push_back(spot[k]);
  }
  return out;
}
}  // namespace

Result<PlanResult> RunPlan(const catalog::Catalog& catalog, const workload::Model& model,
                           const PlanSpec& spec, const CostAssumptions& assumptions, int threads) {
  const auto started = std::chrono::steady_clock::now();
  FULCRUM_RETURN_IF_ERROR(ValidateSpec(spec));
  if (model.kind == workload::ModelKind::kGeneric && spec.tokens) {
    return Status::InvalidInput(spec.origin + ": tokens: '" + model.name +
                                "' is a generic (non-token) model; give samples and epochs");
  }
  if (model.max_seq_len > 0 && spec.training.seq_len > model.max_seq_len &&
      !spec.allow_long_context) {
    ErrorDetail detail;
    detail.field = "seq_len";
    detail.expected = "at most " + std::to_string(model.max_seq_len);
    detail.found = std::to_string(spec.training.seq_len);
    return Status::InvalidInput(spec.origin + ": seq_len " + std::to_string(spec.training.seq_len) +
                                " is beyond " + model.name + "'s context of " +
                                std::to_string(model.max_seq_len) +
                                " tokens (--allow-long-context plans it anyway, e.g. for a "
                                "context-extension run)")
        .WithDetail(detail);
  }
  PlanResult result;
  result.model = model;
  result.spec = spec;
  result.work_units = WorkUnits(model, spec, &result.units_are_samples);
  const Constraints& c = spec.constraints;
  const workload::Training base = BaseTraining(model, spec);
  const double trained_params = estimate::TrainableParameterCount(model, base);

  // --- filter offers, group them by hardware --------------------------------------------
  std::vector<HardwareClass> classes;
  std::map<std::tuple<std::string, int, int, double>, int> class_of_key;
  std::vector<int> class_of_offer(catalog.offers().size(), -1);
  std::set<std::string> skipped_precision;
  const auto& offers = catalog.offers();
  const ConservativeNetwork conservative = ConservativeNetworkOf(catalog);
  bool any_conservative = false;
  for (size_t i = 0; i < offers.size(); ++i) {
    const catalog::Offer& o = offers[i];
    if (!Matches(c.providers, o.provider) || !Matches(c.regions, o.region) ||
        !GpuMatches(catalog, c.gpus, o.gpu) || o.gpu_count > c.max_gpus) {
      continue;
    }
    const catalog::Gpu* gpu = catalog.FindGpu(o.gpu);
    if (gpu == nullptr) continue;
    // Only hardware modes the GPU has: skip it, or plan fp16 where the user allows it.
    workload::Precision precision = base.precision;
    bool fallback = false;
    if (!estimate::PrecisionSupported(*gpu, precision)) {
      if (c.allow_precision_fallback &&
          estimate::PrecisionSupported(*gpu, workload::Precision::kFp16Mixed)) {
        precision = workload::Precision::kFp16Mixed;
        fallback = true;
      } else {
        skipped_precision.insert(gpu->name);
        continue;
      }
    }
    const double network = o.network_gbps.value_or(c.assume_network_gbps.value_or(-1));
    const auto key =
        std::make_tuple(gpu->name, o.gpu_count, static_cast<int>(o.interconnect), network);
    auto it = class_of_key.find(key);
    if (it == class_of_key.end()) {
      catalog::Offer shaped = o;
      shaped.network_gbps = network > 0 ? std::optional<double>(network) : std::nullopt;
      std::optional<estimate::Hardware> hw = estimate::HardwareFor(*gpu, shaped, precision);
      if (!hw) continue;  // no sourced peak for this precision
      HardwareClass hc;
      hc.gpu = gpu;
      hc.hardware = *hw;
      hc.capacity_bytes = estimate::CapacityBytesFromGib(gpu->memory_gib);
      hc.network_known = o.network_gbps.has_value();
      hc.network_assumed = !o.network_gbps && c.assume_network_gbps.has_value();
      const double low = conservative.gbps_per_gpu * o.gpu_count;
      if (hc.network_assumed && low > 0 && low < network) {
        shaped.network_gbps = low;
        hc.conservative = estimate::HardwareFor(*gpu, shaped, precision);
        any_conservative = any_conservative || hc.conservative.has_value();
      }
      hc.precision = precision;
      hc.precision_fallback = fallback;
      if (spec.measured) {
        hc.memory_factor = std::max(1.0, spec.measured->memory_factor);
        if (OfMeasuredClass(*spec.measured, o))
          hc.step_time_factor = spec.measured->step_time_factor;
      }
      for (int n : kNodeCounts) {
        if (n * o.gpu_count > c.max_gpus) break;
        if (c.max_nodes && n > *c.max_nodes) break;
        if (n > 1 && network <= 0) break;  // multi-node needs a known (or assumed) network
        hc.node_counts.push_back(n);
      }
      it = class_of_key.emplace(key, static_cast<int>(classes.size())).first;
      classes.push_back(std::move(hc));
    }
    class_of_offer[i] = it->second;
    ++result.offers_considered;
  }
  result.hardware_classes = static_cast<int64_t>(classes.size());

  // --- layout search: (class, nodes) tasks on worker threads -------------------------------
  std::vector<Task> tasks;
  for (size_t k = 0; k < classes.size(); ++k) {
    for (int n : classes[k].node_counts) tasks.push_back({static_cast<int>(k), n});
  }
  std::vector<BestLayout> best(tasks.size());
  // Step time at the conservative network / at the assumed one, for the chosen layout (1 where
  // the network is published or one node).
  std::vector<double> network_ratio(tasks.size(), 1.0);
  if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  threads =
      std::max(1, std::min<int>(threads, static_cast<int>(std::max<size_t>(1, tasks.size()))));
  result.threads = threads;
  std::atomic<size_t> next{0};
  LayoutOptions layout_options;
  layout_options.framework = c.framework;
  layout_options.allow_batch_change = !c.strict_batch;
  layout_options.batch_given = spec.global_batch_given;
  auto worker = [&] {
    workload::Training class_base = base;
    for (size_t i = next.fetch_add(1); i < tasks.size(); i = next.fetch_add(1)) {
      const HardwareClass& hc = classes[tasks[i].hardware_class];
      class_base.precision = hc.precision;
      // On an assumed network the layout is chosen for the conservative figure (what the P90
      // plans: pipeline stages rather than ZeRO-3 over hundreds of VMs) and its mean step is
      // then taken at the assumption.
      const bool assumed = hc.conservative && tasks[i].nodes > 1;
      LayoutOptions class_options = layout_options;
      class_options.step_time_factor = hc.step_time_factor;
      class_options.memory_factor = hc.memory_factor;
      best[i] = SearchLayouts(model, class_base, assumed ? *hc.conservative : hc.hardware,
                              hc.capacity_bytes, tasks[i].nodes * hc.hardware.gpus_per_node,
                              c.min_headroom, class_options);
      if (assumed && best[i].found) {
        const estimate::StepTime low = best[i].step;
        best[i].step = PlannedStepTime(model, best[i].training, hc.hardware, hc.step_time_factor);
        if (std::isfinite(low.step_seconds) && best[i].step.step_seconds > 0) {
          network_ratio[i] = std::max(1.0, low.step_seconds / best[i].step.step_seconds);
        }
      }
    }
  };
  std::vector<std::thread> pool;
  for (int i = 1; i < threads; ++i) pool.emplace_back(worker);
  worker();
  for (std::thread& th : pool) th.join();
  std::map<std::pair<int, int>, int> task_of;  // (class, nodes) -> task
  for (size_t i = 0; i < tasks.size(); ++i) {
    result.configurations += best[i].evaluated;
    task_of[{tasks[i].hardware_class, tasks[i].nodes}] = static_cast<int>(i);
  }

  // --- candidates: offer x nodes x pricing (cost on the worker threads: spot simulates) ----
  std::vector<ExtraCosts> extras_of_offer(offers.size());
  std::set<std::string> unpriced_providers;
  for (size_t i = 0; i < offers.size(); ++i) {
    if (class_of_offer[i] < 0) continue;
    bool unpriced = false;
    extras_of_offer[i] = ExtrasFor(spec, offers[i].provider, assumptions, &unpriced);
    if (unpriced) unpriced_providers.insert(offers[i].provider);
  }
  std::vector<Pending> pending;
  for (size_t i = 0; i < offers.size(); ++i) {
    if (class_of_offer[i] < 0) continue;
    const catalog::Offer& o = offers[i];
    const HardwareClass& hc = classes[class_of_offer[i]];
    const catalog::Provider* provider = catalog.FindProvider(o.provider);
    for (int nodes : hc.node_counts) {
      const int task = task_of[{class_of_offer[i], nodes}];
      const BestLayout& layout = best[task];
      if (!layout.found) continue;
      for (PricingModel pricing : c.pricing) {
        if (pricing == PricingModel::kSpot && !c.interruptible) continue;
        const std::optional<double> hourly = HourlyPriceUsd(o, provider, pricing);
        if (!hourly) continue;
        Pending p;
        p.hc = &hc;
        p.cand.offer = static_cast<int>(i);
        p.cand.nodes = nodes;
        p.cand.pricing = pricing;
        p.cand.layout = layout;
        p.cand.capacity_bytes = hc.capacity_bytes;
        p.cand.precision = hc.precision;
        p.cand.network_p90_ratio = network_ratio[task];
        const int gpus = nodes * o.gpu_count;
        p.cand.work_units_per_second = layout.step.tokens_per_second_per_gpu * gpus;
        p.run.work_seconds = result.work_units / p.cand.work_units_per_second;
        p.run.nodes = nodes;
        p.run.gpus = gpus;
        p.run.trained_parameters = trained_params;
        p.run.checkpointing = spec.checkpointing;
        p.run.hourly_usd = *hourly;
        p.run.pricing = pricing;
        p.run.provider = provider;
        p.run.extra = extras_of_offer[i];
        p.run.deadline_seconds = c.deadline_seconds;
        p.run.on_demand_usd_per_hour = o.on_demand_usd_per_hour;
        p.run.reserved_owned = c.reserved_owned;
        pending.push_back(p);
      }
    }
  }
  auto finish = [&](Pending& p) {
    Candidate& cand = p.cand;
    const catalog::Offer& o = offers[cand.offer];
    bool calibrated = true;
    if (const auto& covered = assumptions.calibrated_architectures) {
      calibrated = std::binary_search(covered->begin(), covered->end(), p.hc->gpu->architecture);
    }
    cand.band =
        estimate::BandFor(estimate::DefaultUncertaintyTable(), model, p.run.gpus, calibrated);
    p.run.step_p90_ratio = cand.band.step_p90_ratio * cand.network_p90_ratio;
    cand.run = EstimateRunCost(p.run, assumptions);
    PitfallFacts facts;
    const estimate::MemoryBreakdown& mem = cand.layout.memory;
    facts.model_state_bytes = mem.weights_bytes + mem.gradients_bytes + mem.optimizer_bytes;
    facts.capacity_bytes = cand.capacity_bytes;
    const workload::Training& t = cand.layout.training;
    facts.sharded = t.tp > 1 || t.pp > 1 || (t.zero_stage >= 1 && t.dp > 1);
    facts.gpus = p.run.gpus;
    facts.nodes = cand.nodes;
    facts.pcie_only = o.interconnect == catalog::Interconnect::kPcie;
    facts.interconnect_unknown = o.interconnect == catalog::Interconnect::kUnknown;
    // A provider's caveat marks terms the cost or the score use (billing, SLA, support) as
    // taken from a third-party source.
    facts.catalog_caveat = !o.caveat.empty() || !p.hc->gpu->caveat.empty() ||
                           (p.run.provider != nullptr && !p.run.provider->caveat.empty());
    facts.network_gbps = o.network_gbps;
    facts.network_assumed = p.hc->network_assumed;
    facts.spot = cand.pricing == PricingModel::kSpot;
    facts.spot_risk_adjusted = cand.run.risk_adjusted;
    facts.checkpointing = spec.checkpointing;
    facts.headroom_fraction = cand.layout.headroom_fraction;
    facts.deadline_seconds = c.deadline_seconds;
    facts.p90_seconds = cand.run.p90_seconds;
    facts.budget_usd = c.budget_usd;
    facts.expected_usd = cand.run.expected_usd;
    facts.p90_usd = cand.run.p90_usd;
    facts.global_batch_changed = spec.global_batch_given && t.global_batch != base.global_batch;
    facts.precision_fallback = p.hc->precision_fallback;
    facts.reserved_term_seconds =
        cand.run.reserved_commitment ? ReservedTermSeconds(cand.pricing) : 0;
    facts.total_seconds = cand.run.total_seconds;
    facts.billing_terms_unknown = BillingTermsUnknown(p.run.provider);
    facts.uncalibrated_gpu = !calibrated;
    cand.warnings = DetectPitfalls(facts);
    cand.meets_constraints =
        !(cand.warnings & (kPitfallDeadlineMissedP90 | kPitfallBudgetExceeded));
    cand.score = OfferScores(p.run.provider, cand.pricing, cand.nodes);
  };
  // Two rounds on the worker threads: every non-spot candidate, then the spot candidates that
  // SpotCandidatesToSimulate cannot rule out (the simulator is the expensive part).
  auto run_on_threads = [&](const std::vector<size_t>& which) {
    std::atomic<size_t> next{0};
    auto cost_worker = [&] {
      for (size_t i = next.fetch_add(1); i < which.size(); i = next.fetch_add(1)) {
        finish(pending[which[i]]);
      }
    };
    pool.clear();
    for (int i = 1; i < threads; ++i) pool.emplace_back(cost_worker);
    cost_worker();
    for (std::thread& th : pool) th.join();
  };
  std::vector<size_t> exact, spot;
  for (size_t i = 0; i < pending.size(); ++i) {
    (pending[i].cand.pricing == PricingModel::kSpot ? spot : exact).push_back(i);
  }
  run_on_threads(exact);
  const std::vector<size_t> simulate =
      spec.prune_spot ? SpotCandidatesToSimulate(pending, exact, spot, spec, assumptions) : spot;
  run_on_threads(simulate);
  result.spot_pruned = static_cast<int64_t>(spot.size() - simulate.size());
  result.candidates.reserve(exact.size() + simulate.size());
  for (size_t i : exact) result.candidates.push_back(pending[i].cand);
  for (size_t i : simulate) result.candidates.push_back(pending[i].cand);

  // --- scores, ranking, Pareto -------------------------------------------------------------
  result.objective = spec.objective;
  result.reference = ReferenceOf(result.candidates, c.deadline_seconds);
  for (Candidate& cand : result.candidates) {
    FinishScores(cand.score, FactsOf(cand), result.reference, spec.weights);
  }
  double nearest_miss = std::numeric_limits<double>::infinity();
  for (Candidate& cand : result.candidates) {
    if (cand.meets_constraints) continue;
    cand.miss_factor = Violation(cand, c);
    nearest_miss = std::min(nearest_miss, cand.miss_factor);
  }
  result.nearest_miss_factor = std::isfinite(nearest_miss) ? nearest_miss : 0;
  const double near_limit = result.nearest_miss_factor * (1 + kNearMissTolerance);
  std::stable_sort(result.candidates.begin(), result.candidates.end(),
                   [&](const Candidate& a, const Candidate& b) {
                     if (a.meets_constraints != b.meets_constraints) return a.meets_constraints;
                     if (!a.meets_constraints) {
                       return BetterMiss(a, b, near_limit, spec.objective);
                     }
                     return BetterByObjective(a, b, spec.objective);
                   });
  std::vector<double> xs, ys;
  for (size_t i = 0; i < result.candidates.size(); ++i) {
    result.candidates[i].rank = static_cast<int>(i) + 1;
    xs.push_back(result.candidates[i].run.total_seconds);
    ys.push_back(result.candidates[i].run.expected_usd);
  }
  result.pareto = ParetoFront(xs, ys);
  for (int i : result.pareto) result.candidates[i].pareto = true;

  const bool any_multi_node_unknown =
      std::any_of(classes.begin(), classes.end(),
                  [](const HardwareClass& hc) { return !hc.network_known && !hc.network_assumed; });
  if (any_multi_node_unknown) {
    result.notes.push_back(
        "offers whose network bandwidth is not in the catalog were planned on one node only "
        "(--assume-network-gbps N plans them multi-node)");
  }
  if (any_conservative) {
    const catalog::Offer& from = *conservative.from;
    result.notes.push_back(fmt::format(
        "offers whose provider publishes no inter-node network: mean time at the assumed {:g} "
        "Gbit/s per node, P90 at {:g} Gbit/s per GPU (the lowest any multi-GPU offer of the "
        "catalog publishes: {} {}, {:g} Gbit/s for {} GPUs, {})",
        *c.assume_network_gbps, conservative.gbps_per_gpu, from.provider, from.instance_type,
        *from.network_gbps, from.gpu_count, from.source));
  }
  if (!skipped_precision.empty()) {
    std::string list;
    for (const std::string& gpu : skipped_precision) {
      list += (list.empty() ? "" : ", ") + gpu + " (" +
              estimate::SupportedPrecisionNames(*catalog.FindGpu(gpu)) + ")";
    }
    result.notes.push_back("skipped, no " + std::string(workload::PrecisionName(base.precision)) +
                           " tensor-core mode: " + list +
                           "; --allow-precision-fallback plans them in fp16");
  }
  if (base.method == workload::Method::kLora &&
      std::any_of(result.candidates.begin(), result.candidates.end(), [](const Candidate& k) {
        return k.layout.training.framework == workload::Framework::kMegatron;
      })) {
    result.notes.push_back(
        "LoRA layouts with tp/pp/cp/ep (framework megatron-bridge) run on NeMo Megatron-Bridge "
        "PEFT (Megatron-Core; Megatron-LM itself has no LoRA: docs.nvidia.com/nemo/"
        "megatron-bridge); HF PEFT runs LoRA data parallel only (fsdp, deepspeed, hf)");
  }
  if (base.method == workload::Method::kQlora) {
    result.notes.push_back(
        "QLoRA is planned data parallel only: its 4-bit bitsandbytes base runs under HF PEFT with "
        "FSDP or DeepSpeed ZeRO-3 (PEFT 0.10), no tp/pp/cp/ep framework loads it");
  }
  if (!c.deadline_seconds && spec.objective == Objective::kBalanced) {
    result.notes.push_back(
        "no deadline: runs finishing within 24 h at P90 count as fast enough (the balanced "
        "score's performance saturates; --deadline sets it to half the deadline)");
  }
  const bool any_spot =
      std::any_of(result.candidates.begin(), result.candidates.end(),
                  [](const Candidate& k) { return k.pricing == PricingModel::kSpot; });
  if (any_spot && !assumptions.spot_risk_source.empty()) {
    std::string gang = "n nodes are preempted n times as often (no multi-node traces)";
    if (!assumptions.spot_gang.rows.empty()) {
      const spot::RiskScale& top = assumptions.spot_gang.rows.back();
      gang = fmt::format(
          "all nodes at once: {} nodes have {:.2f}x the MTTI of one and {:.0f} % vs {:.0f} % "
          "availability, from {} (beyond {}: independent groups of {})",
          top.count, top.mtti_factor, 100 * top.available_fraction,
          100 * assumptions.spot_gang.rows.front().available_fraction, assumptions.spot_gang.source,
          top.count, top.count);
    }
    std::string size;
    if (assumptions.spot_instance_size.rows.size() > 1) {
      const spot::RiskScale& big = assumptions.spot_instance_size.rows.back();
      size = fmt::format("; {}-GPU instances have {:.2f}x the MTTI of 1-GPU ones, from {}",
                         big.count, big.mtti_factor, assumptions.spot_instance_size.source);
    }
    result.notes.push_back(fmt::format(
        "spot risk: MTTI {:.1f} h per 1-GPU instance, outage {:.1f} h, from {}; applied to every "
        "GPU type and provider (no public traces for newer GPUs: an assumption){}; {}",
        assumptions.spot_mtti_seconds_per_instance / 3600.0,
        assumptions.spot_outage_mean_seconds / 3600.0, assumptions.spot_risk_source, size, gang));
  }
  if (!unpriced_providers.empty()) {
    std::string list;
    for (const std::string& p : unpriced_providers) list += (list.empty() ? "" : ", ") + p;
    result.notes.push_back("no sourced storage/egress price for " + list +
                           ": their rows leave those costs out (catalog/storage_prices.csv)");
  }
  if (c.reserved_owned) {
    result.notes.push_back(
        "--reserved-owned: reserved rows cost their marginal hourly price (the term is already "
        "paid for)");
  }
  if (!spec.global_batch_given) {
    result.notes.push_back(
        "global batch not given: using " + std::to_string(base.global_batch) +
        (model.kind == workload::ModelKind::kGeneric ? " samples" : " sequences (2^20 tokens)") +
        (c.strict_batch ? ""
                        : ", which a layout may round up by at most 10 % to a multiple of dp x "
                          "micro-batch (--global-batch N keeps one exactly)"));
  }
  result.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return result;
}

}  // namespace fulcrum::plan
