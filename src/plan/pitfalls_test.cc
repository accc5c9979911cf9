#include "plan/pitfalls.h"

#include <gtest/gtest.h>

namespace fulcrum::plan {
namespace {

// A clean single-GPU on-demand run that triggers nothing.
PitfallFacts Clean() {
  PitfallFacts f;
  f.model_state_bytes = 16e9;  // a 1 B full fine-tune
  f.capacity_bytes = 80.0 * (1 << 30);
  f.headroom_fraction = 0.3;
  f.p90_seconds = 3600;
  f.expected_usd = 100;
  f.p90_usd = 100;
  return f;
}

TEST(PitfallsTest, CleanRunHasNone) { EXPECT_EQ(DetectPitfalls(Clean()), 0u); }

TEST(PitfallsTest, LargeModelOnSmallGpuWithoutSharding) {
  PitfallFacts f = Clean();
  const double gib40 = 40.0 * (1 << 30);
  f.capacity_bytes = gib40;
  f.model_state_bytes = 2.1e9 * 16;  // a 2.1 B full fine-tune (mixed-precision AdamW)
  EXPECT_EQ(DetectPitfalls(f), kPitfallLargeModelSmallGpu);
  f.sharded = true;
  EXPECT_EQ(DetectPitfalls(f), 0u);
  f.sharded = false;
  f.capacity_bytes = 48.0 * (1 << 30);  // the same states on a larger card
  EXPECT_EQ(DetectPitfalls(f), 0u);
  // LoRA of a 6.7 B model: the frozen bf16 base and the adapters, about a third of 40 GB.
  f.capacity_bytes = gib40;
  f.model_state_bytes = 6.74e9 * 2 + 0.6e9;
  EXPECT_EQ(DetectPitfalls(f), 0u);
  // Exactly at the share: not above it.
  f.model_state_bytes = kLargeModelStateShare * gib40;
  EXPECT_EQ(DetectPitfalls(f), 0u);
}

TEST(PitfallsTest, MultiGpuOverPcieOnly) {
  PitfallFacts f = Clean();
  f.pcie_only = true;
  EXPECT_EQ(DetectPitfalls(f), 0u);  // one GPU: nothing to talk to
  f.gpus = 4;
  EXPECT_EQ(DetectPitfalls(f), kPitfallPcieMultiGpu);
}

TEST(PitfallsTest, MultiGpuOverAnUnknownInterconnect) {
  PitfallFacts f = Clean();
  f.interconnect_unknown = true;
  EXPECT_EQ(DetectPitfalls(f), 0u);  // one GPU: nothing to talk to
  f.gpus = 8;
  EXPECT_EQ(DetectPitfalls(f), kPitfallInterconnectUnknown);
  EXPECT_EQ(PitfallCodes(DetectPitfalls(f)), (std::vector<std::string>{"interconnect-unknown"}));
}

TEST(PitfallsTest, CatalogCaveatOnEveryRowUsingIt) {
  PitfallFacts f = Clean();
  f.catalog_caveat = true;
  EXPECT_EQ(DetectPitfalls(f), kPitfallCatalogCaveat);
  f.gpus = 16;
  f.nodes = 2;
  f.network_gbps = 3200;
  EXPECT_EQ(DetectPitfalls(f), kPitfallCatalogCaveat);
  EXPECT_EQ(PitfallCodes(kPitfallCatalogCaveat), (std::vector<std::string>{"catalog-caveat"}));
}

TEST(PitfallsTest, SlowInterNodeNetwork) {
  PitfallFacts f = Clean();
  f.nodes = 2;
  f.gpus = 16;
  f.network_gbps = 10;
  EXPECT_EQ(DetectPitfalls(f), kPitfallSlowInterNode);
  f.network_gbps = 25;
  EXPECT_EQ(DetectPitfalls(f), 0u);
  f.nodes = 1;
  f.network_gbps = 10;
  EXPECT_EQ(DetectPitfalls(f), 0u);
}

TEST(PitfallsTest, SpotWithoutCheckpointing) {
  PitfallFacts f = Clean();
  f.spot = true;
  f.checkpointing = false;
  EXPECT_EQ(DetectPitfalls(f), kPitfallSpotNoCheckpoint);
  f.checkpointing = true;
  EXPECT_EQ(DetectPitfalls(f), 0u);
  f.spot = false;
  f.checkpointing = false;
  EXPECT_EQ(DetectPitfalls(f), 0u);
}

TEST(PitfallsTest, LowHeadroom) {
  PitfallFacts f = Clean();
  f.headroom_fraction = 0.09;
  EXPECT_EQ(DetectPitfalls(f), kPitfallLowHeadroom);
  f.headroom_fraction = 0.10;
  EXPECT_EQ(DetectPitfalls(f), 0u);
}

TEST(PitfallsTest, DeadlineMissedAtP90) {
  PitfallFacts f = Clean();
  f.deadline_seconds = 3599;
  EXPECT_EQ(DetectPitfalls(f), kPitfallDeadlineMissedP90);
  f.deadline_seconds = 3600;
  EXPECT_EQ(DetectPitfalls(f), 0u);
}

TEST(PitfallsTest, BudgetExceeded) {
  PitfallFacts f = Clean();
  f.budget_usd = 99.99;
  EXPECT_EQ(DetectPitfalls(f), kPitfallBudgetExceeded);
  f.budget_usd = 100;
  EXPECT_EQ(DetectPitfalls(f), 0u);
}

TEST(PitfallsTest, BudgetAtRiskAtP90) {
  PitfallFacts f = Clean();
  f.p90_usd = 140;
  f.budget_usd = 120;  // expected 100 within it, P90 140 beyond it
  EXPECT_EQ(DetectPitfalls(f), kPitfallBudgetAtRiskP90);
  f.budget_usd = 140;  // P90 not beyond the budget
  EXPECT_EQ(DetectPitfalls(f), 0u);
  f.budget_usd = 90;  // already over on average: budget-exceeded alone
  EXPECT_EQ(DetectPitfalls(f), kPitfallBudgetExceeded);
  f.budget_usd.reset();
  EXPECT_EQ(DetectPitfalls(f), 0u);
}

TEST(PitfallsTest, SpotNotRiskAdjustedAndAssumedNetwork) {
  PitfallFacts f = Clean();
  f.spot = true;
  f.spot_risk_adjusted = false;
  EXPECT_EQ(DetectPitfalls(f), kPitfallSpotNotRiskAdjusted);
  f = Clean();
  f.nodes = 2;
  f.network_assumed = true;
  EXPECT_EQ(DetectPitfalls(f), kPitfallNetworkAssumed);
}

TEST(PitfallsTest, BatchPrecisionReservedBillingAndSpotCapacity) {
  PitfallFacts f = Clean();
  f.global_batch_changed = true;
  EXPECT_EQ(DetectPitfalls(f), kPitfallGlobalBatchChanged);
  f = Clean();
  f.precision_fallback = true;
  EXPECT_EQ(DetectPitfalls(f), kPitfallPrecisionFallback);
  f = Clean();
  f.reserved_term_seconds = 8760 * 3600.0;
  f.total_seconds = 3.5 * 3600;
  EXPECT_EQ(DetectPitfalls(f), kPitfallReservedCommitment);
  f.total_seconds = 8000 * 3600.0;  // uses most of the term
  EXPECT_EQ(DetectPitfalls(f), 0u);
  f = Clean();
  f.billing_terms_unknown = true;
  EXPECT_EQ(DetectPitfalls(f), kPitfallBillingTermsUnknown);
  f = Clean();
  f.spot = true;
  EXPECT_EQ(DetectPitfalls(f), 0u);  // one spot node: no capacity warning
  f.nodes = 4;
  f.network_gbps = 400;
  EXPECT_EQ(DetectPitfalls(f), kPitfallSpotCapacityRisk);
}

TEST(PitfallsTest, CodesAndMessages) {
  EXPECT_EQ(PitfallCodes(kPitfallPcieMultiGpu | kPitfallBudgetExceeded),
            (std::vector<std::string>{"pcie-multi-gpu", "budget-exceeded"}));
  for (int bit = 0; bit < kPitfallCount; ++bit) {
    EXPECT_FALSE(PitfallMessage(static_cast<Pitfall>(1u << bit)).empty()) << bit;
    EXPECT_NE(PitfallCode(static_cast<Pitfall>(1u << bit)), "unknown") << bit;
  }
}

}  // namespace
}  // namespace fulcrum::plan
