// GCC 12 reports a false -Wmaybe-uninitialized inside std::regex's std::function under
// -fsanitize (the asan preset); it must be silenced before any header is read.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
// The rank behind a hang, end to end: `fulcrum agent` (sim `hang` on GPU 1, jobs.db's job with
// no progress for an hour) polls a loopback fake of NCCL's RAS socket (tests/support/
// fake_nccl_ras.h, from NCCL v2.29.2-1's protocol and format strings) that reports rank 5
// behind; the GpuJobHung webhook names its rank, host, pid and GPU. Without a RAS socket the
// same alert goes out unnamed and the agent's log says nothing about NCCL.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <regex>

#include "core/mutex.h"
#include "store/jobs.h"
#include "support/agent_process.h"
#include "support/fake_nccl_ras.h"
#include "support/run_binary.h"

namespace fulcrum::testing {
namespace {

namespace fs = std::filesystem;

double UnixNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

class NcclRasE2E : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = MakeTempDir("nccl-ras-e2e");
    data_ = dir_ + "/agent";
    auto jobs = store::JobsDb::OpenInDataDir(data_);
    ASSERT_TRUE(jobs.ok()) << jobs.status().ToString();
    store::JobRecord job;
    job.id = job.name = "llama-pretrain";
    job.state = store::JobState::kRunning;
    job.queue = "run";
    job.argv = {"torchrun", "train.py"};
    job.gpus = {0, 1};
    job.started_at = UnixNow() - 7200;
    job.heartbeat_at = UnixNow() - 3600;  // last progress step an hour ago
    job.supervisor_pid = getpid();
    ASSERT_TRUE(jobs->UpsertJob(job).ok());
    // The shipped GpuJobHung with its threshold shortened; its 4 s hold leaves the RAS poller
    // (every 1 s) the two reports it needs to call a rank stalled.
    std::string rules = ReadFile(SourcePath("examples/rules.yaml"));
    size_t at = rules.find("- name: GpuJobHung");
    ASSERT_NE(at, std::string::npos);
    std::string hang = rules.substr(at);
    hang = std::regex_replace(hang, std::regex("threshold: 600"), "threshold: 30");
    hang = std::regex_replace(hang, std::regex("for: 1m"), "for: 4s");
    WriteFile(dir_ + "/rules.yaml", rules.substr(0, at) + hang);
    WriteFile(dir_ + "/hang.yaml", "- {at: 0s, gpu: 1, fault: hang}\n");
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(dir_);
  }
  std::vector<std::string> AgentArgs(const std::string& ras_address) {
    WriteFile(dir_ + "/agent.yaml", "nccl-ras: " + ras_address + "\nnccl-ras-interval: 1s\n");
    return {"--config",      dir_ + "/agent.yaml", "--source",
            "sim",           "--sim-gpus",         "2",
            "--rules",       dir_ + "/rules.yaml", "--receiver",
            receiver_.url(), "--sim-scenario",     dir_ + "/hang.yaml"};
  }
  std::string dir_, data_;
  WebhookRecorder receiver_;
};

TEST_F(NcclRasE2E, HangAlertNamesTheStalledRank) {
  FakeNcclRas ras;
  ASSERT_GT(ras.Start(), 0);
  ras.SetReports(StalledText(8, 5, 42, 0xc0ffeeULL), StalledJson(8, 5, 42, 0xc0ffeeULL));
  AgentPeer agent(data_, AgentArgs(ras.address()));
  ASSERT_GT(agent.port(), 0) << agent.err();
  nlohmann::json hung;
  ASSERT_TRUE(PollUntil([&] { return !(hung = receiver_.Find("GpuJobHung")).is_null(); }, 30))
      << agent.err();
  const std::string summary = hung["alert"]["annotations"]["summary"].get<std::string>();
  EXPECT_NE(summary.find("NCCL: rank 5 (pid 4005 on 10.0.0.2, GPU 1): AllReduce op 41 of 42"),
            std::string::npos)
      << hung.dump();
  EXPECT_EQ(hung["alert"]["labels"]["nccl_rank"], "5") << hung.dump();
  EXPECT_EQ(hung["alert"]["labels"]["nccl_host"], "10.0.0.2");
  EXPECT_EQ(hung["alert"]["labels"]["nccl_pid"], "4005");
  EXPECT_EQ(hung["alert"]["labels"]["nccl_gpu"], "1");
  EXPECT_GE(ras.statuses(), 2);
}

TEST_F(NcclRasE2E, NoRasSocketNoNamesNoNoise) {
  AgentPeer agent(data_, AgentArgs("127.0.0.1:" + std::to_string(FreeLoopbackPort())));
  ASSERT_GT(agent.port(), 0) << agent.err();
  nlohmann::json hung;
  ASSERT_TRUE(PollUntil([&] { return !(hung = receiver_.Find("GpuJobHung")).is_null(); }, 30))
      << agent.err();
  EXPECT_EQ(hung["alert"]["annotations"]["summary"].get<std::string>().find("NCCL"),
            std::string::npos)
      << hung.dump();
  EXPECT_FALSE(hung["alert"]["labels"].contains("nccl_rank"));
  // A dozen refused polls by now; none of them logged.
  EXPECT_EQ(agent.err().find("NCCL RAS"), std::string::npos) << agent.err();
}

}  // namespace
}  // namespace fulcrum::testing
