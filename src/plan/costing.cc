#include "plan/costing.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <set>

#include "core/parallel.h"
#include "estimate/estimate.h"
#include "plan/host.h"
#include "plan/pitfalls.h"
#include "plan/ranking.h"

namespace fulcrum::plan {
namespace {

// The extra costs (storage, egress) of each planned offer's provider; the parts no sourced price
// covers go to out.unpriced_storage, the checkpoint storage assumed to out.assumed_checkpoint_gb.
std::vector<ExtraCosts> ExtrasOfOffers(const PlanInputs& in, const HardwareClasses& classes,
                                       CostedCandidates& out) {
  bool assumed = false;
  const StorageNeeds needs =
      PlannedStorageNeeds(in.spec, in.trained_parameters, in.assumptions, &assumed);
  if (assumed) out.assumed_checkpoint_gb = needs.checkpoint_gb;
  const auto& offers = in.catalog.offers();
  std::vector<ExtraCosts> extras(offers.size());
  for (size_t i = 0; i < offers.size(); ++i) {
    if (classes.class_of_offer[i] < 0) continue;
    std::vector<std::string> missing;
    extras[i] = ExtrasFor(in.spec.extra, needs, offers[i].provider, in.assumptions, &missing);
    if (!missing.empty())
      out.unpriced_storage[offers[i].provider].insert(missing.begin(), missing.end());
  }
  return extras;
}

// One candidate of offer `i` on `task`'s layout under `pricing`, its run input filled.
Pending MakePending(const PlanInputs& in, size_t i, const HardwareClass& hc, const LayoutTask& task,
                    PricingModel pricing, double hourly, const ExtraCosts& extra) {
  const catalog::Offer& o = in.catalog.offers()[i];
  const Constraints& c = in.spec.constraints;
  Pending p;
  p.hc = &hc;
  p.cand.offer = static_cast<int>(i);
  p.cand.nodes = task.nodes;
  p.cand.pricing = pricing;
  p.cand.layout = task.best;
  p.cand.capacity_bytes = hc.capacity_bytes;
  p.cand.precision = hc.precision;
  p.cand.network_p90_ratio = task.network_p90_ratio;
  p.cand.unconfirmed = UnconfirmedOf(o);
  const int gpus = task.nodes * o.gpu_count;
  p.cand.work_units_per_second = task.best.step.tokens_per_second_per_gpu * gpus;
  p.run.work_seconds = in.work_units / p.cand.work_units_per_second;
  p.run.nodes = task.nodes;
  p.run.gpus = gpus;
  p.run.trained_parameters = in.trained_parameters;
  p.run.checkpointing = in.spec.checkpointing;
  p.run.checkpoint_every_seconds = in.spec.checkpoint_every_seconds;
  if (const spot::StorageKind* target = CheckpointStorageFor(o, in.assumptions)) {
    p.run.checkpoint_write_bytes_per_second_per_node = target->write_bytes_per_second;
  }
  p.run.hourly_usd = hourly;
  p.run.pricing = pricing;
  p.run.provider = in.catalog.FindProvider(o.provider);
  p.run.extra = extra;
  p.run.deadline_seconds = c.deadline_seconds;
  p.run.on_demand_usd_per_hour = o.on_demand_usd_per_hour;
  p.run.reserved_owned = c.reserved_owned;
  return p;
}

// The host needs of one node of `offer` running `layout`, as the job loads its model.
HostNeeds HostNeedsOfLayout(const PlanInputs& in, const catalog::Offer& offer,
                            const BestLayout& layout, workload::Precision precision) {
  return HostNeedsOf(offer, in.model, layout.training, precision, in.spec.command);
}

// Usability of a candidate whose node is short of host RAM or vCPUs: times this per shortfall.
// The job can still run after a change on the user's side (rank-0 loading, fewer dataloader
// workers) or not at all, so the row stays but ranks lower; 0.5 is fulcrum's judgement, modest
// next to a missed deadline (which sorts the row below every feasible one).
constexpr double kHostShortUsabilityFactor = 0.5;

// What DetectPitfalls reads of a costed candidate.
PitfallFacts PitfallFactsOf(const PlanInputs& in, const Pending& p, bool calibrated) {
  const Candidate& cand = p.cand;
  const catalog::Offer& o = in.catalog.offers()[cand.offer];
  const Constraints& c = in.spec.constraints;
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
  facts.spot = IsSpot(cand.pricing);
  facts.spot_risk_adjusted = cand.run.risk_adjusted;
  facts.checkpointing = in.spec.checkpointing;
  facts.headroom_fraction = cand.layout.headroom_fraction;
  facts.deadline_seconds = c.deadline_seconds;
  facts.p90_seconds = cand.run.p90_seconds;
  facts.budget_usd = c.budget_usd;
  facts.expected_usd = cand.run.expected_usd;
  facts.p90_usd = cand.run.p90_usd;
  facts.global_batch_changed = in.spec.global_batch_given && t.global_batch != in.base.global_batch;
  facts.precision_fallback = p.hc->precision_fallback;
  facts.reserved_term_seconds =
      cand.run.reserved_commitment ? ReservedTermSeconds(cand.pricing) : 0;
  facts.total_seconds = cand.run.total_seconds;
  facts.billing_terms_unknown = BillingTermsUnknown(p.run.provider);
  facts.uncalibrated_gpu = !calibrated;
  const HostNeeds host = HostNeedsOfLayout(in, o, cand.layout, cand.precision);
  facts.host_ram_short = host.RamShort();
  facts.host_cpu_short = host.CpuShort();
  return facts;
}

// Runs `cost` over the pending candidates named by `which` on the parallel-for.
void CostOnThreads(std::vector<Pending>& pending, const std::vector<size_t>& which, int threads,
                   const std::function<void(Pending&)>& cost) {
  ParallelFor(which.size(), threads, 1, [&](size_t begin, size_t end) {
    for (size_t k = begin; k < end; ++k) cost(pending[which[k]]);
  });
}

}  // namespace

std::vector<Pending> PendingCandidates(const PlanInputs& in, const HardwareClasses& classes,
                                       const LayoutTable& layouts,
                                       const std::vector<ExtraCosts>& extras) {
  const auto& offers = in.catalog.offers();
  const Constraints& c = in.spec.constraints;
  std::vector<Pending> pending;
  for (size_t i = 0; i < offers.size(); ++i) {
    const int k = classes.class_of_offer[i];
    if (k < 0) continue;
    const HardwareClass& hc = classes.classes[k];
    const catalog::Provider* provider = in.catalog.FindProvider(offers[i].provider);
    for (int nodes : hc.node_counts) {
      const LayoutTask* task = layouts.Find(k, nodes);
      if (task == nullptr || !task->best.found) continue;
      if (c.strict_host) {
        const HostNeeds host = HostNeedsOfLayout(in, offers[i], task->best, hc.precision);
        if (host.RamShort() || host.CpuShort()) continue;
      }
      for (PricingModel pricing : c.pricing) {
        if (IsSpot(pricing) && !c.interruptible) continue;
        const std::optional<double> hourly = HourlyPriceUsd(offers[i], provider, pricing);
        if (!hourly) continue;
        pending.push_back(MakePending(in, i, hc, *task, pricing, *hourly, extras[i]));
      }
    }
  }
  return pending;
}

void CostCandidate(const PlanInputs& in, Pending& p) {
  Candidate& cand = p.cand;
  bool calibrated = true;
  if (const auto& covered = in.assumptions.calibrated_architectures) {
    calibrated = std::binary_search(covered->begin(), covered->end(), p.hc->gpu->architecture);
  }
  cand.band = estimate::BandFor(estimate::DefaultUncertaintyTable(), in.model, cand.precision,
                                p.run.gpus, calibrated, estimate::Realism::kProduction);
  p.run.step_p90_ratio = cand.band.step_p90_ratio * cand.network_p90_ratio;
  cand.run = EstimateRunCost(p.run, in.assumptions);
  cand.warnings = DetectPitfalls(PitfallFactsOf(in, p, calibrated));
  cand.meets_constraints = !(cand.warnings & (kPitfallDeadlineMissedP90 | kPitfallBudgetExceeded));
  cand.score = OfferScores(p.run.provider, cand.pricing, cand.nodes);
  if (cand.warnings & kPitfallHostRamShort) cand.score.usability *= kHostShortUsabilityFactor;
  if (cand.warnings & kPitfallHostCpuShort) cand.score.usability *= kHostShortUsabilityFactor;
}

// Which spot candidates need the (expensive) simulator. A spot run takes at least its work plus
// the start-up (T_lb, a lower bound of its total and P90 time) and costs at least that time at
// min(spot, on-demand) price on every node plus the extras (C_lb). With the exact (non-spot)
// candidates costed, a spot candidate is left out only when it provably cannot (1) change the
// balanced score's reference (the cheapest feasible cost, expected or P90, or without a deadline
// the fastest feasible P90: T_lb and C_lb are not below the exact feasible bests), (2) be on the
// Pareto front (an exact candidate that may be on the front is at least as fast and as cheap as its
// lower bounds, strictly in one), nor (3) reach the top N by the objective: at least N exact
// candidates meet the constraints and the N-th best of them beats the spot candidate's bound
// (cheapest: C_lb; fastest: T_lb; balanced: its score upper bound, perf and cost at its lower
// bounds and no interruptions, against the exact lower-bound scores at the lowest reference the
// kept spot rows could give). Everything left out would rank below N and off the front.
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
  std::vector<const Candidate*> feasible, setters;
  for (size_t i : exact) {
    if (pending[i].cand.meets_constraints) feasible.push_back(&pending[i].cand);
    if (SetsReference(pending[i].cand, spec)) setters.push_back(&pending[i].cand);
  }
  const size_t top = static_cast<size_t>(std::max(1, spec.top));
  // The top N or the reference may need any of them.
  if (feasible.size() < top || setters.empty()) return spot;
  const std::optional<double> deadline = spec.constraints.deadline_seconds;
  // The cost references: the cheapest expected cost (shown) and P90 cost (scored) of the rows
  // that may set the reference (ranking.h SetsReference); C_lb bounds both from below.
  double feasible_c = std::numeric_limits<double>::infinity(), feasible_p90 = feasible_c;
  double feasible_p90_c = feasible_c;
  for (const Candidate* c : setters) {
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
  // The keys of the exact feasible candidates (higher is better for scores), best first, apart
  // by tier: with spec.unconfirmed_last a confirmed row ranks before every unconfirmed one
  // whatever its key (ranking.h ConfirmedFirst), so only the keys of its own tier compete.
  const bool higher_is_better = spec.objective == Objective::kBalanced;
  std::vector<double> keys_confirmed, keys_unconfirmed;
  for (const Candidate* c : feasible) {
    double key = 0;
    switch (spec.objective) {
      case Objective::kCheapest:
        key = c->run.expected_usd;
        break;
      case Objective::kFastest:
        key = c->run.p90_seconds;
        break;
      case Objective::kBalanced: {
        Scores s = c->score;
        FinishScores(s, FactsOf(*c), low, spec.weights);
        key = s.total;
        break;
      }
    }
    const bool tier_two = spec.unconfirmed_last && c->unconfirmed != 0;
    (tier_two ? keys_unconfirmed : keys_confirmed).push_back(key);
  }
  for (std::vector<double>* keys : {&keys_confirmed, &keys_unconfirmed}) {
    if (higher_is_better) {
      std::sort(keys->begin(), keys->end(), std::greater<double>());
    } else {
      std::sort(keys->begin(), keys->end());
    }
  }
  // Whether at least `top` exact feasible candidates provably rank before a spot candidate of
  // bound `bound` (its best possible key) and tier `unconfirmed`.
  const auto ranks_below_top = [&](double bound, bool unconfirmed) {
    const bool tier_two = spec.unconfirmed_last && unconfirmed;
    const std::vector<double>& same = tier_two ? keys_unconfirmed : keys_confirmed;
    const size_t ahead = tier_two ? keys_confirmed.size() : 0;  // ahead whatever their keys
    if (ahead >= top) return true;
    const size_t need = top - ahead;
    if (same.size() < need) return false;
    const double threshold = same[need - 1];
    return higher_is_better ? bound < threshold : bound > threshold;
  };
  std::vector<size_t> out;
  for (size_t k = 0; k < n; ++k) {
    const Pending& p = pending[spot[k]];
    bool dominated = false;
    for (size_t i : exact) {
      // Only a row that may be on the front takes it from another (ranking.h MayBeOnFront).
      if (!MayBeOnFront(pending[i].cand, spec)) continue;
      const RunCost& e = pending[i].cand.run;
      if (e.total_seconds <= t_lb[k] && e.expected_usd <= c_lb[k] &&
          (e.total_seconds < t_lb[k] || e.expected_usd < c_lb[k])) {
        dominated = true;
        break;
      }
    }
    double bound = 0;
    switch (spec.objective) {
      case Objective::kCheapest:
        bound = c_lb[k];
        break;
      case Objective::kFastest:
        bound = t_lb[k];
        break;
      case Objective::kBalanced: {
        Scores upper = OfferScores(p.run.provider, p.cand.pricing, p.cand.nodes);
        FinishScores(upper, RunFacts{t_lb[k], c_lb[k], 0, p.cand.nodes}, high, spec.weights);
        bound = upper.total;
        break;
      }
    }
    const bool below_top = ranks_below_top(bound, p.cand.unconfirmed != 0);
    if (keep[k] || !dominated || !below_top) out.push_back(spot[k]);
  }
  return out;
}

CostedCandidates CostCandidates(const PlanInputs& in, const HardwareClasses& classes,
                                const LayoutTable& layouts) {
  CostedCandidates out;
  const std::vector<ExtraCosts> extras = ExtrasOfOffers(in, classes, out);
  std::vector<Pending> pending = PendingCandidates(in, classes, layouts, extras);
  // Two rounds on the parallel-for: every non-spot candidate, then the spot candidates that
  // SpotCandidatesToSimulate cannot rule out (the simulator is the expensive part).
  std::vector<size_t> exact, spot;
  for (size_t i = 0; i < pending.size(); ++i) {
    (IsSpot(pending[i].cand.pricing) ? spot : exact).push_back(i);
  }
  const auto cost = [&in](Pending& p) { CostCandidate(in, p); };
  CostOnThreads(pending, exact, in.threads, cost);
  const std::vector<size_t> simulate =
      in.spec.prune_spot ? SpotCandidatesToSimulate(pending, exact, spot, in.spec, in.assumptions)
                         : spot;
  CostOnThreads(pending, simulate, in.threads, cost);
  out.spot_pruned = static_cast<int64_t>(spot.size() - simulate.size());
  out.candidates.reserve(exact.size() + simulate.size());
  for (size_t i : exact) out.candidates.push_back(pending[i].cand);
  for (size_t i : simulate) out.candidates.push_back(pending[i].cand);
  return out;
}

}  // namespace fulcrum::plan
