#include "serve/serve.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "catalog/catalog.h"
#include "estimate/compute.h"
#include "serve/shipped_catalog_testing.h"
#include "workload/model_io.h"

namespace fulcrum::serve {
namespace {

using testing::Cat;
using testing::Gpu;
using testing::kCatalogDir;

workload::Model Preset(const std::string& name) {
  Result<workload::Model> m = workload::LoadModelPreset(kCatalogDir, name);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return *m;
}

ServeRequest Request(const std::string& model, const std::string& gpu, Precision p, KvPrecision kv,
                     int64_t batch, int64_t input, int64_t output, int64_t tp = 1) {
  ServeRequest r;
  r.model = Preset(model);
  r.gpu = Gpu(gpu);
  r.interconnect =
      r.gpu.nvlink_gbps ? catalog::Interconnect::kNvlink : catalog::Interconnect::kPcie;
  r.precision = p;
  r.kv_precision = kv;
  r.batch = batch;
  r.input_len = input;
  r.output_len = output;
  r.tp = tp;
  // The published rows these tests reproduce are TensorRT-LLM's static-batching runs
  // (gptSessionBenchmark): the reference engine, whose constants are the base ones.
  r.engine.engine = Engine::kTrtllm;
  r.batching = Batching::kStatic;
  return r;
}

ServeEstimate Estimate(const ServeRequest& r) {
  Result<ServeEstimate> e = EstimateServing(r);
  EXPECT_TRUE(e.ok()) << e.status().ToString();
  return e.ok() ? *e : ServeEstimate{};
}

// meta-llama/Meta-Llama-3-8B config.json: 32 layers x 8 KV heads x head_dim 128, K and V, 2
// bytes = 131072 bytes (128 KiB) per token in bf16; fp8 halves it.
TEST(ServeMemoryTest, Llama3_8bKvCacheIs128KibPerTokenWithGqa) {
  const workload::Model m = Preset("llama-3-8b");
  EXPECT_EQ(KvCacheBytesPerToken(m, KvPrecision::kBf16), 131072.0);
  EXPECT_EQ(KvCacheBytesPerToken(m, KvPrecision::kFp8), 65536.0);
}

// meta-llama/Llama-2-7b-hf: multi-head attention (32 KV heads): 2 x 32 x 4096 x 2 = 512 KiB per
// token; meta-llama/Llama-2-70b-hf: 80 layers x 8 KV heads x 128 x 2 x 2 = 320 KiB.
TEST(ServeMemoryTest, KvCacheCountsKvHeadsNotAttentionHeads) {
  EXPECT_EQ(KvCacheBytesPerToken(Preset("llama-2-7b"), KvPrecision::kFp16), 524288.0);
  EXPECT_EQ(KvCacheBytesPerToken(Preset("llama-2-70b"), KvPrecision::kBf16), 327680.0);
}

// Multi-head latent attention caches the latent, kv_lora_rank + qk_rope_head_dim per token and
// layer. Zhao et al. 2025 (arXiv 2505.09343) Table 1, KV cache per token in BF16: DeepSeek-V3
// (MLA) 70.272 KB = 61 x (512 + 64) x 2 bytes; LLaMA-3.1 405B (GQA) 516.096 KB. The latent is one
// KV "head", so every GPU of tp keeps all of it (vLLM MLACommonBackend).
TEST(ServeMemoryTest, MlaCachesTheLatentOnEveryGpu) {
  EXPECT_EQ(KvCacheBytesPerToken(Preset("deepseek-v3"), KvPrecision::kBf16), 70272.0);
  EXPECT_EQ(KvCacheBytesPerToken(Preset("llama-3-405b"), KvPrecision::kBf16), 516096.0);
  EXPECT_EQ(KvCacheBytesPerToken(Preset("deepseek-v2-lite"), KvPrecision::kFp8), 27.0 * 576);
  ServeRequest r = Request("deepseek-v2-lite", "H100-SXM", Precision::kBf16, KvPrecision::kBf16, 8,
                           1024, 128, 1);
  const ServeMemory tp1 = Estimate(r).memory;
  r.tp = 2;
  const ServeMemory tp2 = Estimate(r).memory;
  // Per GPU: half the weights, the same KV bytes (not half of them, as GQA heads would be).
  EXPECT_DOUBLE_EQ(tp1.peak_bytes_per_gpu - tp1.weights_bytes - tp1.activation_bytes_per_gpu -
                       tp1.overhead_bytes_per_gpu,
                   tp1.kv_cache_bytes);
  EXPECT_NEAR(tp2.peak_bytes_per_gpu - tp2.weights_bytes / 2 - tp2.activation_bytes_per_gpu -
                  tp2.overhead_bytes_per_gpu,
              tp1.kv_cache_bytes, 1.0);
}

// meta-llama/Llama-2-70b-hf config.json (80 layers, hidden 8192, 64 heads / 8 KV heads, FFN
// 28672, vocab 32000): 68,976,648,192 parameters, 2 bytes each in bf16 = 137,953,296,384 bytes.
TEST(ServeMemoryTest, Llama2_70bWeightsInBf16MatchTheCheckpoint) {
  const workload::Model m = Preset("llama-2-70b");
  EXPECT_NEAR(WeightBytes(m, Precision::kBf16), 137953296384.0, 137953296384.0 * 0.001);
  // Quantised formats keep embeddings and head in 16-bit: fp8 a little over half, AWQ int4 a
  // little over a quarter.
  const double bf16 = WeightBytes(m, Precision::kBf16);
  EXPECT_GT(WeightBytes(m, Precision::kFp8), 0.5 * bf16);
  EXPECT_LT(WeightBytes(m, Precision::kFp8), 0.52 * bf16);
  EXPECT_GT(WeightBytes(m, Precision::kInt4WeightOnly), 0.25 * bf16);
  EXPECT_LT(WeightBytes(m, Precision::kInt4WeightOnly), 0.28 * bf16);
}

// mistralai/Mistral-7B-v0.1 config.json: sliding_window 4096. Qwen/Qwen2-7B: sliding_window
// 131072 with use_sliding_window false (full attention).
TEST(ServeMemoryTest, SlidingWindowCapsTheCachedTokens) {
  const std::string mistral = R"({"architectures": ["MistralForCausalLM"], "hidden_size": 4096,
      "intermediate_size": 14336, "num_attention_heads": 32, "num_hidden_layers": 32,
      "num_key_value_heads": 8, "vocab_size": 32000, "max_position_embeddings": 32768,
      "sliding_window": 4096})";
  Result<workload::Model> m = workload::ParseHfConfig(mistral, "config.json");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->sliding_window, 4096);
  EXPECT_EQ(CachedTokens(*m, 8192), 4096);
  EXPECT_EQ(CachedTokens(*m, 1000), 1000);

  const std::string qwen = R"({"architectures": ["Qwen2ForCausalLM"], "hidden_size": 3584,
      "intermediate_size": 18944, "num_attention_heads": 28, "num_hidden_layers": 28,
      "num_key_value_heads": 4, "vocab_size": 152064, "sliding_window": 131072,
      "use_sliding_window": false})";
  Result<workload::Model> q = workload::ParseHfConfig(qwen, "config.json");
  ASSERT_TRUE(q.ok()) << q.status().ToString();
  EXPECT_EQ(q->sliding_window, 0);
  // The shipped preset (catalog/models/mistral-7b.yaml, the v0.1 config) carries the window.
  EXPECT_EQ(Preset("mistral-7b").sliding_window, 4096);
  Result<workload::Model> fixture = workload::LoadHfConfigFile(std::string(FULCRUM_SOURCE_DIR) +
                                                               "/tests/fixtures/hf/qwen2-7b.json");
  ASSERT_TRUE(fixture.ok()) << fixture.status().ToString();
  EXPECT_EQ(fixture->sliding_window, 0);

  ServeRequest r = Request("mistral-7b", "L4", Precision::kBf16, KvPrecision::kBf16, 4, 6000, 2192);
  r.model = *m;
  const double windowed = Estimate(r).memory.kv_cache_bytes;
  r.model.sliding_window = 0;
  EXPECT_DOUBLE_EQ(Estimate(r).memory.kv_cache_bytes, 2 * windowed);
}

TEST(ServeMemoryTest, MaxConcurrencyIsTheLargestBatchThatFits) {
  ServeRequest r = Request("llama-3-8b", "L4", Precision::kBf16, KvPrecision::kBf16, 1, 1024, 1024);
  const int64_t max = Estimate(r).memory.max_concurrency;
  ASSERT_GT(max, 1);
  r.batch = max;
  EXPECT_TRUE(Estimate(r).memory.fits);
  r.batch = max + 1;
  EXPECT_FALSE(Estimate(r).memory.fits);
  // The budget is vLLM's gpu_memory_utilization 0.9 of the card.
  EXPECT_DOUBLE_EQ(Estimate(r).memory.budget_bytes_per_gpu, 0.9 * 24 * 1024.0 * 1024 * 1024);
  // An fp8 KV cache holds about twice the sequences.
  r.kv_precision = KvPrecision::kFp8;
  r.batch = 1;
  EXPECT_NEAR(static_cast<double>(Estimate(r).memory.max_concurrency), 2.0 * max, 2.0);
}

// vLLM start-up logs of meta-llama/Llama-3.1-8B-Instruct on an RTX 3090 at
// gpu_memory_utilization 0.90 (https://github.com/vllm-project/vllm/issues/10517): max_model_len
// 20000 -> 1952 blocks of 16 tokens, 29000 -> 1478; without chunked prefill vLLM profiles a
// forward pass of max_model_len tokens, so the longer context leaves less for the KV cache.
TEST(ServeMemoryTest, KvCapacityFollowsTheProfiledForwardPassAsVllmLogsIt) {
  ServeRequest r =
      Request("llama-3-8b", "RTX-3090", Precision::kBf16, KvPrecision::kBf16, 1, 20000, 1);
  r.max_batched_tokens = 20000;
  const ServeMemory at20k = Estimate(r).memory;
  r.input_len = r.max_batched_tokens = 29000;
  const ServeMemory at29k = Estimate(r).memory;
  EXPECT_NEAR(static_cast<double>(at20k.kv_cache_capacity_tokens), 1952 * 16, 1952 * 16 * 0.1);
  EXPECT_NEAR(static_cast<double>(at29k.kv_cache_capacity_tokens), 1478 * 16, 1478 * 16 * 0.1);
  EXPECT_GT(at29k.activation_bytes_per_gpu, at20k.activation_bytes_per_gpu);
  // max_concurrency is the capacity in whole sequences (29000 + 1 tokens each: none fits twice).
  EXPECT_EQ(at29k.max_concurrency, at29k.kv_cache_capacity_tokens / 29001);
}

// The forward workspace holds Q, K and V of a prefill chunk at the attention kernel's widths:
// on DeepSeek-V2-Lite 16 heads x (qk_nope + qk_rope) for Q and K and 16 x v_head for V (K and V
// expanded from the latent for the prompt). Widening qk_nope by 64 widens Q and K by 16 x 64
// each, 2 bytes per element, split over tp.
TEST(ServeMemoryTest, MlaWorkspaceHoldsQkvAtTheirHeadWidths) {
  ServeRequest r = Request("deepseek-v2-lite", "H100-SXM", Precision::kBf16, KvPrecision::kBf16, 8,
                           1024, 128, 2);
  const ServeMemory lite = Estimate(r).memory;
  r.model.qk_nope_head_dim += 64;
  const ServeMemory wider = Estimate(r).memory;
  const double chunk = static_cast<double>(r.max_batched_tokens);
  EXPECT_DOUBLE_EQ(wider.activation_bytes_per_gpu - lite.activation_bytes_per_gpu,
                   chunk * 2 * (2 * 16 * 64) / 2);
}

TEST(ServeMemoryTest, TensorParallelismSplitsWeightsAndKv) {
  const ServeEstimate one = Estimate(
      Request("llama-2-70b", "H100-SXM", Precision::kBf16, KvPrecision::kBf16, 8, 512, 512, 2));
  const ServeEstimate four = Estimate(
      Request("llama-2-70b", "H100-SXM", Precision::kBf16, KvPrecision::kBf16, 8, 512, 512, 4));
  EXPECT_LT(four.memory.peak_bytes_per_gpu, one.memory.peak_bytes_per_gpu);
  EXPECT_GT(four.memory.max_concurrency, 2 * one.memory.max_concurrency);
  EXPECT_DOUBLE_EQ(four.memory.weights_bytes, one.memory.weights_bytes);  // whole model
}

TEST(ServePrecisionTest, RefusesWhatTheGpuCannotRunNamingWhatItSupports) {
  struct Case {
    const char* gpu;
    Precision precision;
  };
  for (const Case& c : {Case{"T4", Precision::kBf16}, Case{"V100-SXM2-16GB", Precision::kBf16},
                        Case{"A100-80GB", Precision::kFp8}, Case{"H100-SXM", Precision::kFp4},
                        Case{"V100-SXM2-16GB", Precision::kInt8}}) {
    const catalog::Gpu gpu = Gpu(c.gpu);
    Status s = CheckSupport(gpu, c.precision, KvPrecision::kFp16);
    ASSERT_FALSE(s.ok()) << c.gpu;
    EXPECT_EQ(s.code(), StatusCode::kInvalidInput);
    EXPECT_NE(s.message().find(gpu.name), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("it supports: "), std::string::npos) << s.message();
    ASSERT_NE(s.detail(), nullptr);
    EXPECT_EQ(s.detail()->field, "precision");
    EXPECT_EQ(s.detail()->found, std::string(PrecisionName(c.precision)));
    EXPECT_NE(std::find(s.detail()->nearest.begin(), s.detail()->nearest.end(), "fp16"),
              s.detail()->nearest.end());
  }
  // ... and runs what it has (sourced in catalog/gpus.csv).
  EXPECT_TRUE(CheckSupport(Gpu("T4"), Precision::kInt8, KvPrecision::kFp16).ok());
  EXPECT_TRUE(CheckSupport(Gpu("A100-80GB"), Precision::kInt8, KvPrecision::kBf16).ok());
  EXPECT_TRUE(CheckSupport(Gpu("H100-SXM"), Precision::kFp8, KvPrecision::kFp8).ok());
  EXPECT_TRUE(CheckSupport(Gpu("L4"), Precision::kFp8, KvPrecision::kFp8).ok());
  EXPECT_TRUE(CheckSupport(Gpu("MI300X"), Precision::kFp8, KvPrecision::kBf16).ok());
  EXPECT_TRUE(CheckSupport(Gpu("B200"), Precision::kFp4, KvPrecision::kFp8).ok());
  EXPECT_TRUE(CheckSupport(Gpu("T4"), Precision::kInt4WeightOnly, KvPrecision::kFp16).ok());
  // A bf16 KV cache on a card without bf16 is refused too.
  Status kv = CheckSupport(Gpu("T4"), Precision::kFp16, KvPrecision::kBf16);
  ASSERT_FALSE(kv.ok());
  ASSERT_NE(kv.detail(), nullptr);
  EXPECT_EQ(kv.detail()->field, "kv-precision");
  // EstimateServing applies the same check.
  EXPECT_FALSE(EstimateServing(
                   Request("llama-3-8b", "T4", Precision::kBf16, KvPrecision::kFp16, 1, 128, 128))
                   .ok());
}

TEST(ServePrecisionTest, ParsesTheNamesAndSuggestsTheNearest) {
  for (const char* name :
       {"bf16", "fp16", "fp8", "fp4", "int8", "int8-weight-only", "int4-weight-only"}) {
    Result<Precision> p = ParsePrecision(name);
    ASSERT_TRUE(p.ok()) << name;
    EXPECT_EQ(PrecisionName(*p), name);
  }
  Result<Precision> bad = ParsePrecision("int4-weight-onyl");
  ASSERT_FALSE(bad.ok());
  ASSERT_NE(bad.status().detail(), nullptr);
  EXPECT_EQ(bad.status().detail()->nearest.front(), "int4-weight-only");
  EXPECT_FALSE(ParseKvPrecision("int4").ok());
}

TEST(ServeSpeedTest, DecodeIsBandwidthBoundAtBatchOneAndComputeBoundAtLargeBatch) {
  ServeRequest r =
      Request("llama-3-8b", "H100-SXM", Precision::kBf16, KvPrecision::kBf16, 1, 128, 128);
  const ServeEstimate small = Estimate(r);
  EXPECT_GT(small.speed.decode_memory_seconds, 10 * small.speed.decode_compute_seconds);
  r.batch = 2048;
  const ServeEstimate large = Estimate(r);
  EXPECT_GT(large.speed.decode_compute_seconds, large.speed.decode_memory_seconds);
  EXPECT_GT(large.speed.tpot_seconds, small.speed.tpot_seconds);
  EXPECT_GT(large.speed.output_tokens_per_second, 50 * small.speed.output_tokens_per_second);
  // Quantised weights read fewer bytes per step: int4 decodes faster at batch 1.
  r.batch = 1;
  r.precision = Precision::kInt4WeightOnly;
  EXPECT_LT(Estimate(r).speed.tpot_seconds, 0.5 * small.speed.tpot_seconds);
}

// cdna3_gemm_factor scales the matmul rate on CDNA 3 GPUs only: an MI300X decode step of a large
// batch (matmul-bound) slows by the factor, one of batch 1 (weight reads) barely moves, and an
// H100 estimate does not move at all.
TEST(ServeSpeedTest, Cdna3GemmFactorMovesOnlyCdna3Matmuls) {
  ServeCalibration slow = DefaultServeCalibration();
  slow.cdna3_gemm_factor = DefaultServeCalibration().cdna3_gemm_factor / 2;
  ServeRequest amd =
      Request("llama-3-70b", "MI300X", Precision::kFp8, KvPrecision::kFp16, 1024, 128, 128, 8);
  EXPECT_TRUE(UsesCdna3Matmuls(amd.gpu));
  const auto compute = [](const ServeRequest& r, const ServeCalibration& c) {
    Result<ServeEstimate> e = EstimateServing(r, c);
    EXPECT_TRUE(e.ok()) << e.status().ToString();
    return e.ok() ? e->speed.decode_compute_seconds : 0.0;
  };
  EXPECT_NEAR(compute(amd, slow), 2 * compute(amd, DefaultServeCalibration()),
              0.5 * compute(amd, DefaultServeCalibration()));
  ServeRequest nvidia = amd;
  nvidia.gpu = Gpu("H100-SXM");
  EXPECT_FALSE(UsesCdna3Matmuls(nvidia.gpu));
  Result<ServeEstimate> fitted = EstimateServing(nvidia, DefaultServeCalibration());
  Result<ServeEstimate> moved = EstimateServing(nvidia, slow);
  ASSERT_TRUE(fitted.ok() && moved.ok());
  EXPECT_EQ(fitted->speed.tpot_seconds, moved->speed.tpot_seconds);
  EXPECT_EQ(fitted->speed.prefill_seconds, moved->speed.prefill_seconds);
}

// HF generate dispatches each layer from eager Python: a pass takes at least layers x the host
// time per layer, so at batch 1 a GPU with more bandwidth does not decode faster (the
// bitsandbytes benchmark: Llama 3.1 8B bf16, 21.1 ms per token on an RTX 4090, 24.4 ms on an
// H100). An engine without the floor does; a batch whose GPU time exceeds the floor is GPU-bound.
TEST(ServeSpeedTest, HfDecodeAtBatchOneIsHostBoundNotBandwidthBound) {
  ServeCalibration c;
  c.engine(Engine::kHf).host_per_layer_seconds = 5e-4;
  ServeRequest r =
      Request("llama-3-8b", "H100-SXM", Precision::kBf16, KvPrecision::kBf16, 1, 64, 64);
  r.engine.engine = Engine::kHf;
  const Result<ServeEstimate> h100 = EstimateServing(r, c);
  r.gpu = Gpu("H200");
  const Result<ServeEstimate> h200 = EstimateServing(r, c);
  ASSERT_TRUE(h100.ok() && h200.ok());
  const double floor = 32 * 5e-4;  // 32 layers
  EXPECT_DOUBLE_EQ(h100->speed.tpot_seconds, floor);
  EXPECT_DOUBLE_EQ(h200->speed.tpot_seconds, h100->speed.tpot_seconds);
  // The same request on an engine without a host floor: H200's bandwidth decodes faster.
  r.engine.engine = Engine::kVllm;
  const Result<ServeEstimate> vllm_h200 = EstimateServing(r, c);
  r.gpu = Gpu("H100-SXM");
  const Result<ServeEstimate> vllm_h100 = EstimateServing(r, c);
  ASSERT_TRUE(vllm_h100.ok() && vllm_h200.ok());
  EXPECT_LT(vllm_h200->speed.tpot_seconds, 0.9 * vllm_h100->speed.tpot_seconds);
  EXPECT_LT(vllm_h100->speed.tpot_seconds, floor);
  // A large batch at a long context reads more KV cache than the floor's time: GPU-bound again.
  r.engine.engine = Engine::kHf;
  r.batch = 256;
  r.input_len = 2048;
  r.output_len = 2048;
  const Result<ServeEstimate> large = EstimateServing(r, c);
  ASSERT_TRUE(large.ok());
  EXPECT_GT(large->speed.tpot_seconds, 1.5 * floor);
}

// HF generate's DynamicCache appends each step with torch.cat, copying the layer's past (read and
// write) besides the attention's read; AutoAWQ's fused modules write into a preallocated cache.
// So a decode step's memory time grows with the context three times as fast unfused as fused.
TEST(ServeSpeedTest, HfDynamicCacheCopiesThePastEachDecodeStep) {
  ServeRequest r = Request("llama-2-7b", "A100-SXM4-80GB", Precision::kInt4WeightOnly,
                           KvPrecision::kFp16, 32, 256, 512);
  r.engine.engine = Engine::kHf;
  r.batching = Batching::kStatic;
  const auto slope = [&](bool fused) {
    r.hf_fused_modules = fused;
    const Result<StepModel> step = StepModel::Make(r);
    EXPECT_TRUE(step.ok()) << step.status().ToString();
    ServeSpeed shorter, longer;
    step->DecodeParts(32, 512, shorter);
    step->DecodeParts(32, 1024, longer);
    return longer.decode_memory_seconds - shorter.decode_memory_seconds;
  };
  const double fused = slope(true);
  EXPECT_GT(fused, 0);
  EXPECT_NEAR(slope(false) / fused, 3, 1e-9);
  // Other engines keep one read per step.
  r.engine.engine = Engine::kVllm;
  r.batching = Batching::kContinuous;
  const Result<StepModel> vllm = StepModel::Make(r);
  ASSERT_TRUE(vllm.ok()) << vllm.status().ToString();
  ServeSpeed shorter, longer;
  vllm->DecodeParts(32, 512, shorter);
  vllm->DecodeParts(32, 1024, longer);
  const ServeCalibration& c = DefaultServeCalibration();
  const double hf_bandwidth =
      std::min(1.0, c.decode_bandwidth_efficiency * c.engine(Engine::kHf).bandwidth_factor);
  const double vllm_bandwidth =
      std::min(1.0, c.decode_bandwidth_efficiency * c.engine(Engine::kVllm).bandwidth_factor);
  EXPECT_NEAR((longer.decode_memory_seconds - shorter.decode_memory_seconds) / fused,
              hf_bandwidth / vllm_bandwidth, 1e-9);
}

// transformers' AWQ docs measure Mistral-7B AWQ on one A100 both ways (26-32 ms a token unfused,
// 9.4-12.5 ms fused): the fused layers dispatch a share of the eager layer's operations, so the
// host-bound batch-1 step shrinks by that share, and only through it.
TEST(ServeSpeedTest, HfFusedModulesDecodeFasterThanUnfusedAtBatchOne) {
  ServeRequest r = Request("mistral-7b", "A100-SXM4-80GB", Precision::kInt4WeightOnly,
                           KvPrecision::kFp16, 1, 64, 64);
  r.engine.engine = Engine::kHf;
  r.batching = Batching::kStatic;
  const double unfused = Estimate(r).speed.tpot_seconds;
  r.hf_fused_modules = true;
  const double fused = Estimate(r).speed.tpot_seconds;
  EXPECT_LT(fused, 0.8 * unfused);
  // A share of 1 (as many operations as the eager layer) is the unfused step.
  ServeCalibration c = DefaultServeCalibration();
  c.hf_fused_dispatch_share = 1;
  const Result<ServeEstimate> same = EstimateServing(r, c);
  ASSERT_TRUE(same.ok()) << same.status().ToString();
  EXPECT_DOUBLE_EQ(same->speed.tpot_seconds, unfused);
  // Host-bound at batch 1 (hf's host floor, prior constants): the floor scales by the share.
  ServeCalibration prior;
  prior.engine(Engine::kHf).per_layer_overhead_seconds = 0;
  const Result<ServeEstimate> floor = EstimateServing(r, prior);
  ASSERT_TRUE(floor.ok()) << floor.status().ToString();
  const double layers = static_cast<double>(r.model.layers);
  EXPECT_GE(floor->speed.tpot_seconds, layers * prior.engine(Engine::kHf).host_per_layer_seconds *
                                           prior.hf_fused_dispatch_share);
}

// AutoAWQ's fused attention runs its eager PyTorch path for a pass of more than one token per
// sequence (awq/modules/fused/attn.py, `if seqlen > 1`): the prompt's pass dispatches as many
// operations as an unfused layer, so its host floor is the unfused one; decode steps keep the
// share.
TEST(ServeSpeedTest, HfFusedModulesPrefillDispatchesTheEagerLayer) {
  ServeRequest r = Request("mistral-7b", "A100-SXM4-80GB", Precision::kInt4WeightOnly,
                           KvPrecision::kFp16, 1, 64, 64);
  r.engine.engine = Engine::kHf;
  r.batching = Batching::kStatic;
  ServeCalibration c;                                   // priors
  c.engine(Engine::kHf).host_per_layer_seconds = 2e-3;  // host-bound prompt of 64 tokens
  c.hf_fused_dispatch_share = 0.25;
  const Result<ServeEstimate> unfused = EstimateServing(r, c);
  ASSERT_TRUE(unfused.ok()) << unfused.status().ToString();
  r.hf_fused_modules = true;
  const Result<ServeEstimate> fused = EstimateServing(r, c);
  ASSERT_TRUE(fused.ok()) << fused.status().ToString();
  const double layers = static_cast<double>(r.model.layers);
  EXPECT_DOUBLE_EQ(fused->speed.prefill_seconds, unfused->speed.prefill_seconds);
  EXPECT_GE(fused->speed.prefill_seconds, layers * 2e-3);
  EXPECT_LT(fused->speed.tpot_seconds, 0.5 * unfused->speed.tpot_seconds);
}

TEST(ServeSpeedTest, HfFusedModulesAreRefusedWhereTheyDoNotApply) {
  ServeRequest r = Request("mistral-7b", "A100-SXM4-80GB", Precision::kInt4WeightOnly,
                           KvPrecision::kFp16, 1, 64, 64);
  r.hf_fused_modules = true;
  r.engine.engine = Engine::kVllm;
  r.batching = Batching::kContinuous;
  Result<ServeEstimate> vllm = EstimateServing(r);
  ASSERT_FALSE(vllm.ok());
  EXPECT_EQ(vllm.status().code(), StatusCode::kInvalidInput);
  EXPECT_NE(vllm.status().ToString().find("hf-fused-modules"), std::string::npos);
  EXPECT_NE(vllm.status().ToString().find("engine hf"), std::string::npos);
  r.engine.engine = Engine::kHf;
  r.batching = Batching::kStatic;
  r.precision = Precision::kBnbNf4;
  Result<ServeEstimate> bnb = EstimateServing(r);
  ASSERT_FALSE(bnb.ok());
  EXPECT_NE(bnb.status().ToString().find("int4-weight-only"), std::string::npos);
  EXPECT_NE(bnb.status().ToString().find("bnb-nf4"), std::string::npos);
  r.precision = Precision::kInt4WeightOnly;
  EXPECT_TRUE(EstimateServing(r).ok());
}

TEST(ServeSpeedTest, TensorParallelismAddsAllReducesAndCutsTheStep) {
  ServeRequest r =
      Request("llama-2-70b", "H100-SXM", Precision::kBf16, KvPrecision::kBf16, 16, 512, 128, 2);
  const ServeEstimate two = Estimate(r);
  r.tp = 8;
  const ServeEstimate eight = Estimate(r);
  EXPECT_GT(two.speed.decode_comm_seconds, 0);
  EXPECT_GT(eight.speed.decode_comm_seconds, two.speed.decode_comm_seconds);
  EXPECT_LT(eight.speed.tpot_seconds, two.speed.tpot_seconds);
  r.tp = 3;  // does not divide 64 heads
  EXPECT_FALSE(EstimateServing(r).ok());
}

// An engine with its own all-reduce (vLLM's CustomAllreduce) pays two link latencies per
// all-reduce instead of the ring's 2 (n-1) on a fully connected node: at tp 8 the decode step's
// communication drops by 2 per-layer all-reduces x (14 - 2) latencies; a prefill pass whose
// activations exceed the kernel's 8 MiB buffer still goes through the ring; a PCIe node keeps it.
TEST(ServeSpeedTest, CustomAllReduceCutsTheLatencyOfSmallAllReducesOnANvlinkNode) {
  ServeRequest r =
      Request("llama-2-70b", "H100-SXM", Precision::kBf16, KvPrecision::kBf16, 8, 32, 128, 8);
  const ServeEstimate ring = Estimate(r);
  Result<StepModel> ring_step = StepModel::Make(r);
  r.engine.custom_allreduce = true;
  const ServeEstimate custom = Estimate(r);
  Result<StepModel> custom_step = StepModel::Make(r);
  ASSERT_TRUE(ring_step.ok() && custom_step.ok());
  const double latency = estimate::DefaultTimeCalibration().intra_node_latency_seconds;
  const double layers = 80;
  EXPECT_NEAR(ring.speed.decode_comm_seconds - custom.speed.decode_comm_seconds,
              layers * 2 * (2 * 7 - 2) * latency, 1e-12);
  EXPECT_LT(custom.speed.tpot_seconds, ring.speed.tpot_seconds);
  // 8192 prompt tokens x 8192 hidden x 2 bytes = 128 MiB per all-reduce: the ring in both.
  EXPECT_NEAR(custom_step->Seconds(0, 0, 8192, 8192), ring_step->Seconds(0, 0, 8192, 8192), 1e-12);
  // A PCIe pair of L40S has no NVLink mesh: the ring.
  ServeRequest pcie =
      Request("llama-3-8b", "L40S", Precision::kBf16, KvPrecision::kBf16, 8, 32, 128, 2);
  const double pcie_ring = Estimate(pcie).speed.decode_comm_seconds;
  pcie.engine.custom_allreduce = true;
  EXPECT_DOUBLE_EQ(Estimate(pcie).speed.decode_comm_seconds, pcie_ring);
}

// Published TensorRT-LLM measurements (static batching, gptSessionBenchmark; the tables' figure is
// output tokens per second per GPU over the whole run): NVIDIA/TensorRT-LLM
// docs/source/performance.md@138f96d45f90b9667426f7c47297d8c06bafac73 (v0.6.1 "Peak Throughput",
// H100 FP8 with --fp8_kv_cache). These rows are part of data/calibration/serving.csv; the
// left-out errors are in docs/ACCURACY.md. Here: the model's structure, not the fit.
double PerGpuThroughput(const ServeRequest& r) {
  return Estimate(r).speed.output_tokens_per_second / static_cast<double>(r.tp);
}

// Llama-2-70B (64 heads, 8 KV heads) at 480 x 128/2048, TP4: 1,486 tokens/s/GPU with v0.6.1,
// whose generation kernel reads each KV head once per query head (the page's commands enable no
// XQA). Reading the KV cache once per group predicted ~2.1x too fast; the kernel is an input.
TEST(ServeSpeedTest, PerQueryHeadDecodeAttentionExplainsTensorRtLlm061On70b) {
  ServeRequest r =
      Request("llama-2-70b", "H100-SXM", Precision::kFp8, KvPrecision::kFp8, 480, 128, 2048, 4);
  r.decode_attention = DecodeAttention::kPerQueryHead;
  EXPECT_NEAR(PerGpuThroughput(r), 1486, 1486 * 0.3);
  r.decode_attention = DecodeAttention::kGrouped;
  EXPECT_GT(PerGpuThroughput(r), 1.5 * 1486);
  // The same configuration measured with v0.9.0 and XQA (2,725 tokens/s/GPU at batch 512,
  // NVIDIA/TensorRT-LLM@v0.9.0 docs/source/performance.md) is the grouped kernel's.
  r.batch = 512;
  EXPECT_NEAR(PerGpuThroughput(r), 2725, 2725 * 0.3);
}

// A multi-head model (Llama-2-7B: kv_heads = heads) reads the same KV bytes with either kernel.
TEST(ServeSpeedTest, DecodeAttentionKernelDoesNotMatterWithoutGqa) {
  ServeRequest r =
      Request("llama-2-7b", "H100-SXM", Precision::kFp8, KvPrecision::kFp8, 48, 2048, 2048);
  const double grouped = PerGpuThroughput(r);
  r.decode_attention = DecodeAttention::kPerQueryHead;
  EXPECT_DOUBLE_EQ(PerGpuThroughput(r), grouped);
  EXPECT_NEAR(grouped, 2740, 2740 * 0.25);  // v0.6.1 table, batch 48, 2048/2048
}

// Attention FLOPs per query token and context token, from the config fields. Standard attention
// (GQA too): QK^T and PV over hidden each, 4 x layers x hidden. Multi-head latent attention
// (vLLM's MLA backend): prompt tokens attend with K and V expanded per head (query/key heads of
// qk_nope + qk_rope, value heads of v_head); a decode token attends with W_UK and W_UV absorbed,
// as MQA over the cached latent (query/key width kv_lora_rank + qk_rope a head, value width
// kv_lora_rank). For DeepSeek-V3 the absorbed decode costs ~10x what 4 x hidden would charge.
TEST(ServeSpeedTest, MlaAttentionFlopsFollowTheExpandedPrefillAndTheAbsorbedDecode) {
  const workload::Model llama = Preset("llama-3-70b");
  const double standard = 4.0 * llama.layers * llama.hidden;
  EXPECT_EQ(AttentionFlopsPerContextToken(llama, MlaPath::kExpanded), standard);
  EXPECT_EQ(AttentionFlopsPerContextToken(llama, MlaPath::kAbsorbed), standard);

  for (const std::string name : {"deepseek-v3", "deepseek-v2-lite"}) {
    SCOPED_TRACE(name);
    const workload::Model m = Preset(name);
    ASSERT_TRUE(workload::IsMla(m));
    const double layers = static_cast<double>(m.layers);
    const double heads = static_cast<double>(m.heads);
    const double expanded_qk = static_cast<double>(m.qk_nope_head_dim + m.qk_rope_head_dim);
    const double expanded_v = static_cast<double>(m.v_head_dim);
    EXPECT_EQ(AttentionFlopsPerContextToken(m, MlaPath::kExpanded),
              2 * layers * heads * (expanded_qk + expanded_v));
    const double absorbed_qk = static_cast<double>(m.kv_lora_rank + m.qk_rope_head_dim);
    const double absorbed_v = static_cast<double>(m.kv_lora_rank);
    EXPECT_EQ(AttentionFlopsPerContextToken(m, MlaPath::kAbsorbed),
              2 * layers * heads * (absorbed_qk + absorbed_v));
  }
  const workload::Model v3 = Preset("deepseek-v3");
  EXPECT_GT(AttentionFlopsPerContextToken(v3, MlaPath::kAbsorbed), 9 * 4.0 * v3.layers * v3.hidden);
}

// The step model charges those FLOPs: on one GPU, tp and engine (the same attention rate), the
// growth of a decode step's compute time with the context, and of a long prefill's time with
// the prompt's context, compare between DeepSeek-V3 and Llama-3-70B as their FLOPs per context
// token do.
TEST(ServeSpeedTest, StepModelTimesMlaAttentionWithItsOwnWidths) {
  const auto request = [](const std::string& model) {
    return Request(model, "H200", Precision::kFp8, KvPrecision::kFp8, 1, 1024, 128, 8);
  };
  Result<StepModel> mla = StepModel::Make(request("deepseek-v3"));
  Result<StepModel> standard = StepModel::Make(request("llama-3-70b"));
  ASSERT_TRUE(mla.ok()) << mla.status().ToString();
  ASSERT_TRUE(standard.ok()) << standard.status().ToString();
  const workload::Model v3 = Preset("deepseek-v3");
  const workload::Model llama = Preset("llama-3-70b");

  const auto decode_slope = [](const StepModel& step) {
    ServeSpeed shorter, longer;
    step.DecodeParts(64, 4096, shorter);
    step.DecodeParts(64, 32768, longer);
    return longer.decode_compute_seconds - shorter.decode_compute_seconds;
  };
  EXPECT_NEAR(decode_slope(*mla) / decode_slope(*standard),
              AttentionFlopsPerContextToken(v3, MlaPath::kAbsorbed) /
                  AttentionFlopsPerContextToken(llama, MlaPath::kAbsorbed),
              1e-9);
  // 8192 prompt tokens: matmul-bound for both models (the weights' read is shorter).
  const auto prefill_slope = [](const StepModel& step) {
    return step.Seconds(0, 0, 8192, 16384) - step.Seconds(0, 0, 8192, 8192);
  };
  EXPECT_NEAR(prefill_slope(*mla) / prefill_slope(*standard),
              AttentionFlopsPerContextToken(v3, MlaPath::kExpanded) /
                  AttentionFlopsPerContextToken(llama, MlaPath::kExpanded),
              1e-9);
}

// transformers (engine hf) runs MLA unabsorbed: it caches K and V expanded per head and decodes
// as multi-head attention of the prefill's widths; the other engines cache the latent.
TEST(ServeSpeedTest, HfCachesMlaKeysAndValuesExpandedAndDecodesUnabsorbed) {
  const workload::Model m = Preset("deepseek-v2-lite");
  const double expanded_kv_width =
      static_cast<double>(m.heads * (m.qk_nope_head_dim + m.qk_rope_head_dim + m.v_head_dim));
  EXPECT_EQ(KvCacheBytesPerToken(m, KvPrecision::kBf16, MlaPath::kExpanded),
            static_cast<double>(m.layers) * expanded_kv_width * 2);
  EXPECT_EQ(DecodeMlaPath(Engine::kHf), MlaPath::kExpanded);
  for (const Engine e : {Engine::kVllm, Engine::kSglang, Engine::kTrtllm, Engine::kLlamaCpp}) {
    EXPECT_EQ(DecodeMlaPath(e), MlaPath::kAbsorbed);
  }

  ServeRequest r =
      Request("deepseek-v2-lite", "H100-SXM", Precision::kBf16, KvPrecision::kBf16, 4, 1024, 128);
  r.engine.engine = Engine::kHf;
  EXPECT_EQ(Estimate(r).memory.kv_cache_bytes_per_token,
            KvCacheBytesPerToken(m, KvPrecision::kBf16, MlaPath::kExpanded));
  Result<StepModel> hf = StepModel::Make(r);
  r.engine.engine = Engine::kVllm;
  r.batching = Batching::kContinuous;
  EXPECT_EQ(Estimate(r).memory.kv_cache_bytes_per_token,
            KvCacheBytesPerToken(m, KvPrecision::kBf16, MlaPath::kAbsorbed));
  Result<StepModel> vllm = StepModel::Make(r);
  ASSERT_TRUE(hf.ok()) << hf.status().ToString();
  ASSERT_TRUE(vllm.ok()) << vllm.status().ToString();
  // A decode step's KV read and attention compute grow with the context as the path's bytes and
  // FLOPs per cached token do, at each engine's fitted rates.
  const auto slopes = [](const StepModel& step) {
    ServeSpeed shorter, longer;
    step.DecodeParts(1, 8192, shorter);
    step.DecodeParts(1, 16384, longer);
    return std::pair(longer.decode_compute_seconds - shorter.decode_compute_seconds,
                     longer.decode_memory_seconds - shorter.decode_memory_seconds);
  };
  const ServeCalibration& c = DefaultServeCalibration();
  const auto bandwidth = [&](Engine e) {
    return std::min(1.0, c.decode_bandwidth_efficiency * c.engine(e).bandwidth_factor);
  };
  const auto attention = [&](Engine e) {
    return std::min(1.0, c.attention_efficiency * c.engine(e).gemm_factor);
  };
  const auto [hf_compute, hf_memory] = slopes(*hf);
  const auto [vllm_compute, vllm_memory] = slopes(*vllm);
  // hf moves its cache three times a step: the attention's read, and DynamicCache's torch.cat
  // reading and writing the past again.
  EXPECT_NEAR(hf_memory / vllm_memory,
              3 * KvCacheBytesPerToken(m, KvPrecision::kBf16, MlaPath::kExpanded) /
                  KvCacheBytesPerToken(m, KvPrecision::kBf16, MlaPath::kAbsorbed) *
                  bandwidth(Engine::kVllm) / bandwidth(Engine::kHf),
              1e-9);
  EXPECT_NEAR(hf_compute / vllm_compute,
              AttentionFlopsPerContextToken(m, MlaPath::kExpanded) /
                  AttentionFlopsPerContextToken(m, MlaPath::kAbsorbed) * attention(Engine::kVllm) /
                  attention(Engine::kHf),
              1e-9);
}

TEST(ServeSpeedTest, MatchesPublishedTensorRtLlmFirstTokenLatencyWithin25Percent) {
  // Batch 1, 2048 input tokens: H100 FP8 36 ms, A100 FP16 133 ms (v0.6.1 page, "Low Latency").
  const ServeEstimate h100 =
      Estimate(Request("llama-2-7b", "H100-SXM", Precision::kFp8, KvPrecision::kFp8, 1, 2048, 1));
  const ServeEstimate a100 = Estimate(
      Request("llama-2-7b", "A100-80GB", Precision::kFp16, KvPrecision::kFp16, 1, 2048, 1));
  EXPECT_NEAR(h100.speed.prefill_seconds, 0.036, 0.036 * 0.25);
  EXPECT_NEAR(a100.speed.prefill_seconds, 0.133, 0.133 * 0.25);
}

// Issue 26: at --batch 64 the first token waited for the whole batch's prefill (4.56 s against
// 0.077 s at batch 1). Under continuous batching the new request's prompt runs beside the 63
// running decodes: its TTFT is its own prefill plus their decode share, and the step it leaves
// them with carries the batch's prompts interleaved.
TEST(ServeSpeedTest, ContinuousBatchingTtftIsTheRequestsOwnChunkedPrefill) {
  ServeRequest r =
      Request("llama-3-70b", "H100-SXM", Precision::kFp8, KvPrecision::kFp8, 64, 1024, 512, 2);
  const ServeEstimate static_batch = Estimate(r);
  r.batching = Batching::kContinuous;
  const ServeEstimate continuous = Estimate(r);
  r.batch = 1;
  const ServeEstimate alone = Estimate(r);
  EXPECT_GT(static_batch.speed.prefill_seconds, 2.0);
  EXPECT_LT(continuous.speed.prefill_seconds, static_batch.speed.prefill_seconds / 20);
  EXPECT_GT(continuous.speed.prefill_seconds, alone.speed.prefill_seconds);
  // The same 64 decodes, plus 64 x 1024 / 512 prompt tokens a step.
  EXPECT_GT(continuous.speed.tpot_seconds, static_batch.speed.tpot_seconds);
  EXPECT_NEAR(continuous.speed.output_tokens_per_second, 64 / continuous.speed.tpot_seconds, 1e-6);
}

// A prompt longer than the step's token budget takes one step per chunk, each also decoding the
// running sequences: a smaller --prefill-chunk makes the first token later.
TEST(ServeSpeedTest, PrefillChunkSplitsTheLongPromptIntoSteps) {
  ServeRequest r =
      Request("llama-3-8b", "H100-SXM", Precision::kBf16, KvPrecision::kBf16, 32, 8000, 256);
  r.batching = Batching::kContinuous;
  r.max_batched_tokens = 8192;
  const double one_step = Estimate(r).speed.prefill_seconds;
  r.max_batched_tokens = 512 + 31;  // 512 prompt tokens beside the 31 decodes: 16 steps
  const double sixteen_steps = Estimate(r).speed.prefill_seconds;
  Result<StepModel> step = StepModel::Make(r);
  ASSERT_TRUE(step.ok());
  const double context = 8000 + 128;
  EXPECT_NEAR(sixteen_steps,
              15 * step->Seconds(31, context, 512, 8000) + step->Seconds(31, context, 320, 8000),
              1e-9);
  EXPECT_GT(sixteen_steps, one_step);
}

TEST(ServeSpeedTest, BatchingNames) {
  EXPECT_EQ(*ParseBatching("static"), Batching::kStatic);
  EXPECT_EQ(*ParseBatching("continuous"), Batching::kContinuous);
  Result<Batching> bad = ParseBatching("continous");
  ASSERT_FALSE(bad.ok());
  ASSERT_NE(bad.status().detail(), nullptr);
  EXPECT_EQ(bad.status().detail()->nearest.front(), "continuous");
}

}  // namespace
}  // namespace fulcrum::serve
