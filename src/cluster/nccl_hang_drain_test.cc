// The Slurm drain of `fulcrum run --on-hang`: a hung rank of this node whose GPU shows a new XID
// drains the node (reason "fulcrum: NCCL hang rank R, XID X") and is the evidence that sends
// the job elsewhere; an XID from before the run, one on another GPU, a rank of another node or
// no agent drain nothing.
#include "cluster/nccl_hang_drain.h"

#include <gtest/gtest.h>

#include "support/fake_gpus_agent.h"

namespace fulcrum::cluster {
namespace {

using supervise::AgentGpuHealth;

telemetry::NcclLaggingRank Hung(int rank, const std::string& host, int nvml_dev) {
  telemetry::NcclLaggingRank l;
  l.comm_hash = "0xc0ffee";
  l.rank.rank = rank;
  l.rank.host = host;
  l.rank.pid = 4000 + rank;
  l.rank.cuda_dev = 0;  // under CUDA_VISIBLE_DEVICES: NVML's index is the one that counts
  l.rank.nvml_dev = nvml_dev;
  l.reason = "AllReduce op 41 of 42";
  return l;
}

TEST(NcclHangDrainTest, FindsANewXidOnAHungRanksGpuOfThisNode) {
  HangDrainOptions one_node;
  const std::vector<telemetry::NcclLaggingRank> stalled = {Hung(5, "10.0.0.2", 1)};
  auto found = FindHangXid(stalled, {{0, 0, 0}, {1, 74, 0}}, {{0, 0, 0}, {1, 0, 0}}, one_node);
  ASSERT_TRUE(found);
  EXPECT_EQ(found->rank, 5);
  EXPECT_EQ(found->gpu, 1);
  EXPECT_EQ(found->xid, 74);
  EXPECT_EQ(HangDrainReason(*found), "fulcrum: NCCL hang rank 5, XID 74");
  EXPECT_FALSE(FindHangXid(stalled, {{1, 74, 0}}, {{1, 74, 0}}, one_node))
      << "the XID was there when the run started";
  EXPECT_FALSE(FindHangXid(stalled, {{0, 74, 0}, {1, 0, 0}}, {}, one_node)) << "another GPU";
  EXPECT_FALSE(FindHangXid(stalled, {{1, std::nullopt, 0}}, {}, one_node)) << "unknown";
  HangDrainOptions two_nodes;
  two_nodes.single_node = false;
  two_nodes.local_addresses = {"127.0.0.1", "10.0.0.1"};
  EXPECT_FALSE(FindHangXid(stalled, {{1, 74, 0}}, {}, two_nodes)) << "rank 5 runs on 10.0.0.2";
  two_nodes.local_addresses.push_back("10.0.0.2");
  EXPECT_TRUE(FindHangXid(stalled, {{1, 74, 0}}, {}, two_nodes));
}

using FakeAgent = testing::FakeGpusAgent;

TEST(NcclHangDrainTest, DrainsTheNodeWithTheRankAndXidAsItsReason) {
  FakeAgent agent;
  ASSERT_GT(agent.Start(), 0);
  agent.Set(R"({"gpus":[{"index":0,"last_xid":0},{"index":1,"last_xid":13}]})");
  std::vector<std::pair<std::string, std::string>> drains;
  HangDrainOptions options;
  options.agent_url = agent.url();
  options.node = "gpu-07";
  options.drain = [&](const std::string& node, const std::string& reason) {
    drains.emplace_back(node, reason);
    return Status::Ok();
  };
  HangEvidence evidence = MakeHangDrain(options);  // the baseline: XID 13 on GPU 1 is old
  const std::vector<telemetry::NcclLaggingRank> stalled = {Hung(5, "10.0.0.2", 1)};
  EXPECT_EQ(evidence(stalled), std::nullopt);
  EXPECT_TRUE(drains.empty());
  agent.Set(R"({"gpus":[{"index":0,"last_xid":0},{"index":1,"last_xid":74}]})");
  EXPECT_EQ(evidence(stalled), "node gpu-07 drained (NCCL hang rank 5, XID 74 on GPU 1)");
  ASSERT_EQ(drains.size(), 1u);
  EXPECT_EQ(drains[0].first, "gpu-07");
  EXPECT_EQ(drains[0].second, "fulcrum: NCCL hang rank 5, XID 74");
  options.drain = [](const std::string&, const std::string&) {
    return Status::IoError("scontrol update nodename=gpu-07 state=drain failed (exit 1): denied");
  };
  EXPECT_EQ(MakeHangDrain(options)(stalled), std::nullopt) << "74 is its baseline now";
}

TEST(NcclHangDrainTest, NoAgentNoEvidence) {
  HangDrainOptions options;
  options.agent_url = "http://127.0.0.1:" + std::to_string(testing::FreeLoopbackPort());
  options.node = "n1";
  options.timeout_seconds = 0.2;
  options.drain = [](const std::string&, const std::string&) {
    ADD_FAILURE() << "drained without evidence";
    return Status::Ok();
  };
  EXPECT_EQ(MakeHangDrain(options)({Hung(1, "10.0.0.1", 1)}), std::nullopt);
}

TEST(NcclHangDrainTest, OnlyInsideASlurmJobWithAnAgent) {
  supervise::ResolvedRun run;
  run.agent_url = "http://127.0.0.1:1";
  ::unsetenv("SLURMD_NODENAME");
  EXPECT_FALSE(SlurmHangEvidence(run)) << "not in a Slurm job";
  ::setenv("SLURMD_NODENAME", "n1", 1);
  run.agent_url = "none";
  EXPECT_FALSE(SlurmHangEvidence(run)) << "--agent none";
  run.agent_url = "http://127.0.0.1:1";
  EXPECT_TRUE(SlurmHangEvidence(run));
  ::unsetenv("SLURMD_NODENAME");
}

TEST(NcclHangDrainTest, LocalAddressesIncludeLoopback) {
  const std::vector<std::string> addresses = LocalAddresses();
  EXPECT_NE(std::find(addresses.begin(), addresses.end(), "127.0.0.1"), addresses.end());
}

}  // namespace
}  // namespace fulcrum::cluster
