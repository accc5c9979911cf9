// Multi-head latent attention in the training estimators: the FLOPs per token against
// DeepSeek's published figures, and the activations the latent projections keep.
#include <gtest/gtest.h>

#include "estimate/compute.h"
#include "estimate/memory.h"
#include "workload/model_io.h"
#include "workload/published_shapes_test_util.h"

namespace fulcrum::estimate {
namespace {

workload::Model Parsed(const char* config) {
  const Result<workload::Model> m = workload::ParseHfConfig(config, "config.json");
  EXPECT_TRUE(m.ok()) << m.status().message();
  return m.ok() ? *m : workload::Model{};
}

// Zhao et al. 2025, "Insights into DeepSeek-V3: Scaling Challenges and Reflections on Hardware
// for AI Architectures" (arXiv 2505.09343) Table 2, training cost at sequence length 4096:
// DeepSeek-V2 155 GFLOPs per token, DeepSeek-V3 250. Their count takes the causal half of the
// attention square; fulcrum's, as PaLM's and Megatron's, the full square, so half of the
// attention term (6 L s (q width + output width) / 2) is taken off before comparing.
TEST(MlaComputeTest, FlopsPerTokenMatchDeepSeeksTrainingCost) {
  workload::Training t;
  t.seq_len = 4096;
  struct Case {
    const char* config;
    double gflops;
  };
  for (const Case& c : {Case{workload::testing::kDeepSeekV2Config, 155},
                        Case{workload::testing::kDeepSeekV3Config, 250}}) {
    const workload::Model m = Parsed(c.config);
    const double attention = 6.0 * static_cast<double>(m.layers) * 4096 *
                             static_cast<double>(workload::QDim(m) + workload::AttentionOutDim(m));
    EXPECT_NEAR((ModelFlopsPerToken(m, t) - attention / 2) / 1e9, c.gflops, c.gflops * 0.01);
  }
}

// The saved activations follow the attention widths: the latents (2 q_lora_rank + kv_lora_rank +
// qk_rope + kv_lora_rank per token, on every tp rank) and Q, K, V and the output (split by tp).
TEST(MlaMemoryTest, ActivationsFollowTheLatentAndHeadWidths) {
  const workload::Model v3 = Parsed(workload::testing::kDeepSeekV3Config);
  workload::Training t;
  t.precision = workload::Precision::kBf16Mixed;
  t.framework = workload::Framework::kMegatron;
  t.tp = 2;
  t.seq_len = 4096;
  t.micro_batch = 1;
  t.flash_attention = true;
  t.recompute = workload::Recompute::kNone;
  const double tokens = 4096;
  const double e = 2;  // bf16
  workload::Model no_q_lora = v3;
  no_q_lora.q_lora_rank = 0;
  EXPECT_DOUBLE_EQ(LayerActivationBytes(v3, t) - LayerActivationBytes(no_q_lora, t),
                   e * tokens * 2 * 1536);
  workload::Model wider_v = v3;
  wider_v.v_head_dim = 192;  // V and the attention output grow by 128 heads x 64, split over tp 2
  EXPECT_DOUBLE_EQ(LayerActivationBytes(wider_v, t) - LayerActivationBytes(v3, t),
                   e * tokens * 2 * 128 * 64 / 2);
  t.sequence_parallel = true;  // the latents are then split too
  EXPECT_DOUBLE_EQ(LayerActivationBytes(v3, t) - LayerActivationBytes(no_q_lora, t),
                   e * tokens * 2 * 1536 / 2);
}

}  // namespace
}  // namespace fulcrum::estimate
