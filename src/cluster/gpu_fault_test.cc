#include "cluster/gpu_fault.h"

#include <gtest/gtest.h>

#include <stdlib.h>

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "support/fake_gpus_agent.h"

namespace fulcrum::cluster {
namespace {

using supervise::AgentGpuHealth;

TEST(GpuFaultTest, FindsXid79EccXidsAndNewUncorrectedErrors) {
  EXPECT_EQ(FindLostGpu({{0, 0, 0}, {1, 13, 0}}, {}), std::nullopt) << "XID 13 is the job's bug";
  EXPECT_EQ(FindLostGpu({{0, 0, 0}, {1, 79, std::nullopt}}, {}),
            "GPU 1 XID 79 (fallen off the bus)");
  EXPECT_EQ(FindLostGpu({{2, 48, 0}}, {}), "GPU 2 XID 48 (double-bit ECC error)");
  EXPECT_EQ(FindLostGpu({{3, 95, 0}}, {}), "GPU 3 XID 95 (uncontained ECC error)");
  // Uncorrected ECC counts and ECC XIDs that were there at the first answer are history.
  EXPECT_EQ(FindLostGpu({{0, 0, 4}}, {{0, 0, 4}}), std::nullopt);
  EXPECT_EQ(FindLostGpu({{0, 0, 5}}, {{0, 0, 4}}), "GPU 0 uncorrectable ECC error (4 -> 5)");
  EXPECT_EQ(FindLostGpu({{0, 48, 4}}, {{0, 48, 4}}), std::nullopt);
  EXPECT_EQ(FindLostGpu({{0, 95, 4}}, {{0, 48, 4}}), "GPU 0 XID 95 (uncontained ECC error)");
  EXPECT_EQ(FindLostGpu({{0, 79, 4}}, {{0, 79, 4}}), "GPU 0 XID 79 (fallen off the bus)")
      << "a GPU off the bus stays lost";
  EXPECT_EQ(FindLostGpu({{0, std::nullopt, std::nullopt}}, {}), std::nullopt) << "unknown";
}

using FakeAgent = testing::FakeGpusAgent;

TEST(GpuFaultTest, DrainsTheNodeOnceAndAnswersANotice) {
  FakeAgent agent;
  ASSERT_GT(agent.Start(), 0);
  agent.Set(R"({"gpus":[{"index":0,"last_xid":0,"ecc_uncorrected":2},
                        {"index":1,"last_xid":0,"ecc_uncorrected":0}]})");
  std::string drained_node, drained_reason;
  int drains = 0;
  GpuFaultWatchOptions options;
  options.agent_url = agent.url();
  options.node = "gpu-07";
  options.drain = [&](const std::string& node, const std::string& reason) {
    ++drains;
    drained_node = node;
    drained_reason = reason;
    return Status::Ok();
  };
  auto source = MakeSlurmGpuFaultSource(options);
  auto first = source->Check();
  ASSERT_TRUE(first.ok()) << first.status().message();
  EXPECT_EQ(*first, std::nullopt) << "old ECC counts are the baseline";
  agent.Set(R"({"gpus":[{"index":0,"last_xid":0,"ecc_uncorrected":2},
                        {"index":1,"last_xid":79,"ecc_uncorrected":null}]})");
  auto second = source->Check();
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(*second, "GPU fault on node gpu-07: GPU 1 XID 79 (fallen off the bus); node drained");
  EXPECT_EQ(drains, 1);
  EXPECT_EQ(drained_node, "gpu-07");
  EXPECT_EQ(drained_reason, "fulcrum: GPU 1 XID 79 (fallen off the bus)");
}

TEST(GpuFaultTest, ANodeThatCannotBeDrainedStillStopsTheJob) {
  FakeAgent agent;
  ASSERT_GT(agent.Start(), 0);
  agent.Set(R"({"gpus":[{"index":0,"last_xid":0,"ecc_uncorrected":0}]})");
  GpuFaultWatchOptions options;
  options.agent_url = agent.url();
  options.node = "n1";
  options.drain = [](const std::string&, const std::string&) {
    return Status::Unavailable("scontrol: not found");
  };
  auto source = MakeSlurmGpuFaultSource(options);
  ASSERT_TRUE(source->Check().ok());
  agent.Set(R"({"gpus":[{"index":0,"last_xid":0,"ecc_uncorrected":1}]})");
  auto notice = source->Check();
  ASSERT_TRUE(notice.ok());
  EXPECT_EQ(*notice,
            "GPU fault on node n1: GPU 0 uncorrectable ECC error (0 -> 1); drain failed: "
            "scontrol: not found");
}

TEST(GpuFaultTest, NoAgentIsAnErrorNotANotice) {
  GpuFaultWatchOptions options;
  options.agent_url = "http://127.0.0.1:1";
  options.node = "n1";
  options.timeout_seconds = 0.2;
  options.drain = [](const std::string&, const std::string&) {
    ADD_FAILURE() << "drained without a fault";
    return Status::Ok();
  };
  EXPECT_FALSE(MakeSlurmGpuFaultSource(options)->Check().ok());
}

TEST(GpuFaultTest, WatchesOnlyInsideASlurmJobWithAnAgent) {
  supervise::ResolvedRun run;
  run.agent_url = "http://127.0.0.1:9400";
  unsetenv("SLURMD_NODENAME");
  EXPECT_TRUE(SlurmJobNoticeSources(run).empty()) << "not in a Slurm job";
  setenv("SLURMD_NODENAME", "n1", 1);
  auto sources = SlurmJobNoticeSources(run);
  ASSERT_EQ(sources.size(), 1u);
  EXPECT_EQ(sources[0]->name(), "gpu-fault");
  run.agent_url = "none";
  EXPECT_TRUE(SlurmJobNoticeSources(run).empty()) << "--agent none";
  unsetenv("SLURMD_NODENAME");
}

TEST(GpuFaultTest, NodeWatchReturnsTheFirstFaultOfItsNodeAfterAgentErrors) {
  FakeAgent agent;
  ASSERT_GT(agent.Start(), 0);
  agent.Set("not json");  // an answer that cannot be read is retried, not a fault
  GpuFaultWatchOptions options;
  options.agent_url = agent.url();
  options.node = "n2";
  std::string drained;
  options.drain = [&](const std::string& node, const std::string&) {
    drained = node;
    return Status::Ok();
  };
  int polls = 0;
  const std::string notice = WatchNodeUntilGpuFault(options, 0.5, [&](double seconds) {
    EXPECT_EQ(seconds, 0.5);
    if (++polls == 2) agent.Set(R"({"gpus":[{"index":0,"last_xid":0,"ecc_uncorrected":0}]})");
    if (polls == 3) agent.Set(R"({"gpus":[{"index":0,"last_xid":79,"ecc_uncorrected":0}]})");
  });
  EXPECT_EQ(notice, "GPU fault on node n2: GPU 0 XID 79 (fallen off the bus); node drained");
  EXPECT_EQ(polls, 3);
  EXPECT_EQ(drained, "n2");
}

TEST(GpuFaultTest, NodeWatchRunsOneWatcherPerNodeBesideTheJobsStep) {
  const auto argv = NodeWatchArgv("/opt/fulcrum/bin/fulcrum", "http://127.0.0.1:9400", 4, 0.5);
  const std::vector<std::string> expected = {"srun",
                                             "--overlap",
                                             "--gres=none",
                                             "--nodes=4",
                                             "--ntasks-per-node=1",
                                             "--kill-on-bad-exit=0",
                                             "--job-name=fulcrum-gpu-watch",
                                             "/opt/fulcrum/bin/fulcrum",
                                             "submit",
                                             "--gpu-fault-watch",
                                             "--agent",
                                             "http://127.0.0.1:9400",
                                             "--notice-poll",
                                             "0.5s"};
  EXPECT_EQ(argv, expected);
}

// Polls `source` until it answers a notice or an error (up to 10 s).
Result<std::optional<std::string>> CheckUntilAnswer(supervise::NoticeSource& source) {
  Result<std::optional<std::string>> answer = std::optional<std::string>();
  for (int i = 0; i < 200; ++i) {
    answer = source.Check();
    if (!answer.ok() || answer->has_value()) return answer;
    usleep(50 * 1000);
  }
  return answer;
}

TEST(GpuFaultTest, FanOutAnswersTheNoticeANodePrints) {
  auto source = MakeNodeWatchFanOutSource(
      {"/bin/sh", "-c",
       "echo 'n1: nothing yet'; echo 'fulcrum gpu-fault: GPU fault on node n2: GPU 0 XID 79 "
       "(fallen off the bus); node drained'; exec sleep 30"});
  auto answer = CheckUntilAnswer(*source);
  ASSERT_TRUE(answer.ok()) << answer.status().message();
  EXPECT_EQ(*answer, "GPU fault on node n2: GPU 0 XID 79 (fallen off the bus); node drained");
}

TEST(GpuFaultTest, FanOutThatEndsWithoutANoticeIsAnErrorAndStartsAgain) {
  char dir[] = "/tmp/fanout-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string starts = std::string(dir) + "/starts";
  auto source = MakeNodeWatchFanOutSource(
      {"/bin/sh", "-c", "echo start >> " + starts + "; echo 'srun: error: no step' >&2; exit 1"},
      0);
  auto first = CheckUntilAnswer(*source);
  ASSERT_FALSE(first.ok());
  EXPECT_NE(first.status().message().find("ended (exit 1): srun: error: no step"),
            std::string::npos)
      << first.status().message();
  auto second = CheckUntilAnswer(*source);
  EXPECT_FALSE(second.ok());
  std::ifstream in(starts);
  int lines = 0;
  for (std::string line; std::getline(in, line);) ++lines;
  EXPECT_EQ(lines, 2) << "started again after it ended";
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace fulcrum::cluster
