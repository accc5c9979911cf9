// Megatron-Core's --recompute-modules in the estimators: for each module, the activations it
// discards, derived tensor by tensor from what LayerActivationBytes counts (estimate/memory.cc
// RecomputedModuleBytes cites where Megatron-LM checkpoints each), and the forward it re-runs.
#include <gtest/gtest.h>

#include <string>

#include "estimate/compute.h"
#include "estimate/memory.h"
#include "workload/model_io.h"
#include "workload/published_shapes_test_util.h"

namespace fulcrum::estimate {
namespace {

using workload::Training;

workload::Model Parsed(const char* config) {
  const Result<workload::Model> m = workload::ParseHfConfig(config, "config.json");
  EXPECT_TRUE(m.ok()) << m.status().message();
  return m.ok() ? *m : workload::Model{};
}

workload::Model Preset(const std::string& name) {
  const Result<workload::Model> m =
      workload::LoadModelPreset(std::string(FULCRUM_SOURCE_DIR) + "/catalog", name);
  EXPECT_TRUE(m.ok()) << m.status().message();
  return m.ok() ? *m : workload::Model{};
}

constexpr double kTokens = 4096;  // one sequence of 4096 tokens per micro-batch

// Megatron-LM, bf16, flash attention, selective recompute of `modules` over `tp` ranks.
Training Selective(uint32_t modules, int64_t tp) {
  Training t;
  t.framework = workload::Framework::kMegatron;
  t.precision = workload::Precision::kBf16Mixed;
  t.recompute = workload::Recompute::kSelective;
  t.recompute_modules = modules;
  t.flash_attention = true;
  t.tp = tp;
  t.seq_len = 4096;
  t.micro_batch = 1;
  t.global_batch = 1;
  return t;
}

// What adding `module` to core_attn takes off one layer's saved activations.
double Saving(const workload::Model& m, Training t, uint32_t module) {
  t.recompute_modules = workload::kRecomputeCoreAttn;
  const double before = LayerActivationBytes(m, t);
  t.recompute_modules |= module;
  return before - LayerActivationBytes(m, t);
}

// Llama 3 8B (hidden 4096, SwiGLU ffn 14336): "mlp" checkpoints the MLP, which keeps its input
// (the residual stream, saved anyway as the norm's input) and drops the fused norm's output
// (fc1's input, h) and the MLP's tensors, split over tp: SwiGLU's input (2f) and fc2's input (f).
// "layernorm" finds no norm module: Transformer Engine fuses both into the next linear.
TEST(RecomputeModulesMemoryTest, MlpDropsTheDenseMlpsTensors) {
  const workload::Model llama = Preset("llama-3-8b");
  const double h = 4096, f = 14336, e = 2;
  Training t = Selective(workload::kRecomputeCoreAttn, 2);
  EXPECT_NEAR(Saving(llama, t, workload::kRecomputeMlp), kTokens * (e * h + 3 * e * f / 2), 1e-3);
  EXPECT_DOUBLE_EQ(Saving(llama, t, workload::kRecomputeLayernorm), 0);
  // Sequence parallelism splits the norm output over tp as well.
  t.sequence_parallel = true;
  EXPECT_NEAR(Saving(llama, t, workload::kRecomputeMlp), kTokens * (e * h / 2 + 3 * e * f / 2),
              1e-3);
  // FP8 (Transformer Engine): the norm output and fc2's input are 1-byte casts.
  t.sequence_parallel = false;
  t.precision = workload::Precision::kFp8;
  EXPECT_NEAR(Saving(llama, t, workload::kRecomputeMlp), kTokens * (h + (2 * e + 1) * f / 2), 1e-3);
  // The recomputed MLP lives again during its layer's backward: one layer's worth on top.
  t.recompute_modules = workload::kRecomputeCoreAttn | workload::kRecomputeMlp;
  EXPECT_NEAR(RecomputeWorkingSetBytes(llama, t), Saving(llama, t, workload::kRecomputeMlp), 1e-3);
}

// DeepSeek-V2-Lite (hidden 2048; 27 layers, the first dense, 26 MoE with top-6 of 64 experts and
// 2 shared of 1408; no query compression, kv_lora_rank 512, 16 heads of qk 128 + 64 and v 128),
// bf16, tp 1, per token, means over the layers:
// - layernorm: the input norm's output (all layers, MLA's norm is a module) and the pre-MLP norm's
//   output of the MoE layers (the router's and shared experts' input): h + 26/27 h;
// - mla_up_proj: kv_b's fused norm output (512) and Q, K, V (16 x 192, 16 x 192, 16 x 128);
// - moe_act: the routed experts' fc2 inputs, 6 x 1408 in the MoE layers;
// - shared_experts: the shared experts' SwiGLU input and fc2 input, 3 x 2 x 1408;
// - moe: everything the MoE layer saves but its input: the 6 dispatched copies (6 h; the experts'
//   outputs are not kept: the probabilities are applied in the activation) and the (6 + 2) x 1408
//   experts' MLP tensors (3 each).
TEST(RecomputeModulesMemoryTest, EachModuleDropsItsTensorsOnAnMlaMoeModel) {
  const workload::Model lite = Parsed(workload::testing::kDeepSeekV2LiteConfig);
  const double h = 2048, e = 2, moe = 26.0 / 27, fe = 1408;
  const Training t = Selective(workload::kRecomputeCoreAttn, 1);
  const auto near = [](double a, double b) { EXPECT_NEAR(a, b, 1e-9 * b); };
  near(Saving(lite, t, workload::kRecomputeLayernorm), kTokens * e * (h + moe * h));
  near(Saving(lite, t, workload::kRecomputeMlaUpProj),
       kTokens * e * (512 + 16 * 192 + 16 * 192 + 16 * 128));
  near(Saving(lite, t, workload::kRecomputeMoeAct), kTokens * moe * 6 * fe * e);
  near(Saving(lite, t, workload::kRecomputeSharedExperts), kTokens * moe * 2 * fe * 3 * e);
  const double whole_moe = kTokens * moe * (6 * e * h + 8 * fe * 3 * e);
  near(Saving(lite, t, workload::kRecomputeMoe), whole_moe);
  // The MoE layer's checkpoint covers its activation and shared experts.
  near(Saving(lite, t,
              workload::kRecomputeMoe | workload::kRecomputeMoeAct |
                  workload::kRecomputeSharedExperts),
       whole_moe);
  // Output-discarding modules add up.
  near(Saving(lite, t, workload::kRecomputeLayernorm | workload::kRecomputeMlaUpProj),
       Saving(lite, t, workload::kRecomputeLayernorm) +
           Saving(lite, t, workload::kRecomputeMlaUpProj));
}

// activation_func_fp8_input_store keeps the SwiGLU's input (gate and up, 2 x width) in 1 byte
// instead of 2, in the dense MLPs, the shared experts and the routed experts; under moe_act the
// routed experts' checkpoint keeps fc1's 16-bit output instead, so the store saves nothing there.
TEST(RecomputeModulesMemoryTest, Fp8InputStoreHalvesTheSwigluInputOutsideMoeAct) {
  const workload::Model lite = Parsed(workload::testing::kDeepSeekV2LiteConfig);
  const double e = 2, moe = 26.0 / 27, fe = 1408, f = 10944;
  Training t = Selective(workload::kRecomputeCoreAttn, 1);
  const auto near = [](double a, double b) { EXPECT_NEAR(a, b, 1e-9 * b); };
  const auto store_saving = [&](Training with) {
    const double before = LayerActivationBytes(lite, with);
    with.activation_fp8_input_store = true;
    return before - LayerActivationBytes(lite, with);
  };
  const double dense = (1 - moe) * f, experts = moe * (6 + 2) * fe;
  near(store_saving(t), kTokens * 2 * (e - 1) * (dense + experts));
  t.recompute_modules |= workload::kRecomputeMoeAct;
  near(store_saving(t), kTokens * 2 * (e - 1) * (dense + moe * 2 * fe));
}

// DeepSeek-V3's FP8 activation caching (arXiv 2412.19437v2 section 3.3.3), on V2-Lite under FP8
// with tp 2: the attention output (16 heads x v 128) kept once in E5M6, 1.5 bytes and a 4-byte
// scale per 128, instead of the attention's 16-bit output and the projection's 1-byte cast; each
// MoE expert's SwiGLU input (gate and up, 2 x 1408) in 1 byte plus the scales and no fc2 input,
// instead of 2 x 2 + 1 bytes per width (routed: 2 x 2 under moe_act); the dense layer's MLP as it
// was. All of it split over tp.
TEST(RecomputeModulesMemoryTest, Fp8ActivationCacheKeepsDeepSeeksCaches) {
  const workload::Model lite = Parsed(workload::testing::kDeepSeekV2LiteConfig);
  const double moe = 26.0 / 27, fe = 1408, out = 16 * 128, scale = 4.0 / 128, tp = 2;
  Training t = Selective(workload::kRecomputeCoreAttn, 2);
  t.precision = workload::Precision::kFp8;
  const auto near = [](double a, double b) { EXPECT_NEAR(a, b, 1e-9 * std::abs(b)); };
  const auto cache_saving = [&](Training with) {
    const double before = LayerActivationBytes(lite, with);
    with.fp8_activation_cache = true;
    return before - LayerActivationBytes(lite, with);
  };
  // Core attention recomputed keeps no 16-bit attention output without the cache (Megatron-Core's
  // checkpoint saves Q, K, V; the projection keeps its 1-byte cast), so the E5M6 copy replaces
  // that cast alone and costs more than it saves.
  const double attention = out * (1 - (1.5 + scale));
  const double cached = 2 * (1 + scale);
  near(cache_saving(t), kTokens / tp * (attention + moe * fe * 8 * (2 * 2 + 1 - cached)));
  t.recompute_modules |= workload::kRecomputeMoeAct;
  near(cache_saving(t),
       kTokens / tp * (attention + moe * fe * (6 * (2 * 2 - cached) + 2 * (2 * 2 + 1 - cached))));
  // The whole MoE layer recomputed keeps no expert tensor: only the attention output is saved.
  t.recompute_modules |= workload::kRecomputeMoe;
  near(cache_saving(t), kTokens / tp * attention);
  // Full recompute keeps each layer's input alone: nothing to cache.
  t.recompute = workload::Recompute::kFull;
  EXPECT_DOUBLE_EQ(cache_saving(t), 0);
}

// Under FP8 the linears keep 1-byte casts; layernorm makes MLA's down-projections keep the 16-bit
// norm output instead (set_for_recompute_input_layernorm), which it then frees: DeepSeek-V3 (query
// compression) drops both casts (2 h); V2-Lite only kv_a's (h), its q_proj not being switched. In
// the MoE layers it drops the router's 16-bit input and the shared experts' cast (3 h). With
// mla_up_proj and no query compression the checkpoint keeps the 16-bit norm output in place of
// q_proj's cast (1 byte more per h), beside dropping kv_b's cast (512) and Q, K, V.
TEST(RecomputeModulesMemoryTest, Fp8CastsFollowTheModules) {
  const workload::Model v3 = Parsed(workload::testing::kDeepSeekV3Config);
  const workload::Model lite = Parsed(workload::testing::kDeepSeekV2LiteConfig);
  Training t = Selective(workload::kRecomputeCoreAttn, 1);
  t.precision = workload::Precision::kFp8;
  const auto near = [](double a, double b) { EXPECT_NEAR(a, b, 1e-9 * std::abs(b)); };
  near(Saving(v3, t, workload::kRecomputeLayernorm), kTokens * (2 * 7168 + 58.0 / 61 * 3 * 7168));
  near(Saving(lite, t, workload::kRecomputeLayernorm), kTokens * (2048 + 26.0 / 27 * 3 * 2048));
  near(Saving(lite, t, workload::kRecomputeMlaUpProj),
       kTokens * (512 + 2 * (16 * 192 + 16 * 192 + 16 * 128) - 2048));
  near(Saving(v3, t, workload::kRecomputeMlaUpProj),
       kTokens * (1536 + 512 + 2 * (128 * 192 + 128 * 192 + 128 * 128)));
}

Hardware H100() {
  Hardware hw;
  hw.peak_flops = hw.peak_flops_16bit = 989e12;
  hw.memory_bytes_per_second = 3350e9;
  hw.intra_node_bytes_per_second = 450e9;
  hw.nvlink = true;
  hw.efficiency = DefaultTimeCalibration().hopper;
  return hw;
}

// A recomputed module costs its forward again: on one GPU the hardware FLOPs grow by its GEMMs'
// FLOPs in every layer it covers, the model FLOPs not at all; an elementwise module (moe_act)
// adds its memory traffic: the SwiGLU reading 2 x 6 x 1408 and writing 6 x 1408 elements per
// token in the 26 MoE layers.
TEST(RecomputeModulesComputeTest, RecomputeTimeGrowsByTheModulesForward) {
  const Hardware hw = H100();
  const workload::Model llama = Preset("llama-3-8b");
  Training t = Selective(workload::kRecomputeMlp, 1);
  const StepTime mlp = EstimateStepTime(llama, t, hw);
  const double h = 4096, f = 14336;
  EXPECT_NEAR(mlp.hfu / mlp.mfu - 1, 2 * 32 * h * 3 * f / ModelFlopsPerToken(llama, t), 1e-9);

  const workload::Model v3 = Parsed(workload::testing::kDeepSeekV3Config);
  t.recompute_modules = workload::kRecomputeMlaUpProj;
  const StepTime up = EstimateStepTime(v3, t, hw);
  const double up_flops = 1536.0 * 128 * 192 + 512.0 * 128 * 256;
  EXPECT_NEAR(up.hfu / up.mfu - 1, 2 * 61 * up_flops / ModelFlopsPerToken(v3, t), 1e-9);

  const workload::Model lite = Parsed(workload::testing::kDeepSeekV2LiteConfig);
  t.recompute_modules = workload::kRecomputeMlaUpProj;
  const double without = EstimateStepTime(lite, t, hw).step_seconds;
  t.recompute_modules |= workload::kRecomputeMoeAct;
  const double with = EstimateStepTime(lite, t, hw).step_seconds;
  const double token_seconds =
      kTokens * 2 /
      (hw.memory_bytes_per_second * DefaultTimeCalibration().memory_bandwidth_efficiency);
  EXPECT_NEAR(with - without, 26 * token_seconds * 3 * 6 * 1408, 1e-12);
}

}  // namespace
}  // namespace fulcrum::estimate
