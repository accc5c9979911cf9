// The planner's second stage: the layout search. For each hardware class and node count, every
// parallel layout (framework x tp, cp, pp, vpp, dp, ep, ZeRO stage, recompute, micro-batch) that
// fits in GPU memory with the required headroom, keeping the fastest. Provable pruning: for one
// (class, node count) only the fastest fitting layout is kept, because for a fixed offer, node
// count and pricing model the cost, the score and the deadline/budget checks are all monotone in
// the run time; a micro-batch that does not fit ends the scan of larger ones (memory grows with
// it). The scan allocates nothing, does no I/O or logging; the (class, nodes) tasks run on the
// one parallel-for (core/parallel.h). Pure and thread-safe.
#pragma once

#include <cstdint>
#include <vector>

#include "estimate/compute.h"
#include "plan/candidate.h"
#include "plan/classes.h"
#include "plan/frameworks.h"
#include "plan/spec.h"
#include "workload/model.h"
#include "workload/training.h"

namespace fulcrum::plan {

// The step time of a layout as the search takes it: the estimator's, times a measured job's
// `step_time_factor` (every part of it scales; throughput and MFU divide).
estimate::StepTime PlannedStepTime(const workload::Model& model, const workload::Training& t,
                                   const estimate::Hardware& hardware, double step_time_factor);
// The same with counts = workload::CountModel(model), counted once per search.
estimate::StepTime PlannedStepTime(const workload::Model& model,
                                   const workload::ModelCounts& counts, const workload::Training& t,
                                   const estimate::Hardware& hardware, double step_time_factor);

// Scans the layouts of `base` (precision, method, seq_len, global batch, ...) on `gpus` GPUs of
// `hardware` (gpus_per_node each), keeping the fastest that leaves >= min_headroom free of
// `capacity_bytes` and that its framework can run (workload::FrameworkRunsLayout).
// Allocation-free.
BestLayout SearchLayouts(const workload::Model& model, const workload::Training& base,
                         const estimate::Hardware& hardware, double capacity_bytes, int gpus,
                         double min_headroom, const LayoutOptions& options = {});

// The best layout of one hardware class on `nodes` nodes.
struct LayoutTask {
  int hardware_class = -1;  // index into HardwareClasses::classes
  int nodes = 1;
  BestLayout best;
  // Step time at the conservative network over the step time at the assumed one, for the chosen
  // layout (1 where the network is published or the run is one node); multiplies the P90.
  double network_p90_ratio = 1;
};

struct LayoutTable {
  std::vector<LayoutTask> tasks;  // by class, then by increasing node count
  std::vector<int> first_task;    // first_task[k]..first_task[k+1]: class k's tasks
  int64_t configurations = 0;     // layouts evaluated over every task
  int threads = 1;                // threads the search ran on
  // The task of (class, nodes); nullptr when that class does not try that node count.
  const LayoutTask* Find(int hardware_class, int nodes) const;
};

// Searches every class at each of its node counts under the spec's batch and headroom
// constraints, each layout under every framework of `frameworks` that runs it (JobFrameworksOf;
// data parallel only where it says so),
// on up to `threads` threads (<= 0: the hardware's). The result does not depend on the thread
// count.
LayoutTable SearchClassLayouts(const workload::Model& model, const workload::Training& base,
                               const std::vector<HardwareClass>& classes, const PlanSpec& spec,
                               const JobFrameworks& frameworks, int threads);

}  // namespace fulcrum::plan
