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

// A BF16 Megatron-Core run of 4096-token sequences, one per micro-batch, flash attention, no
// recompute, over `tp` ranks.
workload::Training MegatronBf16(int64_t tp) {
  workload::Training t;
  t.precision = workload::Precision::kBf16Mixed;
  t.framework = workload::Framework::kMegatron;
  t.tp = tp;
  t.seq_len = 4096;
  t.micro_batch = 1;
  t.flash_attention = true;
  t.recompute = workload::Recompute::kNone;
  return t;
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
  workload::Training t = MegatronBf16(2);
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

// FP8 under Transformer Engine (Megatron): every linear keeps its input as a 1-byte cast
// (estimate/memory.cc LinearInputBytes). On DeepSeek-V2-Lite (hidden 2048, 27 layers of which 1
// dense with ffn 10944, 26 MoE with top-6 of 64 experts and 2 shared experts of 1408, no query
// compression, kv_lora_rank 512, 16 heads of v_head 128), per token and layer, against BF16:
// - the input norm's output feeds both down-projections, each keeping a cast: 2 x 1 byte = the
//   16-bit tensor it replaces, no change;
// - the dense layer's MLP norm output (fc1's input): h fewer bytes;
// - a MoE layer's: the router keeps the 16-bit tensor, the shared experts add a cast (+h), and the
//   experts' 6 dispatched inputs are casts (-6h): 5h fewer;
// - the latent's norm output (kv_b_proj's input): kv_lora_rank fewer;
// - the output projection's cast beside the attention output: heads x v_head more;
// - the down-projections' inputs: the mean MLP width fewer.
TEST(MlaMemoryTest, TransformerEngineFp8KeepsLinearInputsAsCasts) {
  const workload::Model lite = Parsed(workload::testing::kDeepSeekV2LiteConfig);
  workload::Training bf16 = MegatronBf16(1);
  workload::Training fp8 = bf16;
  fp8.precision = workload::Precision::kFp8;
  const double h = 2048, layers = 27, tokens = 4096;
  const double mean_mlp_width = (10944 + 26 * (6 + 2) * 1408) / layers;
  const double fewer = h / layers + 5 * h * 26 / layers + 512 - 16 * 128 + mean_mlp_width;
  EXPECT_NEAR(LayerActivationBytes(lite, bf16) - LayerActivationBytes(lite, fp8), tokens * fewer,
              1e-6 * tokens * fewer);
  fp8.framework = workload::Framework::kFsdp;  // torchao float8: casts per use, saves 16-bit
  bf16.framework = workload::Framework::kFsdp;
  EXPECT_DOUBLE_EQ(LayerActivationBytes(lite, fp8), LayerActivationBytes(lite, bf16));
}

// LoRA on an MLA model adapts the matrices PEFT finds by name in DeepseekV2Attention /
// DeepseekV3Attention: q_proj (or q_a_proj and q_b_proj), kv_a_proj_with_mqa, kv_b_proj and
// o_proj, r x (in + out) each, the widths read from the config fields.
TEST(MlaLoraTest, AdaptersFollowTheMlaProjectionShapes) {
  workload::Training t;
  t.method = workload::Method::kLora;
  t.lora_rank = 16;
  t.lora_targets = workload::kLoraAttention;
  const double r = 16;
  // DeepSeek-V2-Lite: hidden 2048, 16 heads, no query compression, kv_lora_rank 512, qk_nope 128,
  // qk_rope 64, v_head 128, 27 layers.
  const workload::Model lite = Parsed(workload::testing::kDeepSeekV2LiteConfig);
  const double h = 2048, heads = 16, kv_lora = 512, nope = 128, rope = 64, v = 128;
  const double q_proj = r * (h + heads * (nope + rope));
  const double kv_a = r * (h + kv_lora + rope);
  const double kv_b = r * (kv_lora + heads * (nope + v));
  const double o_proj = r * (heads * v + h);
  EXPECT_DOUBLE_EQ(TrainableParameterCount(lite, t), 27 * (q_proj + kv_a + kv_b + o_proj));
  // K and V come out of the same two matrices: targeting either adapts both, and only them.
  workload::Training k_only = t;
  k_only.lora_targets = workload::kLoraK;
  EXPECT_DOUBLE_EQ(TrainableParameterCount(lite, k_only), 27 * (kv_a + kv_b));
  workload::Training v_only = t;
  v_only.lora_targets = workload::kLoraV;
  EXPECT_DOUBLE_EQ(TrainableParameterCount(lite, v_only), TrainableParameterCount(lite, k_only));
  // DeepSeek-V3: the query goes through q_a_proj (7168 -> 1536) and q_b_proj (1536 -> 128 x 192).
  const workload::Model v3 = Parsed(workload::testing::kDeepSeekV3Config);
  workload::Training q_only = t;
  q_only.lora_targets = workload::kLoraQ;
  EXPECT_DOUBLE_EQ(TrainableParameterCount(v3, q_only),
                   61 * (r * (7168 + 1536) + r * (1536 + 128 * (nope + rope))));
  // Each adapted matrix keeps its rank-r intermediate: V3's attention has five, V2-Lite's four.
  EXPECT_DOUBLE_EQ(workload::LoraAdapterCountPerLayer(v3, t), 5);
  EXPECT_DOUBLE_EQ(workload::LoraAdapterCountPerLayer(lite, t), 4);
}

// torchtitan's selective ("op") checkpointing saves the odd-numbered matmuls of a block and
// re-runs the even ones. DeepSeek-V2-Lite's attention runs wq, wkv_a, wkv_b, wo, then the MLP
// w1, w3, w2: it keeps wq (16 x 192), wkv_b (16 x (128 + 128)), w1 (f) and w2 (hidden) and
// re-runs wkv_a (2048 -> 576), wo (2048 -> 2048) and w3. DeepSeek-V3 runs wq_a, wq_b, wkv_a,
// wkv_b, wo, w1, w3, w2: it keeps wq_a (1536) and wkv_a (576) whole on every tp rank, wo and w3,
// and re-runs wq_b, wkv_b, w1 and w2. The MLP width is the mean over the dense and MoE layers.
double MeanMlpWidth(const workload::Model& m) {
  const double moe =
      static_cast<double>((m.experts_per_token + m.shared_experts) * workload::ExpertFfnHidden(m));
  const double layers = static_cast<double>(m.layers);
  const double dense = static_cast<double>(m.dense_layers);
  return (dense * static_cast<double>(m.ffn_hidden) + (layers - dense) * moe) / layers;
}

workload::Training TorchtitanSelective(int tp) {
  workload::Training t;
  t.framework = workload::Framework::kFsdp;
  t.recompute = workload::Recompute::kSelective;
  t.flash_attention = true;
  t.tp = tp;
  t.seq_len = 4096;
  t.micro_batch = 1;
  t.global_batch = 1;
  return t;
}

TEST(MlaSelectiveRecomputeTest, TorchtitanKeepsTheOddMatmulsOfTheMlaLayer) {
  const double tokens = 4096, e = 2;
  const workload::Model lite = Parsed(workload::testing::kDeepSeekV2LiteConfig);
  const double h = 2048, w = MeanMlpWidth(lite);
  const double lite_saved = e * tokens * h +                    // the layer's input
                            e * tokens * h + 4 * 16 * tokens +  // attention output + LSE
                            e * tokens * (16 * 192 + 16 * 256 + h) + e * tokens * w;
  EXPECT_NEAR(LayerActivationBytes(lite, TorchtitanSelective(1)), lite_saved, lite_saved * 1e-12);

  const workload::Model v3 = Parsed(workload::testing::kDeepSeekV3Config);
  const double h3 = 7168, w3 = MeanMlpWidth(v3);
  const double v3_saved =
      e * tokens * h3 +
      (e * tokens * h3 + 4 * 128 * tokens + e * tokens * h3 + e * tokens * w3) / 2 +
      e * tokens * (1536 + 576);
  EXPECT_NEAR(LayerActivationBytes(v3, TorchtitanSelective(2)), v3_saved, v3_saved * 1e-12);

  // The re-run matmuls show in HFU - MFU: 2 x layers x their multiply-adds per token over the
  // model FLOPs per token (one GPU, one micro-batch).
  workload::Training one = TorchtitanSelective(1);
  one.dp = 1;
  Hardware hw;
  hw.peak_flops = hw.peak_flops_16bit = 989e12;
  hw.memory_bytes_per_second = 3350e9;
  hw.intra_node_bytes_per_second = 450e9;
  hw.nvlink = true;
  hw.efficiency = DefaultTimeCalibration().hopper;
  const StepTime lite_step = EstimateStepTime(lite, one, hw);
  const double lite_rerun = 2048.0 * 576 + 2048.0 * 2048 + h * w;
  EXPECT_NEAR(lite_step.hfu / lite_step.mfu - 1,
              2 * 27 * lite_rerun / ModelFlopsPerToken(lite, one), 1e-9);
  const StepTime v3_step = EstimateStepTime(v3, one, hw);
  const double v3_rerun = 1536.0 * 128 * 192 + 512.0 * 128 * 256 + 2 * h3 * w3;
  EXPECT_NEAR(v3_step.hfu / v3_step.mfu - 1, 2 * 61 * v3_rerun / ModelFlopsPerToken(v3, one), 1e-9);
}

}  // namespace
}  // namespace fulcrum::estimate
