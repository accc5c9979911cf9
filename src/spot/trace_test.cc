#include "spot/trace.h"

#include <gtest/gtest.h>

#include "spot/preemption.h"

namespace fulcrum::spot {
namespace {

std::string ErrorOf(std::string_view text) {
  auto trace = ParseTrace(text, "t.json");
  EXPECT_FALSE(trace.ok());
  return trace.ok() ? "" : trace.status().message();
}

TEST(TraceTest, ParsesPublicFormat) {
  auto trace = ParseTrace(R"({"metadata": {"gap_seconds": 600}, "data": [3, 0, 1, 0.0]})", "t");
  ASSERT_TRUE(trace.ok()) << trace.status().ToString();
  EXPECT_DOUBLE_EQ(trace->gap_seconds, 600);
  EXPECT_EQ(trace->counts, (std::vector<int64_t>{3, 0, 1, 0}));
}

TEST(TraceTest, SyntaxErrorNamesLineAndColumn) {
  std::string msg = ErrorOf("{\"metadata\": {\"gap_seconds\": 60},\n \"data\": [1,\n]}");
  EXPECT_EQ(msg.rfind("t.json:3:1: not valid JSON", 0), 0u) << msg;
}

TEST(TraceTest, WrongValuesNameTheField) {
  EXPECT_EQ(ErrorOf(R"({"metadata": {"gap_seconds": 0}, "data": [1]})"),
            "t.json: metadata.gap_seconds: expected a positive number of seconds, found number 0");
  EXPECT_EQ(ErrorOf(R"({"metadata": {"gap_seconds": "60"}, "data": [1]})"),
            "t.json: metadata.gap_seconds: expected a positive number of seconds, found string "
            "\"60\"");
  EXPECT_EQ(ErrorOf(R"({"metadata": {"gap_seconds": 60}, "data": [1, 2, -1]})"),
            "t.json: data[2]: expected a non-negative integer count, found number -1");
  EXPECT_EQ(ErrorOf(R"({"metadata": {"gap_seconds": 60}, "data": [1, 2.5]})"),
            "t.json: data[1]: expected a non-negative integer count, found number 2.5");
  EXPECT_EQ(ErrorOf(R"({"metadata": {"gap_seconds": 60}, "data": []})"),
            "t.json: data: expected a non-empty array of available counts, found array []");
  EXPECT_EQ(ErrorOf(R"({"metadata": {"gap_seconds": 60}})"),
            "t.json: data: missing (expected an array of available counts)");
  EXPECT_EQ(ErrorOf(R"({"data": [1]})"),
            "t.json: metadata: missing (expected {\"gap_seconds\": N})");
  EXPECT_EQ(ErrorOf("[1, 2]"),
            "t.json: top level: expected an object {\"metadata\": {\"gap_seconds\": N}, \"data\": "
            "[...]}, found array [1,2]");
}

TEST(TraceTest, LoadReportsMissingFile) {
  auto trace = LoadTrace("/nonexistent/trace.json");
  ASSERT_FALSE(trace.ok());
  EXPECT_EQ(trace.status().code(), StatusCode::kNotFound);
}

Trace MakeTrace(std::vector<int64_t> counts, double gap = 60) {
  Trace t;
  t.gap_seconds = gap;
  t.counts = std::move(counts);
  return t;
}

TEST(TraceModelTest, RunsMergeAcrossTheWrap) {
  // Available [0, 120), not [120, 240), available [240, 300): one interruption per period
  // after 180 s of capacity (the last run continues into the first).
  PreemptionModel model = PreemptionModel::FromTrace(MakeTrace({1, 1, 0, 0, 1}));
  EXPECT_DOUBLE_EQ(model.MeanTimeToInterruptionSeconds(), 180);
  EXPECT_DOUBLE_EQ(model.AvailableFraction(), 0.6);
  EXPECT_EQ(PreemptionModel::FromTrace(MakeTrace({1, 1})).MeanTimeToInterruptionSeconds(), kNever);
  EXPECT_EQ(PreemptionModel::FromTrace(MakeTrace({0, 0})).MeanTimeToInterruptionSeconds(), 0);
}

TEST(TraceModelTest, CursorAlternatesWithTraceDurations) {
  PreemptionModel model = PreemptionModel::FromTrace(MakeTrace({1, 1, 0, 0, 1}));
  for (uint64_t seed = 1; seed < 50; ++seed) {
    SplitMix64 rng(seed);
    AvailabilityCursor cursor(model, rng);
    double last = 0;
    bool state = cursor.available();
    double first_change = cursor.next_change_seconds();
    EXPECT_GT(first_change, 0);
    EXPECT_LE(first_change, 180 + 1e-9);
    for (int step = 0; step < 6; ++step) {
      double change = cursor.next_change_seconds();
      double length = change - last;
      if (step > 0) {
        EXPECT_NEAR(length, state ? 180 : 120, 1e-9) << "seed " << seed;
      }
      last = change;
      cursor.Advance();
      EXPECT_NE(cursor.available(), state);
      state = cursor.available();
    }
  }
}

TEST(TraceModelTest, AlwaysAvailableTraceNeverChanges) {
  PreemptionModel model = PreemptionModel::FromTrace(MakeTrace({2, 5, 1}));
  SplitMix64 rng(7);
  AvailabilityCursor cursor(model, rng);
  EXPECT_TRUE(cursor.available());
  EXPECT_EQ(cursor.next_change_seconds(), kNever);
}

TEST(ExponentialModelTest, RejectsBadMean) {
  EXPECT_FALSE(PreemptionModel::Exponential(0).ok());
  EXPECT_FALSE(PreemptionModel::Exponential(3600, -1).ok());
  EXPECT_TRUE(PreemptionModel::Exponential(3600, 0).ok());
}

TEST(ExponentialModelTest, MeanAvailablePeriodMatches) {
  auto model = PreemptionModel::Exponential(3600, 600);
  ASSERT_TRUE(model.ok());
  SplitMix64 rng(42);
  AvailabilityCursor cursor(*model, rng);
  double up = 0, down = 0, last = 0;
  const int periods = 200000;
  for (int i = 0; i < 2 * periods; ++i) {
    double change = cursor.next_change_seconds();
    (cursor.available() ? up : down) += change - last;
    last = change;
    cursor.Advance();
  }
  // Standard error of a mean of 200000 exponentials is mean / 447: allow 4 of them.
  EXPECT_NEAR(up / periods, 3600, 4 * 3600 / 447.0);
  EXPECT_NEAR(down / periods, 600, 4 * 600 / 447.0);
}

}  // namespace
}  // namespace fulcrum::spot
