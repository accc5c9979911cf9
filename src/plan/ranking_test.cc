// The planner's ranking stage: the Pareto front, feasible candidates first in the objective's
// order, then the misses (near misses by cost, the rest by how far they miss).
#include "plan/ranking.h"

#include <vector>

#include <gtest/gtest.h>

namespace fulcrum::plan {
namespace {

TEST(RankingTest, ParetoFront) {
  // (time, cost): (1,10) (2,5) (3,6) dominated by (2,5); (4,1); (2,7) dominated.
  const std::vector<double> x = {1, 2, 3, 4, 2};
  const std::vector<double> y = {10, 5, 6, 1, 7};
  EXPECT_EQ(ParetoFront(x, y), (std::vector<int>{0, 1, 3}));
  EXPECT_TRUE(ParetoFront({}, {}).empty());
}

Candidate Costed(int offer, double hours, double usd, bool meets) {
  Candidate c;
  c.offer = offer;
  c.run.total_seconds = c.run.p90_seconds = hours * 3600;
  c.run.expected_usd = c.run.p90_usd = usd;
  c.meets_constraints = meets;
  return c;
}

std::vector<int> OffersInRankOrder(const PlanResult& r) {
  std::vector<int> out;
  for (const Candidate& c : r.candidates) out.push_back(c.offer);
  return out;
}

TEST(RankingTest, CheapestPutsFeasibleCandidatesFirstByExpectedCostThenTheMisses) {
  PlanResult r;
  r.spec.objective = Objective::kCheapest;
  r.spec.constraints.deadline_seconds = 10 * 3600.0;
  r.candidates = {Costed(0, 12, 50, false), Costed(1, 8, 300, true), Costed(2, 9, 200, true),
                  Costed(3, 30, 10, false)};
  RankCandidates(r);
  EXPECT_EQ(OffersInRankOrder(r), (std::vector<int>{2, 1, 0, 3}));
  for (size_t i = 0; i < r.candidates.size(); ++i) EXPECT_EQ(r.candidates[i].rank, int(i) + 1);
  EXPECT_EQ(r.objective, Objective::kCheapest);
  // The nearest miss is 12 h of a 10 h deadline.
  EXPECT_DOUBLE_EQ(r.nearest_miss_factor, 1.2);
  EXPECT_DOUBLE_EQ(r.candidates[2].miss_factor, 1.2);
  EXPECT_DOUBLE_EQ(r.candidates[3].miss_factor, 3.0);
  EXPECT_DOUBLE_EQ(r.candidates[0].miss_factor, 0);
}

TEST(RankingTest, NearMissesAreOrderedByCostFartherOnesByHowFarTheyMiss) {
  PlanResult r;
  r.spec.objective = Objective::kBalanced;
  r.spec.constraints.deadline_seconds = 100 * 3600.0;
  // 103 h and 104.5 h are within 5 % of the nearest miss (103 h); 120 h is not.
  r.candidates = {Costed(0, 103, 900, false), Costed(1, 104.5, 600, false),
                  Costed(2, 120, 100, false)};
  RankCandidates(r);
  EXPECT_EQ(OffersInRankOrder(r), (std::vector<int>{1, 0, 2}));
}

TEST(RankingTest, TheParetoFrontIsMarkedOnTheRankedCandidates) {
  PlanResult r;
  r.spec.objective = Objective::kFastest;
  r.candidates = {Costed(0, 5, 100, true), Costed(1, 4, 200, true), Costed(2, 6, 150, true)};
  RankCandidates(r);
  EXPECT_EQ(OffersInRankOrder(r), (std::vector<int>{1, 0, 2}));
  EXPECT_TRUE(r.candidates[0].pareto);
  EXPECT_TRUE(r.candidates[1].pareto);
  EXPECT_FALSE(r.candidates[2].pareto);  // offer 0 is faster and cheaper
  EXPECT_EQ(r.pareto, (std::vector<int>{0, 1}));
}

TEST(RankingTest, TheBalancedReferenceIsTheCheapestFeasibleCandidate) {
  std::vector<Candidate> c = {Costed(0, 5, 100, true), Costed(1, 4, 80, false),
                              Costed(2, 6, 150, true)};
  const ScoreReference ref = ReferenceOf(c, std::nullopt);
  EXPECT_DOUBLE_EQ(ref.cheapest_usd, 100);  // the infeasible $80 does not count
}

}  // namespace
}  // namespace fulcrum::plan
