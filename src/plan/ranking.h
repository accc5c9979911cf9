// The planner's last stage: ranking. The balanced score is finished against a reference (the
// cheapest and fastest feasible candidates), candidates that meet the deadline (P90) and budget
// (expected) come first in the objective's order (those whose price or interconnect the catalog
// cannot confirm after the confirmed ones, by default: docs/RANKING.md), then the misses,
// nearest first (near misses by cost), and the Pareto front of (total time, expected cost) is
// marked. Pure and thread-safe.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "plan/candidate.h"
#include "plan/score.h"
#include "plan/spec.h"

namespace fulcrum::plan {

// Indices of the Pareto-optimal points of (x, y) (both minimised), sorted by increasing x.
std::vector<int> ParetoFront(const std::vector<double>& x, const std::vector<double>& y);

// Whether a candidate may set the balanced score's reference: it meets the constraints and,
// where spec.unconfirmed_last, its price is confirmed (an unverified low price does not define
// what cheap is).
inline bool SetsReference(const Candidate& c, const PlanSpec& spec) {
  return c.meets_constraints && !(spec.unconfirmed_last && (c.unconfirmed & kUnconfirmedPrice));
}

// The balanced score's reference: the cheapest expected cost (shown) and P90 cost (what the
// cost criterion is relative to), and the saturation time (from the fastest P90 when there is
// no deadline), over the candidates that may set it (SetsReference); when none may, over those
// that meet the constraints; when none does, over every candidate.
ScoreReference ReferenceOf(const std::vector<Candidate>& candidates, const PlanSpec& spec);

// How far a candidate misses its constraints: the larger of P90 time / deadline and expected
// cost / budget (0 without constraints).
double Violation(const Candidate& c, const Constraints& k);

// The Unconfirmed bits of any candidate on `offer`: kUnconfirmedPrice where its caveat is
// price-unverified, kUnconfirmedInterconnect where it has several GPUs and no stated
// interconnect.
uint8_t UnconfirmedOf(const catalog::Offer& offer);

// "price", "interconnect": the names of Unconfirmed bits (JSON unconfirmed of plan and
// serve-plan, footnotes).
std::vector<std::string> UnconfirmedNames(uint8_t bits);

// Whether a candidate may be on the Pareto front: where spec.unconfirmed_last, only rows whose
// price and interconnect the catalog confirms (an unconfirmed row, ranked after them, does not
// take the front from the rows ranked first). When no row is confirmed the front is every row's
// (RankCandidates).
inline bool MayBeOnFront(const Candidate& c, const PlanSpec& spec) {
  return !(spec.unconfirmed_last && c.unconfirmed != 0);
}

// Whether `a` goes before `b` for being confirmed where `b` is not (spec.unconfirmed_last);
// false when both are alike or the spec ranks them mixed.
inline bool ConfirmedFirst(const Candidate& a, const Candidate& b, const PlanSpec& spec) {
  return spec.unconfirmed_last && a.unconfirmed == 0 && b.unconfirmed != 0;
}

// The order among candidates that miss: near misses (miss_factor <= near_limit) first, by cost
// (by P90 time for the fastest objective), then the farther misses by how far they miss. A strict
// weak order.
bool BetterMiss(const Candidate& a, const Candidate& b, double near_limit, Objective objective);

// The objective's order among candidates with the same feasibility.
bool BetterByObjective(const Candidate& a, const Candidate& b, Objective objective);

// Ranks result.candidates (costed, in any order) under result.spec: finishes their scores, sets
// miss_factor, sorts them (rank 1 first: those that meet the constraints, the confirmed ones
// first where spec.unconfirmed_last, each group in the objective's order; then the misses), sets
// rank and pareto, and fills result.objective, reference, nearest_miss_factor and pareto. The order
// is stable: equal candidates keep theirs.
void RankCandidates(PlanResult& result);

// Sets result.pareto (indices by increasing total time) and each candidate's pareto flag: the
// Pareto front of (total time, expected cost) over the rows that MayBeOnFront, or over every
// row when none may. The rows the ranking puts last for an unconfirmed price or interconnect
// (a marketplace snapshot, an 8-GPU box of unknown links) are not weighed against the rest.
void MarkParetoFront(PlanResult& result);

// Where spec.unconfirmed_last put rows that meet the constraints below the top N for want of a
// confirmed price or interconnect: a note that says how many and names the first (rank, offer,
// what is unconfirmed, P90 time, expected cost); "" otherwise. `result` ranked.
std::string UnconfirmedRowsNote(const PlanResult& result, const catalog::Catalog& catalog);

}  // namespace fulcrum::plan
