// Per-GPU memory of a run that resumes from its checkpoint (what `fulcrum run` does after every
// crash or preemption): while the checkpoint loads, the model states sit on the GPU with whatever
// the format's load path materialises beside them, and some formats leave part of that allocated
// into the training steps. The larger of that and the fresh run's peak is the peak at resume; a
// layout fits only if both fit. Formulas and sources in resume.cc. Pure, allocation-free and
// thread-safe (the planner calls it per layout). Bytes.
#pragma once

#include "estimate/memory.h"
#include "workload/model.h"
#include "workload/training.h"

namespace fulcrum::estimate {

struct ResumeMemory {
  workload::CheckpointFormat format = workload::CheckpointFormat::kTorchDist;  // as resolved
  // Model states on the GPU while the checkpoint loads: weights, gradient buffers, optimizer
  // states (with fp32 master weights) and communication buffers, as the fresh run keeps them.
  double resident_bytes = 0;
  // Tensors the load path materialises on the GPU beside the live states while it runs.
  double load_transient_bytes = 0;
  // Of those, what stays allocated into the training steps after the load.
  double retained_bytes = 0;
  // torch.cuda.max_memory_allocated over the resumed process: the larger of the load
  // (resident + transient) and a training step (fresh allocated + retained).
  double allocated_bytes = 0;
  double reserved_bytes = 0;  // + the framework's allocator reserve
  // + CUDA context: the resumed process's peak as nvidia-smi shows it.
  double peak_at_resume_bytes_per_gpu = 0;
  // The load itself (not a training step) sets the resumed process's peak.
  bool load_bound = false;
};

// The resumed process's memory for `fresh` = EstimateMemory(model, training) (or the stage the
// caller compares), under training.checkpoint_format (the framework's default when kDefault).
ResumeMemory EstimateResumeMemory(const workload::Model& model, const workload::Training& training,
                                  const MemoryBreakdown& fresh);
// The same with counts = workload::CountModel(model) (the planner's inner loop).
ResumeMemory EstimateResumeMemory(const workload::Model& model, const workload::ModelCounts& counts,
                                  const workload::Training& training, const MemoryBreakdown& fresh);

// The bound a plan must fit: the larger of the fresh peak and the peak at resume.
inline double FitPeakBytes(const MemoryBreakdown& fresh, const ResumeMemory& resume) {
  return resume.peak_at_resume_bytes_per_gpu > fresh.peak_bytes_per_gpu
             ? resume.peak_at_resume_bytes_per_gpu
             : fresh.peak_bytes_per_gpu;
}
// The same without the allocator's reserve (allocated + CUDA context, the larger of the two
// runs'): what "does not fit" judges (ClassifyFit).
inline double FitUnreservedPeakBytes(const MemoryBreakdown& fresh, const ResumeMemory& resume) {
  const double fresh_bytes = fresh.allocated_bytes + fresh.cuda_context_bytes;
  const double resume_bytes = resume.allocated_bytes + fresh.cuda_context_bytes;
  return resume_bytes > fresh_bytes ? resume_bytes : fresh_bytes;
}
// "resume" when the peak at resume is above the fresh peak, else "fresh".
inline const char* FitBoundName(const MemoryBreakdown& fresh, const ResumeMemory& resume) {
  return resume.peak_at_resume_bytes_per_gpu > fresh.peak_bytes_per_gpu ? "resume" : "fresh";
}

}  // namespace fulcrum::estimate
