#include "plan/search.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <map>
#include <numeric>
#include <thread>
#include <tuple>

#include "core/parse.h"
#include "plan/pitfalls.h"

namespace fulcrum::plan {
namespace {

using workload::Framework;
using workload::Recompute;

constexpr int kMicroBatches[] = {1, 2, 4, 8, 16, 32, 64};
constexpr Recompute kRecomputes[] = {Recompute::kNone, Recompute::kSelective, Recompute::kFull};
// Node counts tried (multi-node runs in steps that keep common data-parallel sizes).
constexpr int kNodeCounts[] = {1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256};
// A global batch rounded up to a multiple of dp x micro-batch may grow by at most this factor.
constexpr double kMaxBatchRounding = 1.10;

bool IsLora(const workload::Training& t) {
  return t.method == workload::Method::kLora || t.method == workload::Method::kQlora;
}

Framework FrameworkFor(const workload::Training& t) {
  if (t.tp > 1 || t.pp > 1) return Framework::kMegatron;
  if (t.zero_stage == 3) return Framework::kFsdp;
  if (IsLora(t) && t.zero_stage == 0) return Framework::kHf;
  return Framework::kDeepSpeed;
}

// Tries one layout; updates `best`. Returns false when it does not fit in memory.
bool TryLayout(const workload::Model& model, workload::Training& t, const estimate::Hardware& hw,
               double usable_bytes, double capacity_bytes, BestLayout& best) {
  t.framework = FrameworkFor(t);
  ++best.evaluated;
  const estimate::MemoryBreakdown mem = estimate::EstimateMemory(model, t);
  if (!(mem.peak_bytes_per_gpu <= usable_bytes)) return false;
  const estimate::StepTime st = estimate::EstimateStepTime(model, t, hw);
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
                      int64_t global_batch, BestLayout& best) {
  for (int mb : kMicroBatches) {
    const int64_t per_step = mb * t.dp;
    if (per_step > global_batch * kMaxBatchRounding) break;
    const int64_t steps = (global_batch + per_step - 1) / per_step;
    const int64_t effective = steps * per_step;
    if (static_cast<double>(effective) > static_cast<double>(global_batch) * kMaxBatchRounding) {
      continue;
    }
    t.micro_batch = mb;
    t.global_batch = effective;
    // Memory grows with the micro-batch: once one does not fit, larger ones cannot.
    if (!TryLayout(model, t, hw, usable, capacity, best)) break;
  }
}

}  // namespace

BestLayout SearchLayouts(const workload::Model& model, const workload::Training& base,
                         const estimate::Hardware& hw, double capacity_bytes, int gpus,
                         double min_headroom) {
  BestLayout best;
  const double usable = capacity_bytes * (1.0 - min_headroom);
  const bool generic = model.kind == workload::ModelKind::kGeneric;
  const int64_t layers = generic ? 1 : model.layers;
  const int64_t kv_heads = model.kv_heads > 0 ? model.kv_heads : model.heads;
  workload::Training t = base;
  for (int tp = 1; tp <= hw.gpus_per_node && tp <= gpus; tp *= 2) {
    if (gpus % tp != 0 || hw.gpus_per_node % tp != 0) continue;
    if (generic && tp > 1) break;
    if (!generic && (model.heads % tp != 0 || kv_heads % tp != 0)) continue;
    for (int pp = 1; pp <= gpus / tp && pp <= layers; ++pp) {
      if ((gpus / tp) % pp != 0 || layers % pp != 0) continue;
      const int dp = gpus / (tp * pp);
      for (int vpp = 1; vpp <= (pp > 1 ? 2 : 1); ++vpp) {
        if (layers % (static_cast<int64_t>(pp) * vpp) != 0) continue;
        // ZeRO shards over dp (nothing to shard at dp = 1); stages 2/3 do not combine with
        // pipeline parallelism (DeepSpeed refuses ZeRO-2/3 with pipeline parallelism).
        // Generic (FLOPs-only) models run plain data parallel (DDP): their time model does not
        // distinguish ZeRO stages, and a CNN's states are small.
        const int max_zero = dp == 1 || generic ? 0 : (pp > 1 ? 1 : 3);
        for (int zero = 0; zero <= max_zero; ++zero) {
          for (Recompute rc : kRecomputes) {
            t.tp = tp;
            t.pp = pp;
            t.vpp = vpp;
            t.dp = dp;
            t.zero_stage = zero;
            t.recompute = rc;
            t.sequence_parallel = tp > 1;
            ScanMicroBatches(model, t, hw, usable, capacity_bytes, base.global_batch, best);
          }
        }
      }
    }
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
  std::vector<int> node_counts;
};

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

// Which spot candidates need the (expensive) simulator. A spot run takes at least its work plus
// the start-up (T_lb) and costs at least that time at min(spot, on-demand) price on every node
// plus the extras (C_lb). With the exact (non-spot) candidates costed, a spot candidate is left
// out only when it provably cannot (1) set the best time or cost that scores are normalised by
// (T_lb >= best exact time and C_lb >= best exact cost), (2) be on the Pareto front (an exact
// candidate is at least as fast and as cheap as its lower bounds, strictly in one), nor (3)
// reach the top N: its score upper bound (perf and cost at the lower bounds against the exact
// bests) is below the N-th best lower-bound score of the exact candidates that meet the
// constraints (lower bounds: normalisers as small as any kept spot lower bound could make
// them), with at least N of those. Everything left out would rank below N and off the front.
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
    c_lb[k] = price * r.nodes * t_lb[k] / 3600.0 + r.extra.egress_gb * r.extra.egress_usd_per_gb;
  }
  double best_t = std::numeric_limits<double>::infinity(), best_c = best_t;
  for (size_t i : exact) {
    best_t = std::min(best_t, pending[i].cand.run.total_seconds);
    best_c = std::min(best_c, pending[i].cand.run.expected_usd);
  }
  std::vector<bool> keep(n, false);
  double low_t = best_t, low_c = best_c;  // lowest normalisers the kept spot rows could give
  for (size_t k = 0; k < n; ++k) {
    if (t_lb[k] < best_t || c_lb[k] < best_c) {
      keep[k] = true;
      low_t = std::min(low_t, t_lb[k]);
      low_c = std::min(low_c, c_lb[k]);
    }
  }
  // N-th best lower-bound score among exact candidates that meet the constraints.
  std::vector<double> lower_scores;
  for (size_t i : exact) {
    const Candidate& c = pending[i].cand;
    if (!c.meets_constraints) continue;
    Scores s = c.score;
    FinishScores(s, c.run.total_seconds, low_t, c.run.expected_usd, low_c, spec.weights);
    lower_scores.push_back(s.total);
  }
  const size_t top = static_cast<size_t>(std::max(1, spec.top));
  double threshold = std::numeric_limits<double>::infinity();
  if (lower_scores.size() >= top) {
    std::nth_element(lower_scores.begin(), lower_scores.begin() + (top - 1), lower_scores.end(),
                     std::greater<double>());
    threshold = lower_scores[top - 1];
  }
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
    Scores upper = OfferScores(p.run.provider, PricingModel::kSpot, p.cand.nodes);
    FinishScores(upper, t_lb[k], best_t, c_lb[k], best_c, spec.weights);
    const bool below_top = upper.total < threshold;
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
  PlanResult result;
  result.model = model;
  result.spec = spec;
  result.work_units = WorkUnits(model, spec, &result.units_are_samples);
  const Constraints& c = spec.constraints;
  const workload::Training base = BaseTraining(model, spec);
  const double trained_params = estimate::TrainableParameterCount(model, base);
  const double params = workload::ParameterCount(model);

  // --- filter offers, group them by hardware --------------------------------------------
  std::vector<HardwareClass> classes;
  std::map<std::tuple<std::string, int, int, double>, int> class_of_key;
  std::vector<int> class_of_offer(catalog.offers().size(), -1);
  const auto& offers = catalog.offers();
  for (size_t i = 0; i < offers.size(); ++i) {
    const catalog::Offer& o = offers[i];
    if (!Matches(c.providers, o.provider) || !Matches(c.regions, o.region) ||
        !GpuMatches(catalog, c.gpus, o.gpu) || o.gpu_count > c.max_gpus) {
      continue;
    }
    const catalog::Gpu* gpu = catalog.FindGpu(o.gpu);
    if (gpu == nullptr) continue;
    const double network = o.network_gbps.value_or(c.assume_network_gbps.value_or(-1));
    const auto key =
        std::make_tuple(gpu->name, o.gpu_count, static_cast<int>(o.interconnect), network);
    auto it = class_of_key.find(key);
    if (it == class_of_key.end()) {
      catalog::Offer shaped = o;
      shaped.network_gbps = network > 0 ? std::optional<double>(network) : std::nullopt;
      std::optional<estimate::Hardware> hw = estimate::HardwareFor(*gpu, shaped, base.precision);
      if (!hw) continue;  // no sourced peak for this precision
      HardwareClass hc;
      hc.gpu = gpu;
      hc.hardware = *hw;
      hc.capacity_bytes = estimate::CapacityBytesFromGib(gpu->memory_gib);
      hc.network_known = o.network_gbps.has_value();
      hc.network_assumed = !o.network_gbps && c.assume_network_gbps.has_value();
      for (int n : kNodeCounts) {
        if (n * o.gpu_count > c.max_gpus) break;
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
  if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  threads =
      std::max(1, std::min<int>(threads, static_cast<int>(std::max<size_t>(1, tasks.size()))));
  result.threads = threads;
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i = next.fetch_add(1); i < tasks.size(); i = next.fetch_add(1)) {
      const HardwareClass& hc = classes[tasks[i].hardware_class];
      best[i] = SearchLayouts(model, base, hc.hardware, hc.capacity_bytes,
                              tasks[i].nodes * hc.hardware.gpus_per_node, c.min_headroom);
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
  std::vector<Pending> pending;
  for (size_t i = 0; i < offers.size(); ++i) {
    if (class_of_offer[i] < 0) continue;
    const catalog::Offer& o = offers[i];
    const HardwareClass& hc = classes[class_of_offer[i]];
    const catalog::Provider* provider = catalog.FindProvider(o.provider);
    for (int nodes : hc.node_counts) {
      const BestLayout& layout = best[task_of[{class_of_offer[i], nodes}]];
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
        p.run.extra = spec.extra;
        p.run.deadline_seconds = c.deadline_seconds;
        p.run.on_demand_usd_per_hour = o.on_demand_usd_per_hour;
        pending.push_back(std::move(p));
      }
    }
  }
  auto finish = [&](Pending& p) {
    Candidate& cand = p.cand;
    const catalog::Offer& o = offers[cand.offer];
    cand.run = EstimateRunCost(p.run, assumptions);
    PitfallFacts facts;
    facts.parameters = params;
    facts.gpu_memory_gib = p.hc->gpu->memory_gib;
    const workload::Training& t = cand.layout.training;
    facts.sharded = t.tp > 1 || t.pp > 1 || (t.zero_stage >= 1 && t.dp > 1);
    facts.gpus = p.run.gpus;
    facts.nodes = cand.nodes;
    facts.pcie_only = o.interconnect == catalog::Interconnect::kPcie;
    facts.interconnect_unknown = o.interconnect == catalog::Interconnect::kUnknown;
    facts.catalog_caveat = !o.caveat.empty() || !p.hc->gpu->caveat.empty();
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
  for (size_t i : exact) result.candidates.push_back(std::move(pending[i].cand));
  for (size_t i : simulate) result.candidates.push_back(std::move(pending[i].cand));

  // --- scores, ranking, Pareto -------------------------------------------------------------
  double best_seconds = std::numeric_limits<double>::infinity();
  double best_usd = std::numeric_limits<double>::infinity();
  for (const Candidate& cand : result.candidates) {
    best_seconds = std::min(best_seconds, cand.run.total_seconds);
    best_usd = std::min(best_usd, cand.run.expected_usd);
  }
  for (Candidate& cand : result.candidates) {
    FinishScores(cand.score, cand.run.total_seconds, best_seconds, cand.run.expected_usd, best_usd,
                 spec.weights);
  }
  std::stable_sort(result.candidates.begin(), result.candidates.end(),
                   [](const Candidate& a, const Candidate& b) {
                     if (a.meets_constraints != b.meets_constraints) return a.meets_constraints;
                     if (a.score.total != b.score.total) return a.score.total > b.score.total;
                     return a.run.expected_usd < b.run.expected_usd;
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
  if (!spec.global_batch_given) {
    result.notes.push_back(
        "global batch not given: using " + std::to_string(base.global_batch) +
        (model.kind == workload::ModelKind::kGeneric ? " samples" : " sequences (2^20 tokens)"));
  }
  result.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return result;
}

}  // namespace fulcrum::plan
