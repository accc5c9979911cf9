#include "serve/serve.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>
#include <utility>

#include "core/input_error.h"
#include "estimate/comm.h"

namespace fulcrum::serve {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// vLLM's default fraction of GPU memory the engine may use (weights, activations, KV cache):
// vllm-project/vllm vllm/engine/arg_utils.py, EngineArgs.gpu_memory_utilization: float = 0.9
// (CacheConfig.gpu_memory_utilization, same default).
constexpr double kGpuMemoryUtilization = 0.9;
// The engine reserves the activation workspace of its largest forward pass at start-up (vLLM
// profiles a dummy run), whatever the batch: ServeRequest::max_batched_tokens tokens, and logits
// for kMaxNumSeqs sequences. ASSUMPTION, not fitted: max_num_seqs 256 is vLLM's SchedulerConfig
// default of the 0.x releases.
constexpr int64_t kMaxNumSeqs = 256;
// CUDA context + NCCL buffers + captured CUDA graphs per GPU. ASSUMPTION, not fitted: vLLM's
// start-up log reports CUDA graph pools of a few hundred MiB and ~0.5-1 GiB of non-torch memory.
constexpr double kOverheadBytesPerGpu = 1.5 * kGiB;
// Bytes per weight of each precision. Quantised formats keep the embeddings and the output head
// in 16-bit (vLLM, AutoAWQ and ModelOpt leave them unquantised).
//  int4-weight-only: 4 bits + an fp16 scale and a 4-bit zero per group of 128 (AWQ/GPTQ default
//    q_group_size 128, mit-han-lab/llm-awq): 0.5 + 2.5/128.
//  fp4: NVFP4, 4 bits + an FP8 scale per 16 elements (NVIDIA, "Introducing NVFP4", developer
//    blog 2025): 0.5 + 1/16.
//  fp8, int8, int8-weight-only: 1 byte (per-tensor or per-channel scales, negligible).
double BytesPerWeight(Precision p) {
  switch (p) {
    case Precision::kBf16:
    case Precision::kFp16:
      return 2;
    case Precision::kFp8:
    case Precision::kInt8:
    case Precision::kInt8WeightOnly:
      return 1;
    case Precision::kFp4:
      return 0.5 + 1.0 / 16;
    case Precision::kInt4WeightOnly:
      return 0.5 + 2.5 / 128;
  }
  return 2;
}

constexpr std::array<std::pair<Precision, std::string_view>, 7> kPrecisionNames = {{
    {Precision::kBf16, "bf16"},
    {Precision::kFp16, "fp16"},
    {Precision::kFp8, "fp8"},
    {Precision::kFp4, "fp4"},
    {Precision::kInt8, "int8"},
    {Precision::kInt8WeightOnly, "int8-weight-only"},
    {Precision::kInt4WeightOnly, "int4-weight-only"},
}};

std::vector<std::string> AllPrecisionNames() {
  std::vector<std::string> names;
  for (const auto& [p, name] : kPrecisionNames) names.emplace_back(name);
  return names;
}

// Dense tensor peak (FLOP/s) of the matmuls in `p`; nullopt = no such tensor mode.
std::optional<double> MatmulPeak(const catalog::Gpu& gpu, Precision p) {
  std::optional<double> tflops;
  switch (p) {
    case Precision::kBf16:
      tflops = gpu.bf16_tflops;
      break;
    case Precision::kFp16:
    case Precision::kInt8WeightOnly:
    case Precision::kInt4WeightOnly:
      tflops = gpu.fp16_tflops;  // dequantised to fp16 (AWQ/GPTQ kernels are fp16)
      break;
    case Precision::kFp8:
      tflops = gpu.fp8_tflops;
      break;
    case Precision::kFp4:
      tflops = gpu.fp4_tflops;
      break;
    case Precision::kInt8:
      tflops = gpu.int8_tops;
      break;
  }
  if (!tflops || *tflops <= 0) return std::nullopt;
  return *tflops * 1e12;
}

double KvBytes(KvPrecision kv) { return kv == KvPrecision::kFp8 ? 1 : 2; }

// KV heads one GPU holds: heads are split over tp, replicated when tp exceeds them (vLLM).
double KvHeadsPerGpu(const workload::Model& m, int64_t tp) {
  const int64_t kv = m.kv_heads > 0 ? m.kv_heads : m.heads;
  return static_cast<double>((kv + tp - 1) / tp);
}

ErrorDetail Detail(std::string field, std::string expected, std::string found,
                   std::vector<std::string> nearest = {}) {
  ErrorDetail d;
  d.field = std::move(field);
  d.expected = std::move(expected);
  d.found = std::move(found);
  d.nearest = std::move(nearest);
  return d;
}

Status Invalid(const std::string& field, const std::string& expected, const std::string& found) {
  return InputError(Detail(field, expected, found));
}

}  // namespace

Result<Precision> ParsePrecision(std::string_view text) {
  for (const auto& [p, name] : kPrecisionNames) {
    if (text == name) return p;
  }
  return InputError(Detail("precision", "one of " + JoinNames(AllPrecisionNames()),
                           std::string(text), NearestNames(text, AllPrecisionNames())));
}

Result<KvPrecision> ParseKvPrecision(std::string_view text) {
  if (text == "bf16") return KvPrecision::kBf16;
  if (text == "fp16") return KvPrecision::kFp16;
  if (text == "fp8") return KvPrecision::kFp8;
  const std::vector<std::string> names = {"bf16", "fp16", "fp8"};
  return InputError(Detail("kv-precision", "one of bf16, fp16, fp8", std::string(text),
                           NearestNames(text, names)));
}

std::string_view PrecisionName(Precision precision) {
  for (const auto& [p, name] : kPrecisionNames) {
    if (p == precision) return name;
  }
  return "?";
}

std::vector<Precision> SupportedPrecisions(const catalog::Gpu& gpu) {
  std::vector<Precision> out;
  for (const auto& [p, name] : kPrecisionNames) {
    if (MatmulPeak(gpu, p)) out.push_back(p);
  }
  return out;
}

Status CheckSupport(const catalog::Gpu& gpu, Precision precision, KvPrecision kv) {
  std::vector<std::string> supported;
  for (Precision p : SupportedPrecisions(gpu)) supported.emplace_back(PrecisionName(p));
  if (!MatmulPeak(gpu, precision)) {
    return Status::InvalidInput(
               "precision: GPU " + gpu.name + " has no " + std::string(PrecisionName(precision)) +
               " tensor cores (catalog/gpus.csv); it supports: " + JoinNames(supported))
        .WithDetail(Detail("precision", "a precision " + gpu.name + " supports",
                           std::string(PrecisionName(precision)), supported));
  }
  // A bf16 KV cache needs bf16 arithmetic in attention; fp8 KV is a storage format (vLLM
  // dequantises it in the attention kernel) and fp16 runs everywhere.
  if (kv == KvPrecision::kBf16 && !gpu.bf16_tflops) {
    return Status::InvalidInput("kv-precision: GPU " + gpu.name +
                                " has no bf16; use --kv-precision fp16 or fp8")
        .WithDetail(Detail("kv-precision", "fp16 or fp8 on " + gpu.name, "bf16", {"fp16", "fp8"}));
  }
  return Status::Ok();
}

double WeightBytes(const workload::Model& m, Precision precision) {
  const double total = workload::ParameterCount(m);
  const double unquantised = workload::EmbeddingParameterCount(m) + workload::HeadParameterCount(m);
  return (total - unquantised) * BytesPerWeight(precision) + unquantised * 2;
}

double KvCacheBytesPerToken(const workload::Model& m, KvPrecision kv) {
  const double kv_heads = static_cast<double>(m.kv_heads > 0 ? m.kv_heads : m.heads);
  return 2.0 * static_cast<double>(m.layers) * kv_heads *
         static_cast<double>(workload::HeadDim(m)) * KvBytes(kv);
}

int64_t CachedTokens(const workload::Model& m, int64_t context) {
  return m.sliding_window > 0 ? std::min(context, m.sliding_window) : context;
}

Result<ServeEstimate> EstimateServing(const ServeRequest& r, const ServeCalibration& calibration) {
  const workload::Model& m = r.model;
  if (m.kind != workload::ModelKind::kDecoder) {
    return Invalid("model", "a decoder transformer", std::string(workload::ModelKindName(m.kind)));
  }
  if (r.tp < 1 || m.heads % r.tp != 0) {
    return Invalid("tp", "a divisor of the model's " + std::to_string(m.heads) + " heads",
                   std::to_string(r.tp));
  }
  if (r.batch < 1) return Invalid("batch", "at least 1", std::to_string(r.batch));
  if (r.input_len < 1) return Invalid("input-len", "at least 1", std::to_string(r.input_len));
  if (r.output_len < 1) return Invalid("output-len", "at least 1", std::to_string(r.output_len));
  if (r.max_batched_tokens < 1) {
    return Invalid("max-batched-tokens", "at least 1", std::to_string(r.max_batched_tokens));
  }
  FULCRUM_RETURN_IF_ERROR(CheckSupport(r.gpu, r.precision, r.kv_precision));

  catalog::Offer node;
  node.gpu = r.gpu.name;
  node.gpu_count = static_cast<int>(r.tp);
  node.interconnect = r.interconnect;
  const std::optional<estimate::Hardware> hw =
      estimate::HardwareFor(r.gpu, node, workload::Precision::kFp16Mixed);
  if (!hw) return Invalid("gpu", "a GPU with a sourced fp16 peak", r.gpu.name);

  const double tp = static_cast<double>(r.tp);
  const double batch = static_cast<double>(r.batch);
  const double hidden = static_cast<double>(m.hidden);
  const double layers = static_cast<double>(m.layers);
  const double act_bytes = 2;  // 16-bit activations in every precision here

  ServeEstimate out;
  ServeMemory& mem = out.memory;
  mem.weights_bytes = WeightBytes(m, r.precision);
  mem.kv_cache_bytes_per_token = KvCacheBytesPerToken(m, r.kv_precision);
  const int64_t seq_tokens = CachedTokens(m, r.input_len + r.output_len);
  mem.kv_cache_bytes = batch * static_cast<double>(seq_tokens) * mem.kv_cache_bytes_per_token;
  const double kv_heads = static_cast<double>(m.kv_heads > 0 ? m.kv_heads : m.heads);
  const double kv_per_token_per_gpu =
      mem.kv_cache_bytes_per_token * KvHeadsPerGpu(m, r.tp) / kv_heads;
  const double weights_per_gpu = mem.weights_bytes / tp;
  // Forward workspace of the largest pass: q/k/v, gate+up (the MLP intermediate), the residual
  // stream, and fp32 logits of the sampled positions (the whole vocabulary, gathered).
  const double chunk = static_cast<double>(r.max_batched_tokens);
  const double mlp_width = static_cast<double>(
      workload::IsMoe(m) ? workload::ExpertFfnHidden(m) * m.experts_per_token : m.ffn_hidden);
  mem.activation_bytes_per_gpu =
      chunk * act_bytes *
          ((hidden + 2 * static_cast<double>(workload::KvDim(m))) / tp + 2 * mlp_width / tp +
           hidden) +
      static_cast<double>(kMaxNumSeqs) * static_cast<double>(m.vocab) * 4;
  mem.overhead_bytes_per_gpu = kOverheadBytesPerGpu;
  mem.budget_bytes_per_gpu = kGpuMemoryUtilization * r.gpu.memory_gib * kGiB;
  const double fixed = weights_per_gpu + mem.activation_bytes_per_gpu + mem.overhead_bytes_per_gpu;
  mem.peak_bytes_per_gpu = fixed + mem.kv_cache_bytes * KvHeadsPerGpu(m, r.tp) / kv_heads;
  const double per_sequence = kv_per_token_per_gpu * static_cast<double>(seq_tokens);
  mem.kv_cache_capacity_tokens =
      fixed >= mem.budget_bytes_per_gpu
          ? 0
          : static_cast<int64_t>((mem.budget_bytes_per_gpu - fixed) / kv_per_token_per_gpu);
  mem.max_concurrency =
      fixed >= mem.budget_bytes_per_gpu
          ? 0
          : static_cast<int64_t>((mem.budget_bytes_per_gpu - fixed) / per_sequence);
  mem.fits = mem.peak_bytes_per_gpu <= mem.budget_bytes_per_gpu;

  // --- speed ---
  const double peak = *MatmulPeak(r.gpu, r.precision);
  const bool low_bit = r.precision == Precision::kFp8 || r.precision == Precision::kInt8 ||
                       r.precision == Precision::kFp4;
  const double low_bit_factor = low_bit ? calibration.low_bit_gemm_relative_efficiency : 1.0;
  const double prefill_flops_per_second =
      peak * std::min(1.0, calibration.prefill_gemm_efficiency * low_bit_factor);
  const double decode_flops_per_second =
      peak * std::min(1.0, calibration.decode_gemm_efficiency * low_bit_factor);
  const double attn_flops_per_second = hw->peak_flops_16bit * calibration.attention_efficiency;
  const double bandwidth = hw->memory_bytes_per_second * calibration.decode_bandwidth_efficiency;
  const estimate::TimeCalibration& links =
      calibration.links != nullptr ? *calibration.links : estimate::DefaultTimeCalibration();
  estimate::Link link;
  link.bytes_per_second = hw->intra_node_bytes_per_second *
                          (hw->nvlink ? links.nvlink_efficiency : links.pcie_efficiency);
  link.latency_seconds = links.intra_node_latency_seconds;
  const int ranks = static_cast<int>(r.tp);
  const double overhead_per_pass = layers * calibration.per_layer_overhead_seconds;
  // Matmul FLOPs per token: 2 x the parameters a token uses, less the input embedding lookup.
  const double linear_flops_per_token =
      2 * (workload::ActiveParameterCount(m) - workload::EmbeddingParameterCount(m));

  // Prefill: all prompts, compute-bound (at least one read of the weights); causal attention
  // 2 x layers x hidden x s x cached per sequence; two all-reduces per layer (attention, MLP).
  const double s = static_cast<double>(r.input_len);
  const double prefill_tokens = batch * s;
  const double prefill_attn_flops =
      batch * 2 * layers * hidden * s * static_cast<double>(CachedTokens(m, r.input_len));
  const double prefill_compute =
      prefill_tokens * linear_flops_per_token / (tp * prefill_flops_per_second) +
      prefill_attn_flops / (tp * attn_flops_per_second);
  const double prefill_comm =
      layers * 2 * estimate::AllReduceSeconds(prefill_tokens * hidden * act_bytes, ranks, link);
  out.speed.prefill_seconds =
      std::max(prefill_compute, weights_per_gpu / bandwidth) + prefill_comm + overhead_per_pass;

  // Decode, at the mean context: read the weights the batch touches (MoE: the expected share of
  // routed experts any of its tokens picks), compute-bound when the batch is large enough; then
  // attention reads every sequence's KV (once per query head for a kPerQueryHead kernel).
  const double context = static_cast<double>(CachedTokens(m, r.input_len + r.output_len / 2));
  double weights_read = mem.weights_bytes;
  if (workload::IsMoe(m)) {
    const double routed = workload::RoutedExpertParameterCount(m) * BytesPerWeight(r.precision);
    const double k_over_e =
        static_cast<double>(m.experts_per_token) / static_cast<double>(m.experts);
    weights_read -= routed * std::pow(1 - k_over_e, batch);
  }
  const double kv_read_factor = r.decode_attention == DecodeAttention::kPerQueryHead
                                    ? static_cast<double>(m.heads) / kv_heads
                                    : 1.0;
  const double weights_seconds = weights_read / tp / bandwidth;
  const double kv_seconds = batch * context * kv_per_token_per_gpu * kv_read_factor / bandwidth;
  const double gemm_seconds = batch * linear_flops_per_token / (tp * decode_flops_per_second);
  const double attn_seconds = batch * 4 * layers * hidden * context / (tp * attn_flops_per_second);
  ServeSpeed& sp = out.speed;
  sp.decode_memory_seconds = weights_seconds + kv_seconds;
  sp.decode_compute_seconds = gemm_seconds + attn_seconds;
  sp.decode_comm_seconds =
      layers * 2 * estimate::AllReduceSeconds(batch * hidden * act_bytes, ranks, link);
  sp.tpot_seconds = std::max(weights_seconds, gemm_seconds) + std::max(kv_seconds, attn_seconds) +
                    sp.decode_comm_seconds + overhead_per_pass;
  const double output = static_cast<double>(r.output_len);
  sp.output_tokens_per_second = batch * output / (sp.prefill_seconds + output * sp.tpot_seconds);
  sp.prefill_tokens_per_second = prefill_tokens / sp.prefill_seconds;
  return out;
}

}  // namespace fulcrum::serve
