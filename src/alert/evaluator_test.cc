#include "alert/evaluator.h"

#include <gtest/gtest.h>

#include "alert/rules_yaml.h"

namespace fulcrum::alert {
namespace {

constexpr double kT0 = 1.8e9;  // an arbitrary unix time

Rule HotRule(double for_seconds, double keep_firing_for_seconds) {
  Rule rule;
  rule.name = "GpuTooHot";
  rule.metric = "gpu_temperature_celsius";
  rule.op = CompareOp::kGreater;
  rule.threshold = 85;
  rule.for_seconds = for_seconds;
  rule.keep_firing_for_seconds = keep_firing_for_seconds;
  rule.severity = "critical";
  rule.annotations["summary"] = "GPU {{ $labels.gpu }} at {{ $value }} C";
  return rule;
}

// Feeds one temperature sample per second for GPU 0, starting at second `start`.
std::vector<Transition> Feed(Evaluator& evaluator, const std::vector<double>& temperatures,
                             double start = 0, int gpu = 0) {
  std::vector<Transition> all;
  for (size_t i = 0; i < temperatures.size(); ++i) {
    Sample sample{"gpu_temperature_celsius", gpu, temperatures[i], kT0 + start + i};
    std::vector<Transition> got = evaluator.Evaluate({&sample, 1});
    all.insert(all.end(), got.begin(), got.end());
  }
  return all;
}

TEST(EvaluatorTest, PendingThenFiringAfterForThenResolved) {
  Evaluator evaluator({HotRule(/*for=*/5, /*keep=*/0)});
  // Seconds 0..9: hot from second 2; cool again at second 9.
  auto got = Feed(evaluator, {70, 80, 90, 91, 92, 93, 94, 95, 96, 60});
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].from, AlertStatus::kInactive);
  EXPECT_EQ(got[0].to, AlertStatus::kPending);
  EXPECT_DOUBLE_EQ(got[0].at, kT0 + 2);
  EXPECT_EQ(got[1].to, AlertStatus::kFiring);
  EXPECT_DOUBLE_EQ(got[1].at, kT0 + 7);  // 5 s after the condition first held
  EXPECT_DOUBLE_EQ(got[1].started_at, kT0 + 2);
  EXPECT_DOUBLE_EQ(got[1].fired_at, kT0 + 7);
  EXPECT_DOUBLE_EQ(got[1].value, 95);
  EXPECT_EQ(got[1].annotations.at("summary"), "GPU 0 at 95 C");
  EXPECT_EQ(got[1].labels.at("alertname"), "GpuTooHot");
  EXPECT_EQ(got[1].labels.at("gpu"), "0");
  EXPECT_EQ(got[1].labels.at("severity"), "critical");
  EXPECT_EQ(got[2].from, AlertStatus::kFiring);
  EXPECT_EQ(got[2].to, AlertStatus::kResolved);
  EXPECT_DOUBLE_EQ(got[2].resolved_at, kT0 + 9);
  EXPECT_DOUBLE_EQ(got[2].value, 60);
  EXPECT_TRUE(Notifies(got[1]));
  EXPECT_TRUE(Notifies(got[2]));
  EXPECT_FALSE(Notifies(got[0]));
}

TEST(EvaluatorTest, PendingClearedBeforeForDoesNotFire) {
  Evaluator evaluator({HotRule(5, 0)});
  auto got = Feed(evaluator, {90, 90, 90, 70, 90, 90});
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].to, AlertStatus::kPending);
  EXPECT_EQ(got[1].from, AlertStatus::kPending);
  EXPECT_EQ(got[1].to, AlertStatus::kInactive);
  EXPECT_FALSE(Notifies(got[1]));
  EXPECT_EQ(got[2].to, AlertStatus::kPending);
  EXPECT_DOUBLE_EQ(got[2].started_at, kT0 + 4);  // the clock restarted
}

TEST(EvaluatorTest, ForZeroFiresAtOnce) {
  Evaluator evaluator({HotRule(0, 0)});
  auto got = Feed(evaluator, {90});
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].from, AlertStatus::kInactive);
  EXPECT_EQ(got[0].to, AlertStatus::kFiring);
}

TEST(EvaluatorTest, KeepFiringForBridgesFlapping) {
  Evaluator evaluator({HotRule(0, 3)});
  // Flaps: hot, cool 2 s, hot, cool 3 s -> one firing, one resolved 3 s after the last hot.
  auto got = Feed(evaluator, {90, 70, 70, 90, 70, 70, 70, 70});
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].to, AlertStatus::kFiring);
  EXPECT_DOUBLE_EQ(got[0].at, kT0 + 0);
  EXPECT_EQ(got[1].to, AlertStatus::kResolved);
  EXPECT_DOUBLE_EQ(got[1].at, kT0 + 6);  // last hot at 3, keep 3 s
  EXPECT_DOUBLE_EQ(got[1].started_at, kT0 + 0);
}

TEST(EvaluatorTest, FlappingWithoutKeepFiringNotifiesEachEpisode) {
  Evaluator evaluator({HotRule(0, 0)});
  auto got = Feed(evaluator, {90, 70, 90, 70});
  ASSERT_EQ(got.size(), 4u);
  EXPECT_EQ(got[0].to, AlertStatus::kFiring);
  EXPECT_EQ(got[1].to, AlertStatus::kResolved);
  EXPECT_EQ(got[2].to, AlertStatus::kFiring);
  EXPECT_EQ(got[3].to, AlertStatus::kResolved);
  EXPECT_NE(got[0].started_at, got[2].started_at);  // distinct episodes -> distinct keys
}

TEST(EvaluatorTest, GpusAreIndependent) {
  Evaluator evaluator({HotRule(0, 0)});
  std::vector<Sample> batch = {{"gpu_temperature_celsius", 0, 90, kT0},
                               {"gpu_temperature_celsius", 1, 50, kT0},
                               {"gpu_temperature_celsius", 2, 99, kT0}};
  auto got = evaluator.Evaluate(batch);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].gpu, 0);
  EXPECT_EQ(got[1].gpu, 2);
  EXPECT_NE(got[0].fingerprint, got[1].fingerprint);
  EXPECT_EQ(got[0].fingerprint, Evaluator::Fingerprint("GpuTooHot", 0));
  EXPECT_EQ(got[0].fingerprint.size(), 16u);
}

TEST(EvaluatorTest, AbsentSeriesKeepsState) {
  Evaluator evaluator({HotRule(0, 0)});
  Feed(evaluator, {95});
  // Ticks that carry other metrics only (the GPU stopped answering) must not resolve it.
  Sample other{"gpu_power_watts", 0, 100, kT0 + 5};
  EXPECT_TRUE(evaluator.Evaluate({&other, 1}).empty());
  ASSERT_EQ(evaluator.Snapshot().size(), 1u);
  EXPECT_EQ(evaluator.Snapshot()[0].status, AlertStatus::kFiring);
}

TEST(EvaluatorTest, SnapshotAndRestoreSurviveRestart) {
  Evaluator first({HotRule(5, 0)});
  Feed(first, {90, 90, 90});  // pending since second 0
  std::vector<AlertState> saved = first.Snapshot();
  ASSERT_EQ(saved.size(), 1u);
  EXPECT_EQ(saved[0].status, AlertStatus::kPending);

  Evaluator second({HotRule(5, 0)});
  EXPECT_EQ(second.Restore(saved), 1u);
  auto got = Feed(second, {90, 90, 90}, /*start=*/3);
  // Pending kept its start: fires at second 5 without a second inactive->pending.
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].from, AlertStatus::kPending);
  EXPECT_EQ(got[0].to, AlertStatus::kFiring);
  EXPECT_DOUBLE_EQ(got[0].at, kT0 + 5);
  EXPECT_DOUBLE_EQ(got[0].started_at, kT0 + 0);

  // Firing restored: no second firing notification, and it resolves normally.
  Evaluator third({HotRule(5, 0)});
  EXPECT_EQ(third.Restore(second.Snapshot()), 1u);
  got = Feed(third, {95, 60}, /*start=*/10);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].to, AlertStatus::kResolved);
  EXPECT_DOUBLE_EQ(got[0].fired_at, kT0 + 5);
}

TEST(EvaluatorTest, RestoreDropsUnknownRules) {
  Evaluator evaluator({HotRule(0, 0)});
  std::vector<AlertState> states = {{"Removed", 0, AlertStatus::kFiring, kT0, kT0, kT0, 1},
                                    {"GpuTooHot", 1, AlertStatus::kFiring, kT0, kT0, kT0, 90}};
  EXPECT_EQ(evaluator.Restore(states), 1u);
  EXPECT_EQ(evaluator.Snapshot().size(), 1u);
}

// Samples of GPU 0 at monotonic seconds 0, 1, 2, ... whose wall-clock time is `wall[i]`.
std::vector<Transition> FeedStepped(Evaluator& evaluator, const std::vector<double>& temperatures,
                                    const std::vector<double>& wall) {
  std::vector<Transition> all;
  for (size_t i = 0; i < temperatures.size(); ++i) {
    Sample sample{"gpu_temperature_celsius", 0, temperatures[i], wall[i], static_cast<double>(i)};
    std::vector<Transition> got = evaluator.Evaluate({&sample, 1});
    all.insert(all.end(), got.begin(), got.end());
  }
  return all;
}

constexpr double kDay = 86400;

// Seen in the stress test (issue 29): GPU 0 began firing just after the agent's wall clock stepped
// 8 days ahead, then the clock was set 1 h behind and back; the cleared samples looked 8 days
// older than the last hot one and the alert kept firing (no resolved) until the next episode.
TEST(EvaluatorTest, AWallClockStepBackDoesNotHoldAFiringAlert) {
  Evaluator evaluator({HotRule(/*for=*/0, /*keep=*/0)});
  auto got = FeedStepped(evaluator, {95, 95, 60, 60},
                         {kT0 + 8 * kDay, kT0 + 8 * kDay + 1, kT0 - 3600 + 2, kT0 + 3});
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].to, AlertStatus::kFiring);
  EXPECT_EQ(got[1].to, AlertStatus::kResolved);
  EXPECT_DOUBLE_EQ(got[1].resolved_at, kT0 - 3600 + 2);  // reported on the wall clock
}

TEST(EvaluatorTest, KeepFiringForCountsMonotonicSecondsAcrossWallClockSteps) {
  Evaluator evaluator({HotRule(/*for=*/0, /*keep=*/3)});
  // Hot at second 0, cool from 1; the wall clock steps 8 days ahead at 2 and 1 h back at 3.
  auto got = FeedStepped(
      evaluator, {95, 60, 60, 60, 60, 60},
      {kT0, kT0 + 1, kT0 + 8 * kDay + 2, kT0 - 3600 + 3, kT0 - 3600 + 4, kT0 - 3600 + 5});
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[1].to, AlertStatus::kResolved);
  EXPECT_DOUBLE_EQ(got[1].resolved_at, kT0 - 3600 + 3);  // 3 monotonic seconds after the hot one
}

TEST(EvaluatorTest, ForCountsMonotonicSecondsAcrossWallClockSteps) {
  Evaluator evaluator({HotRule(/*for=*/5, /*keep=*/0)});
  // Hot from second 0; the wall clock steps 8 days ahead at 2 (which fired at once before) and
  // 1 h back at 4 (which held it pending for an hour).
  auto got = FeedStepped(evaluator, {95, 95, 95, 95, 95, 95, 95},
                         {kT0, kT0 + 1, kT0 + 8 * kDay + 2, kT0 + 8 * kDay + 3, kT0 - 3600 + 4,
                          kT0 - 3600 + 5, kT0 - 3600 + 6});
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].to, AlertStatus::kPending);
  EXPECT_EQ(got[1].to, AlertStatus::kFiring);
  EXPECT_DOUBLE_EQ(got[1].fired_at, kT0 - 3600 + 5);  // at monotonic second 5
}

// A restored state carries wall-clock times only: its durations so far count from them.
TEST(EvaluatorTest, RestoredStateKeepsItsDurationOnTheMonotonicClock) {
  Evaluator evaluator({HotRule(/*for=*/5, /*keep=*/0)});
  std::vector<AlertState> states = {{"GpuTooHot", 0, AlertStatus::kPending, kT0, 0, kT0 + 2, 95}};
  ASSERT_EQ(evaluator.Restore(states), 1u);
  // The agent restarted: monotonic seconds 100, 101, 102 at wall kT0 + 3, 4, 5.
  std::vector<Transition> got;
  for (int i = 0; i < 3; ++i) {
    Sample sample{"gpu_temperature_celsius", 0, 95, kT0 + 3 + i, 100.0 + i};
    for (auto& t : evaluator.Evaluate({&sample, 1})) got.push_back(t);
  }
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].to, AlertStatus::kFiring);
  EXPECT_DOUBLE_EQ(got[0].fired_at, kT0 + 5);  // 5 s after it began, as before the restart
}

TEST(EvaluatorTest, IncreaseRuleFiresOnCounterStep) {
  Rule rule;
  rule.name = "Ecc";
  rule.metric = "gpu_ecc_uncorrected_errors_total";
  rule.kind = RuleKind::kIncrease;
  rule.op = CompareOp::kGreater;
  rule.threshold = 0;
  rule.keep_firing_for_seconds = 2;
  Evaluator evaluator({rule});
  std::vector<Transition> got;
  double values[] = {3, 3, 5, 5, 5, 5};  // a step at second 2; the old count 3 never alerts
  for (int i = 0; i < 6; ++i) {
    Sample s{"gpu_ecc_uncorrected_errors_total", 0, values[i], kT0 + i};
    auto t = evaluator.Evaluate({&s, 1});
    got.insert(got.end(), t.begin(), t.end());
  }
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].to, AlertStatus::kFiring);
  EXPECT_DOUBLE_EQ(got[0].at, kT0 + 2);
  EXPECT_DOUBLE_EQ(got[0].value, 2);
  EXPECT_EQ(got[1].to, AlertStatus::kResolved);
  EXPECT_DOUBLE_EQ(got[1].at, kT0 + 4);
}

Rule SwingRule() {
  Rule rule;
  rule.name = "Swing";
  rule.metric = "gpu_sm_clock_hertz";
  rule.kind = RuleKind::kSwing;
  rule.op = CompareOp::kGreater;
  rule.threshold = 0.3;
  rule.when = {{"gpu_utilization_ratio", CompareOp::kGreaterEqual, 0.5}};
  return rule;
}

std::vector<Transition> Tick(Evaluator& e, double t, double clock_hz, double utilization) {
  // The utilization sample comes after the clock in the batch: conditions still see it.
  std::vector<Sample> batch = {{"gpu_sm_clock_hertz", 0, clock_hz, kT0 + t},
                               {"gpu_utilization_ratio", 0, utilization, kT0 + t}};
  return e.Evaluate(batch);
}

TEST(EvaluatorTest, SwingNeedsConditionAtBothSamples) {
  Evaluator evaluator({SwingRule()});
  EXPECT_TRUE(Tick(evaluator, 0, 210e6, 0.0).empty());   // idle
  EXPECT_TRUE(Tick(evaluator, 1, 1980e6, 1.0).empty());  // job start: idle before, no alert
  EXPECT_TRUE(Tick(evaluator, 2, 1950e6, 1.0).empty());  // 1.5 %: stable
  auto got = Tick(evaluator, 3, 1300e6, 1.0);            // 33 % drop under load
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].to, AlertStatus::kFiring);
  EXPECT_NEAR(got[0].value, 650.0 / 1950.0, 1e-12);
  got = Tick(evaluator, 4, 1310e6, 1.0);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].to, AlertStatus::kResolved);
  EXPECT_TRUE(Tick(evaluator, 5, 210e6, 0.0).empty());  // job end: util 0 now, no alert
}

TEST(EvaluatorTest, SwingExactlyThirtyPercentDoesNotFire) {
  Evaluator evaluator({SwingRule()});
  Tick(evaluator, 0, 1000e6, 1.0);
  EXPECT_TRUE(Tick(evaluator, 1, 1300e6, 1.0).empty());   // 0.3 is not > 0.3
  EXPECT_EQ(Tick(evaluator, 2, 1700e6, 1.0).size(), 1u);  // 30.8 %
}

TEST(EvaluatorTest, DivideByAndHostWideCondition) {
  Rule memory;
  memory.name = "MemFull";
  memory.metric = "gpu_memory_used_bytes";
  memory.divide_by = "gpu_memory_total_bytes";
  memory.op = CompareOp::kGreater;
  memory.threshold = 0.9;
  Rule idle;
  idle.name = "IdleDuringJob";
  idle.metric = "gpu_utilization_ratio";
  idle.op = CompareOp::kLess;
  idle.threshold = 0.1;
  idle.when = {{"job_running", CompareOp::kEqual, 1}};
  Evaluator evaluator({memory, idle});
  std::vector<Sample> batch = {{"gpu_memory_used_bytes", 0, 75e9, kT0},
                               {"gpu_memory_total_bytes", 0, 80e9, kT0},
                               {"gpu_utilization_ratio", 0, 0.02, kT0},
                               {"job_running", -1, 0, kT0}};
  auto got = evaluator.Evaluate(batch);
  ASSERT_EQ(got.size(), 1u);  // 93.75 % full; idle but no job
  EXPECT_EQ(got[0].rule_name, "MemFull");
  EXPECT_DOUBLE_EQ(got[0].value, 75.0 / 80.0);
  batch[3].value = 1;  // a job starts (host-wide series)
  for (auto& s : batch) s.unix_time += 1;
  got = evaluator.Evaluate(batch);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].rule_name, "IdleDuringJob");
  EXPECT_EQ(got[0].to, AlertStatus::kFiring);
  // A per-GPU job_running overrides the host-wide one.
  for (auto& s : batch) s.unix_time += 1;
  batch.push_back({"job_running", 0, 0, kT0 + 2});
  got = evaluator.Evaluate(batch);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].to, AlertStatus::kResolved);
}

TEST(EvaluatorTest, SameSeriesTwiceInOneBatchIsEvaluatedInOrder) {
  Evaluator evaluator({HotRule(0, 0)});
  std::vector<Sample> batch = {{"gpu_temperature_celsius", 0, 90, kT0},
                               {"gpu_temperature_celsius", 0, 70, kT0 + 1}};
  auto got = evaluator.Evaluate(batch);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].to, AlertStatus::kFiring);
  EXPECT_EQ(got[1].to, AlertStatus::kResolved);
}

TEST(EvaluatorTest, XidRuleFromDefaultsFiresAtOnceOnCriticalCodesOnly) {
  auto rules = DefaultRules();
  ASSERT_TRUE(rules.ok()) << rules.status().ToString();
  Evaluator evaluator(*rules);
  Sample benign{"gpu_xid_last", 0, 31, kT0};  // XID 31 (page fault) is not critical
  EXPECT_TRUE(evaluator.Evaluate({&benign, 1}).empty());
  Sample bus{"gpu_xid_last", 0, 79, kT0 + 1};
  auto got = evaluator.Evaluate({&bus, 1});
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].rule_name, "GpuCriticalXid");
  EXPECT_EQ(got[0].to, AlertStatus::kFiring);
  EXPECT_EQ(got[0].severity, "critical");
  EXPECT_EQ(got[0].annotations.at("summary"), "GPU 0 reported critical XID 79");
}

TEST(EvaluatorTest, DefaultTemperatureRuleFiresAfterFiveMinutesAtOneSecondTicks) {
  auto rules = DefaultRules();
  ASSERT_TRUE(rules.ok());
  Evaluator evaluator(*rules);
  std::vector<Transition> firing;
  for (int second = 0; second <= 400; ++second) {
    Sample s{"gpu_temperature_celsius", 3, 95, kT0 + second};
    for (auto& t : evaluator.Evaluate({&s, 1})) {
      if (t.to == AlertStatus::kFiring) firing.push_back(t);
    }
  }
  ASSERT_EQ(firing.size(), 1u);
  EXPECT_DOUBLE_EQ(firing[0].at, kT0 + 300);
  EXPECT_EQ(firing[0].gpu, 3);
}

}  // namespace
}  // namespace fulcrum::alert
