#include "nodecheck/topology.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

namespace fulcrum::nodecheck {
namespace {

// Real `nvidia-smi topo -m` outputs, sources in tests/fixtures/topo/SOURCES.md.
std::string Fixture(const std::string& name) {
  std::ifstream in(std::string(FULCRUM_SOURCE_DIR) + "/tests/fixtures/topo/" + name);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_FALSE(text.str().empty()) << name;
  return text.str();
}

Topology Parse(const std::string& name) {
  auto topology = ParseTopoMatrix(Fixture(name), name);
  EXPECT_TRUE(topology.ok()) << topology.status().ToString();
  return topology.ok() ? *topology : Topology{};
}

const GpuLink* Link(const Topology& t, int a, int b) {
  for (const GpuLink& link : t.links) {
    if (link.a == a && link.b == b) return &link;
  }
  return nullptr;
}

DoctorCheck Named(const std::vector<DoctorCheck>& checks, const std::string& name) {
  for (const DoctorCheck& c : checks) {
    if (c.name == name) return c;
  }
  ADD_FAILURE() << "no check " << name;
  return {};
}

TEST(TopologyTest, DgxA100RowsAreNvlink12WithTwelveNicsAndTwoNumaNodes) {
  Topology t = Parse("dgx-a100-nv12-first-rows.txt");
  EXPECT_EQ(t.gpu_count, 8);
  ASSERT_EQ(t.nics.size(), 12u);
  EXPECT_EQ(t.nics.front(), "NIC0");
  ASSERT_EQ(t.gpus.size(), 4u);  // the capture holds rows GPU0..GPU3
  // Rows 0..3 give every pair with a GPU of 0..3: 7 + 6 + 5 + 4.
  ASSERT_EQ(t.links.size(), 22u);
  for (const GpuLink& link : t.links) {
    EXPECT_EQ(link.kind, LinkKind::kNvlink);
    EXPECT_EQ(link.nvlinks, 12);
  }
  EXPECT_EQ(Link(t, 4, 5), nullptr);  // GPU4's row is not in the capture
  EXPECT_EQ(t.gpus[0].cpu_affinity, "48-63,176-191");
  EXPECT_EQ(t.gpus[0].numa_affinity, "3");
  EXPECT_EQ(t.gpus[2].numa_affinity, "1");

  auto checks = TopologyChecks(t, {});
  DoctorCheck link = Named(checks, "gpu-interconnect");
  EXPECT_EQ(link.status, CheckStatus::kOk);
  EXPECT_NE(link.finding.find("NVLink between 22 of 28 GPU pairs"), std::string::npos)
      << link.finding;
  DoctorCheck numa = Named(checks, "numa-affinity");
  EXPECT_NE(numa.finding.find("NUMA node 3: GPU0, GPU1"), std::string::npos) << numa.finding;
  EXPECT_NE(numa.finding.find("NUMA node 1: GPU2, GPU3"), std::string::npos) << numa.finding;
  EXPECT_NE(numa.finding.find("numactl"), std::string::npos);
  EXPECT_EQ(Named(checks, "nccl-topology").status, CheckStatus::kOk);
}

TEST(TopologyTest, NcclVariablesThatFightTheWiringWarn) {
  Topology t = Parse("dgx-a100-nv12-first-rows.txt");
  DoctorCheck nccl = Named(TopologyChecks(t, {{"NCCL_P2P_DISABLE", "1"}, {"NCCL_IB_DISABLE", "1"}}),
                           "nccl-topology");
  EXPECT_EQ(nccl.status, CheckStatus::kWarn);
  EXPECT_NE(nccl.fix.find("unset NCCL_P2P_DISABLE"), std::string::npos) << nccl.fix;
  EXPECT_NE(nccl.fix.find("unset NCCL_IB_DISABLE"), std::string::npos) << nccl.fix;
  EXPECT_NE(nccl.fix.find("docs.nvidia.com/deeplearning/nccl"), std::string::npos);
  // NCCL_P2P_DISABLE=0 is not "set".
  EXPECT_EQ(Named(TopologyChecks(t, {{"NCCL_P2P_DISABLE", "0"}}), "nccl-topology").status,
            CheckStatus::kOk);
}

TEST(TopologyTest, EightPcieGpusAllSysAcrossTwoNumaNodes) {
  Topology t = Parse("pcie-8x-rtx4090.txt");
  EXPECT_EQ(t.gpu_count, 8);
  EXPECT_EQ(t.nics, (std::vector<std::string>{"NIC0", "NIC1"}));
  ASSERT_EQ(t.links.size(), 28u);  // 8 * 7 / 2
  for (const GpuLink& link : t.links) EXPECT_EQ(link.kind, LinkKind::kSys);
  EXPECT_EQ(t.gpus[3].numa_affinity, "0");
  EXPECT_EQ(t.gpus[4].numa_affinity, "1");
  EXPECT_EQ(t.gpus[4].cpu_affinity, "56-111,168-223");

  auto checks = TopologyChecks(t, {});
  DoctorCheck link = Named(checks, "gpu-interconnect");
  EXPECT_EQ(link.status, CheckStatus::kOk);
  EXPECT_NE(link.finding.find("PCIe only between all 28 GPU pairs (SYS 28)"), std::string::npos)
      << link.finding;
  EXPECT_NE(Named(checks, "numa-affinity").finding.find("NUMA node 1: GPU4, GPU5, GPU6, GPU7"),
            std::string::npos);
  DoctorCheck nccl = Named(checks, "nccl-topology");
  EXPECT_NE(nccl.finding.find("NCCL_P2P_LEVEL"), std::string::npos) << nccl.finding;
  EXPECT_NE(nccl.finding.find("NICs listed by nvidia-smi (NIC0, NIC1)"), std::string::npos);
}

TEST(TopologyTest, TwoPcieGpusUnderOneHostBridge) {
  Topology t = Parse("pcie-2x-rtx5090.txt");
  EXPECT_EQ(t.gpu_count, 2);
  EXPECT_TRUE(t.nics.empty());
  ASSERT_EQ(t.links.size(), 1u);
  EXPECT_EQ(t.links[0].kind, LinkKind::kPhb);
  auto checks = TopologyChecks(t, {});
  EXPECT_NE(Named(checks, "gpu-interconnect").finding.find("(PHB 1)"), std::string::npos);
  DoctorCheck numa = Named(checks, "numa-affinity");
  EXPECT_EQ(numa.finding, "NUMA node 0: GPU0, GPU1 (CPUs 0-63)");
  EXPECT_NE(Named(checks, "nccl-topology").finding.find("no NIC in the topology"),
            std::string::npos);
}

TEST(TopologyTest, MixedPciePathsAreCountedPerKind) {
  Topology t = Parse("pcie-5gpu-mixed.txt");
  ASSERT_EQ(t.links.size(), 10u);
  EXPECT_EQ(Link(t, 0, 3)->kind, LinkKind::kSys);
  EXPECT_EQ(Link(t, 1, 2)->kind, LinkKind::kPhb);
  EXPECT_EQ(Link(t, 2, 4)->kind, LinkKind::kNode);
  EXPECT_NE(Named(TopologyChecks(t, {}), "gpu-interconnect").finding.find("(SYS 4, NODE 4, PHB 2)"),
            std::string::npos);
}

TEST(TopologyTest, APairWithoutNvlinkOnAnNvlinkBoardWarns) {
  std::string text = Fixture("dgx-a100-nv12-first-rows.txt");
  size_t row = text.find("GPU1    NV12");
  ASSERT_NE(row, std::string::npos);
  text.replace(text.find("NV12", row + 20), 4, "SYS ");  // GPU1 -> GPU2
  auto t = ParseTopoMatrix(text, "edited");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  // GPU2's row still says NV12 for the pair; the first row read (GPU1's) wins.
  EXPECT_EQ(Link(*t, 1, 2)->kind, LinkKind::kSys);
  DoctorCheck link = Named(TopologyChecks(*t, {}), "gpu-interconnect");
  EXPECT_EQ(link.status, CheckStatus::kWarn);
  EXPECT_NE(link.fix.find("nvidia-smi nvlink --status"), std::string::npos);
}

TEST(TopologyTest, BadCellNamesFileLineAndColumn) {
  std::string text = Fixture("pcie-2x-rtx5090.txt");
  text.replace(text.find("PHB"), 3, "QPI");
  auto t = ParseTopoMatrix(text, "saved.txt");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().message(),
            "saved.txt:2: GPU0 column GPU1: expected X, NV#, PIX, PXB, PHB, NODE or SYS, found "
            "\"QPI\"");
  ASSERT_NE(t.status().detail(), nullptr);
  EXPECT_EQ(t.status().detail()->line, 2);

  auto none = ParseTopoMatrix("nvidia-smi: command not found\n", "saved.txt");
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("expected a header line GPU0 GPU1"), std::string::npos);
}

TEST(TopologyTest, ProbeReadsASavedFileAndSkipsTheSim) {
  auto checks = ProbeTopologyChecks(
      std::string(FULCRUM_SOURCE_DIR) + "/tests/fixtures/topo/pcie-2x-rtx5090.txt", "nvml", {});
  ASSERT_TRUE(checks.ok()) << checks.status().ToString();
  EXPECT_EQ(checks->size(), 3u);
  auto sim = ProbeTopologyChecks("", "sim", {});
  ASSERT_TRUE(sim.ok());
  ASSERT_EQ(sim->size(), 1u);
  EXPECT_EQ((*sim)[0].status, CheckStatus::kSkipped);
  auto missing = ProbeTopologyChecks("/nonexistent/topo.txt", "nvml", {});
  EXPECT_FALSE(missing.ok());
}

}  // namespace
}  // namespace fulcrum::nodecheck
