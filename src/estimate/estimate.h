// One configuration, evaluated: what `fulcrum estimate` and `fulcrum fit` compute and print.
// EstimateRequest holds the user's choices as given (flags or a spec); ResolveEstimateInput turns
// it into a validated Model + Training + GPU (loading presets / HF configs, deriving dp and the
// global batch, refusing inconsistent input); Evaluate runs the memory model. The JSON
// renderer fills named parts of a document so other estimators (step time, cost) can add
// theirs ("time") beside them. Values; thread-compatible.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "catalog/catalog.h"
#include "core/status.h"
#include "estimate/memory.h"
#include "estimate/resume.h"
#include "workload/model.h"
#include "workload/training.h"

namespace fulcrum::estimate {

// Defaults of the node: 8 GPUs per node; inter-node network 400 Gbit/s per node (AWS p4d.24xlarge
// and p5 EFA minimum, AWS EC2 accelerated-computing instance docs).
inline constexpr int64_t kDefaultGpusPerNode = 8;
inline constexpr double kDefaultNetworkGbps = 400;

struct EstimateRequest {
  // Model: exactly one of preset / hf_config / a custom shape (layers > 0).
  std::string model;      // preset name (catalog/models/<name>.yaml)
  std::string hf_config;  // path to a HuggingFace config.json
  int64_t layers = 0, hidden = 0, heads = 0, kv_heads = 0, ffn_hidden = 0, vocab = 0;
  int64_t head_dim = 0;  // one attention head's width (0 = hidden / heads)
  std::string mlp;       // gelu | swiglu ("" = gelu)
  bool tied_embeddings = false;
  int64_t experts = 0, experts_per_token = 0;  // custom mixture-of-experts shape (0 = dense)

  // Hardware.
  std::string gpu;   // catalog name or alias
  int64_t gpus = 0;  // 0 = tp * pp * dp
  int64_t gpus_per_node = kDefaultGpusPerNode;
  std::string interconnect;  // nvlink | pcie ("" = nvlink when the GPU has NVLink)
  double network_gbps = kDefaultNetworkGbps;

  // Training (strings are parsed with the workload:: parsers; "" = default).
  std::string precision, optimizer, method, recompute, framework, grad_precision, offload;
  std::string checkpoint_format;  // workload::ParseCheckpointFormat ("" = the framework's)
  std::string recompute_modules;  // workload::ParseRecomputeModules ("" = core_attn)
  std::string exp_avg_dtype, exp_avg_sq_dtype;  // workload::ParseMomentDtype ("" = fp32)
  std::string optimizer_kernels;                // workload::ParseOptimizerKernels ("" = fused)
  std::string cross_entropy;      // workload::ParseCrossEntropy ("" = the framework's own)
  std::string pipeline_schedule;  // workload::ParsePipelineSchedule ("" = 1f1b)
  std::string moe_dispatcher;     // workload::ParseMoeDispatcher ("" = alltoall)
  int64_t moe_router_groups = 0, moe_router_group_topk = 0;  // group-limited routing (0 = none)
  int64_t lora_rank = 16;
  int64_t tp = 1, pp = 1, vpp = 1, dp = 0;  // dp 0 = gpus / (tp * pp * cp)
  int64_t cp = 1, ep = 1;
  int64_t expert_tp = 0;  // the routed experts' tensor parallelism (0 = tp)
  int64_t dp_shard = 0;   // HSDP shard group (0 = all of dp)
  int64_t first_stage_layers = 0, last_stage_layers = 0;  // 0 = automatic split
  int64_t zero = 0;
  bool sequence_parallel = false;
  int64_t micro_batch = 1;
  int64_t global_batch = 0;     // 0 = micro_batch * dp
  int64_t seq_len = 0;          // 0 = min(2048, the model's max_seq_len when it has one)
  int64_t mean_seq_len = 0;     // mean padded tokens per sequence the GPUs run (0 = seq_len)
  int64_t head_tokens = 0;      // tokens per sequence the output head runs on (0 = all)
  int64_t head_width = 0;       // output head's outputs per token (0 = the vocabulary)
  std::string flash_attention;  // on | off ("" = on)
  bool fp8_params = false;      // Transformer Engine FP8 weights (fp8 + megatron)
  bool activation_fp8_input_store = false;  // Megatron-Core's activation_func_fp8_input_store
  bool store_param_remainders = false;      // apex DistributedFusedAdam's (megatron, bf16 weights)
  bool fp8_activation_cache = false;        // DeepSeek-V3's FP8 / E5M6 activation caching
  int64_t microbatch_group_size = 0;        // interleaved schedule's group size (0 = pp)
  bool moe_a2a_overlap = false;             // Megatron-Core's --overlap-moe-expert-parallel-comm
  bool overlap_comm = false;                // DeepSpeed's zero_optimization.overlap_comm
  std::string backward_prefetch;            // FSDP's backward_prefetch ("" = BACKWARD_PRE)
  bool hf_gradient_checkpointing = false;   // the HF Trainer's --gradient_checkpointing
};

struct EstimateInput {
  workload::Model model;
  workload::Training training;
  catalog::Gpu gpu;
  int64_t gpus = 1;
  int64_t gpus_per_node = kDefaultGpusPerNode;
  catalog::Interconnect interconnect = catalog::Interconnect::kNvlink;
  double network_gbps = kDefaultNetworkGbps;
};

// Loads the model (catalog_dir/models for presets), resolves the GPU in `catalog`, parses and
// validates the training setup. InvalidInput / NotFound name the flag at fault.
Result<EstimateInput> ResolveEstimateInput(const EstimateRequest& request,
                                           const catalog::Catalog& catalog,
                                           const std::string& catalog_dir);
// Only the model part of the request (preset, HF config or custom shape).
Result<workload::Model> ResolveModel(const EstimateRequest& request,
                                     const std::string& catalog_dir);

struct EstimateResult {
  EstimateInput input;
  double parameters = 0;
  MemoryBreakdown memory;
  ResumeMemory resume;  // the same run resumed from its checkpoint
  double capacity_bytes = 0;
  // Of the larger of the fresh and the resume peak (FitPeakBytes): what must fit.
  double headroom_fraction = 0;
  // The same peak without the allocator's reserve (FitUnreservedPeakBytes): what "does not fit"
  // judges (ClassifyFit).
  double unreserved_peak_bytes = 0;
  FitVerdict verdict = FitVerdict::kFits;
};

EstimateResult Evaluate(const EstimateInput& input);

// Whether the GPU runs `precision` in hardware (a sourced dense peak for it in the catalog: bf16
// needs bf16_tflops, fp16 fp16_tflops, fp8 fp8_tflops; fp32 runs everywhere with an fp32 or tf32
// figure). No fallback: V100 has no bf16, A100 no fp8 (NVIDIA datasheets).
bool PrecisionSupported(const catalog::Gpu& gpu, workload::Precision precision);
// "bf16, fp16, fp32" (the precisions the GPU supports, for messages).
std::string SupportedPrecisionNames(const catalog::Gpu& gpu);
// InvalidInput naming the GPU and the precisions it supports when it cannot run `precision`.
Status CheckPrecisionSupported(const catalog::Gpu& gpu, workload::Precision precision);

// Sets doc["model"] = {name, parameters, active_parameters, experts, experts_per_token, ...},
// doc["memory"] = {weights_bytes, ..., peak_bytes_per_gpu, peak_at_resume_bytes_per_gpu,
// checkpoint_format, resume_load_transient_bytes, resume_retained_bytes, fit_bound ("fresh" |
// "resume"), capacity_bytes, headroom_fraction, unreserved_peak_bytes_per_gpu, fits, verdict}
// (fits, verdict and headroom of the larger peak; fits and "does not fit" of it without the
// allocator's reserve), doc["setup"] and doc["parallel"] = {tp, pp, vpp, cp, dp, ep, dp_shard,
// dp_replicate, stage_layers: {first, middle, last}}.
void AppendEstimateJson(const EstimateResult& result, nlohmann::json& doc);
// The memory breakdown as a text table (core/table.h) with the verdict line.
std::string RenderMemoryTable(const EstimateResult& result);
// The flags that reproduce `input` on the command line (for "ways out" and reports).
std::string DescribeSetup(const EstimateInput& input);

}  // namespace fulcrum::estimate
