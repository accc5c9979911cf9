// Host resources of a node (plan/host.h): the RAM the job's model load, pinned buffers and
// dataloader workers need against the offer's catalog figures, and the pitfall bits they set.
#include "plan/host.h"

#include <string>

#include <gtest/gtest.h>

#include "plan/pitfalls.h"
#include "workload/model_io.h"

namespace fulcrum::plan {
namespace {

const std::string kCatalogDir = std::string(FULCRUM_SOURCE_DIR) + "/catalog";
constexpr double kGib = 1024.0 * 1024.0 * 1024.0;

workload::Model Llama7b() {
  Result<workload::Model> m = workload::LoadModelPreset(kCatalogDir, "llama-2-7b");
  EXPECT_TRUE(m.ok());
  return *m;
}

catalog::Offer Node(int gpus, std::optional<double> ram_gib, std::optional<int> vcpus) {
  catalog::Offer o;
  o.gpu_count = gpus;
  o.memory_gib = ram_gib;
  o.vcpus = vcpus;
  return o;
}

workload::Training Layout(workload::Framework f, int zero = 0, int tp = 1, int pp = 1) {
  workload::Training t;
  t.framework = f;
  t.zero_stage = zero;
  t.tp = tp;
  t.pp = pp;
  return t;
}

// The node: 8 H100, 64 GiB, 32 vCPUs; 8 ranks each load a bf16 copy of Llama 2 7B.
TEST(HostTest, EightRanksOfA7bFullCopyOverflowSixtyFourGib) {
  const workload::Model m = Llama7b();
  const double copy_gib = workload::ParameterCount(m) * 2 / kGib;
  EXPECT_NEAR(copy_gib, 12.55, 0.1);  // 6.74 B parameters x 2 bytes
  const HostNeeds n = HostNeedsOf(Node(8, 64, 32), m, Layout(workload::Framework::kFsdp, 3),
                                  workload::Precision::kBf16Mixed, "torchrun train.py");
  EXPECT_FALSE(n.loads_once);
  EXPECT_NEAR(n.ram_needed_gib, 8 * copy_gib + 8 * kPinnedBufferGibPerRank, 1e-6);
  EXPECT_TRUE(n.RamShort());
  EXPECT_EQ(n.vcpus_needed, 16);
  EXPECT_FALSE(n.CpuShort());
  // fp32 loads 4 bytes per parameter.
  const HostNeeds f32 = HostNeedsOf(Node(8, 64, 32), m, Layout(workload::Framework::kDdp),
                                    workload::Precision::kFp32, "");
  EXPECT_NEAR(f32.model_load_gib, 2 * n.model_load_gib, 1e-6);
  // 1872 GiB (gcp a3-highgpu-8g) holds it.
  EXPECT_FALSE(HostNeedsOf(Node(8, 1872, 208), m, Layout(workload::Framework::kDdp),
                           workload::Precision::kBf16Mixed, "")
                   .RamShort());
}

// Unknown is not zero: no figure, no shortfall.
TEST(HostTest, UnknownHostFiguresAreNeverShort) {
  const HostNeeds n =
      HostNeedsOf(Node(8, std::nullopt, std::nullopt), Llama7b(), Layout(workload::Framework::kDdp),
                  workload::Precision::kBf16Mixed, "");
  EXPECT_GT(n.ram_needed_gib, 100);
  EXPECT_FALSE(n.RamShort());
  EXPECT_FALSE(n.CpuShort());
}

// Load once only where the framework and the command say so; Megatron loads its shard.
TEST(HostTest, LoadOnceOnlyWhereTheCommandSaysSo) {
  using workload::Framework;
  const std::string acc_fsdp =
      "accelerate launch --use_fsdp --fsdp_cpu_ram_efficient_loading true train.py";
  EXPECT_TRUE(LoadsOnce(Layout(Framework::kFsdp), acc_fsdp));
  EXPECT_FALSE(LoadsOnce(Layout(Framework::kFsdp),
                         "accelerate launch --fsdp_cpu_ram_efficient_loading false train.py"));
  EXPECT_FALSE(LoadsOnce(Layout(Framework::kFsdp), "torchrun train.py"));
  EXPECT_TRUE(LoadsOnce(Layout(Framework::kFsdp), "torchrun train.py --sync_module_states=True"));
  // The flag belongs to FSDP: DDP still loads per rank.
  EXPECT_FALSE(LoadsOnce(Layout(Framework::kDdp), acc_fsdp));
  const std::string zero_init = "accelerate launch --use_deepspeed --zero3_init_flag true t.py";
  EXPECT_TRUE(LoadsOnce(Layout(Framework::kDeepSpeed, 3), zero_init));
  EXPECT_FALSE(LoadsOnce(Layout(Framework::kDeepSpeed, 2), zero_init));
  EXPECT_FALSE(LoadsOnce(Layout(Framework::kDeepSpeed, 3), "deepspeed train.py"));

  const workload::Model m = Llama7b();
  const HostNeeds once = HostNeedsOf(Node(8, 64, 32), m, Layout(Framework::kFsdp),
                                     workload::Precision::kBf16Mixed, acc_fsdp);
  EXPECT_TRUE(once.loads_once);
  EXPECT_FALSE(once.RamShort());
  const HostNeeds megatron = HostNeedsOf(Node(8, 64, 32), m, Layout(Framework::kMegatron, 0, 4, 2),
                                         workload::Precision::kBf16Mixed, "");
  EXPECT_NEAR(megatron.model_load_gib, once.model_load_gib, 1e-6);  // 8 ranks x 1/8 shard
}

TEST(HostTest, VcpusShortAndThePitfallBits) {
  const HostNeeds n = HostNeedsOf(Node(8, 2048, 8), Llama7b(), Layout(workload::Framework::kDdp),
                                  workload::Precision::kBf16Mixed, "");
  EXPECT_TRUE(n.CpuShort());
  EXPECT_FALSE(n.RamShort());
  PitfallFacts f;
  f.host_ram_short = true;
  EXPECT_EQ(PitfallCodes(DetectPitfalls(f) & (kPitfallHostRamShort | kPitfallHostCpuShort)),
            std::vector<std::string>{"host-ram-short"});
  f.host_ram_short = false;
  f.host_cpu_short = true;
  EXPECT_EQ(PitfallCodes(DetectPitfalls(f) & (kPitfallHostRamShort | kPitfallHostCpuShort)),
            std::vector<std::string>{"host-cpu-short"});
  EXPECT_FALSE(PitfallMessage(kPitfallHostRamShort).empty());
}

}  // namespace
}  // namespace fulcrum::plan
