#include "plan/layouts.h"

#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "catalog/catalog.h"
#include "plan/classes.h"
#include "workload/model_io.h"
#include "workload/published_shapes_test_util.h"

namespace fulcrum::plan {
namespace {

// Llama 2 7B shape (HF meta-llama/Llama-2-7b-hf config.json).
workload::Model Llama7b() {
  workload::Model m;
  m.name = "llama-2-7b";
  m.layers = 32;
  m.hidden = 4096;
  m.heads = 32;
  m.kv_heads = 32;
  m.ffn_hidden = 11008;
  m.vocab = 32000;
  m.max_seq_len = 4096;
  m.mlp = workload::MlpKind::kSwiglu;
  m.norm = workload::NormKind::kRmsNorm;
  return m;
}

estimate::Hardware H100Node() {
  estimate::Hardware hw;
  hw.peak_flops = hw.peak_flops_16bit = 989e12;  // H100 SXM bf16 dense (NVIDIA datasheet)
  hw.memory_bytes_per_second = 3350e9;
  hw.intra_node_bytes_per_second = 450e9;
  hw.nvlink = true;
  hw.gpus_per_node = 8;
  hw.network_bytes_per_second_per_node = 3200e9 / 8;
  hw.efficiency = estimate::DefaultTimeCalibration().hopper;
  return hw;
}

// Exhaustive: every layout under every framework that runs it, no early exit; the best fitting
// rate.
double ExhaustiveBestRate(const workload::Model& m, workload::Training t,
                          const estimate::Hardware& hw, double capacity, int gpus,
                          double min_headroom, int64_t* count) {
  double best = -1;
  for (int tp : {1, 2, 4, 8}) {
    for (int pp = 1; pp <= gpus; ++pp) {
      if (gpus % (tp * pp) != 0 || m.layers % pp != 0 || m.heads % tp != 0) continue;
      for (int vpp : {1, 2}) {
        if (vpp > 1 && pp == 1) continue;
        if (m.layers % (pp * vpp) != 0) continue;
        const int dp = gpus / (tp * pp);
        for (int zero = 0; zero <= (dp == 1 ? 0 : (pp > 1 ? 1 : 3)); ++zero) {
          for (auto rc : {workload::Recompute::kNone, workload::Recompute::kSelective,
                          workload::Recompute::kFull}) {
            for (int f = 0; f < workload::kFrameworkCount; ++f) {
              for (int mb = 1; mb <= 4096; mb *= 2) {
                // The spec's batch where dp x mb divides it, else the nearer multiple within 5 %.
                const int64_t per_step = int64_t{mb} * dp;
                const int64_t global = 64;
                const int64_t down = global / per_step * per_step, up = down + per_step;
                int64_t eff = 0;
                if (global % per_step == 0) {
                  eff = global;
                } else {
                  const bool up_nearer = up - global <= global - down;
                  for (int64_t b : {up_nearer ? up : down, up_nearer ? down : up}) {
                    if (eff == 0 && b > 0 && std::abs(double(b - global)) <= 0.05 * global) eff = b;
                  }
                }
                if (eff == 0) continue;
                workload::Training x = t;
                x.tp = tp, x.pp = pp, x.vpp = vpp, x.dp = dp, x.zero_stage = zero;
                x.recompute = rc, x.micro_batch = mb, x.global_batch = eff;
                x.sequence_parallel = tp > 1;
                x.framework = static_cast<workload::Framework>(f);
                if (!workload::FrameworkRunsLayout(x.framework, x)) continue;
                ++*count;
                const auto mem = estimate::EstimateMemory(m, x);
                if (mem.peak_bytes_per_gpu > capacity * (1 - min_headroom)) continue;
                best =
                    std::max(best, estimate::EstimateStepTime(m, x, hw).tokens_per_second_per_gpu);
              }
            }
          }
        }
      }
    }
  }
  return best;
}

TEST(LayoutsTest, PrunedSearchFindsTheExhaustiveOptimum) {
  workload::Training base;
  base.seq_len = 4096;
  base.global_batch = 64;
  const double capacity = 80.0 * 1073741824.0;
  for (int gpus : {1, 2, 8, 16}) {
    int64_t exhaustive_count = 0;
    const double expected =
        ExhaustiveBestRate(Llama7b(), base, H100Node(), capacity, gpus, 0.10, &exhaustive_count);
    const BestLayout best = SearchLayouts(Llama7b(), base, H100Node(), capacity, gpus, 0.10);
    if (expected < 0) {  // full 7B fine-tune does not fit one 80 GB GPU (16 bytes/param)
      EXPECT_FALSE(best.found) << gpus;
      continue;
    }
    ASSERT_TRUE(best.found) << gpus;
    EXPECT_DOUBLE_EQ(best.step.tokens_per_second_per_gpu, expected) << gpus;
    EXPECT_GE(best.headroom_fraction, 0.10);
    EXPECT_LE(best.evaluated, exhaustive_count);
    EXPECT_EQ(best.training.tp * best.training.pp * best.training.dp, gpus);
  }
}

// At 131072 tokens a 7B model's logits and activations alone overflow an 80 GB GPU without
// context parallelism (torchtitan trains Llama 3.1 8B at 128k on 8 H100 with cp 4 -- pytorch/
// torchtitan@31a17bfd benchmarks/llama3_h100_202412_torchtitan.md): the search must find a layout
// with cp > 1, and tp x pp x cp x dp still equals the GPUs.
TEST(LayoutsTest, LongSequencesUseContextParallelism) {
  workload::Training base;
  base.seq_len = 131072;
  base.global_batch = 8;
  const BestLayout best = SearchLayouts(Llama7b(), base, H100Node(), 80.0 * 1073741824.0, 8, 0.1);
  ASSERT_TRUE(best.found);
  EXPECT_GT(best.training.cp, 1);
  EXPECT_EQ(workload::GpuCount(best.training), 8);
  // Short sequences never try it.
  base.seq_len = 4096;
  base.global_batch = 64;
  const BestLayout short_seq =
      SearchLayouts(Llama7b(), base, H100Node(), 80.0 * 1073741824.0, 8, 0.1);
  ASSERT_TRUE(short_seq.found);
  EXPECT_EQ(short_seq.training.cp, 1);
}

// Mixtral 8x7B (46.7 B parameters; workload/published_shapes_test_util.h) fine-tuned on 8 H100
// without ZeRO-3 sharding fits only when expert parallelism splits the experts: a layout with
// ep > 1 dividing dp must be found, and a dense model never gets one.
TEST(LayoutsTest, MixtureOfExpertsUsesExpertParallelism) {
  const Result<workload::Model> mixtral =
      workload::ParseHfConfig(workload::testing::kMixtralConfig, "mixtral/config.json");
  ASSERT_TRUE(mixtral.ok()) << mixtral.status().message();
  workload::Training base;
  base.seq_len = 4096;
  base.global_batch = 64;
  LayoutOptions megatron;
  megatron.frameworks = workload::FrameworkBit(workload::Framework::kMegatron);
  const BestLayout best =
      SearchLayouts(*mixtral, base, H100Node(), 80.0 * 1073741824.0, 16, 0.1, megatron);
  ASSERT_TRUE(best.found);
  EXPECT_GT(best.training.ep, 1);
  EXPECT_EQ(best.training.dp % best.training.ep, 0);
  const BestLayout dense =
      SearchLayouts(Llama7b(), base, H100Node(), 80.0 * 1073741824.0, 16, 0.1, megatron);
  ASSERT_TRUE(dense.found);
  EXPECT_EQ(dense.training.ep, 1);
}

TEST(LayoutsTest, NothingFitsOnATinyGpu) {
  workload::Training base;
  base.seq_len = 4096;
  base.global_batch = 64;
  const BestLayout best = SearchLayouts(Llama7b(), base, H100Node(), 8.0 * 1073741824.0, 1, 0.1);
  EXPECT_FALSE(best.found);
  EXPECT_GT(best.evaluated, 0);
}

// Issue 31: a layout must fit when it resumes from its checkpoint too. The layout found carries
// its peak at resume, and its headroom is that of the larger of the two peaks.
TEST(LayoutsTest, TheLayoutFitsAtResumeToo) {
  workload::Training base;
  base.seq_len = 4096;
  base.global_batch = 64;
  base.checkpoint_format = workload::CheckpointFormat::kFsdpFull;
  LayoutOptions options;
  options.frameworks = workload::FrameworkBit(workload::Framework::kFsdp);
  const double capacity = 80.0 * 1073741824.0;
  const BestLayout best = SearchLayouts(Llama7b(), base, H100Node(), capacity, 8, 0.1, options);
  ASSERT_TRUE(best.found);
  EXPECT_EQ(best.resume.format, workload::CheckpointFormat::kFsdpFull);
  EXPECT_GT(best.resume.load_transient_bytes, 0);
  const double bound = estimate::FitPeakBytes(best.memory, best.resume);
  EXPECT_LE(bound, 0.9 * capacity);
  EXPECT_DOUBLE_EQ(best.headroom_fraction, estimate::HeadroomFraction(bound, capacity));
}

// A ZeRO stage or micro-batch the job's command fixes (its DeepSpeed config, HF's --fsdp) is the
// only one searched: the unconstrained best of this search (FSDP on 8 H100s) differs from it, so
// the constraint is what chose it; on one GPU there is nothing to shard and the stage is 0.
TEST(LayoutsTest, AZeroStageOrMicroBatchTheCommandFixesIsTheOnlyOneSearched) {
  workload::Training base;
  base.seq_len = 4096;
  base.global_batch = 64;
  LayoutOptions options;
  options.frameworks = workload::FrameworkBit(workload::Framework::kDeepSpeed);
  const double capacity = 80.0 * 1073741824.0;
  const BestLayout free = SearchLayouts(Llama7b(), base, H100Node(), capacity, 8, 0.1, options);
  ASSERT_TRUE(free.found);
  const int other_stage = free.training.zero_stage == 3 ? 2 : 3;
  options.zero_stage = other_stage;
  options.micro_batch = free.training.micro_batch == 2 ? 1 : 2;
  const BestLayout fixed = SearchLayouts(Llama7b(), base, H100Node(), capacity, 8, 0.1, options);
  ASSERT_TRUE(fixed.found);
  EXPECT_EQ(fixed.training.zero_stage, other_stage);
  EXPECT_EQ(fixed.training.micro_batch, options.micro_batch);
  EXPECT_LT(fixed.evaluated, free.evaluated);
  // A micro-batch the scan does not list is tried as given.
  options.micro_batch = 3;
  base.global_batch = 48;
  EXPECT_EQ(
      SearchLayouts(Llama7b(), base, H100Node(), capacity, 8, 0.1, options).training.micro_batch,
      3);
  options.micro_batch = 1;
  workload::Model small = Llama7b();
  small.layers = 4;
  const BestLayout one = SearchLayouts(small, base, H100Node(), capacity, 1, 0.1, options);
  ASSERT_TRUE(one.found);
  EXPECT_EQ(one.training.zero_stage, 0);
}

// The (class, nodes) tasks on the parallel-for give the same layouts whatever the thread count,
// and every task of every class is searched once.
TEST(LayoutsTest, ClassLayoutsDoNotDependOnTheThreadCount) {
  auto catalog = catalog::Catalog::Load(std::string(FULCRUM_SOURCE_DIR) + "/catalog");
  ASSERT_TRUE(catalog.ok()) << catalog.status().message();
  PlanSpec spec;
  spec.training.seq_len = 4096;
  spec.training.global_batch = 64;
  spec.global_batch_given = true;
  std::vector<const catalog::Offer*> offers;
  for (const catalog::Offer& o : catalog->offers()) offers.push_back(&o);
  const HardwareClasses classes = ClassifyOffers(*catalog, offers, spec, spec.training);
  ASSERT_GT(classes.classes.size(), 10u);
  const LayoutTable one =
      SearchClassLayouts(Llama7b(), spec.training, classes.classes, spec, JobFrameworks{}, 1);
  const LayoutTable three =
      SearchClassLayouts(Llama7b(), spec.training, classes.classes, spec, JobFrameworks{}, 3);
  EXPECT_EQ(one.threads, 1);
  EXPECT_EQ(three.threads, 3);
  ASSERT_EQ(one.tasks.size(), three.tasks.size());
  EXPECT_EQ(one.configurations, three.configurations);
  size_t tasks = 0;
  for (size_t k = 0; k < classes.classes.size(); ++k) {
    for (int nodes : classes.classes[k].node_counts) {
      ++tasks;
      const LayoutTask* a = one.Find(static_cast<int>(k), nodes);
      const LayoutTask* b = three.Find(static_cast<int>(k), nodes);
      ASSERT_NE(a, nullptr);
      ASSERT_NE(b, nullptr);
      EXPECT_EQ(a->nodes, nodes);
      EXPECT_EQ(a->best.found, b->best.found);
      EXPECT_EQ(a->best.step.step_seconds, b->best.step.step_seconds);
      EXPECT_EQ(a->best.training.tp, b->best.training.tp);
      EXPECT_EQ(a->best.training.micro_batch, b->best.training.micro_batch);
    }
  }
  EXPECT_EQ(tasks, one.tasks.size());
  EXPECT_EQ(one.Find(static_cast<int>(classes.classes.size()), 1), nullptr);
  EXPECT_EQ(one.Find(0, 7), nullptr);  // 7 nodes is never tried
}

}  // namespace
}  // namespace fulcrum::plan
