#include "supervise/policy.h"

#include <gtest/gtest.h>

#include "spot/interval.h"

namespace fulcrum::supervise {
namespace {

RestartPolicyOptions Options() {
  RestartPolicyOptions o;
  o.max_restarts = 5;
  o.backoff_initial_seconds = 1;
  o.backoff_max_seconds = 5;
  o.crash_loop_failures = 0;
  return o;
}

TEST(RestartPolicyTest, BackoffDoublesUpToItsMaximum) {
  RestartPolicy policy(Options());
  std::vector<double> waits;
  for (int i = 0; i < 5; ++i)
    waits.push_back(policy.OnFailure(i * 100.0, 1, "exit 1").wait_seconds);
  EXPECT_EQ(waits, (std::vector<double>{1, 2, 4, 5, 5}));
  EXPECT_EQ(policy.restarts(), 5);
  RestartDecision last = policy.OnFailure(600, 1, "exit 1");
  EXPECT_EQ(last.verdict, RestartVerdict::kTooManyRestarts);
  EXPECT_NE(last.reason.find("restart limit 5"), std::string::npos);
}

TEST(RestartPolicyTest, ACheckpointResetsTheBackoff) {
  RestartPolicy policy(Options());
  EXPECT_EQ(policy.OnFailure(0, 1, "x").wait_seconds, 1);
  EXPECT_EQ(policy.OnFailure(10, 1, "x").wait_seconds, 2);
  policy.OnCheckpoint(20);
  EXPECT_EQ(policy.OnFailure(30, 1, "x").wait_seconds, 1);
}

TEST(RestartPolicyTest, FinalExitCodesAndSignals) {
  RestartPolicyOptions o = Options();
  o.final_exit_codes = {3, 42};
  RestartPolicy policy(o);
  EXPECT_EQ(policy.OnFailure(0, 42, "exit 42").verdict, RestartVerdict::kFinalExit);
  EXPECT_EQ(policy.OnFailure(0, 1, "exit 1").verdict, RestartVerdict::kRestart);
  EXPECT_EQ(policy.OnFailure(0, std::nullopt, "killed").verdict, RestartVerdict::kRestart);
  EXPECT_EQ(policy.restarts(), 2) << "a final exit is not a restart";
}

TEST(RestartPolicyTest, CrashLoopNeedsNFailuresInsideTheWindowWithoutACheckpoint) {
  RestartPolicyOptions o = Options();
  o.max_restarts = -1;
  o.crash_loop_failures = 3;
  o.crash_loop_window_seconds = 60;
  RestartPolicy policy(o);
  EXPECT_EQ(policy.OnFailure(0, 1, "x").verdict, RestartVerdict::kRestart);
  EXPECT_EQ(policy.OnFailure(30, 1, "x").verdict, RestartVerdict::kRestart);
  // The first failure has left the window by t = 61.
  EXPECT_EQ(policy.OnFailure(61, 1, "x").verdict, RestartVerdict::kRestart);
  policy.OnCheckpoint(62);
  EXPECT_EQ(policy.OnFailure(63, 1, "x").verdict, RestartVerdict::kRestart);
  EXPECT_EQ(policy.OnFailure(64, 1, "x").verdict, RestartVerdict::kRestart);
  RestartDecision loop = policy.OnFailure(65, 1, "exit 1");
  EXPECT_EQ(loop.verdict, RestartVerdict::kCrashLoop);
  EXPECT_NE(loop.reason.find("3 failures within 60 s"), std::string::npos) << loop.reason;
}

// Worked values (Young 1974 tau = sqrt(2 delta M); Daly 2006, FGCS 22:303, eq. 37): delta = 5 min,
// M = 24 h / 6 h / 15 min -> Daly about 117 / 57 / 9.1 min, Young 120 / 60 / 12.25 min.
TEST(CheckpointIntervalTest, MatchesTheWorkedYoungAndDalyValues) {
  const double delta = 5 * 60;
  EXPECT_NEAR(spot::YoungIntervalSeconds(delta, 24 * 3600) / 60, 120, 0.01);
  EXPECT_NEAR(spot::YoungIntervalSeconds(delta, 6 * 3600) / 60, 60, 0.01);
  EXPECT_NEAR(spot::YoungIntervalSeconds(delta, 15 * 60) / 60, 12.25, 0.01);
  EXPECT_NEAR(spot::DalyIntervalSeconds(delta, 24 * 3600) / 60, 117, 1);
  EXPECT_NEAR(spot::DalyIntervalSeconds(delta, 6 * 3600) / 60, 57, 1);
  EXPECT_NEAR(spot::DalyIntervalSeconds(delta, 15 * 60) / 60, 9.1, 0.2);
  // delta >= 2M: checkpoint every M.
  EXPECT_EQ(spot::DalyIntervalSeconds(3000, 1000), 1000);
}

TEST(CheckpointIntervalTest, MtbfBlendsThePriorWithObservedFailures) {
  EXPECT_EQ(EstimateMtbfSeconds(86400, 0, 0), 86400);
  EXPECT_EQ(EstimateMtbfSeconds(86400, 3600, 0), 90000);
  EXPECT_EQ(EstimateMtbfSeconds(3600, 7200, 2), 3600);
}

}  // namespace
}  // namespace fulcrum::supervise
