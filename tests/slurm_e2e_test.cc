// End-to-end tests of `fulcrum submit --slurm` against a real Slurm that the tests start: munged,
// slurmctld and slurmd in a temporary directory (own munge socket and key, ephemeral ports, fake
// GPUs declared through gres.conf File= entries on plain files).
// - SlurmTest: a single-host cluster. The test trainer is requeued like a preemption and resumes
//   from its last complete checkpoint; Slurm's advance notice (USR1 to the batch shell) and a
//   SIGTERM make fulcrum checkpoint, stop and requeue the job itself.
// - SlurmTwoNodeTest: two slurmd nodes, each in its own network namespace (a third holds
//   slurmctld and the bridge between them; nothing is added to the host's own network), entered
//   with nsenter (not `ip netns exec`, which remounts /sys and hides the cgroup tree slurmd
//   needs). A 2-node job is one job with one supervisor; a lost GPU (a sim agent's XID 79) drains
//   the node and the job runs again on the other one. Skipped when namespaces cannot be made
//   (not root, no `ip`).
// Skipped only when the Slurm or munge binaries are not installed.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
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

#include "core/parse.h"
#include "support/child_process.h"
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

std::string ReadFile(const std::string& path) { return FileContents(path); }

bool WaitFor(const std::function<bool()>& predicate, double seconds) {
  return PollUntil(predicate, seconds, 0.1);
}

// A Slurm cluster started by a test: one node on this host, or `nodes` slurmd nodes (n1, n2, ...)
// in network namespaces.
// Slurm holds a requeued job back for AuthInfo cred_expire seconds (slurm.conf(5): "This also
// controls how long a requeued job must wait before starting again. The default value is 120
// seconds."); the tests' clusters use 10 s so that the migration test waits for what Slurm
// itself does, without an outside release, in test time.
constexpr int kCredExpireSeconds = 10;

class SlurmClusterTest : public ::testing::Test {
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
  }

  // Network namespaces: <prefix>c holds slurmctld and a bridge, <prefix>N node nN at 10.77.0.N+1.
  // False (with the reason in `why`) when they cannot be made here.
  bool MakeNamespaces(int nodes, std::string* why) {
    if (FindProgram("ip").empty() || FindProgram("nsenter").empty()) {
      *why = "ip or nsenter is not installed (Debian: iproute2, util-linux)";
      return false;
    }
    // Namespaces left by a test process that died before its TearDown (the pid is in the name).
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator("/run/netns", ec)) {
      const std::string name = entry.path().filename().string();
      if (name.rfind("fulcrum-slurm-", 0) != 0) continue;
      const pid_t owner = static_cast<pid_t>(std::atol(name.c_str() + 14));
      if (owner > 0 && kill(owner, 0) != 0 && errno == ESRCH)
        RunProgram(FindProgram("ip"), {"netns", "delete", name});
    }
    prefix_ = "fulcrum-slurm-" + std::to_string(getpid()) + "-";
    auto ip = [&](const std::vector<std::string>& args) {
      RunOutput r = RunProgram(FindProgram("ip"), args, Opts());
      if (r.exit_code != 0 && why->empty()) *why = "ip " + args[0] + " ...: " + r.err;
      return r.exit_code == 0;
    };
    const std::string ctl = prefix_ + "c";
    bool ok = ip({"netns", "add", ctl});
    if (ok) namespaces_.push_back(ctl);
    ok = ok && ip({"-n", ctl, "link", "set", "lo", "up"}) &&
         ip({"-n", ctl, "link", "add", "br0", "type", "bridge"}) &&
         ip({"-n", ctl, "addr", "add", "10.77.0.1/24", "dev", "br0"}) &&
         ip({"-n", ctl, "link", "set", "br0", "up"});
    for (int n = 1; ok && n <= nodes; ++n) {
      const std::string ns = prefix_ + std::to_string(n), veth = "v" + std::to_string(n);
      ok = ip({"netns", "add", ns});
      if (ok) namespaces_.push_back(ns);
      ok = ok &&
           ip({"-n", ctl, "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns",
               ns}) &&
           ip({"-n", ctl, "link", "set", veth, "master", "br0", "up"}) &&
           ip({"-n", ns, "addr", "add", NodeAddr(n) + "/24", "dev", "eth0"}) &&
           ip({"-n", ns, "link", "set", "eth0", "up"}) && ip({"-n", ns, "link", "set", "lo", "up"});
    }
    return ok;
  }

  static std::string NodeAddr(int n) { return "10.77.0." + std::to_string(n + 1); }

  // argv run inside namespace `ns` ("" = this host's).
  std::vector<std::string> In(const std::string& ns, std::vector<std::string> argv) const {
    if (ns.empty()) return argv;
    argv.insert(argv.begin(), "--net=/run/netns/" + ns);
    argv.insert(argv.begin(), FindProgram("nsenter"));
    return argv;
  }
  std::string CtlNs() const { return prefix_.empty() ? "" : prefix_ + "c"; }
  std::string NodeNs(int n) const { return prefix_.empty() ? "" : prefix_ + std::to_string(n); }

  // Starts munged, slurmctld and the slurmd(s); `nodes` > 0 puts each in its namespace.
  // A munge key in <dir>/munge and the state and spool dirs.
  void PrepareDirs() {
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
    if (spool_dir_.empty()) spool_dir_ = dir_ + "/spool";
  }

  void StartMungeAndController() {
    Spawn({FindProgram("munged"), "-F", "-f", "--socket=" + dir_ + "/munge/sock",
           "--key-file=" + dir_ + "/munge/key", "--log-file=" + dir_ + "/munge/log",
           "--pid-file=" + dir_ + "/munge/pid", "--seed-file=" + dir_ + "/munge/seed"},
          "munged");
    ASSERT_TRUE(WaitFor([&] { return fs::exists(dir_ + "/munge/sock"); }, 10))
        << "munged did not start";
    Spawn(In(CtlNs(), {FindProgram("slurmctld"), "-D", "-i", "-f", conf_}), "slurmctld");
  }

  // The slurm.conf lines every test cluster shares (SlurmctldHost on the controller's namespace
  // address when `netns`).
  std::string BaseConf(bool netns) {
    std::ostringstream conf;
    // FULCRUM_TEST_SLURM_DEBUG=1: slurmctld logs at debug2 (scheduling, node registrations).
    conf << "ClusterName=fulcrumtest\nSlurmctldHost=" << host_ << (netns ? "(10.77.0.1)" : "")
         << "\nSlurmctldPort=" << FreeLoopbackPort() << "\nSlurmdPort=" << FreeLoopbackPort()
         << "\nAuthType=auth/munge\nAuthInfo=socket=" << dir_
         << "/munge/sock,cred_expire=" << kCredExpireSeconds
         << "\nCredType=cred/munge\nProctrackType=proctrack/linuxproc\nTaskPlugin=task/"
            "none\n"
         << "ReturnToService=2\nSlurmUser=root\nSlurmdUser=root\nSchedulerType=sched/backfill\n"
         << "SelectType=select/cons_tres\nSelectTypeParameters=CR_Core\nGresTypes=" << gres_types_
         << "\n"
         << "StateSaveLocation=" << dir_ << "/state\nSlurmdSpoolDir=" << spool_dir_ << "/%n\n"
         << "SlurmctldPidFile=" << dir_ << "/slurmctld.pid\nSlurmdPidFile=" << dir_
         << "/slurmd-%n.pid\n"
         << "SlurmctldLogFile=" << dir_ << "/ctld.log\nSlurmdLogFile=" << dir_ << "/d-%n.log\n"
         << "KillWait=5\nMinJobAge=600\nJobRequeue=1\n"
         << (getenv("FULCRUM_TEST_SLURM_DEBUG") ? "SlurmctldDebug=debug2\n" : "");
    return conf.str();
  }

  void StartCluster(int nodes, int gpus_per_node) {
    const bool netns = nodes > 0;
    PrepareDirs();
    std::vector<std::string> names;
    if (netns) {
      for (int n = 1; n <= nodes; ++n) names.push_back("n" + std::to_string(n));
    } else {
      names.push_back(host_);
    }
    const std::string last_gpu = std::to_string(gpus_per_node - 1);
    for (const auto& name : names) {
      for (int i = 0; i < gpus_per_node; ++i)
        std::ofstream(dir_ + "/gpu-" + name + "-" + std::to_string(i));
    }
    conf_ = dir_ + "/slurm.conf";
    std::ofstream conf(conf_);
    conf << BaseConf(netns);
    const unsigned cpus = netns ? 2 : std::max(1u, std::thread::hardware_concurrency());
    for (size_t i = 0; i < names.size(); ++i) {
      conf << "NodeName=" << names[i];
      if (netns) conf << " NodeAddr=" << NodeAddr(static_cast<int>(i) + 1);
      conf << " CPUs=" << cpus << " RealMemory=1000 Gres=gpu:" << gpus_per_node << node_gres_extra_
           << " State=UNKNOWN\n";
    }
    std::string node_list;
    for (const auto& name : names) node_list += (node_list.empty() ? "" : ",") + name;
    conf << "PartitionName=debug Nodes=" << node_list << " Default=YES MaxTime=INFINITE State=UP\n";
    conf.close();
    {
      std::ofstream gres(dir_ + "/gres.conf");
      for (const auto& name : names) {
        gres << "NodeName=" << name << " Name=gpu File=" << dir_ << "/gpu-" << name << "-[0-"
             << last_gpu << "]\n";
      }
      for (const auto& line : gres_extra_lines_) gres << line << "\n";
    }
    env_ = {{"SLURM_CONF", conf_}};

    StartMungeAndController();
    if (netns) {
      for (int n = 1; n <= nodes; ++n) {
        Spawn(In(NodeNs(n), {FindProgram("slurmd"), "-D", "-N", names[n - 1], "-f", conf_}),
              "slurmd-" + names[n - 1]);
      }
    } else {
      Spawn({FindProgram("slurmd"), "-D", "-f", conf_}, "slurmd");
    }
    const std::string idle = std::to_string(names.size()) + " idle";
    ASSERT_TRUE(WaitFor(
        [&] {
          RunOutput r = Slurm({"sinfo", "-h", "-o", "%D %T"});
          return r.exit_code == 0 && r.out.find(idle) != std::string::npos;
        },
        30))
        << Slurm({"sinfo"}).out << ReadFile(dir_ + "/ctld.log");
  }

  void TearDown() override {
    if (!slurm_job_.empty()) {
      Slurm({"scancel", slurm_job_});
      // Let slurmd end the job's processes before the daemons go.
      WaitFor(
          [&] {
            std::string state = SlurmState();
            return state != "RUNNING" && state != "COMPLETING";
          },
          20);
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
    for (auto it = children_.rbegin(); it != children_.rend(); ++it) (*it)->Signal(SIGTERM);
    children_.clear();  // each is given 5 s to end, then SIGKILLed
    for (const auto& ns : namespaces_) RunProgram(FindProgram("ip"), {"netns", "delete", ns});
    if (!HasFailure() && !dir_.empty()) fs::remove_all(dir_);
  }

  // A long-lived child (daemon or agent), its output in <dir>/<tag>.out; stopped in TearDown.
  void Spawn(const std::vector<std::string>& argv, const std::string& tag) {
    const std::string log = dir_ + "/" + tag + ".out";
    children_.push_back(std::make_unique<ChildProcess>(
        argv[0], std::vector<std::string>(argv.begin() + 1, argv.end()), ChildLogs{log, log},
        std::map<std::string, std::string>{{"SLURM_CONF", conf_}}, 5));
  }

  RunOptions Opts() const {
    RunOptions o;
    o.env = env_;
    o.timeout_seconds = 60;
    return o;
  }

  // A Slurm client command, run where slurmctld is reachable.
  RunOutput Slurm(const std::vector<std::string>& argv) {
    std::vector<std::string> full = In(CtlNs(), argv);
    const std::string program = full[0];
    full.erase(full.begin());
    return RunProgram(program, full, Opts());
  }
  // The fulcrum binary, run where slurmctld is reachable.
  RunOutput Fulcrum(const std::vector<std::string>& args) {
    if (CtlNs().empty()) return RunFulcrum(args, Opts());
    std::vector<std::string> full = {"--net=/run/netns/" + CtlNs(), FULCRUM_BINARY};
    full.insert(full.end(), args.begin(), args.end());
    return RunProgram(FindProgram("nsenter"), full, Opts());
  }

  std::string SlurmField(const std::string& format) {
    RunOutput r = Slurm({"squeue", "-h", "-t", "all", "-j", slurm_job_, "-o", format});
    return std::string(r.out.substr(0, r.out.find('\n')));
  }
  std::string SlurmState() { return SlurmField("%T"); }

  // Submits the test trainer (a checkpoint every 20 steps, none on a cadence) as job `name`
  // with `options` (before --) and `launcher` words before the trainer; sets slurm_job_.
  // Returns the submit's JSON (its script and output paths); null after a failure.
  nlohmann::json SubmitTrainer(const std::string& name, const std::vector<std::string>& options,
                               const std::vector<std::string>& launcher = {}) {
    std::vector<std::string> args = {"submit", "--slurm",          "--json", "--data-dir",
                                     Data(),   "--name",           name,     "--preemption",
                                     "none",   "--checkpoint-dir", Ckpt(),   "--checkpoint-every",
                                     "1h"};
    args.insert(args.end(), options.begin(), options.end());
    args.push_back("--");
    args.insert(args.end(), launcher.begin(), launcher.end());
    for (const char* word : {FULCRUM_TRAINER, "--steps", "1000000", "--step-ms", "10",
                             "--checkpoint-every-steps", "20"})
      args.push_back(word);
    RunOutput submit = Fulcrum(args);
    EXPECT_EQ(submit.exit_code, 0) << submit.err;
    auto doc = nlohmann::json::parse(submit.out, nullptr, false);
    if (submit.exit_code != 0 || doc.is_discarded()) return nlohmann::json();
    slurm_job_ = doc["submit"]["slurm_job_id"];
    return doc["submit"];
  }
  std::string Data() const { return dir_ + "/data"; }
  std::string Ckpt() const { return dir_ + "/ckpt"; }

  // Releases a requeued job at once (Slurm holds a requeued job back for a while).
  void StartNowWhenPending() {
    ASSERT_TRUE(WaitFor([&] { return SlurmState() == "PENDING"; }, 30)) << SlurmState();
    Slurm({"scontrol", "update", "jobid=" + slurm_job_, "StartTime=now"});
  }

  // Sharing (SlurmShardTest): slurm.conf GresTypes, what the node's Gres= adds after gpu:N
  // (",shard:28"), and gres.conf lines after the GPUs'.
  std::string gres_types_ = "gpu", node_gres_extra_;
  std::vector<std::string> gres_extra_lines_;
  std::string host_, dir_, conf_, slurm_job_, prefix_;
  std::string spool_dir_;  // SlurmdSpoolDir without the %n; <dir>/spool unless a test sets it
  std::map<std::string, std::string> env_;
  std::vector<std::unique_ptr<ChildProcess>> children_;
  std::vector<std::string> namespaces_;
};

class SlurmTest : public SlurmClusterTest {
 protected:
  void SetUp() override {
    SlurmClusterTest::SetUp();
    if (IsSkipped()) return;
    StartCluster(0, 4);
  }
};

// The first match of `pattern` in `text`: the whole match and its groups; empty when none.
std::vector<std::string> Match(const std::string& text, const std::string& pattern) {
  std::smatch m;
  std::vector<std::string> groups;
  if (std::regex_search(text, m, std::regex(pattern))) {
    for (const auto& g : m) groups.push_back(g.str());
  }
  return groups;
}

int Count(const std::string& text, const std::string& needle) {
  int n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

std::vector<long> ResumedSteps(const std::string& output) {
  std::vector<long> steps;
  static const std::regex kResumed(R"(resumed from \S+/step-(\d+) at step (\d+))");
  for (std::sregex_iterator it(output.begin(), output.end(), kResumed), end; it != end; ++it) {
    steps.push_back(std::stol((*it)[2]));
  }
  return steps;
}

TEST_F(SlurmTest, SubmitRequeueAndResume) {
  const std::string data = Data(), ckpt = Ckpt();
  const nlohmann::json submitted = SubmitTrainer("sj", {"--nodes", "1", "--gpus-per-node", "2"});
  ASSERT_FALSE(submitted.is_null());
  const std::string output = submitted["output"];
  std::string script = ReadFile(submitted["script"]);
  EXPECT_NE(script.find("#SBATCH --gres=gpu:2"), std::string::npos) << script;
  EXPECT_NE(script.find("#SBATCH --requeue"), std::string::npos);
  EXPECT_NE(script.find("#SBATCH --signal=B:USR1@120"), std::string::npos);
  EXPECT_NE(script.find("' run '--name' 'sj'"), std::string::npos) << "runs under fulcrum run";
  // The stop fits in this cluster's KillWait=5 (read from scontrol show config, not the 30 s
  // default): the wait for the checkpoint and the SIGKILL delay are both inside it.
  EXPECT_NE(script.find("# KillWait 5s (from scontrol show config)"), std::string::npos) << script;
  const std::vector<std::string> grace = Match(script, R"('--stop-grace' '(\d+)s')");
  const std::vector<std::string> kill_after = Match(script, R"('--kill-after' '(\d+)s')");
  ASSERT_FALSE(grace.empty() || kill_after.empty()) << script;
  EXPECT_LT(std::stoi(grace[1]) + std::stoi(kill_after[1]), 5) << script;

  // Running, with checkpoints.
  ASSERT_TRUE(WaitFor([&] { return fs::exists(ckpt + "/step-00000040/COMPLETE"); }, 60))
      << ReadFile(output) << SlurmState();
  RunOutput status = Fulcrum({"status", "--json", "--data-dir", data});
  ASSERT_EQ(status.exit_code, 0) << status.err;
  auto jobs = nlohmann::json::parse(status.out)["jobs"];
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(jobs[0]["slurm_job_id"], slurm_job_);
  EXPECT_EQ(jobs[0]["slurm_state"], "RUNNING");
  EXPECT_EQ(jobs[0]["state"], "running");

  // A requeue (what preemption or a node failure does): the job comes back and resumes.
  ASSERT_EQ(Slurm({"scontrol", "requeue", slurm_job_}).exit_code, 0);
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
  ASSERT_EQ(Slurm({"scancel", "--batch", "--signal=USR1", slurm_job_}).exit_code, 0);
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
  const long resumed_after_usr1 = ResumedSteps(ReadFile(output))[1];
  EXPECT_GT(resumed_after_usr1, resumed);

  // SIGTERM to the batch shell (what a preemption with a grace time sends first) is a notice too:
  // checkpoint, stop, requeue, resume from that checkpoint.
  ASSERT_TRUE(WaitFor(
      [&] {
        return ReadFile(output).find("step " + std::to_string(resumed_after_usr1 + 30)) !=
               std::string::npos;
      },
      60));
  ASSERT_EQ(Slurm({"scancel", "--batch", "--signal=TERM", slurm_job_}).exit_code, 0);
  ASSERT_TRUE(
      WaitFor([&] { return Count(ReadFile(output), "requeueing job " + slurm_job_) == 2; }, 60))
      << ReadFile(output);
  text = ReadFile(output);
  EXPECT_NE(text.find("received SIGTERM): requested a checkpoint"), std::string::npos) << text;
  EXPECT_EQ(Count(text, "checkpoint saved; sending SIGTERM"), 2) << text;
  StartNowWhenPending();
  ASSERT_TRUE(WaitFor([&] { return ResumedSteps(ReadFile(output)).size() == 3; }, 60))
      << ReadFile(output);
  EXPECT_GE(ResumedSteps(ReadFile(output))[2], resumed_after_usr1 + 30)
      << "resumed from the checkpoint taken for the SIGTERM";
}

TEST_F(SlurmTest, ScancelIsNotUndoneByARequeue) {
  const nlohmann::json submitted = SubmitTrainer("sc", {});
  ASSERT_FALSE(submitted.is_null());
  const std::string output = submitted["output"];
  ASSERT_TRUE(WaitFor([&] { return ReadFile(output).find("step 20") != std::string::npos; }, 60))
      << ReadFile(output) << SlurmState();
  ASSERT_EQ(Slurm({"scancel", slurm_job_}).exit_code, 0);
  ASSERT_TRUE(WaitFor([&] { return SlurmState() == "CANCELLED"; }, 30)) << SlurmState();
  std::this_thread::sleep_for(std::chrono::seconds(2));
  EXPECT_EQ(SlurmState(), "CANCELLED") << ReadFile(output);
  EXPECT_EQ(ReadFile(output).find("requeueing job"), std::string::npos) << ReadFile(output);
}

TEST_F(SlurmTest, RefusesAStopGraceLongerThanKillWait) {
  RunOutput r = Fulcrum({"submit", "--slurm", "--json", "--data-dir", Data(), "--name", "long",
                         "--stop-grace", "60s", "--", "true"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  auto doc = nlohmann::json::parse(r.err, nullptr, false);
  ASSERT_FALSE(doc.is_discarded()) << r.out << r.err;
  const std::string message = doc["error"]["message"];
  EXPECT_NE(message.find("KillWait of 5s (from scontrol show config)"), std::string::npos)
      << message;
  EXPECT_EQ(doc["error"]["field"], "--stop-grace");
  EXPECT_EQ(doc["error"]["found"], "60s + 1s");
  EXPECT_FALSE(fs::exists(Data() + "/slurm/long.sbatch")) << "nothing submitted";
}

// Shards (issue 28): the node's shard lines come from `fulcrum slurm conf`, and jobs submitted
// with --gpu-memory ask for --gres=shard:N and run side by side on the fake GPUs.
class SlurmShardTest : public SlurmClusterTest {
 protected:
  void SetUp() override {
    SlurmClusterTest::SetUp();
    if (IsSkipped()) return;
    RunOutput conf = RunFulcrum({"slurm", "conf", "--json", "--node", host_, "--node-gpus",
                                 "4x80GiB", "--gpu-files", dir_ + "/gpu-" + host_ + "-[0-3]"});
    ASSERT_EQ(conf.exit_code, 0) << conf.err;
    const auto doc = nlohmann::json::parse(conf.out)["slurm_conf"];
    EXPECT_EQ(doc["per_gpu"], 7) << "72 GiB usable per GPU: 7 shards of 10 GiB";
    const std::string types = doc["slurm_conf"][0], node = doc["slurm_conf"][1];
    ASSERT_EQ(types.rfind("GresTypes=", 0), 0u) << types;
    gres_types_ = types.substr(std::string("GresTypes=").size());
    const std::string gpus = "Gres=gpu:4";
    ASSERT_NE(node.find(gpus), std::string::npos) << node;
    node_gres_extra_ = node.substr(node.find(gpus) + gpus.size());
    gres_extra_lines_ = {doc["gres_conf"][1].get<std::string>()};
    StartCluster(0, 4);
  }
};

TEST_F(SlurmShardTest, JobsThatShareAGpuAskForShardsAndRunSideBySide) {
  std::vector<std::string> ids;
  for (const std::string name : {"share-a", "share-b"}) {
    const nlohmann::json submitted = SubmitTrainer(name, {"--gpu-memory", "30GiB"});
    ASSERT_FALSE(submitted.is_null());
    EXPECT_NE(ReadFile(submitted["script"]).find("#SBATCH --gres=shard:3\n"), std::string::npos);
    ids.push_back(slurm_job_);
  }
  ASSERT_TRUE(WaitFor(
      [&] {
        RunOutput r = Slurm({"squeue", "-h", "-t", "RUNNING", "-o", "%i"});
        return Count(r.out, "\n") == 2;
      },
      30))
      << Slurm({"squeue", "-o", "%i %T %r %b"}).out << ReadFile(dir_ + "/ctld.log");
  const std::string tres = Slurm({"squeue", "-h", "-o", "%b"}).out;
  EXPECT_EQ(Count(tres, "shard:3"), 2) << tres;
  for (const auto& id : ids) Slurm({"scancel", id});
}

class SlurmTwoNodeTest : public SlurmClusterTest {
 protected:
  void SetUp() override {
    SlurmClusterTest::SetUp();
    if (IsSkipped()) return;
    std::string why;
    if (getuid() != 0) GTEST_SKIP() << "network namespaces need root";
    if (!MakeNamespaces(2, &why)) GTEST_SKIP() << "cannot make network namespaces here: " << why;
    StartCluster(2, 1);
  }

  // A stand-in for torchrun (Debian's torchrun of torch 1.13 does not start on Python 3.11): it
  // logs the node and the options it got, drops its options, and runs the trainer on the job's
  // first node only, as torchrun's rank 0 would checkpoint; the other node's worker waits.
  std::string FakeTorchrun() {
    const std::string path = dir_ + "/bin/torchrun";
    fs::create_directories(dir_ + "/bin");
    std::ofstream(path) << "#!/bin/bash\n"
                        << "echo \"$SLURMD_NODENAME rank=$SLURM_NODEID $*\" >> " << dir_
                        << "/launch.log\n"
                        << "while [[ \"$1\" == --* ]]; do shift 2; done\n"
                        << "if [ \"$SLURM_NODEID\" = 0 ]; then exec \"$@\"; fi\n"
                        << "trap 'exit 0' TERM\nwhile :; do sleep 0.1; done\n";
    fs::permissions(path, fs::perms::owner_all);
    return path;
  }

  std::vector<std::string> Lines(const std::string& path) {
    std::vector<std::string> lines;
    std::istringstream in(ReadFile(path));
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
  }
};

TEST_F(SlurmTwoNodeTest, TwoNodeJobIsOneJobAndResumesAfterARequeue) {
  const std::string data = Data(), ckpt = Ckpt();
  const nlohmann::json submitted = SubmitTrainer("mn", {"--nodes", "2", "--gpus-per-node", "1"},
                                                 {FakeTorchrun(), "--nproc-per-node", "1"});
  ASSERT_FALSE(submitted.is_null());
  const std::string output = submitted["output"];
  ASSERT_TRUE(WaitFor([&] { return fs::exists(ckpt + "/step-00000040/COMPLETE"); }, 60))
      << ReadFile(output) << SlurmState() << ReadFile(dir_ + "/ctld.log");
  EXPECT_EQ(SlurmField("%T %D %N"), "RUNNING 2 n[1-2]");

  // One launcher per node, each told the job's size and the one rendezvous on the first host.
  const std::string rendezvous =
      "--nnodes 2 --rdzv-backend c10d --rdzv-endpoint n1:29400 "
      "--rdzv-id " +
      slurm_job_ + " --nproc-per-node 1 ";
  std::vector<std::string> launches = Lines(dir_ + "/launch.log");
  std::sort(launches.begin(), launches.end());
  ASSERT_EQ(launches.size(), 2u) << ReadFile(dir_ + "/launch.log");
  EXPECT_EQ(launches[0].rfind("n1 rank=0 " + rendezvous, 0), 0u) << launches[0];
  EXPECT_EQ(launches[1].rfind("n2 rank=1 " + rendezvous, 0), 0u) << launches[1];
  // One supervisor: one trainer, one job in jobs.db.
  EXPECT_EQ(Count(ReadFile(output), "trainer pid"), 1) << ReadFile(output);
  RunOutput status = Fulcrum({"status", "--json", "--data-dir", data});
  ASSERT_EQ(status.exit_code, 0) << status.err;
  auto jobs = nlohmann::json::parse(status.out)["jobs"];
  ASSERT_EQ(jobs.size(), 1u) << status.out;
  EXPECT_EQ(jobs[0]["slurm_state"], "RUNNING");

  // A preemption (scontrol requeue): both nodes start again, the job resumes from its last
  // complete checkpoint.
  ASSERT_EQ(Slurm({"scontrol", "requeue", slurm_job_}).exit_code, 0);
  StartNowWhenPending();
  ASSERT_TRUE(WaitFor([&] { return ResumedSteps(ReadFile(output)).size() == 1; }, 60))
      << ReadFile(output) << SlurmState();
  const long resumed = ResumedSteps(ReadFile(output))[0];
  EXPECT_GE(resumed, 40);
  EXPECT_EQ(resumed % 20, 0) << "a checkpoint step, never a partial one";
  EXPECT_TRUE(WaitFor([&] { return Lines(dir_ + "/launch.log").size() == 4; }, 30))
      << ReadFile(dir_ + "/launch.log");
  EXPECT_EQ(Count(ReadFile(output), "trainer pid"), 2) << ReadFile(output);
}

TEST_F(SlurmTwoNodeTest, LostGpuDrainsTheNodeAndTheJobRunsOnTheOther) {
  const std::string ckpt = Ckpt();
  const int agent_port = FreeLoopbackPort();
  const std::string agent = "http://127.0.0.1:" + std::to_string(agent_port);
  const nlohmann::json submitted = SubmitTrainer("hw", {"--gpus-per-node", "1", "--agent", agent});
  ASSERT_FALSE(submitted.is_null());
  const std::string output = submitted["output"];
  ASSERT_TRUE(WaitFor([&] { return fs::exists(ckpt + "/step-00000040/COMPLETE"); }, 60))
      << ReadFile(output) << SlurmState();
  const std::string node = SlurmField("%N");
  ASSERT_TRUE(node == "n1" || node == "n2") << node;
  const std::string other = node == "n1" ? "n2" : "n1";

  // The node's agent (sim source) sees GPU 0 fall off the bus one second after it starts.
  const std::string scenario = dir_ + "/xid79.yaml";
  std::ofstream(scenario) << "- {at: 1s, gpu: 0, fault: \"xid:79\"}\n";
  Spawn(In(NodeNs(node == "n1" ? 1 : 2),
           {FULCRUM_BINARY, "agent", "--source", "sim", "--sim-gpus", "1", "--sim-scenario",
            scenario, "--listen", "127.0.0.1:" + std::to_string(agent_port), "--data-dir",
            dir_ + "/agent-data"}),
        "agent");
  const auto fault_at = std::chrono::steady_clock::now() + std::chrono::seconds(1);

  ASSERT_TRUE(WaitFor([&] { return SlurmField("%T %N") == "RUNNING " + other; }, 90))
      << SlurmField("%T %N %r") << ReadFile(output) << ReadFile(dir_ + "/agent.out");
  const double to_running =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - fault_at).count();
  ASSERT_TRUE(WaitFor([&] { return ResumedSteps(ReadFile(output)).size() == 1; }, 60))
      << ReadFile(output);
  const double to_resumed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - fault_at).count();

  const std::string text = ReadFile(output);
  EXPECT_NE(text.find("GPU fault on node " + node +
                      ": GPU 0 XID 79 (fallen off the bus); node "
                      "drained"),
            std::string::npos)
      << text;
  const std::string shown = Slurm({"scontrol", "show", "node", node}).out;
  EXPECT_NE(shown.find("DRAIN"), std::string::npos) << shown;
  EXPECT_NE(shown.find("Reason=fulcrum: GPU 0 XID 79"), std::string::npos) << shown;
  // It resumed from the checkpoint it took when the fault was seen (the job could still write
  // one: the sim GPU is not the one the trainer uses), the last complete one.
  const long resumed = ResumedSteps(text)[0];
  const std::vector<std::string> last =
      Match(text, R"(job stopped: [^\n]*GPU fault[^\n]*last checkpoint \S+/step-(\d+))");
  ASSERT_FALSE(last.empty()) << text;
  EXPECT_EQ(resumed, std::stol(last[1])) << text;
  EXPECT_GE(resumed, 40);
  std::printf("gpu fault -> job RUNNING on %s: %.1f s; -> training resumed at step %ld: %.1f s\n",
              other.c_str(), to_running, resumed, to_resumed);
  RecordProperty("fault_to_running_seconds", std::to_string(to_running));
  RecordProperty("fault_to_resumed_seconds", std::to_string(to_resumed));
}

// A job on two nodes watches both: the second node's GPU falls off the bus (its own agent sees
// it), and that node is drained, the job checkpoints, stops and is requeued, where it waits for
// two healthy nodes. The batch host, whose agent is healthy, is left alone.
TEST_F(SlurmTwoNodeTest, LostGpuOnTheSecondNodeOfAJobDrainsThatNode) {
  const std::string ckpt = Ckpt();
  const int agent_port = FreeLoopbackPort();
  const std::string agent = "http://127.0.0.1:" + std::to_string(agent_port);
  const nlohmann::json submitted =
      SubmitTrainer("mnhw", {"--nodes", "2", "--gpus-per-node", "1", "--agent", agent},
                    {FakeTorchrun(), "--nproc-per-node", "1"});
  ASSERT_FALSE(submitted.is_null());
  const std::string output = submitted["output"];
  ASSERT_TRUE(WaitFor([&] { return fs::exists(ckpt + "/step-00000040/COMPLETE"); }, 60))
      << ReadFile(output) << SlurmState();
  ASSERT_EQ(SlurmField("%T %D"), "RUNNING 2");
  const std::string batch_host = SlurmField("%B");
  ASSERT_TRUE(batch_host == "n1" || batch_host == "n2") << batch_host;
  const std::string second = batch_host == "n1" ? "n2" : "n1";

  // Each node has its agent on its own loopback, at the job's --agent URL; only the second
  // node's GPU 0 falls off the bus, one second after its agent starts.
  const std::string healthy = dir_ + "/healthy.yaml", xid79 = dir_ + "/xid79.yaml";
  std::ofstream(healthy) << "[]\n";
  std::ofstream(xid79) << "- {at: 1s, gpu: 0, fault: \"xid:79\"}\n";
  for (const auto& [node, scenario] : {std::pair{batch_host, healthy}, std::pair{second, xid79}}) {
    Spawn(In(NodeNs(node == "n1" ? 1 : 2),
             {FULCRUM_BINARY, "agent", "--source", "sim", "--sim-gpus", "1", "--sim-scenario",
              scenario, "--listen", "127.0.0.1:" + std::to_string(agent_port), "--data-dir",
              dir_ + "/agent-" + node}),
          "agent-" + node);
  }

  ASSERT_TRUE(WaitFor(
      [&] { return ReadFile(output).find("requeueing job " + slurm_job_) != std::string::npos; },
      60))
      << ReadFile(output) << ReadFile(dir_ + "/agent-" + second + ".out");
  const std::string text = ReadFile(output);
  EXPECT_NE(text.find("GPU fault on node " + second +
                      ": GPU 0 XID 79 (fallen off the bus); node drained"),
            std::string::npos)
      << text;
  EXPECT_FALSE(
      Match(text, R"(job stopped: [^\n]*GPU fault[^\n]*last checkpoint \S+/step-\d+)").empty())
      << "it checkpointed before it stopped\n"
      << text;
  const std::string shown = Slurm({"scontrol", "show", "node", second}).out;
  EXPECT_NE(shown.find("DRAIN"), std::string::npos) << shown;
  EXPECT_NE(shown.find("Reason=fulcrum: GPU 0 XID 79"), std::string::npos) << shown;
  const std::string batch_shown = Slurm({"scontrol", "show", "node", batch_host}).out;
  EXPECT_EQ(batch_shown.find("DRAIN"), std::string::npos) << batch_shown;
  // Requeued: it waits for two nodes, with one drained.
  EXPECT_TRUE(WaitFor([&] { return SlurmState() == "PENDING"; }, 30)) << SlurmState();
}

// Power saving that follows the queue (issue 28): a cluster of State=CLOUD nodes from
// `fulcrum slurm conf --cloud`, started at 0 nodes. Slurm runs `fulcrum slurm resume` with the
// nodes it wants; the config's provider argv is a fake provider that answers a capacity error for
// the cheaper node type and starts slurmd in a network namespace for the other (n-th node of a
// type in namespace n), and ends it on `down`.
class SlurmCloudTest : public SlurmClusterTest {
 protected:
  static constexpr const char* kFull = "lambda/gpu_1x_a6000/us-east-1";  // $1.09/h, no capacity
  static constexpr const char* kSpare = "lambda/gpu_1x_a10/us-east-1";   // $1.29/h

  void SetUp() override {
    SlurmClusterTest::SetUp();
    if (IsSkipped()) return;
    std::string why;
    if (getuid() != 0) GTEST_SKIP() << "network namespaces need root";
    if (!MakeNamespaces(2, &why)) GTEST_SKIP() << "cannot make network namespaces here: " << why;
    // slurmstepd's socket, <SlurmdSpoolDir>/<node>_<job>.<step>, must fit a Unix socket path
    // (108 bytes); under the build tree with these long node names it did not ("Unix socket
    // path ... is too long (111 > 108)", and the job launch failed), so the spool is in /tmp.
    char spool[] = "/tmp/fulcrum-spool-XXXXXX";
    ASSERT_NE(mkdtemp(spool), nullptr);
    spool_dir_ = spool;
  }

  void TearDown() override {
    for (const auto& entry : fs::directory_iterator(dir_)) {
      const std::string name = entry.path().filename().string();
      // slurmd's own pid file (SlurmdPidFile=<dir>/slurmd-%n.pid) of each node it started.
      if (name.rfind("slurmd-", 0) != 0 || entry.path().extension() != ".pid") continue;
      const pid_t pid = static_cast<pid_t>(std::atol(ReadFile(entry.path().string()).c_str()));
      if (pid > 0) kill(pid, SIGKILL);  // a fake instance: it may not answer SIGTERM
    }
    SlurmClusterTest::TearDown();
    if (!spool_dir_.empty()) fs::remove_all(spool_dir_);
  }

  std::string Provider() {
    const std::string path = dir_ + "/provider";
    std::ofstream(path)
        << "#!/bin/bash\n"
        << "echo \"$(date +%s.%N) $*\" >> " << dir_ << "/provider.log\n"
        << "case \"$1\" in\n"
        << "up)\n"
        << "  mkdir -p " << spool_dir_ << "/\"$2\"\n"
        << "  if [ \"$3\" = gpu_1x_a6000 ]; then\n"
        << "    echo 'InsufficientInstanceCapacity: no gpu_1x_a6000 in us-east-1' >&2; exit 1\n"
        << "  fi\n"
        // The instance boots after the provider answered (and fulcrum gave Slurm its address).
        // slurmctld takes a powering-up node's registration only when the node booted after
        // the resume request (its boot time = now - the uptime slurmd reports; before that the
        // log says "Still waiting for boot of node X" until ResumeTimeout). A real instance
        // has just booted; this fake one shares a host that booted hours ago, so its slurmd
        // reports its own start as the boot (slurmd(8): "-b Report node rebooted when daemon
        // restarted. Used for testing purposes.").
        << "  setsid bash -c 'sleep 1; exec \"$@\"' boot " << FindProgram("nsenter")
        << " --net=/run/netns/" << prefix_ << "\"${2##*-}\" " << FindProgram("slurmd")
        << " -D -b -N \"$2\" -f " << conf_ << " > " << dir_
        << "/slurmd-\"$2\".out 2>&1 < /dev/null &\n"
        << "  echo NodeAddr=10.77.0.$(( ${2##*-} + 1 )); exit 0;;\n"
        << "down)\n"
        << "  kill -9 $(cat " << dir_ << "/slurmd-\"$2\".pid) 2>/dev/null; exit 0;;\n"
        << "esac\nexit 2\n";
    fs::permissions(path, fs::perms::owner_all);
    return path;
  }

  // Writes the config and slurm.conf (the suite's base and `fulcrum slurm conf --cloud`'s
  // lines), then starts munged and slurmctld: no slurmd runs until Slurm resumes a node.
  void StartCloud(const std::string& budget_usd) {
    PrepareDirs();
    conf_ = dir_ + "/slurm.conf";
    env_ = {{"SLURM_CONF", conf_}};
    const std::string config = dir_ + "/fulcrum-slurm.yaml";
    std::ofstream(config) << "data_dir: " << Data() << "\nbudget_usd: " << budget_usd
                          << "\noffers: [" << kFull << ", " << kSpare << "]\nmax_nodes: 2\n"
                          << "provision:\n  resume: [" << Provider()
                          << ", up, \"{node}\", \"{instance_type}\"]\n  suspend: [" << Provider()
                          << ", down, \"{node}\"]\n"
                          << "  capacity_errors: [InsufficientInstanceCapacity]\n  timeout: 30s\n";
    RunOutput lines =
        RunFulcrum({"--catalog", SourcePath("catalog"), "slurm", "conf", "--cloud", "--config",
                    config, "--programs", dir_ + "/programs", "--suspend-time", "5",
                    "--suspend-timeout", "5", "--resume-timeout", "60"});
    ASSERT_EQ(lines.exit_code, 0) << lines.err;
    cloud_conf_ = lines.out;
    std::ofstream(dir_ + "/gpu-cloud-0");
    std::ofstream(conf_) << BaseConf(true) << "SlurmdParameters=config_overrides\nTreeWidth=65533\n"
                         << cloud_conf_;
    std::ofstream(dir_ + "/gres.conf")
        << "NodeName=lambda-gpu-1x-a6000-[1-2],lambda-gpu-1x-a10-[1-2] Name=gpu File=" << dir_
        << "/gpu-cloud-0\n";
    StartMungeAndController();
    ASSERT_TRUE(WaitFor(
        [&] {
          RunOutput r = Slurm({"sinfo", "-h", "-o", "%D %T"});
          return r.exit_code == 0 && r.out.find("4 idle~") != std::string::npos;
        },
        30))
        << Slurm({"sinfo"}).out << ReadFile(dir_ + "/ctld.log");
  }

  std::string Sbatch(const std::string& name, int seconds) {
    RunOutput r = Slurm({"sbatch", "--parsable", "-J", name, "--gres=gpu:1", "-o",
                         dir_ + "/" + name + ".out", "--wrap", "sleep " + std::to_string(seconds)});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return std::string(Trim(r.out));
  }

  std::string State(const std::string& id) {
    return std::string(Trim(Slurm({"squeue", "-h", "-t", "all", "-j", id, "-o", "%T"}).out));
  }

  // Seconds of the first provider call after `after` whose arguments contain `text`; nullopt
  // when none.
  std::optional<double> ProviderCall(const std::string& text, double after = 0) {
    std::istringstream in(ReadFile(dir_ + "/provider.log"));
    for (std::string line; std::getline(in, line);) {
      const double at = std::stod(line.substr(0, line.find(' ')));
      if (at > after && line.find(text) != std::string::npos) return at;
    }
    return std::nullopt;
  }

  std::string cloud_conf_;
};

// Slurm (22.05.8 here) gives the three jobs both cheaper nodes and one of the others; the
// capacity error marks the cheaper two DOWN, Slurm requeues their jobs, fulcrum releases them
// from the requeue hold, and Slurm resumes the second node of the other type for them. Jobs
// start when slurmctld next checks the configuring jobs (every 30 s or so), so this takes
// about a minute.
TEST_F(SlurmCloudTest, TheQueuePowersNodesUpThroughResumeMovesPastACapacityErrorAndPowersDown) {
  StartCloud("100");
  EXPECT_NE(cloud_conf_.find("Weight=109"), std::string::npos) << cloud_conf_;
  EXPECT_NE(cloud_conf_.find("Weight=129"), std::string::npos) << cloud_conf_;
  std::vector<std::string> jobs;
  for (int i = 0; i < 3; ++i) jobs.push_back(Sbatch("q" + std::to_string(i), 4));
  ASSERT_TRUE(WaitFor(
      [&] {
        for (const auto& id : jobs) {
          if (State(id) != "COMPLETED") return false;
        }
        return true;
      },
      120))
      << Slurm({"squeue", "-o", "%i %T %r %N"}).out << Slurm({"sinfo", "-R"}).out
      << ReadFile(Data() + "/logs/slurm-power.log") << ReadFile(dir_ + "/ctld.log");
  // The cheaper type was tried first (lowest Weight), failed for capacity, and was marked DOWN
  // at once; the jobs ran on the other type.
  // The failover: from the capacity error to the first start of the other type after it (the
  // first a10 node may have been started with the a6000s, for the third job).
  const auto full = ProviderCall("up lambda-gpu-1x-a6000");
  ASSERT_TRUE(full) << ReadFile(dir_ + "/provider.log");
  const auto spare = ProviderCall("up lambda-gpu-1x-a10", *full);
  ASSERT_TRUE(spare) << ReadFile(dir_ + "/provider.log");
  const double failover = *spare - *full;
  std::cout << "failover from the capacity error to the next node type: " << failover << " s\n"
            << ReadFile(dir_ + "/provider.log");
  RecordProperty("capacity_failover_seconds", std::to_string(failover));
  EXPECT_LT(failover, 20) << "goal: within seconds, not at ResumeTimeout (60 s here)";
  const std::string reasons = Slurm({"sinfo", "-R", "-h", "-o", "%n %E"}).out;
  EXPECT_NE(reasons.find("fulcrum: capacity: lambda/gpu_1x_a6000/us-east-1"), std::string::npos)
      << reasons;
  const std::string log = ReadFile(Data() + "/logs/slurm-power.log");
  EXPECT_NE(log.find("lambda-gpu-1x-a6000-1: job "), std::string::npos) << log;
  EXPECT_NE(log.find(" released (requeued by the DOWN mark"), std::string::npos) << log;
  EXPECT_NE(log.find("resume lambda-gpu-1x-a10-1: started"), std::string::npos) << log;
  EXPECT_NE(log.find("resume lambda-gpu-1x-a10-2: started"), std::string::npos) << log;
  // Idle for SuspendTime: Slurm runs `fulcrum slurm suspend`, which ends both.
  ASSERT_TRUE(WaitFor(
      [&] {
        const std::string l = ReadFile(Data() + "/logs/slurm-power.log");
        return l.find("suspend lambda-gpu-1x-a10-1: ended") != std::string::npos &&
               l.find("suspend lambda-gpu-1x-a10-2: ended") != std::string::npos;
      },
      60))
      << ReadFile(Data() + "/logs/slurm-power.log") << Slurm({"sinfo"}).out;
  EXPECT_TRUE(ProviderCall("down lambda-gpu-1x-a10-1").has_value());
  ASSERT_TRUE(WaitFor(
      [&] {
        return Slurm({"sinfo", "-h", "-n", "lambda-gpu-1x-a10-[1-2]", "-o", "%T"}).out == "idle~\n";
      },
      30))
      << Slurm({"sinfo"}).out;
}

TEST_F(SlurmCloudTest, ABudgetBlockedResumeLeavesTheJobPendingWithTheReasonInTheLog) {
  StartCloud("1");  // below an hour of either node type
  const std::string id = Sbatch("blocked", 1);
  ASSERT_TRUE(WaitFor(
      [&] {
        return ReadFile(Data() + "/logs/slurm-power.log").find("refused-budget") !=
               std::string::npos;
      },
      30))
      << ReadFile(dir_ + "/ctld.log");
  std::this_thread::sleep_for(std::chrono::seconds(2));
  EXPECT_EQ(State(id), "PENDING");
  EXPECT_FALSE(ProviderCall("up").has_value()) << "nothing was started";
  const std::string reasons = Slurm({"sinfo", "-R", "-h", "-o", "%n %E"}).out;
  EXPECT_NE(reasons.find("fulcrum: budget: spend $0.00 + $1.09 for an hour of " +
                         std::string(kFull) + " would pass --budget-usd $1.00"),
            std::string::npos)
      << reasons;
  Slurm({"scancel", id});
}

}  // namespace
}  // namespace fulcrum::testing
