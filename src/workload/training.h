// How a model is trained: precision, optimizer, method (full / LoRA / QLoRA), parallel layout
// (tp x pp x cp x dp, expert parallelism carved out of dp, ZeRO stage and HSDP shard group,
// sequence parallel, interleaved or uneven pipeline stages), batch shape, activation
// recompute, flash attention, CPU offload and the framework whose conventions apply. A plain
// value; Validate() refuses inconsistent setups with a message naming the field, the value and
// what was expected. Enum names and parsers are for the edges (CLI, YAML), not the hot path.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.h"
#include "workload/model.h"

namespace fulcrum::workload {

// kFp16Mixed / kBf16Mixed: 16-bit weights and activations with fp32 master weights in the
// optimizer; kPureBf16: bf16 everywhere, no master copy; kFp8: fp8 linears (Transformer Engine),
// bf16 weights with fp32 master weights otherwise (like kBf16Mixed for memory); kTf32: fp32
// weights and activations, matmuls on the TF32 tensor cores (PyTorch's allow_tf32, the default fp32
// math of Ampere and later; like kFp32 for memory).
enum class Precision { kFp32, kFp16Mixed, kBf16Mixed, kPureBf16, kFp8, kTf32 };
enum class Optimizer { kAdamW, kSgdMomentum, kAdam8bit };
enum class Method { kFull, kLora, kQlora };
enum class Recompute { kNone, kSelective, kFull };
// Megatron-Core's --recompute-modules under --recompute-granularity selective, a bit mask
// (Megatron-LM@d98e8a64dd megatron/core/transformer/transformer_config.py recompute_modules, its
// docstring and __post_init__ validation). kRecomputeCoreAttn (the default) checkpoints core
// attention; kRecomputeLayernorm discards the outputs of the layer's norm modules (input_layernorm,
// pre_mlp_layernorm; where Transformer Engine fuses a norm into the next linear there is no module
// to recompute); kRecomputeMlaUpProj discards MLA's up-projections and RoPE (Q, K, V);
// kRecomputeMoeAct discards the routed experts' activation output; these three use
// output-discarding checkpointing (CheckpointWithoutOutput). kRecomputeMlp (dense layers),
// kRecomputeMoe (the MoE layer) and kRecomputeSharedExperts checkpoint the module, keeping its
// input. What each discards and re-runs: estimate/memory.cc RecomputedModuleBytes, compute.cc.
enum RecomputeModule : uint32_t {
  kRecomputeCoreAttn = 1u << 0,
  kRecomputeMoeAct = 1u << 1,
  kRecomputeLayernorm = 1u << 2,
  kRecomputeMlaUpProj = 1u << 3,
  kRecomputeMlp = 1u << 4,
  kRecomputeMoe = 1u << 5,
  kRecomputeSharedExperts = 1u << 6,
};
inline constexpr int kRecomputeModuleCount = 7;
// FSDP1's backward_prefetch (Training::backward_prefetch).
enum class BackwardPrefetch { kPre, kPost, kNone };
// The dtype an Adam moment is stored in: Megatron-LM's --exp-avg-dtype / --exp-avg-sq-dtype
// (choices fp32, fp16, bf16, fp8; megatron/training/arguments.py@d98e8a64dd) under
// --use-precision-aware-optimizer (Transformer Engine's FusedAdam keeps the states in that dtype;
// the kernel computes in fp32). kFp32 is the default and every other optimizer's.
enum class MomentDtype { kFp32, kFp16, kBf16, kFp8 };
inline constexpr double MomentBytes(MomentDtype d) {
  return d == MomentDtype::kFp32 ? 4 : d == MomentDtype::kFp8 ? 1 : 2;
}
// How the optimizer step and the gradient handling around it run (estimate/compute.cc,
// OptimizerSeconds). kFused: one kernel pass per step over each parameter's states (apex and
// PyTorch fused Adam, Megatron-LM, DeepSpeed, Transformer Engine). kTf1Graph: TensorFlow 1's
// optimizers as NVIDIA's TF1 BERT recipe runs them (NVIDIA/DeepLearningExamples@729963dd47
// TensorFlow/LanguageModeling/BERT/optimization.py): the update is a graph of per-tensor
// elementwise ops (AdamWeightDecayOptimizer, LAMBOptimizer), and the gradients are unscaled
// (mixed precision), checked for finiteness, clipped by their global norm and, with gradient
// accumulation, added into an fp32 buffer by ops of their own on every micro-batch.
enum class OptimizerKernels { kFused, kTf1Graph };
// How the loss over the vocabulary runs (estimate/memory.cc, LogitBytesPerElement).
// kFramework: the framework's own (Megatron's vocab-parallel cross entropy; PyTorch's
// F.cross_entropy on fp32 logits under torchtitan/FSDP, HF, DeepSpeed and DDP). kFused: one fused
// kernel on the 16-bit logits that saves them and a per-row log-sum-exp and writes one gradient of
// their size in backward: flash-attn's CrossEntropyLoss (Dao-AILab/flash-attention
// flash_attn/losses/cross_entropy.py, inplace_backward=False by default, over
// csrc/xentropy/xentropy_kernel.cu@383caa67b5: `gI = inplace ? logits_ : at::empty_like(logits_)`),
// the default loss of MosaicML llm-foundry's MPT (loss_fn 'fused_crossentropy':
// mosaicml/llm-foundry@b2a43a147 llmfoundry/models/mpt/modeling_mpt.py).
enum class CrossEntropy { kFramework, kFused };
// The pipeline schedule. k1F1B: 1F1B, interleaved with vpp > 1 (Megatron-LM, PyTorch's
// Schedule1F1B / ScheduleInterleaved1F1B). kDualPipe: DeepSeek's bidirectional DualPipe
// (DeepSeek-V3 technical report, arXiv 2412.19437, section 3.2.1; deepseek-ai/DualPipe@3da1bbe
// dualpipe/dualpipe.py): rank i of pp holds stages i and pp - 1 - i of the pp stages, micro-batches
// enter from both ends, and in the steady state each forward chunk runs beside another
// micro-batch's backward chunk with the two's communication overlapped; its bubble is (pp/2 -
// 1)(F&B + B - 3W), its weights 2x and its activations pp + 1 stage micro-batches (the repository's
// README table). kDualPipeV: its "cut-in-half" V form (dualpipe/dualpipev.py; PyTorch's
// ScheduleDualPipeV, torch/distributed/pipelining/schedules.py, which torchtitan's
// pipeline_parallel_schedule names): 2 pp stages on pp ranks, rank i holding stages i and 2 pp - 1
// - i; bubble (pp - 1)(F&B + B - 3W) in stages of half the size, activations 2 pp + 1 of them.
enum class PipelineSchedule { k1F1B, kDualPipe, kDualPipeV };
// How a MoE layer's tokens reach their experts on other ranks (Megatron-Core
// --moe-token-dispatcher-type; Megatron-LM@d98e8a64dd megatron/core/transformer/moe/
// token_dispatcher.py). kAllToAll: MoEAlltoAllTokenDispatcher, an NCCL all-to-all of each token's
// k routed copies. kFlex: MoEFlexTokenDispatcher with DeepEP or HybridEP kernels
// (deepseek-ai/DeepEP), which send a token to each other node it has experts on once, over the
// network, and forward it there over NVLink to the GPUs holding them (arXiv 2412.19437 section
// 3.2.2). Megatron's default, allgather, is not modelled.
enum class MoeDispatcher { kAllToAll, kFlex };
// Whose conventions (gradient dtype, buffers, allocator reserve) apply; see memory.cc. kDdp is
// PyTorch DistributedDataParallel (torch.nn.parallel.DistributedDataParallel, plain data parallel
// with torch.amp; the HF Trainer under torchrun is DDP too and is estimated alike).
// kMegatronFsdp: Megatron-LM with its own FSDP (--use-megatron-fsdp
// --data-parallel-sharding-strategy optim_grads / optim_grads_params) or torch FSDP2
// (--use-torch-fsdp2), with tp, cp and ep: Megatron-Core's model code under ZeRO-2/3 sharding
// (Megatron-LM docs/user-guide/features/megatron_fsdp.md@d98e8a64dd). kMegatronDeepSpeed:
// Megatron-DeepSpeed (BLOOM's and many labs' fork), Megatron's model code with tp and pp on
// DeepSpeed's engine and ZeRO-1 (pipeline engine: ZeRO <= 1).
enum class Framework { kMegatron, kDeepSpeed, kFsdp, kHf, kDdp, kMegatronFsdp, kMegatronDeepSpeed };
inline constexpr int kFrameworkCount = 7;
// Megatron's model code (fused kernels, vocab-parallel cross entropy, asynchronous tensor-parallel
// collectives): Megatron-LM itself, Megatron-FSDP and Megatron-DeepSpeed.
inline constexpr bool UsesMegatronModel(Framework f) {
  return f == Framework::kMegatron || f == Framework::kMegatronFsdp ||
         f == Framework::kMegatronDeepSpeed;
}
// Megatron-Core's model code with Transformer Engine: Megatron-LM and Megatron-FSDP (not
// Megatron-DeepSpeed's legacy model code), where Megatron-Core's own options apply.
inline constexpr bool UsesMegatronCore(Framework f) {
  return f == Framework::kMegatron || f == Framework::kMegatronFsdp;
}
// A set of frameworks: bit 1 << Framework.
using FrameworkMask = uint32_t;
inline constexpr FrameworkMask FrameworkBit(Framework f) { return 1u << static_cast<int>(f); }
inline constexpr FrameworkMask kEveryFramework = (1u << kFrameworkCount) - 1;
// The frameworks that run data parallel layouts only (no tp, pp, cp or ep): what a launcher of a
// script fulcrum does not know (`torchrun train.py`) is searched as.
inline constexpr FrameworkMask kDataParallelFrameworks = FrameworkBit(Framework::kDdp) |
                                                         FrameworkBit(Framework::kFsdp) |
                                                         FrameworkBit(Framework::kDeepSpeed);
// How a run saves and reloads its training state, which decides what the load puts on the GPU
// beside the live states (estimate/resume.h). kDefault: the framework's usual format
// (DefaultCheckpointFormat). kTorchDist: Megatron's torch_dist (PyTorch distributed checkpoint
// under Megatron's sharded state dicts); kTorch: Megatron's legacy per-rank torch.save files;
// kFsdpDtensor: Megatron-FSDP's fsdp_dtensor; kDcp: PyTorch distributed checkpoint of sharded
// (DTensor / SHARDED_STATE_DICT) states, as torchtitan saves; kFsdpFull: FSDP FULL_STATE_DICT
// (unsharded model and optimizer state dicts); kDeepSpeed: DeepSpeed's per-rank model and ZeRO
// files; kSafetensors: the HF Trainer's checkpoint (model.safetensors + optimizer.pt).
enum class CheckpointFormat {
  kDefault,
  kTorchDist,
  kTorch,
  kFsdpDtensor,
  kDcp,
  kFsdpFull,
  kDeepSpeed,
  kSafetensors
};

// kDefault: the framework's own choice (Megatron fp32 main grads; DeepSpeed/HF/FSDP mixed
// precision: grads in the 16-bit param dtype).
enum class GradPrecision { kDefault, kFp16, kBf16, kFp32 };

// LoRA target modules, a bit mask.
enum LoraTarget : uint32_t {
  kLoraQ = 1u << 0,
  kLoraK = 1u << 1,
  kLoraV = 1u << 2,
  kLoraO = 1u << 3,
  kLoraMlp = 1u << 4,  // every MLP matrix (gate/up/down or fc1/fc2)
  kLoraAttention = kLoraQ | kLoraK | kLoraV | kLoraO,
  kLoraAllLinear = kLoraAttention | kLoraMlp,  // QLoRA paper's recommendation (arXiv 2305.14314)
};

struct Training {
  Precision precision = Precision::kBf16Mixed;
  Optimizer optimizer = Optimizer::kAdamW;
  OptimizerKernels optimizer_kernels = OptimizerKernels::kFused;
  CrossEntropy cross_entropy = CrossEntropy::kFramework;
  // AdamW's first and second moments (Megatron's precision-aware optimizer); fp32 by default.
  MomentDtype exp_avg_dtype = MomentDtype::kFp32;
  MomentDtype exp_avg_sq_dtype = MomentDtype::kFp32;
  Method method = Method::kFull;
  int64_t lora_rank = 16;
  uint32_t lora_targets = kLoraAllLinear;

  // Parallel layout. tp * pp * cp * dp = number of GPUs; rank order tp, cp, dp, pp (tp
  // innermost, as Megatron-Core's default "tp-cp-ep-dp-pp" order). zero_stage 3 is also FSDP
  // full-shard.
  int64_t tp = 1;
  int64_t pp = 1;
  int64_t vpp = 1;  // virtual pipeline stages per rank (interleaved 1F1B); 1 = not interleaved
  PipelineSchedule pipeline_schedule = PipelineSchedule::k1F1B;
  int64_t cp = 1;  // context parallel: each rank holds seq_len / cp tokens of every sequence
  int64_t dp = 1;
  // Expert parallel (MoE): the routed experts are split over ep ranks carved out of dp, as in
  // Megatron-Core (ep divides dp; experts are replicated over dp * cp / ep ranks).
  int64_t ep = 1;
  // The routed experts' own tensor parallelism (Megatron-Core --expert-tensor-parallel-size):
  // 0 = tp (Megatron-Core's default: each expert split over the tp ranks, ep carved out of dp); 1 =
  // whole experts, the ep ranks then taken from tp x cp x dp (Megatron-Core's expert grid,
  // etp x ep x expert-dp = tp x cp x dp; Megatron-Bridge's MoE recipes set 1).
  int64_t expert_tp = 0;
  int64_t zero_stage = 0;  // 0..3 (sharding over dp x cp, or over dp_shard x cp)
  // HSDP (FSDP HYBRID_SHARD; torchtitan data_parallel_shard_degree): model states are sharded
  // within groups of dp_shard data-parallel ranks and replicated across dp / dp_shard groups.
  // 0 = one group spanning all of dp (FULL_SHARD / SHARD_GRAD_OP).
  int64_t dp_shard = 0;
  bool sequence_parallel = false;
  // Layers of the first and last pipeline stages (Megatron's --decoder-first-pipeline-num-layers
  // / --decoder-last-pipeline-num-layers); the other stages share the rest evenly. 0 = automatic:
  // layers / pp each, or, when pp does not divide the layers, the floor or the ceiling of
  // layers / pp with the first and last stages (embedding, loss) taking the floor. With vpp > 1
  // each stage is cut into vpp model chunks; an end stage may be one chunk short (the chunk that
  // holds only the embedding or the loss, as Llama 3 405B ran).
  int64_t first_stage_layers = 0;
  int64_t last_stage_layers = 0;

  // Batch shape, in sequences. global_batch = micro_batch * dp * accumulation steps.
  int64_t micro_batch = 1;
  int64_t global_batch = 1;
  int64_t seq_len = 2048;
  // The tokens per sequence the GPUs run on average when batches are padded to less than seq_len
  // (NVIDIA LDDL sequence binning pads each batch only to its longest sequence,
  // NVIDIA/LDDL@e4006d2 lddl/torch/bert.py): compute time runs it, memory stays sized for
  // seq_len (the longest batch). 0 = seq_len.
  int64_t mean_seq_len = 0;
  // The output head: the tokens per sequence it runs on (0 = every token; a masked-LM recipe that
  // gathers the masked positions first runs it on those only: TF1 BERT's gather_indexes of
  // max_predictions_per_seq positions, PyTorch BERT's dense_seq_output of the 15 % masked tokens,
  // NVIDIA/DeepLearningExamples@729963dd47 {TensorFlow,PyTorch}/LanguageModeling/BERT
  // run_pretraining.py, modeling.py BertPreTrainingHeads) and its outputs per token (0 = the
  // vocabulary; 2 for an extractive question-answering span head: BertForQuestionAnswering's
  // qa_outputs = Linear(hidden, 2), same files).
  int64_t head_tokens = 0;
  int64_t head_width = 0;

  Recompute recompute = Recompute::kNone;
  // RecomputeModule bits, read only under recompute == kSelective (Megatron's default:
  // core_attn). Other sets only under megatron / megatron-fsdp (Validate).
  uint32_t recompute_modules = kRecomputeCoreAttn;
  bool flash_attention = true;
  bool offload_optimizer = false;  // optimizer states (and fp32 master weights) in CPU memory
  bool offload_params = false;     // ZeRO-3 parameter offload (weights in CPU memory)
  // Saved activations in CPU memory (Megatron-Core --cpu-offloading, torch.autograd.graph
  // .save_on_cpu): copied out in forward and back in backward over PCIe, overlapped with compute;
  // the GPU keeps two layers' (the one computing and the one in transfer).
  bool offload_activations = false;
  Framework framework = Framework::kFsdp;
  GradPrecision grad_precision = GradPrecision::kDefault;
  CheckpointFormat checkpoint_format = CheckpointFormat::kDefault;
  // FP8 weights (precision kFp8, Transformer Engine under megatron / megatron-fsdp): the layers'
  // linear weights live only as FP8 tensors (TE fp8_model_init; NeMo `fp8_params`, Megatron-LM
  // `--fp8-param-gather`), no 16-bit copy beside them; the optimizer keeps the fp32 master.
  bool fp8_params = false;
  // The fp32 master weights kept as the 16 bits the bf16 weights lack (apex DistributedFusedAdam
  // store_param_remainders, which NeMo 1.x sets for a bf16 model with an fp32 optimizer and no
  // fp8_params: NVIDIA/NeMo@070a0bb168 nemo/collections/nlp/models/language_modeling/
  // megatron_base_model.py setup_optimization; apex@f3f049246e apex/contrib/optimizers/
  // distributed_fused_adam.py StateBucket: an int16 remainder beside the fp32 moments): 2 bytes a
  // parameter in the optimizer instead of 4. Megatron framework, bf16 weights (bf16 or fp8).
  bool store_param_remainders = false;
  // The SwiGLU's input, which Megatron-Core's fused activation keeps for backward, stored as
  // float8_e4m3fn and cast back in backward (Megatron-Core TransformerConfig
  // activation_func_fp8_input_store; Megatron-LM@d98e8a64dd megatron/core/fusions/
  // fused_bias_swiglu.py): 1 byte an element instead of 2, in the dense MLPs and the experts.
  bool activation_fp8_input_store = false;
  // DeepSeek-V3's low-precision activation caching (arXiv 2412.19437v2 section 3.3.3,
  // "Low-Precision Activation"), which its own framework runs and Megatron-Core does not: the
  // output projection's input, also the attention's saved output, cached once in E5M6; the MoE
  // layers' SwiGLU inputs cached in FP8 and their outputs recomputed in backward. Precision fp8;
  // the estimate counts Megatron-Core's other saved tensors (estimate/memory.cc
  // Fp8CacheSavedBytes).
  bool fp8_activation_cache = false;
  // Micro-batches run back to back on one model chunk in the interleaved schedule (Megatron-LM
  // --microbatch-group-size-per-virtual-pipeline-stage, between pp and the micro-batches per
  // step); 0 = Megatron's default, pp. It sets the warm-up forwards, hence the activations in
  // flight (estimate/memory.h StageActivationBytes). Only with vpp > 1.
  int64_t microbatch_group_size = 0;
  // Megatron-Core's expert-parallel all-to-all overlap (Megatron-LM
  // --overlap-moe-expert-parallel-comm; Megatron-Bridge
  // comm_overlap.overlap_moe_expert_parallel_comm, the performance recipes' moe_a2a_overlap): the
  // schedule pairs one micro-batch's forward with another's backward, layer by layer, so that each
  // one's dispatch and combine run under the other's attention and MLP ("EP A2A in forward step is
  // hidden by the attention/mlp computation in the backward step, and vice versa":
  // Megatron-LM@d98e8a64dd megatron/core/pipeline_parallel/combined_1f1b.py). pp 1 or an
  // interleaved pipeline.
  bool moe_a2a_overlap = false;
  MoeDispatcher moe_dispatcher = MoeDispatcher::kAllToAll;
  // Group-limited routing (Megatron-Core --moe-router-num-groups / --moe-router-group-topk; HF
  // DeepSeek-V3 n_group 8 / topk_group 4): the experts in moe_router_groups equal groups, each
  // token routed within moe_router_group_topk of them; 0 = none. Node-limited when the groups are
  // the ep group's nodes (DeepSeek-V3: at most 4 nodes per token, arXiv 2412.19437 section 2.1.2),
  // which bounds what the flex dispatcher sends over the network.
  int64_t moe_router_groups = 0;
  int64_t moe_router_group_topk = 0;
  // DeepSpeed's zero_optimization.overlap_comm under ZeRO 1 and 2 (deepspeed; megatron-deepspeed
  // in fp16): the gradients' reduction on a stream of its own, behind the backward. Off,
  // DeepSpeed's default below stage 3 (deepspeedai/DeepSpeed@edaa7221
  // deepspeed/runtime/zero/config.py overlap_comm_valid: "self.overlap_comm = self.stage ==
  // ZeroStageEnum.weights"), it runs on the compute stream (zero/stage_1_and_2.py reduce_ipg_grads:
  // "stream = get_accelerator().current_stream()"), after the backward: nothing of it hidden
  // (estimate/compute.cc ReductionBehindBackward). Stage 3 overlaps by default, as modelled.
  bool overlap_comm = false;
  // PyTorch FSDP1's backward prefetching under FULL_SHARD (fsdp, zero 3): BACKWARD_PRE (PyTorch's
  // default) issues the next unit's all-gather before the current unit's gradient computation;
  // BACKWARD_POST after it, but before the current reduce-scatter, which then runs behind the next
  // unit's backward; NO_PREFETCH issues it after that reduce-scatter, "and there is no
  // communication and computation overlap in the backward pass" (pytorch/pytorch
  // torch/distributed/fsdp/fully_sharded_data_parallel.py, FullyShardedDataParallel's
  // backward_prefetch; api.py BackwardPrefetch: all collectives of a process group share one NCCL
  // stream, so the issue order decides what overlaps). accelerate's FSDP1 plugin defaults to
  // NO_PREFETCH (huggingface/accelerate@16cb6eb8 src/accelerate/utils/dataclasses.py
  // FullyShardedDataParallelPlugin.backward_prefetch); FSDP2 always prefetches (it ignores the
  // option there). estimate/compute.cc BackwardSerialized.
  BackwardPrefetch backward_prefetch = BackwardPrefetch::kPre;
  // The full recompute is the HF Trainer's --gradient_checkpointing (torch.utils.checkpoint
  // around each FSDP-wrapped decoder layer), not FSDP's own activation_checkpointing: under
  // FULL_SHARD the recomputed forward gathers the layer's parameters, FSDP reshards them after it
  // and gathers them again for the backward, three all-gathers per micro-batch instead of two
  // ("The former introduces a redundant AllGather operation in backward pass", transformers
  // training_args.py, huggingface/transformers issue 30404). estimate/compute.cc
  // MicroBatchGathers.
  bool hf_gradient_checkpointing = false;
};
// The routed experts' tensor-parallel degree: expert_tp, or tp when 0.
inline int64_t ExpertTp(const Training& t) { return t.expert_tp > 0 ? t.expert_tp : t.tp; }
// PyTorch FSDP's FULL_SHARD (fsdp at ZeRO 3), whose backward gathers the parameters again: what
// FSDP1's backward prefetching and the HF Trainer's gradient checkpointing change
// (Training::backward_prefetch, hf_gradient_checkpointing).
inline bool FsdpFullShard(const Training& t) {
  return t.framework == Framework::kFsdp && t.zero_stage >= 3;
}
// Whether DeepSpeed's engine reduces the data-parallel gradients: ZeRO 0-2 under deepspeed, and
// megatron-deepspeed in fp16 (its bf16 runs take DeepSpeed's BF16_Optimizer, which reduces after
// the backward whatever overlap_comm says). At stages 1 and 2 that is the ZeRO optimizer, which
// reads zero_optimization.overlap_comm (Training::overlap_comm).
inline bool DeepSpeedEngineReduces(const Training& t) {
  return t.zero_stage <= 2 &&
         (t.framework == Framework::kDeepSpeed ||
          (t.framework == Framework::kMegatronDeepSpeed && t.precision == Precision::kFp16Mixed));
}
// Ranks the routed experts' states are replicated over (expert data parallel): the tp x cp x dp
// ranks of a stage over etp x ep, sharded as the dense states are (dp_shard under HSDP).
inline int64_t ExpertStateShards(const Training& t) {
  const int64_t dense = (t.dp_shard > 0 ? t.dp_shard : t.dp) * t.cp;
  const int64_t grid = t.tp * dense / (ExpertTp(t) * t.ep);
  return grid > 0 ? grid : 1;
}
// The interleaved schedule's micro-batch group size: microbatch_group_size, or pp when 0.
inline int64_t MicrobatchGroupSize(const Training& t) {
  return t.microbatch_group_size > 0 ? t.microbatch_group_size : t.pp;
}

// Whether selective recompute re-runs `module` (a RecomputeModule bit).
inline bool RecomputesModule(const Training& t, uint32_t module) {
  return t.recompute == Recompute::kSelective && (t.recompute_modules & module) != 0;
}

// The tokens per sequence the GPUs run: mean_seq_len, or seq_len when not set.
inline int64_t RunSeqLen(const Training& t) {
  return t.mean_seq_len > 0 ? t.mean_seq_len : t.seq_len;
}

inline int64_t GpuCount(const Training& t) { return t.tp * t.pp * t.cp * t.dp; }
// Ranks that hold the same model shard and reduce gradients together: dp x cp (context-parallel
// ranks see different tokens of the same sequences, so they reduce gradients like dp ranks).
inline int64_t GradientReplicas(const Training& t) { return t.dp * t.cp; }
// Ranks that ZeRO / FSDP shard model states over: dp x cp, or dp_shard x cp under HSDP
// (torchtitan shards over data_parallel_shard x context_parallel).
inline int64_t StateShards(const Training& t) {
  return (t.dp_shard > 0 ? t.dp_shard : t.dp) * t.cp;
}
// Layers per pipeline stage: the first, the most loaded of the middle ones (0 when pp <= 2) and
// the last (first == last == layers when pp == 1). Assumes Validate() passed.
struct StageLayers {
  int64_t first = 0;
  int64_t middle = 0;
  int64_t last = 0;
};
StageLayers PipelineStageLayers(const Model& model, const Training& training);
// The most layers any one pipeline stage holds.
inline int64_t MaxStageLayers(const StageLayers& s) {
  return s.first > s.middle ? (s.first > s.last ? s.first : s.last)
                            : (s.middle > s.last ? s.middle : s.last);
}
// Micro-batches per optimizer step on one pipeline (global / (micro * dp)).
inline int64_t MicroBatchesPerStep(const Training& t) {
  return t.micro_batch * t.dp > 0 ? t.global_batch / (t.micro_batch * t.dp) : 0;
}

// Refuses what cannot run: non-positive sizes, tp*pp*cp*dp != gpus (when gpus > 0), heads or
// kv_heads not divisible by tp, layers not divisible by pp*vpp when interleaved, stage splits
// that do not add up, seq_len not divisible by 2*cp, ep not dividing dp or the experts, ep
// without experts, dp_shard not dividing dp, global batch not a multiple of
// micro_batch*dp, zero_stage outside 0..3, LoRA rank < 1, vpp > 1 without pp > 1, sequence
// parallel without tp > 1, seq_len above the model's learned position table, a sharding the
// framework does not have (FrameworkRunsLayout). Names the flag.
Status Validate(const Model& model, const Training& training, int64_t gpus = 0);

// Whether `framework` has the layout's sharding: Megatron-LM runs tp/pp/dp with its distributed
// optimizer (ZeRO-1) at most; DeepSpeed ZeRO 0-3 without tensor parallelism (its pipeline engine
// only with ZeRO <= 1); PyTorch FSDP NO_SHARD / SHARD_GRAD_OP / FULL_SHARD (HYBRID_SHARD shards
// like FULL_SHARD within a node) = ZeRO 0, 2, 3, with tp, pp and cp as torchtitan composes them
// (FSDP2 over the dp_shard mesh dimension of a tp-parallelised, pipeline-split model:
// torchtitan docs "2D/3D parallelism", torchtitan/models/llama3/parallelize.py); the HF Trainer
// alone plain data parallel (ZeRO 0), and so PyTorch DDP (ZeRO 0: every rank keeps the whole
// model, DistributedDataParallel docs). Sources: Megatron-LM --use-distributed-optimizer docs;
// DeepSpeed ZeRO and pipeline docs ("ZeRO-2 and ZeRO-3 are incompatible with pipeline
// parallelism"); torch.distributed.fsdp.ShardingStrategy. Megatron-FSDP: ZeRO 2 or 3
// (optim_grads, optim_grads_params; HSDP through --outer-dp-sharding-strategy no_shard) with tp,
// cp and ep, no pp (Megatron-LM docs/user-guide/features/megatron_fsdp.md; --use-torch-fsdp2
// asserts pipeline_model_parallel_size == 1, megatron/training/arguments.py@d98e8a64dd).
// Megatron-DeepSpeed: tp and pp with ZeRO <= 1, no cp or HSDP.
bool FrameworkRunsLayout(Framework framework, const Training& training);
// The framework a layout runs under when the user names none: ZeRO-3 or HSDP -> FSDP
// (FULL_SHARD / HYBRID_SHARD, with tp/pp as torchtitan); ZeRO-2 with tp or pp -> FSDP
// (SHARD_GRAD_OP); other tp or pp -> Megatron-LM; LoRA without sharding -> HF; otherwise DeepSpeed.
Framework DefaultFrameworkFor(const Training& training);
// The format `framework` saves in by default: Megatron-LM torch_dist (--ckpt-format default),
// Megatron-FSDP fsdp_dtensor (its documented format), DeepSpeed and Megatron-DeepSpeed their own
// files, FSDP a distributed checkpoint (torchtitan; the HF Trainer's FSDP SHARDED_STATE_DICT), the
// HF Trainer and DDP safetensors + optimizer.pt.
CheckpointFormat DefaultCheckpointFormat(Framework framework);
// The format the run resumes from: training.checkpoint_format, or the framework's default.
CheckpointFormat ResolvedCheckpointFormat(const Training& training);
// Whether `framework` writes `format` (Megatron-LM: torch_dist or torch; Megatron-FSDP:
// fsdp_dtensor or torch_dist; DeepSpeed / Megatron-DeepSpeed: deepspeed; FSDP: dcp or fsdp_full;
// HF / DDP: safetensors).
bool FrameworkWritesFormat(Framework framework, CheckpointFormat format);

// LoRA adapters of one layer on the matrices `t.lora_targets` selects: r x (in + out) each (Hu
// et al. 2021, arXiv 2106.09685 section 4.1). The attention matrices are
// AttentionProjectionMatrices: on an MLA model the Q target covers q_proj (or q_a_proj and
// q_b_proj), K or V covers kv_a_proj_with_mqa and kv_b_proj (they make K and V together: PEFT
// matches modules by name, huggingface/peft@5d602fdbff src/peft/tuners/tuners_utils.py
// check_target_module_exists; its "all-linear", _maybe_include_all_linear_layers, wraps every
// nn.Linear but the output embeddings), O covers o_proj. kLoraMlp: gate/up/down (fc1/fc2) of
// ffn_hidden, one MLP per layer.
double LoraParameterCountPerLayer(const Model& m, const Training& t);
// The adapted matrices of one layer (each saves its rank-r intermediate for backward).
double LoraAdapterCountPerLayer(const Model& m, const Training& t);

std::string_view PrecisionName(Precision p);
// Weights, gradients and activations in fp32 (kFp32 and kTf32).
inline bool IsFp32Storage(Precision p) { return p == Precision::kFp32 || p == Precision::kTf32; }
// Whether Megatron-Core runs its expert-parallel all-to-all overlap (Training::moe_a2a_overlap) on
// this layout: Megatron-Core's model code, ep > 1, pp 1 or interleaved, no full recompute and no
// moe module recompute, a 16-bit model (validated with its reasons in Validate).
inline bool MoeA2aOverlapRuns(const Training& t) {
  return UsesMegatronCore(t.framework) && t.ep > 1 && (t.pp == 1 || t.vpp > 1) &&
         t.recompute != Recompute::kFull && !RecomputesModule(t, kRecomputeMoe) &&
         !IsFp32Storage(t.precision);
}

std::string_view OptimizerName(Optimizer o);
std::string_view MethodName(Method m);
std::string_view RecomputeName(Recompute r);
std::string_view FrameworkName(Framework f);
std::string_view CheckpointFormatName(CheckpointFormat f);  // "torch_dist", "dcp", ...
// Accept the CLI spellings: bf16|fp16|fp8|fp32|pure-bf16 (also bf16-mixed, fp16-mixed);
// adamw|adam|sgd|adam8bit; full|lora|qlora; none|selective|full; megatron|deepspeed|fsdp|hf|ddp|
// megatron-fsdp|megatron-deepspeed; fp16|bf16|fp32 (grad precision); torch_dist|torch|
// fsdp_dtensor|dcp|fsdp_full|deepspeed|safetensors (checkpoint format).
Result<Precision> ParsePrecision(std::string_view text);
Result<Optimizer> ParseOptimizer(std::string_view text);
Result<Method> ParseMethod(std::string_view text);
Result<Recompute> ParseRecompute(std::string_view text);
// A comma-separated list of Megatron-LM's module names (core_attn, moe_act, layernorm,
// mla_up_proj, mlp, moe, shared_experts) as RecomputeModule bits; InvalidInput naming the valid
// ones on an unknown or empty list.
Result<uint32_t> ParseRecomputeModules(std::string_view text);
// "layernorm,mla_up_proj,moe_act": the names of the bits in `modules`, in Megatron's order.
std::string RecomputeModulesName(uint32_t modules);
Result<Framework> ParseFramework(std::string_view text);
// A comma-separated list of framework names ("fsdp,deepspeed"); InvalidInput on an unknown one.
Result<FrameworkMask> ParseFrameworkList(std::string_view text);
// "ddp, fsdp, deepspeed" for the frameworks in `mask`, in the order of the enum.
std::string FrameworkListName(FrameworkMask mask);
Result<GradPrecision> ParseGradPrecision(std::string_view text);
// BACKWARD_PRE | BACKWARD_POST | NO_PREFETCH (PyTorch's and accelerate's spellings, any case),
// as --backward-prefetch takes them. The name is the same spelling.
Result<BackwardPrefetch> ParseBackwardPrefetch(std::string_view text);
std::string_view BackwardPrefetchName(BackwardPrefetch p);
// fp32|fp16|bf16|fp8, as Megatron-LM's --exp-avg-dtype takes them; `flag` names the option in
// the error.
Result<MomentDtype> ParseMomentDtype(std::string_view text, const char* flag);
std::string_view MomentDtypeName(MomentDtype d);
Result<CheckpointFormat> ParseCheckpointFormat(std::string_view text);
// fused|tf1-graph, as --optimizer-kernels takes them.
Result<OptimizerKernels> ParseOptimizerKernels(std::string_view text);
std::string_view OptimizerKernelsName(OptimizerKernels k);
// framework|fused, as --cross-entropy takes them.
Result<CrossEntropy> ParseCrossEntropy(std::string_view text);
std::string_view CrossEntropyName(CrossEntropy c);
// 1f1b|dualpipe|dualpipev, as --pipeline-schedule takes them.
Result<PipelineSchedule> ParsePipelineSchedule(std::string_view text);
std::string_view PipelineScheduleName(PipelineSchedule s);
// alltoall|flex, as --moe-token-dispatcher-type takes them.
Result<MoeDispatcher> ParseMoeDispatcher(std::string_view text);
std::string_view MoeDispatcherName(MoeDispatcher d);

}  // namespace fulcrum::workload
