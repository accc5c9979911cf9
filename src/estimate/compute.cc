#include "estimate/compute.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>

#include "estimate/comm.h"
#include "estimate/memory.h"

namespace fulcrum::estimate {
namespace {

using workload::Method;
using workload::Model;
using workload::ModelCounts;
using workload::Precision;
using workload::Recompute;
using workload::Training;

constexpr double kInf = std::numeric_limits<double>::infinity();

// Elementwise traffic of Megatron-LM's fused kernels, counted from its code rather than fitted
// (activation elements read + written per token per layer; a dropout mask is 1 byte, half a
// 16-bit element; dropout as the model has it, workload::Model::dropout). Forward: 2 layer norms
// (read x, write y: 2h each; apex / TE fused layer norm) + 2 fused bias-dropout-adds (read the
// branch output and the residual, write the sum (3h) and the mask (0.5h)) = 11h, 10h without
// dropout; the activation (fused bias-GeLU / SwiGLU: read its input, write its output). Backward:
// 2 layer-norm backwards (read x and dy, write dx: 3h each) + 2 residual-gradient sums (read 2,
// write 1: 3h each) + 2 dropout backwards (read dy and the mask, write dx: 2.5h each) = 17h, 12h
// without dropout; the activation backward reads its input and dy and writes dx. Megatron-LM
// megatron/model/transformer.py (bias_dropout_add_fused_train), fused_bias_gelu.py,
// fused_layer_norm.py; Korthikanti et al. 2022 (arXiv 2205.05198) section 4.1 lists the same
// tensors. Plain attention (FusedScaleMaskSoftmax, then dropout, on the a*s*s scores): softmax
// reads and writes each score (2), dropout reads it and writes it and its mask (2.5) forward;
// backward the dropout (read dy and mask, write: 2.5) and the softmax (read y and dy, write: 3).
double MegatronHiddenElements(const Model& m, bool backward) {
  if (backward) return m.dropout ? 17 : 12;
  return m.dropout ? 11 : 10;
}
double MegatronScoreElements(const Model& m, bool backward) {
  if (backward) return m.dropout ? 5.5 : 3;
  return m.dropout ? 4.5 : 2;
}

// Bytes per element of the hidden-size elementwise passes (norms, residual adds, dropout) outside
// Megatron. Eager PyTorch under autocast (frameworks hf and ddp: fp32 weights, fp16/bf16 autocast)
// keeps the residual stream in fp32: the embeddings are fp32 (fp32 weights), a linear's 16-bit
// output added to the fp32 residual promotes to fp32, and layer_norm autocasts to float32
// (pytorch.org/docs/stable/amp.html, "CUDA Ops that can autocast to float32"), so those passes
// move 4-byte elements; TF's auto-mixed-precision rewrite keeps the layer norm's moments in fp32
// as well (Mean is on its deny list, "BlackList" before TF 2.4: tensorflow/tensorflow
// core/grappler/optimizers/auto_mixed_precision_lists.h).
// FSDP's and DeepSpeed's mixed precision hold 16-bit weights, so their activations stay 16-bit.
double ResidualStreamBytes(const Training& tr) {
  const bool autocast =
      tr.precision == Precision::kFp16Mixed || tr.precision == Precision::kBf16Mixed;
  const bool fp32_weights =
      tr.framework == workload::Framework::kHf || tr.framework == workload::Framework::kDdp;
  return autocast && fp32_weights ? 4.0 : ActivationBytes(tr.precision);
}

// How fast a class of GEMMs runs: `flops_per_second` for large ones (the precision's peak x the
// architecture's large-GEMM efficiency), and `half_dim`, the dimension at which a GEMM's memory
// traffic takes as long as its math (GemmRate below).
struct GemmRate {
  double flops_per_second = 0;
  double half_dim = 0;
};

// Time of a (m x k) * (k x n) GEMM: its math at rate.flops_per_second plus the time to move its
// operands and result, (m k + k n + m n) elements, once through memory. Arithmetic intensity
// 2 m n k / (bytes (m k + k n + m n)) against the GPU's FLOP:byte ratio decides whether a GEMM is
// math- or memory-limited (NVIDIA, "Matrix Multiplication Background User's Guide",
// docs.nvidia.com/deeplearning/performance/dl-performance-matrix-multiplication, "Math And
// Memory Bounds"); summing the two rather than taking the larger counts the part the kernel does
// not overlap. As an efficiency: 1 / (1 + half_dim (1/m + 1/n + 1/k)), which approaches 1 when
// every dimension is large, falls off with the smallest one, and saturates in each of them.
double GemmSeconds(double m, double n, double k, const GemmRate& rate) {
  if (m <= 0 || n <= 0 || k <= 0) return 0;
  const double efficiency = 1 / (1 + rate.half_dim * (1 / m + 1 / n + 1 / k));
  return 2.0 * m * n * k / (rate.flops_per_second * efficiency);
}

// The rate of GEMMs at `flops_per_second` on `bytes`-wide elements: half_dim = traffic factor x
// bytes x FLOP/s / (2 x achievable bandwidth), the FLOP:byte ratio of the GPU at the rates the
// model charges (A100 BF16: ~155 elements; H100: ~220), scaled by gemm_traffic_factor (traffic
// beyond each element once, less what overlaps the math; fitted).
GemmRate RateFor(double flops_per_second, double bytes, const Hardware& hw,
                 const TimeCalibration& c) {
  const double bandwidth = hw.memory_bytes_per_second * c.memory_bandwidth_efficiency;
  GemmRate rate;
  rate.flops_per_second = flops_per_second;
  rate.half_dim =
      bandwidth > 0 ? c.gemm_traffic_factor * bytes * flops_per_second / (2 * bandwidth) : 0;
  return rate;
}

// The large-GEMM fraction of the peak: the architecture's tensor-core fraction, or for plain fp32
// on the CUDA cores the fraction a large SGEMM reaches of their peak (generic_simt_efficiency, the
// same roofline argument as for the CNNs' FP32 convolutions: far above the CUDA cores' machine
// balance, compute-bound).
double GemmMaxEfficiency(const Hardware& hw, const TimeCalibration& c) {
  return hw.simt_fp32 ? std::min(1.0, c.generic_simt_efficiency)
                      : hw.efficiency.gemm_max_efficiency;
}

bool IsLora(const Training& t) { return t.method == Method::kLora || t.method == Method::kQlora; }

// Per-layer, per-micro-batch forward figures on one GPU (already divided by tp, and by cp for
// the tokens); for MoE models the mean over dense and MoE layers.
struct LayerForward {
  double seconds = 0;           // GEMMs + attention + elementwise (+ QLoRA de-quantisation)
  double backward_seconds = 0;  // the layer's backward (no recompute): 2x the GEMMs (1x for
                                // LoRA), and the elementwise kernels' own backward traffic
  // The part of the backward that computes weight gradients (the GEMMs' second half; none for
  // frozen weights under LoRA): what zero-bubble schedules defer ("W", deepseek-ai/DualPipe).
  double weight_gradient_seconds = 0;
  // Forward time of the column-parallel GEMMs (QKV and the MLP's first, ffn-wide one): their
  // backward is where Megatron overlaps tensor-parallel communication.
  double column_gemm_seconds = 0;
  double attention_seconds = 0;  // the s*s part (what Megatron's selective recompute repeats)
  // What torchtitan's selective ("op") policy re-runs: the matmuls it does not save (Llama: wk,
  // wo, w3; TorchtitanRecomputedGemms) + the elementwise ops.
  double selective_seconds = 0;
  double flops = 0;  // model FLOPs of the forward on this GPU
  double attention_flops = 0;
  double selective_flops = 0;
  // What Megatron's --recompute-modules other than core_attn re-run (MegatronModuleRecompute).
  double modules_seconds = 0;
  double modules_flops = 0;
};

struct MlpForward {
  double seconds = 0;
  double flops = 0;
  double width = 0;  // activation width per token (ffn, or (k + shared) x expert ffn)
};

// A dense MLP of `ffn` on `tokens` tokens.
MlpForward DenseMlp(double tokens, double h, double ffn, bool gated, double t,
                    const GemmRate& peak) {
  const double ffn_in = gated ? 2 * ffn : ffn;
  MlpForward out;
  out.seconds = GemmSeconds(tokens, ffn_in / t, h, peak) + GemmSeconds(tokens, h, ffn / t, peak);
  out.flops = 2 * tokens * h * (ffn_in + ffn) / t;
  out.width = ffn;
  return out;
}

// A MoE MLP: the router, the shared experts on every token, and this rank's experts / ep routed
// experts, each receiving tokens x k x ep / experts tokens when the router balances the load
// (what Megatron-Core's grouped GEMM runs; experts split over tp as its default
// expert_tensor_parallel_size = tensor_model_parallel_size). With whole experts (expert_tp 1) the
// ep ranks span the tp ranks, each routing its tokens / tp (sequence parallel): an expert then
// receives tokens x k x ep / (experts x tp) and runs them unsplit, the same FLOPs per GPU.
MlpForward MoeMlp(const Model& m, const Training& tr, double tokens, double t,
                  const GemmRate& peak) {
  const double h = static_cast<double>(m.hidden);
  const double fe = static_cast<double>(workload::ExpertFfnHidden(m));
  const bool gated = m.mlp == workload::MlpKind::kSwiglu;
  const double experts = static_cast<double>(m.experts);
  const double k = static_cast<double>(m.experts_per_token);
  const double ep = static_cast<double>(tr.ep);
  MlpForward out;
  out.seconds = GemmSeconds(tokens, experts, h, peak);
  out.flops = 2 * tokens * h * experts;
  if (m.shared_experts > 0) {
    const MlpForward shared =
        DenseMlp(tokens, h, fe * static_cast<double>(m.shared_experts), gated, t, peak);
    out.seconds += shared.seconds;
    out.flops += shared.flops;
  }
  const double local_experts = experts / ep;
  const double etp = static_cast<double>(workload::ExpertTp(tr));
  const MlpForward one = DenseMlp(tokens * k * ep / (experts * t / etp), h, fe, gated, etp, peak);
  out.seconds += local_experts * one.seconds;
  out.flops += local_experts * one.flops;
  out.width = (k + static_cast<double>(m.shared_experts)) * fe;
  return out;
}

// The mean MLP over the layers (dense_layers dense ones, the rest MoE).
MlpForward MeanMlp(const Model& m, const Training& tr, double tokens, double t,
                   const GemmRate& peak) {
  const double h = static_cast<double>(m.hidden);
  const bool gated = m.mlp == workload::MlpKind::kSwiglu;
  const MlpForward dense = DenseMlp(tokens, h, static_cast<double>(m.ffn_hidden), gated, t, peak);
  if (!workload::IsMoe(m)) return dense;
  const MlpForward moe = MoeMlp(m, tr, tokens, t, peak);
  const double w = static_cast<double>(m.dense_layers) / static_cast<double>(m.layers);
  return {w * dense.seconds + (1 - w) * moe.seconds, w * dense.flops + (1 - w) * moe.flops,
          w * dense.width + (1 - w) * moe.width};
}

// The attention's projection GEMMs of one layer's forward on one tp rank: the column-parallel
// ones before the attention kernel and, with them, the row-parallel output projection (o).
// Standard attention: the fused QKV (hidden -> q + k + v widths) and o, split over tp. MLA: the
// down-projections (hidden -> q_lora_rank, hidden -> kv_lora_rank + qk_rope) run duplicated on
// every tp rank (Megatron-LM@d98e8a64dd megatron/core/transformer/multi_latent_attention.py:
// linear_q_down_proj / linear_kv_down_proj with parallel_mode 'duplicated'); the
// up-projections (q_b, kv_b; q_proj without query compression) and o are split over tp.
struct AttentionGemms {
  double column_seconds = 0;
  double seconds = 0;
  double flops = 0;
};

AttentionGemms AttentionProjectionGemms(const Model& m, double tokens, double t,
                                        const GemmRate& peak) {
  const double h = static_cast<double>(m.hidden);
  const double q = static_cast<double>(workload::QDim(m));
  const double out = static_cast<double>(workload::AttentionOutDim(m));
  AttentionGemms g;
  if (!workload::IsMla(m)) {
    const double qkv = q + static_cast<double>(workload::KDim(m) + workload::VDim(m));
    g.column_seconds = GemmSeconds(tokens, qkv / t, h, peak);
    g.flops = 2 * tokens * h * (qkv + out) / t;
  } else {
    const double latent = static_cast<double>(workload::MlaLatentDim(m));
    const double kv_lora = static_cast<double>(m.kv_lora_rank);
    const double kv_up = static_cast<double>(m.heads * (m.qk_nope_head_dim + m.v_head_dim));
    const double q_lora = static_cast<double>(m.q_lora_rank);
    double duplicated = h * latent;            // multiply-adds per token on every rank
    double split = kv_lora * kv_up + h * out;  // divided over tp
    g.column_seconds =
        GemmSeconds(tokens, latent, h, peak) + GemmSeconds(tokens, kv_up / t, kv_lora, peak);
    if (m.q_lora_rank > 0) {
      g.column_seconds +=
          GemmSeconds(tokens, q_lora, h, peak) + GemmSeconds(tokens, q / t, q_lora, peak);
      duplicated += h * q_lora;
      split += q_lora * q;
    } else {
      g.column_seconds += GemmSeconds(tokens, q / t, h, peak);
      split += h * q;
    }
    g.flops = 2 * tokens * (duplicated + split / t);
  }
  g.seconds = g.column_seconds + GemmSeconds(tokens, h, out / t, peak);
  return g;
}

// The GEMMs torchtitan's selective policy re-runs in backward: the even-numbered matmuls of the
// layer (memory.h TorchtitanSavesMatmul), each with its tp split (MLA's down-projections whole
// on every rank; o_proj and w2 row-parallel); the MLP's of the mean MLP width.
struct SelectiveGemms {
  double seconds = 0;
  double flops = 0;
};

SelectiveGemms TorchtitanRecomputedGemms(const Model& m, const ModelCounts& counts, double tokens,
                                         double t, double mlp_width, const GemmRate& peak) {
  const double h = static_cast<double>(m.hidden);
  SelectiveGemms g;
  double duplicated = 0, split = 0;  // multiply-adds per token
  int position = 0;
  const workload::AttentionMatrices& matrices = counts.attention_matrices;
  for (int i = 0; i < matrices.count; ++i) {
    const workload::AttentionMatrix& a = matrices.items[static_cast<size_t>(i)];
    if (TorchtitanSavesMatmul(++position)) continue;
    const double in = static_cast<double>(a.in), out = static_cast<double>(a.out);
    if (!a.tp_split) {
      g.seconds += GemmSeconds(tokens, out, in, peak);
      duplicated += in * out;
    } else {
      const bool row = a.role == workload::AttentionRole::kOutput;
      g.seconds +=
          row ? GemmSeconds(tokens, out, in / t, peak) : GemmSeconds(tokens, out / t, in, peak);
      split += in * out;
    }
  }
  for (const bool ffn_wide : kTorchtitanMlpOutputIsFfn) {
    if (TorchtitanSavesMatmul(++position)) continue;
    g.seconds += ffn_wide ? GemmSeconds(tokens, mlp_width / t, h, peak)
                          : GemmSeconds(tokens, h, mlp_width / t, peak);
    split += h * mlp_width;
  }
  g.flops = 2 * tokens * (duplicated + split / t);
  return g;
}

// The forward of one layer per micro-batch that Megatron-Core's --recompute-modules beyond
// core_attn re-run in backward (estimate/memory.cc RecomputedModuleBytes for what each discards),
// means over the layers as MeanMlp: each module's GEMMs at `peak` and its elementwise passes at
// `token_seconds` per element and token, counted as the Megatron elementwise kernels are
// (MegatronHiddenElements; the activation reads its input and writes its output):
// - layernorm: the norm modules (MLA's input norm; a MoE layer's pre-MLP norm), each reading and
//   writing a hidden-wide tensor (`hidden_share` of it under sequence parallelism);
// - mla_up_proj: the query up-projection (q_proj without query compression) and kv_b, split over
//   tp, and RoPE writing and re-reading Q, K and V (fulcrum's count of that pass);
// - moe_act: the routed experts' activation; mlp: the dense MLP; moe: the MoE MLP (router, shared
//   and routed experts); shared_experts: the shared experts' MLP; each with its activation.
struct ModuleForward {
  double seconds = 0;
  double flops = 0;
};

ModuleForward MlaUpProjForward(const Model& m, double tokens, double t, double token_seconds,
                               const GemmRate& peak) {
  const double q = static_cast<double>(workload::QDim(m));
  const double kv_lora = static_cast<double>(m.kv_lora_rank);
  const double kv_up = static_cast<double>(m.heads * (m.qk_nope_head_dim + m.v_head_dim));
  const double q_in =
      m.q_lora_rank > 0 ? static_cast<double>(m.q_lora_rank) : static_cast<double>(m.hidden);
  ModuleForward f;
  f.seconds =
      GemmSeconds(tokens, q / t, q_in, peak) + GemmSeconds(tokens, kv_up / t, kv_lora, peak);
  f.flops = 2 * tokens * (q_in * q + kv_lora * kv_up) / t;
  const double qkv = static_cast<double>(workload::QDim(m) + workload::KDim(m) + workload::VDim(m));
  f.seconds += token_seconds * 2 * qkv / t;
  return f;
}

ModuleForward MegatronModuleRecompute(const Model& m, const Training& tr, double tokens, double t,
                                      double token_seconds, double hidden_share,
                                      const GemmRate& peak) {
  ModuleForward out;
  const double layers = static_cast<double>(m.layers);
  const double moe_share = static_cast<double>(workload::MoeLayerCount(m)) / layers;
  const bool gated = m.mlp == workload::MlpKind::kSwiglu;
  const double h = static_cast<double>(m.hidden);
  // Elementwise seconds of an MLP activation over `width` per token (reads ffn_in, writes width).
  const auto activation = [&](double width) {
    return token_seconds * ((gated ? 2 : 1) * width + width) / t;
  };
  const auto add = [&out](double share, double seconds, double flops) {
    out.seconds += share * seconds;
    out.flops += share * flops;
  };
  if (workload::RecomputesModule(tr, workload::kRecomputeLayernorm)) {
    const double norms = (workload::IsMla(m) ? 1 : 0) + moe_share;
    add(norms, token_seconds * 2 * hidden_share, 0);
  }
  if (workload::RecomputesModule(tr, workload::kRecomputeMlaUpProj)) {
    const ModuleForward up = MlaUpProjForward(m, tokens, t, token_seconds, peak);
    add(1, up.seconds, up.flops);
  }
  if (workload::RecomputesModule(tr, workload::kRecomputeMlp)) {
    const double f = static_cast<double>(m.ffn_hidden);
    const MlpForward dense = DenseMlp(tokens, h, f, gated, t, peak);
    add(1 - moe_share, dense.seconds + activation(f), dense.flops);
  }
  if (!workload::IsMoe(m)) return out;
  const double fe = static_cast<double>(workload::ExpertFfnHidden(m));
  const double k = static_cast<double>(m.experts_per_token);
  const double shared_width = fe * static_cast<double>(m.shared_experts);
  if (workload::RecomputesModule(tr, workload::kRecomputeMoe)) {
    const MlpForward moe = MoeMlp(m, tr, tokens, t, peak);
    add(moe_share, moe.seconds + activation(moe.width), moe.flops);
    return out;  // the MoE layer's recompute covers its shared experts and activation
  }
  if (workload::RecomputesModule(tr, workload::kRecomputeSharedExperts)) {
    const MlpForward shared = DenseMlp(tokens, h, shared_width, gated, t, peak);
    add(moe_share, shared.seconds + activation(shared_width), shared.flops);
  }
  if (workload::RecomputesModule(tr, workload::kRecomputeMoeAct)) {
    add(moe_share, activation(k * fe), 0);
  }
  return out;
}

LayerForward EstimateLayerForward(const Model& model, const ModelCounts& counts, const Training& tr,
                                  const Hardware& hw, const TimeCalibration& c) {
  LayerForward out;
  const double t = static_cast<double>(tr.tp);
  const double seq = static_cast<double>(tr.seq_len);
  // Context parallelism: this rank's queries are seq / cp tokens of each sequence; they attend to
  // the keys of the whole sequence (Megatron-LM docs/source/api-guide/context_parallel.rst).
  const double local_seq = static_cast<double>(tr.seq_len / tr.cp);
  const double tokens = static_cast<double>(tr.micro_batch) * local_seq;
  const double h = static_cast<double>(model.hidden);
  const double heads = static_cast<double>(model.heads);
  const bool gated = model.mlp == workload::MlpKind::kSwiglu;
  const bool fp8_units = tr.precision == Precision::kFp8 && hw.peak_flops > hw.peak_flops_16bit;
  const bool megatron_core = workload::UsesMegatronCore(tr.framework);
  // FP8 GEMMs at the architecture's FP8 fraction (Megatron-Core's TE layers), or a share of it
  // where the framework casts each GEMM's input apart (te.Linear, torchao).
  const double gemm_efficiency =
      !fp8_units ? GemmMaxEfficiency(hw, c)
                 : hw.efficiency.fp8_gemm_max_efficiency *
                       (megatron_core ? 1 : c.fp8_te_linear_relative_efficiency);
  const double bytes = ActivationBytes(tr.precision);
  // FP8 GEMMs read 1-byte operands.
  const GemmRate peak = RateFor(hw.peak_flops * gemm_efficiency, fp8_units ? 1.0 : bytes, hw, c);
  const double peak16 = hw.peak_flops_16bit > 0 ? hw.peak_flops_16bit : hw.peak_flops;
  const double mem_bw = hw.memory_bytes_per_second * c.memory_bandwidth_efficiency;

  const MlpForward mlp = MeanMlp(model, tr, tokens, t, peak);
  const AttentionGemms projections = AttentionProjectionGemms(model, tokens, t, peak);
  const double gemm_seconds = projections.seconds + mlp.seconds;
  const double mlp_in = gated ? 2 * mlp.width : mlp.width;
  out.column_gemm_seconds =
      projections.column_seconds + mlp.seconds * mlp_in / (mlp_in + mlp.width);
  const double gemm_flops = projections.flops + mlp.flops;
  // QK^T and AV: 2 * b * s * s * (q width + output width) forward, 4bs^2h for standard attention
  // (the full square, as PaLM and Megatron count); MLA's query/key heads are qk_nope + qk_rope
  // wide, its value heads v_head_dim. With cp each rank computes seq / cp rows of it
  // (load-balanced causal chunks).
  const double score_width =
      static_cast<double>(workload::QDim(model) + workload::AttentionOutDim(model));
  out.attention_flops = 2.0 * tokens * seq * score_width / t;
  const bool megatron = workload::UsesMegatronModel(tr.framework);
  const double backward_factor = IsLora(tr) ? 1.0 : 2.0;  // no weight-gradient GEMMs under LoRA
  double attention_backward_seconds = 0;
  if (tr.flash_attention) {
    // The fused kernel skips the blocks above the diagonal under a causal mask (decoders): half
    // the square; an encoder (BERT: no mask) runs all of it.
    const double executed = model.kind == workload::ModelKind::kEncoder ? 1.0 : 0.5;
    out.attention_seconds =
        executed * out.attention_flops / (peak16 * hw.efficiency.flash_attention_efficiency);
    attention_backward_seconds = backward_factor * out.attention_seconds;
  } else {
    const double heads_local = heads / t;
    const GemmRate peak_gemm16 = RateFor(peak16 * GemmMaxEfficiency(hw, c), bytes, hw, c);
    const double per_head =
        GemmSeconds(local_seq, seq, static_cast<double>(workload::QkHeadDim(model)), peak_gemm16) +
        GemmSeconds(local_seq, static_cast<double>(workload::VHeadDim(model)), seq, peak_gemm16);
    const double score_seconds =
        static_cast<double>(tr.micro_batch) * heads_local * local_seq * seq * bytes / mem_bw;
    const double gemms = per_head * static_cast<double>(tr.micro_batch) * heads_local;
    // Megatron fuses scale, mask and softmax into one kernel (its kernel counts,
    // MegatronScoreElements); the other frameworks' eager attention runs them (and the dropout)
    // as separate passes over the scores (unfused_attention_score_elements, fitted on the
    // DeepLearningExamples BERT rows).
    const double score_forward =
        megatron ? MegatronScoreElements(model, false) : c.unfused_attention_score_elements;
    const double score_backward = megatron ? MegatronScoreElements(model, true)
                                           : backward_factor * c.unfused_attention_score_elements;
    out.attention_seconds = gemms + score_forward * score_seconds;
    attention_backward_seconds = backward_factor * gemms + score_backward * score_seconds;
  }
  const double hidden_share = tr.sequence_parallel ? h / t : h;
  // The MoE layers' token permutation, on the tokens this rank routes (its share under SP).
  const double permutation = MoePermutationElements(model, tr) / (tr.sequence_parallel ? t : 1.0);
  const double ffn_in = gated ? 2 * mlp.width : mlp.width;
  const double token_seconds = tokens * bytes / mem_bw;  // per activation element per token
  const double residual_scale = ResidualStreamBytes(tr) / bytes;
  const double elementwise_seconds =
      token_seconds * permutation +
      (megatron ? token_seconds * (MegatronHiddenElements(model, false) * hidden_share +
                                   (ffn_in + mlp.width) / t)
                : token_seconds * (c.elementwise_hidden_elements * hidden_share * residual_scale +
                                   c.elementwise_ffn_elements * ffn_in / t));
  const double elementwise_backward_seconds =
      megatron ? token_seconds * (permutation + MegatronHiddenElements(model, true) * hidden_share +
                                  (2 * ffn_in + mlp.width) / t)
               : backward_factor * elementwise_seconds;
  double dequant_seconds = 0;
  if (tr.method == Method::kQlora) {
    dequant_seconds = counts.layer_parameters / t * c.qlora_dequant_bytes_per_param / mem_bw;
  }
  out.seconds = gemm_seconds + out.attention_seconds + elementwise_seconds + dequant_seconds;
  out.backward_seconds = backward_factor * (gemm_seconds + dequant_seconds) +
                         attention_backward_seconds + elementwise_backward_seconds;
  out.weight_gradient_seconds = (backward_factor - 1) * gemm_seconds;
  out.flops = gemm_flops + out.attention_flops;
  const SelectiveGemms rerun = TorchtitanRecomputedGemms(model, counts, tokens, t, mlp.width, peak);
  out.selective_seconds = rerun.seconds + elementwise_seconds;
  out.selective_flops = rerun.flops;
  if (megatron_core && (tr.recompute_modules & ~workload::kRecomputeCoreAttn) != 0) {
    const ModuleForward modules =
        MegatronModuleRecompute(model, tr, tokens, t, token_seconds, hidden_share, peak);
    out.modules_seconds = modules.seconds;
    out.modules_flops = modules.flops;
  }
  return out;
}

// The link a group of `ranks` GPUs, `stride` ranks apart, communicates over (rank order tp, cp,
// dp, pp: tp innermost, as Megatron and torchtitan lay them out).
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

// Generic (CNN) models, data parallel only. One micro-batch of b samples runs the convolutions
// on the tensor cores (3 x forward FLOPs at the precision's peak x generic_model_efficiency, or
// plain FP32 on the CUDA cores at generic_simt_efficiency of their peak, falling off as
// b / (b + generic_half_batch)) and the depthwise ones on the CUDA cores, moves the
// activations (forward-written elements x traffic per element x activation bytes, at the
// datasheet bandwidth: a roofline sum, as the elementwise kernels and the convolutions run one
// after the other), pays a fixed time per weighted layer and pass, and under TF32 the NCHW <->
// NHWC transposes around the tensor-core convolutions (generic_nchw_transpose_elements).
double GenericMicroBatchSeconds(const Model& model, const Training& tr, const Hardware& hw,
                                const TimeCalibration& c) {
  const double peak = hw.peak_flops_16bit > 0 ? hw.peak_flops_16bit : hw.peak_flops;
  const double b = static_cast<double>(tr.micro_batch);
  double large_batch = c.generic_model_efficiency;
  if (hw.simt_fp32) {
    large_batch = std::min(1.0, c.generic_simt_efficiency);
  } else if (tr.precision == Precision::kTf32) {
    large_batch = std::min(1.0, large_batch * c.generic_tf32_relative_efficiency);
  }
  const double efficiency = large_batch * b / (b + c.generic_half_batch);
  const double depthwise_flops = model.generic_depthwise_flops_per_sample;
  const double conv_seconds =
      3.0 * (model.generic_forward_flops_per_sample - depthwise_flops) * b / (peak * efficiency);
  const double simt = hw.simt_flops > 0 ? hw.simt_flops : hw.peak_flops;
  // Depthwise kernels are bound by the SMs' load path, not their FLOPs: 4-byte activations
  // (fp32, TF32) take twice the time of the 16-bit ones the efficiency is stated for.
  const double depthwise_seconds = 3.0 * depthwise_flops * b /
                                   (simt * c.generic_depthwise_efficiency) *
                                   ActivationBytes(tr.precision) / 2.0;
  const double traffic_seconds = c.generic_traffic_per_element *
                                 model.generic_forward_elements_per_sample * b *
                                 ActivationBytes(tr.precision) / hw.memory_bytes_per_second;
  const double fixed_seconds =
      3.0 * static_cast<double>(model.generic_weighted_layers) * c.generic_seconds_per_layer;
  // TF32 on the tensor cores keeps NCHW activations: cuDNN transposes around each convolution.
  const bool nchw_tensor_cores = tr.precision == Precision::kTf32 && !hw.simt_fp32;
  const double transpose_seconds =
      nchw_tensor_cores
          ? c.generic_nchw_transpose_elements * model.generic_forward_elements_per_sample * b *
                ActivationBytes(tr.precision) /
                (hw.memory_bytes_per_second * c.memory_bandwidth_efficiency)
          : 0.0;
  return conv_seconds + depthwise_seconds + traffic_seconds + fixed_seconds + transpose_seconds;
}

// The optimizer step and the gradient handling around it, memory-bound: the `local` parameters
// this GPU updates times the bytes each moves (Training::OptimizerKernels). Fused: one pass per
// step. TF1's graph: its per-tensor ops once per step, and the gradients' unscale (mixed
// precision), norm and clip once per step, or with accumulation on every micro-batch with the add
// into the accumulation buffer.
double OptimizerSeconds(double local, double micro_batches, const Training& tr,
                        const TimeCalibration& c, double mem_bw) {
  if (tr.optimizer_kernels == workload::OptimizerKernels::kFused) {
    return local * c.optimizer_bytes_per_param / mem_bw;
  }
  const double gradient_pass =
      c.tf1_clip_bytes_per_param +
      (tr.precision == Precision::kFp16Mixed ? c.tf1_loss_scale_bytes_per_param : 0.0);
  const double gradient_bytes =
      micro_batches > 1 ? micro_batches * (gradient_pass + c.tf1_accumulate_bytes_per_param)
                        : gradient_pass;
  return local * (gradient_bytes + c.tf1_optimizer_bytes_per_param) / mem_bw;
}

StepTime EstimateGenericStep(const Model& model, const Training& tr, const Hardware& hw,
                             const TimeCalibration& c) {
  StepTime out;
  const double peak = hw.peak_flops_16bit > 0 ? hw.peak_flops_16bit : hw.peak_flops;
  const double samples_per_gpu = static_cast<double>(tr.global_batch) / static_cast<double>(tr.dp);
  const double micro_batches =
      std::max(1.0, std::ceil(samples_per_gpu / static_cast<double>(tr.micro_batch)));
  const double mb_seconds = GenericMicroBatchSeconds(model, tr, hw, c);
  const double optimizer_seconds =
      OptimizerSeconds(model.generic_parameters, micro_batches, tr, c,
                       hw.memory_bytes_per_second * c.memory_bandwidth_efficiency);
  out.compute_seconds = micro_batches * mb_seconds + optimizer_seconds;
  const double grad_bytes = model.generic_parameters * ActivationBytes(tr.precision);
  const Link link = GroupLink(tr.dp, 1, hw, c);
  out.communication_seconds = AllReduceSeconds(grad_bytes, static_cast<int>(tr.dp), link);
  // The gradient all-reduce overlaps the backward of the last micro-batch.
  const double last_backward = (2.0 / 3.0) * mb_seconds;
  out.exposed_seconds =
      std::max(0.0, out.communication_seconds - c.dp_overlap_fraction * last_backward);
  out.step_seconds = out.compute_seconds + out.exposed_seconds;
  out.tokens_per_second_per_gpu = samples_per_gpu / out.step_seconds;
  out.mfu = out.hfu =
      3.0 * model.generic_forward_flops_per_sample * samples_per_gpu / (out.step_seconds * peak);
  return out;
}

// A group of `ranks` GPUs, `stride` ranks apart, spread over nodes, for traffic each rank sends to
// its peers directly (not a ring): `per_node` of its ranks share a node; what goes to the others
// leaves through this GPU's share of its node's network (`nic`), the rest over NVLink or PCIe
// (`intra`), at the same time.
struct PeerSpread {
  double per_node = 1;
  double nic = 0;
  double intra = 0;
  double latency = 0;
};

PeerSpread SpreadOf(int64_t ranks, int64_t stride, const Hardware& hw, const TimeCalibration& c) {
  const double node = static_cast<double>(hw.gpus_per_node);
  PeerSpread out;
  out.per_node =
      std::min(static_cast<double>(ranks), std::max(1.0, node / static_cast<double>(stride)));
  out.nic = hw.network_bytes_per_second_per_node * c.network_efficiency / node;
  out.intra = GroupLink(1, 1, hw, c).bytes_per_second;
  out.latency = GroupLink(ranks, stride, hw, c).latency_seconds;
  return out;
}

bool WithinNode(int64_t ranks, int64_t stride, const Hardware& hw) {
  return static_cast<double>(ranks) * static_cast<double>(stride) <=
         static_cast<double>(hw.gpus_per_node);
}

// C(n, r), as a double (0 when r > n).
double Choose(double n, double r) {
  if (r < 0 || r > n) return 0;
  return std::exp(std::lgamma(n + 1) - std::lgamma(r + 1) - std::lgamma(n - r + 1));
}

// The chance that none of k experts drawn without replacement from `pool` falls among `held` of
// them: C(pool - held, k) / C(pool, k).
double MissesAll(double pool, double held, double k) {
  return Choose(pool - held, k) / Choose(pool, k);
}

}  // namespace

double AllToAllGroupSeconds(double bytes, int64_t ranks, int64_t stride, const Hardware& hw,
                            const TimeCalibration& c) {
  if (ranks <= 1 || bytes <= 0 || WithinNode(ranks, stride, hw)) {
    return AllToAllSeconds(bytes, static_cast<int>(ranks), GroupLink(ranks, stride, hw, c));
  }
  const PeerSpread spread = SpreadOf(ranks, stride, hw, c);
  if (spread.nic <= 0 || spread.intra <= 0) return 0;
  const double n = static_cast<double>(ranks), g = spread.per_node;
  const double across = (n - g) / n * bytes / spread.nic;
  const double within = (g - 1) / n * bytes / spread.intra;
  return std::max(across, within) + (n - 1) * spread.latency;
}

double NodeReachProbability(const Model& model, const Training& tr, int64_t nodes) {
  const double e = static_cast<double>(model.experts);
  const double k = static_cast<double>(model.experts_per_token);
  const double n = static_cast<double>(nodes);
  const int64_t groups = tr.moe_router_groups;
  if (groups <= 0 || groups % nodes != 0 || tr.moe_router_group_topk >= groups) {
    return 1 - MissesAll(e, e / n, k);
  }
  // q whole groups per node; M of the G groups chosen (hypergeometric in how many are this
  // node's), then k experts among the chosen groups' ones.
  const double g = static_cast<double>(groups);
  const double q = g / n;
  const double m = static_cast<double>(tr.moe_router_group_topk);
  const double per_group = e / g;
  double reach = 0;
  for (double x = std::max(0.0, q + m - g); x <= std::min(q, m); ++x) {
    const double chosen = Choose(q, x) * Choose(g - q, m - x) / Choose(g, m);
    reach += chosen * (1 - MissesAll(m * per_group, x * per_group, k));
  }
  return reach;
}

double FlexDispatchSeconds(double tokens, double token_bytes, const Model& model,
                           const Training& tr, const Hardware& hw, const TimeCalibration& c) {
  const int64_t stride = workload::ExpertTp(tr);
  const double k = static_cast<double>(model.experts_per_token);
  if (tr.ep <= 1 || WithinNode(tr.ep, stride, hw)) {
    return AllToAllGroupSeconds(tokens * k * token_bytes, tr.ep, stride, hw, c);
  }
  const PeerSpread spread = SpreadOf(tr.ep, stride, hw, c);
  if (spread.nic <= 0 || spread.intra <= 0) return 0;
  const double n = static_cast<double>(tr.ep), g = spread.per_node;
  const int64_t nodes = static_cast<int64_t>(std::ceil(n / g));
  const double remote_nodes =
      static_cast<double>(nodes - 1) * NodeReachProbability(model, tr, nodes);
  const double across = tokens * remote_nodes * token_bytes / spread.nic;
  const double within = tokens * k * (g - 1) / g * token_bytes / spread.intra;
  return std::max(across, within) + (n - 1) * spread.latency;
}

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

ArchitectureEfficiency& EfficiencyFor(std::string_view architecture, TimeCalibration& calibration) {
  return const_cast<ArchitectureEfficiency&>(
      EfficiencyFor(architecture, static_cast<const TimeCalibration&>(calibration)));
}

double ActivationBytes(Precision precision) {
  return workload::IsFp32Storage(precision) ? 4.0 : 2.0;
}

double TrainableParameterCount(const Model& model, const Training& training) {
  return TrainableParameterCount(model, workload::CountModel(model), training);
}

double TrainableParameterCount(const Model& model, const ModelCounts& counts,
                               const Training& training) {
  if (!IsLora(training) || model.kind == workload::ModelKind::kGeneric) return counts.parameters;
  // LoRA adds rank * (in + out) per targeted matrix (Hu et al. 2021, arXiv 2106.09685).
  const double per_layer = workload::LoraParameterCountPerLayer(model, training);
  return per_layer * static_cast<double>(model.layers);
}

OutputHead OutputHeadOf(const Model& model, const Training& training) {
  OutputHead head;
  const double seq = static_cast<double>(workload::RunSeqLen(training));
  if (training.head_tokens > 0 && seq > 0) {
    head.token_fraction = std::min(1.0, static_cast<double>(training.head_tokens) / seq);
  }
  head.width = static_cast<double>(training.head_width > 0 ? training.head_width : model.vocab);
  return head;
}

double ModelFlopsPerToken(const Model& model, const Training& training) {
  return ModelFlopsPerToken(model, workload::CountModel(model), training);
}

double ModelFlopsPerToken(const Model& model, const ModelCounts& counts, const Training& training) {
  if (model.kind == workload::ModelKind::kGeneric) {
    return 3.0 * model.generic_forward_flops_per_sample;
  }
  const double h = static_cast<double>(model.hidden);
  const double layer_params = counts.active_layer_matmul_parameters;
  const double passes = IsLora(training) ? 4.0 : 6.0;  // forward 2 + backward 4 (or 2: no wgrad)
  const double layers = static_cast<double>(model.layers);
  const double seq = static_cast<double>(workload::RunSeqLen(training));
  // Attention scores and values: 2 x seq x (q width + output width) forward per token, 4 seq h
  // for standard attention (MLA: heads x (qk_nope + qk_rope + v_head_dim)).
  const double score_width =
      static_cast<double>(workload::QDim(model) + workload::AttentionOutDim(model));
  const OutputHead head = OutputHeadOf(model, training);
  return passes * layers * layer_params + passes * layers * seq * score_width +
         passes * h * head.width * head.token_fraction;
}

namespace {

// Communication of the data-parallel replicas (and ZeRO / FSDP shards) for one optimizer step.
struct DataParallelTime {
  double seconds = 0;  // all of it
  double exposed = 0;  // not hidden behind compute
};

// Parameter all-gathers per micro-batch where the gradients are reduce-scattered after every
// micro-batch's backward, or -1 where they are reduced once per step (accumulated unsharded).
// ZeRO-3 (FSDP FULL_SHARD, DeepSpeed stage 3): 2, for forward and backward (3 under the HF
// Trainer's gradient checkpointing). With gradient
// accumulation, FSDP SHARD_GRAD_OP (zero 2) "unshards before the forward, does not reshard them
// after the forward, and only reshards them after the backward computation", and reduce-scatters
// the gradients then unless the loop runs inside no_sync() (pytorch/pytorch@acd8c9e7
// torch/distributed/fsdp/api.py ShardingStrategy; torchtitan's loop does not): 1. DeepSpeed
// ZeRO-2 reduces into the gradient partitions on every micro-batch ("ZeRO stage >= 2 communicates
// during non gradient accumulation boundaries as well") and refuses no_sync
// (deepspeedai/DeepSpeed@007cca6a deepspeed/runtime/engine.py allreduce_gradients, no_sync): 0,
// its updated parameters gathered once after the step. Megatron's distributed optimizer (zero 1)
// accumulates in its gradient buffer and reduces at the last micro-batch (Megatron-LM's schedules
// run the others under no_sync): -1; so are Megatron-FSDP's optim_grads (zero 2) and
// megatron-deepspeed's ZeRO-1 taken, not checked here.
int MicroBatchGathers(const Training& tr, double micro_batches) {
  // The HF Trainer's --gradient_checkpointing under FSDP FULL_SHARD gathers each layer once more,
  // for its recomputed forward (Training::hf_gradient_checkpointing).
  if (tr.zero_stage >= 3) {
    const bool regathers = tr.hf_gradient_checkpointing && workload::FsdpFullShard(tr) &&
                           tr.recompute == workload::Recompute::kFull;
    return regathers ? 3 : 2;
  }
  if (tr.zero_stage != 2 || micro_batches <= 1) return -1;
  if (tr.framework == workload::Framework::kFsdp) return 1;
  if (tr.framework == workload::Framework::kDeepSpeed) return 0;
  return -1;
}

// Whether the gradients' reduction can hide behind the backward. Where DeepSpeed's engine reduces
// them (deepspeedai/DeepSpeed@edaa7221 deepspeed/runtime/engine.py allreduce_gradients), stage 0
// all-reduces at the accumulation boundary, after the backward (buffered_allreduce_fallback);
// stages 1 and 2 reduce through the ZeRO optimizer, whose buckets run on the compute stream,
// serialized with the backward, unless zero_optimization.overlap_comm puts them on its reduction
// stream (zero/stage_1_and_2.py reduce_ipg_grads; stage 1 without it reduces everything in
// reduce_gradients, after the backward); overlap_comm is off by default below stage 3
// (zero/config.py overlap_comm_valid). Everywhere else: true.
bool ReductionBehindBackward(const Training& tr) {
  if (!workload::DeepSpeedEngineReduces(tr)) return true;
  return tr.zero_stage >= 1 && tr.overlap_comm;
}

// DeepSpeed's ZeRO 1 and 2 all-gather the updated parameters in the optimizer step, after the
// backward and before the next forward, with nothing beside them (zero/stage_1_and_2.py step:
// all_gather_dp_groups).
bool GatherAfterStep(const Training& tr) {
  return workload::DeepSpeedEngineReduces(tr) && tr.zero_stage >= 1;
}

// What PyTorch FSDP1's backward prefetching (Training::backward_prefetch) leaves serialized with
// each micro-batch's backward under FULL_SHARD, of its backward all-gather `gather` and its
// reduce-scatter `reduce`: the collectives share one NCCL stream, so the next unit's backward,
// which waits for its parameters, also waits for what was issued before their all-gather.
// BACKWARD_PRE issues it before the current unit's gradients: nothing; BACKWARD_POST after them,
// before the reduce-scatter: the all-gather; NO_PREFETCH after the reduce-scatter: both
// (pytorch/pytorch torch/distributed/fsdp/api.py BackwardPrefetch).
double BackwardSerialized(const Training& tr, double gather, double reduce) {
  if (!workload::FsdpFullShard(tr)) return 0;
  switch (tr.backward_prefetch) {
    case workload::BackwardPrefetch::kPre:
      return 0;
    case workload::BackwardPrefetch::kPost:
      return gather;
    case workload::BackwardPrefetch::kNone:
      return gather + reduce;
  }
  return 0;
}

// What stays exposed of `seconds` of communication that runs behind `hidden` seconds of compute:
// what outlasts the compute, the `tail` share that cannot start before it ends (the last bucket,
// the first gather), and the slowdown of the compute it shares the GPU with.
double ExposedBehind(double seconds, double hidden, double tail, const TimeCalibration& c) {
  return std::max(0.0, seconds - hidden) + tail * seconds +
         c.overlapped_comm_slowdown * std::min(seconds, hidden);
}

// One class of parameters (dense, or routed experts): `param_bytes` / `grad_bytes` this GPU
// holds before sharding, sharded over `shards` ranks and replicated over `replicas` groups of
// them (HSDP; 1 otherwise). ZeRO-3 gathers per micro-batch, overlapped with the compute (FSDP1
// without backward prefetching: less, BackwardSerialized);
// ZeRO 0-2 reduce once per step, overlapped with the backward, except where MicroBatchGathers
// says they reduce every micro-batch. FSDP under pipeline parallelism
// (torchtitan) gathers each stage's parameters once per step and reduce-scatters its gradients
// once, after the last micro-batch's backward (memory.cc TorchBuffers: no reshard after forward,
// no gradient sync before the last backward).
DataParallelTime DataParallelSeconds(double param_bytes, double grad_bytes, int64_t shards,
                                     int64_t replicas, const Training& tr, const Hardware& hw,
                                     const TimeCalibration& c, double micro_batches,
                                     double compute_mb, double tail) {
  const int64_t stride = tr.tp;
  const Link shard_link = GroupLink(shards, stride, hw, c);
  const Link replica_link = GroupLink(replicas, stride * shards, hw, c);
  const int n = static_cast<int>(shards);
  // HSDP: the gradient shards are all-reduced across the replicas once per step.
  const double replica_reduce = AllReduceSeconds(grad_bytes / static_cast<double>(shards),
                                                 static_cast<int>(replicas), replica_link);
  DataParallelTime out;
  const bool per_step_gather = tr.framework == workload::Framework::kFsdp && tr.pp > 1;
  const int gathers = MicroBatchGathers(tr, micro_batches);
  if (gathers >= 0 && !per_step_gather) {
    // Per micro-batch: gather the parameters (ZeRO-3: for forward and again for backward;
    // SHARD_GRAD_OP: once), reduce-scatter the gradients.
    const double gather = AllGatherSeconds(param_bytes, n, shard_link);
    const double reduce = ReduceScatterSeconds(grad_bytes, n, shard_link);
    const double per_mb = gathers * gather + reduce;
    const double hidden = c.dp_overlap_fraction * compute_mb;
    const double replica_hidden = c.dp_overlap_fraction * (2.0 / 3.0) * compute_mb;
    // DeepSpeed ZeRO-2 all-gathers the updated parameters once, after the step, and without
    // overlap_comm reduces behind nothing.
    const double step_gather = GatherAfterStep(tr) ? gather : 0;
    const double behind =
        ReductionBehindBackward(tr) ? per_mb - BackwardSerialized(tr, gather, reduce) : 0;
    out.seconds = micro_batches * per_mb + replica_reduce + step_gather;
    out.exposed = micro_batches * (per_mb - behind + ExposedBehind(behind, hidden, tail, c)) +
                  ExposedBehind(replica_reduce, replica_hidden, 0, c) + step_gather;
    return out;
  }
  // Megatron-DeepSpeed in bf16 (DeepSpeed's BF16_Optimizer, ZeRO-1): at the accumulation
  // boundary, after the last backward, the engine all-reduces the fp32 accumulated gradients
  // (BF16_Optimizer has no reduce_gradients, so engine.allreduce_gradients takes
  // buffered_allreduce_fallback over get_grads_for_reduction()), then the step all-gathers the
  // updated bf16 partitions: twice the bytes of a 16-bit reduction, none of it behind the
  // backward (deepspeedai/DeepSpeed@edaa7221 deepspeed/runtime/engine.py L2906-2913, L3784;
  // deepspeed/runtime/bf16_optimizer.py L402).
  if (tr.framework == workload::Framework::kMegatronDeepSpeed &&
      tr.precision != workload::Precision::kFp16Mixed) {
    out.seconds = AllReduceSeconds(2 * grad_bytes, n, shard_link) +
                  AllGatherSeconds(param_bytes, n, shard_link) + replica_reduce;
    out.exposed = out.seconds;
    return out;
  }
  // ZeRO 0: all-reduce; ZeRO 1/2: reduce-scatter of grads + all-gather of updated params;
  // FSDP FULL_SHARD under PP: all-gather of the parameters + reduce-scatter of the gradients.
  const double gathered = tr.zero_stage >= 3 ? param_bytes : grad_bytes;
  const double reduce = tr.zero_stage == 0 ? AllReduceSeconds(grad_bytes, n, shard_link)
                                           : ReduceScatterSeconds(grad_bytes, n, shard_link);
  const double gather = tr.zero_stage == 0 ? 0 : AllGatherSeconds(gathered, n, shard_link);
  out.seconds = reduce + gather + replica_reduce;
  // What can hide behind the last micro-batch's backward: all of it, except DeepSpeed's gather
  // after the step and its reduction without overlap_comm.
  const double after_step = GatherAfterStep(tr) ? gather : 0;
  const double behind = ReductionBehindBackward(tr) ? out.seconds - after_step : 0;
  const double hidden = c.dp_overlap_fraction * (2.0 / 3.0) * compute_mb;
  out.exposed = out.seconds - behind + ExposedBehind(behind, hidden, tail, c);
  return out;
}

// A pipeline stage's time per micro-batch.
struct StageTime {
  double layers = 0;
  double compute_seconds = 0;
  double communication_seconds = 0;  // tensor, context and expert parallel, per micro-batch
  double exposed_seconds = 0;
  double busy_seconds() const { return compute_seconds + exposed_seconds; }
};

// What a stage costs per micro-batch: its layers, and the logits on the last one.
struct StageCost {
  double layer_seconds = 0;
  double logits_seconds = 0;
  double layer_comm = 0;
  double layer_exposed = 0;
  StageTime Of(int64_t layers, bool last) const {
    StageTime st;
    st.layers = static_cast<double>(layers);
    st.compute_seconds = st.layers * layer_seconds + (last ? logits_seconds : 0);
    st.communication_seconds = st.layers * layer_comm;
    st.exposed_seconds = st.layers * layer_exposed;
    return st;
  }
};

// The stage that takes longest per micro-batch (uneven splits: the most loaded one; the last
// also runs the logits).
StageTime SlowestStage(const workload::StageLayers& stages, int64_t pp, const StageCost& cost) {
  StageTime best = cost.Of(stages.last, true);
  auto consider = [&](int64_t layers) {
    const StageTime st = cost.Of(layers, false);
    if (st.busy_seconds() > best.busy_seconds()) best = st;
  };
  if (pp > 1) consider(stages.first);
  if (pp > 2) consider(stages.middle);
  return best;
}

// 1F1B's fill and drain: the first micro-batch's forward reaches the slowest stage through the
// stages before it, and the last backward leaves through them, while that stage is busy m micro-
// batches; with it last (the logits), the step is m x its micro-batch plus one micro-batch on each
// other stage, so the bubble is their time, not (p - 1) x the slowest's (with equal stages it is
// Narayanan et al. 2021's (p - 1) / (m v) of the ideal time, arXiv 2104.04473, section 2.2). All
// stages together are one stage of every layer with the logits. Interleaving cuts it by v.
double BubbleSeconds(const StageCost& cost, int64_t layers, const StageTime& slowest, double p,
                     double v, double pp_seconds) {
  if (p <= 1) return 0;
  const double others = cost.Of(layers, true).busy_seconds() - slowest.busy_seconds();
  return std::max(0.0, others + (p - 1) * pp_seconds) / v;
}

// DualPipe's and DualPipeV's bubble as a share of 1F1B's on the same pp ranks, from the
// deepseek-ai/DualPipe@3da1bbe README's table (PP stages of F forward, B backward of which W
// weight gradients, F&B a forward and a backward chunk overlapped, taken as F + B): 1F1B
// (PP - 1)(F + B) with PP = pp; DualPipe (PP/2 - 1)(F&B + B - 3W), PP = pp; DualPipeV the same
// with PP = 2 pp stages of half the layers, (pp - 1)(F + 2B - 3W) / 2 in the stages of 1F1B. Per
// layer f, b, w (b with what recompute re-runs); 1 for 1F1B.
double ScheduleBubbleShare(const Training& tr, double f, double b, double w) {
  const double p = static_cast<double>(tr.pp);
  if (tr.pipeline_schedule == workload::PipelineSchedule::k1F1B || p <= 1 || f + b <= 0) return 1;
  const double chunk = std::max(0.0, f + 2 * b - 3 * w);
  if (tr.pipeline_schedule == workload::PipelineSchedule::kDualPipe) {
    return (p / 2 - 1) * chunk / ((p - 1) * (f + b));
  }
  return chunk / (2 * (f + b));
}

// The shape of one micro-batch on this GPU, shared by the parts of a transformer's step.
struct MicroBatchShape {
  double tokens = 0;  // its seq_len / cp share of each sequence, times micro_batch
  double hidden = 0;  // model.hidden
  double bytes = 0;   // bytes of one activation element
  // Bytes of one element of the tensor-parallel all-gathers under sequence parallelism: `bytes`,
  // or 1 where Transformer Engine's layers gather FP8 (TensorParallelComm).
  double gather_bytes = 0;
  double forward_passes = 0;  // forward computations per step, in units of one forward (2, 3
                              // with full recompute): the collectives run once per pass
};

// Communication of one layer per micro-batch: all of it, and the part compute does not hide.
struct LayerComm {
  double seconds = 0;
  double exposed = 0;
};

// What a recompute policy re-runs of the forward in backward, per layer per micro-batch.
struct Recomputed {
  double seconds = 0;
  double flops = 0;  // counted by HFU
};

// Every recompute policy re-runs part of the forward in backward (and HFU counts it):
// full: the whole layer; torchtitan/FSDP selective: the matmuls and elementwise ops its op
// policy does not save; Megatron-style selective: core attention (Megatron-Core checkpoints
// core_attn under --recompute-granularity selective, flash or not; Korthikanti et al. 2022
// section 5), and the forward of the other --recompute-modules (MegatronModuleRecompute).
Recomputed RecomputeCost(const LayerForward& fwd, const Training& tr) {
  if (tr.recompute == Recompute::kFull) return {fwd.seconds, fwd.flops};
  if (tr.recompute == Recompute::kSelective && tr.framework == workload::Framework::kFsdp) {
    return {fwd.selective_seconds, fwd.selective_flops};
  }
  if (tr.recompute != Recompute::kSelective) return {};
  Recomputed r{fwd.modules_seconds, fwd.modules_flops};
  if (workload::RecomputesModule(tr, workload::kRecomputeCoreAttn)) {
    r.seconds += fwd.attention_seconds;
    r.flops += fwd.attention_flops;
  }
  return r;
}

// The share of the layers whose MLP block Megatron's --recompute-modules re-run whole: mlp the
// dense layers, moe the MoE layers.
double RecomputedMlpShare(const Model& m, const Training& tr) {
  const double moe_share =
      static_cast<double>(workload::MoeLayerCount(m)) / static_cast<double>(m.layers);
  double share = 0;
  if (workload::RecomputesModule(tr, workload::kRecomputeMlp)) share += 1 - moe_share;
  if (workload::RecomputesModule(tr, workload::kRecomputeMoe)) share += moe_share;
  return share;
}

// Whether the tensor-parallel all-gathers of sequence parallelism carry FP8: under FP8 on a GPU
// with FP8 units, Transformer Engine's layers (Megatron-Core's TE layer spec) cast the norm output
// to FP8 before gathering it for the column-parallel GEMM, regather that FP8 shard in backward, and
// cast the output gradient to FP8 before gathering it for the row-parallel GEMM's backward
// (NVIDIA/TransformerEngine@3ec998e96c (v1.8, NeMo 24.07's) transformer_engine/pytorch/module/
// layernorm_linear.py: ln_out is uint8 when fp8 and not return_layernorm_output, then
// gather_along_first_dim, and the backward's gather of the saved ln_out; module/base.py
// grad_output_preprocess, "FP8 case with gather": cast_to_fp8, then gather; TE 2.x quantizes
// before the gather likewise). The reduce-scatters carry the GEMMs' 16-bit outputs.
bool Fp8SequenceParallelGathers(const Training& tr, const Hardware& hw) {
  return tr.sequence_parallel && tr.tp > 1 && tr.precision == Precision::kFp8 &&
         hw.peak_flops > hw.peak_flops_16bit && workload::UsesMegatronCore(tr.framework);
}

// Tensor parallel: 2 all-reduces forward, 2 backward (+2 with full recompute).
// With sequence parallelism each all-reduce is a reduce-scatter + all-gather (the same
// traffic), and backward repeats the two all-gathers of the layer-norm outputs rather than
// keeping the gathered tensors (Korthikanti et al. 2022, arXiv 2205.05198, section 4.2.2).
// Megatron overlaps the backward collectives of its column-parallel layers (QKV, the MLP's
// first GEMM) with their gradient GEMMs: the all-reduce (with SP: reduce-scatter) of the input
// gradient with the weight-gradient GEMM, and the repeated all-gather with the input-gradient
// GEMM (Megatron-LM megatron/core/tensor_parallel/layers.py,
// LinearWithGradAccumulationAndAsyncCommunication.backward; on by default,
// --no-async-tensor-model-parallel-allreduce turns it off; Transformer Engine's Linear and
// LayerNormLinear do the same, "Overlap dgrad-RS/AR with wgrad"). The row-parallel layers'
// backward collectives (with SP the all-gathers of the output gradients) stay exposed.
// Under FP8 the all-gathers of sequence parallelism carry FP8 (MicroBatchShape::gather_bytes), the
// reduce-scatters the GEMMs' 16-bit outputs.
LayerComm TensorParallelComm(const Model& model, const LayerForward& fwd, const Training& tr,
                             const Link& tp_link, const TimeCalibration& c,
                             const MicroBatchShape& mb) {
  const double tp_activation_bytes = mb.tokens * mb.hidden * mb.bytes;
  const int tp_ranks = static_cast<int>(tr.tp);
  const double tp_all_reduce = AllReduceSeconds(tp_activation_bytes, tp_ranks, tp_link);
  const double tp_all_gather =
      AllGatherSeconds(mb.tokens * mb.hidden * mb.gather_bytes, tp_ranks, tp_link);
  const double tp_reduce_scatter = ReduceScatterSeconds(tp_activation_bytes, tp_ranks, tp_link);
  // One forward collective of a block: an all-reduce, or with SP an all-gather before the
  // column-parallel GEMM and a reduce-scatter after the row-parallel one (backward: the output
  // gradient's all-gather and the input gradient's reduce-scatter).
  const double tp_collective =
      tr.sequence_parallel ? tp_all_gather + tp_reduce_scatter : tp_all_reduce;
  // The share of the layers whose MLP block is tensor parallel: all, except the MoE layers with
  // whole experts (expert_tp 1) and no shared expert, whose tokens stay on their rank (Megatron-
  // Core's dispatcher gathers them over the experts' tp group only, here of one rank).
  const double mlp_tp = workload::ExpertTp(tr) == 1 && tr.tp > 1 && model.shared_experts == 0
                            ? 1 - static_cast<double>(workload::MoeLayerCount(model)) /
                                      static_cast<double>(model.layers)
                            : 1;
  const double tp_regather = tr.sequence_parallel ? (1 + mlp_tp) * tp_all_gather : 0;
  // Megatron's mlp / moe recompute re-runs the MLP block's forward collective (an all-reduce, or
  // with SP its all-gather and reduce-scatter, the same traffic) in the layers it covers.
  const double mlp_reruns = RecomputedMlpShare(model, tr);
  const double tp_layer_seconds =
      ((1 + mlp_tp) * mb.forward_passes + mlp_reruns) * tp_collective + tp_regather;
  double tp_hidden = 0;
  if (workload::UsesMegatronModel(tr.framework) && tr.tp > 1) {
    const double overlappable =
        tr.sequence_parallel ? 2 * tp_reduce_scatter + tp_regather : 2 * tp_all_reduce;
    const double window = (tr.sequence_parallel ? 2 : 1) * fwd.column_gemm_seconds;
    tp_hidden = std::min(overlappable, window);
  }
  return {tp_layer_seconds, tp_layer_seconds - (1 - c.overlapped_comm_slowdown) * tp_hidden};
}

// Context parallel: ring exchange of K and V chunks (cp - 1 hops forward; K, V and their
// gradients backward), overlapped with the attention of the chunk in hand (Megatron-LM
// context_parallel.rst: all-gather / reduce-scatter as ring point-to-point; Liu et al. 2023,
// Ring Attention, arXiv 2310.01889).
LayerComm ContextParallelComm(const Model& model, const Training& tr, const Hardware& hw,
                              const TimeCalibration& c, const LayerForward& fwd,
                              const MicroBatchShape& mb) {
  const double t = static_cast<double>(tr.tp), cp = static_cast<double>(tr.cp);
  const Link cp_link = GroupLink(tr.cp, tr.tp, hw, c);
  // K and V of the chunk as the attention kernel reads them (MLA: expanded per head from the
  // latent, KDim + VDim; 2 x kv_heads x head_dim for standard attention).
  const double kv_chunk =
      mb.tokens * static_cast<double>(workload::KDim(model) + workload::VDim(model)) / t * mb.bytes;
  const double ring = (cp - 1) * SendSeconds(kv_chunk, cp_link);
  const double passes = mb.forward_passes + 1;  // forward (again under full recompute), 2x back
  return {passes * ring, passes * std::max(0.0, ring - fwd.attention_seconds)};
}

// Expert parallel: all-to-all dispatch and combine of the routed tokens, forward and backward
// (Megatron-Core MoEAlltoAllTokenDispatcher), in the MoE layers; none of it hidden.
double ExpertParallelSeconds(const Model& model, const Training& tr, const Hardware& hw,
                             const TimeCalibration& c, const MicroBatchShape& mb) {
  const double t = static_cast<double>(tr.tp);
  const double tokens = mb.tokens / (tr.sequence_parallel ? t : 1);
  const double token_bytes = mb.hidden * mb.bytes;
  const double moe_share =
      static_cast<double>(workload::MoeLayerCount(model)) / static_cast<double>(model.layers);
  // Megatron's "moe" recompute re-runs the layer's forward, dispatch and combine included.
  const double passes =
      mb.forward_passes + (workload::RecomputesModule(tr, workload::kRecomputeMoe) ? 1 : 0);
  // Megatron-Core's expert grid orders etp, ep, expert dp, pp: the ep ranks are etp apart
  // (Megatron-LM@d98e8a64dd megatron/core/parallel_state.py, expert_decoder_rank_generator).
  const double dispatch =
      tr.moe_dispatcher == workload::MoeDispatcher::kFlex
          ? FlexDispatchSeconds(tokens, token_bytes, model, tr, hw, c)
          : AllToAllGroupSeconds(
                tokens * static_cast<double>(model.experts_per_token) * token_bytes, tr.ep,
                workload::ExpertTp(tr), hw, c);
  return 2 * passes * moe_share * dispatch;
}

// Whether the schedule runs one micro-batch's forward beside another's backward with their
// communication overlapped: Megatron's all-to-all overlap, DualPipe and DualPipeV.
bool OverlapsForwardAndBackward(const Training& tr) {
  return tr.moe_a2a_overlap || tr.pipeline_schedule != workload::PipelineSchedule::k1F1B;
}

// The share of a rank's forwards (and as many backwards) that Megatron's all-to-all overlap runs
// alone, with no other micro-batch's backward (forward) beside them: with pp 1 the first forward
// and the last backward ("The forward step for the first microbatch is executed alone, no a2a
// overlapping": Megatron-LM@d98e8a64dd megatron/core/pipeline_parallel/combined_1f1b.py);
// interleaved, the first stage's warm-up forwards, 2 (pp - 1) + (v - 1) g + 1 of its m v chunk
// forwards (schedules.py get_pp_rank_microbatches, with the one the overlap adds), and the
// cool-down backwards.
double UnpairedShare(const Training& tr, double micro_batches) {
  const double p = static_cast<double>(tr.pp);
  // DualPipe and DualPipeV pair forward and backward chunks in their steps 4 and 5 (nF0B1F1B0,
  // nB1F1B0; deepseek-ai/DualPipe@3da1bbe dualpipe.py, dualpipev.py): on the first rank all but
  // 1.5 pp - 1 of its m chunk forwards (DualPipe), all but 3 pp - 1 of its 2 m (DualPipeV).
  if (tr.pipeline_schedule == workload::PipelineSchedule::kDualPipe) {
    return std::min(1.0, (1.5 * p - 1) / micro_batches);
  }
  if (tr.pipeline_schedule == workload::PipelineSchedule::kDualPipeV) {
    return std::min(1.0, (3 * p - 1) / (2 * micro_batches));
  }
  if (tr.pp <= 1) return std::min(1.0, 1.0 / micro_batches);
  const double v = static_cast<double>(tr.vpp);
  const double warmup = 2.0 * static_cast<double>(tr.pp - 1) +
                        (v - 1) * static_cast<double>(workload::MicrobatchGroupSize(tr)) + 1;
  return std::min(1.0, warmup / (micro_batches * v));
}

// What a schedule that pairs forwards with other micro-batches' backwards leaves exposed of
// `seconds` of communication of which `paired_exposed` outlasts the paired compute: the unpaired
// chunks' share (UnpairedShare) whole, and of the paired ones that remainder plus the slowdown
// (overlapped_comm_slowdown) of the compute hiding the rest.
double PairedExposed(const Training& tr, const TimeCalibration& c, double seconds,
                     double paired_exposed, double micro_batches) {
  const double unpaired = UnpairedShare(tr, micro_batches);
  return unpaired * seconds + (1 - unpaired) * (paired_exposed + c.overlapped_comm_slowdown *
                                                                     (seconds - paired_exposed));
}

// The expert-parallel all-to-all of one layer per micro-batch, and the part compute does not hide:
// all of it, except where the schedule overlaps a forward with another micro-batch's backward
// (OverlapsForwardAndBackward: Megatron's all-to-all overlap, DualPipe), where a paired
// micro-batch's forward dispatch and combine (half of it: no full or moe recompute runs with
// Megatron's overlap) run under the other's backward of a layer, and its backward ones under the
// other's forward (PairedExposed).
LayerComm ExpertParallelComm(const Model& model, const Training& tr, const Hardware& hw,
                             const TimeCalibration& c, const LayerForward& fwd,
                             const MicroBatchShape& mb, double micro_batches) {
  const double a2a = ExpertParallelSeconds(model, tr, hw, c, mb);
  if (!OverlapsForwardAndBackward(tr)) return {a2a, a2a};
  const double direction = a2a / 2;
  const double paired_exposed =
      std::max(0.0, direction - fwd.backward_seconds) + std::max(0.0, direction - fwd.seconds);
  return {a2a, PairedExposed(tr, c, a2a, paired_exposed, micro_batches)};
}

// Activation offload: every saved activation goes to the host in forward and comes back in
// backward, overlapped with that layer's compute (Megatron-Core cpu offloading).
LayerComm ActivationOffloadComm(const Model& model, const ModelCounts& counts, const Training& tr,
                                const Hardware& hw, const TimeCalibration& c,
                                const LayerForward& fwd, double backward_factor) {
  const double host_bw = hw.host_bytes_per_second > 0
                             ? hw.host_bytes_per_second
                             : PcieGbytesPerSecond(std::nullopt) * 1e9 * c.pcie_efficiency;
  const double copy = LayerActivationBytes(model, counts, tr) / host_bw;
  return {2 * copy,
          std::max(0.0, copy - fwd.seconds) + std::max(0.0, copy - backward_factor * fwd.seconds)};
}

// Everything a layer sends per micro-batch: tensor, context and expert parallel, offload.
LayerComm LayerCommunication(const Model& model, const ModelCounts& counts, const Training& tr,
                             const Hardware& hw, const TimeCalibration& c, const LayerForward& fwd,
                             const Link& tp_link, const MicroBatchShape& mb, double backward_factor,
                             double micro_batches) {
  LayerComm layer = TensorParallelComm(model, fwd, tr, tp_link, c, mb);
  if (tr.cp > 1) {
    const LayerComm ring = ContextParallelComm(model, tr, hw, c, fwd, mb);
    layer.seconds += ring.seconds;
    layer.exposed += ring.exposed;
  }
  if (workload::IsMoe(model) && tr.ep > 1) {
    const LayerComm a2a = ExpertParallelComm(model, tr, hw, c, fwd, mb, micro_batches);
    layer.seconds += a2a.seconds;
    layer.exposed += a2a.exposed;
  }
  if (tr.offload_activations) {
    const LayerComm offload = ActivationOffloadComm(model, counts, tr, hw, c, fwd, backward_factor);
    layer.seconds += offload.seconds;
    layer.exposed += offload.exposed;
  }
  return layer;
}

// Pipeline sends per micro-batch (forward and backward, per virtual stage).
// Each tp rank sends 1/t of the boundary activation: with sequence parallelism it holds only
// that share; without, Megatron's scatter/gather optimisation splits it and all-gathers it over
// the node's NVLink after the send (Narayanan et al. 2021, arXiv 2104.04473, section 4.1).
double PipelineSendSeconds(const Training& tr, const Hardware& hw, const TimeCalibration& c,
                           const Link& tp_link, const MicroBatchShape& mb) {
  if (tr.pp <= 1) return 0;
  const double t = static_cast<double>(tr.tp), v = static_cast<double>(tr.vpp);
  const Link pp_link = GroupLink(tr.pp, tr.tp * tr.cp * tr.dp, hw, c);
  const double pp_message = mb.tokens * mb.hidden * mb.bytes / t;
  const double pp_gather =
      tr.sequence_parallel
          ? 0
          : AllGatherSeconds(mb.tokens * mb.hidden * mb.bytes, static_cast<int>(tr.tp), tp_link);
  return 2 * (SendSeconds(pp_message, pp_link) + pp_gather) * v;
}

// The parameters a GPU holds and updates, and how the data-parallel group shards them.
struct ParameterShares {
  double trainable = 0;
  double routed = 0;  // routed expert parameters (0 under LoRA: the experts are frozen)
  double all = 0;
  int64_t shards = 1;    // state shards (ZeRO / FSDP)
  int64_t replicas = 1;  // gradient replicas per shard (HSDP)
};

ParameterShares SharesOf(const Model& model, const ModelCounts& counts, const Training& tr) {
  ParameterShares shares;
  shares.trainable = TrainableParameterCount(model, counts, tr);
  shares.routed = IsLora(tr) ? 0 : counts.routed_expert_parameters;
  shares.all = counts.parameters;
  shares.shards = workload::StateShards(tr);
  shares.replicas = workload::GradientReplicas(tr) / shares.shards;
  return shares;
}

// Data parallel over dp x cp: dense parameters, and routed experts over dp x cp / ep.
DataParallelTime DataParallelStep(const ParameterShares& shares, const Training& tr,
                                  const Hardware& hw, const TimeCalibration& c,
                                  double micro_batches, double compute_mb, double stage_layers,
                                  double bytes) {
  const double t = static_cast<double>(tr.tp), p = static_cast<double>(tr.pp);
  const double ep = static_cast<double>(tr.ep);
  const double tail = 1.0 / std::max(1.0, stage_layers);  // last bucket / first gather
  DataParallelTime dp_time =
      DataParallelSeconds((shares.all - shares.routed) / (t * p) * bytes,
                          (shares.trainable - shares.routed) / (t * p) * bytes, shares.shards,
                          shares.replicas, tr, hw, c, micro_batches, compute_mb, tail);
  if (shares.routed > 0) {
    const int64_t expert_shards = workload::ExpertStateShards(tr);
    const double etp = static_cast<double>(workload::ExpertTp(tr));
    const double expert_bytes = shares.routed / (etp * p * ep) * bytes;
    const DataParallelTime experts =
        DataParallelSeconds(expert_bytes, expert_bytes, expert_shards, shares.replicas, tr, hw, c,
                            micro_batches, compute_mb, tail);
    dp_time.seconds += experts.seconds;
    dp_time.exposed += experts.exposed;
  }
  return dp_time;
}

// The parameters this GPU updates.
double LocalTrainable(const ParameterShares& shares, const Training& tr) {
  const double t = static_cast<double>(tr.tp), p = static_cast<double>(tr.pp);
  const double ep = static_cast<double>(tr.ep);
  const double etp = static_cast<double>(workload::ExpertTp(tr));
  return ((shares.trainable - shares.routed) / (t * p) + shares.routed / (etp * p * ep)) /
         (tr.zero_stage >= 1 ? static_cast<double>(shares.shards) : 1.0);
}

// Whether the configuration can be estimated at all (every degree and batch at least 1, a
// hardware peak, a transformer with its dimensions or a generic model with its FLOPs).
bool Estimable(const Model& model, const Training& tr, const Hardware& hw) {
  if (tr.tp < 1 || tr.pp < 1 || tr.dp < 1 || tr.vpp < 1 || tr.cp < 1 || tr.ep < 1 ||
      tr.micro_batch < 1 || tr.global_batch < 1 || hw.peak_flops <= 0 ||
      hw.memory_bytes_per_second <= 0) {
    return false;
  }
  if (model.kind == workload::ModelKind::kGeneric)
    return model.generic_forward_flops_per_sample > 0;
  return model.layers > 0 && model.hidden > 0 && model.heads > 0 && tr.seq_len >= tr.cp;
}

}  // namespace

double MoePermutationElements(const Model& model, const Training& tr) {
  if (!workload::IsMoe(model) || model.layers <= 0) return 0;
  const double k = static_cast<double>(model.experts_per_token);
  const double h = static_cast<double>(model.hidden);
  const bool sorted = tr.ep > 1 && model.experts / tr.ep > 1;
  const double per_moe_layer = (sorted ? 7 : 3) * k * h + h;
  return per_moe_layer * static_cast<double>(workload::MoeLayerCount(model)) /
         static_cast<double>(model.layers);
}

StepTime EstimateStepTime(const Model& model, const Training& tr, const Hardware& hw,
                          const TimeCalibration& c) {
  return EstimateStepTime(model, workload::CountModel(model), tr, hw, c);
}

StepTime EstimateStepTime(const Model& model, const ModelCounts& counts, const Training& training,
                          const Hardware& hw, const TimeCalibration& c) {
  // The run's shape: sequences of the mean padded length where batches are padded to less than
  // seq_len (a copy of plain fields, no allocation).
  Training tr = training;
  tr.seq_len = workload::RunSeqLen(training);
  tr.mean_seq_len = 0;
  StepTime out;
  out.step_seconds = kInf;
  if (!Estimable(model, tr, hw)) return out;
  if (model.kind == workload::ModelKind::kGeneric) return EstimateGenericStep(model, tr, hw, c);
  const double t = static_cast<double>(tr.tp), p = static_cast<double>(tr.pp);
  const double d = static_cast<double>(tr.dp), v = static_cast<double>(tr.vpp);
  const double cp = static_cast<double>(tr.cp);
  const double gpus = t * p * cp * d;
  MicroBatchShape mb;
  mb.tokens = static_cast<double>(tr.micro_batch * (tr.seq_len / tr.cp));
  mb.hidden = static_cast<double>(model.hidden);
  mb.bytes = ActivationBytes(tr.precision);
  mb.gather_bytes = Fp8SequenceParallelGathers(tr, hw) ? 1.0 : mb.bytes;
  mb.forward_passes = tr.recompute == Recompute::kFull ? 3 : 2;
  const double micro_batches = std::max(1.0, std::ceil(static_cast<double>(tr.global_batch) /
                                                       (d * static_cast<double>(tr.micro_batch))));
  const double mem_bw = hw.memory_bytes_per_second * c.memory_bandwidth_efficiency;

  // --- compute per layer per micro-batch: backward = 2x forward (1x without weight grads) ---
  const LayerForward fwd = EstimateLayerForward(model, counts, tr, hw, c);
  const double backward_factor = IsLora(tr) ? 1.0 : 2.0;
  const Recomputed recomputed = RecomputeCost(fwd, tr);
  const double layer_seconds =
      fwd.seconds + fwd.backward_seconds + c.per_layer_overhead_seconds + recomputed.seconds;
  // Logits + cross-entropy on the last stage, on the tokens the head runs on (the masked
  // positions of a masked-LM recipe that gathers them) and its width (the vocabulary, or 2 for a
  // span head).
  const OutputHead head = OutputHeadOf(model, tr);
  const double head_tokens = mb.tokens * head.token_fraction;
  const GemmRate peak_gemm16 =
      RateFor(hw.peak_flops_16bit * GemmMaxEfficiency(hw, c), mb.bytes, hw, c);
  const double logits_seconds =
      (1.0 + backward_factor) * GemmSeconds(head_tokens, head.width / t, mb.hidden, peak_gemm16) +
      3.0 * head_tokens * head.width / t * 4.0 * mb.bytes / mem_bw;
  const Link tp_link = GroupLink(tr.tp, 1, hw, c);
  const LayerComm layer_comm = LayerCommunication(model, counts, tr, hw, c, fwd, tp_link, mb,
                                                  backward_factor, micro_batches);

  // --- pipeline: per-micro-batch time of the slowest stage, and the bubble -------------------
  const workload::StageLayers stages = workload::PipelineStageLayers(model, tr);
  const StageCost stage_cost{layer_seconds, logits_seconds, layer_comm.seconds, layer_comm.exposed};
  const StageTime slowest = SlowestStage(stages, tr.pp, stage_cost);
  const double pp_seconds = PipelineSendSeconds(tr, hw, c, tp_link, mb);
  const double compute_mb = slowest.compute_seconds;
  const double bubble =
      BubbleSeconds(stage_cost, model.layers, slowest, p, v, pp_seconds) *
      ScheduleBubbleShare(tr, fwd.seconds, fwd.backward_seconds + recomputed.seconds,
                          fwd.weight_gradient_seconds);
  // DualPipe overlaps the pipeline sends with the paired chunks' compute as it does the
  // all-to-all (arXiv 2412.19437 section 3.2.1): only the unpaired chunks' sends are exposed.
  const double pp_exposed = tr.pipeline_schedule == workload::PipelineSchedule::k1F1B
                                ? pp_seconds
                                : PairedExposed(tr, c, pp_seconds, 0, micro_batches);

  const ParameterShares shares = SharesOf(model, counts, tr);
  const DataParallelTime dp_time =
      DataParallelStep(shares, tr, hw, c, micro_batches, compute_mb, slowest.layers, mb.bytes);
  const double optimizer_seconds =
      OptimizerSeconds(LocalTrainable(shares, tr), micro_batches, tr, c, mem_bw);

  out.compute_seconds = micro_batches * compute_mb + optimizer_seconds;
  out.communication_seconds =
      micro_batches * (slowest.communication_seconds + pp_seconds) + dp_time.seconds;
  out.bubble_seconds = bubble;
  out.exposed_seconds = micro_batches * (slowest.exposed_seconds + pp_exposed) + dp_time.exposed;
  out.step_seconds = out.compute_seconds + out.bubble_seconds + out.exposed_seconds;
  const double tokens_step = micro_batches * d * cp * mb.tokens;
  out.tokens_per_second_per_gpu = tokens_step / out.step_seconds / gpus;
  const double model_flops = ModelFlopsPerToken(model, counts, tr) * tokens_step;
  const double hw_flops = model_flops + recomputed.flops * t * cp *
                                            static_cast<double>(model.layers) * micro_batches * d;
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
    // No FP8 units: the layout runs as BF16 (no FP8 relative efficiency applies).
    hw.peak_flops = hw.peak_flops_16bit;
  }
  hw.simt_flops = gpu.fp32_tflops.value_or(0) * 1e12;
  hw.memory_bytes_per_second = gpu.memory_bandwidth_gbps * 1e9;
  hw.nvlink = offer.interconnect == catalog::Interconnect::kNvlink && gpu.nvlink_gbps.has_value();
  hw.intra_node_bytes_per_second =
      hw.nvlink ? *gpu.nvlink_gbps / 2.0 * 1e9 : PcieGbytesPerSecond(gpu.pcie_gen) * 1e9;
  hw.gpus_per_node = std::max(1, offer.gpu_count);
  hw.host_bytes_per_second = PcieGbytesPerSecond(gpu.pcie_gen) * 1e9 * calibration.pcie_efficiency;
  hw.network_bytes_per_second_per_node = offer.network_gbps.value_or(0) * 1e9 / 8.0;
  hw.efficiency = EfficiencyFor(gpu.architecture, calibration);
  return hw;
}

}  // namespace fulcrum::estimate
