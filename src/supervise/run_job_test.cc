// RunJob without the binary: the fake ProcessRunner and a ManualClock, jobs.db in a temp data dir.
// Covers job identity across runs of one name and start-up validation.
#include "supervise/run_job.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>

#include "supervise/fake_process_runner.h"

namespace fulcrum::supervise {
namespace {
namespace fs = std::filesystem;

class RunJobTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ =
        (fs::path(FULCRUM_BUILD_DIR) / "Testing" / "tmp" /
         ("runjob-" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name())))
            .string();
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  RunJobRequest Request(StartMode mode = StartMode::kAuto) {
    RunJobRequest r;
    r.name = "train";
    r.data_dir = dir_ + "/data";
    r.cwd = dir_;
    r.start_mode = mode;
    r.command = {"true"};  // on PATH: passes the not-found check; the fake never runs it
    r.flags.preemption = {"none"};
    r.flags.values["--agent"] = "none";
    r.flags.values["--backoff"] = "1s";
    return r;
  }

  // One run; `failures` exits of code 1 before an ending of `last` (nullopt = exit 0).
  Result<RunJobResult> RunOnce(RunJobRequest request, int failures,
                               std::optional<int> stop_signal_at_start = std::nullopt) {
    ManualClock clock;
    FakeRunner runner(clock);
    int started = 0;
    runner.on_tick = [&](double, const LineSink&) {
      if (!runner.running()) return;
      if (static_cast<int>(runner.starts.size()) > started) {
        started = static_cast<int>(runner.starts.size());
        ChildExit e;
        e.exit_code = started <= failures ? 1 : 0;
        if (!stop_signal_at_start || started <= failures) runner.Exit(e);
      }
    };
    RunJobHooks hooks;
    bool stop = false;
    hooks.stop_requested = [&]() -> std::optional<std::string> {
      if (stop_signal_at_start && runner.starts.size() > static_cast<size_t>(failures)) stop = true;
      if (stop) return std::string("received SIGTERM");
      return std::nullopt;
    };
    RunJob job(std::move(request), clock, runner, hooks);
    auto result = job.Run();
    envs_.clear();
    for (const auto& s : runner.starts) envs_.push_back(s.env);
    return result;
  }

  std::string dir_;
  std::vector<std::map<std::string, std::string>> envs_;
};

TEST_F(RunJobTest, ANameWhoseLastRunSucceededStartsANewJobWithRestartCountZero) {
  // The reported bug: a run that succeeded after one restart left the next run at count 1.
  auto first = RunOnce(Request(), /*failures=*/1);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(first->outcome.state, store::JobState::kSucceeded);
  ASSERT_EQ(envs_.size(), 2u);
  EXPECT_EQ(envs_[1]["FULCRUM_RESTART_COUNT"], "1");
  EXPECT_EQ(first->uid, "train.1");

  auto second = RunOnce(Request(), 0);
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  ASSERT_EQ(envs_.size(), 1u);
  EXPECT_EQ(envs_[0]["FULCRUM_RESTART_COUNT"], "0");
  EXPECT_EQ(envs_[0]["FULCRUM_JOB_UID"], "train.2");
  EXPECT_EQ(second->start, store::JobStart::kNew);
  EXPECT_EQ(second->uid, "train.2");
}

TEST_F(RunJobTest, ANameWhoseLastRunWasStoppedContinuesIt) {
  auto first = RunOnce(Request(), /*failures=*/1, /*stop=*/SIGTERM);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(first->outcome.state, store::JobState::kStopped);
  auto second = RunOnce(Request(), 0);
  ASSERT_TRUE(second.ok());
  ASSERT_EQ(envs_.size(), 1u);
  EXPECT_EQ(envs_[0]["FULCRUM_RESTART_COUNT"], "1") << "the count goes on";
  EXPECT_EQ(second->start, store::JobStart::kContinued);
  EXPECT_EQ(second->uid, "train.1") << "same job";
}

TEST_F(RunJobTest, NewAndContinueOverrideTheRule) {
  ASSERT_TRUE(RunOnce(Request(), 1, SIGTERM).ok());  // stopped: would be continued
  auto fresh = RunOnce(Request(StartMode::kNew), 0);
  ASSERT_TRUE(fresh.ok());
  EXPECT_EQ(fresh->start, store::JobStart::kNew);
  EXPECT_EQ(envs_[0]["FULCRUM_RESTART_COUNT"], "0");
  EXPECT_EQ(fresh->uid, "train.2");
  auto again = RunOnce(Request(StartMode::kContinue), 0);  // succeeded: would be new
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->start, store::JobStart::kContinued);
  EXPECT_EQ(again->uid, "train.2");
}

TEST_F(RunJobTest, ContinueWithoutAPreviousRunIsBadInput) {
  auto r = RunOnce(Request(StartMode::kContinue), 0);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidInput);
  EXPECT_TRUE(envs_.empty());
}

TEST_F(RunJobTest, AMissingCommandIsReportedOnceBeforeAnythingStarts) {
  RunJobRequest request = Request();
  request.command = {"/nonexistent/cmd"};
  auto r = RunOnce(request, 0);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidInput);
  EXPECT_NE(r.status().message().find("command not found"), std::string::npos)
      << r.status().message();
  EXPECT_TRUE(envs_.empty()) << "nothing was started, nothing restarted";
}

TEST_F(RunJobTest, RefusesSignalsAndCountsThatCannotWork) {
  const std::vector<std::pair<std::string, std::string>> bad = {{"--checkpoint-signal", "9"},
                                                                {"--checkpoint-signal", "KILL"},
                                                                {"--checkpoint-signal", "SIGSTOP"},
                                                                {"--max-restarts", "-5"},
                                                                {"--crash-loop-failures", "-1"},
                                                                {"--log-max-bytes", "0"},
                                                                {"--keep", "-1"},
                                                                {"--log-files", "0"}};
  for (const auto& [flag, value] : bad) {
    RunJobRequest request = Request();
    request.flags.values[flag] = value;
    auto r = RunOnce(request, 0);
    ASSERT_FALSE(r.ok()) << flag << " " << value;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidInput) << flag << " " << value;
    EXPECT_NE(r.status().message().find(flag), std::string::npos) << r.status().message();
    ASSERT_NE(r.status().detail(), nullptr);
    EXPECT_EQ(r.status().detail()->field, flag);
    EXPECT_TRUE(envs_.empty());
  }
  RunJobRequest ok = Request();
  ok.flags.values["--checkpoint-signal"] = "usr2";
  ok.flags.values["--max-restarts"] = "-1";
  ok.flags.values["--crash-loop-failures"] = "0";
  EXPECT_TRUE(RunOnce(ok, 0).ok());
}

}  // namespace
}  // namespace fulcrum::supervise
