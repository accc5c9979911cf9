#include "estimate/compute.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>

#include "estimate/comm.h"

namespace fulcrum::estimate {
namespace {

using workload::Method;
using workload::Model;
using workload::Precision;
using workload::Recompute;
using workload::Training;

constexpr double kInf = std::numeric_limits<double>::infinity();

// Time of a (m x k) * (k x n) GEMM at `peak` (already scaled by the architecture's large-GEMM
// efficiency), falling off for small dimensions: prod d / (d + gemm_half_dim).
double GemmSeconds(double m, double n, double k, double peak, const TimeCalibration& c) {
  if (m <= 0 || n <= 0 || k <= 0) return 0;
  const double d0 = c.gemm_half_dim;
  const double efficiency = (m / (m + d0)) * (n / (n + d0)) * (k / (k + d0));
  return 2.0 * m * n * k / (peak * efficiency);
}

// The large-GEMM fraction of the peak: the architecture's, scaled for plain fp32 on CUDA cores.
double GemmMaxEfficiency(const Hardware& hw, const TimeCalibration& c) {
  const double e = hw.efficiency.gemm_max_efficiency;
  return hw.simt_fp32 ? std::min(1.0, e * c.fp32_simt_relative_efficiency) : e;
}

bool IsLora(const Training& t) { return t.method == Method::kLora || t.method == Method::kQlora; }

// Per-layer, per-micro-batch forward figures on one GPU (already divided by tp).
struct LayerForward {
  double seconds = 0;            // GEMMs + attention + elementwise (+ QLoRA de-quantisation)
  double attention_seconds = 0;  // the s*s part (what selective recompute repeats)
  double flops = 0;              // model FLOPs of the forward on this GPU
  double attention_flops = 0;
};

LayerForward EstimateLayerForward(const Model& model, const Training& tr, const Hardware& hw,
                                  const TimeCalibration& c) {
  LayerForward out;
  const double t = static_cast<double>(tr.tp);
  const double seq = static_cast<double>(tr.seq_len);
  const double tokens = static_cast<double>(tr.micro_batch) * seq;
  const double h = static_cast<double>(model.hidden);
  const double heads = static_cast<double>(model.heads);
  const double head_dim = h / heads;
  const double kv_dim = static_cast<double>(workload::KvDim(model));
  const double f = static_cast<double>(model.ffn_hidden);
  const double ffn_in = model.mlp == workload::MlpKind::kSwiglu ? 2 * f : f;
  const bool fp8_units = tr.precision == Precision::kFp8 && hw.peak_flops > hw.peak_flops_16bit;
  const double fp8_scale = fp8_units ? c.fp8_gemm_relative_efficiency : 1;
  const double peak = hw.peak_flops * GemmMaxEfficiency(hw, c) * fp8_scale;
  const double peak16 = hw.peak_flops_16bit > 0 ? hw.peak_flops_16bit : hw.peak_flops;
  const double bytes = ActivationBytes(tr.precision);
  const double mem_bw = hw.memory_bytes_per_second * c.memory_bandwidth_efficiency;

  const double gemm_seconds = GemmSeconds(tokens, (h + 2 * kv_dim) / t, h, peak, c) +
                              GemmSeconds(tokens, h, h / t, peak, c) +
                              GemmSeconds(tokens, ffn_in / t, h, peak, c) +
                              GemmSeconds(tokens, h, f / t, peak, c);
  const double gemm_flops = 2 * tokens * h * ((h + 2 * kv_dim) + h + ffn_in + f) / t;
  // QK^T and AV: 2 * 2 * b * s * s * h forward (the full square, as PaLM and Megatron count).
  out.attention_flops = 4.0 * tokens * seq * h / t;
  if (tr.flash_attention) {
    // The fused kernel executes only the causal half of the square.
    out.attention_seconds =
        0.5 * out.attention_flops / (peak16 * hw.efficiency.flash_attention_efficiency);
  } else {
    const double heads_local = heads / t;
    const double peak_gemm16 = peak16 * GemmMaxEfficiency(hw, c);
    const double per_head = GemmSeconds(seq, seq, head_dim, peak_gemm16, c) +
                            GemmSeconds(seq, head_dim, seq, peak_gemm16, c);
    const double score_bytes = c.attention_score_elements * static_cast<double>(tr.micro_batch) *
                               heads_local * seq * seq * bytes;
    out.attention_seconds =
        per_head * static_cast<double>(tr.micro_batch) * heads_local + score_bytes / mem_bw;
  }
  const double hidden_share = tr.sequence_parallel ? h / t : h;
  const double elementwise_bytes =
      tokens * bytes *
      (c.elementwise_hidden_elements * hidden_share + c.elementwise_ffn_elements * ffn_in / t);
  double dequant_seconds = 0;
  if (tr.method == Method::kQlora) {
    dequant_seconds =
        workload::LayerParameterCount(model) / t * c.qlora_dequant_bytes_per_param / mem_bw;
  }
  out.seconds = gemm_seconds + out.attention_seconds + elementwise_bytes / mem_bw + dequant_seconds;
  out.flops = gemm_flops + out.attention_flops;
  return out;
}

// The link a group of `ranks` GPUs, `stride` ranks apart, communicates over (rank order tp, dp,
// pp: tp innermost, as Megatron and torchtitan lay them out).
Link GroupLink(int64_t ranks, int64_t stride, const Hardware& hw, const TimeCalibration& c) {
  const double intra_eff = hw.nvlink ? c.nvlink_efficiency : c.pcie_efficiency;
  const Link intra{hw.intra_node_bytes_per_second * intra_eff, c.intra_node_latency_seconds};
  if (static_cast<double>(ranks) * static_cast<double>(stride) <= hw.gpus_per_node) return intra;
  // Spans nodes: the group's GPUs in one node share the node's network; hierarchical rings run
  // at about the node's aggregate NIC bandwidth when every GPU of the node is in the group.
  const double in_node = std::max(1.0, static_cast<double>(hw.gpus_per_node) / stride);
  const double share = std::min(1.0, in_node / hw.gpus_per_node);
  const double net = hw.network_bytes_per_second_per_node * c.network_efficiency * share;
  return Link{std::min(intra.bytes_per_second, net), c.inter_node_latency_seconds};
}

// Generic (FLOPs-per-sample) models: data parallel only.
StepTime EstimateGenericStep(const Model& model, const Training& tr, const Hardware& hw,
                             const TimeCalibration& c) {
  StepTime out;
  const double peak16 = hw.peak_flops_16bit > 0 ? hw.peak_flops_16bit : hw.peak_flops;
  const double samples_per_gpu = static_cast<double>(tr.global_batch) / static_cast<double>(tr.dp);
  // Small micro-batches reach a smaller fraction of the peak (TimeCalibration::generic_half_batch).
  const double b = static_cast<double>(tr.micro_batch);
  const double large_batch =
      hw.simt_fp32 ? std::min(1.0, c.generic_model_efficiency * c.fp32_simt_relative_efficiency)
                   : c.generic_model_efficiency;
  const double efficiency = large_batch * b / (b + c.generic_half_batch);
  out.compute_seconds =
      3.0 * model.generic_forward_flops_per_sample * samples_per_gpu / (peak16 * efficiency);
  const double grad_bytes = model.generic_parameters * ActivationBytes(tr.precision);
  const Link link = GroupLink(tr.dp, 1, hw, c);
  out.communication_seconds = AllReduceSeconds(grad_bytes, static_cast<int>(tr.dp), link);
  out.exposed_seconds =
      std::max(0.0, out.communication_seconds - c.dp_overlap_fraction * out.compute_seconds);
  out.step_seconds = out.compute_seconds + out.exposed_seconds;
  out.tokens_per_second_per_gpu = samples_per_gpu / out.step_seconds;
  out.mfu = out.hfu =
      3.0 * model.generic_forward_flops_per_sample * samples_per_gpu / (out.step_seconds * peak16);
  return out;
}

}  // namespace

const ArchitectureEfficiency& EfficiencyFor(std::string_view architecture,
                                            const TimeCalibration& calibration) {
  auto is = [&](std::string_view name) {
    if (architecture.size() != name.size()) return false;
    for (size_t i = 0; i < name.size(); ++i) {
      if (std::tolower(static_cast<unsigned char>(architecture[i])) != name[i]) return false;
    }
    return true;
  };
  if (is("ampere")) return calibration.ampere;
  if (is("hopper")) return calibration.hopper;
  if (is("volta")) return calibration.volta;
  return calibration.other;
}

double ActivationBytes(Precision precision) {
  return workload::IsFp32Storage(precision) ? 4.0 : 2.0;
}

double TrainableParameterCount(const Model& model, const Training& training) {
  if (!IsLora(training) || model.kind == workload::ModelKind::kGeneric) {
    return workload::ParameterCount(model);
  }
  // LoRA adds rank * (in + out) per targeted matrix (Hu et al. 2021, arXiv 2106.09685).
  const double r = static_cast<double>(training.lora_rank);
  const double h = static_cast<double>(model.hidden);
  const double kv = static_cast<double>(workload::KvDim(model));
  const double f = static_cast<double>(model.ffn_hidden);
  double per_layer = 0;
  if (training.lora_targets & workload::kLoraQ) per_layer += r * (h + h);
  if (training.lora_targets & workload::kLoraK) per_layer += r * (h + kv);
  if (training.lora_targets & workload::kLoraV) per_layer += r * (h + kv);
  if (training.lora_targets & workload::kLoraO) per_layer += r * (h + h);
  if (training.lora_targets & workload::kLoraMlp) {
    per_layer += (model.mlp == workload::MlpKind::kSwiglu ? 3 : 2) * r * (h + f);
  }
  return per_layer * static_cast<double>(model.layers);
}

double ModelFlopsPerToken(const Model& model, const Training& training) {
  if (model.kind == workload::ModelKind::kGeneric) {
    return 3.0 * model.generic_forward_flops_per_sample;
  }
  const double h = static_cast<double>(model.hidden);
  const double kv_dim = static_cast<double>(workload::KvDim(model));
  const double ffn_mats = model.mlp == workload::MlpKind::kSwiglu ? 3 : 2;
  const double f = static_cast<double>(model.ffn_hidden);
  const double layer_params = h * (h + 2 * kv_dim) + h * h + ffn_mats * h * f;
  const double passes = IsLora(training) ? 4.0 : 6.0;  // forward 2 + backward 4 (or 2: no wgrad)
  const double layers = static_cast<double>(model.layers);
  const double seq = static_cast<double>(training.seq_len);
  return passes * layers * layer_params + 2.0 * passes * layers * h * seq +
         passes * h * static_cast<double>(model.vocab);
}

StepTime EstimateStepTime(const Model& model, const Training& tr, const Hardware& hw,
                          const TimeCalibration& c) {
  StepTime out;
  out.step_seconds = kInf;
  if (tr.tp < 1 || tr.pp < 1 || tr.dp < 1 || tr.vpp < 1 || tr.micro_batch < 1 ||
      tr.global_batch < 1 || hw.peak_flops <= 0 || hw.memory_bytes_per_second <= 0) {
    return out;
  }
  if (model.kind == workload::ModelKind::kGeneric) {
    if (model.generic_forward_flops_per_sample <= 0) return out;
    return EstimateGenericStep(model, tr, hw, c);
  }
  if (model.layers <= 0 || model.hidden <= 0 || model.heads <= 0 || tr.seq_len <= 0) return out;
  const double t = static_cast<double>(tr.tp), p = static_cast<double>(tr.pp);
  const double d = static_cast<double>(tr.dp), v = static_cast<double>(tr.vpp);
  const double gpus = t * p * d;
  const double tokens_mb = static_cast<double>(tr.micro_batch * tr.seq_len);
  const double micro_batches = std::max(1.0, std::ceil(static_cast<double>(tr.global_batch) /
                                                       (d * static_cast<double>(tr.micro_batch))));
  const double bytes = ActivationBytes(tr.precision);
  const double mem_bw = hw.memory_bytes_per_second * c.memory_bandwidth_efficiency;
  const double h = static_cast<double>(model.hidden);
  const double vocab = static_cast<double>(model.vocab);
  const bool lora = IsLora(tr);

  // --- compute per layer per micro-batch: backward = 2x forward (1x without weight grads) ---
  const LayerForward fwd = EstimateLayerForward(model, tr, hw, c);
  const double backward_factor = lora ? 1.0 : 2.0;
  double layer_seconds = (1.0 + backward_factor) * fwd.seconds + c.per_layer_overhead_seconds;
  double recompute_flops = 0;  // per layer per micro-batch on this GPU
  if (tr.recompute == Recompute::kFull) {
    layer_seconds += fwd.seconds;
    recompute_flops = fwd.flops;
  } else if (tr.recompute == Recompute::kSelective && !tr.flash_attention) {
    layer_seconds += fwd.attention_seconds;
    recompute_flops = fwd.attention_flops;
  }
  // Logits + cross-entropy on the last stage.
  const double peak_gemm16 = hw.peak_flops_16bit * GemmMaxEfficiency(hw, c);
  const double logits_seconds =
      (1.0 + backward_factor) * GemmSeconds(tokens_mb, vocab / t, h, peak_gemm16, c) +
      3.0 * tokens_mb * vocab / t * 4.0 * bytes / mem_bw;

  // --- tensor parallel: 2 all-reduces forward, 2 backward (+2 with full recompute) -----------
  const Link tp_link = GroupLink(tr.tp, 1, hw, c);
  const double tp_collectives = tr.recompute == Recompute::kFull ? 6 : 4;
  const double tp_layer_seconds =
      tp_collectives * AllReduceSeconds(tokens_mb * h * bytes, static_cast<int>(tr.tp), tp_link);

  // --- pipeline: per-micro-batch stage time, bubble (p-1)/(m*v) of the ideal time ----------
  const double layers_per_stage = std::ceil(static_cast<double>(model.layers) / p);
  const Link pp_link = GroupLink(tr.pp, tr.tp * tr.dp, hw, c);
  const double pp_message = tokens_mb * h * bytes / (tr.sequence_parallel ? t : 1);
  const double pp_seconds = tr.pp > 1 ? 2 * SendSeconds(pp_message, pp_link) * v : 0;
  const double compute_mb = layers_per_stage * layer_seconds + logits_seconds;
  const double tp_mb = layers_per_stage * tp_layer_seconds;
  const double stage_mb = compute_mb + tp_mb + pp_seconds;
  const double bubble = (p - 1) / v * stage_mb;

  // --- data parallel ------------------------------------------------------------------------
  const double trainable = TrainableParameterCount(model, tr);
  const double all_params = workload::ParameterCount(model);
  const Link dp_link = GroupLink(tr.dp, tr.tp, hw, c);
  const int dp_ranks = static_cast<int>(tr.dp);
  const double grad_bytes = trainable / (t * p) * bytes;
  const double param_bytes = all_params / (t * p) * bytes;
  const double tail = 1.0 / std::max(1.0, layers_per_stage);  // last bucket / first gather
  double dp_comm = 0, dp_exposed = 0;
  if (tr.zero_stage >= 3) {
    // Per micro-batch: gather parameters for forward and backward, reduce-scatter gradients.
    const double per_mb = 2 * AllGatherSeconds(param_bytes, dp_ranks, dp_link) +
                          ReduceScatterSeconds(grad_bytes, dp_ranks, dp_link);
    dp_comm = micro_batches * per_mb;
    const double hidden = c.dp_overlap_fraction * compute_mb;
    dp_exposed = micro_batches * (std::max(0.0, per_mb - hidden) + tail * per_mb);
  } else {
    // ZeRO 0: all-reduce; ZeRO 1/2: reduce-scatter of grads + all-gather of updated params.
    dp_comm = tr.zero_stage == 0 ? AllReduceSeconds(grad_bytes, dp_ranks, dp_link)
                                 : ReduceScatterSeconds(grad_bytes, dp_ranks, dp_link) +
                                       AllGatherSeconds(grad_bytes, dp_ranks, dp_link);
    const double hidden = c.dp_overlap_fraction * (2.0 / 3.0) * compute_mb;
    dp_exposed = std::max(0.0, dp_comm - hidden) + tail * dp_comm;
  }

  // --- optimizer step (memory-bound) --------------------------------------------------------
  const double local_trainable = trainable / (t * p) / (tr.zero_stage >= 1 ? d : 1.0);
  const double optimizer_seconds = local_trainable * c.optimizer_bytes_per_param / mem_bw;

  out.compute_seconds = micro_batches * compute_mb + optimizer_seconds;
  out.communication_seconds = micro_batches * (tp_mb + pp_seconds) + dp_comm;
  out.bubble_seconds = bubble;
  out.exposed_seconds = micro_batches * (tp_mb + pp_seconds) + dp_exposed;
  out.step_seconds = out.compute_seconds + out.bubble_seconds + out.exposed_seconds;
  const double tokens_step = micro_batches * d * tokens_mb;
  out.tokens_per_second_per_gpu = tokens_step / out.step_seconds / gpus;
  const double model_flops = ModelFlopsPerToken(model, tr) * tokens_step;
  const double hw_flops =
      model_flops + recompute_flops * t * static_cast<double>(model.layers) * micro_batches * d;
  out.mfu = model_flops / (out.step_seconds * hw.peak_flops * gpus);
  out.hfu = hw_flops / (out.step_seconds * hw.peak_flops * gpus);
  return out;
}

std::optional<Hardware> HardwareFor(const catalog::Gpu& gpu, const catalog::Offer& offer,
                                    Precision precision, const TimeCalibration& calibration) {
  Hardware hw;
  const std::optional<double> bf16 = gpu.bf16_tflops ? gpu.bf16_tflops : gpu.fp16_tflops;
  std::optional<double> peak;
  switch (precision) {
    case Precision::kFp32:
      peak = gpu.fp32_tflops;
      break;
    case Precision::kFp16Mixed:
      peak = gpu.fp16_tflops ? gpu.fp16_tflops : gpu.bf16_tflops;
      break;
    case Precision::kBf16Mixed:
    case Precision::kPureBf16:
      peak = bf16;
      break;
    case Precision::kFp8:
      peak = gpu.fp8_tflops ? gpu.fp8_tflops : bf16;
      break;
    case Precision::kTf32:
      peak = gpu.tf32_tflops ? gpu.tf32_tflops : gpu.fp32_tflops;
      break;
  }
  if (!peak || *peak <= 0 || gpu.memory_bandwidth_gbps <= 0) return std::nullopt;
  hw.peak_flops = *peak * 1e12;
  const bool fp32 = workload::IsFp32Storage(precision);
  hw.peak_flops_16bit = (fp32 ? *peak : bf16.value_or(*peak)) * 1e12;
  hw.simt_fp32 =
      precision == Precision::kFp32 || (precision == Precision::kTf32 && !gpu.tf32_tflops);
  if (precision == Precision::kFp8 && !gpu.fp8_tflops) {
    // No FP8 units: the layout runs as BF16 (fp8_gemm_relative_efficiency must not apply).
    hw.peak_flops = hw.peak_flops_16bit;
  }
  hw.memory_bytes_per_second = gpu.memory_bandwidth_gbps * 1e9;
  hw.nvlink = offer.interconnect == catalog::Interconnect::kNvlink && gpu.nvlink_gbps.has_value();
  hw.intra_node_bytes_per_second =
      hw.nvlink ? *gpu.nvlink_gbps / 2.0 * 1e9 : PcieGbytesPerSecond(gpu.pcie_gen) * 1e9;
  hw.gpus_per_node = std::max(1, offer.gpu_count);
  hw.network_bytes_per_second_per_node = offer.network_gbps.value_or(0) * 1e9 / 8.0;
  hw.efficiency = EfficiencyFor(gpu.architecture, calibration);
  return hw;
}

}  // namespace fulcrum::estimate
