// The peak of a resumed process per checkpoint format (issue 31): formats whose load fills the
// live tensors in place resume at the fresh peak; those that materialise copies resume above it,
// and a layout must fit at both.
#include "estimate/resume.h"

#include <algorithm>

#include <gtest/gtest.h>

#include "estimate/estimate.h"
#include "workload/model_io.h"

namespace fulcrum::estimate {
namespace {

using workload::CheckpointFormat;
using workload::Framework;

const std::string kCatalogDir = std::string(FULCRUM_SOURCE_DIR) + "/catalog";

workload::Model Llama8b() {
  Result<workload::Model> m = workload::LoadModelPreset(kCatalogDir, "llama-3-8b");
  if (!m.ok()) ADD_FAILURE() << m.status().message();
  return m.ok() ? *m : workload::Model();
}

// Llama 3 8B on 64 GPUs under full sharding and full recompute: little activation memory, so a
// load that materialises copies can set the peak.
workload::Training ShardedRun(Framework framework) {
  workload::Training t;
  t.framework = framework;
  t.dp = 64;
  t.zero_stage = 3;
  t.micro_batch = 1;
  t.global_batch = 64;
  t.seq_len = 2048;
  t.recompute = workload::Recompute::kFull;
  return t;
}

TEST(ResumeMemoryTest, InPlaceFormatsResumeAtTheFreshPeak) {
  const workload::Model m = Llama8b();
  struct Case {
    Framework framework;
    int64_t zero;
    CheckpointFormat expected_default;
  };
  for (const Case& c : {Case{Framework::kMegatron, 1, CheckpointFormat::kTorchDist},
                        Case{Framework::kFsdp, 3, CheckpointFormat::kDcp},
                        Case{Framework::kDeepSpeed, 3, CheckpointFormat::kDeepSpeed},
                        Case{Framework::kMegatronDeepSpeed, 1, CheckpointFormat::kDeepSpeed}}) {
    workload::Training t = ShardedRun(c.framework);
    t.zero_stage = c.zero;
    ASSERT_TRUE(workload::Validate(m, t).ok()) << workload::FrameworkName(c.framework);
    const MemoryBreakdown fresh = EstimateMemory(m, t);
    const ResumeMemory r = EstimateResumeMemory(m, t, fresh);
    EXPECT_EQ(r.format, c.expected_default) << workload::FrameworkName(c.framework);
    EXPECT_EQ(r.load_transient_bytes, 0);
    EXPECT_FALSE(r.load_bound);
    EXPECT_DOUBLE_EQ(r.peak_at_resume_bytes_per_gpu, fresh.peak_bytes_per_gpu);
    EXPECT_STREQ(FitBoundName(fresh, r), "fresh");
  }
}

TEST(ResumeMemoryTest, FullStateDictLoadAddsTheLargestUnitsUnshardedStates) {
  const workload::Model m = Llama8b();
  workload::Training t = ShardedRun(Framework::kFsdp);
  t.checkpoint_format = CheckpointFormat::kFsdpFull;
  const MemoryBreakdown fresh = EstimateMemory(m, t);
  const ResumeMemory r = EstimateResumeMemory(m, t, fresh);
  // fp32 weights (4) + AdamW's two fp32 moments (8) of the largest unit: Llama 3's embedding
  // (128256 x 4096 = 525 M parameters), larger than a transformer layer (218 M).
  const double layer =
      std::max(workload::LayerParameterCount(m), workload::LargestTensorParameterCount(m));
  EXPECT_NEAR(layer, 128256.0 * 4096, 1);
  EXPECT_NEAR(r.load_transient_bytes, 12 * layer, 1);
  EXPECT_NEAR(r.allocated_bytes,
              std::max(fresh.allocated_bytes, fresh.weights_bytes + fresh.gradients_bytes +
                                                  fresh.optimizer_bytes + fresh.comm_buffer_bytes +
                                                  12 * layer),
              1);
  EXPECT_TRUE(r.load_bound);
  EXPECT_GT(r.peak_at_resume_bytes_per_gpu, fresh.peak_bytes_per_gpu);
  EXPECT_STREQ(FitBoundName(fresh, r), "resume");
  EXPECT_DOUBLE_EQ(FitPeakBytes(fresh, r), r.peak_at_resume_bytes_per_gpu);
}

TEST(ResumeMemoryTest, MegatronFsdpLoadRunsADummyStepOnFp32ShardedGradients) {
  const workload::Model m = Llama8b();
  workload::Training t = ShardedRun(Framework::kMegatronFsdp);
  ASSERT_TRUE(workload::Validate(m, t).ok());
  const MemoryBreakdown fresh = EstimateMemory(m, t);
  const ResumeMemory r = EstimateResumeMemory(m, t, fresh);
  EXPECT_EQ(r.format, CheckpointFormat::kFsdpDtensor);
  // 4 bytes per sharded main parameter; the optimizer holds 12 (fp32 master + two moments).
  EXPECT_NEAR(r.load_transient_bytes, fresh.optimizer_bytes / 3, 1);
  EXPECT_NEAR(r.load_transient_bytes, 4 * workload::ParameterCount(m) / 64, 1e6);
}

// A layout that fits fresh but not when it resumes is refused: `fits` takes the larger peak.
TEST(ResumeMemoryTest, EvaluateJudgesTheLargerPeak) {
  catalog::LoadOptions options;
  options.include_user_offers = false;
  Result<catalog::Catalog> catalog = catalog::Catalog::Load(kCatalogDir, options);
  ASSERT_TRUE(catalog.ok()) << catalog.status().message();
  EstimateRequest q;
  q.model = "llama-3-8b";
  q.gpu = "A100-40GB";
  q.gpus = 8;
  q.zero = 3;
  q.framework = "fsdp";
  q.recompute = "full";
  q.seq_len = 2048;
  Result<EstimateInput> in = ResolveEstimateInput(q, *catalog, kCatalogDir);
  ASSERT_TRUE(in.ok()) << in.status().message();
  const EstimateResult dcp = Evaluate(*in);
  in->training.checkpoint_format = CheckpointFormat::kFsdpFull;
  const EstimateResult full = Evaluate(*in);
  EXPECT_DOUBLE_EQ(full.memory.peak_bytes_per_gpu, dcp.memory.peak_bytes_per_gpu);
  EXPECT_GT(full.resume.peak_at_resume_bytes_per_gpu, dcp.resume.peak_at_resume_bytes_per_gpu);
  EXPECT_LT(full.headroom_fraction, dcp.headroom_fraction);
  EXPECT_DOUBLE_EQ(full.headroom_fraction,
                   HeadroomFraction(full.resume.peak_at_resume_bytes_per_gpu, full.capacity_bytes));
}

TEST(ResumeMemoryTest, RefusesAFormatTheFrameworkDoesNotWrite) {
  const workload::Model m = Llama8b();
  workload::Training t = ShardedRun(Framework::kFsdp);
  t.checkpoint_format = CheckpointFormat::kTorchDist;
  const Status s = workload::Validate(m, t);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("--checkpoint-format torch_dist"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("fsdp: dcp, fsdp_full"), std::string::npos) << s.message();
  EXPECT_EQ(workload::ParseCheckpointFormat("torch_dcp").value(), CheckpointFormat::kDcp);
  EXPECT_FALSE(workload::ParseCheckpointFormat("zip").ok());
}

}  // namespace
}  // namespace fulcrum::estimate
