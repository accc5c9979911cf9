#include "plan/cost.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <unistd.h>

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

TEST(RunCostTest, CheckpointsEveryThirtyMinutesUnlessAWriteCostsMoreThanFivePercent) {
  const catalog::Provider p = PerMinute();
  CostAssumptions a;
  a.checkpoint_write_bytes_per_second_per_node = 4e9;  // 7 B x 14 B / 4 GB/s = 24.5 s
  RunInput in;
  in.work_seconds = 100 * 3600;
  in.nodes = 1;
  in.gpus = 8;
  in.trained_parameters = 7e9;
  in.hourly_usd = 10;
  in.provider = &p;
  const RunCost cost = EstimateRunCost(in, a);
  const double delta = 7e9 * 14 / 4e9;
  const double mtbf = 3600.0 / (a.interruptions_per_gpu_hour * 8 + a.interruptions_per_node_hour);
  EXPECT_NEAR(cost.checkpoint_write_seconds, delta, 1e-9);
  // Young's optimum for hardware failures alone is over 8 hours; the cadence is 30 minutes.
  ASSERT_GT(std::sqrt(2 * delta * mtbf), 8 * 3600);
  EXPECT_NEAR(cost.checkpoint_interval_seconds, 1800, 1e-9);
  // The quote includes the writes: 100 h / 30 min = 200 writes of delta.
  EXPECT_NEAR(cost.breakdown.checkpoint_usd, 200 * delta / 3600 * 10, 1e-6);
  EXPECT_GT(cost.total_seconds, in.work_seconds + a.startup_seconds + 200 * delta);
  EXPECT_LT(cost.total_seconds, in.work_seconds * 1.05);
  EXPECT_GE(cost.p90_seconds, cost.total_seconds);
  // Billed per minute: cost = ceil(total / 60) minutes x $10/h.
  EXPECT_NEAR(cost.expected_usd, std::ceil(cost.total_seconds / 60 - 1e-9) * 60 / 3600 * 10, 1e-9);
  EXPECT_TRUE(cost.risk_adjusted);
  // At 1 GB/s one write (98 s) is over 5 % of 30 minutes: the interval where it is 5 %.
  a.checkpoint_write_bytes_per_second_per_node = 1e9;
  EXPECT_NEAR(EstimateRunCost(in, a).checkpoint_interval_seconds, 98.0 / 0.05, 1e-6);
  // --checkpoint-every wins.
  in.checkpoint_every_seconds = 2 * 3600;
  EXPECT_NEAR(EstimateRunCost(in, a).checkpoint_interval_seconds, 7200, 1e-9);
}

// A node that writes its checkpoint to a faster target (catalog/storage.csv row for its
// provider/instance) pauses less per write and may write more often: the gp3 default (125 MiB/s)
// set a 94 GB checkpoint at 720 s and a 4-hour cadence on every provider.
TEST(RunCostTest, AnInstancesOwnWriteSpeedSetsTheCheckpointPause) {
  const catalog::Provider p = PerMinute();
  CostAssumptions a;
  a.checkpoint_write_bytes_per_second_per_node = 131072000;  // ebs-gp3, the default kind
  RunInput in;
  in.work_seconds = 8 * 3600;
  in.nodes = 1;
  in.gpus = 8;
  in.trained_parameters = 6.74e9;
  in.hourly_usd = 20;
  in.provider = &p;
  const RunCost fallback = EstimateRunCost(in, a);
  EXPECT_NEAR(fallback.checkpoint_write_seconds, 6.74e9 * 14 / 131072000, 1e-6);  // ~720 s
  EXPECT_NEAR(fallback.checkpoint_interval_seconds, fallback.checkpoint_write_seconds / 0.05,
              1e-6);  // 4 h: one write may cost 5 % of the interval
  in.checkpoint_write_bytes_per_second_per_node = 4e9;
  const RunCost own = EstimateRunCost(in, a);
  EXPECT_NEAR(own.checkpoint_write_seconds, 6.74e9 * 14 / 4e9, 1e-6);  // ~24 s
  EXPECT_NEAR(own.checkpoint_interval_seconds, 1800, 1e-9);            // the 30-minute cadence
  EXPECT_LT(own.breakdown.checkpoint_usd, fallback.breakdown.checkpoint_usd);
  EXPECT_LT(own.total_seconds, fallback.total_seconds);
  // Per node: two nodes write their halves at once.
  in.nodes = 2;
  in.gpus = 16;
  EXPECT_NEAR(EstimateRunCost(in, a).checkpoint_write_seconds, 6.74e9 * 14 / 8e9, 1e-6);
}

// Storage the spec does not name: a checkpointing job stores at least its checkpoint while it
// runs; a spec that names checkpoint storage (or a flat storage figure) is priced as written.
TEST(StorageTest, ACheckpointingRunStoresItsCheckpoint) {
  CostAssumptions a;
  spot::StoragePrice priced;
  priced.provider = "acme";
  priced.checkpoint_usd_per_gb_month = 0.02;
  a.storage_prices = {priced};
  PlanSpec spec;
  bool assumed = false;
  StorageNeeds n = PlannedStorageNeeds(spec, 6.74e9, a, &assumed);
  EXPECT_TRUE(assumed);
  EXPECT_NEAR(n.checkpoint_gb, 6.74e9 * 14 / 1e9, 1e-9);
  std::vector<std::string> missing;
  const ExtraCosts acme = ExtrasFor(spec.extra, n, "acme", a, &missing);
  EXPECT_TRUE(missing.empty());
  EXPECT_NEAR(acme.priced_storage_usd_per_month, n.checkpoint_gb * 0.02, 1e-9);
  // A provider without a sourced checkpoint price is named, not silently priced at 0.
  const ExtraCosts other = ExtrasFor(spec.extra, n, "other", a, &missing);
  EXPECT_EQ(missing, std::vector<std::string>{"checkpoint storage"});
  EXPECT_EQ(other.priced_storage_usd_per_month, 0);
  spec.storage.checkpoint_gb = 500;
  EXPECT_EQ(PlannedStorageNeeds(spec, 6.74e9, a, &assumed).checkpoint_gb, 500);
  EXPECT_FALSE(assumed);
  spec.storage.checkpoint_gb = 0;
  spec.extra.storage_gb = 20000;  // `costs: {storage_gb}` already counts the checkpoints
  EXPECT_EQ(PlannedStorageNeeds(spec, 6.74e9, a, &assumed).checkpoint_gb, 0);
  spec.extra.storage_gb = 0;
  spec.checkpointing = false;
  EXPECT_EQ(PlannedStorageNeeds(spec, 6.74e9, a, &assumed).checkpoint_gb, 0);
  EXPECT_FALSE(assumed);
}

TEST(RunCostTest, YoungWhenShorterThanThirtyMinutes) {
  CostAssumptions a;
  // 1 s writes with a failure every 10 minutes: Young = sqrt(2 x 1 x 600) ~ 35 s.
  EXPECT_NEAR(PlannedCheckpointIntervalSeconds(1, 600, 1e6, a), std::sqrt(1200.0), 1e-9);
  // Capped at the work.
  EXPECT_NEAR(PlannedCheckpointIntervalSeconds(1, 1e9, 600, a), 600, 1e-9);
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
  // Spot means spot: a deadline changes nothing, the policy waits through every preemption.
  EXPECT_EQ(spot.spot_policy, "spot-only");
  in.deadline_seconds = 60 * 3600;
  const RunCost spot_deadline = EstimateRunCost(in, a);
  EXPECT_EQ(spot_deadline.spot_policy, "spot-only");
  EXPECT_DOUBLE_EQ(spot_deadline.total_seconds, spot.total_seconds);
  EXPECT_DOUBLE_EQ(spot_deadline.expected_usd, spot.expected_usd);
  // Spot with fallback: Uniform Progress with the on-demand safety net.
  in.pricing = PricingModel::kSpotWithFallback;
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
  EXPECT_GT(b.restarts_usd, 0);
  EXPECT_NEAR(b.compute_usd + b.storage_usd + b.egress_usd + b.failures_usd + b.restarts_usd +
                  b.checkpoint_usd + b.commitment_usd,
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

// A tight deadline: spot-only waits for spot and may miss it; spot with fallback switches to
// on-demand (at the on-demand price) and meets it.
TEST(RunCostTest, OnlyTheFallbackModelSwitchesToOnDemandForADeadline) {
  catalog::Provider p = PerMinute();
  p.spot_notice_seconds = 0;
  CostAssumptions a;
  a.spot_mtti_seconds_per_instance = 5 * 3600;
  a.spot_outage_mean_seconds = 5 * 3600;
  RunInput in;
  in.work_seconds = 48 * 3600;
  in.gpus = 8;
  in.trained_parameters = 1e9;
  in.hourly_usd = 4;
  in.on_demand_usd_per_hour = 10;
  in.provider = &p;
  in.deadline_seconds = 52 * 3600;
  in.pricing = PricingModel::kSpot;
  const RunCost only = EstimateRunCost(in, a);
  in.pricing = PricingModel::kSpotWithFallback;
  const RunCost fallback = EstimateRunCost(in, a);
  EXPECT_EQ(only.spot_policy, "spot-only");
  EXPECT_EQ(fallback.spot_policy, "uniform-progress");
  EXPECT_LT(only.deadline_met_fraction, 0.5);
  EXPECT_GT(fallback.deadline_met_fraction, 0.99);
  EXPECT_GT(only.total_seconds, fallback.total_seconds);
}

const std::string kCatalogDir = std::string(FULCRUM_SOURCE_DIR) + "/catalog";

RunInput LongRun(int gpus, double days) {
  RunInput in;
  in.work_seconds = days * 86400;
  in.gpus = gpus;
  in.nodes = gpus / 8;
  in.trained_parameters = 7e9;
  in.hourly_usd = 8 * 2;
  return in;
}

// The published table loads through the catalog's table reader, every row sourced, and its
// end-to-end / steady-state ratios are what the rows' figures give.
TEST(GoodputTest, PublishedRunsAreSourcedRows) {
  Result<std::vector<GoodputRun>> runs = LoadGoodputRuns(kCatalogDir);
  ASSERT_TRUE(runs.ok()) << runs.status().message();
  ASSERT_GE(runs->size(), 3u);
  for (const GoodputRun& r : *runs) {
    EXPECT_NE(r.source.find("https://"), std::string::npos) << r.run;
    EXPECT_LE(r.steady_days, r.end_to_end_days) << r.run;
  }
}

// Issue 25: a 512-GPU 19-day run was quoted with about 1 % lost; published runs of a few hundred
// GPUs ran at 0.76-0.86 of their steady rate end to end. The quote now includes those losses,
// and a one-GPU afternoon does not pay them.
TEST(GoodputTest, LongMultiNodeRunsLoseWhatPublishedRunsLost) {
  std::string note;
  const CostAssumptions a = LoadCostAssumptions(kCatalogDir, &note);
  ASSERT_GT(a.goodput_extra_overhead, 0) << note;
  const RunCost big = EstimateRunCost(LongRun(512, 19), a);
  EXPECT_LE(big.goodput_fraction, 0.95);
  EXPECT_GT(big.goodput_fraction, 0.6);
  EXPECT_TRUE(big.goodput_published);
  EXPECT_GT(big.breakdown.restarts_usd, 0);
  // Without the table: hardware interruptions only, the old ~1 %.
  const RunCost hardware_only = EstimateRunCost(LongRun(512, 19), CostAssumptions{});
  EXPECT_GT(hardware_only.goodput_fraction, 0.97);
  RunInput small = LongRun(8, 2.0 / 24);
  small.nodes = 1;
  small.gpus = 1;
  // A one-GPU 2-hour job: the start-up and one checkpoint write are its losses, not the
  // published runs' (those scale with the GPUs up to the smallest published run's).
  EXPECT_GT(EstimateRunCost(small, a).goodput_fraction, 0.8);
  EXPECT_LT(EstimateRunCost(small, a).other_loss_seconds, 0.001 * small.work_seconds);
}

// The fit uses every row (the mean of what the hardware model leaves unexplained), not one
// row's figure: moving one row moves the fit by that row's share.
TEST(GoodputTest, FitIsTheMeanOverRowsAndLeaveOneOutIsReported) {
  Result<std::vector<GoodputRun>> runs = LoadGoodputRuns(kCatalogDir);
  ASSERT_TRUE(runs.ok());
  CostAssumptions base;
  CostAssumptions fit = base;
  FitGoodput(*runs, fit);
  std::vector<GoodputRun> moved = *runs;
  moved[0].end_to_end_days += 0.1 * moved[0].steady_days;  // 0.1 more overhead in row 0
  CostAssumptions fit_moved = base;
  FitGoodput(moved, fit_moved);
  EXPECT_NEAR(fit_moved.goodput_extra_overhead - fit.goodput_extra_overhead,
              0.1 / static_cast<double>(runs->size()), 1e-9);
  // Leave-one-out: each run's quote from the others (docs/ACCURACY.md lists the figures).
  for (size_t i = 0; i < runs->size(); ++i) {
    std::vector<GoodputRun> others = *runs;
    others.erase(others.begin() + static_cast<long>(i));
    CostAssumptions loo = base;
    FitGoodput(others, loo);
    const GoodputRun& r = (*runs)[i];
    const double quoted = QuotePublishedRun(r, loo).goodput_fraction;
    EXPECT_GT(quoted, 0.5) << r.run;
    EXPECT_LE(quoted, 1.0) << r.run;
    std::printf("leave-one-out %s: published %.3f, quoted %.3f (fit on all: %.3f)\n", r.run.c_str(),
                r.steady_days / r.end_to_end_days, quoted,
                QuotePublishedRun(r, fit).goodput_fraction);
  }
}

// A broken table is not silently ignored: the note names the file and line, and the quote keeps
// the hardware model alone.
TEST(GoodputTest, ABrokenTableIsNamedInTheNote) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("goodput-bad-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  {
    std::ofstream out(dir / "goodput.csv");
    out << "run,gpus,trained_parameters,steady_days,end_to_end_days,source,note\n"
        << "X,384,1e9,10,9,https://example.org,end before steady\n";
  }
  std::string note;
  const CostAssumptions a = LoadCostAssumptions(dir.string(), &note);
  EXPECT_EQ(a.goodput_extra_overhead, 0);
  EXPECT_NE(note.find("goodput.csv:2"), std::string::npos) << note;
  EXPECT_NE(note.find("end_to_end_days"), std::string::npos) << note;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace fulcrum::plan
