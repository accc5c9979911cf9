// The supervisor's answer to an NCCL hang (--on-hang) with a ManualClock and a fake runner: the
// same stalled ranks past the grace end the job (SIGTERM, SIGKILL after kill_after) and it
// restarts within its budget, stops, or leaves a node (evidence), or is only alerted on; ranks
// that move on are not a hang. The ranks come from a fake of the RAS poller's verdict.
#include <gtest/gtest.h>
#include <signal.h>

#include "supervise/fake_process_runner.h"
#include "supervise/supervisor.h"

namespace fulcrum::supervise {
namespace {

telemetry::NcclLaggingRank Rank5(int pid, uint64_t op) {
  telemetry::NcclLaggingRank l;
  l.comm_hash = "0xc0ffee";
  l.rank.rank = 5;
  l.rank.host = "10.0.0.2";
  l.rank.pid = pid;
  l.rank.cuda_dev = 1;
  l.rank.nvml_dev = 1;
  l.reason = "AllReduce op " + std::to_string(op) + " of " + std::to_string(op + 1);
  l.comm_pids = {pid};
  return l;
}

class SupervisorHangTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto db = store::JobsDb::Open(":memory:");
    ASSERT_TRUE(db.ok());
    db_.emplace(std::move(*db));
    options_.job_id = "job";
    options_.argv = {"train"};
    options_.tick_seconds = 0.5;
    options_.kill_after_seconds = 5;
    options_.hang_grace_seconds = 30;
    options_.restart.backoff_initial_seconds = 1;
    options_.write_store_async = false;
    options_.on_event = [this](const std::string& e) { events_.push_back(e); };
  }
  std::vector<int> SignalNumbers(const FakeRunner& r) const {
    std::vector<int> out;
    for (auto [sig, at] : r.signals) out.push_back(sig);
    return out;
  }
  // The first child's rank 5 stalls from t = 10 s on; a later child runs 20 s and exits 0.
  void HangFirstChild(FakeRunner& runner) {
    options_.nccl_stalled = [this, &runner](int64_t pgid, const std::string& uid) {
      EXPECT_EQ(pgid, runner.pid());
      EXPECT_FALSE(uid.empty());
      std::vector<telemetry::NcclLaggingRank> out;
      if (runner.starts.size() == 1 && clock_.MonotonicSeconds() >= 10)
        out.push_back(Rank5(4005, 41));
      return out;
    };
    runner.on_tick = [&runner](double now, const LineSink&) {
      if (runner.starts.size() > 1 && runner.running() && now - runner.start_times.back() >= 20)
        runner.Exit(ChildExit{0, std::nullopt});
    };
  }

  ManualClock clock_;
  std::optional<store::JobsDb> db_;
  SupervisorOptions options_;
  std::vector<std::string> events_;
};

TEST_F(SupervisorHangTest, RequeueEndsTheHungJobAndRestartsItWithinItsBudget) {
  FakeRunner runner(clock_);
  runner.ignore_term = true;  // a rank stuck in a collective may not even see SIGTERM
  HangFirstChild(runner);
  Supervisor supervisor(options_, clock_, runner, &*db_);
  SupervisorOutcome outcome = supervisor.Run();
  EXPECT_EQ(outcome.state, store::JobState::kSucceeded) << outcome.reason;
  EXPECT_EQ(outcome.restarts, 1);
  ASSERT_EQ(SignalNumbers(runner), (std::vector<int>{SIGTERM, SIGKILL}));
  EXPECT_GE(runner.signals[0].second, 10 + 30) << "not before the grace";
  EXPECT_LT(runner.signals[0].second, 10 + 30 + 1.6) << "within a hang poll of it";
  EXPECT_NEAR(runner.signals[1].second - runner.signals[0].second, 5, 0.51);
  ASSERT_EQ(runner.starts.size(), 2u);
  auto restarts = db_->ListRestarts("job");
  ASSERT_TRUE(restarts.ok());
  ASSERT_EQ(restarts->size(), 1u);
  const std::string& why = (*restarts)[0].reason;
  EXPECT_NE(why.find("NCCL hang: rank 5 (pid 4005 on 10.0.0.2, GPU 1): AllReduce op 41 of 42"),
            std::string::npos)
      << why;
  EXPECT_NE(why.find("restart 1 of 10"), std::string::npos) << why;
  auto alerts = db_->ListAlerts(0);
  ASSERT_TRUE(alerts.ok());
  ASSERT_EQ(alerts->size(), 1u);
  EXPECT_EQ((*alerts)[0].name, "nccl_hang");
  EXPECT_NE((*alerts)[0].summary.find("rank 5"), std::string::npos);
  EXPECT_NE((*alerts)[0].summary.find("restarting the job from its last checkpoint"),
            std::string::npos);
}

TEST_F(SupervisorHangTest, RanksThatMoveOnAreNotAHang) {
  FakeRunner runner(clock_);
  // Rank 5 is behind on every report, but at a new operation every 20 s: slow, not stalled.
  options_.nccl_stalled = [this](int64_t, const std::string&) {
    return std::vector<telemetry::NcclLaggingRank>{
        Rank5(4005, 40 + static_cast<uint64_t>(clock_.MonotonicSeconds() / 20))};
  };
  runner.on_tick = [&](double now, const LineSink&) {
    if (now >= 100 && runner.running()) runner.Exit(ChildExit{0, std::nullopt});
  };
  Supervisor supervisor(options_, clock_, runner, &*db_);
  SupervisorOutcome outcome = supervisor.Run();
  EXPECT_EQ(outcome.state, store::JobState::kSucceeded);
  EXPECT_TRUE(runner.signals.empty());
  EXPECT_EQ(runner.starts.size(), 1u);
}

TEST_F(SupervisorHangTest, StopEndsTheRunWithoutARestart) {
  FakeRunner runner(clock_);
  options_.on_hang = HangAction::kStop;
  HangFirstChild(runner);
  Supervisor supervisor(options_, clock_, runner, &*db_);
  SupervisorOutcome outcome = supervisor.Run();
  EXPECT_EQ(outcome.state, store::JobState::kStopped);
  EXPECT_EQ(outcome.exit_code, kExitGaveUp) << "not 75: the sbatch script must not requeue it";
  EXPECT_EQ(runner.starts.size(), 1u);
  EXPECT_EQ(SignalNumbers(runner), (std::vector<int>{SIGTERM}));
  EXPECT_NE(outcome.reason.find("rank 5 (pid 4005 on 10.0.0.2, GPU 1)"), std::string::npos)
      << outcome.reason;
  EXPECT_NE(supervisor.job().reason.find("rank 5"), std::string::npos);
}

TEST_F(SupervisorHangTest, EvidenceOfABadNodeStopsForARequeueElsewhere) {
  FakeRunner runner(clock_);
  HangFirstChild(runner);
  std::vector<int> asked_about;
  options_.hang_evidence =
      [&](const std::vector<telemetry::NcclLaggingRank>& stalled) -> std::optional<std::string> {
    for (const auto& l : stalled) asked_about.push_back(l.rank.rank);
    return "node gpu-07 drained (NCCL hang rank 5, XID 74 on GPU 1)";
  };
  Supervisor supervisor(options_, clock_, runner, &*db_);
  SupervisorOutcome outcome = supervisor.Run();
  EXPECT_EQ(asked_about, (std::vector<int>{5}));
  EXPECT_EQ(outcome.state, store::JobState::kStopped);
  EXPECT_EQ(outcome.exit_code, kExitStopped) << "75: the sbatch script requeues the job";
  EXPECT_EQ(runner.starts.size(), 1u) << "not restarted on the drained node";
  EXPECT_NE(outcome.reason.find("rank 5"), std::string::npos) << outcome.reason;
  EXPECT_NE(outcome.reason.find("node gpu-07 drained"), std::string::npos) << outcome.reason;
}

TEST_F(SupervisorHangTest, IgnoreOnlyAlertsOnce) {
  FakeRunner runner(clock_);
  options_.on_hang = HangAction::kIgnore;
  options_.nccl_stalled = [this](int64_t, const std::string&) {
    std::vector<telemetry::NcclLaggingRank> out;
    if (clock_.MonotonicSeconds() >= 10) out.push_back(Rank5(4005, 41));
    return out;
  };
  options_.hang_evidence = [](const auto&) -> std::optional<std::string> {
    ADD_FAILURE() << "ignore looks for no evidence";
    return std::nullopt;
  };
  runner.on_tick = [&](double now, const LineSink&) {
    if (now >= 200 && runner.running()) runner.Exit(ChildExit{0, std::nullopt});
  };
  Supervisor supervisor(options_, clock_, runner, &*db_);
  SupervisorOutcome outcome = supervisor.Run();
  EXPECT_EQ(outcome.state, store::JobState::kSucceeded);
  EXPECT_TRUE(runner.signals.empty());
  auto alerts = db_->ListAlerts(0);
  ASSERT_TRUE(alerts.ok());
  ASSERT_EQ(alerts->size(), 1u) << "one alert per hang, not one per poll";
  EXPECT_NE((*alerts)[0].summary.find("--on-hang ignore"), std::string::npos);
}

}  // namespace
}  // namespace fulcrum::supervise
