// Per-GPU training memory. Every constant names its source; where a number is fulcrum's own
// assumption it says so. Symbols: P parameters on this GPU's model-parallel rank, N = dp (the
// ZeRO sharding degree), s sequence, b micro-batch, h hidden, a heads, f FFN hidden, v vocab,
// t tensor-parallel degree, r = kv_heads / heads.
#include "estimate/memory.h"

#include <algorithm>

namespace fulcrum::estimate {
namespace {

using workload::Framework;
using workload::GradPrecision;
using workload::Method;
using workload::Model;
using workload::ModelCounts;
using workload::ModelKind;
using workload::Optimizer;
using workload::Precision;
using workload::Recompute;
using workload::Training;

// CUDA context + kernel images outside PyTorch's allocator: 1343 MB measured on a V100 with
// PyTorch (HF transformers docs, model_memory_anatomy); the calibration README gives 0.3-1.4 GB.
constexpr double kCudaContextBytes = 1343.0 * 1024 * 1024;

// The HF Trainer and plain PyTorch DDP keep the same states (torch.amp: fp32 parameters and
// gradients, per-tensor allocation); the HF Trainer under torchrun is DDP.
bool IsHfOrDdp(Framework f) { return f == Framework::kHf || f == Framework::kDdp; }

// Caching-allocator reserve (max_memory_reserved - max_memory_allocated) as a fraction of the
// allocated peak. fulcrum's own assumption, not calibrated against measurements: frameworks that
// keep gradients in contiguous buffers (Megatron's grad buffer, FSDP flat parameters) fragment
// less than per-tensor allocation (HF Trainer, DeepSpeed's non-contiguous paths).
double AllocatorReserveFraction(Framework f) {
  switch (f) {
    case Framework::kMegatron:
      return 0.05;
    case Framework::kFsdp:
      return 0.05;
    case Framework::kDeepSpeed:
      return 0.10;
    case Framework::kHf:
    case Framework::kDdp:
      return 0.10;
    case Framework::kMegatronFsdp:  // contiguous FSDP buffers, as FSDP
      return 0.05;
    case Framework::kMegatronDeepSpeed:  // DeepSpeed's engine and optimizer, as DeepSpeed
      return 0.10;
  }
  return 0.10;
}

// DeepSpeed reduce_bucket_size default: 5e8 elements (DeepSpeed docs, config-json, ZeRO).
constexpr double kDeepSpeedReduceBucketElements = 5e8;

// QLoRA NF4 weights: 4 bits + double-quantised constants 0.127 bits per parameter
// (Dettmers et al. 2023, arXiv 2305.14314, section 3 "Double Quantization").
constexpr double kNf4BytesPerParam = (4.0 + 0.127) / 8.0;

bool IsMixed(Precision p) {
  return p == Precision::kFp16Mixed || p == Precision::kBf16Mixed || p == Precision::kFp8;
}

// Optimizer state bytes per trained parameter, excluding master weights: AdamW m and v in fp32
// (8); SGD momentum in fp32 (4); bitsandbytes 8-bit Adam, two 1-byte states (2; block-wise
// quantisation statistics are negligible, Dettmers et al. 2021, arXiv 2110.02861). Pure bf16
// keeps the states in bf16 (half of fp32). Megatron's precision-aware optimizer stores AdamW's
// moments in --exp-avg-dtype / --exp-avg-sq-dtype (Transformer Engine FusedAdam; an fp8 moment's
// per-tensor scale is negligible).
double StateBytes(const Training& t) {
  const bool moment_dtypes = t.exp_avg_dtype != workload::MomentDtype::kFp32 ||
                             t.exp_avg_sq_dtype != workload::MomentDtype::kFp32;
  if (t.optimizer == Optimizer::kAdamW && moment_dtypes) {
    return workload::MomentBytes(t.exp_avg_dtype) + workload::MomentBytes(t.exp_avg_sq_dtype);
  }
  double bytes = t.optimizer == Optimizer::kAdamW         ? 8
                 : t.optimizer == Optimizer::kSgdMomentum ? 4
                                                          : 2;
  if (t.precision == Precision::kPureBf16 && t.optimizer != Optimizer::kAdam8bit) bytes /= 2;
  return bytes;
}

double GradOverrideBytes(GradPrecision g, double framework_default) {
  switch (g) {
    case GradPrecision::kDefault:
      return framework_default;
    case GradPrecision::kFp16:
    case GradPrecision::kBf16:
      return 2;
    case GradPrecision::kFp32:
      return 4;
  }
  return framework_default;
}

// Bytes per parameter before sharding: weights w, gradients g, optimizer k (incl. fp32 master).
struct PerParam {
  double w = 0, g = 0, k = 0;
};

// Megatron (docs/user-guide/features/dist_optimizer.md): bf16 params + fp32 main grads + fp32
// master + Adam = 2 + 4 + 12 = 18; fp16 params/grads + fp32 main grads and master + Adam =
// 2 + 2 + (4 + 4 + 8) = 20; fp32 = 4 + 4 + 8 = 16.
PerParam MegatronBytes(const Training& t, double states) {
  if (!IsMixed(t.precision)) return {4, 4, states};
  if (t.precision == Precision::kFp16Mixed && t.grad_precision == GradPrecision::kDefault) {
    return {2, 2, 4 + 4 + states};
  }
  // apex's param remainders (Training::store_param_remainders): 2 bytes of master beside the
  // bf16 weight. Its bf16 gradient shard lives from the step's last gradient sync until the
  // optimizer's zero_grad at the start of the next step (NeMo's training_step calls it first),
  // so not beside the activations.
  const double master = t.store_param_remainders ? 2 : 4;
  return {2, GradOverrideBytes(t.grad_precision, 4), master + states};
}

// PyTorch AMP / FSDP MixedPrecision: the parameters themselves are fp32 (they are the master
// copy), gradients fp32, optimizer states only. Under DDP (zero 0) autocast caches a 16-bit copy
// of every weight for the forward (torch.autocast weight cache): +2 bytes.
PerParam TorchAmpBytes(const Training& t, double states) {
  const double cast_cache = t.zero_stage == 0 && IsMixed(t.precision) ? 2 : 0;
  return {4 + cast_cache, GradOverrideBytes(t.grad_precision, 4), states};
}

PerParam FullBytesPerParam(const Training& t) {
  const double states = StateBytes(t);
  if (t.precision == Precision::kPureBf16)
    return {2, GradOverrideBytes(t.grad_precision, 2), states};
  if (workload::IsFp32Storage(t.precision))
    return {4, GradOverrideBytes(t.grad_precision, 4), states};
  PerParam bytes;
  switch (t.framework) {
    case Framework::kMegatron:
      bytes = MegatronBytes(t, states);
      break;
    // DeepSpeed / ZeRO paper: 16-bit params and grads, K = 12 (fp32 master + Adam).
    case Framework::kDeepSpeed:
      bytes = {2, GradOverrideBytes(t.grad_precision, 2), 4 + states};
      break;
    case Framework::kFsdp:
    case Framework::kHf:
    case Framework::kDdp:
      bytes = TorchAmpBytes(t, states);
      break;
    // Megatron-FSDP: 16-bit compute weights, main gradients in the parameters' dtype ("auto", the
    // default of --megatron-fsdp-main-grads-dtype) and fp32 main parameters + optimizer states
    // (--megatron-fsdp-main-params-dtype default fp32; Megatron-LM
    // docs/user-guide/features/megatron_fsdp.md@d98e8a64dd, "Mixed-Precision & Quantization").
    case Framework::kMegatronFsdp:
      bytes = {2, GradOverrideBytes(t.grad_precision, 2), 4 + states};
      break;
    // Megatron-DeepSpeed in bf16 with ZeRO-1 runs DeepSpeed's BF16_Optimizer (engine.py picks it
    // for bf16 params, fp32 gradient accumulation and ZeRO stage 1): a full-size fp32 gradient
    // accumulation buffer (torch.zeros_like(bf16_groups_flat, dtype=grad_acc_dtype)) beside the
    // bf16 weights, fp32 master + Adam partitioned (deepspeedai/DeepSpeed@edaa7221
    // deepspeed/runtime/engine.py L1994-1996, deepspeed/runtime/bf16_optimizer.py L170-177); in
    // fp16 DeepSpeed's ZeRO optimizer, as kDeepSpeed.
    case Framework::kMegatronDeepSpeed:
      bytes = t.precision == Precision::kFp16Mixed
                  ? PerParam{2, GradOverrideBytes(t.grad_precision, 2), 4 + states}
                  : PerParam{2, GradOverrideBytes(t.grad_precision, 4), 4 + states};
      break;
  }
  return bytes;
}

// ZeRO partitioning (ZeRO paper Table 1): stage >= 1 shards optimizer states, >= 2 gradients,
// 3 parameters, each over N = StateShards (dp x cp; dp_shard x cp under HSDP). FSDP's
// SHARD_GRAD_OP (zero 2) shards its fp32 flat parameters too (they are the master copy; the
// unsharded 16-bit parameters it keeps between forward and backward are TorchBuffers').
ModelStateBytes ShardGeneric(double params, const PerParam& b, const Training& t) {
  const double n = static_cast<double>(workload::StateShards(t));
  const int64_t weight_stage = t.framework == Framework::kFsdp ? 2 : 3;
  ModelStateBytes s;
  s.weights_bytes = params * b.w / (t.zero_stage >= weight_stage ? n : 1);
  s.gradients_bytes = params * b.g / (t.zero_stage >= 2 ? n : 1);
  s.optimizer_bytes = params * b.k / (t.zero_stage >= 1 ? n : 1);
  return s;
}

// DeepSpeed's own accounting (docs/code-docs/source/memory.rst, estimate_zero2/3_model_states_
// mem_needs): ZeRO-1/2 GPU = 4P + 16P/N (16-bit params and grads + fp32 grad partition + K=12),
// 2P with optimizer offload; ZeRO-3 GPU = 4 * largest_layer + 18P/N, 4 * largest_layer + 2P/N
// with optimizer offload, 4 * largest_layer with parameter offload too.
ModelStateBytes DeepSpeedStates(double params, double largest, const PerParam& b,
                                const Training& t) {
  const double n = static_cast<double>(workload::StateShards(t));
  ModelStateBytes s;
  if (t.zero_stage == 0) return ShardGeneric(params, b, t);
  if (t.zero_stage <= 2) {
    s.weights_bytes = params * b.w;
    s.gradients_bytes = t.offload_optimizer ? 0 : params * b.g + params * 4 / n;
    s.optimizer_bytes = t.offload_optimizer ? 0 : params * b.k / n;
    s.buffer_bytes = std::min(kDeepSpeedReduceBucketElements, params) * b.g;
    return s;
  }
  s.weights_bytes = t.offload_params ? 0 : params * b.w / n;
  s.gradients_bytes = t.offload_optimizer ? 0 : params * 4 / n;
  s.optimizer_bytes = t.offload_optimizer ? 0 : params * b.k / n;
  s.buffer_bytes = 4 * largest;  // largest_layer_memory, with or without offload
  return s;
}

// FSDP / DDP buffers. DDP (zero 0, dp > 1) keeps gradient buckets as a second copy of every
// gradient (PyTorch DDP docs, gradient_as_bucket_view=False default). FSDP: the unsharded
// 16-bit parameters of the current and the prefetched unit plus the unsharded 16-bit gradients
// being reduce-scattered: 2 x 2 + 2 = 6 bytes per parameter of the largest unit; SHARD_GRAD_OP
// (zero 1/2) keeps all parameters unsharded in the compute dtype between forward and backward
// (2P; 4P in fp32).
// FSDP under pipeline parallelism (torchtitan): the stage's parameters stay unsharded from its
// first forward to its last backward (fsdp_reshard_after_forward "default" = not pp_enabled,
// torchtitan/distributed/fsdp.py get_fsdp_reshard_after_forward_policy), and the schedule runs
// every backward but the last without gradient sync (torch.distributed.pipelining stage.py
// backward_maybe_with_nosync: set_requires_gradient_sync(False)), so FSDP2 accumulates the
// unsharded gradients in the reduce dtype (FSDPParam.to_accumulated_grad_if_needed; torchtitan
// mixed_precision_reduce = float32): compute-dtype P + 4P for the stage.
double TorchBuffers(double params, double largest_unit, const PerParam& b, const Training& t) {
  if (t.zero_stage == 0) return workload::GradientReplicas(t) > 1 ? params * b.g : 0;
  const double compute_bytes = workload::IsFp32Storage(t.precision) ? 4 : 2;
  if (t.pp > 1) return (compute_bytes + 4) * params;
  if (t.zero_stage == 3) return 6 * largest_unit;
  return compute_bytes * params + 2 * largest_unit;
}

// Megatron-FSDP buffers: under optim_grads_params (zero 3) the all-gathered 16-bit parameters of
// the unit computing and of the one prefetched, plus the unit's unsharded gradients being
// reduce-scattered (as FSDP: 2 x 2 + g bytes per parameter of the largest unit); under
// optim_grads (zero 2) the parameters stay whole (in weights) and only the reduce buffer remains.
double MegatronFsdpBuffers(double largest_unit, const PerParam& b, const Training& t) {
  return (t.zero_stage >= 3 ? 4 + b.g : b.g) * largest_unit;
}

// TF1's graph optimizer with gradient accumulation adds each micro-batch's gradients into fp32
// accum_vars beside them, one per trainable variable, replicated (--zero 0)
// (NVIDIA/DeepLearningExamples@729963dd47 TensorFlow/LanguageModeling/BERT/optimization.py,
// create_optimizer).
double Tf1AccumulationBytes(double params, const Training& t) {
  const bool accumulates = t.optimizer_kernels == workload::OptimizerKernels::kTf1Graph &&
                           workload::MicroBatchesPerStep(t) > 1;
  return accumulates ? params * 4 : 0;
}

ModelStateBytes FrameworkModelStates(double params, double largest_tensor_params,
                                     const Training& t) {
  const PerParam b = FullBytesPerParam(t);
  if (t.framework == Framework::kDeepSpeed && IsMixed(t.precision)) {
    return DeepSpeedStates(params, largest_tensor_params, b, t);
  }
  if (t.framework == Framework::kMegatronDeepSpeed && t.precision == Precision::kFp16Mixed &&
      t.zero_stage >= 1) {
    return DeepSpeedStates(params, largest_tensor_params, b, t);
  }
  ModelStateBytes s = ShardGeneric(params, b, t);
  if (t.offload_optimizer) s.optimizer_bytes = 0;
  if (t.offload_params && t.zero_stage == 3) {
    s.weights_bytes = 0;
    if (t.framework == Framework::kFsdp) s.gradients_bytes = 0;  // FSDP CPUOffload moves grads too
  }
  if (t.framework == Framework::kFsdp || IsHfOrDdp(t.framework)) {
    s.buffer_bytes = TorchBuffers(params, largest_tensor_params, b, t);
  }
  if (t.framework == Framework::kMegatronFsdp) {
    s.buffer_bytes = MegatronFsdpBuffers(largest_tensor_params, b, t);
  }
  return s;
}

}  // namespace

double OptimizerStateBytesPerParam(const Training& t) { return StateBytes(t); }

ModelStateBytes FullModelStates(double params, double largest_tensor_params, const Training& t) {
  ModelStateBytes s = FrameworkModelStates(params, largest_tensor_params, t);
  s.gradients_bytes += Tf1AccumulationBytes(params, t);
  return s;
}

namespace {

// Bytes of one saved 16-bit activation element (4 in fp32 training).
double ActElementBytes(const Training& t) { return workload::IsFp32Storage(t.precision) ? 4 : 2; }

// Megatron-Core and Megatron-FSDP run their linear layers in Transformer Engine, which casts FP8
// layers' weights and inputs itself; torchao's float8 training (torchtitan, FSDP) does not.
bool RunsTransformerEngineFp8(const Training& t) {
  return t.precision == Precision::kFp8 && workload::UsesMegatronCore(t.framework);
}

// Bytes of a saved linear-layer input. Under FP8 with Transformer Engine each linear keeps, for its
// weight gradient, the FP8 cast it multiplied, column-wise data only (row-wise only where sequence
// parallelism gathers it again): 1 byte per element, and the 16-bit tensor is freed unless
// another operation saves it (NVIDIA/TransformerEngine@d0067d0da transformer_engine/pytorch/
// module/linear.py _linear_forward: "Discard row-wise data since it is not needed in backward
// pass", saved_inputmat = inputmat; layernorm_linear.py: the norm kernel writes ln_out already
// quantized (with_quantized_norm) and ln_out.update_usage(rowwise_usage=False) before
// save_for_backward; grouped_linear.py, the MoE experts: inputmat.update_usage(rowwise_usage=
// False, columnwise_usage=True)). Otherwise a 16-bit (fp32) element.
double LinearInputBytes(const Training& t) {
  return RunsTransformerEngineFp8(t) ? 1 : ActElementBytes(t);
}

}  // namespace

// Korthikanti et al. 2022 (arXiv 2205.05198) section 4.1, counted tensor by tensor so that GQA,
// gated MLPs, dropout-free models and flash attention follow the same rules. With a GPT layer
// (f = 4h, r = 1, dropout, no flash) this is exactly sbh(34 + 5as/h), sbh(10 + 24/t + 5as/(ht)),
// (sbh/t)(34 + 5as/h), the selective variants and 2sbh for full recompute.
// torchtitan's selective activation checkpointing ("op" policy, TorchtitanSavesMatmul): the
// layer's input, the outputs of flash attention (and its log-sum-exp) and of the odd-numbered
// matmuls (Llama: wq, wv, w1, w2; DeepSeek-V3: wq_a, wkv_a, wo, w3) are saved; everything else is
// recomputed in backward. MLA's down-projections run unsplit on every tp rank.
double TorchtitanSelectiveBytes(const Model& m, const ModelCounts& counts, const Training& t,
                                double sbh, double sbf) {
  const double e = ActElementBytes(t);
  const double tp = static_cast<double>(t.tp);
  const double h = static_cast<double>(m.hidden);
  const double sb = sbh / h;
  const double input = e * sbh / (t.sequence_parallel ? tp : 1);
  const double attention = e * sbh + 4 * static_cast<double>(m.heads) * sb;  // output + log-sum-exp
  double split_width = 0, duplicated_width = 0, ffn_outputs = 0;             // saved, per token
  int position = 0;
  const workload::AttentionMatrices& matrices = counts.attention_matrices;
  for (int i = 0; i < matrices.count; ++i) {
    const workload::AttentionMatrix& a = matrices.items[static_cast<size_t>(i)];
    if (!TorchtitanSavesMatmul(++position)) continue;
    (a.tp_split ? split_width : duplicated_width) += static_cast<double>(a.out);
  }
  for (const bool ffn_wide : kTorchtitanMlpOutputIsFfn) {
    if (!TorchtitanSavesMatmul(++position)) continue;
    if (ffn_wide) {
      ffn_outputs += 1;
    } else {
      split_width += h;
    }
  }
  const double matmuls = e * sb * split_width + ffn_outputs * e * sbf;
  return input + (attention + matmuls) / tp + e * sb * duplicated_width;
}

// The MLP width whose activations a token keeps, mean over the layers: ffn_hidden for a dense
// MLP; a MoE layer keeps its input to each of the top-k routed and the shared experts
// ((k + shared) x expert_ffn_hidden).
double MeanMlpActivationWidth(const Model& m) {
  const double f = static_cast<double>(m.ffn_hidden);
  if (!workload::IsMoe(m)) return f;
  const double moe = static_cast<double>(m.experts_per_token + m.shared_experts) *
                     static_cast<double>(workload::ExpertFfnHidden(m));
  const double layers = static_cast<double>(m.layers);
  const double dense = static_cast<double>(m.dense_layers);
  return (dense * f + (layers - dense) * moe) / layers;
}

// Bytes per token of what a layer keeps beside its tensor-parallel shards (split only by sequence
// parallelism), mean over the layers:
// - the inputs of its two norms (16-bit) and their outputs. Megatron-Core with Transformer Engine
//   fuses each norm into the next linear (LayerNormLinear), which saves the norm's input, its
//   output (under sequence parallelism the local shard: the gathered copy is freed after the GEMM
//   and gathered again in backward) and the fp32 rsigma, s b / t floats, not counted
//   (NVIDIA/TransformerEngine@d0067d0da transformer_engine/pytorch/module/layernorm_linear.py,
//   _LayerNormLinear.forward: ln_out_needs_gather, save_for_backward(inputmat, ..., ln_out, mu,
//   rsigma)). Each norm output is one linear input (LinearInputBytes) with these exceptions, which
//   matter only where that is FP8: MLA's input norm feeds two linears, the query's and the
//   latent's down-projections, each keeping its own cast (Megatron-LM@d98e8a64dd
//   megatron/core/models/gpt/gpt_layer_specs.py: input_layernorm, then linear_q_down_proj and
//   linear_kv_down_proj = backend.linear()); a MoE layer's MLP norm output is the router's input,
//   which the router keeps in 16 bits (megatron/core/transformer/moe/moe_utils.py
//   RouterGatingLinearFunction.forward: save_for_backward(inp, weight, bias)), and its shared
//   experts' first linear keeps a cast beside it;
// - MoE token dispatch: the permuted copies of the layer input sent to the k experts, which the
//   experts' first grouped linear keeps (a linear input); not the experts' outputs, which no
//   operation keeps (ReplicatedBytesPerToken);
// - MLA's latents: the outputs of the down-projections (q_lora_rank, kv_lora_rank + qk_rope),
//   which the up-projections' LayerNormLinear keeps as its norm input, and the outputs of their
//   RMSNorms (q_lora_rank, kv_lora_rank), the up-projections' inputs. The down-projections run
//   duplicated on every tp rank on the sequence shard ("[s / TP, b, q_lora_rank]" under sequence
//   parallelism; Megatron-LM@d98e8a64dd megatron/core/transformer/multi_latent_attention.py
//   _qkv_down_projection).
// Without FP8 every term is a 16-bit element: 4h + k h (MoE layers) + 2 q_lora_rank + kv_lora_rank
// + qk_rope + kv_lora_rank.
double ReplicatedBytesPerToken(const Model& m, const Training& t) {
  const double e = ActElementBytes(t);
  const double linear = LinearInputBytes(t);
  const bool cast_copies = linear != e;  // each linear keeps its own cast of a shared input
  const double h = static_cast<double>(m.hidden);
  const double layers = static_cast<double>(m.layers);
  const double moe_share = static_cast<double>(workload::MoeLayerCount(m)) / layers;
  const double attention_norm = workload::IsMla(m) && cast_copies ? 2 * linear : linear;
  double moe_mlp_norm = e + (m.shared_experts > 0 && cast_copies ? linear : 0);
  // Dispatch: the k copies of the token each expert's fc1 keeps as its input. The experts'
  // outputs are not kept: the router's probabilities are applied inside the activation
  // (Megatron-LM@d98e8a64dd megatron/core/transformer/moe/experts.py TEGroupedMLP bias_act_func,
  // weighted_bias_swiglu_impl(..., permuted_probs, ...), which saves its input and the
  // probabilities), and the combine's unpermute is called without probabilities, an index
  // scatter that saves no tensor (moe/token_dispatcher.py combine_postprocess; moe_utils.py
  // unpermute).
  const double k = static_cast<double>(m.experts_per_token);
  moe_mlp_norm += k * linear;
  double bytes = (2 * e + attention_norm + (1 - moe_share) * linear + moe_share * moe_mlp_norm) * h;
  if (workload::IsMla(m)) {
    const double q_lora = static_cast<double>(m.q_lora_rank);
    const double kv_lora = static_cast<double>(m.kv_lora_rank);
    bytes +=
        (q_lora + static_cast<double>(workload::MlaLatentDim(m))) * e + (q_lora + kv_lora) * linear;
  }
  return bytes;
}

// Bytes per token (mean over the layers) that Megatron-Core's --recompute-modules other than
// core_attn discard from what LayerActivationBytes counts, split into the part replicated over tp
// (split only by sequence parallelism) and the part split by tp. Each module's checkpoint at
// Megatron-LM@d98e8a64dd (gpt_layer_specs.py get_gpt_layer_with_transformer_engine_submodules for
// which norms are modules: MLA's input_layernorm and a MoE layer's pre_mlp_layernorm; standard
// attention's and a dense MLP's norms are fused into linear_qkv / linear_fc1, IdentityOp, so
// "layernorm" finds nothing there, transformer_layer.py):
// - layernorm: CheckpointWithoutOutput over the norm keeps its input and frees its output's storage
//   (tensor_parallel/random.py discard_output_and_register_recompute), which every consumer saved:
//   MLA's down-projections (with FP8, MLASelfAttention.set_for_recompute_input_layernorm makes
//   linear_q_down_proj, if q_lora_rank, and linear_kv_down_proj save that 16-bit input instead of
//   their casts; multi_latent_attention.py), the MoE router, and the shared experts' first linear
//   (MoELayer.set_for_recompute_pre_mlp_layernorm, moe/moe_layer.py). Without query compression
//   q_proj keeps its FP8 cast;
// - mla_up_proj: CheckpointWithoutOutput over the up-projections and RoPE
//   (multi_latent_attention.py, qkv_up_proj_and_rope_apply) keeps its inputs, the latents, and
//   frees query, key and value after core attention (the Q, K, V the attention saved), and the
//   up-projections' own saves (their fused norms' outputs) are never made; without query
//   compression its input is the input norm's output, which it then keeps in 16 bits;
// - moe_act: CheckpointWithoutOutput over the routed experts' activation (moe/experts.py
//   TEGroupedMLP: bias_act_output) keeps its input (fc1's output) and frees the output, fc2's input
//   (with FP8, set_save_original_input(linear_fc2): the 16-bit input instead of its cast);
// - mlp (dense layers), moe (MoE layers), shared_experts: tensor_parallel.checkpoint /
//   te_checkpoint keeps the module's input (the residual stream, counted as the MLP norm's input,
//   or a MoE layer's norm output) and none of what the module saves inside: a dense MLP's norm
//   output and its MLP tensors; the MoE layer's shared-expert cast, dispatch copies and expert
//   tensors (transformer_layer.py recompute_mlp; moe_layer.py moe_layer_recompute,
//   shared_experts_recompute).
struct RecomputedBytesPerToken {
  double replicated = 0;
  double split = 0;
};

// Bytes a token's MLP keeps per unit of its width: the activation's input and the
// down-projection's input (a linear input, LinearInputBytes). A gated MLP in eager PyTorch keeps
// gate, up, SiLU(gate) and the product; Megatron's fused bias_swiglu keeps only its input (gate
// and up) and recomputes the SiLU (Megatron-LM@d98e8a64dd megatron/core/fusions/
// fused_bias_swiglu.py, SwiGLUFunction: save_for_backward(input)), as float8_e4m3fn under
// activation_func_fp8_input_store (input.to(torch.float8_e4m3fn), cast back in backward).
double MlpBytesPerWidth(const Model& m, const Training& t) {
  const double e = ActElementBytes(t);
  const double linear = LinearInputBytes(t);
  if (m.mlp != workload::MlpKind::kSwiglu) return e + linear;
  if (!workload::UsesMegatronModel(t.framework)) return 3 * e + linear;
  return 2 * (t.activation_fp8_input_store ? 1 : e) + linear;
}

// MLA's input-norm outputs still kept (per token, in units of hidden), as ReplicatedBytesPerToken
// counts them without recompute (attention_norm): one 16-bit tensor, or under FP8 one cast per
// down-projection.
double MlaInputNormKept(const Model& m, const Training& t, double e, double linear) {
  const bool layernorm = workload::RecomputesModule(t, workload::kRecomputeLayernorm);
  const bool up_proj = workload::RecomputesModule(t, workload::kRecomputeMlaUpProj);
  if (linear == e) return layernorm ? 0 : e;
  const bool q_lora = m.q_lora_rank > 0;
  double kept = layernorm ? 0 : linear;  // linear_kv_down_proj's cast
  if (q_lora) return kept + (layernorm ? 0 : linear);
  if (!up_proj) return kept + linear;  // q_proj's cast (not set to save its 16-bit input)
  return kept + (layernorm ? 0 : e);   // the up-projection checkpoint's 16-bit input
}

RecomputedBytesPerToken RecomputedModuleBytes(const Model& m, const Training& t) {
  RecomputedBytesPerToken out;
  const uint32_t modules = t.recompute == Recompute::kSelective ? t.recompute_modules : 0;
  if ((modules & ~workload::kRecomputeCoreAttn) == 0) return out;
  const double e = ActElementBytes(t);
  const double linear = LinearInputBytes(t);
  const double h = static_cast<double>(m.hidden);
  const double layers = static_cast<double>(m.layers);
  const double moe_share = static_cast<double>(workload::MoeLayerCount(m)) / layers;
  const double mlp_per_width = MlpBytesPerWidth(m, t);
  const bool moe = modules & workload::kRecomputeMoe;
  if (workload::IsMla(m)) {
    const double attention_norm = linear != e ? 2 * linear : linear;
    out.replicated += (attention_norm - MlaInputNormKept(m, t, e, linear)) * h;
    if (modules & workload::kRecomputeMlaUpProj) {
      const double q_lora = static_cast<double>(m.q_lora_rank);
      out.replicated += (q_lora + static_cast<double>(m.kv_lora_rank)) * linear;
      out.split +=
          e * static_cast<double>(workload::QDim(m) + workload::KDim(m) + workload::VDim(m));
    }
  }
  const double dense_share = 1 - moe_share;
  if (modules & workload::kRecomputeMlp) {
    out.replicated += dense_share * linear * h;
    out.split += dense_share * static_cast<double>(m.ffn_hidden) * mlp_per_width;
  }
  if (!workload::IsMoe(m)) return out;
  const double fe = static_cast<double>(workload::ExpertFfnHidden(m));
  const double k = static_cast<double>(m.experts_per_token);
  const double shared = static_cast<double>(m.shared_experts);
  const bool cast_copies = linear != e;
  const bool layernorm = modules & workload::kRecomputeLayernorm;
  double moe_replicated = layernorm ? e : 0;  // the norm output: router input, checkpoint input
  const bool shared_cast_gone = layernorm || moe || (modules & workload::kRecomputeSharedExperts);
  if (shared > 0 && cast_copies && shared_cast_gone) moe_replicated += linear;
  if (moe) moe_replicated += k * linear;  // the dispatched copies
  out.replicated += moe_share * moe_replicated * h;
  double moe_split = 0;
  if (moe) {
    moe_split = (k + shared) * fe * mlp_per_width;
  } else {
    if (modules & workload::kRecomputeSharedExperts) moe_split += shared * fe * mlp_per_width;
    // moe_act's checkpoint keeps the activation's input as fc1 produced it, 16-bit (no FP8
    // store inside it: CheckpointWithoutOutputFunction.forward runs the activation under
    // torch.no_grad() and saves its arguments, tensor_parallel/random.py), and frees fc2's input.
    const double kept_by_moe_act = (m.mlp == workload::MlpKind::kSwiglu ? 2 : 1) * e;
    if (modules & workload::kRecomputeMoeAct) {
      moe_split += k * fe * (mlp_per_width - kept_by_moe_act);
    }
  }
  out.split += moe_share * moe_split;
  return out;
}

// RecomputedModuleBytes for one layer of one micro-batch on this GPU: the tokens of its sequence
// shard (seq_len / cp x micro_batch), the replicated part split by sequence parallelism, the rest
// by tp.
double RecomputedModuleLayerBytes(const Model& m, const Training& t) {
  const RecomputedBytesPerToken per_token = RecomputedModuleBytes(m, t);
  const double sb = static_cast<double>(t.seq_len / t.cp) * static_cast<double>(t.micro_batch);
  const double tp = static_cast<double>(t.tp);
  return sb * (per_token.replicated / (t.sequence_parallel ? tp : 1) + per_token.split / tp);
}

// DeepSeek-V3's low-precision activation caching (Training::fp8_activation_cache; arXiv
// 2412.19437v2 section 3.3.3, "Low-Precision Activation"): "(1) Inputs of the Linear after the
// attention operator. These activations are also used in the backward pass of the attention
// operator [...] We adopt a customized E5M6 data format exclusively for these activations"; "(2)
// Inputs of the SwiGLU operator in MoE [...] we cache the inputs of the SwiGLU operator and
// recompute its output in the backward pass. These activations are also stored in FP8 with our
// fine-grained quantization method" (1x128 tiles, section 3.3.2). So the attention output is kept
// once, 12 bits, where Megatron-Core keeps the attention's 16-bit output and the projection's FP8
// cast; and each MoE expert (routed and shared: the report's "in MoE") keeps its gate and up inputs
// in 1 byte and no down-projection input. What remains of Megatron-Core's count is taken as it
// is. Bytes per token, mean over the layers, all split by tp, that the cache saves.
constexpr double kE5m6Bytes = 12.0 / 8;  // 1 sign, 5 exponent, 6 mantissa bits
// One scale per 1x128 tile; its width is fulcrum's assumption (4 bytes, as an FP32 scale), which
// the report does not state (section 3.3.2 says only that the scales of these tensors are powers
// of 2).
constexpr double kTileScaleBytes = 4.0 / 128;

double Fp8CacheSavedBytes(const Model& m, const Training& t) {
  if (!t.fp8_activation_cache || m.kind == ModelKind::kGeneric) return 0;
  const double e = ActElementBytes(t);
  const double linear = LinearInputBytes(t);
  const double projection_kept = e + (linear != e ? linear : 0);
  double saved = std::max(0.0, projection_kept - (kE5m6Bytes + kTileScaleBytes)) *
                 static_cast<double>(workload::AttentionOutDim(m));
  const uint32_t modules = t.recompute == Recompute::kSelective ? t.recompute_modules : 0;
  if (!workload::IsMoe(m) || m.mlp != workload::MlpKind::kSwiglu ||
      (modules & workload::kRecomputeMoe)) {
    return saved;
  }
  const double cached = 2 * (1 + kTileScaleBytes);  // gate and up
  const double per_width = MlpBytesPerWidth(m, t);
  // What RecomputedModuleBytes leaves: moe_act keeps the routed SwiGLU's 16-bit input;
  // shared_experts keeps nothing of the shared experts.
  const double routed_kept = (modules & workload::kRecomputeMoeAct) ? 2 * e : per_width;
  const double shared_kept = (modules & workload::kRecomputeSharedExperts) ? 0 : per_width;
  const double moe_share =
      static_cast<double>(workload::MoeLayerCount(m)) / static_cast<double>(m.layers);
  saved += moe_share * static_cast<double>(workload::ExpertFfnHidden(m)) *
           (static_cast<double>(m.experts_per_token) * std::max(0.0, routed_kept - cached) +
            static_cast<double>(m.shared_experts) * std::max(0.0, shared_kept - cached));
  return saved;
}

double LayerActivationBytes(const Model& m, const Training& t) {
  return LayerActivationBytes(m, workload::CountModel(m), t);
}

double LayerActivationBytes(const Model& m, const ModelCounts& counts, const Training& t) {
  if (m.kind == ModelKind::kGeneric) return 0;
  const double e = ActElementBytes(t);
  const double tp = static_cast<double>(t.tp);
  // Context parallelism: every tensor of the layer holds this rank's seq_len / cp tokens
  // (Megatron-LM docs/source/api-guide/context_parallel.rst: "CP partitions the network inputs
  // and all activations along sequence dimension").
  const double sb = static_cast<double>(t.seq_len / t.cp) * static_cast<double>(t.micro_batch);
  const double sbh = sb * static_cast<double>(m.hidden);
  if (t.recompute == Recompute::kFull) {
    // Only each layer's input is kept; Megatron distributes it over tp with sequence parallel.
    return e * sbh / (t.sequence_parallel ? tp : 1);
  }
  const double sbf = sb * MeanMlpActivationWidth(m);
  const double mask = m.dropout ? 1 : 0;  // 1-byte dropout masks
  if (t.recompute == Recompute::kSelective && t.framework == Framework::kFsdp) {
    return TorchtitanSelectiveBytes(m, counts, t, sbh, sbf);
  }
  // Not split by tensor parallelism (split only with sequence parallelism): the norms' inputs
  // and outputs, MoE dispatch, MLA's latents (ReplicatedBytesPerToken) and the two dropout masks.
  // The residual adds save nothing, and without dropout (Llama) no mask is drawn.
  const double replicated = sb * ReplicatedBytesPerToken(m, t) + 2 * mask * sbh;
  // Split by tp: Q (sbh), K and V (r*sbh each), the output-projection input (sbh) (MLA: Q and K
  // of heads x (qk_nope + qk_rope), V and the output of heads x v_head_dim); the MLP's tensors
  // (MlpBytesPerWidth x sbf). Under Transformer Engine FP8 the output projection also keeps its
  // cast of the attention output beside the 16-bit tensor the attention saves.
  const double linear = LinearInputBytes(t);
  const double attention_operands = static_cast<double>(counts.attention_operand_width);
  const double projection_cast =
      linear != e ? linear * static_cast<double>(workload::AttentionOutDim(m)) : 0;
  // Core attention recomputed (Megatron-Core's selective default) runs inside
  // tensor_parallel.checkpoint, which saves only its inputs (Q, K, V): its output is kept only
  // by the output projection, which under Transformer Engine FP8 saves its FP8 cast, not the
  // 16-bit tensor (NVIDIA/Megatron-LM@f41b4fd4e5 megatron/core/transformer/attention.py,
  // _checkpointed_attention_forward). DeepSeek's FP8 activation cache counts that tensor itself.
  const bool output_unkept = projection_cast > 0 && workload::UsesMegatronCore(t.framework) &&
                             workload::RecomputesModule(t, workload::kRecomputeCoreAttn) &&
                             !t.fp8_activation_cache;
  const double attention_kept =
      attention_operands - (output_unkept ? static_cast<double>(workload::AttentionOutDim(m)) : 0);
  const double split = sb * (e * attention_kept + projection_cast) + MlpBytesPerWidth(m, t) * sbf;
  // Core attention: softmax output (2as^2b), dropout mask (as^2b) and dropout output (2as^2b);
  // flash attention keeps only the fp32 log-sum-exp per row (4asb); selective recompute drops it.
  // Transformer Engine's fused attention saves q, k, v and its output (counted above, the output
  // being the projection's input) and the softmax statistics (NVIDIA/TransformerEngine@d0067d0da
  // transformer_engine/pytorch/attention/dot_product_attention/backends.py, FusedAttnFunc.forward).
  const double a = static_cast<double>(m.heads);
  const double s = static_cast<double>(t.seq_len);
  double attention = 0;
  if (t.flash_attention) {
    attention = 4 * a * sb;
  } else if (!workload::RecomputesModule(t, workload::kRecomputeCoreAttn)) {
    attention = a * s * sb * (e + mask * (1 + e));
  }
  const double sp_divisor = t.sequence_parallel ? tp : 1;
  // torchtitan's sequence parallelism redistributes the attention's and the MLP's input from the
  // sequence shard to the whole (PrepareModuleInput Shard(1) -> Replicate at pytorch/torchtitan@
  // 31a17bfd torchtitan/models/llama3/infra/parallelize.py apply_tp; in_dst_shardings tp=R in
  // torchtitan/models/common/decoder_sharding.py at b5bcd76c), and the column-parallel linears
  // save that gathered tensor; Megatron saves its shard and gathers again in backward
  // (Korthikanti et al. 2022 section 4.2.2).
  const double gathered = t.framework == Framework::kFsdp && t.sequence_parallel ? 2 * e * sbh : 0;
  return (replicated - gathered) / sp_divisor + gathered +
         (split + attention - sb * Fp8CacheSavedBytes(m, t)) / tp -
         RecomputedModuleLayerBytes(m, t);
}

namespace {

// Of `saved_bytes`, what activation offload keeps on the GPU: two layers' (`layer_bytes` each),
// the layer computing and the one being copied (double buffering).
double OffloadKeptBytes(double saved_bytes, double layer_bytes) {
  return std::min(saved_bytes, 2 * layer_bytes);
}

}  // namespace

double OffloadedActivationBytes(const Model& m, const Training& t, double saved_bytes) {
  return OffloadedActivationBytes(m, workload::CountModel(m), t, saved_bytes);
}

double OffloadedActivationBytes(const Model& m, const ModelCounts& counts, const Training& t,
                                double saved_bytes) {
  if (!t.offload_activations) return saved_bytes;
  return OffloadKeptBytes(saved_bytes, LayerActivationBytes(m, counts, t));
}

// Under full recompute the backward re-runs one layer's forward at a time and holds that layer's
// full activations until its backward is done: checkpoints + one segment (Chen et al. 2016,
// "Training Deep Nets with Sublinear Memory Cost", arXiv 1604.06174, section 4).
double RecomputeWorkingSetBytes(const Model& m, const Training& t) {
  return RecomputeWorkingSetBytes(m, workload::CountModel(m), t);
}

double RecomputeWorkingSetBytes(const Model& m, const ModelCounts& counts, const Training& t) {
  // Megatron's module recompute (beyond core_attn) re-creates what it discarded when the layer's
  // backward reaches it, and those tensors live until that layer's backward has used them: one
  // layer's worth on top of the checkpoints (core_attn's re-run is not counted, as before).
  if (t.recompute == Recompute::kSelective) return RecomputedModuleLayerBytes(m, t);
  if (t.recompute != Recompute::kFull) return 0;
  Training kept = t;
  kept.recompute = Recompute::kNone;
  return LayerActivationBytes(m, counts, kept);
}

double PipelineActivationBytes(const Model& m, const Training& t) {
  return PipelineActivationBytes(m, workload::CountModel(m), t);
}

double PipelineActivationBytes(const Model& m, const ModelCounts& counts, const Training& t) {
  if (m.kind == ModelKind::kGeneric) {
    return m.generic_activation_bytes_per_sample * static_cast<double>(t.micro_batch) *
           (workload::IsFp32Storage(t.precision) ? 2 : 1);
  }
  return StageActivationBytes(m, counts, t, workload::PipelineStageLayers(m, t).first, t.pp);
}

namespace {

// Of the first `chunk_forwards` forwards a rank of the interleaved schedule runs, how many run
// model chunk `chunk`: Megatron-LM's schedule table takes the micro-batches in groups of g (the
// last group takes all that remain) and runs each group on chunk 0, then chunk 1, ..., v - 1
// (Megatron-LM@d98e8a64dd megatron/core/pipeline_parallel/schedules.py, get_schedule_table);
// torch.distributed.pipelining's ScheduleInterleaved1F1B runs the same order with g = m / rounds
// (pytorch/pytorch@00722e648b torch/distributed/pipelining/schedules.py,
// ScheduleInterleaved1F1B: forward_stage_index).
int64_t ForwardsOnChunk(int64_t chunk_forwards, int64_t chunk, int64_t micro_batches, int64_t group,
                        int64_t chunks_per_rank) {
  int64_t seen = 0, on_chunk = 0;
  for (int64_t start = 0; start < micro_batches && seen < chunk_forwards; start += group) {
    const int64_t size = start + group >= micro_batches ? micro_batches - start : group;
    const int64_t in_group = std::min(chunk_forwards - seen, size * chunks_per_rank);
    on_chunk += std::clamp<int64_t>(in_group - chunk * size, 0, size);
    seen += in_group;
  }
  return on_chunk;
}

// Layers' worth of activations the interleaved schedule keeps in flight on the stage of rank
// pp - in_flight_limit at its first backward: its warm-up, 2 (pp - rank - 1) + (v - 1) g chunk
// forwards, and one more, at most all m v (Megatron-LM@d98e8a64dd schedules.py,
// get_pp_rank_microbatches; PyTorch's _get_warmup_ops counts the same). A chunk holds
// stage_layers / v layers, except where the first (last) stage's layers plus one are a multiple of
// v and its layers are not: the embedding (the output layer and loss) then takes one layer's place
// in the stage's first (last) chunk, Megatron-LM's account_for_embedding_in_pipeline_split /
// account_for_loss_in_pipeline_split (Megatron-LM@d98e8a64dd
// megatron/core/transformer/transformer_block.py,
// get_num_layers_to_build: that chunk builds one layer fewer) and Llama 3 405B's split ("the first
// model chunk on the first stage has only the embedding", arXiv 2407.21783, section 3.3.2).
double InterleavedLayersInFlight(const Training& t, int64_t stage_layers, int64_t in_flight_limit,
                                 int64_t micro_batches) {
  const int64_t rank = t.pp - in_flight_limit;
  const int64_t group = workload::MicrobatchGroupSize(t);
  // Megatron's all-to-all overlap runs one more warm-up forward ("we schedule one extra
  // micro-batch forward step before the 1f1b stages", schedules.py get_pp_rank_microbatches).
  const int64_t extra = t.moe_a2a_overlap ? 1 : 0;
  const int64_t chunks =
      std::min(micro_batches * t.vpp, 2 * (t.pp - rank - 1) + (t.vpp - 1) * group + 1 + extra);
  const bool end_stage = rank == 0 || rank == t.pp - 1;
  if (!end_stage || stage_layers % t.vpp == 0 || (stage_layers + 1) % t.vpp != 0) {
    return static_cast<double>(chunks) * static_cast<double>(stage_layers) /
           static_cast<double>(t.vpp);
  }
  const int64_t per_chunk = (stage_layers + 1) / t.vpp;
  const int64_t short_chunk = rank == 0 ? 0 : t.vpp - 1;
  return static_cast<double>(chunks * per_chunk -
                             ForwardsOnChunk(chunks, short_chunk, micro_batches, group, t.vpp));
}

// One layer's activations under the training and the full-recompute working set: what every
// pipeline stage's activations follow from, computed once per estimate.
struct LayerActivations {
  double saved_bytes = 0;        // LayerActivationBytes
  double working_set_bytes = 0;  // RecomputeWorkingSetBytes
};

LayerActivations LayerActivationsOf(const Model& m, const ModelCounts& counts, const Training& t) {
  return {LayerActivationBytes(m, counts, t), RecomputeWorkingSetBytes(m, counts, t)};
}

// The activations of `layers_in_flight` layers' worth of saved tensors (kept on the host but two
// under activation offload) and the recompute working set.
double ActivationsInFlight(const Training& t, const LayerActivations& layer,
                           double layers_in_flight) {
  const double saved = layers_in_flight * layer.saved_bytes;
  return (t.offload_activations ? OffloadKeptBytes(saved, layer.saved_bytes) : saved) +
         layer.working_set_bytes;
}

// StageActivationBytes from the layer's activations.
double StageActivations(const Training& t, const LayerActivations& layer, int64_t stage_layers,
                        int64_t in_flight_limit) {
  const int64_t micro_batches = std::max<int64_t>(1, workload::MicroBatchesPerStep(t));
  // Layers' worth of activations in flight at the stage's peak. 1F1B: min(pp - rank, m) micro-
  // batches of the stage's layers. Interleaved: InterleavedLayersInFlight, g =
  // microbatch_group_size_per_vp_stage (pp by default, at most m; Megatron-LM@d98e8a64dd
  // megatron/core/model_parallel_config.py: default pipeline_model_parallel_size). On an even
  // first stage this is Korthikanti et al.'s L/pp x pp x (1 + (pp-1)/(pp v)) (arXiv 2205.05198,
  // section 4.2.3); the last stage holds (v - 1) g + 1 chunks, not one micro-batch. The chunks'
  // outputs are not counted: Megatron frees an output's data once it is sent
  // (deallocate_output_tensor; megatron/training/argument_utils.py sets
  // deallocate_pipeline_outputs), and a received input is its first layer's saved norm input.
  // Without a pipeline, Megatron's all-to-all overlap runs micro-batch i + 1's forward of layer j
  // beside micro-batch i's backward of layer L - 1 - j (Megatron-LM@d98e8a64dd
  // megatron/core/models/common/model_chunk_schedule_plan.py, TransformerModelChunkSchedulePlan
  // .run): the two hold about one micro-batch of layers between them, and one more layer while a
  // pair runs.
  const double paired_layer = t.moe_a2a_overlap && t.pp == 1 ? 1 : 0;
  const double layers_in_flight =
      t.vpp > 1 ? InterleavedLayersInFlight(t, stage_layers, in_flight_limit, micro_batches)
                : static_cast<double>(stage_layers) *
                          static_cast<double>(std::min(in_flight_limit, micro_batches)) +
                      paired_layer;
  return ActivationsInFlight(t, layer, layers_in_flight);
}

}  // namespace

double StageActivationBytes(const Model& m, const Training& t, int64_t stage_layers,
                            int64_t in_flight_limit) {
  return StageActivationBytes(m, workload::CountModel(m), t, stage_layers, in_flight_limit);
}

double StageActivationBytes(const Model& m, const ModelCounts& counts, const Training& t,
                            int64_t stage_layers, int64_t in_flight_limit) {
  return StageActivations(t, LayerActivationsOf(m, counts, t), stage_layers, in_flight_limit);
}

}  // namespace fulcrum::estimate

namespace fulcrum::estimate {
namespace {

using workload::Framework;
using workload::Method;
using workload::Model;
using workload::ModelCounts;
using workload::ModelKind;
using workload::Optimizer;
using workload::Precision;
using workload::Training;

// What one pipeline stage holds, before the framework's conventions are applied.
struct StageContents {
  double layer_params = 0;   // transformer-layer parameters on this GPU, routed experts excepted
  double expert_params = 0;  // routed-expert parameters on this GPU (sharded over dp x cp / ep)
  double other_params = 0;   // embeddings, head, norms outside the layers
  double activations_bytes = 0;
  double logits_bytes = 0;
};

// Bytes per logit element alive at the loss (the last stage's peak), by framework:
// Megatron's vocab-parallel cross entropy upcasts the bf16 logits to fp32 and saves the fp32
// softmax for backward (Megatron-LM core/tensor_parallel/cross_entropy.py): 2 + 4.
// torchtitan/FSDP computes cross_entropy(pred.float()) and frees the bf16 logits before backward
// (torchtitan train.py: "del pred", "need to free to before bwd to avoid peaking memory"); the
// peak is then in the loss's backward, where three fp32 tensors of the logits' shape are alive:
// the saved log-softmax output, the dense gradient nll_loss's backward produces, and the input
// gradient log_softmax's backward allocates (PyTorch aten cross_entropy = log_softmax + nll_loss,
// LossNLL.cpp, SoftMax.cpp) = 12, above the forward's 10 (bf16 logits + fp32 copy + log-softmax).
// HF transformers returns fp32 logits (logits.float()) and keeps them in the output: 4 + 4 + 4.
// A fused cross entropy (Training::cross_entropy kFused: flash-attn's CrossEntropyLoss) keeps the
// 16-bit logits for its backward and writes their gradient into one new tensor of their dtype:
// 2 + 2 (4 + 4 when the run stores fp32). Megatron's frameworks run their own loss (a plan's job
// with a fused loss keeps Megatron's under those layouts; `estimate` refuses the pair).
double LogitBytesPerElement(const Training& t) {
  if (t.cross_entropy == workload::CrossEntropy::kFused &&
      !workload::UsesMegatronModel(t.framework)) {
    return 2 * ActElementBytes(t);
  }
  // torchtitan (FSDP) and HF/DeepSpeed: 12, as above.
  double bytes = workload::UsesMegatronModel(t.framework) ? 6 : 12;
  if (workload::IsFp32Storage(t.precision) && !IsHfOrDdp(t.framework) &&
      t.framework != Framework::kDeepSpeed) {
    bytes += 2;
  }
  return bytes;
}

double LogitsBytes(const Model& m, const Training& t) {
  if (m.kind == ModelKind::kGeneric) return 0;
  const double tp = static_cast<double>(t.tp);
  const double seq = static_cast<double>(t.seq_len / t.cp);
  const double mb = static_cast<double>(t.micro_batch);
  const double e = workload::IsFp32Storage(t.precision) ? 4 : 2;
  // The head runs on its share of the tokens (Training::head_tokens: a masked-LM head on the
  // gathered masked positions) with its own width (Training::head_width: a 2-wide span head, not
  // split over tp); by default on every token, vocab-parallel.
  const double head_seq =
      t.head_tokens > 0
          ? std::min(seq, static_cast<double>(t.head_tokens) / static_cast<double>(t.cp))
          : seq;
  const double width_per_rank =
      t.head_width > 0 ? static_cast<double>(t.head_width) : static_cast<double>(m.vocab) / tp;
  // Final-norm input (every token) and output-layer input (the head's tokens), then the logits.
  const double per_hidden = e * mb * static_cast<double>(m.hidden) / (t.sequence_parallel ? tp : 1);
  const double inputs = per_hidden * (seq + head_seq);
  return inputs + LogitBytesPerElement(t) * head_seq * mb * width_per_rank;
}

// Weights held frozen under LoRA / QLoRA: 16-bit (fp32 when training in fp32); QLoRA stores the
// layers' linear weights in NF4 and keeps embeddings, head and norms in 16 bits.
double FrozenWeightBytes(const StageContents& c, const Training& t) {
  const double e = workload::IsFp32Storage(t.precision) ? 4 : 2;
  if (t.method == Method::kQlora) return c.layer_params * kNf4BytesPerParam + c.other_params * e;
  return (c.layer_params + c.other_params) * e;
}

MemoryBreakdown Assemble(const ModelStateBytes& states, const StageContents& c, const Training& t) {
  MemoryBreakdown m;
  m.weights_bytes = states.weights_bytes;
  m.gradients_bytes = states.gradients_bytes;
  m.optimizer_bytes = states.optimizer_bytes;
  m.activations_bytes = c.activations_bytes;
  m.logits_bytes = c.logits_bytes;
  m.comm_buffer_bytes = states.buffer_bytes;
  m.allocated_bytes = m.weights_bytes + m.gradients_bytes + m.optimizer_bytes +
                      m.activations_bytes + m.logits_bytes + m.comm_buffer_bytes;
  m.allocator_reserve_bytes = m.allocated_bytes * AllocatorReserveFraction(t.framework);
  m.reserved_bytes = m.allocated_bytes + m.allocator_reserve_bytes;
  m.cuda_context_bytes = kCudaContextBytes;
  m.peak_bytes_per_gpu = m.reserved_bytes + m.cuda_context_bytes;
  m.other_bytes =
      m.logits_bytes + m.comm_buffer_bytes + m.cuda_context_bytes + m.allocator_reserve_bytes;
  return m;
}

// Model states of the routed experts: Megatron-Core shards them over the expert-data-parallel
// group (tp x cp x dp / (etp x ep) ranks: dp x cp / ep with etp = tp; Megatron-LM@d98e8a64dd
// megatron/core/parallel_state.py, expert_data_parallel_size), torchtitan alike.
ModelStateBytes WithExpertStates(ModelStateBytes s, double expert_params, double largest,
                                 const Training& t) {
  if (expert_params <= 0) return s;
  Training expert = t;
  expert.dp = workload::ExpertStateShards(t);
  expert.cp = 1;
  expert.dp_shard = 0;
  const ModelStateBytes e = FullModelStates(expert_params, largest, expert);
  s.weights_bytes += e.weights_bytes;
  s.gradients_bytes += e.gradients_bytes;
  s.optimizer_bytes += e.optimizer_bytes;
  if (t.zero_stage < 3) s.buffer_bytes += e.buffer_bytes;  // per-parameter buckets / copies
  return s;
}

// FP8 with Transformer Engine (Megatron) keeps, next to each 16-bit linear weight of the layers,
// its fp8 cast and the fp8 transpose the backward GEMMs need (Hopper and Ada tensor cores run FP8
// GEMMs only in TN layout; TE's fused cast-transpose caches both: NVIDIA/TransformerEngine issue
// #1261, 2024-10-17): 2 bytes per linear parameter; embeddings and the output layer stay 16-bit.
// torchao's float8 training (torchtitan/FSDP) casts per use, nothing persistent.
// With FP8 weights (training.fp8_params: TE fp8_model_init, NeMo fp8_params, Megatron-LM
// --fp8-param-gather) the linear weight is a Float8Tensor: 1 byte of FP8 data plus its cached FP8
// transpose (1 byte; TE keeps it unless fp8_model_init(heuristic="memory"):
// NVIDIA/TransformerEngine PR #1300, test_fp8_heuristics asserts weight._transpose is not None by
// default) and no 16-bit copy: the 2 bytes the 16-bit weight took, nothing beside them. The
// optimizer keeps an fp32 master (NeMo sets store_params=True with fp8_params: NVIDIA/NeMo@7ed5455
// nemo/collections/nlp/models/language_modeling/megatron_base_model.py setup_optimization),
// which the 4 + states bytes of the optimizer already hold.
double Fp8WeightCopyBytes(const StageContents& c, const Training& t) {
  const bool te = workload::UsesMegatronCore(t.framework);
  if (t.precision != Precision::kFp8 || !te || t.fp8_params) return 0;
  return 2 * (c.layer_params + c.expert_params);
}

MemoryBreakdown EstimateStage(const Model& m, const ModelCounts& counts, const Training& t,
                              const StageContents& c) {
  const double tp = static_cast<double>(t.tp);
  const double params = c.layer_params + c.other_params;
  double largest = m.kind == ModelKind::kGeneric ? params : counts.largest_tensor_parameters / tp;
  if (t.framework == Framework::kFsdp || t.framework == Framework::kMegatronFsdp ||
      IsHfOrDdp(t.framework)) {
    // FSDP (and Megatron-FSDP, whose units are the transformer layers) wraps each transformer layer
    // as a unit (and the embedding / output layers); a MoE layer's unit holds this rank's experts.
    largest = std::max(largest, LayerUnitParameters(m, counts, t));
  }
  if (t.method == Method::kFull) {
    ModelStateBytes states =
        WithExpertStates(FullModelStates(params, largest, t), c.expert_params, largest, t);
    states.weights_bytes += Fp8WeightCopyBytes(c, t);
    return Assemble(states, c, t);
  }

  // LoRA / QLoRA: frozen base weights + fp32 adapters trained with the optimizer (PEFT keeps
  // adapters in fp32 under autocast): 4 + 4 + states bytes per adapter parameter.
  const double layers = static_cast<double>(m.layers) / static_cast<double>(t.pp);
  const double adapters = layers * workload::LoraParameterCountPerLayer(m, t) / tp;
  const double n = static_cast<double>(workload::StateShards(t));
  const double state = StateBytes(t);
  ModelStateBytes s;
  StageContents frozen = c;
  frozen.layer_params += c.expert_params;
  s.weights_bytes = FrozenWeightBytes(frozen, t) / (t.zero_stage >= 3 ? n : 1) + adapters * 4;
  s.gradients_bytes = adapters * 4 / (t.zero_stage >= 2 ? n : 1);
  s.optimizer_bytes = t.offload_optimizer ? 0 : adapters * state / (t.zero_stage >= 1 ? n : 1);
  if (t.method == Method::kQlora) {
    // One dequantised 16-bit weight matrix at a time (bitsandbytes dequantises per layer call).
    s.buffer_bytes = static_cast<double>(m.hidden) * static_cast<double>(m.ffn_hidden) * 2 / tp;
  }
  StageContents with_adapters = c;
  // Each adapter also saves its rank-r intermediate for backward (16-bit, s x b x r), unless
  // the whole layer is recomputed.
  if (t.recompute != workload::Recompute::kFull) {
    const double per_adapter = 2.0 * static_cast<double>(t.seq_len) *
                               static_cast<double>(t.micro_batch) *
                               static_cast<double>(t.lora_rank);
    with_adapters.activations_bytes +=
        layers * workload::LoraAdapterCountPerLayer(m, t) * per_adapter;
  }
  return Assemble(s, with_adapters, t);
}

// The pipeline's stages as EstimateMemory compares them.
struct PipelineStages {
  MemoryBreakdown first, middle, last;
  bool has_middle = false;
};

PipelineStages EstimateStages(const Model& m, const ModelCounts& counts, const Training& t) {
  PipelineStages out;
  const double tp = static_cast<double>(t.tp);
  const double layers = static_cast<double>(m.layers);
  // Per layer on this GPU: the routed experts split over etp x ep, everything else over tp.
  const double routed = counts.routed_expert_parameters / layers;
  const double dense_per_layer = (counts.layer_parameters - routed) / tp;
  const double expert_per_layer =
      routed / (static_cast<double>(workload::ExpertTp(t)) * static_cast<double>(t.ep));
  const double embedding = counts.embedding_parameters / tp;
  const double head = counts.head_parameters / tp;
  const double logits = LogitsBytes(m, t);
  const workload::StageLayers stages = workload::PipelineStageLayers(m, t);
  const LayerActivations layer = LayerActivationsOf(m, counts, t);  // the same for every stage
  auto contents = [&](int64_t stage_layers, double other, double activations, double stage_logits) {
    const double n = static_cast<double>(stage_layers);
    return StageContents{n * dense_per_layer, n * expert_per_layer, other, activations,
                         stage_logits};
  };
  if (t.pp == 1) {
    out.first = EstimateStage(m, counts, t,
                              contents(stages.first, embedding + head,
                                       StageActivations(t, layer, stages.first, 1), logits));
    out.last = out.first;
    return out;
  }
  if (t.pipeline_schedule != workload::PipelineSchedule::k1F1B) {
    // DualPipe (V): rank i holds stages i and S - 1 - i of the schedule's S stages (S = pp for
    // DualPipe, 2 pp for DualPipeV), so the first rank the embedding, the head and the loss's
    // logits, the others two middle stages; each keeps S + 1 stage micro-batches of activations
    // in flight (deepseek-ai/DualPipe@3da1bbe README: "Activation Per Device PP+1", PP the number
    // of stages; dualpipe.py's steps 1-2 run S forward chunks before the first backward).
    workload::Training staged = t;
    if (t.pipeline_schedule == workload::PipelineSchedule::kDualPipeV) staged.pp = 2 * t.pp;
    const workload::StageLayers s = workload::PipelineStageLayers(m, staged);
    const double chunks = static_cast<double>(staged.pp + 1);
    auto rank = [&](int64_t first, int64_t second, double other, double rank_logits) {
      const double in_flight = static_cast<double>(first + second) / 2 * chunks;
      return EstimateStage(
          m, counts, t,
          contents(first + second, other, ActivationsInFlight(t, layer, in_flight), rank_logits));
    };
    out.first = rank(s.first, s.last, embedding + head, logits);
    out.last = out.first;
    if (s.middle > 0) {
      out.middle = rank(s.middle, s.middle, 0, 0);
      out.has_middle = true;
    }
    return out;
  }
  // First stage: embeddings and the most in-flight activations (pp micro-batches in 1F1B).
  // The most loaded middle stage (second in line: pp - 1 in flight). Last stage: the head (plus a
  // copy of tied embeddings, as Megatron keeps), one micro-batch in flight, the logits.
  const double tied_copy =
      m.tied_embeddings ? static_cast<double>(m.vocab) * static_cast<double>(m.hidden) / tp : 0;
  out.first = EstimateStage(
      m, counts, t,
      contents(stages.first, embedding, StageActivations(t, layer, stages.first, t.pp), 0));
  const double last_activations = StageActivations(t, layer, stages.last, 1);
  out.last = EstimateStage(m, counts, t,
                           contents(stages.last, head + tied_copy, last_activations, logits));
  if (stages.middle > stages.first) {
    out.middle = EstimateStage(
        m, counts, t,
        contents(stages.middle, 0, StageActivations(t, layer, stages.middle, t.pp - 1), 0));
    out.has_middle = true;
  }
  return out;
}

}  // namespace

MemoryBreakdown EstimateMemory(const Model& m, const Training& t) {
  return EstimateMemory(m, workload::CountModel(m), t);
}

double LayerUnitParameters(const Model& m, const ModelCounts& counts, const Training& t) {
  const double routed = counts.routed_expert_parameters / static_cast<double>(m.layers);
  const double etp = static_cast<double>(workload::ExpertTp(t));
  return (counts.layer_parameters - routed) / static_cast<double>(t.tp) +
         routed / (static_cast<double>(t.ep) * etp);
}

MemoryBreakdown EstimateMemory(const Model& m, const ModelCounts& counts, const Training& t) {
  if (m.kind == ModelKind::kGeneric) {
    StageContents c;
    c.other_params = m.generic_parameters;
    c.activations_bytes = PipelineActivationBytes(m, counts, t);
    return EstimateStage(m, counts, t, c);
  }
  const PipelineStages stages = EstimateStages(m, counts, t);
  MemoryBreakdown peak = stages.last;
  if (stages.first.peak_bytes_per_gpu >= peak.peak_bytes_per_gpu) peak = stages.first;
  if (stages.has_middle && stages.middle.peak_bytes_per_gpu > peak.peak_bytes_per_gpu) {
    peak = stages.middle;
  }
  return peak;
}

MemoryBreakdown EstimateLastStageMemory(const Model& m, const Training& t) {
  if (m.kind == ModelKind::kGeneric) return EstimateMemory(m, t);
  return EstimateStages(m, workload::CountModel(m), t).last;
}

FitVerdict ClassifyFit(double peak_bytes, double unreserved_peak_bytes, double capacity_bytes) {
  if (unreserved_peak_bytes > capacity_bytes) return FitVerdict::kDoesNotFit;
  if (HeadroomFraction(peak_bytes, capacity_bytes) < kTightHeadroomFraction)
    return FitVerdict::kTight;
  return FitVerdict::kFits;
}

const char* FitVerdictName(FitVerdict verdict) {
  switch (verdict) {
    case FitVerdict::kFits:
      return "fits";
    case FitVerdict::kTight:
      return "tight";
    case FitVerdict::kDoesNotFit:
      return "does not fit";
  }
  return "?";
}

}  // namespace fulcrum::estimate
