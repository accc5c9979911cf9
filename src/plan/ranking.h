// The planner's last stage: ranking. The balanced score is finished against a reference (the
// cheapest and fastest feasible candidates), candidates that meet the deadline (P90) and budget
// (expected) come first in the objective's order, then the misses, nearest first (near misses by
// cost), and the Pareto front of (total time, expected cost) is marked. Pure and thread-safe.
#pragma once

#include <optional>
#include <vector>

#include "plan/candidate.h"
#include "plan/score.h"
#include "plan/spec.h"

namespace fulcrum::plan {

// Indices of the Pareto-optimal points of (x, y) (both minimised), sorted by increasing x.
std::vector<int> ParetoFront(const std::vector<double>& x, const std::vector<double>& y);

// The balanced score's reference: the cheapest feasible expected cost (shown) and P90 cost (what
// the cost criterion is relative to), and the saturation time (from the fastest feasible P90
// when there is no deadline). Feasible = meets the deadline and the budget; when none does,
// every candidate.
ScoreReference ReferenceOf(const std::vector<Candidate>& candidates,
                           std::optional<double> deadline_seconds);

// How far a candidate misses its constraints: the larger of P90 time / deadline and expected
// cost / budget (0 without constraints).
double Violation(const Candidate& c, const Constraints& k);

// The order among candidates that miss: near misses (miss_factor <= near_limit) first, by cost
// (by P90 time for the fastest objective), then the farther misses by how far they miss. A strict
// weak order.
bool BetterMiss(const Candidate& a, const Candidate& b, double near_limit, Objective objective);

// The objective's order among candidates with the same feasibility.
bool BetterByObjective(const Candidate& a, const Candidate& b, Objective objective);

// Ranks result.candidates (costed, in any order) under result.spec: finishes their scores, sets
// miss_factor, sorts them (rank 1 first), sets rank and pareto, and fills result.objective,
// reference, nearest_miss_factor and pareto. The order is stable: equal candidates keep theirs.
void RankCandidates(PlanResult& result);

}  // namespace fulcrum::plan
