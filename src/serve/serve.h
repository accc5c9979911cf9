// Inference sizing for one configuration (model x GPU x tensor parallelism x batch): memory
// (weights per precision, KV cache per token GQA/MQA-aware with sliding windows, activation
// workspace, vLLM's framework reserve), the maximum concurrent sequences that fit, and speed
// (prefill compute-bound, decode bandwidth-bound turning compute-bound at large batch, tensor-
// parallel all-reduce per layer). Pure functions on value types, thread-safe. Bytes, seconds,
// tokens per second in the names; "total" figures are the whole model's, "per_gpu" one GPU's.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "catalog/catalog.h"
#include "core/status.h"
#include "estimate/compute.h"
#include "workload/model.h"

namespace fulcrum::serve {

// Weight (and matmul) number format. kInt8 = W8A8 on INT8 tensor cores (SmoothQuant); the
// weight-only formats (AWQ/GPTQ) dequantise to 16-bit and run 16-bit matmuls; kFp4 = FP4 tensor
// cores (NVFP4).
// bitsandbytes (HF transformers): kBnbInt8 = LLM.int8() (int8 weights, int8 matmul with the
// outlier feature columns decomposed into a 16-bit matmul); kBnbNf4/kBnbFp4 = 4-bit weights
// dequantised to 16-bit before each matmul of more than one token (a dequantisation pass).
// llama.cpp GGUF types (whole-model bits per weight, k-quant mixes included): kGgufF16 "f16",
// kGgufQ8_0 "q8_0", kGgufQ5KM "q5_k_m", kGgufQ4KM "q4_k_m", kGgufQ4_0 "q4_0".
enum class Precision {
  kBf16,
  kFp16,
  kFp8,
  kFp4,
  kInt8,
  kInt8WeightOnly,
  kInt4WeightOnly,
  kBnbInt8,
  kBnbNf4,
  kBnbFp4,
  kGgufF16,
  kGgufQ8_0,
  kGgufQ5KM,
  kGgufQ4KM,
  kGgufQ4_0,
};
// KV-cache element format (vLLM --kv-cache-dtype: auto = the 16-bit model dtype, fp8).
enum class KvPrecision { kBf16, kFp16, kFp8 };
// How the decode attention kernel reads the KV cache of a grouped-query (GQA/MQA) model.
// kGrouped: each KV head is read once per step for its whole group of query heads (FlashAttention
// and FlashInfer decode, TensorRT-LLM's XQA kernel, the default of TensorRT-LLM >= 0.8 and vLLM).
// kPerQueryHead: every query head reads its KV head again (TensorRT-LLM's masked multi-head
// attention kernel before XQA, releases <= 0.6); the KV traffic is heads / kv_heads times larger.
// The same for a model without GQA.
enum class DecodeAttention { kGrouped, kPerQueryHead };
// How the engine schedules sequences.
// kContinuous: iteration-level scheduling (Orca, OSDI 2022; vLLM, SGLang, TensorRT-LLM's
//   in-flight batching): every forward pass decodes one token of each running sequence and
//   fills the rest of its token budget (max_batched_tokens) with chunks of waiting prompts, so a
//   new request's prefill runs beside the others' decodes and a finished sequence frees its
//   slot at once.
// kStatic: a batch of equal requests starts together and ends together (TensorRT-LLM's
//   gptSessionBenchmark, HF `generate` on a padded batch): the first token of each waits for the
//   whole batch's prefill.
enum class Batching { kContinuous, kStatic };

// The serving engine: its scheduler, default token budget and what it can run are data
// (catalog/serving_engines.csv, serve/engine.h); its kernels' efficiency is fitted
// (ServeCalibration::engines).
enum class Engine { kVllm, kSglang, kTrtllm, kHf, kLlamaCpp };
inline constexpr size_t kEngineCount = 5;

// One row of catalog/serving_engines.csv. A default-constructed profile is vLLM with nothing
// checked (empty lists): what unit tests and callers without the table get.
struct EngineProfile {
  Engine engine = Engine::kVllm;
  std::string scheduler;              // e.g. "continuous batching with chunked prefill"
  std::vector<Batching> batching;     // the modes it runs; the first is its default
  int64_t prefill_chunk = 0;          // default token budget per step; 0 = whole prompts
  std::vector<Precision> precisions;  // what it can run; empty = not checked
  std::vector<std::string> vendors;   // GPU vendors it runs on (catalog/gpus.csv); empty = any
  // Its tensor-parallel all-reduce: true = the engine's own kernel over a fully connected node
  // (NVLink / Infinity Fabric), whose peers read each other's buffers directly (vLLM's
  // CustomAllreduce; column tp_allreduce `custom`); false = NCCL's ring (`ring`, the default).
  bool custom_allreduce = false;
  // Whether it splits a layer's matmuls over GPUs (column tensor_parallel, default yes). hf's
  // device_map and llama.cpp's default layer split place whole layers on the GPUs, which run one
  // after another: such an engine serves --tp 1, one replica per GPU.
  bool tensor_parallel = true;
  std::string source;
};

// A serving engine's kernels relative to the reference engine (TensorRT-LLM, whose published
// tables fit the base constants): factors on the bandwidth and matmul/attention efficiencies
// (each product capped at 1), and its extra time per layer of each forward pass (Python,
// kernel launches and gaps), added to the pass; and the host time per layer of an engine that
// launches each layer's kernels from eager Python: a pass takes at least layers x that time
// (the GPU waits on the host when its kernels are shorter than their dispatch), whatever the GPU.
struct EngineEfficiency {
  double bandwidth_factor = 1;
  double gemm_factor = 1;
  double per_layer_overhead_seconds = 0;
  double host_per_layer_seconds = 0;
};
// The serving time model's constants, fitted on published serving benchmarks by
// fulcrum-calibrate (tools/serving_calibration.cc) into serving_calibration_fitted.cc; the
// member initialisers are the priors. Efficiencies are fractions of datasheet peaks.
struct ServeCalibration {
  // Prefill matmuls: fraction of the precision's dense tensor peak (16-bit formats).
  double prefill_gemm_efficiency = 0.6;
  // Decode matmuls at large batch (compute-bound steps): fraction of the tensor peak.
  double decode_gemm_efficiency = 0.5;
  // fp8/int8/fp4 matmuls reach this fraction of what 16-bit ones reach of their (higher) peak.
  double low_bit_gemm_relative_efficiency = 0.7;
  // Prefill (flash) attention: fraction of the 16-bit dense peak.
  double attention_efficiency = 0.3;
  // Decode: fraction of the datasheet memory bandwidth reached reading weights and KV cache.
  double decode_bandwidth_efficiency = 0.8;
  // Kernel launches, norms, rotary, sampling: fixed time per layer of each forward pass.
  double per_layer_overhead_seconds = 5e-6;
  // Per engine (indexed by Engine), the reference TensorRT-LLM's entry stays 1, 1, 0; an engine
  // with rows from fewer than two sources keeps its prior (fitting it would leave nothing to
  // score it on). Priors: no slower than the reference. HF generate: its extra GPU-side time
  // per layer keeps the earlier assumption of 0.2 ms; it dispatches each layer's ~50 elementary
  // operations from eager Python ("a typical transformer block with ~50 elementary
  // operations", https://mlhero.books.neutronlabs.ai/ch21-runtimes/01-pytorch-dispatch/) at
  // ~5-25 us of CPU-side work each (dispatch-chain table of
  // https://jiahuanglin.xyz/all_lessons/gpu_kernel_serving/18_pytorch_to_kernel.html):
  // 50 x 10 us = 0.5 ms of host time per layer, the floor of its pass. The fit replaces both.
  std::array<EngineEfficiency, kEngineCount> engines = {
      EngineEfficiency{}, EngineEfficiency{}, EngineEfficiency{},
      EngineEfficiency{1, 1, 2e-4, 5e-4}, EngineEfficiency{}};
  EngineEfficiency& engine(Engine e) { return engines[static_cast<size_t>(e)]; }
  const EngineEfficiency& engine(Engine e) const { return engines[static_cast<size_t>(e)]; }
  // bitsandbytes' extra time per layer of each forward pass (activation quantisation, outlier
  // extraction, 4-bit dequantisation kernels), seconds. Priors, replaced by the fit.
  double bnb_4bit_per_layer_seconds = 1e-4;
  double bnb_int8_per_layer_seconds = 3e-4;
  // AWQ fused modules on the hf engine (ServeRequest::hf_fused_modules): the share of an eager
  // decoder layer's dispatched operations a fused layer launches in a decode pass, applied to
  // hf's host time and extra GPU-side time per layer (both scale with the operations launched); a
  // pass with prompt tokens runs the fused attention's eager path (StepModel::Seconds). Prior: a
  // fused Llama-like decode layer launches 12 kernels (casper-hansen/AutoAWQ@0392a823
  // awq/modules/fused attn.py QuantAttentionFused.forward: qkv GEMM, ft single_query_attention with
  // rotary and the cache write, o_proj; block.py: two FasterTransformerRMSNorm, two residual adds;
  // mlp.py QuantFusedMLP: gate, up, activation, multiply, down) against the ~50 elementary
  // operations of an eager layer (the host-time prior above): 12 / 50. Replaced by the fit.
  double hf_fused_dispatch_share = 0.24;
  // Matmuls on AMD CDNA 3 GPUs (UsesCdna3Matmuls): a factor on the prefill and decode matmul
  // shares above, which NVIDIA rows fit. The rows of CDNA 3 GPUs fit it alone, last, with every
  // other constant held, so they move no other GPU's prediction. Prior 1 (no architecture
  // difference): no published matmul rate of ROCm serving kernels at decode shapes was found.
  double cdna3_gemm_factor = 1;
};

// The fitted constants (serving_calibration_fitted.cc, generated by fulcrum-calibrate).
const ServeCalibration& DefaultServeCalibration();

// The error band of the serving estimate: quantiles of measured / predicted time over the
// calibration rows, each scored with its source family left out of the fit. TTFT from the
// first-token rows; TPOT from the throughput rows (output time per token of the batch). A P90
// target is met when estimate x p90 ratio <= target (the P50 likewise).
struct ServeLatencyBand {
  double ttft_p50_ratio = 1, ttft_p90_ratio = 1;
  double tpot_p50_ratio = 1, tpot_p90_ratio = 1;
};
const ServeLatencyBand& DefaultServeLatencyBand();

// "bf16 fp16 fp8 fp4 int8 int8-weight-only int4-weight-only bnb-int8 bnb-nf4 bnb-fp4 f16 q8_0
// q5_k_m q4_k_m q4_0"; InvalidInput naming the nearest.
Result<Precision> ParsePrecision(std::string_view text);
Result<KvPrecision> ParseKvPrecision(std::string_view text);
std::string_view PrecisionName(Precision precision);
// "continuous" | "static"; InvalidInput naming the nearest.
Result<Batching> ParseBatching(std::string_view text);
std::string_view BatchingName(Batching batching);
// "vllm" | "sglang" | "trtllm" | "hf" | "llama.cpp"; InvalidInput (field "engine") naming the
// nearest.
Result<Engine> ParseEngine(std::string_view text);
std::string_view EngineName(Engine engine);
std::vector<std::string> EngineNames();
// The precisions of the list above that `gpu` has tensor-core support for (from the catalog).
std::vector<Precision> SupportedPrecisions(const catalog::Gpu& gpu);
// Ok, or InvalidInput (field "precision", nearest = what the engine runs): the engine cannot run
// `precision` on any GPU (catalog/serving_engines.csv), e.g. llama.cpp fp8.
Status CheckEnginePrecision(const EngineProfile& engine, Precision precision);
// Ok, or InvalidInput: the engine does not run on the GPU's vendor (detail field "engine") or
// cannot run the precision ("precision", nearest = what it can run); "GPU X has no <precision>
// tensor cores; it supports: ..." (detail field "precision"/"kv-precision", nearest = the
// supported names).
Status CheckSupport(const catalog::Gpu& gpu, Precision precision, KvPrecision kv,
                    const EngineProfile& engine = EngineProfile{});
// Ok, or InvalidInput (field "tp", expected 1): tp > 1 on an engine without tensor parallelism.
Status CheckTensorParallel(const EngineProfile& engine, int64_t tp);
// Ok, or InvalidInput (field "batching") naming the modes the engine runs.
Status CheckBatching(const EngineProfile& engine, Batching batching);

struct ServeRequest {
  workload::Model model;
  catalog::Gpu gpu;
  catalog::Interconnect interconnect = catalog::Interconnect::kNvlink;
  int64_t tp = 1;
  // Concurrent sequences. kStatic: the batch that starts together. kContinuous: one new request
  // joining batch - 1 running decodes (no queue): TTFT is its chunked prefill, TPOT the steady
  // step with the prompts of the batch interleaved.
  int64_t batch = 1;
  Batching batching = Batching::kContinuous;
  int64_t input_len = 512;
  int64_t output_len = 128;
  Precision precision = Precision::kBf16;
  KvPrecision kv_precision = KvPrecision::kBf16;
  DecodeAttention decode_attention = DecodeAttention::kGrouped;
  // What runs it (serve/engine.h loads the profiles): checked against the GPU, precision and
  // batching, and it picks the engine's fitted factors of ServeCalibration::engines.
  EngineProfile engine;
  // Tokens of the engine's largest forward pass, whose activations it reserves at start-up, and
  // under continuous batching the token budget of each step that decodes and prefill chunks
  // share (--prefill-chunk; vLLM max_num_batched_tokens: 8192 is the order of its defaults with
  // chunked prefill, 2048-16384 by version and GPU; without chunked prefill vLLM 0.x used
  // max_model_len).
  int64_t max_batched_tokens = 8192;
  // hf only, int4-weight-only (AWQ) only: the decoder layers run AutoAWQ's fused modules
  // (transformers AwqConfig(do_fuse=True), AutoAWQ from_quantized(fuse_layers=True)): one fused
  // qkv matmul, a single-query attention kernel, fused norms, so far fewer operations dispatched
  // per layer of a decode step (ServeCalibration::hf_fused_dispatch_share; the prompt's pass runs
  // the eager attention path). CheckFusedModules says where it applies.
  bool hf_fused_modules = false;
};

struct ServeMemory {
  double weights_bytes = 0;              // whole model
  double kv_cache_bytes_per_token = 0;   // whole model, one token of one sequence
  double kv_cache_bytes = 0;             // whole model, batch x (input + output) tokens (windowed)
  double activation_bytes_per_gpu = 0;   // forward workspace of the largest prefill chunk
  double overhead_bytes_per_gpu = 0;     // CUDA context, CUDA graphs, NCCL buffers
  double peak_bytes_per_gpu = 0;         // weights + KV + activations + overhead, one GPU
  double budget_bytes_per_gpu = 0;       // gpu_memory_utilization x capacity
  int64_t kv_cache_capacity_tokens = 0;  // tokens the budget holds beyond weights/activations
  int64_t max_concurrency = 0;           // sequences of input+output tokens that fit in the budget
  bool fits = false;                     // peak <= budget
};

struct ServeSpeed {
  // Time to first token: kStatic, the whole batch's prompts (the last sequence's first token);
  // kContinuous, one request's prompt in chunks beside batch - 1 decodes.
  double prefill_seconds = 0;
  // One decode step at the mean context: per output token (kContinuous: with the batch's
  // prompts interleaved, batch x input / output prompt tokens per step on average).
  double tpot_seconds = 0;
  // One decode step's parts: reading weights + KV cache at the fitted bandwidth; matmul and
  // attention FLOPs at the fitted efficiencies; tensor-parallel all-reduces. The step is
  // max(weight read, matmuls) + KV read + all-reduces + per-layer overhead (the matmul and the
  // attention kernels run one after the other), and at least the engine's host time per pass
  // (EngineEfficiency::host_per_layer_seconds x layers).
  double decode_memory_seconds = 0, decode_compute_seconds = 0, decode_comm_seconds = 0;
  // kStatic: batch x output over prefill + decode wall time; kContinuous: batch / tpot (steady).
  double output_tokens_per_second = 0;
  // kStatic: batch x input over prefill time; kContinuous: the prompt tokens interleaved per
  // second at steady state.
  double prefill_tokens_per_second = 0;
};

struct ServeEstimate {
  ServeMemory memory;
  ServeSpeed speed;
};

// Validated request (tp divides the heads, positive lengths, supported precision) -> estimate.
Result<ServeEstimate> EstimateServing(
    const ServeRequest& request, const ServeCalibration& calibration = DefaultServeCalibration());

// The time of one forward pass of a validated request's layout (model x GPU x tp x precisions),
// for the queueing model and the simulation of serve-plan: `decode_seqs` sequences each decoding
// one token at `decode_context` cached tokens, plus `prefill_tokens` prompt tokens each
// attending to `prefill_context` tokens. Step(n, c, 0, 0) is the decode step of n sequences,
// Step(0, 0, b x s, s) the static prefill of b prompts of s tokens. Immutable, thread-safe.
class StepModel {
 public:
  // The request's batch and lengths are not used; its validation errors are EstimateServing's.
  static Result<StepModel> Make(const ServeRequest& request,
                                const ServeCalibration& calibration = DefaultServeCalibration());
  double Seconds(double decode_seqs, double decode_context, double prefill_tokens,
                 double prefill_context) const;
  // `tokens` prompt tokens in chunks of `budget` tokens, each chunk a step beside
  // `decode_seqs` decodes: the first-token time of a prompt under continuous batching.
  double ChunkedPrefillSeconds(double decode_seqs, double decode_context, double tokens,
                               double budget, double prefill_context) const;
  // The parts of a pure decode step (ServeSpeed's decode_* fields) of `decode_seqs` sequences.
  void DecodeParts(double decode_seqs, double decode_context, ServeSpeed& speed) const;
  // Every figure but the model equal: the same times for every call on the same model.
  bool SameFiguresAs(const StepModel& other) const;

 private:
  StepModel() = default;
  workload::Model model_;
  int ranks_ = 1;
  double tp_ = 1, hidden_ = 0, layers_ = 0, kv_per_token_per_gpu_ = 0, kv_read_factor_ = 1;
  double weights_bytes_ = 0, routed_bytes_ = 0, k_over_e_ = 0;
  double linear_flops_per_token_ = 0, bandwidth_ = 0, prefill_flops_ = 0, decode_flops_ = 0;
  double attention_flops_ = 0;
  // AttentionFlopsPerContextToken of a prompt token (halved: causal) and of a decode token.
  double prefill_attention_flops_per_context_ = 0, decode_attention_flops_per_context_ = 0;
  // Per-layer overheads and the engine's host floor of a pass, summed over the layers: of a pass
  // with prompt tokens (eager layers) and of a decode pass (with ServeRequest::hf_fused_modules,
  // the fused layers' share of the engine's part; the same otherwise).
  double overhead_per_pass_ = 0, decode_overhead_per_pass_ = 0;
  double host_per_pass_ = 0, decode_host_per_pass_ = 0;
  double dequant_bytes_ = 0;  // 16-bit copy written and read per pass of > 1 token (bnb 4-bit)
  double link_bytes_per_second_ = 0, link_latency_seconds_ = 0;
  bool custom_allreduce_ = false;  // the engine's own all-reduce applies (EngineProfile)
  // One tensor-parallel all-reduce of `bytes` (a pass runs two per layer).
  double AllReduce(double bytes) const;
};

// Where ServeRequest::hf_fused_modules applies: the hf engine at int4-weight-only (AWQ).
// transformers fuses only AutoAWQ-backend GEMM/GEMV layers (huggingface/transformers
// src/transformers/integrations/awq.py fuse_awq_modules: "Fusing is only supported for the AutoAWQ
// backend"; _fuse_awq_attention_layers: "Unsupported q_proj type" for other kernels), of the
// architectures of AWQ_FUSED_MAPPINGS (llama, mistral, mixtral, llava) or a user's
// modules_to_fuse; docs/source/en/quantization/awq.md "Fused modules". InvalidInput otherwise.
Status CheckFusedModules(bool fused, const EngineProfile& engine, Precision precision);

// Pieces, exposed for tests and for serve-plan.
// Whether ServeCalibration::cdna3_gemm_factor applies: catalog/gpus.csv names the architecture of
// AMD's MI300X and MI325X "CDNA 3".
bool UsesCdna3Matmuls(const catalog::Gpu& gpu);
double WeightBytes(const workload::Model& model, Precision precision);
// How a multi-head latent attention model (DeepSeek-V2/V3) attends; standard models ignore it.
// kAbsorbed: the engine caches the latent (workload::MlaLatentDim a token and layer) and a decode
//   token multiplies its query by W_UK and the attention output by W_UV (the weight absorption
//   of arXiv 2405.04434 section 2.1.2), attending as MQA over the latent: vLLM's MLA backend
//   ("_forward_decode", vllm-project/vllm@00a817ada8 vllm/v1/attention/backends/mla/common.py,
//   module docstring), SGLang's AttnForwardMethod.MLA ("absorbed multi-latent attention",
//   sgl-project/sglang@00114aef19 python/sglang/srt/models/deepseek_v2.py); TensorRT-LLM and
//   llama.cpp are taken to do the same (not checked here).
// kExpanded: K and V expanded per head from the latent (kv_b_proj), attended as multi-head
//   attention: every engine's prompt tokens (vLLM "_forward_prefill", SGLang AttnForwardMethod.MHA)
//   and every pass of transformers (engine hf), which also caches the expanded K and V
//   (huggingface/transformers@00b676f8f0 src/transformers/models/deepseek_v3/
//   modeling_deepseek_v3.py DeepseekV3Attention.forward: kv_b_proj, then past_key_value.update of
//   key_states / value_states, the rope key expanded to every head).
enum class MlaPath { kExpanded, kAbsorbed };
// The path of an engine's decode tokens and KV cache: kExpanded for hf, kAbsorbed otherwise.
MlaPath DecodeMlaPath(Engine engine);
// Bytes of KV cache a token adds, over all layers (MLA: as `path` caches it).
double KvCacheBytesPerToken(const workload::Model& model, KvPrecision kv,
                            MlaPath path = MlaPath::kAbsorbed);
// Attention FLOPs (QK^T and the weighted sum of V, 2 x multiply-adds) of one query token against
// one context token, summed over the layers, without the causal mask's halving: 2 x (query/key
// width + value width) over all query heads a layer, 4 x hidden for standard attention (GQA
// too: every query head scores every key). MLA, kExpanded: query/key heads of
// qk_nope + qk_rope and value heads of v_head; kAbsorbed: query/key width
// heads x (kv_lora_rank + qk_rope) and value width heads x kv_lora_rank. The absorbed decode's
// two extra per-token matmuls (q_nope x W_UK, the output x W_UV) cost 2 x kv_b_proj's weights,
// the FLOPs the linear layers already charge a token for kv_b_proj (StepModel's
// linear_flops_per_token_), and read its weights once a pass.
double AttentionFlopsPerContextToken(const workload::Model& model, MlaPath path);
// Tokens of one sequence the KV cache holds at `context` tokens (the sliding window caps it).
int64_t CachedTokens(const workload::Model& model, int64_t context);

}  // namespace fulcrum::serve
