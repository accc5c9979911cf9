// The peak of a resumed process. What each format's load path puts on the GPU, from the
// frameworks' code:
// - Megatron-LM torch_dist: the sharded state dict hands the live tensors to PyTorch's distributed
//   checkpoint as the load targets (ShardedTensor.data = the parameter or optimizer buffer,
//   detached; tensors with no data are created on the CPU: mcore_to_pyt_state_dict in
//   NVIDIA/Megatron-LM@d98e8a64dd megatron/core/dist_checkpointing/strategies/torch.py), and the
//   distributed optimizer allocates its states before the load so that it fills them in place
//   (DistributedOptimizer.sharded_state_dict: "self.load_state_dict(self.state_dict())",
//   megatron/core/optimizer/distrib_optimizer.py): nothing beside the live states.
// - Megatron-LM torch (legacy): torch.load(..., map_location='cpu') of each rank's file, copied in
//   (megatron/training/checkpointing.py): nothing on the GPU beside the live states.
// - Megatron-FSDP fsdp_dtensor: before the load the optimizer runs one dummy step to create its
//   states, with a zero gradient on every (fp32, sharded) main parameter
//   (DistributedOptimizer._init_optimizer_states_with_dummy_values, "param.grad =
//   torch.zeros_like(param)"), then DCP loads in place: 4 bytes per sharded main parameter beside
//   the live states while it loads.
// - PyTorch DCP of sharded states (torchtitan, FSDP SHARDED_STATE_DICT): loads in place into the
//   DTensors; get_optimizer_state_dict initialises missing optimizer states with zero gradients
//   of the (sharded) parameters, which FSDP keeps during training anyway (in `gradients`).
// - FSDP FULL_STATE_DICT: the model's load unshards one unit at a time to copy the full tensors in
//   (fp32 flat parameter), and the full optimizer state dict is flattened unit by unit (torch.cat
//   of the unit's unsharded states, then sharded: pytorch/pytorch
//   torch/distributed/fsdp/_optim_utils.py _flatten_optim_state): the largest unit's unsharded
//   fp32 weights and optimizer states beside the live ones.
// - DeepSpeed (and Megatron-DeepSpeed): model and ZeRO files loaded with map_location cpu
//   (deepspeedai/DeepSpeed@edaa7221 deepspeed/runtime/engine.py L4034, L4084, L4535); the ZeRO
//   optimizer creates its states on the GPU from them (stage_1_and_2.py
//   _restore_base_optimizer_state): no copy beside the live states.
// - HF safetensors (HF Trainer, DDP): weights read to the CPU and copied in; optimizer.pt loaded
//   onto the device when world_size > 1 and adopted by Optimizer.load_state_dict without a copy
//   (same dtype and device): nothing beside the live states.
// Where nothing is materialised, the load holds less than a training step (no activations), so
// the resumed peak is the fresh one: the Megatron-LM CI resume tests measure the same peak before
// and after a resume (docs/ACCURACY.md, "Memory at resume").
#include "estimate/resume.h"

#include <algorithm>

namespace fulcrum::estimate {
namespace {

using workload::CheckpointFormat;

// Parameters of the largest FSDP unit on this GPU (a transformer layer, LayerUnitParameters, or
// the largest tensor), as memory.cc sizes the FSDP buffers.
double LargestUnitParams(const workload::Model& m, const workload::ModelCounts& n,
                         const workload::Training& t) {
  if (m.kind == workload::ModelKind::kGeneric) return m.generic_parameters;
  return std::max(LayerUnitParameters(m, n, t),
                  n.largest_tensor_parameters / static_cast<double>(t.tp));
}

}  // namespace

ResumeMemory EstimateResumeMemory(const workload::Model& model, const workload::Training& t,
                                  const MemoryBreakdown& fresh) {
  return EstimateResumeMemory(model, workload::CountModel(model), t, fresh);
}

ResumeMemory EstimateResumeMemory(const workload::Model& model, const workload::ModelCounts& counts,
                                  const workload::Training& t, const MemoryBreakdown& fresh) {
  ResumeMemory r;
  r.format = workload::ResolvedCheckpointFormat(t);
  r.resident_bytes =
      fresh.weights_bytes + fresh.gradients_bytes + fresh.optimizer_bytes + fresh.comm_buffer_bytes;
  const double state_bytes = OptimizerStateBytesPerParam(t);
  switch (r.format) {
    case CheckpointFormat::kFsdpDtensor:
      // fp32 dummy gradients of the main parameters this GPU holds (fp32 master + states).
      r.load_transient_bytes =
          t.offload_optimizer ? 0 : 4 * fresh.optimizer_bytes / (4 + state_bytes);
      break;
    case CheckpointFormat::kFsdpFull:
      r.load_transient_bytes = (4 + state_bytes) * LargestUnitParams(model, counts, t);
      break;
    default:
      r.load_transient_bytes = 0;
      break;
  }
  const double load_allocated = r.resident_bytes + r.load_transient_bytes;
  const double step_allocated = fresh.allocated_bytes + r.retained_bytes;
  r.load_bound = load_allocated > step_allocated;
  r.allocated_bytes = std::max(load_allocated, step_allocated);
  const double reserve =
      fresh.allocated_bytes > 0 ? fresh.allocator_reserve_bytes / fresh.allocated_bytes : 0;
  if (r.load_bound) {
    r.reserved_bytes = load_allocated * (1 + reserve);
    r.peak_at_resume_bytes_per_gpu = r.reserved_bytes + fresh.cuda_context_bytes;
  } else {  // a training step, plus what the load left allocated (exactly fresh when nothing)
    const double extra = r.retained_bytes * (1 + reserve);
    r.reserved_bytes = fresh.reserved_bytes + extra;
    r.peak_at_resume_bytes_per_gpu = fresh.peak_bytes_per_gpu + extra;
  }
  return r;
}

}  // namespace fulcrum::estimate
