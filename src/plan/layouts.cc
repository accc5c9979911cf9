#include "plan/layouts.h"

#include <algorithm>
#include <cmath>
#include <span>

#include "core/parallel.h"
#include "estimate/estimate.h"
#include "plan/frameworks.h"

namespace fulcrum::plan {
namespace {

using workload::Recompute;

// Micro-batches tried, up to what memory allows (the scan stops at the first that does not fit):
// NVIDIA's DeepLearningExamples train ResNet-50 at 256 images per A100 (PyTorch/Classification/
// ConvNets/resnet50v1.5 README, "--batch-size 256" for AMP on A100 80GB), far above a
// transformer's.
constexpr int kMicroBatches[] = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096};
constexpr Recompute kRecomputes[] = {Recompute::kNone, Recompute::kSelective, Recompute::kFull};
// Where the batch is fulcrum's default rather than the user's, a layout may change it by this
// much (there is nothing to keep: the default is a round number of tokens or samples).
constexpr double kDefaultBatchTolerance = 0.10;
// Context parallelism is tried for long sequences only (from 16k tokens: where activations, not
// model states, dominate; Megatron-LM and torchtitan use cp 2-8 from 16k-32k up), within a node
// with tp (the K/V ring wants NVLink).
constexpr int64_t kContextParallelMinSeqLen = 16384;
constexpr int kMaxContextParallel = 8;

// Whether a common framework runs the layout with the training's method. Full training: every
// layout FrameworkRunsLayout allows. LoRA under Megatron conventions (tp, pp, cp, ep, the
// distributed optimizer) runs on NeMo Megatron-Bridge PEFT, which trains LoRA on Megatron-Core
// with tensor and pipeline parallelism (docs.nvidia.com/nemo/megatron-bridge: "pretraining, SFT
// and LoRA ... tensor and pipeline parallelism"); the plan labels it megatron-bridge
// (FrameworkLabel). QLoRA's 4-bit NF4 base is bitsandbytes, which HF PEFT shards only with FSDP
// or DeepSpeed ZeRO-3 (PEFT 0.10 release notes, "QLoRA with DeepSpeed ZeRO3 and FSDP";
// huggingface.co/docs/peft/accelerate/fsdp): plain data parallel, no tp, pp, cp or ep.
bool PeftRunsLayout(const workload::Training& t) {
  if (t.method == workload::Method::kFull) return true;
  // Megatron-FSDP and Megatron-DeepSpeed are pre-training frameworks: no PEFT path.
  if (t.framework == workload::Framework::kMegatronFsdp ||
      t.framework == workload::Framework::kMegatronDeepSpeed) {
    return false;
  }
  const bool data_parallel = t.tp == 1 && t.pp == 1 && t.cp == 1 && t.ep == 1;
  if (t.method == workload::Method::kQlora) {
    return data_parallel && t.framework != workload::Framework::kMegatron;
  }
  // LoRA with model parallelism: Megatron-Bridge only (HF PEFT shards LoRA data parallel only).
  return data_parallel || t.framework == workload::Framework::kMegatron;
}

// The estimator's memory times a measured job's factor (every part scales alike).
estimate::MemoryBreakdown PlannedMemory(const workload::Model& model,
                                        const workload::ModelCounts& counts,
                                        const workload::Training& t, double factor) {
  estimate::MemoryBreakdown m = estimate::EstimateMemory(model, counts, t);
  if (factor == 1) return m;
  for (double* part :
       {&m.weights_bytes, &m.gradients_bytes, &m.optimizer_bytes, &m.activations_bytes,
        &m.logits_bytes, &m.comm_buffer_bytes, &m.cuda_context_bytes, &m.allocator_reserve_bytes,
        &m.other_bytes, &m.allocated_bytes, &m.reserved_bytes, &m.peak_bytes_per_gpu}) {
    *part *= factor;
  }
  return m;
}

// Tries one layout; updates `best`. Returns false when it does not fit in memory.
bool TryLayout(const workload::Model& model, const workload::ModelCounts& counts,
               workload::Training& t, const estimate::Hardware& hw, double usable_bytes,
               double capacity_bytes, const LayoutOptions& options, BestLayout& best) {
  ++best.evaluated;
  const estimate::MemoryBreakdown mem = PlannedMemory(model, counts, t, options.memory_factor);
  // A layout must fit fresh and when it resumes from its checkpoint (fulcrum run resumes).
  const estimate::ResumeMemory resume = estimate::EstimateResumeMemory(model, counts, t, mem);
  const double bound = estimate::FitPeakBytes(mem, resume);
  if (!(bound <= usable_bytes)) return false;
  const estimate::StepTime st = PlannedStepTime(model, counts, t, hw, options.step_time_factor);
  if (!std::isfinite(st.step_seconds)) return true;
  const double headroom = estimate::HeadroomFraction(bound, capacity_bytes);
  const double rate = st.tokens_per_second_per_gpu;
  const double best_rate = best.found ? best.step.tokens_per_second_per_gpu : -1;
  // Of equally fast layouts the one with more headroom, under the same framework: across
  // frameworks the first tried (the usual one for the layout) keeps its place.
  const bool more_headroom = rate == best_rate && headroom > best.headroom_fraction &&
                             t.framework == best.training.framework;
  if (!best.found || rate > best_rate || more_headroom) {
    best.found = true;
    best.training = t;
    best.memory = mem;
    best.resume = resume;
    best.step = st;
    best.headroom_fraction = headroom;
  }
  return true;
}

// The global batch a layout with `per_step` sequences per micro-step (dp x micro-batch) runs: the
// spec's where per_step divides it, else the nearer multiple of per_step within `tolerance`
// (a fraction of the spec's; up on a tie); 0 when none is.
int64_t EffectiveBatch(int64_t global_batch, int64_t per_step, double tolerance) {
  if (global_batch % per_step == 0) return global_batch;
  const int64_t down = global_batch / per_step * per_step, up = down + per_step;
  const double limit = tolerance * static_cast<double>(global_batch) + 1e-9;
  const bool up_nearer = up - global_batch <= global_batch - down;
  for (int64_t b : {up_nearer ? up : down, up_nearer ? down : up}) {
    if (b > 0 && std::abs(static_cast<double>(b - global_batch)) <= limit) return b;
  }
  return 0;
}

void ScanMicroBatches(const workload::Model& model, const workload::ModelCounts& counts,
                      workload::Training& t, const estimate::Hardware& hw, double usable,
                      double capacity, int64_t global_batch, double tolerance,
                      const LayoutOptions& options, BestLayout& best) {
  const int fixed[] = {options.micro_batch};
  const std::span<const int> micro_batches =
      options.micro_batch > 0 ? std::span<const int>(fixed) : std::span<const int>(kMicroBatches);
  for (int mb : micro_batches) {
    const int64_t per_step = int64_t{mb} * t.dp;
    if (static_cast<double>(per_step) > static_cast<double>(global_batch) * (1 + tolerance)) {
      break;
    }
    const int64_t effective = EffectiveBatch(global_batch, per_step, tolerance);
    if (effective == 0) continue;
    t.micro_batch = mb;
    t.global_batch = effective;
    // Memory grows with the micro-batch: once one does not fit, larger ones cannot.
    if (!TryLayout(model, counts, t, hw, usable, capacity, options, best)) break;
  }
}

// The layout `t` (sizes set) under each framework the job allows that runs it, the one a layout
// of this shape usually runs under first (so that of equally fast frameworks it is the one named).
void ScanFrameworks(const workload::Model& model, const workload::ModelCounts& counts,
                    workload::Training& t, const estimate::Hardware& hw, double usable,
                    double capacity, int64_t global_batch, double tolerance,
                    const LayoutOptions& options, BestLayout& best) {
  workload::Framework usual = workload::DefaultFrameworkFor(t);
  // Plain data parallel without ZeRO is PyTorch DDP where the job allows it (a CNN's torchrun
  // script, an unknown script's most common form), not DeepSpeed at stage 0.
  const bool plain_dp =
      t.tp * t.pp * t.cp * t.ep == 1 && t.zero_stage == 0 && t.method == workload::Method::kFull;
  if (plain_dp && (options.frameworks & workload::FrameworkBit(workload::Framework::kDdp))) {
    usual = workload::Framework::kDdp;
  }
  // One GPU runs no distributed framework: the usual one's conventions, where the job allows it.
  const bool one_gpu = t.tp * t.pp * t.cp * t.dp == 1;
  const bool usual_allowed = (options.frameworks & workload::FrameworkBit(usual)) != 0;
  for (int i = -1; i < workload::kFrameworkCount; ++i) {
    const workload::Framework f = i < 0 ? usual : static_cast<workload::Framework>(i);
    if (i >= 0 && (f == usual || (one_gpu && usual_allowed))) continue;
    if (!(options.frameworks & workload::FrameworkBit(f))) continue;
    t.framework = f;
    if (!workload::FrameworkRunsLayout(f, t) || !PeftRunsLayout(t)) continue;
    // A command that asks for Megatron's all-to-all overlap runs only where Megatron allows it.
    if (t.moe_a2a_overlap && !workload::MoeA2aOverlapRuns(t)) continue;
    // Whole experts over tp ranks are Megatron-Core's (--expert-tensor-parallel-size 1).
    if (t.expert_tp == 1 && t.tp > 1 && !workload::UsesMegatronCore(f)) continue;
    ScanMicroBatches(model, counts, t, hw, usable, capacity, global_batch, tolerance, options,
                     best);
  }
}

void ScanLayouts(const workload::Model& model, const workload::ModelCounts& counts,
                 const workload::Training& base, const estimate::Hardware& hw,
                 double capacity_bytes, int gpus, double min_headroom, const LayoutOptions& options,
                 double tolerance, BestLayout& best) {
  const double usable = capacity_bytes * (1.0 - min_headroom);
  const bool generic = model.kind == workload::ModelKind::kGeneric;
  const int64_t layers = generic ? 1 : model.layers;
  const int64_t kv_heads = model.kv_heads > 0 ? model.kv_heads : model.heads;
  workload::Training t = base;
  const int max_cp = generic || base.seq_len < kContextParallelMinSeqLen ? 1 : kMaxContextParallel;
  // A job whose code shards nothing itself: one rank per GPU, data parallel only.
  const int max_model_parallel = options.data_parallel_only ? 1 : gpus;
  for (int tp = 1; tp <= hw.gpus_per_node && tp <= max_model_parallel; tp *= 2) {
    if (gpus % tp != 0 || hw.gpus_per_node % tp != 0) continue;
    if (generic && tp > 1) break;
    if (!generic && (model.heads % tp != 0 || kv_heads % tp != 0)) continue;
    for (int cp = 1; cp <= std::min(max_cp, max_model_parallel) && tp * cp <= hw.gpus_per_node;
         cp *= 2) {
      if (gpus % (tp * cp) != 0 || (cp > 1 && base.seq_len % (2 * cp) != 0)) continue;
      for (int pp = 1; pp <= gpus / (tp * cp) && pp <= layers && pp <= max_model_parallel; ++pp) {
        // pp need not divide the layers: the stages then hold the floor or the ceiling of
        // layers / pp, the first and last the floor (workload::PipelineStageLayers; Megatron-LM
        // --decoder-first/last-pipeline-num-layers, as Llama 3 405B's pp16 over 126 layers with
        // one layer less on the first and the last stage, arXiv 2407.21783 Sec. 3.3.2).
        // Interleaving (vpp > 1) needs pp x vpp to divide them.
        if ((gpus / (tp * cp)) % pp != 0) continue;
        const int dp = gpus / (tp * cp * pp);
        for (int vpp = 1; vpp <= (pp > 1 ? 2 : 1); ++vpp) {
          if (vpp > 1 && layers % (static_cast<int64_t>(pp) * vpp) != 0) continue;
          // ZeRO shards over dp x cp (nothing to shard at 1); stages 2/3 do not combine with
          // pipeline parallelism (DeepSpeed refuses ZeRO-2/3 with pipeline parallelism).
          // Generic (FLOPs-only) models run plain data parallel (DDP): their time model does not
          // distinguish ZeRO stages, and a CNN's states are small.
          const int max_zero = dp * cp == 1 || generic ? 0 : (pp > 1 ? 1 : 3);
          const int fixed_zero =
              options.zero_stage < 0 ? -1 : (dp * cp == 1 || generic ? 0 : options.zero_stage);
          for (int zero = 0; zero <= max_zero; ++zero) {
            if (fixed_zero >= 0 && zero != fixed_zero) continue;
            // Mixture of experts: expert parallelism carved out of dp (ep divides dp and the
            // experts), its all-to-all kept inside a node (tp x cp x ep <= GPUs per node): the
            // planner's rule, not the frameworks' (Megatron lets the expert group span nodes);
            // the search relied on the ranking to keep such rows out of the top (a refit let an
            // inter-node tp2 ep8 row into the Mixtral top 100).
            // Whole experts (the job's --expert-tensor-parallel-size 1): ep out of tp x cp x dp,
            // its ranks adjacent (Megatron-Core's expert grid orders etp, ep, expert dp).
            const bool whole = base.expert_tp == 1 && tp > 1;
            const int ep_ranks = whole ? tp * cp * dp : dp;
            for (int ep = 1;
                 ep <= (workload::IsMoe(model) ? std::min(ep_ranks, max_model_parallel) : 1);
                 ep *= 2) {
              if (ep_ranks % ep != 0 || (ep > 1 && model.experts % ep != 0)) continue;
              if (ep > 1 && (whole ? ep : tp * cp * ep) > hw.gpus_per_node) break;
              for (Recompute rc : kRecomputes) {
                // The HF Trainer recomputes whole layers (--gradient_checkpointing) or nothing.
                if (rc == Recompute::kSelective && base.hf_gradient_checkpointing) continue;
                t.tp = tp;
                t.pp = pp;
                t.vpp = vpp;
                t.cp = cp;
                t.dp = dp;
                t.ep = ep;
                t.zero_stage = zero;
                t.recompute = rc;
                t.sequence_parallel = tp > 1;
                ScanFrameworks(model, counts, t, hw, usable, capacity_bytes, base.global_batch,
                               tolerance, options, best);
              }
            }
          }
        }
      }
    }
  }
}

// The search of one (class, nodes) task: on an assumed network the layout is chosen for the
// conservative figure (what the P90 plans: pipeline stages rather than ZeRO-3 over hundreds of
// VMs) and its mean step is then taken at the assumption.
void SearchTask(const workload::Model& model, const workload::Training& base,
                const HardwareClass& hc, const LayoutOptions& options, double min_headroom,
                LayoutTask& task) {
  workload::Training class_base = base;
  class_base.precision = hc.precision;
  const bool assumed = hc.conservative && task.nodes > 1;
  LayoutOptions class_options = options;
  class_options.step_time_factor = hc.step_time_factor;
  class_options.memory_factor = hc.memory_factor;
  task.best =
      SearchLayouts(model, class_base, assumed ? *hc.conservative : hc.hardware, hc.capacity_bytes,
                    task.nodes * hc.hardware.gpus_per_node, min_headroom, class_options);
  if (assumed && task.best.found) {
    const estimate::StepTime low = task.best.step;
    task.best.step = PlannedStepTime(model, task.best.training, hc.hardware, hc.step_time_factor);
    if (std::isfinite(low.step_seconds) && task.best.step.step_seconds > 0) {
      task.network_p90_ratio = std::max(1.0, low.step_seconds / task.best.step.step_seconds);
    }
  }
}

}  // namespace

estimate::StepTime PlannedStepTime(const workload::Model& model, const workload::Training& t,
                                   const estimate::Hardware& hardware, double step_time_factor) {
  return PlannedStepTime(model, workload::CountModel(model), t, hardware, step_time_factor);
}

estimate::StepTime PlannedStepTime(const workload::Model& model,
                                   const workload::ModelCounts& counts, const workload::Training& t,
                                   const estimate::Hardware& hardware, double step_time_factor) {
  estimate::StepTime st = estimate::EstimateStepTime(model, counts, t, hardware);
  if (step_time_factor == 1 || !(step_time_factor > 0)) return st;
  for (double* part : {&st.step_seconds, &st.compute_seconds, &st.communication_seconds,
                       &st.bubble_seconds, &st.exposed_seconds}) {
    *part *= step_time_factor;
  }
  st.tokens_per_second_per_gpu /= step_time_factor;
  st.mfu /= step_time_factor;
  st.hfu /= step_time_factor;
  return st;
}

BestLayout SearchLayouts(const workload::Model& model, const workload::Training& base,
                         const estimate::Hardware& hw, double capacity_bytes, int gpus,
                         double min_headroom, const LayoutOptions& options) {
  BestLayout best;
  double tolerance = options.allow_batch_change ? options.batch_tolerance : 0;
  if (!options.batch_given && options.allow_batch_change) {
    tolerance = std::max(tolerance, kDefaultBatchTolerance);
  }
  // The model's figures, counted once for every layout the scan estimates.
  const workload::ModelCounts counts = workload::CountModel(model);
  ScanLayouts(model, counts, base, hw, capacity_bytes, gpus, min_headroom, options, tolerance,
              best);
  return best;
}

const LayoutTask* LayoutTable::Find(int hardware_class, int nodes) const {
  if (hardware_class < 0 || static_cast<size_t>(hardware_class) + 1 >= first_task.size()) {
    return nullptr;
  }
  for (int i = first_task[hardware_class]; i < first_task[hardware_class + 1]; ++i) {
    if (tasks[i].nodes == nodes) return &tasks[i];
  }
  return nullptr;
}

LayoutTable SearchClassLayouts(const workload::Model& model, const workload::Training& base,
                               const std::vector<HardwareClass>& classes, const PlanSpec& spec,
                               const JobFrameworks& frameworks, int threads) {
  LayoutTable table;
  table.first_task.push_back(0);
  for (size_t k = 0; k < classes.size(); ++k) {
    for (int n : classes[k].node_counts) {
      LayoutTask task;
      task.hardware_class = static_cast<int>(k);
      task.nodes = n;
      table.tasks.push_back(task);
    }
    table.first_task.push_back(static_cast<int>(table.tasks.size()));
  }
  const Constraints& c = spec.constraints;
  LayoutOptions options;
  options.frameworks = frameworks.allowed;
  options.data_parallel_only = frameworks.data_parallel_only;
  options.zero_stage = frameworks.zero_stage;
  options.micro_batch = frameworks.micro_batch;
  options.allow_batch_change = !c.strict_batch;
  options.batch_tolerance = c.batch_tolerance;
  options.batch_given = spec.global_batch_given;
  table.threads = ParallelFor(table.tasks.size(), threads, 1, [&](size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) {
      LayoutTask& task = table.tasks[i];
      SearchTask(model, base, classes[task.hardware_class], options, c.min_headroom, task);
    }
  });
  for (const LayoutTask& task : table.tasks) table.configurations += task.best.evaluated;
  return table;
}

}  // namespace fulcrum::plan
