#include "serve/serve.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>
#include <tuple>
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
//  bnb-int8: LLM.int8() int8 weights with one fp32 scale per row (Dettmers et al., "LLM.int8():
//    8-bit Matrix Multiplication for Transformers at Scale", NeurIPS 2022, sec. 3): 1 byte.
//  bnb-nf4, bnb-fp4: 4 bits + an fp32 absmax per block of 64 (Dettmers et al., "QLoRA", NeurIPS
//    2023, sec. 3: "32/64 = 0.5 bits per parameter"; transformers BitsAndBytesConfig
//    bnb_4bit_use_double_quant defaults to False): 0.5 + 4/64.
//  GGUF: the whole model's bits per weight of meta-llama/Llama-3.1-8B in llama.cpp's
//    quantize table (ggml-org/llama.cpp@311c2c9f0ebd6e08f5b20e8827c654cebb7a41d6
//    tools/quantize/README.md: F16 16.0005, Q8_0 8.5008, Q5_K_M 5.7036, Q4_K_M 4.8944; the k-quant
//    mixes keep some tensors at 6 bits, embeddings and output included), applied to every weight;
//    Q4_0 (not in that table): its block, an fp16 scale and 16 bytes per 32 weights = 4.5 bits
//    (ggml-org/llama.cpp@aca2e6ce7909064dbfbf3bd168e9ad3db1826e6c ggml/src/ggml-common.h
//    block_q4_0).
double BytesPerWeight(Precision p) {
  switch (p) {
    case Precision::kBf16:
    case Precision::kFp16:
      return 2;
    case Precision::kFp8:
    case Precision::kInt8:
    case Precision::kInt8WeightOnly:
    case Precision::kBnbInt8:
      return 1;
    case Precision::kFp4:
      return 0.5 + 1.0 / 16;
    case Precision::kInt4WeightOnly:
      return 0.5 + 2.5 / 128;
    case Precision::kBnbNf4:
    case Precision::kBnbFp4:
      return 0.5 + 4.0 / 64;
    case Precision::kGgufF16:
      return 16.0005 / 8;
    case Precision::kGgufQ8_0:
      return 8.5008 / 8;
    case Precision::kGgufQ5KM:
      return 5.7036 / 8;
    case Precision::kGgufQ4KM:
      return 4.8944 / 8;
    case Precision::kGgufQ4_0:
      return 4.5 / 8;
  }
  return 2;
}

// GGUF files quantise the embeddings and the output head too (their bits per weight above are
// the whole model's); the other formats keep both 16-bit.
bool QuantisesWholeModel(Precision p) {
  return p == Precision::kGgufF16 || p == Precision::kGgufQ8_0 || p == Precision::kGgufQ5KM ||
         p == Precision::kGgufQ4KM || p == Precision::kGgufQ4_0;
}

bool IsBnb4Bit(Precision p) { return p == Precision::kBnbNf4 || p == Precision::kBnbFp4; }

constexpr std::array<std::pair<Precision, std::string_view>, 15> kPrecisionNames = {{
    {Precision::kBf16, "bf16"},
    {Precision::kFp16, "fp16"},
    {Precision::kFp8, "fp8"},
    {Precision::kFp4, "fp4"},
    {Precision::kInt8, "int8"},
    {Precision::kInt8WeightOnly, "int8-weight-only"},
    {Precision::kInt4WeightOnly, "int4-weight-only"},
    {Precision::kBnbInt8, "bnb-int8"},
    {Precision::kBnbNf4, "bnb-nf4"},
    {Precision::kBnbFp4, "bnb-fp4"},
    {Precision::kGgufF16, "f16"},
    {Precision::kGgufQ8_0, "q8_0"},
    {Precision::kGgufQ5KM, "q5_k_m"},
    {Precision::kGgufQ4KM, "q4_k_m"},
    {Precision::kGgufQ4_0, "q4_0"},
}};

constexpr std::array<std::pair<Engine, std::string_view>, kEngineCount> kEngineNames = {{
    {Engine::kVllm, "vllm"},
    {Engine::kSglang, "sglang"},
    {Engine::kTrtllm, "trtllm"},
    {Engine::kHf, "hf"},
    {Engine::kLlamaCpp, "llama.cpp"},
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
    case Precision::kBnbNf4:
    case Precision::kBnbFp4:
    case Precision::kGgufF16:
    case Precision::kGgufQ8_0:
    case Precision::kGgufQ5KM:
    case Precision::kGgufQ4KM:
    case Precision::kGgufQ4_0:
      // dequantised to fp16 (AWQ/GPTQ and bitsandbytes 4-bit kernels are fp16; llama.cpp's
      // prompt matmuls dequantise to fp16 for cuBLAS or run its int8 MMQ kernels, taken as fp16)
      tflops = gpu.fp16_tflops;
      break;
    case Precision::kBnbInt8:  // int8 matmul where the GPU has int8 tensor cores
      tflops = gpu.int8_tops ? gpu.int8_tops : gpu.fp16_tflops;
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

// The share of a token's KV cache (KvCacheBytesPerToken) one GPU of tp holds: its KV heads'
// share; MLA's latent is one KV "head" (vLLM MLACommonBackend.get_kv_cache_shape: "num_kv_heads
// assumed to be 1 for MLA", vllm-project/vllm@37fa5c0940 vllm/v1/attention/backends/mla/
// common.py), so every GPU of tp holds all of it.
double KvShareOnGpu(const workload::Model& m, int64_t tp, MlaPath path) {
  if (workload::IsMla(m) && path == MlaPath::kAbsorbed) return 1.0;
  return KvHeadsPerGpu(m, tp) / static_cast<double>(m.kv_heads > 0 ? m.kv_heads : m.heads);
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

Result<Batching> ParseBatching(std::string_view text) {
  if (text == "continuous") return Batching::kContinuous;
  if (text == "static") return Batching::kStatic;
  const std::vector<std::string> names = {"continuous", "static"};
  return InputError(
      Detail("batching", "continuous or static", std::string(text), NearestNames(text, names)));
}

std::string_view BatchingName(Batching batching) {
  return batching == Batching::kStatic ? "static" : "continuous";
}

std::vector<std::string> EngineNames() {
  std::vector<std::string> names;
  for (const auto& [e, name] : kEngineNames) names.emplace_back(name);
  return names;
}

Result<Engine> ParseEngine(std::string_view text) {
  for (const auto& [e, name] : kEngineNames) {
    if (text == name) return e;
  }
  return InputError(Detail("engine", "one of " + JoinNames(EngineNames()), std::string(text),
                           NearestNames(text, EngineNames())));
}

std::string_view EngineName(Engine engine) {
  for (const auto& [e, name] : kEngineNames) {
    if (e == engine) return name;
  }
  return "?";
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

namespace {

// Whether the engine's table lists `precision` (an empty list is not checked).
bool RunsPrecision(const EngineProfile& engine, Precision precision) {
  return engine.precisions.empty() || std::find(engine.precisions.begin(), engine.precisions.end(),
                                                precision) != engine.precisions.end();
}

// The engine's own limit on the GPU: its vendor.
Status CheckEngineVendor(const catalog::Gpu& gpu, const EngineProfile& engine) {
  if (engine.vendors.empty() ||
      std::find(engine.vendors.begin(), engine.vendors.end(), gpu.vendor) != engine.vendors.end()) {
    return Status::Ok();
  }
  const std::string name(EngineName(engine.engine));
  return Status::InvalidInput(
             "engine: " + name + " runs on " + JoinNames(engine.vendors) +
             " GPUs only (catalog/serving_engines.csv); " + gpu.name + " is " +
             (gpu.vendor.empty() ? std::string("of no known vendor") : "an " + gpu.vendor + " GPU"))
      .WithDetail(Detail("engine", "an engine that runs on " + gpu.name, name));
}

}  // namespace

Status CheckEnginePrecision(const EngineProfile& engine, Precision precision) {
  if (RunsPrecision(engine, precision)) return Status::Ok();
  const std::string name(EngineName(engine.engine));
  std::vector<std::string> can;
  for (Precision p : engine.precisions) can.emplace_back(PrecisionName(p));
  return Status::InvalidInput("precision: engine " + name + " cannot run " +
                              std::string(PrecisionName(precision)) +
                              " (catalog/serving_engines.csv); it runs: " + JoinNames(can))
      .WithDetail(Detail("precision", "a precision engine " + name + " runs",
                         std::string(PrecisionName(precision)), can));
}

Status CheckSupport(const catalog::Gpu& gpu, Precision precision, KvPrecision kv,
                    const EngineProfile& engine) {
  // The engine's limits first (vendor, then precision), so that "llama.cpp cannot run fp8" is
  // said on a GPU that has fp8.
  FULCRUM_RETURN_IF_ERROR(CheckEngineVendor(gpu, engine));
  FULCRUM_RETURN_IF_ERROR(CheckEnginePrecision(engine, precision));
  std::vector<std::string> supported;
  for (Precision p : SupportedPrecisions(gpu)) {
    if (RunsPrecision(engine, p)) supported.emplace_back(PrecisionName(p));
  }
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

Status CheckTensorParallel(const EngineProfile& engine, int64_t tp) {
  if (tp <= 1 || engine.tensor_parallel) return Status::Ok();
  const std::string name(EngineName(engine.engine));
  return Status::InvalidInput("tp: engine " + name +
                              " has no tensor parallelism (catalog/serving_engines.csv: its "
                              "multi-GPU mode places whole layers on the GPUs, which run one "
                              "after another); serve --tp 1, one replica per GPU")
      .WithDetail(Detail("tp", "1 (engine " + name + ")", std::to_string(tp), {"1"}));
}

Status CheckBatching(const EngineProfile& engine, Batching batching) {
  if (engine.batching.empty() || std::find(engine.batching.begin(), engine.batching.end(),
                                           batching) != engine.batching.end()) {
    return Status::Ok();
  }
  std::vector<std::string> modes;
  for (Batching b : engine.batching) modes.emplace_back(BatchingName(b));
  const std::string name(EngineName(engine.engine));
  return Status::InvalidInput("batching: engine " + name + " runs " + JoinNames(modes) +
                              " batching only (" + engine.scheduler + ")")
      .WithDetail(Detail("batching", "a batching engine " + name + " runs",
                         std::string(BatchingName(batching)), modes));
}

double WeightBytes(const workload::Model& m, Precision precision) {
  const double total = workload::ParameterCount(m);
  if (QuantisesWholeModel(precision)) return total * BytesPerWeight(precision);
  const double unquantised = workload::EmbeddingParameterCount(m) + workload::HeadParameterCount(m);
  return (total - unquantised) * BytesPerWeight(precision) + unquantised * 2;
}

MlaPath DecodeMlaPath(Engine engine) {
  return engine == Engine::kHf ? MlaPath::kExpanded : MlaPath::kAbsorbed;
}

double KvCacheBytesPerToken(const workload::Model& m, KvPrecision kv, MlaPath path) {
  // K and V of every KV head (KDim + VDim: 2 x kv_heads x head_dim for standard attention, every
  // head's for MLA expanded), or kAbsorbed MLA's compressed latent kv_lora_rank +
  // qk_rope_head_dim per token and layer (workload::MlaLatentDim).
  const int64_t width = workload::IsMla(m) && path == MlaPath::kAbsorbed
                            ? workload::MlaLatentDim(m)
                            : workload::KDim(m) + workload::VDim(m);
  return static_cast<double>(m.layers) * static_cast<double>(width) * KvBytes(kv);
}

double AttentionFlopsPerContextToken(const workload::Model& m, MlaPath path) {
  const double layers = static_cast<double>(m.layers);
  if (!workload::IsMla(m)) return 2 * layers * (2 * static_cast<double>(m.hidden));
  const double heads = static_cast<double>(m.heads);
  if (path == MlaPath::kExpanded) {
    return 2 * layers * static_cast<double>(workload::QDim(m) + workload::AttentionOutDim(m));
  }
  return 2 * layers * heads * static_cast<double>(workload::MlaLatentDim(m) + m.kv_lora_rank);
}

int64_t CachedTokens(const workload::Model& m, int64_t context) {
  return m.sliding_window > 0 ? std::min(context, m.sliding_window) : context;
}

namespace {

// The request checks shared by EstimateServing and StepModel::Make.
Status Validate(const ServeRequest& r) {
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
  FULCRUM_RETURN_IF_ERROR(CheckSupport(r.gpu, r.precision, r.kv_precision, r.engine));
  FULCRUM_RETURN_IF_ERROR(CheckFusedModules(r.hf_fused_modules, r.engine, r.precision));
  FULCRUM_RETURN_IF_ERROR(CheckTensorParallel(r.engine, r.tp));
  return CheckBatching(r.engine, r.batching);
}

}  // namespace

Status CheckFusedModules(bool fused, const EngineProfile& engine, Precision precision) {
  if (!fused) return Status::Ok();
  if (engine.engine != Engine::kHf) {
    return Invalid("hf-fused-modules",
                   "engine hf (transformers AwqConfig(do_fuse=True) / AutoAWQ fuse_layers=True; "
                   "other engines have no such switch)",
                   "engine " + std::string(EngineName(engine.engine)));
  }
  if (precision != Precision::kInt4WeightOnly) {
    return Invalid("hf-fused-modules",
                   "precision int4-weight-only (AWQ fused modules fuse AWQ GEMM/GEMV layers only)",
                   "precision " + std::string(PrecisionName(precision)));
  }
  return Status::Ok();
}

bool UsesCdna3Matmuls(const catalog::Gpu& gpu) { return gpu.architecture == "CDNA 3"; }

Result<StepModel> StepModel::Make(const ServeRequest& r, const ServeCalibration& calibration) {
  FULCRUM_RETURN_IF_ERROR(Validate(r));
  const workload::Model& m = r.model;
  catalog::Offer node;
  node.gpu = r.gpu.name;
  node.gpu_count = static_cast<int>(r.tp);
  node.interconnect = r.interconnect;
  const std::optional<estimate::Hardware> hw =
      estimate::HardwareFor(r.gpu, node, workload::Precision::kFp16Mixed);
  if (!hw) return Invalid("gpu", "a GPU with a sourced fp16 peak", r.gpu.name);
  StepModel s;
  s.model_ = m;
  s.ranks_ = static_cast<int>(r.tp);
  s.tp_ = static_cast<double>(r.tp);
  s.hidden_ = static_cast<double>(m.hidden);
  s.layers_ = static_cast<double>(m.layers);
  const double kv_heads = static_cast<double>(m.kv_heads > 0 ? m.kv_heads : m.heads);
  const MlaPath decode_path = DecodeMlaPath(r.engine.engine);
  s.kv_per_token_per_gpu_ =
      KvCacheBytesPerToken(m, r.kv_precision, decode_path) * KvShareOnGpu(m, r.tp, decode_path);
  // MLA's decode reads the one latent for all query heads (vLLM's "MQA" decode path, same file).
  s.kv_read_factor_ = r.decode_attention == DecodeAttention::kPerQueryHead && !workload::IsMla(m)
                          ? static_cast<double>(m.heads) / kv_heads
                          : 1.0;
  // HF generate's default cache, DynamicCache ("the default for generative models"), appends a
  // step's keys and values with torch.cat (huggingface/transformers@67dd5524
  // src/transformers/cache_utils.py DynamicCache.update), which copies the layer's whole past into
  // a new tensor: each decode step reads and writes the cache once more besides the attention's
  // read. AutoAWQ's fused modules write the step into a preallocated
  // cache instead (casper-hansen/AutoAWQ@049e35f1 awq/modules/fused/cache.py
  // WindowedCache.update_kv).
  if (r.engine.engine == Engine::kHf && !r.hf_fused_modules) s.kv_read_factor_ += 2;
  s.weights_bytes_ = WeightBytes(m, r.precision);
  if (workload::IsMoe(m)) {
    s.routed_bytes_ = workload::RoutedExpertParameterCount(m) * BytesPerWeight(r.precision);
    s.k_over_e_ = static_cast<double>(m.experts_per_token) / static_cast<double>(m.experts);
  }
  const double peak = *MatmulPeak(r.gpu, r.precision);
  const bool low_bit = r.precision == Precision::kFp8 || r.precision == Precision::kInt8 ||
                       r.precision == Precision::kFp4 ||
                       (r.precision == Precision::kBnbInt8 && r.gpu.int8_tops);
  const double low_bit_factor = low_bit ? calibration.low_bit_gemm_relative_efficiency : 1.0;
  const EngineEfficiency& engine = calibration.engine(r.engine.engine);
  const double gemm = engine.gemm_factor;
  const double arch = UsesCdna3Matmuls(r.gpu) ? calibration.cdna3_gemm_factor : 1.0;
  s.prefill_flops_ =
      peak * std::min(1.0, calibration.prefill_gemm_efficiency * low_bit_factor * gemm * arch);
  s.decode_flops_ =
      peak * std::min(1.0, calibration.decode_gemm_efficiency * low_bit_factor * gemm * arch);
  s.attention_flops_ =
      hw->peak_flops_16bit * std::min(1.0, calibration.attention_efficiency * gemm);
  s.prefill_attention_flops_per_context_ = AttentionFlopsPerContextToken(m, MlaPath::kExpanded) / 2;
  s.decode_attention_flops_per_context_ = AttentionFlopsPerContextToken(m, decode_path);
  s.bandwidth_ = hw->memory_bytes_per_second *
                 std::min(1.0, calibration.decode_bandwidth_efficiency * engine.bandwidth_factor);
  // The tensor-parallel all-reduce's links at the training model's sourced priors
  // (estimate/compute.h: NVLink and PCIe efficiencies, intra-node latency), not at the training
  // fit's values: a training refit moves those, and the serving fit, a pattern search on medians,
  // lands elsewhere for a 1 % move of them (issue 31: nvlink 0.685, 0.688, 0.690 gave llama.cpp a
  // left-out P90 of 27, 43 and 26 %), so serving would change with every training change.
  static const estimate::TimeCalibration links{};
  s.link_bytes_per_second_ = hw->intra_node_bytes_per_second *
                             (hw->nvlink ? links.nvlink_efficiency : links.pcie_efficiency);
  s.link_latency_seconds_ = links.intra_node_latency_seconds;
  // vLLM's CustomAllreduce (and SGLang's copy of it) runs on 2, 4, 6 or 8 GPUs of one fully
  // connected node (vllm/distributed/device_communicators/custom_all_reduce.py@00d618aab604
  // _SUPPORTED_WORLD_SIZES, is_fully_connected); other layouts fall back to NCCL's ring.
  s.custom_allreduce_ =
      r.engine.custom_allreduce && hw->nvlink && (r.tp == 2 || r.tp == 4 || r.tp == 6 || r.tp == 8);
  // AWQ fused modules launch a share of an eager layer's operations in a decode pass: the
  // engine's host time and extra GPU-side time per layer, both per operation dispatched, shrink by
  // that share there. A pass with prompt tokens runs the fused attention's eager path (Seconds).
  const auto overhead_per_pass = [&](double dispatch) {
    double per_layer =
        calibration.per_layer_overhead_seconds + engine.per_layer_overhead_seconds * dispatch;
    if (IsBnb4Bit(r.precision)) per_layer += calibration.bnb_4bit_per_layer_seconds;
    if (r.precision == Precision::kBnbInt8) per_layer += calibration.bnb_int8_per_layer_seconds;
    return s.layers_ * per_layer;
  };
  const double decode_dispatch = r.hf_fused_modules ? calibration.hf_fused_dispatch_share : 1.0;
  s.overhead_per_pass_ = overhead_per_pass(1.0);
  s.decode_overhead_per_pass_ = overhead_per_pass(decode_dispatch);
  s.host_per_pass_ = s.layers_ * engine.host_per_layer_seconds;
  s.decode_host_per_pass_ = s.layers_ * engine.host_per_layer_seconds * decode_dispatch;
  // bitsandbytes 4-bit: a pass of more than one token dequantises each weight to a 16-bit copy
  // (written, then read by the matmul: 4 bytes a weight); one token runs the 4-bit GEMV kernel
  // (bitsandbytes/autograd/_functions.py matmul_4bit: gemv_4bit when the input is one row).
  if (IsBnb4Bit(r.precision)) {
    const double unquantised =
        workload::EmbeddingParameterCount(m) + workload::HeadParameterCount(m);
    s.dequant_bytes_ = (workload::ParameterCount(m) - unquantised) * 4;
  }
  // Matmul FLOPs per token: 2 x the parameters a token uses, less the input embedding lookup.
  s.linear_flops_per_token_ =
      2 * (workload::ActiveParameterCount(m) - workload::EmbeddingParameterCount(m));
  return s;
}

// One pass: the weights it touches are read once (MoE: the expected share of routed experts any
// of its tokens picks) unless its matmuls take longer (compute-bound); prompt tokens run at the
// prefill efficiency with causal attention of half AttentionFlopsPerContextToken (kExpanded) x
// context each; the decodes' attention reads every sequence's KV (once per query head for a
// kPerQueryHead kernel) or is compute-bound (AttentionFlopsPerContextToken of the engine's
// DecodeMlaPath x context);
// two all-reduces per layer (attention, MLP) of the pass's activations; the per-layer overheads
// (base, the engine's, bitsandbytes' extra kernels) add to the pass. An eager engine's pass takes
// at least its host time (layers x the engine's host time per layer): the GPU idles while Python
// dispatches kernels shorter than their dispatch. AWQ's fused modules dispatch their share of the
// eager layer's operations in decode passes only: with more than one token per sequence their
// attention takes its eager path (casper-hansen/AutoAWQ@027758d4 awq/modules/fused/attn.py
// QuantAttentionFused.forward, `if seqlen > 1 or not FT_INSTALLED`: rotary through view_as_complex,
// the cache update, repeat_interleave, matmul, softmax, matmul in PyTorch, where a decode step
// calls the one single_query_attention kernel), so a pass with prompt tokens dispatches as many
// operations as an unfused layer.
double StepModel::Seconds(double decode_seqs, double decode_context, double prefill_tokens,
                          double prefill_context) const {
  const double tokens = decode_seqs + prefill_tokens;
  double weights_read = weights_bytes_;
  if (routed_bytes_ > 0) weights_read -= routed_bytes_ * std::pow(1 - k_over_e_, tokens);
  if (tokens > 1) weights_read += dequant_bytes_;
  const double weights_seconds = weights_read / tp_ / bandwidth_;
  const double gemm_seconds = decode_seqs * linear_flops_per_token_ / (tp_ * decode_flops_) +
                              prefill_tokens * linear_flops_per_token_ / (tp_ * prefill_flops_) +
                              prefill_tokens * prefill_attention_flops_per_context_ *
                                  prefill_context / (tp_ * attention_flops_);
  const double kv_seconds =
      decode_seqs * decode_context * kv_per_token_per_gpu_ * kv_read_factor_ / bandwidth_;
  const double attn_seconds =
      decode_seqs * decode_attention_flops_per_context_ * decode_context / (tp_ * attention_flops_);
  const double comm = layers_ * 2 * AllReduce(tokens * hidden_ * 2);
  const bool eager = prefill_tokens > 0;  // the fused attention's PyTorch path (hf fused modules)
  const double gpu = std::max(weights_seconds, gemm_seconds) + std::max(kv_seconds, attn_seconds) +
                     comm + (eager ? overhead_per_pass_ : decode_overhead_per_pass_);
  return std::max(gpu, eager ? host_per_pass_ : decode_host_per_pass_);
}

double StepModel::ChunkedPrefillSeconds(double decode_seqs, double decode_context, double tokens,
                                        double budget, double prefill_context) const {
  const double full = std::floor(tokens / budget);
  const double rest = tokens - full * budget;
  double seconds =
      full > 0 ? full * Seconds(decode_seqs, decode_context, budget, prefill_context) : 0;
  if (rest > 0) seconds += Seconds(decode_seqs, decode_context, rest, prefill_context);
  return seconds;
}

void StepModel::DecodeParts(double decode_seqs, double decode_context, ServeSpeed& sp) const {
  double weights_read = weights_bytes_;
  if (routed_bytes_ > 0) weights_read -= routed_bytes_ * std::pow(1 - k_over_e_, decode_seqs);
  if (decode_seqs > 1) weights_read += dequant_bytes_;
  sp.decode_memory_seconds = weights_read / tp_ / bandwidth_ + decode_seqs * decode_context *
                                                                   kv_per_token_per_gpu_ *
                                                                   kv_read_factor_ / bandwidth_;
  sp.decode_compute_seconds =
      decode_seqs * linear_flops_per_token_ / (tp_ * decode_flops_) +
      decode_seqs * decode_attention_flops_per_context_ * decode_context / (tp_ * attention_flops_);
  sp.decode_comm_seconds = layers_ * 2 * AllReduce(decode_seqs * hidden_ * 2);
}

// NCCL's ring: 2 (n-1) steps of one link latency each (estimate::AllReduceSeconds). The engine's
// own kernel, for messages under its 8 MiB buffer (custom_all_reduce.py max_size 8192 * 1024,
// should_custom_ar), has every rank read its peers' buffers directly: a reduce-scatter and an
// all-gather stage, each closed by one peer-to-peer flag write (vllm-project/vllm@036bb6855
// csrc/custom_all_reduce.cuh cross_device_reduce_2stage, start_sync/end_sync "Latency = 1 p2p
// write"), so two link latencies whatever n, with the ring's 2 (n-1)/n bytes moved per GPU.
bool StepModel::SameFiguresAs(const StepModel& o) const {
  const auto figures = [](const StepModel& s) {
    return std::tie(s.ranks_, s.tp_, s.hidden_, s.layers_, s.kv_per_token_per_gpu_,
                    s.kv_read_factor_, s.weights_bytes_, s.routed_bytes_, s.k_over_e_,
                    s.linear_flops_per_token_, s.bandwidth_, s.prefill_flops_, s.decode_flops_,
                    s.attention_flops_, s.prefill_attention_flops_per_context_,
                    s.decode_attention_flops_per_context_, s.overhead_per_pass_,
                    s.decode_overhead_per_pass_, s.host_per_pass_, s.decode_host_per_pass_,
                    s.dequant_bytes_, s.link_bytes_per_second_, s.link_latency_seconds_,
                    s.custom_allreduce_);
  };
  // The model, the int, 22 doubles and the bool above (LP64): a field added to StepModel must be
  // added to `figures` too. The size catches a new field of 8 bytes or more; a bool or int placed
  // in the padding after custom_allreduce_ or ranks_ would not change it, so check by hand.
  static_assert(sizeof(StepModel) == sizeof(workload::Model) + 8 + 22 * 8 + 8,
                "StepModel's fields changed: update SameFiguresAs");
  return figures(*this) == figures(o);
}

double StepModel::AllReduce(double bytes) const {
  estimate::Link link;
  link.bytes_per_second = link_bytes_per_second_;
  link.latency_seconds = link_latency_seconds_;
  constexpr double kCustomAllReduceMaxBytes = 8192.0 * 1024;
  if (!custom_allreduce_ || bytes >= kCustomAllReduceMaxBytes || ranks_ <= 1 || bytes <= 0 ||
      link.bytes_per_second <= 0) {
    return estimate::AllReduceSeconds(bytes, ranks_, link);
  }
  const double n = ranks_;
  return 2 * (n - 1) / n * bytes / link.bytes_per_second + 2 * link.latency_seconds;
}

Result<ServeEstimate> EstimateServing(const ServeRequest& r, const ServeCalibration& calibration) {
  FULCRUM_RETURN_IF_ERROR(Validate(r));
  const workload::Model& m = r.model;

  const double tp = static_cast<double>(r.tp);
  const double batch = static_cast<double>(r.batch);
  const double hidden = static_cast<double>(m.hidden);
  const double act_bytes = 2;  // 16-bit activations in every precision here

  ServeEstimate out;
  ServeMemory& mem = out.memory;
  mem.weights_bytes = WeightBytes(m, r.precision);
  const MlaPath mla_path = DecodeMlaPath(r.engine.engine);
  mem.kv_cache_bytes_per_token = KvCacheBytesPerToken(m, r.kv_precision, mla_path);
  const int64_t seq_tokens = CachedTokens(m, r.input_len + r.output_len);
  mem.kv_cache_bytes = batch * static_cast<double>(seq_tokens) * mem.kv_cache_bytes_per_token;
  const double kv_per_token_per_gpu =
      mem.kv_cache_bytes_per_token * KvShareOnGpu(m, r.tp, mla_path);
  const double weights_per_gpu = mem.weights_bytes / tp;
  // Forward workspace of the largest pass: q/k/v, gate+up (the MLP intermediate), the residual
  // stream, and fp32 logits of the sampled positions (the whole vocabulary, gathered). The
  // largest pass is a prefill chunk, whose attention reads Q, K and V at their kernel widths
  // (workload::QDim/KDim/VDim: MLA's prompt tokens attend with K and V expanded per head,
  // AttentionFlopsPerContextToken).
  const double chunk = static_cast<double>(r.max_batched_tokens);
  const double mlp_width = static_cast<double>(
      workload::IsMoe(m) ? workload::ExpertFfnHidden(m) * m.experts_per_token : m.ffn_hidden);
  mem.activation_bytes_per_gpu =
      chunk * act_bytes *
          (static_cast<double>(workload::QDim(m) + workload::KDim(m) + workload::VDim(m)) / tp +
           2 * mlp_width / tp + hidden) +
      static_cast<double>(kMaxNumSeqs) * static_cast<double>(m.vocab) * 4;
  mem.overhead_bytes_per_gpu = kOverheadBytesPerGpu;
  mem.budget_bytes_per_gpu = kGpuMemoryUtilization * r.gpu.memory_gib * kGiB;
  const double fixed = weights_per_gpu + mem.activation_bytes_per_gpu + mem.overhead_bytes_per_gpu;
  mem.peak_bytes_per_gpu = fixed + mem.kv_cache_bytes * KvShareOnGpu(m, r.tp, mla_path);
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

  FULCRUM_ASSIGN_OR_RETURN(StepModel step, StepModel::Make(r, calibration));
  ServeSpeed& sp = out.speed;
  const double input = static_cast<double>(r.input_len);
  const double output = static_cast<double>(r.output_len);
  const double context = static_cast<double>(CachedTokens(m, r.input_len + r.output_len / 2));
  const double prompt_context = static_cast<double>(CachedTokens(m, r.input_len));
  if (r.batching == Batching::kStatic) {
    // All prompts in one compute-bound pass, then batch-wide decode steps.
    sp.prefill_seconds = step.Seconds(0, 0, batch * input, prompt_context);
    step.DecodeParts(batch, context, sp);
    sp.tpot_seconds = step.Seconds(batch, context, 0, 0);
    sp.output_tokens_per_second = batch * output / (sp.prefill_seconds + output * sp.tpot_seconds);
    sp.prefill_tokens_per_second = batch * input / sp.prefill_seconds;
    return out;
  }
  // Continuous: the new request's prompt in chunks of the step's token budget left after the
  // batch - 1 running decodes (at least one token per step), each step also decoding those.
  const double running = batch - 1;
  const double budget = std::max(1.0, static_cast<double>(r.max_batched_tokens) - running);
  sp.prefill_seconds = step.ChunkedPrefillSeconds(running, context, input, budget, prompt_context);
  // Steady state: each of the batch's sequences brings `input` prompt tokens over its `output`
  // steps, interleaved into the decode steps.
  const double interleaved = batch * input / output;
  step.DecodeParts(batch, context, sp);
  sp.tpot_seconds = step.Seconds(batch, context, interleaved, prompt_context);
  sp.output_tokens_per_second = batch / sp.tpot_seconds;
  sp.prefill_tokens_per_second = interleaved / sp.tpot_seconds;
  return out;
}

}  // namespace fulcrum::serve
