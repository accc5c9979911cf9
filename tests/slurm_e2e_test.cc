// End-to-end test of `fulcrum submit --slurm` against a real single-host Slurm: the test starts
// munged, slurmctld and slurmd in a temporary directory (own munge socket and key, ephemeral
// ports, four fake GPUs declared through gres.conf File= entries on plain files), submits the test
// trainer, requeues it like a preemption and checks that it resumes from its last complete
// checkpoint; then Slurm's advance notice (USR1 to the batch shell) makes fulcrum checkpoint, stop
// and requeue the job itself. Skipped only when the Slurm or munge binaries are not installed.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
// g++ 12 reports a false -Wmaybe-uninitialized inside std::regex's compiler when built with the
// sanitizers (GCC bug 105562); the warning is about libstdc++, not this file.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <regex>
#include <sstream>
#include <thread>

#include "support/fake_http_server.h"
#include "support/run_binary.h"

namespace fulcrum::testing {
namespace {
namespace fs = std::filesystem;

std::string FindProgram(const std::string& name) {
  for (const char* dir : {"/usr/sbin", "/usr/bin", "/usr/local/sbin", "/usr/local/bin"}) {
    std::string path = std::string(dir) + "/" + name;
    if (access(path.c_str(), X_OK) == 0) return path;
  }
  return "";
}

std::string ReadFile(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

template <typename F>
bool WaitFor(F predicate, double seconds) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    if (predicate()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return predicate();
}

class SlurmTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* tool : {"munged", "slurmctld", "slurmd", "sbatch", "squeue", "scontrol"}) {
      if (FindProgram(tool).empty())
        GTEST_SKIP() << tool << " is not installed (Debian: slurm-wlm, munge)";
    }
    char host[256] = {0};
    gethostname(host, sizeof host - 1);
    host_ = host;
    dir_ = MakeTempDir("slurm");
    fs::create_directories(dir_ + "/munge");
    fs::permissions(dir_ + "/munge",
                    fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec);
    {
      std::ofstream key(dir_ + "/munge/key", std::ios::binary);
      std::random_device rd;
      for (int i = 0; i < 128; ++i) key.put(static_cast<char>(rd()));
    }
    fs::permissions(dir_ + "/munge/key", fs::perms::owner_read | fs::perms::owner_write);
    for (const char* sub : {"state", "spool"}) fs::create_directories(dir_ + "/" + sub);
    for (int i = 0; i < 4; ++i) std::ofstream(dir_ + "/gpu" + std::to_string(i));
    conf_ = dir_ + "/slurm.conf";
    std::ofstream conf(conf_);
    conf << "ClusterName=fulcrumtest\nSlurmctldHost=" << host_
         << "\nSlurmctldPort=" << FreeLoopbackPort() << "\nSlurmdPort=" << FreeLoopbackPort()
         << "\nAuthType=auth/munge\nAuthInfo=socket=" << dir_
         << "/munge/sock\nCredType=cred/munge\nProctrackType=proctrack/linuxproc\nTaskPlugin=task/"
            "none\n"
         << "ReturnToService=2\nSlurmUser=root\nSlurmdUser=root\nSchedulerType=sched/backfill\n"
         << "SelectType=select/cons_tres\nSelectTypeParameters=CR_Core\nGresTypes=gpu\n"
         << "StateSaveLocation=" << dir_ << "/state\nSlurmdSpoolDir=" << dir_ << "/spool\n"
         << "SlurmctldPidFile=" << dir_ << "/slurmctld.pid\nSlurmdPidFile=" << dir_
         << "/slurmd.pid\n"
         << "SlurmctldLogFile=" << dir_ << "/ctld.log\nSlurmdLogFile=" << dir_ << "/d.log\n"
         << "KillWait=5\nMinJobAge=600\nJobRequeue=1\n"
         << "NodeName=" << host_ << " CPUs=" << std::max(1u, std::thread::hardware_concurrency())
         << " RealMemory=1000 Gres=gpu:4 State=UNKNOWN\n"
         << "PartitionName=debug Nodes=" << host_ << " Default=YES MaxTime=INFINITE State=UP\n";
    conf.close();
    std::ofstream(dir_ + "/gres.conf")
        << "NodeName=" << host_ << " Name=gpu File=" << dir_ << "/gpu[0-3]\n";
    env_ = {{"SLURM_CONF", conf_}};

    Spawn({FindProgram("munged"), "-F", "-f", "--socket=" + dir_ + "/munge/sock",
           "--key-file=" + dir_ + "/munge/key", "--log-file=" + dir_ + "/munge/log",
           "--pid-file=" + dir_ + "/munge/pid", "--seed-file=" + dir_ + "/munge/seed"});
    ASSERT_TRUE(WaitFor([&] { return fs::exists(dir_ + "/munge/sock"); }, 10))
        << "munged did not start";
    Spawn({FindProgram("slurmctld"), "-D", "-i", "-f", conf_});
    Spawn({FindProgram("slurmd"), "-D", "-f", conf_});
    ASSERT_TRUE(WaitFor(
        [&] {
          RunOutput r = RunProgram("sinfo", {"-h", "-o", "%T"}, Opts());
          return r.exit_code == 0 && r.out.find("idle") != std::string::npos;
        },
        30))
        << ReadFile(dir_ + "/ctld.log") << ReadFile(dir_ + "/d.log");
  }

  void TearDown() override {
    if (!slurm_job_.empty()) {
      RunProgram("scancel", {slurm_job_}, Opts());
      // Let slurmd end the job's processes before the daemons go.
      WaitFor(
          [&] {
            std::string state = SlurmState();
            return state != "RUNNING" && state != "COMPLETING";
          },
          20);
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
    for (auto it = pids_.rbegin(); it != pids_.rend(); ++it) kill(*it, SIGTERM);
    for (pid_t pid : pids_) {
      for (int i = 0; i < 50 && waitpid(pid, nullptr, WNOHANG) == 0; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
    if (!HasFailure() && !dir_.empty()) fs::remove_all(dir_);
  }

  void Spawn(const std::vector<std::string>& argv) {
    pid_t pid = fork();
    if (pid == 0) {
      setenv("SLURM_CONF", conf_.c_str(), 1);
      std::string log = dir_ + "/" + fs::path(argv[0]).filename().string() + ".out";
      freopen(log.c_str(), "a", stdout);
      freopen(log.c_str(), "a", stderr);
      std::vector<char*> args;
      for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      execv(args[0], args.data());
      _exit(127);
    }
    pids_.push_back(pid);
  }

  RunOptions Opts() const {
    RunOptions o;
    o.env = env_;
    o.timeout_seconds = 60;
    return o;
  }

  std::string SlurmState() {
    RunOutput r = RunProgram("squeue", {"-h", "-t", "all", "-j", slurm_job_, "-o", "%T"}, Opts());
    return std::string(r.out.substr(0, r.out.find('\n')));
  }

  // Releases a requeued job at once (Slurm holds a requeued job back for a while).
  void StartNowWhenPending() {
    ASSERT_TRUE(WaitFor([&] { return SlurmState() == "PENDING"; }, 30)) << SlurmState();
    RunProgram("scontrol", {"update", "jobid=" + slurm_job_, "StartTime=now"}, Opts());
  }

  std::string host_, dir_, conf_, slurm_job_;
  std::map<std::string, std::string> env_;
  std::vector<pid_t> pids_;
};

std::vector<long> ResumedSteps(const std::string& output) {
  std::vector<long> steps;
  static const std::regex kResumed(R"(resumed from \S+/step-(\d+) at step (\d+))");
  for (std::sregex_iterator it(output.begin(), output.end(), kResumed), end; it != end; ++it) {
    steps.push_back(std::stol((*it)[2]));
  }
  return steps;
}

TEST_F(SlurmTest, SubmitRequeueAndResume) {
  const std::string data = dir_ + "/data", ckpt = dir_ + "/ckpt";
  RunOutput submit = RunFulcrum({"submit",
                                 "--slurm",
                                 "--json",
                                 "--data-dir",
                                 data,
                                 "--name",
                                 "sj",
                                 "--nodes",
                                 "1",
                                 "--gpus-per-node",
                                 "2",
                                 "--preemption",
                                 "none",
                                 "--checkpoint-dir",
                                 ckpt,
                                 "--checkpoint-every",
                                 "1h",
                                 "--",
                                 FULCRUM_TRAINER,
                                 "--steps",
                                 "1000000",
                                 "--step-ms",
                                 "10",
                                 "--checkpoint-every-steps",
                                 "20"},
                                Opts());
  ASSERT_EQ(submit.exit_code, 0) << submit.err;
  auto doc = nlohmann::json::parse(submit.out);
  slurm_job_ = doc["submit"]["slurm_job_id"];
  const std::string output = doc["submit"]["output"];
  std::string script = ReadFile(doc["submit"]["script"]);
  EXPECT_NE(script.find("#SBATCH --gres=gpu:2"), std::string::npos) << script;
  EXPECT_NE(script.find("#SBATCH --requeue"), std::string::npos);
  EXPECT_NE(script.find("#SBATCH --signal=B:USR1@120"), std::string::npos);
  EXPECT_NE(script.find("' run '--name' 'sj'"), std::string::npos) << "runs under fulcrum run";

  // Running, with checkpoints.
  ASSERT_TRUE(WaitFor([&] { return fs::exists(ckpt + "/step-00000040/COMPLETE"); }, 60))
      << ReadFile(output) << SlurmState();
  RunOutput status = RunFulcrum({"status", "--json", "--data-dir", data}, Opts());
  ASSERT_EQ(status.exit_code, 0) << status.err;
  auto jobs = nlohmann::json::parse(status.out)["jobs"];
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(jobs[0]["slurm_job_id"], slurm_job_);
  EXPECT_EQ(jobs[0]["slurm_state"], "RUNNING");
  EXPECT_EQ(jobs[0]["state"], "running");

  // A requeue (what preemption or a node failure does): the job comes back and resumes.
  ASSERT_EQ(RunProgram("scontrol", {"requeue", slurm_job_}, Opts()).exit_code, 0);
  StartNowWhenPending();
  ASSERT_TRUE(WaitFor([&] { return ResumedSteps(ReadFile(output)).size() == 1; }, 60))
      << ReadFile(output);
  const long resumed = ResumedSteps(ReadFile(output))[0];
  EXPECT_GE(resumed, 40);
  EXPECT_EQ(resumed % 20, 0) << "a checkpoint step, never a partial one";
  EXPECT_TRUE(fs::exists(ckpt + "/step-" + std::string(8 - std::to_string(resumed).size(), '0') +
                         std::to_string(resumed) + "/COMPLETE"));

  // Slurm's advance notice (USR1 to the batch shell): fulcrum checkpoints, stops, and the script
  // requeues the job, which resumes again.
  ASSERT_TRUE(WaitFor(
      [&] {
        return ReadFile(output).find("step " + std::to_string(resumed + 30)) != std::string::npos;
      },
      60));
  ASSERT_EQ(RunProgram("scancel", {"--batch", "--signal=USR1", slurm_job_}, Opts()).exit_code, 0);
  ASSERT_TRUE(WaitFor(
      [&] { return ReadFile(output).find("requeueing job " + slurm_job_) != std::string::npos; },
      60))
      << ReadFile(output);
  std::string text = ReadFile(output);
  EXPECT_NE(text.find("(Slurm's advance notice)): requested a checkpoint"), std::string::npos)
      << text;
  EXPECT_NE(text.find("checkpoint saved; sending SIGTERM"), std::string::npos) << text;
  StartNowWhenPending();
  ASSERT_TRUE(WaitFor([&] { return ResumedSteps(ReadFile(output)).size() == 2; }, 60))
      << ReadFile(output);
  EXPECT_GT(ResumedSteps(ReadFile(output))[1], resumed);
}

}  // namespace
}  // namespace fulcrum::testing
