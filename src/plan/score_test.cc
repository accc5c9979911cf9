#include "plan/score.h"

#include <gtest/gtest.h>

namespace fulcrum::plan {
namespace {

TEST(ScoreTest, UnknownAttributesAreNeutralAndFlagged) {
  catalog::Provider p;
  const Scores s = OfferScores(&p, PricingModel::kOnDemand, 1);
  // Provider stability: SLA and bare metal unknown (0.5 each).
  EXPECT_NEAR(s.provider_stability, 0.5, 1e-12);
  EXPECT_NEAR(s.support, 0.5, 1e-12);
  EXPECT_TRUE(s.unknown & kUnknownSla);
  EXPECT_TRUE(s.unknown & kUnknownFailureRate);
  EXPECT_TRUE(s.unknown & kUnknownGranularity);
  EXPECT_TRUE(s.unknown & kUnknownSupportResponse);
  const auto names = UnknownAttributeNames(s.unknown);
  EXPECT_NE(std::find(names.begin(), names.end(), "stability.sla_uptime"), names.end());
}

TEST(ScoreTest, KnownTermsMoveTheScores) {
  catalog::Provider good;
  good.sla_uptime_pct = 99.99;
  good.gpu_failure_rate_pct_per_year = 0;
  good.bare_metal = true;
  good.billing_granularity_seconds = 1;
  good.support_24x7 = true;
  good.support_response_minutes = 15;
  Scores s = OfferScores(&good, PricingModel::kOnDemand, 1);
  FinishScores(s, RunFacts{3600, 100, 0, 1}, ScoreReference{7200, 100}, Weights{});
  EXPECT_NEAR(s.stability, 1.0, 1e-9);
  EXPECT_NEAR(s.support, 1.0, 1e-9);
  EXPECT_FALSE(s.unknown & kUnknownSla);
  const Scores multi = OfferScores(&good, PricingModel::kOnDemand, 4);
  EXPECT_LT(multi.usability, s.usability);
}

TEST(ScoreTest, StabilityCountsThisRunsInterruptionsAndNodes) {
  catalog::Provider p;
  const Scores offer = OfferScores(&p, PricingModel::kOnDemand, 1);
  Scores calm = offer, stormy = offer, wide = offer;
  FinishScores(calm, RunFacts{3600, 100, 0.01, 1}, ScoreReference{7200, 100}, Weights{});
  FinishScores(stormy, RunFacts{3600, 100, 3, 1}, ScoreReference{7200, 100}, Weights{});
  FinishScores(wide, RunFacts{3600, 100, 0.01, 16}, ScoreReference{7200, 100}, Weights{});
  EXPECT_LT(stormy.stability, calm.stability);
  EXPECT_LT(wide.stability, calm.stability);
}

TEST(ScoreTest, PerformanceSaturatesOnceTheDeadlineIsMetWithMargin) {
  // 3-day deadline: 2 h and 7 h both finish within half of it and score the same.
  const double deadline = 3 * 24 * 3600.0;
  const ScoreReference ref{SaturationSeconds(deadline, 2 * 3600.0), 100};
  Scores fast, slow, late;
  FinishScores(fast, RunFacts{2 * 3600.0, 100, 0, 1}, ref, Weights{});
  FinishScores(slow, RunFacts{7 * 3600.0, 100, 0, 1}, ref, Weights{});
  FinishScores(late, RunFacts{60 * 3600.0, 100, 0, 1}, ref, Weights{});
  EXPECT_DOUBLE_EQ(fast.performance, 1.0);
  EXPECT_DOUBLE_EQ(slow.performance, 1.0);
  EXPECT_LT(late.performance, 1.0);
  // Without a deadline the saturation is a day, or the fastest P90 when that is longer.
  EXPECT_DOUBLE_EQ(SaturationSeconds(std::nullopt, 600), kSaturationWithoutDeadlineSeconds);
  EXPECT_DOUBLE_EQ(SaturationSeconds(std::nullopt, 1e6), 1e6);
}

TEST(ScoreTest, WeightedTotal) {
  Scores s;
  s.provider_stability = 1;
  s.usability = 0.5;
  s.support = 0;
  Weights w;
  FinishScores(s, RunFacts{20, 75, 0, 1}, ScoreReference{10, 50}, w);
  EXPECT_DOUBLE_EQ(s.performance, 0.5);
  EXPECT_DOUBLE_EQ(s.stability, 1.0);
  EXPECT_NEAR(s.total, 0.30 * 1 + 0.25 * 0.5 + 0.20 * s.cost + 0.15 * 0.5 + 0.10 * 0, 1e-12);
}

// Cost is 1 at the cheapest feasible P90 cost, falls as steeply as a linear rule there, and keeps
// falling: a row at 2x and one at 4x the cheapest do not tie (a rule clamped at 0 from 2x made
// 8 H100 at $320 and at $684 score alike).
TEST(ScoreTest, CostFallsWithoutTiesBeyondTwiceTheCheapest) {
  const ScoreReference ref{10, 100};
  auto cost = [&](double usd) {
    Scores s;
    FinishScores(s, RunFacts{10, usd, 0, 1}, ref, Weights{});
    return s.cost;
  };
  EXPECT_DOUBLE_EQ(cost(100), 1.0);
  EXPECT_GT(cost(130), 0.70);
  EXPECT_LT(cost(130), 0.80);
  double previous = cost(100);
  for (double usd : {150.0, 200.0, 300.0, 400.0, 800.0}) {
    EXPECT_LT(cost(usd), previous) << usd;
    EXPECT_GT(cost(usd), 0.0) << usd;
    previous = cost(usd);
  }
}

}  // namespace
}  // namespace fulcrum::plan
