#include "plan/score.h"

#include <gtest/gtest.h>

namespace fulcrum::plan {
namespace {

TEST(ScoreTest, UnknownAttributesAreNeutralAndFlagged) {
  catalog::Provider p;
  const Scores s = OfferScores(&p, PricingModel::kOnDemand, 1);
  // Stability: SLA, failure rate, bare metal unknown (0.5 each), on-demand 1.0.
  EXPECT_NEAR(s.stability, (0.5 * 3 + 1.0) / 4, 1e-12);
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
  const Scores s = OfferScores(&good, PricingModel::kOnDemand, 1);
  EXPECT_NEAR(s.stability, 1.0, 1e-9);
  EXPECT_NEAR(s.support, 1.0, 1e-9);
  EXPECT_FALSE(s.unknown & kUnknownSla);
  const Scores spot = OfferScores(&good, PricingModel::kSpot, 1);
  EXPECT_LT(spot.stability, s.stability);
  const Scores multi = OfferScores(&good, PricingModel::kOnDemand, 4);
  EXPECT_LT(multi.usability, s.usability);
}

TEST(ScoreTest, WeightedTotal) {
  Scores s;
  s.stability = 1;
  s.usability = 0.5;
  s.support = 0;
  Weights w;
  FinishScores(s, 20, 10, 100, 50, w);
  EXPECT_DOUBLE_EQ(s.performance, 0.5);
  EXPECT_DOUBLE_EQ(s.cost, 0.5);
  EXPECT_NEAR(s.total, 0.30 * 1 + 0.25 * 0.5 + 0.20 * 0.5 + 0.15 * 0.5 + 0.10 * 0, 1e-12);
}

}  // namespace
}  // namespace fulcrum::plan
