#include "plan/ranking.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include <fmt/format.h>

namespace fulcrum::plan {

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

// The balanced score's reference over the candidates that may set it (SetsReference), else
// those that meet the constraints, else every candidate.
ScoreReference ReferenceOf(const std::vector<Candidate>& candidates, const PlanSpec& spec) {
  const auto any = [&](auto pred) {
    return std::any_of(candidates.begin(), candidates.end(), pred);
  };
  const bool any_setter = any([&](const Candidate& c) { return SetsReference(c, spec); });
  const bool any_feasible = any([](const Candidate& c) { return c.meets_constraints; });
  double cheapest = std::numeric_limits<double>::infinity();
  double fastest = cheapest, cheapest_p90 = cheapest;
  for (const Candidate& c : candidates) {
    if (any_setter ? !SetsReference(c, spec) : (any_feasible && !c.meets_constraints)) continue;
    cheapest = std::min(cheapest, c.run.expected_usd);
    cheapest_p90 = std::min(cheapest_p90, c.run.p90_usd);
    fastest = std::min(fastest, c.run.p90_seconds);
  }
  return {SaturationSeconds(spec.constraints.deadline_seconds, fastest), cheapest, cheapest_p90};
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

uint8_t UnconfirmedOf(const catalog::Offer& offer) {
  uint8_t bits = 0;
  if (offer.caveat.rfind(catalog::kPriceUnverifiedCaveat, 0) == 0) bits |= kUnconfirmedPrice;
  if (offer.gpu_count > 1 && offer.interconnect == catalog::Interconnect::kUnknown) {
    bits |= kUnconfirmedInterconnect;
  }
  return bits;
}

std::vector<std::string> UnconfirmedNames(uint8_t bits) {
  std::vector<std::string> out;
  if (bits & kUnconfirmedPrice) out.emplace_back("price");
  if (bits & kUnconfirmedInterconnect) out.emplace_back("interconnect");
  return out;
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

void RankCandidates(PlanResult& result) {
  const PlanSpec& spec = result.spec;
  const Constraints& c = spec.constraints;
  result.objective = spec.objective;
  result.reference = ReferenceOf(result.candidates, spec);
  double nearest_miss = std::numeric_limits<double>::infinity();
  for (Candidate& cand : result.candidates) {
    FinishScores(cand.score, FactsOf(cand), result.reference, spec.weights);
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
                     if (ConfirmedFirst(a, b, spec)) return true;
                     if (ConfirmedFirst(b, a, spec)) return false;
                     return BetterByObjective(a, b, spec.objective);
                   });
  for (size_t i = 0; i < result.candidates.size(); ++i) {
    result.candidates[i].rank = static_cast<int>(i) + 1;
  }
  MarkParetoFront(result);
}

void MarkParetoFront(PlanResult& result) {
  const std::vector<Candidate>& cands = result.candidates;
  const bool any_eligible = std::any_of(
      cands.begin(), cands.end(), [&](const Candidate& c) { return MayBeOnFront(c, result.spec); });
  std::vector<int> index;  // into candidates, of the rows the front is taken over
  std::vector<double> xs, ys;
  for (size_t i = 0; i < cands.size(); ++i) {
    if (any_eligible && !MayBeOnFront(cands[i], result.spec)) continue;
    index.push_back(static_cast<int>(i));
    xs.push_back(cands[i].run.total_seconds);
    ys.push_back(cands[i].run.expected_usd);
  }
  result.pareto.clear();
  for (int k : ParetoFront(xs, ys)) result.pareto.push_back(index[k]);
  for (int i : result.pareto) result.candidates[i].pareto = true;
}

std::string UnconfirmedRowsNote(const PlanResult& r, const catalog::Catalog& catalog) {
  if (!r.spec.unconfirmed_last) return "";
  const Candidate* first = nullptr;
  int count = 0;
  for (const Candidate& c : r.candidates) {
    if (!c.meets_constraints || c.unconfirmed == 0) continue;
    ++count;
    if (first == nullptr) first = &c;
  }
  if (first == nullptr || first->rank <= r.spec.top) return "";
  const catalog::Offer& o = catalog.offers()[first->offer];
  std::string what;
  if (first->unconfirmed & kUnconfirmedPrice) what = "price";
  if (first->unconfirmed & kUnconfirmedInterconnect)
    what += what.empty() ? "interconnect" : ", interconnect";
  return fmt::format(
      "{} row{} that meet{} the constraints rest on a price or interconnect the catalog cannot "
      "confirm and rank after the confirmed ones (docs/RANKING.md); the first: #{} {} {} x{} {} "
      "({} unconfirmed), P90 {:.1f} h, ${:.2f}; --rank-unconfirmed mixed ranks them by the "
      "objective alone",
      count, count == 1 ? "" : "s", count == 1 ? "s" : "", first->rank, o.provider, o.instance_type,
      first->nodes, PricingModelName(first->pricing), what, first->run.p90_seconds / 3600.0,
      first->run.expected_usd);
}

}  // namespace fulcrum::plan
