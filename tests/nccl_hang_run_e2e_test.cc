// `fulcrum run --on-hang` end to end: the real binary supervises the test trainer, which hangs
// at a step; a loopback fake of NCCL's RAS socket (tests/support/fake_nccl_ras.h, NCCL
// v2.29.2-1's protocol and JSON report) then reports the trainer's rank behind at the same
// operation count. The supervisor names the rank, ends the hung job and restarts it from its
// last checkpoint; under Slurm (a recording `scontrol` on PATH, a fake agent with an XID on the
// rank's GPU) it drains the node and exits 75 for the batch script's requeue instead.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "core/mutex.h"
#include "store/jobs.h"
#include "support/fake_http_server.h"
#include "support/fake_nccl_ras.h"
#include "support/run_binary.h"

namespace fulcrum::testing {
namespace {
namespace fs = std::filesystem;

constexpr unsigned long long kHash = 0xc0ffeeULL;

// The trainer's pid of restart `restart` from the job log's "trainer pid N restart R" line.
int TrainerPid(const std::string& log, int restart) {
  const std::string tail = " restart " + std::to_string(restart) + " gpus";
  for (size_t at = log.find("trainer pid "); at != std::string::npos;
       at = log.find("trainer pid ", at + 1)) {
    const size_t end = log.find('\n', at);
    const std::string line = log.substr(at, end - at);
    if (line.find(tail) != std::string::npos) return std::atoi(line.c_str() + 12);
  }
  return 0;
}

class NcclHangRunE2E : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = MakeTempDir("nccl-hang-run");
    data_ = dir_ + "/data";
    ASSERT_GT(ras_.Start(), 0);
    ras_.SetReports(StalledText(2, -1, 7, kHash), StalledJson(2, -1, 7, kHash));  // healthy
  }
  void TearDown() override {
    stop_ = true;
    if (watch_.joinable()) watch_.join();
    if (!HasFailure()) fs::remove_all(dir_);
  }
  // Once the first trainer (pid N) prints its hang step, the fake RAS socket reports its rank 1
  // behind (rank 0 at pid N - 1); once a restarted trainer runs, the job is healthy again.
  // `on_stall` runs when the stall is first reported.
  void StallTheFirstTrainer(const std::string& name, std::function<void()> on_stall = {}) {
    watch_ = std::thread([this, name, on_stall] {
      const std::string log_path = data_ + "/logs/" + name + ".log";
      bool stalled = false;
      while (!stop_) {
        const std::string log = FileContents(log_path);
        const int pid = TrainerPid(log, 0);
        if (!stalled && pid > 0 && log.find("out step 12\n") != std::string::npos) {
          stalled = true;
          if (on_stall) on_stall();
          ras_.SetReports(StalledText(2, 1, 42, kHash, pid - 1),
                          StalledJson(2, 1, 42, kHash, pid - 1));
          first_pid_ = pid;
        }
        if (stalled && TrainerPid(log, 1) > 0) {
          ras_.SetReports(StalledText(2, -1, 43, kHash), StalledJson(2, -1, 43, kHash));
          return;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    });
  }
  std::vector<std::string> RunArgs(const std::string& name, std::vector<std::string> extra) {
    std::vector<std::string> args = {"run",
                                     "--name",
                                     name,
                                     "--data-dir",
                                     data_,
                                     "--preemption",
                                     "none",
                                     "--backoff",
                                     "0.05s",
                                     "--checkpoint-dir",
                                     dir_ + "/ckpt",
                                     "--no-checkpoint-requests",
                                     "--nccl-ras",
                                     ras_.address(),
                                     "--nccl-ras-interval",
                                     "1s",
                                     "--hang-grace",
                                     "1s",
                                     "--kill-after",
                                     "2s"};
    args.insert(args.end(), extra.begin(), extra.end());
    args.insert(args.end(),
                {"--", FULCRUM_TRAINER, "--steps", "30", "--step-ms", "10",
                 "--checkpoint-every-steps", "5", "--hang-at-step", "12", "--hang-times", "1"});
    return args;
  }
  nlohmann::json StatusOf(const std::string& name) {
    RunOutput status = RunFulcrum({"status", "--data-dir", data_, "--json", "--all"});
    EXPECT_EQ(status.exit_code, 0) << status.err;
    const auto doc = nlohmann::json::parse(status.out, nullptr, false);
    if (doc.is_object() && doc.contains("jobs")) {
      for (const auto& job : doc["jobs"]) {
        if (job["id"] == name) return job;
      }
    }
    ADD_FAILURE() << "no job " << name << " in " << status.out;
    return {};
  }

  std::string dir_, data_;
  FakeNcclRas ras_;
  std::atomic<bool> stop_{false};
  std::atomic<int> first_pid_{0};
  std::thread watch_;
};

TEST_F(NcclHangRunE2E, HungRankIsNamedAndTheJobRestartsFromItsCheckpoint) {
  StallTheFirstTrainer("hung");
  RunOptions options;
  options.timeout_seconds = 60;
  RunOutput r = RunFulcrum(RunArgs("hung", {"--agent", "none"}), options);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const int pid = first_pid_;
  ASSERT_GT(pid, 0);
  const std::string named = "NCCL hang: rank 1 (pid " + std::to_string(pid) +
                            " on 10.0.0.1, GPU 1): AllReduce op 41 "
                            "of 42 in comm 0xc0ffee";
  EXPECT_NE(r.err.find("ALERT nccl_hang (critical): " + named), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("the job is hung; sending SIGTERM"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("resumed from " + dir_ + "/ckpt/step-00000010 at step 10"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("done at step 30"), std::string::npos) << r.out;
  auto db = store::JobsDb::OpenInDataDir(data_, true);
  ASSERT_TRUE(db.ok());
  auto restarts = db->ListRestarts("hung");
  ASSERT_TRUE(restarts.ok());
  ASSERT_EQ(restarts->size(), 1u);
  EXPECT_NE((*restarts)[0].reason.find(named), std::string::npos) << (*restarts)[0].reason;
  const nlohmann::json job = StatusOf("hung");
  EXPECT_EQ(job["state"], "succeeded");
  EXPECT_EQ(job["restarts"], 1);
}

TEST_F(NcclHangRunE2E, XidOnTheHungRanksGpuDrainsTheNodeAndTheJobLeavesIt) {
  // The node's agent: no XID when the run starts, XID 74 (NVLink) on GPU 1 once rank 1 hangs.
  Mutex mutex;
  std::string gpus = R"({"gpus":[{"index":0,"last_xid":0},{"index":1,"last_xid":0}]})";
  FakeHttpServer agent;
  agent.server().Get("/v1/gpus", [&](const httplib::Request&, httplib::Response& res) {
    MutexLock lock(mutex);
    res.set_content(gpus, "application/json");
  });
  ASSERT_GT(agent.Start(), 0);
  // scontrol(1) as a recorder: one argument per line, each call ended by "--".
  const std::string bin = dir_ + "/bin";
  fs::create_directories(bin);
  {
    std::ofstream script(bin + "/scontrol");
    script << "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done >> " << dir_
           << "/scontrol.calls\necho -- >> " << dir_ << "/scontrol.calls\n";
  }
  ::chmod((bin + "/scontrol").c_str(), 0755);
  StallTheFirstTrainer("slurm-hung", [&] {
    MutexLock lock(mutex);
    gpus = R"({"gpus":[{"index":0,"last_xid":0},{"index":1,"last_xid":74}]})";
  });
  RunOptions options;
  options.timeout_seconds = 60;
  options.env = {{"FULCRUM_QUEUE", "slurm"},
                 {"SLURMD_NODENAME", "fake-node-1"},
                 {"SLURM_JOB_NUM_NODES", "1"},
                 {"PATH", bin + ":" + std::getenv("PATH")}};
  RunOutput r = RunFulcrum(RunArgs("slurm-hung", {"--agent", agent.url()}), options);
  EXPECT_EQ(r.exit_code, 75) << "stopped for the batch script's requeue\n" << r.err;
  EXPECT_EQ(FileContents(dir_ + "/scontrol.calls"),
            "update\nnodename=fake-node-1\nstate=drain\nreason=fulcrum: NCCL hang rank 1, XID "
            "74\n--\n");
  EXPECT_EQ(r.out.find("resumed from"), std::string::npos) << "not restarted on this node";
  const nlohmann::json job = StatusOf("slurm-hung");
  EXPECT_EQ(job["state"], "stopped");
  const std::string reason = job["reason"].get<std::string>();
  EXPECT_NE(
      reason.find("rank 1 (pid " + std::to_string(first_pid_.load()) + " on 10.0.0.1, GPU 1)"),
      std::string::npos)
      << reason;
  EXPECT_NE(reason.find("node fake-node-1 drained (NCCL hang rank 1, XID 74 on GPU 1)"),
            std::string::npos)
      << reason;
}

TEST_F(NcclHangRunE2E, BadHangFlagsAreRefusedWithTheFlagNamed) {
  const auto run = [&](const std::string& flag, const std::string& value) {
    return RunFulcrum({"run", "--data-dir", data_, "--preemption", "none", flag, value, "--",
                       FULCRUM_TRAINER, "--steps", "1"});
  };
  RunOutput action = run("--on-hang", "restart");
  EXPECT_EQ(action.exit_code, 2);
  EXPECT_NE(action.err.find("--on-hang: expected requeue, stop or ignore, found 'restart'"),
            std::string::npos)
      << action.err;
  RunOutput address = run("--nccl-ras", "gpu-node:28028");
  EXPECT_EQ(address.exit_code, 2);
  EXPECT_NE(address.err.find("--nccl-ras"), std::string::npos) << address.err;
  RunOutput interval = run("--nccl-ras-interval", "10ms");
  EXPECT_EQ(interval.exit_code, 2);
  EXPECT_NE(interval.err.find("--nccl-ras-interval: expected 1s to 1h, found '10ms'"),
            std::string::npos)
      << interval.err;
}

}  // namespace
}  // namespace fulcrum::testing
