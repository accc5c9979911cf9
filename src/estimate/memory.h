// Per-GPU training memory: the bytes one GPU holds at its peak for a (Model, Training) pair,
// split into weights, gradients, optimizer states, activations and other (logits/loss buffers,
// communication buckets, ZeRO-3 gather buffers, CUDA context, allocator reserve). Formulas and
// sources: ZeRO (arXiv 1910.02054), Megatron distributed optimizer, Korthikanti et al. 2022
// (arXiv 2205.05198); see memory.cc. EstimateMemory is pure, allocation-free and thread-safe
// (the planner calls it millions of times); it assumes workload::Validate() passed. Bytes.
#pragma once

#include "workload/model.h"
#include "workload/training.h"

namespace fulcrum::estimate {

struct MemoryBreakdown {
  double weights_bytes = 0;      // model weights resident on this GPU (incl. LoRA adapters)
  double gradients_bytes = 0;    // gradient buffers (trainable parameters)
  double optimizer_bytes = 0;    // optimizer states + fp32 master weights
  double activations_bytes = 0;  // saved for backward, at the pipeline's first stage peak
  // Parts of "other":
  double logits_bytes = 0;             // output logits + loss buffers (last pipeline stage)
  double comm_buffer_bytes = 0;        // gradient buckets / all-gather prefetch buffers
  double cuda_context_bytes = 0;       // CUDA context + kernels (outside PyTorch's allocator)
  double allocator_reserve_bytes = 0;  // caching-allocator reserve / fragmentation
  double other_bytes = 0;              // sum of the four above

  // Tensors alive at the peak (what torch.cuda.max_memory_allocated reports): weights +
  // gradients + optimizer + activations + logits + comm buffers.
  double allocated_bytes = 0;
  // allocated + allocator reserve (torch.cuda.max_memory_reserved).
  double reserved_bytes = 0;
  // reserved + CUDA context: what nvidia-smi shows; compared against the GPU's capacity.
  double peak_bytes_per_gpu = 0;
};

MemoryBreakdown EstimateMemory(const workload::Model& model, const workload::Training& training);
// The same with the model's figures counted beforehand (counts = workload::CountModel(model)), as
// the planner calls it for every layout of one model; the overloads below taking ModelCounts alike.
MemoryBreakdown EstimateMemory(const workload::Model& model, const workload::ModelCounts& counts,
                               const workload::Training& training);
// The last pipeline stage alone (the head, the logits, one micro-batch in flight): what a run
// that logs memory from its last rank reports (Megatron-LM writes its memory statistics from
// the last rank, which holds the last stage). EstimateMemory when pp = 1.
MemoryBreakdown EstimateLastStageMemory(const workload::Model& model,
                                        const workload::Training& training);

// The building blocks of EstimateMemory, exposed for the formula anchors and the planner.

// Model states on one GPU for `params` fully trained parameters held by its model-parallel rank
// (already divided by tp and pp), under the training's precision, optimizer, framework, ZeRO
// stage over training.dp and offload. `largest_tensor_params` sizes ZeRO-3 gather buffers.
struct ModelStateBytes {
  double weights_bytes = 0;
  double gradients_bytes = 0;
  double optimizer_bytes = 0;
  double buffer_bytes = 0;  // communication buckets / gather buffers
};
ModelStateBytes FullModelStates(double params, double largest_tensor_params,
                                const workload::Training& training);

// Optimizer state bytes per trained parameter, fp32 master weights excluded (AdamW 8, SGD
// momentum 4, 8-bit Adam 2; halved in pure bf16 but for 8-bit Adam).
double OptimizerStateBytesPerParam(const workload::Training& training);

// Activations one transformer layer saves for backward, for one micro-batch on one GPU
// (Korthikanti et al. 2022 Table 2, generalised to GQA, gated MLPs, flash attention).
// Parameters of one transformer layer on this GPU, the unit FSDP wraps: its routed experts over
// ep x expert tp (experts / ep of them, whole or split), the rest over tp.
double LayerUnitParameters(const workload::Model& model, const workload::ModelCounts& counts,
                           const workload::Training& training);
double LayerActivationBytes(const workload::Model& model, const workload::Training& training);
double LayerActivationBytes(const workload::Model& model, const workload::ModelCounts& counts,
                            const workload::Training& training);
// Activations on the first pipeline stage at its peak: its layers (L/pp when even; see
// workload::PipelineStageLayers) x min(pp, micro-batches per step) in flight; with vpp > 1 the
// interleaved schedule's warm-up chunks (StageActivationBytes), which for many micro-batches is
// Korthikanti et al.'s factor (1 + (pp-1)/(pp*vpp)).
double PipelineActivationBytes(const workload::Model& model, const workload::Training& training);
double PipelineActivationBytes(const workload::Model& model, const workload::ModelCounts& counts,
                               const workload::Training& training);
// The saved activations a stage keeps on the GPU: all of `saved_bytes`, or under activation
// offload two layers' (the one computing and the one being copied).
double OffloadedActivationBytes(const workload::Model& model, const workload::Training& training,
                                double saved_bytes);
double OffloadedActivationBytes(const workload::Model& model, const workload::ModelCounts& counts,
                                const workload::Training& training, double saved_bytes);
// What full recompute adds on top of the checkpointed layer inputs: one layer's activations, held
// while that layer is recomputed and back-propagated; under selective recompute with Megatron's
// --recompute-modules beyond core_attn, one layer's worth of what those modules discard (they are
// re-created for that layer's backward); 0 otherwise.
double RecomputeWorkingSetBytes(const workload::Model& model, const workload::Training& training);
double RecomputeWorkingSetBytes(const workload::Model& model, const workload::ModelCounts& counts,
                                const workload::Training& training);
// The same for a stage of `stage_layers` layers with at most `in_flight_limit` micro-batches in
// flight (1F1B: pp - stage index, which also names the stage for the interleaved schedule: its
// 2 (pp - rank - 1) + (vpp - 1) pp + 1 chunks of stage_layers / vpp layers, at most all of them).
double StageActivationBytes(const workload::Model& model, const workload::Training& training,
                            int64_t stage_layers, int64_t in_flight_limit);
double StageActivationBytes(const workload::Model& model, const workload::ModelCounts& counts,
                            const workload::Training& training, int64_t stage_layers,
                            int64_t in_flight_limit);

enum class FitVerdict { kFits, kTight, kDoesNotFit };

// Free fraction below which a fit is "tight": field guidance keeps >= 10 % of memory free.
inline constexpr double kTightHeadroomFraction = 0.10;

// (capacity - peak) / capacity; negative when the peak exceeds the capacity.
inline double HeadroomFraction(double peak_bytes, double capacity_bytes) {
  return capacity_bytes > 0 ? (capacity_bytes - peak_bytes) / capacity_bytes : -1.0;
}
// kDoesNotFit when the allocated peak plus the CUDA context (`unreserved_peak_bytes`) exceeds the
// capacity, kTight when less than 10 % stays free at `peak_bytes` (with the allocator's reserve),
// else kFits. The reserve does not decide "does not fit": PyTorch's caching allocator gives its
// cached blocks back to the driver and retries before it raises out-of-memory
// (pytorch/pytorch@001074d250 c10/cuda/CUDACachingAllocator.cpp, DeviceCachingAllocator::malloc:
// release_available_cached_blocks, then release_cached_blocks; "The only remaining cached memory
// is split from a larger block that is partially in-use"), and the reserve is fulcrum's
// assumption (AllocatorReserveFraction), not a measurement. A run between the two bounds is
// tight: it depends on that fragmentation staying small (and may slow on cudaMalloc retries).
FitVerdict ClassifyFit(double peak_bytes, double unreserved_peak_bytes, double capacity_bytes);
const char* FitVerdictName(FitVerdict verdict);  // "fits" | "tight" | "does not fit"

// torchtitan's op-level selective activation checkpointing (pytorch/torchtitan@cfb9326515
// torchtitan/distributed/activation_checkpoint.py _apply_op_sac): within one transformer block
// it numbers the matmuls (aten.mm) in forward order and saves the outputs of the odd ones (1st,
// 3rd, ...), recomputing the even ones in backward. A block's matmuls are its attention
// projections in workload::AttentionProjectionMatrices order (Llama: wq, wk, wv, wo; MLA as
// torchtitan's DeepSeek-V3 Attention.forward runs them, pytorch/torchtitan@018740b7ae
// torchtitan/models/deepseek_v3/model/model.py: wq or wq_a, wq_b, then wkv_a, wkv_b, wo), then
// the MLP's w1, w3 (f wide) and w2 (hidden wide); a GELU MLP is counted as the gated one.
inline bool TorchtitanSavesMatmul(int position) { return position % 2 == 1; }
inline constexpr bool kTorchtitanMlpOutputIsFfn[] = {true, true, false};  // w1, w3, w2

// GPU memory capacity in bytes from a datasheet size in GiB (catalog::Gpu::memory_gib).
inline double CapacityBytesFromGib(double memory_gib) { return memory_gib * 1073741824.0; }

}  // namespace fulcrum::estimate
