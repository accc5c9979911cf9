// Inference sizing for one configuration (model x GPU x tensor parallelism x batch): memory
// (weights per precision, KV cache per token GQA/MQA-aware with sliding windows, activation
// workspace, vLLM's framework reserve), the maximum concurrent sequences that fit, and speed
// (prefill compute-bound, decode bandwidth-bound turning compute-bound at large batch, tensor-
// parallel all-reduce per layer). Pure functions on value types, thread-safe. Bytes, seconds,
// tokens per second in the names; "total" figures are the whole model's, "per_gpu" one GPU's.
#pragma once

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
// weight-only formats (AWQ/GPTQ) dequantise to 16-bit and run 16-bit matmuls.
enum class Precision { kBf16, kFp16, kFp8, kFp4, kInt8, kInt8WeightOnly, kInt4WeightOnly };
// KV-cache element format (vLLM --kv-cache-dtype: auto = the 16-bit model dtype, fp8).
enum class KvPrecision { kBf16, kFp16, kFp8 };

// "bf16 fp16 fp8 fp4 int8 int8-weight-only int4-weight-only"; InvalidInput naming the nearest.
Result<Precision> ParsePrecision(std::string_view text);
Result<KvPrecision> ParseKvPrecision(std::string_view text);
std::string_view PrecisionName(Precision precision);
// The precisions of the list above that `gpu` has tensor-core support for (from the catalog).
std::vector<Precision> SupportedPrecisions(const catalog::Gpu& gpu);
// Ok, or InvalidInput "GPU X has no <precision> tensor cores; it supports: ..." (detail field
// "precision"/"kv-precision", nearest = the supported names).
Status CheckSupport(const catalog::Gpu& gpu, Precision precision, KvPrecision kv);

struct ServeRequest {
  workload::Model model;
  catalog::Gpu gpu;
  catalog::Interconnect interconnect = catalog::Interconnect::kNvlink;
  int64_t tp = 1;
  int64_t batch = 1;  // concurrent sequences
  int64_t input_len = 512;
  int64_t output_len = 128;
  Precision precision = Precision::kBf16;
  KvPrecision kv_precision = KvPrecision::kBf16;
};

struct ServeMemory {
  double weights_bytes = 0;             // whole model
  double kv_cache_bytes_per_token = 0;  // whole model, one token of one sequence
  double kv_cache_bytes = 0;            // whole model, batch x (input + output) tokens (windowed)
  double activation_bytes_per_gpu = 0;  // forward workspace of the largest prefill chunk
  double overhead_bytes_per_gpu = 0;    // CUDA context, CUDA graphs, NCCL buffers
  double peak_bytes_per_gpu = 0;        // weights + KV + activations + overhead, one GPU
  double budget_bytes_per_gpu = 0;      // gpu_memory_utilization x capacity
  int64_t max_concurrency = 0;          // sequences of input+output tokens that fit in the budget
  bool fits = false;                    // peak <= budget
};

struct ServeSpeed {
  double prefill_seconds = 0;  // the whole batch's prompts: the last sequence's first token
  double tpot_seconds = 0;     // one decode step at the mean context: per output token
  double decode_memory_seconds = 0, decode_compute_seconds = 0, decode_comm_seconds = 0;
  double output_tokens_per_second = 0;   // batch x output over prefill + decode wall time
  double prefill_tokens_per_second = 0;  // batch x input over prefill time
};

struct ServeEstimate {
  ServeMemory memory;
  ServeSpeed speed;
};

// Validated request (tp divides the heads, positive lengths, supported precision) -> estimate.
Result<ServeEstimate> EstimateServing(
    const ServeRequest& request,
    const estimate::TimeCalibration& calibration = estimate::DefaultTimeCalibration());

// Pieces, exposed for tests and for serve-plan.
double WeightBytes(const workload::Model& model, Precision precision);
double KvCacheBytesPerToken(const workload::Model& model, KvPrecision kv);
// Tokens of one sequence the KV cache holds at `context` tokens (the sliding window caps it).
int64_t CachedTokens(const workload::Model& model, int64_t context);

}  // namespace fulcrum::serve
