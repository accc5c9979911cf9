#include "plan/cost.h"

#include <cmath>

#include <gtest/gtest.h>

namespace fulcrum::plan {
namespace {

catalog::Provider PerMinute() {
  catalog::Provider p;
  p.billing_granularity_seconds = 60;
  p.minimum_billed_seconds = 600;
  p.reserved_1y_discount_pct = 30;
  p.reserved_3y_discount_pct = 50;
  return p;
}

TEST(BillingTest, GranularityAndMinimum) {
  const catalog::Provider p = PerMinute();
  EXPECT_DOUBLE_EQ(BilledSeconds(61, &p), 600);   // minimum
  EXPECT_DOUBLE_EQ(BilledSeconds(601, &p), 660);  // next minute
  EXPECT_DOUBLE_EQ(BilledSeconds(720, &p), 720);  // exact
  // Unknown terms: per minute with a one-minute minimum (not whole hours).
  EXPECT_DOUBLE_EQ(BilledSeconds(10, nullptr), 60);
  EXPECT_DOUBLE_EQ(BilledSeconds(43 * 60 + 5, nullptr), 44 * 60);
  catalog::Provider unknown;
  EXPECT_TRUE(BillingTermsUnknown(&unknown));
  EXPECT_DOUBLE_EQ(BilledSeconds(43 * 60, &unknown), 43 * 60);
  EXPECT_FALSE(BillingTermsUnknown(&p));
  catalog::Provider per_second;
  per_second.billing_granularity_seconds = 1;
  per_second.minimum_billed_seconds = 60;
  EXPECT_DOUBLE_EQ(BilledSeconds(90.2, &per_second), 91);
}

TEST(BillingTest, HourlyPricePerPricingModel) {
  const catalog::Provider p = PerMinute();
  catalog::Offer o;
  o.on_demand_usd_per_hour = 10;
  o.spot_usd_per_hour = 4;
  EXPECT_DOUBLE_EQ(*HourlyPriceUsd(o, &p, PricingModel::kOnDemand), 10);
  EXPECT_DOUBLE_EQ(*HourlyPriceUsd(o, &p, PricingModel::kSpot), 4);
  EXPECT_DOUBLE_EQ(*HourlyPriceUsd(o, &p, PricingModel::kReserved1y), 7);
  EXPECT_DOUBLE_EQ(*HourlyPriceUsd(o, &p, PricingModel::kReserved3y), 5);
  catalog::Provider unknown;
  EXPECT_FALSE(HourlyPriceUsd(o, &unknown, PricingModel::kReserved1y).has_value());
  o.spot_usd_per_hour.reset();
  EXPECT_FALSE(HourlyPriceUsd(o, &p, PricingModel::kSpot).has_value());
}

TEST(RunCostTest, YoungIntervalAndOverheads) {
  const catalog::Provider p = PerMinute();
  CostAssumptions a;
  RunInput in;
  in.work_seconds = 100 * 3600;
  in.nodes = 1;
  in.gpus = 8;
  in.trained_parameters = 7e9;
  in.hourly_usd = 10;
  in.provider = &p;
  const RunCost cost = EstimateRunCost(in, a);
  const double delta = 7e9 * 14 / 1e9;  // 98 s
  const double mtbf = 3600.0 / (a.interruptions_per_gpu_hour * 8 + a.interruptions_per_node_hour);
  EXPECT_NEAR(cost.checkpoint_write_seconds, delta, 1e-9);
  EXPECT_NEAR(cost.checkpoint_interval_seconds, std::sqrt(2 * delta * mtbf), 1e-6);
  EXPECT_GT(cost.total_seconds, in.work_seconds + a.startup_seconds);
  EXPECT_LT(cost.total_seconds, in.work_seconds * 1.05);
  EXPECT_GE(cost.p90_seconds, cost.total_seconds);
  // Billed per minute: cost = ceil(total / 60) minutes x $10/h.
  EXPECT_NEAR(cost.expected_usd, std::ceil(cost.total_seconds / 60 - 1e-9) * 60 / 3600 * 10, 1e-9);
  EXPECT_TRUE(cost.risk_adjusted);
}

// The fleet rate of an 8-GPU node is Llama 3's 419 interruptions per 54 days per 16,384 GPUs;
// the same GPUs in 4x as many 2-GPU nodes are interrupted more often (host, NIC, switch port
// failures come per node).
TEST(RunCostTest, SmallerNodesAreInterruptedMoreOftenForTheSameGpus) {
  const catalog::Provider p = PerMinute();
  CostAssumptions a;
  RunInput in;
  in.work_seconds = 100 * 3600;
  in.trained_parameters = 7e9;
  in.hourly_usd = 10;
  in.provider = &p;
  in.gpus = 256;
  in.nodes = 32;
  const RunCost eight = EstimateRunCost(in, a);
  const double fleet_per_gpu_hour = 419.0 / (54.0 * 24.0 * 16384.0);
  EXPECT_NEAR(eight.expected_interruptions,
              (in.work_seconds + a.startup_seconds) / 3600.0 * 256 * fleet_per_gpu_hour,
              0.05 * eight.expected_interruptions);
  in.nodes = 128;
  const RunCost two = EstimateRunCost(in, a);
  EXPECT_GT(two.expected_interruptions, 1.5 * eight.expected_interruptions);
  EXPECT_GT(two.total_seconds, eight.total_seconds);
}

TEST(RunCostTest, NodesMultiplyCostAndExtrasAdd) {
  const catalog::Provider p = PerMinute();
  RunInput in;
  in.work_seconds = 3600;
  in.trained_parameters = 1e9;
  in.hourly_usd = 10;
  in.provider = &p;
  in.nodes = 1;
  const RunCost one = EstimateRunCost(in);
  in.nodes = 2;
  in.gpus = 2;
  const RunCost two = EstimateRunCost(in);
  EXPECT_NEAR(two.expected_usd / one.expected_usd, 2.0, 0.02);
  in.extra.egress_gb = 100;
  in.extra.egress_usd_per_gb = 0.09;
  EXPECT_NEAR(EstimateRunCost(in).expected_usd - two.expected_usd, 9.0, 1e-9);
}

TEST(RunCostTest, SpotIsFlaggedNotRiskAdjustedUntilTheSimulatorPlugsIn) {
  const catalog::Provider p = PerMinute();
  RunInput in;
  in.work_seconds = 3600;
  in.trained_parameters = 1e9;
  in.hourly_usd = 4;
  in.provider = &p;
  in.pricing = PricingModel::kSpot;
  const RunCost spot = EstimateRunCost(in);
  EXPECT_FALSE(spot.risk_adjusted);
  in.pricing = PricingModel::kOnDemand;
  EXPECT_NEAR(EstimateRunCost(in).expected_usd, spot.expected_usd, 1e-9);
}

TEST(RunCostTest, SpotThroughTheSimulatorIsRiskAdjusted) {
  catalog::Provider p = PerMinute();
  p.spot_notice_seconds = 0;  // no notice: periodic checkpoints are needed
  CostAssumptions a;
  a.spot_mtti_seconds_per_instance = 20 * 3600;  // frequent preemptions
  RunInput in;
  in.work_seconds = 48 * 3600;
  in.nodes = 2;
  in.gpus = 16;
  in.trained_parameters = 7e9;
  in.hourly_usd = 4;
  in.on_demand_usd_per_hour = 10;
  in.provider = &p;
  in.pricing = PricingModel::kSpot;
  const RunCost spot = EstimateRunCost(in, a);
  EXPECT_TRUE(spot.risk_adjusted);
  EXPECT_FALSE(spot.spot_policy.empty());
  EXPECT_GE(spot.p90_usd, spot.expected_usd);
  EXPECT_GE(spot.p90_seconds, spot.total_seconds);
  // Preemptions only add: at least the work at the spot price on both nodes.
  EXPECT_GT(spot.total_seconds, in.work_seconds);
  EXPECT_GT(spot.expected_usd, 48.0 * 4 * 2);
  EXPECT_GT(spot.checkpoint_interval_seconds, 0);
  // Deterministic (fixed seed).
  EXPECT_DOUBLE_EQ(EstimateRunCost(in, a).expected_usd, spot.expected_usd);
  // A deadline switches to Uniform Progress with the on-demand safety net.
  in.deadline_seconds = 60 * 3600;
  const RunCost with_deadline = EstimateRunCost(in, a);
  EXPECT_EQ(with_deadline.spot_policy, "uniform-progress");
  EXPECT_LE(with_deadline.p90_seconds, 60 * 3600 + a.startup_seconds + 1);
}

TEST(RunCostTest, ReservedCostsTheWholeTermUnlessOwned) {
  const catalog::Provider p = PerMinute();
  RunInput in;
  in.work_seconds = 3.5 * 3600;
  in.trained_parameters = 7e9;
  in.gpus = 8;
  in.hourly_usd = 5;  // reserved_3y effective hourly
  in.provider = &p;
  in.pricing = PricingModel::kReserved3y;
  const RunCost committed = EstimateRunCost(in);
  EXPECT_TRUE(committed.reserved_commitment);
  EXPECT_NEAR(committed.expected_usd, 5.0 * 3 * 8760, 1e-6);  // the 3-year term in full
  EXPECT_GT(committed.breakdown.commitment_usd, 0.99 * committed.expected_usd);
  in.reserved_owned = true;
  const RunCost owned = EstimateRunCost(in);
  EXPECT_FALSE(owned.reserved_commitment);
  EXPECT_LT(owned.expected_usd, 5.0 * 5);  // marginal: ~4 h at $5
  // Never cheaper than on-demand for a short job.
  in.reserved_owned = false;
  in.pricing = PricingModel::kOnDemand;
  in.hourly_usd = 10;
  EXPECT_LT(EstimateRunCost(in).expected_usd, committed.expected_usd);
}

TEST(RunCostTest, BreakdownSumsToTheExpectedCost) {
  const catalog::Provider p = PerMinute();
  RunInput in;
  in.work_seconds = 100 * 3600;
  in.gpus = 64;
  in.nodes = 8;
  in.trained_parameters = 7e9;
  in.hourly_usd = 10;
  in.provider = &p;
  in.extra.storage_gb = 1000;
  in.extra.storage_usd_per_gb_month = 0.08;
  in.extra.egress_gb = 100;
  in.extra.egress_usd_per_gb = 0.09;
  const RunCost c = EstimateRunCost(in);
  const CostBreakdown& b = c.breakdown;
  EXPECT_GT(b.failures_usd, 0);
  EXPECT_GT(b.checkpoint_usd, 0);
  EXPECT_NEAR(b.egress_usd, 9.0, 1e-9);
  EXPECT_NEAR(b.compute_usd + b.storage_usd + b.egress_usd + b.failures_usd + b.checkpoint_usd +
                  b.commitment_usd,
              c.expected_usd, 1e-6);
  EXPECT_GT(c.expected_interruptions, 0);
}

TEST(RunCostTest, SpotIsNeverFasterThanItsOnDemandTwin) {
  catalog::Provider p = PerMinute();
  p.spot_notice_seconds = 120;  // a checkpoint fits in the notice: no periodic checkpoints
  CostAssumptions a;
  a.spot_mtti_seconds_per_instance = 1e9;  // preemptions almost never come
  RunInput in;
  in.work_seconds = 200 * 3600;
  in.nodes = 16;
  in.gpus = 128;
  in.trained_parameters = 7e9;
  in.hourly_usd = 10;
  in.on_demand_usd_per_hour = 10;
  in.provider = &p;
  const RunCost on_demand = EstimateRunCost(in, a);
  in.pricing = PricingModel::kSpot;
  in.hourly_usd = 4;
  const RunCost spot = EstimateRunCost(in, a);
  ASSERT_TRUE(spot.risk_adjusted);
  EXPECT_GE(spot.total_seconds, on_demand.total_seconds);
  EXPECT_GE(spot.p90_seconds, on_demand.p90_seconds);
  EXPECT_GE(spot.expected_interruptions, on_demand.expected_interruptions);
}

TEST(RunCostTest, VeryLongSpotJobsScaleASimulatedSegment) {
  // 2000 h of work at a 2 h MTTI: simulated as a segment and scaled, so the cost per hour of
  // work stays that of a job that is simulated whole.
  catalog::Provider p = PerMinute();
  p.spot_notice_seconds = 0;
  CostAssumptions a;
  a.spot_mtti_seconds_per_instance = 2 * 3600;
  RunInput in;
  in.trained_parameters = 7e9;
  in.gpus = 8;
  in.hourly_usd = 4;
  in.on_demand_usd_per_hour = 10;
  in.provider = &p;
  in.pricing = PricingModel::kSpot;
  in.work_seconds = 90 * 3600;  // 45 MTTIs: simulated whole
  const RunCost whole = EstimateRunCost(in, a);
  in.work_seconds = 2000 * 3600;
  const RunCost scaled = EstimateRunCost(in, a);
  ASSERT_TRUE(scaled.risk_adjusted);
  EXPECT_NEAR(scaled.expected_usd / 2000, whole.expected_usd / 90, 0.15 * whole.expected_usd / 90);
  EXPECT_GE(scaled.p90_seconds, scaled.total_seconds);
  EXPECT_GT(scaled.expected_interruptions, 500);
}

TEST(RunCostTest, NoCheckpointingLosesHalfTheJobPerFailure) {
  RunInput in;
  in.work_seconds = 1000 * 3600;
  in.gpus = 1024;
  in.nodes = 128;
  in.trained_parameters = 7e10;
  in.hourly_usd = 1;
  in.checkpointing = true;
  const RunCost with = EstimateRunCost(in);
  in.checkpointing = false;
  const RunCost without = EstimateRunCost(in);
  EXPECT_GT(without.total_seconds, 2 * with.total_seconds);
  EXPECT_EQ(without.checkpoint_interval_seconds, 0);
}

}  // namespace
}  // namespace fulcrum::plan

namespace fulcrum::plan {
namespace {

// One P90 (issue 12): the estimator's P90 step-time ratio scales the run's P90 past the start-up,
// on-demand and spot alike; the expected time and cost stay the point estimate's.
TEST(RunCostTest, TheEstimatorBandWidensTheOneP90) {
  const catalog::Provider p = PerMinute();
  CostAssumptions a;
  a.spot_mtti_seconds_per_instance = 20 * 3600;
  RunInput in;
  in.work_seconds = 10 * 3600;
  in.gpus = 8;
  in.trained_parameters = 7e9;
  in.hourly_usd = 10;
  in.on_demand_usd_per_hour = 10;
  in.provider = &p;
  for (PricingModel pricing : {PricingModel::kOnDemand, PricingModel::kSpot}) {
    in.pricing = pricing;
    in.step_p90_ratio = 1;
    const RunCost point = EstimateRunCost(in, a);
    in.step_p90_ratio = 1.5;
    const RunCost banded = EstimateRunCost(in, a);
    EXPECT_DOUBLE_EQ(banded.total_seconds, point.total_seconds);
    EXPECT_DOUBLE_EQ(banded.expected_usd, point.expected_usd);
    EXPECT_NEAR(banded.p90_seconds - a.startup_seconds,
                1.5 * (point.p90_seconds - a.startup_seconds), 1e-6);
    EXPECT_GT(banded.p90_usd, point.p90_usd);
    // An estimator that over-predicts (ratio < 1) never narrows the P90 below the point's.
    in.step_p90_ratio = 0.8;
    EXPECT_DOUBLE_EQ(EstimateRunCost(in, a).p90_seconds, point.p90_seconds);
  }
}

}  // namespace
}  // namespace fulcrum::plan

namespace fulcrum::plan {
namespace {

// A node of 8 GPUs is interrupted as often as the traces show 8-GPU instances are, not as a
// 1-GPU instance (the traces the default MTTI comes from).
TEST(RunCostTest, LargerSpotInstancesAreInterruptedMoreOften) {
  catalog::Provider p = PerMinute();
  p.spot_notice_seconds = 0;
  CostAssumptions a;
  a.spot_mtti_seconds_per_instance = 4 * 3600;
  a.spot_outage_mean_seconds = 600;
  RunInput in;
  in.work_seconds = 40 * 3600;
  in.gpus = 8;
  in.trained_parameters = 7e9;
  in.hourly_usd = 4;
  in.on_demand_usd_per_hour = 10;
  in.provider = &p;
  in.pricing = PricingModel::kSpot;
  const RunCost flat = EstimateRunCost(in, a);
  a.spot_instance_size.rows = {{1, 1, 1, 0.8}, {8, 0.3, 0.7, 0.4}};
  const RunCost sized = EstimateRunCost(in, a);
  EXPECT_GT(sized.expected_interruptions, 2 * flat.expected_interruptions);
  EXPECT_GT(sized.expected_usd, flat.expected_usd);
  in.gpus = 1;  // a 1-GPU instance keeps the base figures
  const RunCost one = EstimateRunCost(in, a);
  a.spot_instance_size.rows.clear();
  EXPECT_DOUBLE_EQ(EstimateRunCost(in, a).expected_interruptions, one.expected_interruptions);
}

// Multi-node spot (issue 12): the simulator preempts a gang at the gang MTTI the traces give,
// not n times as often as one node when the traces show correlated preemptions.
TEST(RunCostTest, MultiNodeSpotUsesTheGangRisk) {
  catalog::Provider p = PerMinute();
  p.spot_notice_seconds = 0;
  CostAssumptions independent;
  independent.spot_mtti_seconds_per_instance = 4 * 3600;
  independent.spot_outage_mean_seconds = 600;
  CostAssumptions correlated = independent;
  for (int n = 1; n <= 4; ++n) correlated.spot_gang.rows.push_back({n, 0.9, 1.0, 0.5});
  RunInput in;
  in.work_seconds = 40 * 3600;
  in.nodes = 4;
  in.gpus = 32;
  in.trained_parameters = 7e9;
  in.hourly_usd = 4;
  in.on_demand_usd_per_hour = 10;
  in.provider = &p;
  in.pricing = PricingModel::kSpot;
  const RunCost gang = EstimateRunCost(in, correlated);
  const RunCost alone = EstimateRunCost(in, independent);
  // Preemptions over the run: about work / MTTI (4 h x 0.9 vs 4 h / 4).
  EXPECT_LT(gang.expected_interruptions, 0.5 * alone.expected_interruptions);
  EXPECT_LT(gang.total_seconds, alone.total_seconds);
  // Beyond the table: independent groups of its largest gang (8 nodes = 2 groups of 4).
  in.nodes = 8;
  in.gpus = 64;
  const RunCost eight = EstimateRunCost(in, correlated);
  EXPECT_GT(eight.expected_interruptions / std::max(1.0, eight.total_seconds),
            gang.expected_interruptions / std::max(1.0, gang.total_seconds));
}

}  // namespace
}  // namespace fulcrum::plan
