#include "serve/plan.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <span>
#include <string_view>
#include <tuple>

#include <fmt/format.h>

#include "core/parallel.h"
#include "plan/ranking.h"
#include "plan/report.h"

namespace fulcrum::serve {
namespace {

// Most sequences per replica when --concurrency is not given: vLLM's max_num_seqs default (256,
// SchedulerConfig of the 0.x releases); the KV cache may allow more.
constexpr int64_t kDefaultMaxConcurrency = 256;
// Without traffic, continuous batching runs each replica at the highest load whose targets hold,
// at most this share of its capacity (a queue at 100 % grows without bound).
constexpr double kMaxUnpacedUtilization = 0.95;

// The fitted ratio of measured to predicted time that a target's percentile is scaled by.
double BandRatio(const ServeLatencyBand& b, Batching batching, LatencyMetric metric,
                 double quantile) {
  const bool median = batching == Batching::kContinuous || quantile <= 0.5;
  if (metric == LatencyMetric::kTtft) return median ? b.ttft_p50_ratio : b.ttft_p90_ratio;
  return median ? b.tpot_p50_ratio : b.tpot_p90_ratio;
}

// The worst miss of a set of latencies against the targets: the target's name and
// latency / target (> 1 = missed).
struct Miss {
  const char* target = nullptr;
  double value = 0, limit = 0;
  double Ratio() const { return limit > 0 ? value / limit : 0; }
};

Miss WorstMiss(const LatencyTargets& latency, const LatencyTargets& targets) {
  Miss worst;
  for (const LatencyTargetField& f : LatencyTargetFields()) {
    const std::optional<double>& target = targets.*f.member;
    const std::optional<double>& value = latency.*f.member;
    if (!target || !value || *value <= *target) continue;
    Miss m{f.name, *value, *target};
    if (worst.target == nullptr || m.Ratio() > worst.Ratio()) worst = m;
  }
  return worst;
}

// Static batching: the estimate at the batch, each percentile the band's ratio of it.
LatencyTargets StaticLatency(const ServeEstimate& e, const ServePlanRequest& r) {
  LatencyTargets out;
  for (const LatencyTargetField& f : LatencyTargetFields()) {
    const double ttft = e.speed.prefill_seconds *
                        BandRatio(r.band, Batching::kStatic, LatencyMetric::kTtft, f.quantile);
    const double tpot = e.speed.tpot_seconds *
                        BandRatio(r.band, Batching::kStatic, LatencyMetric::kTpot, f.quantile);
    out.*f.member = f.metric == LatencyMetric::kTtft ? ttft
                    : f.metric == LatencyMetric::kTpot
                        ? tpot
                        : ttft + static_cast<double>(r.output_len) * tpot;
  }
  return out;
}

// Continuous batching: the queueing model's percentiles, each times the median ratio; only those
// with a target unless `all` (the search evaluates many states, the candidate reports all).
// Searching, a missed TPOT target settles the state before the costlier TTFT quantiles.
// A few quantile levels and a value per level, without allocating (the search asks many states).
struct Levels {
  static constexpr size_t kMax = 8;  // LatencyTargetFields has 4 levels per metric
  std::array<double, kMax> level{}, value{};
  size_t size = 0;
  const double* Find(double q) const {
    for (size_t i = 0; i < size; ++i) {
      if (level[i] == q) return &value[i];
    }
    return nullptr;
  }
  double& Add(double q) {
    level[size] = q;
    return value[size++];
  }
};

LatencyTargets QueueLatency(const ReplicaQueue& q, const QueueState& state, double rate,
                            const ServePlanRequest& r, bool all) {
  const double ttft_ratio = BandRatio(r.band, r.batching, LatencyMetric::kTtft, 0.5);
  const double tpot_ratio = BandRatio(r.band, r.batching, LatencyMetric::kTpot, 0.5);
  Levels tpot, ttft;  // quantile -> seconds (ratio applied)
  bool tpot_missed = false;
  for (const LatencyTargetField& f : LatencyTargetFields()) {
    const std::optional<double>& target = r.targets.*f.member;
    if (!all && !target) continue;
    if (f.metric != LatencyMetric::kTpot && ttft.Find(f.quantile) == nullptr) ttft.Add(f.quantile);
    if (f.metric == LatencyMetric::kTtft || tpot.Find(f.quantile) != nullptr) continue;
    const double seconds = q.Quantile(state, rate, LatencyMetric::kTpot, f.quantile) * tpot_ratio;
    tpot.Add(f.quantile) = seconds;
    tpot_missed = tpot_missed || (f.metric == LatencyMetric::kTpot && target && seconds > *target);
  }
  if (!tpot_missed || all) {
    q.TtftQuantiles(state, rate, std::span<const double>(ttft.level.data(), ttft.size),
                    std::span<double>(ttft.value.data(), ttft.size));
    for (size_t i = 0; i < ttft.size; ++i) ttft.value[i] *= ttft_ratio;
  } else {
    ttft.size = 0;
  }
  LatencyTargets out;
  const double decode_steps = static_cast<double>(r.output_len - 1);
  for (const LatencyTargetField& f : LatencyTargetFields()) {
    const double* t = ttft.Find(f.quantile);
    const double* p = tpot.Find(f.quantile);
    if (f.metric == LatencyMetric::kTtft && t != nullptr) out.*f.member = *t;
    if (f.metric == LatencyMetric::kTpot && p != nullptr) out.*f.member = *p;
    if (f.metric == LatencyMetric::kE2e && t != nullptr && p != nullptr) {
      out.*f.member = *t + decode_steps * *p;
    }
  }
  return out;
}

// The Pareto front over the candidates that may be on it: where `confirmed_only`, those whose
// offer the catalog confirms (an unconfirmed row, ranked after them, neither gets a star nor takes
// one from a confirmed row), as `plan` marks its front (plan::MarkParetoFront).
void MarkPareto(std::vector<ServeCandidate>& candidates, bool confirmed_only) {
  const auto may = [&](const ServeCandidate& c) { return !confirmed_only || c.unconfirmed == 0; };
  for (ServeCandidate& c : candidates) {
    c.pareto =
        may(c) && std::none_of(candidates.begin(), candidates.end(), [&](const ServeCandidate& o) {
          if (!may(o)) return false;
          // The time per output token the targets see (P90), as the table shows it.
          const double cost = o.usd_per_million_output_tokens, tpot = o.tpot_p90_seconds;
          const double c_cost = c.usd_per_million_output_tokens, c_tpot = c.tpot_p90_seconds;
          return cost <= c_cost && tpot <= c_tpot && (cost < c_cost || tpot < c_tpot);
        });
  }
}

// One replica layout (GPU x interconnect x tp): what every offer of that GPU shares. Replicas
// serve the traffic on their own; the offer only packs them into instances and prices them.
struct Layout {
  const catalog::Gpu* gpu = nullptr;
  catalog::Interconnect interconnect = catalog::Interconnect::kUnknown;
  int64_t tp = 1;
  bool operator<(const Layout& o) const {
    return std::tie(gpu, interconnect, tp) < std::tie(o.gpu, o.interconnect, o.tp);
  }
};

// The link a layout is planned over: a replica on one GPU all-reduces nothing, so every offer of
// its GPU shares one search whatever its interconnect (kUnknown stands for "not used").
catalog::Interconnect LayoutLink(catalog::Interconnect link, int64_t tp) {
  return tp > 1 ? link : catalog::Interconnect::kUnknown;
}

// How a layout serves the traffic: fits, meets the targets, or why not.
struct Sizing {
  enum class Outcome { kUnfit, kTooSlow, kServes } outcome = Outcome::kUnfit;
  Miss miss;                                   // kTooSlow: the worst miss at the lightest load
  int64_t concurrency = 1;                     // sequences per replica
  int64_t replicas = 1;                        // for the traffic (0 traffic: 0, filled per offer)
  double requests_per_second_per_replica = 0;  // offered (continuous) or capacity (static)
  double utilization = 0;
  double queue_wait_p90_seconds = 0;
  ServeEstimate estimate;
  LatencyTargets latency;
};

ServeRequest RequestOn(const Layout& layout, const ServePlanRequest& r) {
  ServeRequest s;
  s.model = r.model;
  s.gpu = *layout.gpu;
  s.interconnect = layout.interconnect;
  s.tp = layout.tp;
  s.precision = r.precision;
  s.kv_precision =
      r.kv_precision.value_or(layout.gpu->bf16_tflops ? KvPrecision::kBf16 : KvPrecision::kFp16);
  s.input_len = r.input_len;
  s.output_len = r.output_len;
  s.batching = r.batching;
  s.engine = r.engine;
  if (r.prefill_chunk > 0) s.max_batched_tokens = r.prefill_chunk;
  s.hf_fused_modules = r.hf_fused_modules;
  return s;
}

// Static batching (today's model): the most sequences that fit, halved until the targets hold;
// replicas = traffic / (batch / request time).
Sizing SizeStatic(ServeRequest s, int64_t most, const ServePlanRequest& r) {
  Sizing out;
  s.batch = r.concurrency.value_or(most);
  Result<ServeEstimate> e = EstimateServing(s);
  if (!e.ok() || !e->memory.fits) return out;
  LatencyTargets latency = StaticLatency(*e, r);
  while (WorstMiss(latency, r.targets).target != nullptr && !r.concurrency && s.batch > 1) {
    s.batch /= 2;
    e = EstimateServing(s);
    if (!e.ok()) return out;
    latency = StaticLatency(*e, r);
  }
  out.miss = WorstMiss(latency, r.targets);
  out.outcome = out.miss.target ? Sizing::Outcome::kTooSlow : Sizing::Outcome::kServes;
  out.concurrency = s.batch;
  out.estimate = *e;
  out.latency = latency;
  const double request_seconds =
      e->speed.prefill_seconds + static_cast<double>(r.output_len) * e->speed.tpot_seconds;
  out.requests_per_second_per_replica = static_cast<double>(s.batch) / request_seconds;
  if (r.requests_per_second > 0) {
    out.replicas = static_cast<int64_t>(
        std::ceil(r.requests_per_second / out.requests_per_second_per_replica - 1e-9));
    out.utilization = r.requests_per_second /
                      (static_cast<double>(out.replicas) * out.requests_per_second_per_replica);
  } else {
    out.utilization = 1;
  }
  return out;
}

// Continuous batching at a per-replica rate: the largest concurrency cap (most sequences that
// fit, halved) whose percentiles meet the targets. Lowering the cap only helps time per token,
// so the search stops once the worst miss is no longer a TPOT target.
struct CapChoice {
  bool meets = false;
  int64_t concurrency = 1;
  QueueState state;
  LatencyTargets latency;
  Miss miss;
};

// Into `best`; `c` is scratch. Both keep their buffers from call to call: the search's steps
// allocate nothing.
void ChooseCap(const ReplicaQueue& q, double rate, int64_t fixed_cap, const ServePlanRequest& r,
               CapChoice& best, CapChoice& c) {
  std::vector<double> pi = std::move(best.state.pi);
  best = CapChoice{};
  best.state.pi = std::move(pi);
  for (int64_t cap = fixed_cap > 0 ? fixed_cap : q.max_concurrency(); cap >= 1; cap /= 2) {
    c.concurrency = cap;
    q.Solve(rate, cap, c.state);
    if (!c.state.stable) break;  // fewer slots: less capacity still
    c.latency = QueueLatency(q, c.state, rate, r, false);
    c.miss = WorstMiss(c.latency, r.targets);
    c.meets = c.miss.target == nullptr;
    if (c.meets) {
      std::swap(best, c);
      return;
    }
    const std::string_view missed = c.miss.target;
    if (best.miss.target == nullptr || c.miss.Ratio() < best.miss.Ratio()) std::swap(best, c);
    if (fixed_cap > 0 || missed.substr(0, 4) == "ttft") break;
  }
}

// What continuous batching's search finds for a layout: everything of its Sizing but the
// estimate at the chosen concurrency (the layout's memory, per GPU model).
struct QueueSizing {
  Sizing::Outcome outcome = Sizing::Outcome::kTooSlow;
  Miss miss;  // kTooSlow
  int64_t concurrency = 1, replicas = 1;
  double rate = 0, utilization = 0, queue_wait_p90_seconds = 0;
  LatencyTargets latency;
};

QueueSizing SearchQueue(const StepModel& step, const ServeRequest& s, int64_t most,
                        const ServePlanRequest& r) {
  QueueSizing out;
  const int64_t fixed_cap = r.concurrency.value_or(0);
  ReplicaQueue q(step, s.model,
                 RequestMix{static_cast<double>(r.input_len), static_cast<double>(r.output_len),
                            r.arrival_scv, r.output_scv},
                 fixed_cap > 0 ? fixed_cap : most, s.max_batched_tokens);
  q.UseStraightforwardSearch(r.straightforward_search);
  // Unloaded (the lightest load any number of replicas gives): if the targets fail here, no
  // replica count meets them.
  CapChoice chosen, trial, scratch;
  ChooseCap(q, 0, fixed_cap, r, chosen, scratch);
  if (!chosen.meets) {
    out.miss = chosen.miss;
    return out;
  }
  double rate = 0;
  if (r.requests_per_second > 0) {
    // The fewest replicas whose share of the traffic meets the targets (monotone in replicas),
    // from the capacity bound.
    const double capacity =
        q.Solve(0, fixed_cap > 0 ? fixed_cap : most).capacity_requests_per_second;
    int64_t low = std::max<int64_t>(
        1, static_cast<int64_t>(std::ceil(r.requests_per_second / capacity - 1e-9)));
    // `chosen` keeps the choice of the latest count that met the targets: the answer's, as
    // the search ends on it (each count is tried once).
    auto meets = [&](int64_t replicas) {
      ChooseCap(q, r.requests_per_second / static_cast<double>(replicas), fixed_cap, r, trial,
                scratch);
      if (!trial.meets) return false;
      std::swap(chosen, trial);
      return true;
    };
    // The answer is usually a few above the bound: grow by 1, 2, 4, ... then bisect back.
    int64_t high = low;
    for (int64_t step = 1; !meets(high); step *= 2) {
      low = high + 1;
      high += step;
    }
    while (low < high) {
      const int64_t mid = low + (high - low) / 2;
      if (meets(mid)) {
        high = mid;
      } else {
        low = mid + 1;
      }
    }
    out.replicas = high;
    rate = r.requests_per_second / static_cast<double>(high);
    if (r.straightforward_search) ChooseCap(q, rate, fixed_cap, r, chosen, scratch);
  } else {
    // No traffic: the highest per-replica rate whose targets hold (bisection); `chosen` is the
    // choice at `low` once tried (unloaded until then).
    const double capacity =
        q.Solve(0, fixed_cap > 0 ? fixed_cap : most).capacity_requests_per_second;
    double low = 0, high = capacity * kMaxUnpacedUtilization;
    ChooseCap(q, high, fixed_cap, r, trial, scratch);
    if (trial.meets) {
      low = high;
      std::swap(chosen, trial);
    } else {
      for (int i = 0; i < 30 && high - low > 1e-2 * high; ++i) {
        const double mid = (low + high) / 2;
        ChooseCap(q, mid, fixed_cap, r, trial, scratch);
        if (trial.meets) {
          low = mid;
          std::swap(chosen, trial);
        } else {
          high = mid;
        }
      }
    }
    rate = low;
    if (r.straightforward_search && rate > 0) ChooseCap(q, rate, fixed_cap, r, chosen, scratch);
  }
  out.outcome = Sizing::Outcome::kServes;
  out.concurrency = chosen.concurrency;
  out.latency = QueueLatency(q, chosen.state, rate, r, true);
  out.rate = rate;
  out.utilization = chosen.state.utilization;
  out.queue_wait_p90_seconds = q.WaitQuantile(chosen.state, 0.9);
  return out;
}

// A layout's Sizing from its search: the estimate at the chosen concurrency.
Sizing SizeContinuous(const ServeRequest& s, const QueueSizing& q) {
  Sizing out;
  if (q.outcome != Sizing::Outcome::kServes) {
    out.outcome = q.outcome;
    out.miss = q.miss;
    return out;
  }
  ServeRequest at = s;
  at.batch = q.concurrency;
  Result<ServeEstimate> e = EstimateServing(at);
  if (!e.ok()) return out;
  out.outcome = Sizing::Outcome::kServes;
  out.concurrency = q.concurrency;
  out.replicas = q.replicas;
  out.estimate = *e;
  out.latency = q.latency;
  out.requests_per_second_per_replica = q.rate;
  out.utilization = q.utilization;
  out.queue_wait_p90_seconds = q.queue_wait_p90_seconds;
  return out;
}

// What a layout's sizing starts from: its request, the most sequences per replica (0: the
// layout does not fit) and, for continuous batching, its step model.
struct Prepared {
  ServeRequest request;
  int64_t most = 0;
  std::optional<StepModel> step;
};

Prepared Prepare(const Layout& layout, const ServePlanRequest& r) {
  Prepared p;
  p.request = RequestOn(layout, r);
  p.request.batch = 1;
  Result<ServeEstimate> probe = EstimateServing(p.request);
  if (!probe.ok() || probe->memory.max_concurrency < 1) return p;
  if (r.concurrency && *r.concurrency > probe->memory.max_concurrency) return p;
  if (r.batching == Batching::kContinuous) {
    Result<StepModel> step = StepModel::Make(p.request);
    if (!step.ok()) return p;
    p.step = *step;
  }
  p.most = std::min(probe->memory.max_concurrency, kDefaultMaxConcurrency);
  return p;
}

// Continuous batching's search reads the layout through its step model, its model, its most
// sequences and the step's token budget only (the rest is the plan's request): layouts equal in
// those (GPU models with the same figures for this precision, e.g. the same chip with more
// memory than the cap needs) share one search. Every layout's model is the request's
// (RequestOn), so their step models differ only in their figures.
bool SameSearch(const Prepared& a, const Prepared& b) {
  return a.step && b.step && a.step->SameFiguresAs(*b.step) && a.most == b.most &&
         a.request.max_batched_tokens == b.request.max_batched_tokens;
}

// Sizes a group of layouts that share a search (one layout unless SameSearch).
void SizeGroup(std::span<const size_t> group, std::span<const Prepared> prepared,
               std::span<Sizing*> sizings, const ServePlanRequest& r) {
  const Prepared& first = prepared[group.front()];
  if (first.most < 1) return;  // unfit: Sizing{}
  if (r.batching == Batching::kStatic) {
    *sizings[group.front()] = SizeStatic(first.request, first.most, r);
    return;
  }
  const QueueSizing q = SearchQueue(*first.step, first.request, first.most, r);
  for (size_t i : group) *sizings[i] = SizeContinuous(prepared[i].request, q);
}

ServeCandidate CandidateOf(const catalog::Offer& offer, const Layout& layout, const Sizing& z,
                           double price, const ServePlanRequest& r) {
  ServeCandidate c;
  c.offer = &offer;
  c.gpu = layout.gpu;
  c.tp = layout.tp;
  c.concurrency = z.concurrency;
  c.estimate = z.estimate;
  c.latency = z.latency;
  c.ttft_p90_seconds = z.latency.ttft_p90_seconds.value_or(0);
  c.tpot_p90_seconds = z.latency.tpot_p90_seconds.value_or(0);
  c.queue_wait_p90_seconds = z.queue_wait_p90_seconds;
  c.requests_per_second_per_replica = z.requests_per_second_per_replica;
  c.utilization = z.utilization;
  const int64_t per_instance = offer.gpu_count / layout.tp;
  if (r.requests_per_second > 0) {
    c.replicas = z.replicas;
    c.instances = (c.replicas + per_instance - 1) / per_instance;
  } else {
    c.replicas = per_instance;
    c.instances = 1;
  }
  c.total_gpus = c.instances * offer.gpu_count;
  const double served = r.requests_per_second > 0
                            ? r.requests_per_second
                            : static_cast<double>(c.replicas) * c.requests_per_second_per_replica;
  c.usd_per_hour = static_cast<double>(c.instances) * price;
  c.usd_per_million_output_tokens =
      c.usd_per_hour / (served * static_cast<double>(r.output_len) * 3600) * 1e6;
  c.usd_per_million_input_tokens =
      c.usd_per_hour / (served * static_cast<double>(r.input_len) * 3600) * 1e6;
  c.unconfirmed = plan::UnconfirmedOf(offer);
  if (layout.tp > 1 && (c.unconfirmed & plan::kUnconfirmedInterconnect)) {
    c.warnings.push_back(
        "interconnect-unknown: the catalog does not say how this instance's GPUs are connected; "
        "tensor-parallel all-reduces planned over PCIe");
  } else if (layout.tp > 1 && layout.interconnect == catalog::Interconnect::kPcie) {
    c.warnings.push_back("tp-over-pcie: tensor-parallel all-reduces over PCIe");
  }
  return c;
}

// Why offers were left out, for the error when none serves.
struct Tally {
  int wrong_vendor = 0, no_bf16_kv = 0, unsupported = 0, unfit = 0, too_slow = 0, unpriced = 0;
  Miss closest;  // of the too-slow layouts, the one nearest its target
};

std::string NoOfferMessage(size_t offers, const Tally& t, const ServePlanRequest& r) {
  std::string text = "no offer serves the model: of " + std::to_string(offers) + " offers, ";
  if (t.wrong_vendor > 0) {
    text += std::to_string(t.wrong_vendor) + " have GPUs engine " +
            std::string(EngineName(r.engine.engine)) + " does not run on, ";
  }
  text += std::to_string(t.unsupported) + " lack tensor cores for --precision " +
          std::string(PrecisionName(r.precision)) + ", ";
  if (t.no_bf16_kv > 0) text += std::to_string(t.no_bf16_kv) + " lack bf16 for the KV cache, ";
  text += std::to_string(t.unpriced) + " have no on-demand price; " + std::to_string(t.unfit) +
          " layouts do not fit in memory, " + std::to_string(t.too_slow) +
          " miss the latency targets";
  if (t.closest.target != nullptr) {
    text += fmt::format(
        " (even unloaded the closest misses {} by {:.0f}%: {:.3g} s against {:.3g} s)",
        t.closest.target, 100 * (t.closest.Ratio() - 1), t.closest.value, t.closest.limit);
  }
  return text;
}

}  // namespace

Result<std::vector<ServeCandidate>> PlanServing(const catalog::Catalog& catalog,
                                                const catalog::ResolvedFilter& offers,
                                                const ServePlanRequest& r) {
  // What the engine cannot run on any GPU is the request's error, not a count of offers.
  FULCRUM_RETURN_IF_ERROR(CheckEnginePrecision(r.engine, r.precision));
  FULCRUM_RETURN_IF_ERROR(CheckFusedModules(r.hf_fused_modules, r.engine, r.precision));
  if (!r.engine.tensor_parallel && !r.tp.empty() &&
      std::find(r.tp.begin(), r.tp.end(), 1) == r.tp.end()) {
    return CheckTensorParallel(r.engine, *std::max_element(r.tp.begin(), r.tp.end()));
  }
  // Each offer's layouts; the sizing of a layout is shared by every offer of its GPU.
  Tally tally;
  std::map<Layout, Sizing> sizings;
  struct Priced {
    const catalog::Offer* offer;
    double price;
    const catalog::Gpu* gpu;  // looked up once (a name search)
    catalog::Interconnect link;
    const std::string* caveat;  // plan::CaveatDetail, in `caveats`
  };
  std::vector<Priced> priced;
  // Per GPU name of the offers: its catalog entry (a name search) and, for a GPU the engine
  // cannot run the precision on, the tally's count of that refusal (nullptr: supported).
  struct GpuCheck {
    const catalog::Gpu* gpu = nullptr;
    int* refused = nullptr;
  };
  std::map<std::string_view, GpuCheck> checked;
  // plan::CaveatDetail reads an offer's caveat, GPU and provider (each looked up by name): once
  // per distinct three.
  std::map<std::tuple<std::string_view, std::string_view, std::string_view>, std::string> caveats;
  for (const catalog::Offer* offer : offers.offers) {
    auto [check, first] = checked.try_emplace(offer->gpu);
    if (first) {
      const catalog::Gpu* gpu = check->second.gpu = catalog.FindGpu(offer->gpu);
      const KvPrecision kv = r.kv_precision.value_or(
          gpu != nullptr && gpu->bf16_tflops ? KvPrecision::kBf16 : KvPrecision::kFp16);
      const Status support =
          gpu != nullptr ? CheckSupport(*gpu, r.precision, kv, r.engine) : Status::Ok();
      if (!support.ok()) {
        const std::string field = support.detail() != nullptr ? support.detail()->field : "";
        check->second.refused = field == "engine"         ? &tally.wrong_vendor
                                : field == "kv-precision" ? &tally.no_bf16_kv
                                                          : &tally.unsupported;
      }
    }
    const catalog::Gpu* gpu = check->second.gpu;
    if (gpu == nullptr) continue;
    const std::optional<double> price = catalog::OfferUsdPerHour(
        *offer, catalog.FindProvider(offer->provider), catalog::Pricing::kOnDemand);
    if (!price) {
      ++tally.unpriced;
      continue;
    }
    if (check->second.refused != nullptr) {
      ++*check->second.refused;
      continue;
    }
    // Unknown links are planned as PCIe, as `plan` does (docs/RANKING.md): a marketplace slice
    // of an NVLink machine need not have them.
    const catalog::Interconnect link = offer->interconnect == catalog::Interconnect::kUnknown
                                           ? catalog::Interconnect::kPcie
                                           : offer->interconnect;
    auto [caveat, fresh] = caveats.try_emplace({offer->caveat, offer->gpu, offer->provider});
    if (fresh) caveat->second = plan::CaveatDetail(*offer, catalog);
    priced.push_back({offer, *price, gpu, link, &caveat->second});
    for (int64_t tp = 1; tp <= offer->gpu_count; tp *= 2) {
      if (offer->gpu_count % tp != 0 || r.model.heads % tp != 0) continue;
      if (tp > 1 && !r.engine.tensor_parallel) continue;
      if (!r.tp.empty() && std::find(r.tp.begin(), r.tp.end(), tp) == r.tp.end()) continue;
      sizings.emplace(Layout{gpu, LayoutLink(link, tp), tp}, Sizing{});
    }
  }
  std::vector<const Layout*> layouts;
  std::vector<Sizing*> slots;
  for (auto& [layout, sizing] : sizings) {
    layouts.push_back(&layout);
    slots.push_back(&sizing);
  }
  std::vector<Prepared> prepared(layouts.size());
  ParallelFor(layouts.size(), r.threads, 1, [&](size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) prepared[i] = Prepare(*layouts[i], r);
  });
  std::vector<std::vector<size_t>> groups;  // layouts that share a search
  for (size_t i = 0; i < prepared.size(); ++i) {
    auto same = std::find_if(groups.begin(), groups.end(), [&](const std::vector<size_t>& g) {
      return SameSearch(prepared[g.front()], prepared[i]);
    });
    if (same != groups.end()) {
      same->push_back(i);
    } else {
      groups.push_back({i});
    }
  }
  ParallelFor(groups.size(), r.threads, 1, [&](size_t begin, size_t end) {
    for (size_t g = begin; g < end; ++g) SizeGroup(groups[g], prepared, slots, r);
  });
  std::vector<ServeCandidate> out;
  // In the offers' order: independent of threads.
  for (const auto& [offer, price, gpu, link, caveat] : priced) {
    for (const auto& [layout, sizing] : sizings) {
      if (layout.gpu != gpu) continue;
      if (layout.interconnect != LayoutLink(link, layout.tp) || offer->gpu_count % layout.tp != 0) {
        continue;
      }
      if (sizing.outcome == Sizing::Outcome::kUnfit) {
        ++tally.unfit;
      } else if (sizing.outcome == Sizing::Outcome::kTooSlow) {
        ++tally.too_slow;
        if (tally.closest.target == nullptr || sizing.miss.Ratio() < tally.closest.Ratio()) {
          tally.closest = sizing.miss;
        }
      } else {
        out.push_back(CandidateOf(*offer, layout, sizing, price, r));
        if (!caveat->empty()) {
          out.back().warnings.push_back("catalog-caveat" + *caveat);
        }
      }
    }
  }
  if (out.empty()) return Status::InvalidInput(NoOfferMessage(offers.offers.size(), tally, r));
  const bool confirmed_last =
      r.unconfirmed_last && std::any_of(out.begin(), out.end(),
                                        [](const ServeCandidate& c) { return c.unconfirmed == 0; });
  MarkPareto(out, confirmed_last);
  std::stable_sort(out.begin(), out.end(), [&](const ServeCandidate& a, const ServeCandidate& b) {
    if (confirmed_last && (a.unconfirmed == 0) != (b.unconfirmed == 0)) return a.unconfirmed == 0;
    return a.usd_per_million_output_tokens < b.usd_per_million_output_tokens;
  });
  return out;
}

}  // namespace fulcrum::serve
