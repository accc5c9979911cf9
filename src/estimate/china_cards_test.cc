// The China-market cards of the shipped catalog (issue 32) through the step-time model: the H800
// is an H100 with its NVLink cut from 900 to 400 GB/s (catalog/gpus.csv), so tensor parallelism
// inside a node pays more for the same compute.
#include <gtest/gtest.h>

#include <string>

#include "catalog/catalog.h"
#include "estimate/compute.h"

namespace fulcrum::estimate {
namespace {

const catalog::Catalog& Shipped() {
  static const catalog::Catalog catalog = [] {
    auto loaded = catalog::Catalog::Load(std::string(FULCRUM_SOURCE_DIR) + "/catalog", {false, ""});
    EXPECT_TRUE(loaded.ok()) << loaded.status().ToString();
    return *loaded;
  }();
  return catalog;
}

// GPT 22B of Korthikanti et al. 2022 (arXiv 2205.05198, Table 3): h 6144, a 64, L 48.
workload::Model Gpt22b() {
  workload::Model m;
  m.name = "gpt-22b";
  m.layers = 48;
  m.hidden = 6144;
  m.heads = 64;
  m.kv_heads = 64;
  m.ffn_hidden = 4 * 6144;
  m.vocab = 51200;
  m.max_seq_len = 2048;
  m.mlp = workload::MlpKind::kGelu;
  return m;
}

workload::Training Tp8() {
  workload::Training t;
  t.precision = workload::Precision::kBf16Mixed;
  t.tp = 8;
  t.micro_batch = 4;
  t.global_batch = 4;
  t.seq_len = 2048;
  t.sequence_parallel = true;
  t.recompute = workload::Recompute::kSelective;
  t.framework = workload::Framework::kMegatron;
  return t;
}

// One 8-GPU NVLink node of `gpu` (what an 8-GPU SXM instance of either card is).
Hardware NodeOf(const std::string& gpu_name) {
  const catalog::Gpu* gpu = Shipped().FindGpu(gpu_name);
  EXPECT_NE(gpu, nullptr) << gpu_name;
  catalog::Offer node;
  node.gpu = gpu_name;
  node.gpu_count = 8;
  node.interconnect = catalog::Interconnect::kNvlink;
  auto hw = HardwareFor(*gpu, node, workload::Precision::kBf16Mixed);
  EXPECT_TRUE(hw.has_value()) << gpu_name;
  return hw.value_or(Hardware{});
}

TEST(ChinaCardsTest, H800IsAnH100WithFourHundredGbPerSecondNvlink) {
  const catalog::Gpu* h800 = Shipped().FindGpu("H800-SXM5-80GB");
  const catalog::Gpu* h100 = Shipped().FindGpu("H100-SXM5-80GB");
  ASSERT_NE(h800, nullptr);
  ASSERT_NE(h100, nullptr);
  EXPECT_EQ(h800->nvlink_gbps, 400);
  EXPECT_EQ(h100->nvlink_gbps, 900);
  EXPECT_EQ(h800->bf16_tflops, h100->bf16_tflops);
  EXPECT_EQ(h800->memory_bandwidth_gbps, h100->memory_bandwidth_gbps);
  // Every China-market card named by the issue is in the catalog with a source, and "H800" and
  // "A800" name their families.
  for (const char* name : {"H800-SXM5-80GB", "H800-PCIe-80GB", "A800-SXM4-80GB", "A800-SXM4-40GB",
                           "A800-PCIe-80GB", "L20", "H20"}) {
    const catalog::Gpu* gpu = Shipped().FindGpu(name);
    ASSERT_NE(gpu, nullptr) << name;
    EXPECT_FALSE(gpu->source.empty()) << name;
  }
  EXPECT_EQ(Shipped().FindGpus("H800").size(), 2u);
  EXPECT_EQ(Shipped().FindGpus("A800").size(), 3u);
  EXPECT_EQ(Shipped().FindGpu("A800-SXM4-80GB")->nvlink_gbps, 400);
  EXPECT_EQ(Shipped().FindGpu("A100-SXM4-80GB")->nvlink_gbps, 600);
}

// Same compute, 400/900 of the NVLink: the tensor-parallel collectives take 900/400 as long
// (less only where a fixed latency term does not scale), the step is slower by the part of that
// extra communication that is not hidden, and never by more than all of it.
TEST(ChinaCardsTest, Tp8OnH800PlansSlowerThanOnH100ByTheNvlinkShare) {
  const Hardware h800 = NodeOf("H800-SXM5-80GB");
  const Hardware h100 = NodeOf("H100-SXM5-80GB");
  EXPECT_TRUE(h800.nvlink);
  EXPECT_DOUBLE_EQ(h800.intra_node_bytes_per_second / h100.intra_node_bytes_per_second,
                   400.0 / 900.0);
  EXPECT_DOUBLE_EQ(h800.peak_flops, h100.peak_flops);
  const StepTime slow = EstimateStepTime(Gpt22b(), Tp8(), h800);
  const StepTime fast = EstimateStepTime(Gpt22b(), Tp8(), h100);
  ASSERT_GT(fast.communication_seconds, 0);
  const double comm_ratio = slow.communication_seconds / fast.communication_seconds;
  EXPECT_GT(comm_ratio, 1.5) << "the collectives must slow with the NVLink";
  EXPECT_LE(comm_ratio, 900.0 / 400.0 + 1e-9) << "never slower than the bandwidth ratio";
  EXPECT_GT(slow.exposed_seconds, fast.exposed_seconds);
  EXPECT_GT(slow.step_seconds, fast.step_seconds);
  EXPECT_LE(slow.step_seconds - fast.step_seconds,
            slow.communication_seconds - fast.communication_seconds + 1e-12);
  EXPECT_LT(slow.tokens_per_second_per_gpu, fast.tokens_per_second_per_gpu);
  // Without tensor parallelism (tp 1, one GPU) the two cards plan the same.
  workload::Training single = Tp8();
  single.tp = 1;
  single.sequence_parallel = false;
  EXPECT_DOUBLE_EQ(EstimateStepTime(Gpt22b(), single, h800).step_seconds,
                   EstimateStepTime(Gpt22b(), single, h100).step_seconds);
}

}  // namespace
}  // namespace fulcrum::estimate
