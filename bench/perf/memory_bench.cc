// Google Benchmark for the per-GPU memory estimate, the planner's innermost call: evaluations
// per second over a sweep of layouts, and a check that the estimate never allocates (global
// operator new is counted; the benchmark fails if a call allocates).
#include <benchmark/benchmark.h>

#include <atomic>
#include <cstdlib>
#include <new>
#include <string>
#include <vector>

#include "estimate/memory.h"
#include "support/alloc_counter.h"
#include "workload/model_io.h"

namespace {

using fulcrum::workload::Framework;
using fulcrum::workload::Model;
using fulcrum::workload::Recompute;
using fulcrum::workload::Training;

Model LoadPreset(const char* name) {
  auto model =
      fulcrum::workload::LoadModelPreset(std::string(FULCRUM_SOURCE_DIR) + "/catalog", name);
  if (!model.ok()) std::abort();
  return *model;
}

// A planner-like sweep: tp x pp x zero x micro-batch x recompute x framework for one model.
std::vector<Training> Layouts() {
  std::vector<Training> layouts;
  for (int tp : {1, 2, 4, 8})
    for (int pp : {1, 2, 4})
      for (int zero : {0, 1, 3})
        for (int mb : {1, 2, 4})
          for (Recompute rc : {Recompute::kNone, Recompute::kSelective, Recompute::kFull})
            for (Framework fw : {Framework::kMegatron, Framework::kDeepSpeed, Framework::kFsdp}) {
              Training t;
              t.tp = tp;
              t.pp = pp;
              t.dp = 8;
              t.zero_stage = zero;
              t.micro_batch = mb;
              t.global_batch = mb * 8 * 16;
              t.seq_len = 4096;
              t.recompute = rc;
              t.framework = fw;
              t.sequence_parallel = tp > 1;
              layouts.push_back(t);
            }
  return layouts;
}

// Runs `estimate(layout)` over the layouts of the llama-2-70b search, counting heap allocations.
template <typename Estimate>
void RunMemoryEstimates(benchmark::State& state, const std::vector<Training>& layouts,
                        const Estimate& estimate) {
  size_t i = 0;
  double sink = 0;
  const long before = fulcrum::bench_support::AllocationCount();
  for (auto _ : state) {
    sink += estimate(layouts[i]).peak_bytes_per_gpu;
    if (++i == layouts.size()) i = 0;
  }
  const long allocations = fulcrum::bench_support::AllocationCount() - before;
  benchmark::DoNotOptimize(sink);
  state.counters["allocations"] = static_cast<double>(allocations);
  state.counters["evaluations_per_s"] =
      benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
  if (allocations != 0) state.SkipWithError("EstimateMemory allocated");
}

void BM_EstimateMemory(benchmark::State& state) {
  const Model model = LoadPreset("llama-2-70b");
  RunMemoryEstimates(state, Layouts(), [&model](const Training& t) {
    return fulcrum::estimate::EstimateMemory(model, t);
  });
}
BENCHMARK(BM_EstimateMemory);

// The same estimates with the model's figures counted once beforehand (workload::CountModel), as
// the planner's layout search calls it.
void BM_EstimateMemoryCounted(benchmark::State& state) {
  const Model model = LoadPreset("llama-2-70b");
  const fulcrum::workload::ModelCounts counts = fulcrum::workload::CountModel(model);
  RunMemoryEstimates(state, Layouts(), [&model, &counts](const Training& t) {
    return fulcrum::estimate::EstimateMemory(model, counts, t);
  });
}
BENCHMARK(BM_EstimateMemoryCounted);

}  // namespace
