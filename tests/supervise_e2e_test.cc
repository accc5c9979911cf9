// End-to-end tests of `fulcrum run`, `submit`, `status` and `cost`: the real binary supervises the
// real test trainer (tests/trainer) with short intervals; preemption notices come from fake
// metadata servers (httplib) on 127.0.0.1 with ephemeral ports; state is read back from jobs.db.
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>

#include "store/jobs.h"
#include "supervise/process.h"
#include "support/fake_http_server.h"
#include "support/fake_metadata.h"
#include "support/run_binary.h"

namespace fulcrum::testing {
namespace {
namespace fs = std::filesystem;

std::string ReadFile(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

size_t CountOf(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t pos = text.find(needle); pos != std::string::npos; pos = text.find(needle, pos + 1))
    ++n;
  return n;
}

// Polls `predicate` every 20 ms for up to `seconds`.
bool WaitFor(const std::function<bool()>& predicate, double seconds = 20) {
  return PollUntil(predicate, seconds);
}

RunOptions LongRun() {
  RunOptions options;
  options.timeout_seconds = 60;
  return options;
}

class SuperviseTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = MakeTempDir("supervise");
    data_ = dir_ + "/data";
    ckpt_ = dir_ + "/ckpt";
  }
  void TearDown() override {
    // A queue worker started by `submit` may still be finishing (or waiting for the queue lock).
    EXPECT_TRUE(WaitForQueueWorkersToExit(data_)) << "a queue worker outlived the test";
    if (!HasFailure()) fs::remove_all(dir_);
  }

  // `fulcrum run --name NAME --data-dir D --preemption none <extra> -- trainer <trainer_args>`.
  std::vector<std::string> RunArgs(const std::string& name, std::vector<std::string> extra,
                                   const std::vector<std::string>& trainer_args) {
    std::vector<std::string> args = {"run", "--name",    name,   "--data-dir",
                                     data_, "--backoff", "0.05s"};
    if (std::find(extra.begin(), extra.end(), "--preemption") == extra.end()) {
      args.insert(args.end(), {"--preemption", "none"});
    }
    args.insert(args.end(), extra.begin(), extra.end());
    args.push_back("--");
    args.push_back(FULCRUM_TRAINER);
    args.insert(args.end(), trainer_args.begin(), trainer_args.end());
    return args;
  }

  std::optional<store::JobRecord> Job(const std::string& name) {
    auto db = store::JobsDb::OpenInDataDir(data_, true);
    if (!db.ok()) return std::nullopt;
    auto job = db->GetJob(name);
    return job.ok() ? *job : std::nullopt;
  }

  std::string Log(const std::string& name) { return ReadFile(data_ + "/logs/" + name + ".log"); }

  std::string dir_, data_, ckpt_;
};

TEST_F(SuperviseTest, ResumesFromTheLastCompleteCheckpointAfterACrash) {
  RunOutput r = RunFulcrum(
      RunArgs("crashy", {"--checkpoint-dir", ckpt_, "--no-checkpoint-requests", "--gpus", "1,3"},
              {"--steps", "40", "--step-ms", "5", "--checkpoint-every-steps", "10",
               "--crash-at-step", "25", "--crash-times", "1"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("fresh start"), std::string::npos);
  EXPECT_NE(r.out.find("resumed from " + ckpt_ + "/step-00000020 at step 20"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("trainer pid"), std::string::npos);
  EXPECT_NE(r.out.find("gpus '1,3'"), std::string::npos) << "CUDA_VISIBLE_DEVICES from --gpus";
  EXPECT_NE(r.out.find("restart 1 gpus"), std::string::npos) << "FULCRUM_RESTART_COUNT";
  EXPECT_NE(r.out.find("done at step 40"), std::string::npos);
  auto job = Job("crashy");
  ASSERT_TRUE(job);
  EXPECT_EQ(job->state, "succeeded");
  EXPECT_EQ(job->restarts, 1);
  EXPECT_EQ(job->gpus, (std::vector<int>{1, 3}));
  // The log file has the job's output and the supervisor's events.
  std::string log = Log("crashy");
  EXPECT_NE(log.find("killed by SIGABRT"), std::string::npos);
  EXPECT_NE(log.find("out step 25"), std::string::npos);
}

// The reported bug: a name whose last run succeeded after one restart started its next run with
// FULCRUM_RESTART_COUNT=1. A finished job's next run is a new job; --continue carries the count.
TEST_F(SuperviseTest, ARunAfterASuccessIsANewJobWithRestartCountZero) {
  const std::vector<std::string> trainer = {"--steps",         "4", "--step-ms",     "5",
                                            "--crash-at-step", "2", "--crash-times", "1"};
  RunOutput first = RunFulcrum(RunArgs("again", {}, trainer));
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_NE(first.out.find("restart 1 gpus"), std::string::npos) << first.out;
  RunOutput second = RunFulcrum(RunArgs("again", {"--json"}, trainer));
  ASSERT_EQ(second.exit_code, 0) << second.err;
  const size_t first_start = second.err.find("trainer pid");
  ASSERT_NE(first_start, std::string::npos) << second.err;
  const std::string first_line =
      second.err.substr(first_start, second.err.find('\n', first_start) - first_start);
  EXPECT_NE(first_line.find("restart 0 gpus"), std::string::npos)
      << "the new job's first start: " << first_line;
  auto run = nlohmann::json::parse(second.out)["run"];
  EXPECT_EQ(run["start"], "new");
  EXPECT_EQ(run["uid"], "again.2");
  RunOutput status = RunFulcrum({"status", "--json", "--data-dir", data_});
  ASSERT_EQ(status.exit_code, 0) << status.err;
  auto job = nlohmann::json::parse(status.out)["jobs"][0];
  EXPECT_EQ(job["start"], "new");
  EXPECT_EQ(job["generation"], 2);
  EXPECT_EQ(job["restarts"], 1) << "the second run crashed once too (its count began at 0)";
  RunOutput continued = RunFulcrum(RunArgs("again", {"--continue"}, {"--steps", "1"}));
  ASSERT_EQ(continued.exit_code, 0) << continued.err;
  EXPECT_NE(continued.out.find("restart 1 gpus"), std::string::npos) << continued.out;
  EXPECT_NE(continued.err.find("continuing job again.2"), std::string::npos) << continued.err;
  RunOutput table = RunFulcrum({"status", "--data-dir", data_});
  EXPECT_NE(table.out.find("succeeded (continued)"), std::string::npos) << table.out;
}

// Issue 14: a launcher without signal handlers (as torchrun is for SIGUSR1) died of the first
// checkpoint request. By default a request is a file the job polls; no signal is sent. Signals
// are opt-in, and `--signal-target children` reaches the workers but not the launcher.
TEST_F(SuperviseTest, ALauncherWithoutSignalHandlersSurvivesCheckpointRequests) {
  auto run = [&](const std::string& name, std::vector<std::string> extra,
                 const std::string& trainer_flags = "") {
    const std::string launcher =
        std::string(FULCRUM_TRAINER) + " --steps 80 --step-ms 10 " + trainer_flags + "; exit $?";
    std::vector<std::string> args = {"run",
                                     "--name",
                                     name,
                                     "--data-dir",
                                     data_,
                                     "--preemption",
                                     "none",
                                     "--checkpoint-dir",
                                     ckpt_ + "-" + name,
                                     "--checkpoint-every",
                                     "0.2s"};
    args.insert(args.end(), extra.begin(), extra.end());
    args.insert(args.end(), {"--max-restarts", "0", "--", "/bin/sh", "-c", launcher});
    return RunFulcrum(args, LongRun());
  };
  RunOutput plain = run("launcher", {});
  EXPECT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_NE(plain.err.find("requested a checkpoint (request file)"), std::string::npos)
      << plain.err;
  EXPECT_NE(plain.err.find("checkpoint complete"), std::string::npos) << plain.err;
  EXPECT_EQ(plain.err.find("killed by"), std::string::npos) << plain.err;

  // The trainer ignores the request file here: its checkpoints come from the signal alone.
  RunOutput workers = run("workers", {"--checkpoint-signal", "USR1", "--signal-target", "children"},
                          "--ignore-requests");
  EXPECT_EQ(workers.exit_code, 0) << workers.err;
  EXPECT_NE(workers.err.find("SIGUSR1 to children"), std::string::npos) << workers.err;
  EXPECT_NE(workers.err.find("checkpoint complete"), std::string::npos) << workers.err;

  RunOutput group = run("group", {"--checkpoint-signal", "USR1"});  // the old default
  EXPECT_NE(group.err.find("killed by SIGUSR1"), std::string::npos)
      << "the failure the default avoids: " << group.err;
}

// Issue 19: inputs that cannot work are refused at start-up with exit 2 and the flag's name.
TEST_F(SuperviseTest, RefusesFlagsThatCannotWorkAndAMissingCommandOnce) {
  for (const std::vector<std::string>& flags :
       {std::vector<std::string>{"--checkpoint-signal", "9"},
        {"--checkpoint-signal", "KILL"},
        {"--checkpoint-signal", "STOP"},
        {"--max-restarts", "-5"},
        {"--crash-loop-failures", "-1"},
        {"--log-max-bytes", "0"},
        {"--receiver", "http://[::1"},
        {"--receiver", "http://127.0.0.1:99999/hook"},
        {"--receiver-format", "teams"}}) {
    RunOutput r = RunFulcrum(RunArgs("bad", flags, {"--steps", "1"}));
    EXPECT_EQ(r.exit_code, 2) << flags[0] << " " << flags[1] << ": " << r.err;
    EXPECT_NE(r.err.find(flags[0]), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("spdlog"), std::string::npos) << r.err;
  }
  std::vector<std::string> args = {"run",          "--name", "missing", "--data-dir",      data_,
                                   "--preemption", "none",   "--",      "/nonexistent/cmd"};
  RunOutput missing = RunFulcrum(args);
  EXPECT_EQ(missing.exit_code, 2) << missing.err;
  EXPECT_EQ(CountOf(missing.err, "not found"), 1u) << missing.err;
  EXPECT_EQ(missing.err.find("exit 127"), std::string::npos) << missing.err;
  EXPECT_FALSE(Job("missing")) << "nothing was recorded for a command that never started";
}

TEST_F(SuperviseTest, NeverResumesFromACheckpointWithoutItsMarker) {
  fs::create_directories(ckpt_ + "/step-00000010");
  std::ofstream(ckpt_ + "/step-00000010/step") << "10\n";
  std::ofstream(ckpt_ + "/step-00000010/COMPLETE") << "ok\n";
  // A newer directory without the marker (a write that was cut short).
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  fs::create_directories(ckpt_ + "/step-00000030");
  std::ofstream(ckpt_ + "/step-00000030/step") << "30\n";
  RunOutput r =
      RunFulcrum(RunArgs("partial", {"--checkpoint-dir", ckpt_, "--no-checkpoint-requests"},
                         {"--steps", "12", "--step-ms", "1"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("resumed from " + ckpt_ + "/step-00000010 at step 10"), std::string::npos)
      << r.out;
}

TEST_F(SuperviseTest, PartialCheckpointWrittenDuringAKillIsIgnored) {
  auto run = std::async(std::launch::async, [&] {
    return RunFulcrum(RunArgs("killed", {"--checkpoint-dir", ckpt_, "--no-checkpoint-requests"},
                              {"--steps", "30", "--step-ms", "5", "--checkpoint-every-steps", "10",
                               "--checkpoint-ms", "800"}),
                      LongRun());
  });
  const std::string second = ckpt_ + "/step-00000020";
  ASSERT_TRUE(WaitFor([&] {
    return fs::exists(ckpt_ + "/step-00000010/COMPLETE") && fs::exists(second + "/step");
  }));
  ASSERT_FALSE(fs::exists(second + "/COMPLETE"));
  // Kill the trainer (the supervisor's child) in the middle of writing step 20.
  auto job = Job("killed");
  ASSERT_TRUE(job && job->supervisor_pid);
  std::string children = ReadFile("/proc/" + std::to_string(*job->supervisor_pid) + "/task/" +
                                  std::to_string(*job->supervisor_pid) + "/children");
  ASSERT_FALSE(children.empty());
  pid_t trainer = static_cast<pid_t>(std::stol(children));
  ASSERT_EQ(kill(trainer, SIGKILL), 0);
  RunOutput r = run.get();
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("resumed from " + ckpt_ + "/step-00000010 at step 10"), std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("resumed from " + second), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("killed by SIGKILL"), std::string::npos) << r.err;
}

TEST_F(SuperviseTest, CrashLoopStopsAndAlerts) {
  RunOutput r =
      RunFulcrum(RunArgs("loop", {"--crash-loop-failures", "3", "--crash-loop-window", "10m"},
                         {"--step-ms", "1", "--exit-at-step", "2", "--exit-code", "3"}));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(CountOf(r.out, "trainer pid"), 3u) << r.out;
  auto job = Job("loop");
  ASSERT_TRUE(job);
  EXPECT_EQ(job->state, "crash_loop");
  EXPECT_EQ(job->restarts, 2);
  auto db = store::JobsDb::OpenInDataDir(data_, true);
  ASSERT_TRUE(db.ok());
  auto alerts = db->ListAlerts(0);
  ASSERT_TRUE(alerts.ok());
  ASSERT_FALSE(alerts->empty());
  EXPECT_EQ(alerts->front().name, "crash_loop");
  auto restarts = db->ListRestarts("loop");
  ASSERT_TRUE(restarts.ok());
  ASSERT_EQ(restarts->size(), 3u);
  // Exponential backoff: 0.05 s, then 0.1 s between the starts (lower bounds only).
  EXPECT_GE((*restarts)[1].at - (*restarts)[0].at, 0.05);
  EXPECT_GE((*restarts)[2].at - (*restarts)[1].at, 0.1);
}

TEST_F(SuperviseTest, RestartLimitHoldsAndFinalExitCodesEndTheJob) {
  RunOutput limited =
      RunFulcrum(RunArgs("limited", {"--max-restarts", "2", "--crash-loop-failures", "0"},
                         {"--step-ms", "1", "--exit-at-step", "2", "--exit-code", "3"}));
  EXPECT_EQ(limited.exit_code, 1);
  EXPECT_EQ(CountOf(limited.out, "trainer pid"), 3u) << limited.out;
  EXPECT_EQ(Job("limited")->state, "failed");

  RunOutput final_code =
      RunFulcrum(RunArgs("final", {"--final-exit-code", "3"},
                         {"--step-ms", "1", "--exit-at-step", "2", "--exit-code", "3"}));
  EXPECT_EQ(final_code.exit_code, 3);
  EXPECT_EQ(CountOf(final_code.out, "trainer pid"), 1u);
}

class PreemptionTest : public SuperviseTest, public ::testing::WithParamInterface<std::string> {};

TEST_P(PreemptionTest, NoticeLeadsToACheckpointBeforeTheStop) {
  const std::string cloud = GetParam();
  FakeMetadata metadata;
  const std::string name = "spot-" + cloud;
  auto run = std::async(std::launch::async, [&] {
    return RunFulcrum(
        RunArgs(name,
                {"--preemption", cloud, "--" + cloud + "-metadata-url", metadata.url(),
                 "--notice-poll", "0.05s", "--checkpoint-dir", ckpt_, "--checkpoint-every", "1h"},
                {"--steps", "100000", "--step-ms", "5", "--checkpoint-ms", "200"}),
        LongRun());
  });
  ASSERT_TRUE(WaitFor([&] { return fs::exists(data_ + "/run/" + name + ".heartbeat"); }));
  EXPECT_TRUE(fs::is_empty(ckpt_));
  metadata.notice = true;
  RunOutput r = run.get();
  EXPECT_EQ(r.exit_code, 75) << r.err;
  std::string log = Log(name);
  size_t notice = log.find("preemption notice: " + cloud);
  size_t checkpoint = log.find("checkpoint complete: " + ckpt_ + "/step-");
  size_t term = log.find("checkpoint saved; sending SIGTERM");
  size_t terminated = log.find("out terminated at step");
  ASSERT_NE(notice, std::string::npos) << log;
  ASSERT_NE(checkpoint, std::string::npos) << log;
  ASSERT_NE(term, std::string::npos) << log;
  ASSERT_NE(terminated, std::string::npos) << log;
  EXPECT_LT(notice, checkpoint);
  EXPECT_LT(checkpoint, term);
  EXPECT_LT(term, terminated);
  auto job = Job(name);
  ASSERT_TRUE(job);
  EXPECT_EQ(job->state, "stopped");
  EXPECT_NE(job->reason.find("preemption notice"), std::string::npos);
  if (cloud == "aws") {
    EXPECT_GE(metadata.token_requests.load(), 1);
    EXPECT_EQ(metadata.unauthorised.load(), 0);
  }
  if (cloud == "alibaba") {  // hardened mode: every read carried the token
    EXPECT_GE(metadata.alibaba_token_requests.load(), 1);
    EXPECT_EQ(metadata.alibaba_unauthorised.load(), 0);
  }
}

INSTANTIATE_TEST_SUITE_P(Clouds, PreemptionTest,
                         ::testing::Values("aws", "gcp", "azure", "alibaba"));

TEST_F(SuperviseTest, SigtermToTheSupervisorCheckpointsThenStops) {
  auto run = std::async(std::launch::async, [&] {
    return RunFulcrum(RunArgs("term", {"--checkpoint-dir", ckpt_, "--checkpoint-every", "1h"},
                              {"--steps", "100000", "--step-ms", "5"}),
                      LongRun());
  });
  std::optional<store::JobRecord> job;
  ASSERT_TRUE(WaitFor([&] {
    job = Job("term");
    return job && job->state == "running" && job->supervisor_pid &&
           fs::exists(data_ + "/run/" + job->id + ".heartbeat");
  }));
  ASSERT_EQ(kill(static_cast<pid_t>(*job->supervisor_pid), SIGTERM), 0);
  RunOutput r = run.get();
  EXPECT_EQ(r.exit_code, 75) << r.err;
  EXPECT_NE(r.err.find("received SIGTERM"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("checkpoint saved; sending SIGTERM"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("terminated at step"), std::string::npos);
}

TEST_F(SuperviseTest, StopGraceBoundsTheWaitForACheckpoint) {
  // The job ignores the checkpoint request (its file, and SIGWINCH, ignored by default) and
  // SIGTERM too.
  RunOutput r;
  auto run = std::async(std::launch::async, [&] {
    return RunFulcrum(
        RunArgs("stubborn",
                {"--checkpoint-dir", ckpt_, "--checkpoint-signal", "SIGWINCH", "--checkpoint-every",
                 "1h", "--stop-grace", "0.3s", "--kill-after", "0.3s"},
                {"--steps", "100000", "--step-ms", "5", "--ignore-term", "--ignore-requests"}),
        LongRun());
  });
  std::optional<store::JobRecord> job;
  ASSERT_TRUE(WaitFor([&] {
    job = Job("stubborn");
    return job && job->state == "running" && job->supervisor_pid &&
           fs::exists(data_ + "/run/" + job->id + ".heartbeat");
  }));
  ASSERT_EQ(kill(static_cast<pid_t>(*job->supervisor_pid), SIGTERM), 0);
  r = run.get();
  EXPECT_EQ(r.exit_code, 75) << r.err;
  EXPECT_NE(r.err.find("no checkpoint within the grace period"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("SIGKILL"), std::string::npos) << r.err;
}

TEST_F(SuperviseTest, BudgetStopsAfterACheckpoint) {
  // $3600 per hour = $1 per second; a $1.5 budget lasts 1.5 s.
  RunOutput r = RunFulcrum(RunArgs("budget",
                                   {"--checkpoint-dir", ckpt_, "--checkpoint-every", "1h",
                                    "--price-per-hour", "3600", "--budget-usd", "1.5"},
                                   {"--steps", "100000", "--step-ms", "5"}),
                           LongRun());
  EXPECT_EQ(r.exit_code, 76) << r.err;
  std::string log = Log("budget");
  size_t warning = log.find("ALERT budget_warning");
  size_t exhausted = log.find("ALERT budget_exhausted");
  size_t checkpoint = log.find("checkpoint complete");
  size_t term = log.find("checkpoint saved; sending SIGTERM");
  ASSERT_NE(warning, std::string::npos) << log;
  ASSERT_NE(exhausted, std::string::npos) << log;
  ASSERT_NE(checkpoint, std::string::npos) << log;
  ASSERT_NE(term, std::string::npos) << log;
  EXPECT_LT(warning, exhausted);
  EXPECT_LT(exhausted, checkpoint);
  EXPECT_LT(checkpoint, term);
  auto job = Job("budget");
  ASSERT_TRUE(job);
  EXPECT_EQ(job->state, "stopped");
  EXPECT_GE(job->spend_usd, 1.5);
  EXPECT_LT(job->spend_usd, 10.0);

  RunOutput cost = RunFulcrum({"cost", "--json", "--data-dir", data_});
  ASSERT_EQ(cost.exit_code, 0) << cost.err;
  auto doc = nlohmann::json::parse(cost.out);
  ASSERT_EQ(doc["cost"]["jobs"].size(), 1u);
  EXPECT_EQ(doc["cost"]["jobs"][0]["job"], "budget");
  EXPECT_NEAR(doc["cost"]["total_usd"].get<double>(), job->spend_usd, 1e-6);
  EXPECT_NEAR(doc["cost"]["jobs"][0]["seconds"].get<double>(), job->spend_usd, 1e-6)
      << "$1 per second";
}

TEST_F(SuperviseTest, NoTwoSupervisorsForTheSameJob) {
  auto first = std::async(std::launch::async, [&] {
    return RunFulcrum(RunArgs("single", {}, {"--steps", "100000", "--step-ms", "5"}), LongRun());
  });
  std::optional<store::JobRecord> job;
  ASSERT_TRUE(WaitFor([&] {
    job = Job("single");
    return job && job->state == "running" && job->supervisor_pid &&
           fs::exists(data_ + "/run/" + job->id + ".heartbeat");
  }));
  RunOutput second = RunFulcrum(RunArgs("single", {}, {"--steps", "1"}));
  EXPECT_EQ(second.exit_code, 1);
  EXPECT_NE(second.err.find("already supervised by pid " + std::to_string(*job->supervisor_pid)),
            std::string::npos)
      << second.err;
  EXPECT_EQ(second.out.find("trainer pid"), std::string::npos)
      << "the second never started the job";
  kill(static_cast<pid_t>(*job->supervisor_pid), SIGTERM);
  EXPECT_EQ(first.get().exit_code, 75);
}

// issue 29 item 7: after `rm locks/NAME.lock` two trainers of one job ran at once. The lock is a
// record of jobs.db now; removing every file of locks/ does not let a second supervisor in.
TEST_F(SuperviseTest, RemovingTheLocksFolderDoesNotLetASecondSupervisorIn) {
  auto first = std::async(std::launch::async, [&] {
    return RunFulcrum(RunArgs("single", {}, {"--steps", "100000", "--step-ms", "5"}), LongRun());
  });
  std::optional<store::JobRecord> job;
  ASSERT_TRUE(WaitFor([&] {
    job = Job("single");
    return job && job->state == "running" && job->supervisor_pid &&
           fs::exists(data_ + "/run/" + job->id + ".heartbeat");
  }));
  ASSERT_TRUE(fs::exists(data_ + "/locks"));
  fs::remove_all(data_ + "/locks");
  RunOutput second = RunFulcrum(RunArgs("single", {}, {"--steps", "1"}));
  EXPECT_EQ(second.exit_code, 1);
  EXPECT_NE(second.err.find("job 'single' is already supervised by pid"), std::string::npos)
      << second.err;
  EXPECT_EQ(second.out.find("trainer pid"), std::string::npos)
      << "the second never started the job";
  kill(static_cast<pid_t>(*job->supervisor_pid), SIGTERM);
  EXPECT_EQ(first.get().exit_code, 75);
}

// Alive: /proc shows it and it is not a zombie (an orphan's zombie waits for init to reap it).
bool Alive(pid_t pid) {
  std::string stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  const size_t paren = stat.rfind(')');
  return paren != std::string::npos && stat.size() > paren + 2 && stat[paren + 2] != 'Z';
}

// Issue 19: `kill -9` of `fulcrum run` orphaned the job's grandchildren (torchrun's workers kept
// the GPUs busy and billing under PID 1). The job here starts a `sleep 1000` and waits for it.
TEST_F(SuperviseTest, KillNineOfTheSupervisorTakesTheJobsGrandchildrenWithIt) {
  const std::string pid_file = dir_ + "/sleep.pid";
  auto run = std::async(std::launch::async, [&] {
    return RunFulcrum({"run", "--name", "orphans", "--data-dir", data_, "--preemption", "none",
                       "--", "/bin/sh", "-c",
                       "sleep 1000 & echo $! > " + pid_file + ".tmp && mv " + pid_file + ".tmp " +
                           pid_file + "; wait"},
                      LongRun());
  });
  pid_t sleep_pid = 0;
  ASSERT_TRUE(WaitFor([&] {
    std::istringstream(ReadFile(pid_file)) >> sleep_pid;
    return sleep_pid > 0;
  }));
  auto job = Job("orphans");
  ASSERT_TRUE(job && job->supervisor_pid);
  ASSERT_TRUE(Alive(sleep_pid));
  ASSERT_EQ(kill(static_cast<pid_t>(*job->supervisor_pid), SIGKILL), 0);
  EXPECT_EQ(run.get().exit_code, 128 + SIGKILL);
  EXPECT_TRUE(WaitFor([&] { return !Alive(sleep_pid); }, 10))
      << "the job's grandchild outlived its supervisor";
  if (Alive(sleep_pid)) kill(sleep_pid, SIGKILL);
}

// When the keeper died too (a SIGKILL to the supervisor's whole group), the next supervisor of
// the name ends the group recorded in jobs.db before it starts anew, and only that group.
TEST_F(SuperviseTest, ARestartedSupervisorEndsTheStaleProcessGroupFirst) {
  const pid_t leader = fork();
  ASSERT_GE(leader, 0);
  if (leader == 0) {
    setpgid(0, 0);
    execlp("sleep", "sleep", "1000", static_cast<char*>(nullptr));
    _exit(127);
  }
  setpgid(leader, leader);
  std::optional<int64_t> ticks;
  ASSERT_TRUE(WaitFor([&] { return (ticks = supervise::ProcessStartTicks(leader)).has_value(); }));
  {
    auto db = store::JobsDb::OpenInDataDir(data_);
    ASSERT_TRUE(db.ok()) << db.status().message();
    store::JobRecord row;
    row.id = row.name = "stale";
    row.state = store::JobState::kRunning;
    row.queue = "run";
    row.generation = 1;
    row.start = store::JobStart::kNew;
    row.supervisor_pid = 999999999;  // no such process: the supervisor is gone
    row.child_pgid = leader;
    row.child_start_ticks = *ticks;
    ASSERT_TRUE(db->UpsertJob(row).ok());
  }
  RunOutput r = RunFulcrum(
      {"run", "--name", "stale", "--data-dir", data_, "--preemption", "none", "--", "/bin/true"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("ended 1 process(es) of process group " + std::to_string(leader) +
                       " left running by an earlier supervisor"),
            std::string::npos)
      << r.err;
  int status = 0;
  ASSERT_EQ(waitpid(leader, &status, 0), leader);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  auto job = Job("stale");
  ASSERT_TRUE(job);
  EXPECT_FALSE(job->child_pgid) << "a finished run leaves no group recorded";
  EXPECT_EQ(job->state, "succeeded");
}

TEST_F(SuperviseTest, StallRaisesAnAlertAndRestarts) {
  RunOutput r = RunFulcrum(RunArgs("stall",
                                   {"--stall-timeout", "0.3s", "--restart-on-stall",
                                    "--max-restarts", "1", "--crash-loop-failures", "0"},
                                   {"--step-ms", "5", "--hang-at-step", "3"}),
                           LongRun());
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(CountOf(r.err, "ALERT stall"), 2u) << r.err;
  EXPECT_EQ(CountOf(r.out, "trainer pid"), 2u);
}

TEST_F(SuperviseTest, ProgressRegexRecordsTheStep) {
  RunOutput r = RunFulcrum(
      RunArgs("regex", {"--progress-regex", "^step (\\d+)$"}, {"--steps", "7", "--step-ms", "1"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto job = Job("regex");
  ASSERT_TRUE(job);
  EXPECT_EQ(job->step, 7);
  RunOutput status = RunFulcrum({"status", "--json", "--data-dir", data_});
  ASSERT_EQ(status.exit_code, 0) << status.err;
  auto doc = nlohmann::json::parse(status.out);
  ASSERT_EQ(doc["jobs"].size(), 1u);
  EXPECT_EQ(doc["jobs"][0]["id"], "regex");
  EXPECT_EQ(doc["jobs"][0]["state"], "succeeded");
  EXPECT_EQ(doc["jobs"][0]["step"], 7);
  EXPECT_TRUE(doc["jobs"][0]["spend_usd"].is_null()) << "no price: spend unknown";
  EXPECT_TRUE(doc["jobs"][0]["heartbeat_age_seconds"].is_number());
}

TEST_F(SuperviseTest, BadInputIsAUsageError) {
  EXPECT_EQ(RunFulcrum({"run", "--data-dir", data_}).exit_code, 2);
  RunOutput r = RunFulcrum(RunArgs("bad", {"--checkpoint-every", "soon"}, {}));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--checkpoint-every"), std::string::npos) << r.err;
  EXPECT_EQ(RunFulcrum(RunArgs("bad name", {}, {})).exit_code, 2);
  EXPECT_EQ(RunFulcrum(RunArgs("b", {"--budget-usd", "5"}, {})).exit_code, 2)
      << "budget without a price";
}

TEST_F(SuperviseTest, OfferTakesThePriceFromTheCatalog) {
  // The expected price is read from the shipped catalog here, not computed by fulcrum.
  std::istringstream csv(ReadFile(SourcePath("catalog/offers.csv")));
  std::string line;
  std::optional<double> spot;
  while (std::getline(csv, line)) {
    if (line.rfind("aws,p4d.24xlarge,us-east-1,", 0) == 0) {
      std::vector<std::string> cells;
      std::stringstream cols(line);
      for (std::string cell; std::getline(cols, cell, ',');) cells.push_back(cell);
      spot = std::stod(cells[9]);  // spot_per_hour (USD rows)
    }
  }
  ASSERT_TRUE(spot) << "fixture row missing from catalog/offers.csv";
  RunOutput r =
      RunFulcrum({"--catalog", SourcePath("catalog"), "run", "--name", "offer", "--data-dir", data_,
                  "--preemption", "none", "--offer", "aws/p4d.24xlarge/us-east-1", "--spot", "--",
                  FULCRUM_TRAINER, "--steps", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto job = Job("offer");
  ASSERT_TRUE(job && job->price_per_hour_usd);
  EXPECT_DOUBLE_EQ(*job->price_per_hour_usd, *spot);
  RunOutput missing = RunFulcrum({"--catalog", SourcePath("catalog"), "run", "--name", "offer2",
                                  "--data-dir", data_, "--preemption", "none", "--offer",
                                  "aws/no-such-instance", "--", FULCRUM_TRAINER});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("no offer 'aws/no-such-instance'"), std::string::npos) << missing.err;
}

std::vector<nlohmann::json> StatusJobs(const std::string& data) {
  RunOutput r = RunFulcrum({"status", "--json", "--data-dir", data});
  if (r.exit_code != 0) return {};
  auto doc = nlohmann::json::parse(r.out);
  return doc["jobs"].get<std::vector<nlohmann::json>>();
}

TEST_F(SuperviseTest, LocalQueuePlacesJobsOnFreeGpus) {
  auto submit = [&](const std::string& name, const std::string& gpus,
                    std::vector<std::string> extra) {
    std::vector<std::string> args = {"submit",      "--json", "--data-dir",   data_,
                                     "--node-gpus", "2",      "--name",       name,
                                     "--gpus",      gpus,     "--preemption", "none"};
    args.insert(args.end(), extra.begin(), extra.end());
    args.insert(args.end(), {"--", FULCRUM_TRAINER, "--steps", "20", "--step-ms", "10"});
    return RunFulcrum(args);
  };
  RunOutput a = submit("big-a", "2", {});
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_EQ(nlohmann::json::parse(a.out)["submit"]["state"], "queued");
  ASSERT_EQ(submit("big-b", "2", {}).exit_code, 0);
  ASSERT_EQ(submit("late", "1", {"--not-before", "+1s"}).exit_code, 0);
  EXPECT_EQ(submit("huge", "3", {}).exit_code, 2) << "more GPUs than the node has";

  std::vector<nlohmann::json> jobs;
  ASSERT_TRUE(WaitFor(
      [&] {
        jobs = StatusJobs(data_);
        if (jobs.size() != 3) return false;
        for (const auto& j : jobs) {
          if (j["state"] != "succeeded") return false;
        }
        return true;
      },
      30))
      << (jobs.empty() ? "" : nlohmann::json(jobs).dump(2));
  std::map<std::string, nlohmann::json> by_id;
  for (const auto& j : jobs) by_id[j["id"]] = j;
  EXPECT_EQ(by_id["big-a"]["gpus"], nlohmann::json({0, 1}));
  EXPECT_EQ(by_id["big-b"]["gpus"], nlohmann::json({0, 1}));
  EXPECT_EQ(by_id["big-a"]["queue"], "local");
  // Both want every GPU, so they ran one after the other.
  const double a_end = by_id["big-a"]["finished_at"], b_start = by_id["big-b"]["started_at"];
  const double b_end = by_id["big-b"]["finished_at"], a_start = by_id["big-a"]["started_at"];
  EXPECT_TRUE(b_start >= a_end || a_start >= b_end);
  EXPECT_GE(by_id["late"]["started_at"].get<double>(), by_id["late"]["not_before"].get<double>());
}

// Each job runs 3 s, long enough that the second is submitted while the first runs even under a
// sanitizer on a loaded machine (with 0.6 s jobs an ASan run once saw the first end before the
// second was queued, which then took the freed GPU 0): the two must overlap, each on its own GPU.
TEST_F(SuperviseTest, SmallJobsShareTheNode) {
  for (const std::string name : {"small-a", "small-b"}) {
    RunOutput r = RunFulcrum({"submit", "--data-dir", data_, "--node-gpus", "2", "--name", name,
                              "--gpus", "1", "--preemption", "none", "--", FULCRUM_TRAINER,
                              "--steps", "300", "--step-ms", "10"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  std::vector<nlohmann::json> jobs;
  ASSERT_TRUE(WaitFor(
      [&] {
        jobs = StatusJobs(data_);
        int done = 0;
        for (const auto& j : jobs) done += j["state"] == "succeeded";
        return done == 2;
      },
      30));
  std::set<int> gpus;
  for (const auto& j : jobs) {
    ASSERT_EQ(j["gpus"].size(), 1u);
    gpus.insert(j["gpus"][0].get<int>());
  }
  ASSERT_EQ(jobs.size(), 2u);
  const double a_start = jobs[0]["started_at"], a_end = jobs[0]["finished_at"];
  const double b_start = jobs[1]["started_at"], b_end = jobs[1]["finished_at"];
  EXPECT_TRUE(a_start < b_end && b_start < a_end) << "side by side: " << nlohmann::json(jobs);
  EXPECT_EQ(gpus, (std::set<int>{0, 1})) << "one GPU each, side by side";
}

}  // namespace
}  // namespace fulcrum::testing
