#include "spot/interval.h"

#include <gtest/gtest.h>

namespace fulcrum::spot {
namespace {

constexpr double kMinute = 60;
constexpr double kHour = 3600;

// Test numbers from the calibration README (Daly 2006, eq. 37): delta = 5 min, M = 24 h / 6 h /
// 15 min -> about 117 / 57 / 9.1 min; Young: 120 / 60 / 12.25 min.
TEST(IntervalTest, DalyMatchesPublishedExamples) {
  EXPECT_NEAR(DalyIntervalSeconds(5 * kMinute, 24 * kHour) / kMinute, 117, 0.5);
  EXPECT_NEAR(DalyIntervalSeconds(5 * kMinute, 6 * kHour) / kMinute, 57, 0.5);
  EXPECT_NEAR(DalyIntervalSeconds(5 * kMinute, 15 * kMinute) / kMinute, 9.1, 0.05);
}

TEST(IntervalTest, YoungMatchesPublishedExamples) {
  EXPECT_NEAR(YoungIntervalSeconds(5 * kMinute, 24 * kHour) / kMinute, 120, 1e-9);
  EXPECT_NEAR(YoungIntervalSeconds(5 * kMinute, 6 * kHour) / kMinute, 60, 1e-9);
  EXPECT_NEAR(YoungIntervalSeconds(5 * kMinute, 15 * kMinute) / kMinute, 12.247, 0.001);
}

TEST(IntervalTest, DalyFallsBackToMtbfWhenCheckpointIsLong) {
  EXPECT_DOUBLE_EQ(DalyIntervalSeconds(2 * kHour, 1 * kHour), 1 * kHour);
  EXPECT_DOUBLE_EQ(DalyIntervalSeconds(3 * kHour, 1 * kHour), 1 * kHour);
}

TEST(IntervalTest, OverheadFractionFirstOrder) {
  // 5/120 + (60 + 10)/1440 by hand.
  EXPECT_NEAR(OverheadFraction(120 * kMinute, 5 * kMinute, 10 * kMinute, 24 * kHour),
              5.0 / 120 + 70.0 / 1440, 1e-12);
}

TEST(IntervalTest, DalyMinimisesFirstOrderOverheadNearYoung) {
  const double delta = 5 * kMinute, m = 24 * kHour;
  const double young = YoungIntervalSeconds(delta, m);
  // Young's interval is the exact minimiser of the first-order overhead.
  EXPECT_LT(OverheadFraction(young, delta, 0, m), OverheadFraction(young * 1.2, delta, 0, m));
  EXPECT_LT(OverheadFraction(young, delta, 0, m), OverheadFraction(young * 0.8, delta, 0, m));
}

TEST(IntervalTest, CheckpointCostFromModel) {
  // Calibration README: 7 B params x 14 bytes = 98 GB; the DCP blog's sync save took 148.8 s.
  auto cost = CheckpointCostSeconds(7e9, 14, 98e9 / 148.8);
  ASSERT_TRUE(cost.ok()) << cost.status().ToString();
  EXPECT_NEAR(*cost, 148.8, 1e-9);
  auto gp3 = CheckpointCostSeconds(7e9, 14, 125.0 * 1024 * 1024);
  ASSERT_TRUE(gp3.ok());
  EXPECT_NEAR(*gp3, 98e9 / 131072000.0, 1e-9);
}

TEST(IntervalTest, CheckpointCostRejectsNonPositive) {
  auto bad = CheckpointCostSeconds(7e9, 14, 0);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("write bandwidth"), std::string::npos);
  EXPECT_FALSE(CheckpointCostSeconds(-1, 14, 1e9).ok());
  EXPECT_FALSE(CheckpointCostSeconds(7e9, 0, 1e9).ok());
}

TEST(IntervalTest, NoticeCoversCheckpointOnlyWhenItFits) {
  NoticeSettings aws{120, 5, 10};  // AWS: 120 s notice, metadata polled every 5 s
  EXPECT_DOUBLE_EQ(UsableNoticeSeconds(aws), 105);
  EXPECT_TRUE(NoticeCoversCheckpoint(aws, 105));
  EXPECT_FALSE(NoticeCoversCheckpoint(aws, 106));
  NoticeSettings none{0, 0, 0};
  EXPECT_FALSE(NoticeCoversCheckpoint(none, 0));
  NoticeSettings short_notice{10, 5, 10};
  EXPECT_DOUBLE_EQ(UsableNoticeSeconds(short_notice), 0);
}

}  // namespace
}  // namespace fulcrum::spot
