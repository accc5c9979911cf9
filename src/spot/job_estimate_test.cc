#include "spot/job_estimate.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "spot/spot_catalog.h"

namespace fulcrum::spot {
namespace {

constexpr double kHour = 3600;

SpotJobInput PaperInput() {
  SpotJobInput in;
  in.work_seconds = 48 * kHour;
  in.deadline_seconds = 52 * kHour;
  in.on_demand_usd_per_hour = 3.06;
  in.spot_usd_per_hour = 0.9731;
  in.mtti_seconds = 6 * kHour;
  in.changeover_seconds = 0.2 * kHour;
  in.checkpoint_cost_seconds = 150;
  in.notice = {120, 5, 10};
  in.minimum_billed_seconds = 60;
  return in;
}

TEST(EstimateTest, DeadlineJobUsesUniformProgressAndDaly) {
  auto est = EstimateSpotJob(PaperInput());
  ASSERT_TRUE(est.ok()) << est.status().ToString();
  EXPECT_EQ(est->policy, "uniform-progress");
  ASSERT_TRUE(est->checkpoint_interval_seconds.has_value());
  EXPECT_DOUBLE_EQ(*est->checkpoint_interval_seconds, DalyIntervalSeconds(150, 6 * kHour));
  EXPECT_DOUBLE_EQ(est->deadline_met_fraction, 1);
  EXPECT_LT(est->expected_cost_usd, 48 * 3.06);
  EXPECT_GT(est->expected_cost_usd, 48 * 0.9731);
  EXPECT_GE(est->p90_cost_usd, est->expected_cost_usd * 0.9);
  EXPECT_LE(est->p90_hours, 52 + 1e-6);
}

TEST(EstimateTest, NoDeadlineIsGreedyAndDeterministic) {
  SpotJobInput in = PaperInput();
  in.deadline_seconds.reset();
  auto a = EstimateSpotJob(in);
  auto b = EstimateSpotJob(in);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->policy, "greedy");
  EXPECT_EQ(a->expected_cost_usd, b->expected_cost_usd);
  EXPECT_GT(a->expected_hours, 48);  // preemptions cost time
  EXPECT_GT(a->preemptions_mean, 5);
}

TEST(EstimateTest, NoticeThatFitsMeansNoPeriodicCheckpoints) {
  SpotJobInput in = PaperInput();
  in.checkpoint_cost_seconds = 60;
  auto est = EstimateSpotJob(in);
  ASSERT_TRUE(est.ok());
  EXPECT_FALSE(est->checkpoint_interval_seconds.has_value());
}

TEST(EstimateTest, RejectsMissingMtti) {
  SpotJobInput in = PaperInput();
  in.mtti_seconds = 0;
  EXPECT_FALSE(EstimateSpotJob(in).ok());
}

TEST(EstimateTest, DefaultMttiComesFromTheDefaultBand) {
  auto mtti = DefaultMttiSeconds(std::string(FULCRUM_SOURCE_DIR) + "/catalog");
  ASSERT_TRUE(mtti.ok()) << mtti.status().ToString();
  // Band >20 %/month, 25 % assumed: 730 h / -ln(0.75) = 2537.5 h.
  EXPECT_NEAR(*mtti / kHour, 2537.5, 0.1);
}

TEST(EstimateTest, AutoIntervalIsNeverForCoveredOrPreemptionFreeJobs) {
  NoticeSettings aws{120, 5, 10};
  EXPECT_EQ(AutoCheckpointIntervalSeconds(60, 6 * kHour, aws), kNever);
  EXPECT_EQ(AutoCheckpointIntervalSeconds(300, kNever, aws), kNever);
  EXPECT_DOUBLE_EQ(AutoCheckpointIntervalSeconds(300, 6 * kHour, aws),
                   DalyIntervalSeconds(300, 6 * kHour));
}

}  // namespace
}  // namespace fulcrum::spot

namespace fulcrum::spot {
namespace {

TEST(EstimateTest, DefaultSpotRiskIsCalibratedOnThePublicTraces) {
  // The issue: without a band the default MTTI was 105.7 days, so spot P90 = mean. The public
  // V100 traces (catalog/spot-traces) show preemptions every few hours.
  Result<SpotRisk> risk = CalibratedSpotRisk(std::string(FULCRUM_SOURCE_DIR) + "/catalog");
  ASSERT_TRUE(risk.ok()) << risk.status().message();
  EXPECT_EQ(risk->traces, 4);
  EXPECT_GT(risk->mtti_seconds, 600);
  EXPECT_LT(risk->mtti_seconds, 24 * 3600.0);
  EXPECT_GT(risk->outage_mean_seconds, 0);
  EXPECT_FALSE(CalibratedSpotRisk("/nonexistent").ok());
}

}  // namespace
}  // namespace fulcrum::spot

namespace fulcrum::spot {
namespace {

// Issue 12, multi-node spot: a gang of n nodes runs while n instances are obtainable. A
// hand-made trace (ticks of 100 s): counts 2 2 1 1 2 2 0 0 -> one node is up 6 ticks with one
// interruption (MTTI 600 s, outage 200 s), two nodes up 4 ticks with two (MTTI 200 s, outage
// 200 s).
TEST(GangRiskTest, GangsComeFromTheAvailabilityCounts) {
  const std::string dir = ::testing::TempDir() + "/gang-catalog";
  std::filesystem::create_directories(dir + "/spot-traces/availability-16node");
  std::ofstream(dir + "/spot-traces/availability-16node/a.json")
      << R"({"metadata": {"gap_seconds": 100}, "data": [2, 2, 1, 1, 2, 2, 0, 0]})";
  Result<RiskScaleTable> table = CalibratedGangRisk(dir);
  ASSERT_TRUE(table.ok()) << table.status().message();
  ASSERT_EQ(table->rows.size(), 2u);
  EXPECT_DOUBLE_EQ(table->rows[0].mtti_factor, 1);
  EXPECT_DOUBLE_EQ(table->rows[0].available_fraction, 0.75);
  EXPECT_DOUBLE_EQ(table->rows[1].mtti_factor, 200.0 / 600.0);
  EXPECT_DOUBLE_EQ(table->rows[1].outage_factor, 1);
  EXPECT_DOUBLE_EQ(table->rows[1].available_fraction, 0.5);
  // Beyond the traces' largest gang: independent groups of it.
  const RiskScale four = GangRiskFor(*table, 4);
  EXPECT_DOUBLE_EQ(four.mtti_factor, 200.0 / 600.0 / 2);
  EXPECT_DOUBLE_EQ(four.available_fraction, 0.25);
  std::filesystem::remove_all(dir);
  EXPECT_FALSE(CalibratedGangRisk(dir).ok());
  // No traces: independent nodes.
  EXPECT_DOUBLE_EQ(GangRiskFor(RiskScaleTable{}, 8).mtti_factor, 1.0 / 8);
}

// Larger instances: the same zone traced for 1-GPU and 8-GPU instances. Hand-made: the 1-GPU
// instance is up 6 of 8 ticks with one interruption, the 8-GPU one 2 of 8 with two (MTTI 600 s
// vs 100 s, outage 200 s vs 300 s); 2 and 4 GPUs interpolate in log2(GPUs).
TEST(InstanceSizeRiskTest, SizesComeFromThePairedTraces) {
  const std::string dir = ::testing::TempDir() + "/size-catalog";
  std::filesystem::create_directories(dir + "/spot-traces/availability-1node");
  std::ofstream(dir + "/spot-traces/availability-1node/zone_v100_1.json")
      << R"({"metadata": {"gap_seconds": 100}, "data": [1, 1, 1, 1, 1, 1, 0, 0]})";
  std::ofstream(dir + "/spot-traces/availability-1node/zone_v100_8.json")
      << R"({"metadata": {"gap_seconds": 100}, "data": [1, 0, 0, 0, 1, 0, 0, 0]})";
  Result<RiskScaleTable> table = CalibratedInstanceSizeRisk(dir);
  ASSERT_TRUE(table.ok()) << table.status().message();
  ASSERT_EQ(table->rows.size(), 2u);
  EXPECT_EQ(table->rows[1].count, 8);
  EXPECT_DOUBLE_EQ(table->rows[1].mtti_factor, 100.0 / 600.0);
  EXPECT_DOUBLE_EQ(table->rows[1].outage_factor, 300.0 / 200.0);
  EXPECT_DOUBLE_EQ(InstanceSizeRiskFor(*table, 1).mtti_factor, 1);
  EXPECT_DOUBLE_EQ(InstanceSizeRiskFor(*table, 8).mtti_factor, 100.0 / 600.0);
  EXPECT_NEAR(InstanceSizeRiskFor(*table, 2).mtti_factor, std::pow(100.0 / 600.0, 1.0 / 3), 1e-12);
  EXPECT_DOUBLE_EQ(InstanceSizeRiskFor(*table, 16).mtti_factor, 100.0 / 600.0);  // nearest
  EXPECT_DOUBLE_EQ(InstanceSizeRiskFor(RiskScaleTable{}, 8).mtti_factor, 1);
  std::ofstream(dir + "/spot-traces/availability-1node/zone_v100_x.json")
      << R"({"metadata": {"gap_seconds": 100}, "data": [1]})";
  EXPECT_FALSE(CalibratedInstanceSizeRisk(dir).ok());  // no size in the name
  std::filesystem::remove_all(dir);
}

// The shipped paired traces: 8-GPU instances are interrupted more often than 1-GPU ones.
TEST(InstanceSizeRiskTest, TheShippedTracesInterruptLargeInstancesMoreOften) {
  Result<RiskScaleTable> table =
      CalibratedInstanceSizeRisk(std::string(FULCRUM_SOURCE_DIR) + "/catalog");
  ASSERT_TRUE(table.ok()) << table.status().message();
  ASSERT_EQ(table->rows.size(), 2u);
  EXPECT_LT(table->rows[1].mtti_factor, 1);
  EXPECT_LT(table->rows[1].available_fraction, table->rows[0].available_fraction);
}

// The shipped 16-node traces: preemptions are correlated across instances (a zone loses its
// capacity at once), so a gang's MTTI falls far more slowly than 1/n, and never rises with n
// by more than the traces' noise; availability falls with n.
TEST(GangRiskTest, TheShippedTracesShowCorrelatedPreemptions) {
  Result<RiskScaleTable> table = CalibratedGangRisk(std::string(FULCRUM_SOURCE_DIR) + "/catalog");
  ASSERT_TRUE(table.ok()) << table.status().message();
  ASSERT_EQ(table->rows.size(), 16u);
  const RiskScale& sixteen = table->rows.back();
  EXPECT_GT(sixteen.mtti_factor, 4.0 / 16);
  EXPECT_LT(sixteen.mtti_factor, 1.0);
  EXPECT_LT(sixteen.available_fraction, table->rows.front().available_fraction);
  EXPECT_NE(table->source.find("spot-traces"), std::string::npos);
}

}  // namespace
}  // namespace fulcrum::spot
