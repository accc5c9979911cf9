// Google Benchmarks for the planner's hot path: (1) the layout search (memory + step time per
// configuration) on one core, in configurations per second, with global operator new counted
// (the inner loop must not allocate); (2) a whole `plan` of the 70B pre-train example over the
// full shipped catalog, on 1 and 2 threads (wall time).
#include <benchmark/benchmark.h>

#include <atomic>
#include <cstdlib>
#include <new>
#include <string>

#include "catalog/catalog.h"
#include "estimate/compute.h"
#include "plan/search.h"
#include "plan/spec.h"
#include "support/alloc_counter.h"
#include "support/shipped_catalog.h"
#include "workload/model_io.h"

namespace {

const std::string& kCatalog = fulcrum::bench_support::ShippedCatalogDir();

fulcrum::workload::Model Preset(const char* name) {
  auto model = fulcrum::workload::LoadModelPreset(kCatalog, name);
  if (!model.ok()) std::abort();
  return *model;
}

const fulcrum::catalog::Catalog& Shipped() { return fulcrum::bench_support::ShippedCatalog(); }

// The shipped H100 SXM GPU in an 8-GPU NVLink node with 3.2 Tbit/s of network, in bf16.
const fulcrum::catalog::Gpu& H100() { return *Shipped().FindGpu("H100-SXM5-80GB"); }
fulcrum::estimate::Hardware H100Node() {
  fulcrum::catalog::Offer node;
  node.gpu = H100().name;
  node.gpu_count = 8;
  node.interconnect = fulcrum::catalog::Interconnect::kNvlink;
  node.network_gbps = 3200;
  return *fulcrum::estimate::HardwareFor(H100(), node, fulcrum::workload::Precision::kBf16Mixed);
}

// One core: SearchLayouts for llama-2-70b on 1..16 nodes of 8 x H100 SXM.
void BM_SearchLayouts(benchmark::State& state) {
  const auto model = Preset("llama-2-70b");
  const fulcrum::catalog::Gpu* gpu = &H100();
  const auto hw = H100Node();
  fulcrum::workload::Training base;
  base.seq_len = 4096;
  base.global_batch = 1024;
  const double capacity = gpu->memory_gib * 1073741824.0;
  int64_t configurations = 0;
  long allocations = 0;
  for (auto _ : state) {
    const long before = fulcrum::bench_support::AllocationCount();
    for (int nodes : {1, 2, 4, 8, 16}) {
      const auto best = fulcrum::plan::SearchLayouts(model, base, hw, capacity, nodes * 8, 0.10);
      configurations += best.evaluated;
      benchmark::DoNotOptimize(best);
    }
    allocations += fulcrum::bench_support::AllocationCount() - before;
  }
  state.counters["configurations_per_s"] =
      benchmark::Counter(static_cast<double>(configurations), benchmark::Counter::kIsRate);
  state.counters["allocations"] = static_cast<double>(allocations);
  // Layouts one iteration (five searches) evaluates: callgrind's instructions per configuration
  // are the collected SearchLayouts instructions over iterations x this.
  state.counters["configurations_per_iteration"] =
      static_cast<double>(configurations) / static_cast<double>(state.iterations());
  if (allocations != 0) state.SkipWithError("the layout search allocated");
}
BENCHMARK(BM_SearchLayouts)->Unit(benchmark::kMillisecond);

// One core: EstimateStepTime alone (memory + time = one full configuration evaluation when the
// layout fits), llama-2-70b tp8 pp4 dp4 on H100 SXM nodes.
void BM_StepTime(benchmark::State& state) {
  const auto model = Preset("llama-2-70b");
  const auto hw = H100Node();
  fulcrum::workload::Training t;
  t.tp = 8, t.pp = 4, t.dp = 4, t.zero_stage = 1, t.sequence_parallel = true;
  t.seq_len = 4096, t.global_batch = 1024, t.micro_batch = 1;
  int mb = 0;
  for (auto _ : state) {
    t.micro_batch = 1 + (mb++ & 3);
    benchmark::DoNotOptimize(fulcrum::estimate::EstimateStepTime(model, t, hw));
  }
  state.counters["evaluations_per_s"] =
      benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_StepTime);

// The whole plan of examples/<name>.yaml over the full catalog on `threads` threads; with
// `every_framework` each layout is tried under every framework (as `--framework
// megatron,deepspeed,fsdp,ddp,hf`), not only those its command runs.
void PlanExample(benchmark::State& state, const std::string& name, bool every_framework) {
  auto spec =
      fulcrum::plan::LoadPlanFile(std::string(FULCRUM_SOURCE_DIR) + "/examples/" + name + ".yaml");
  if (!spec.ok()) std::abort();
  if (every_framework) spec->constraints.frameworks = fulcrum::workload::kEveryFramework;
  const auto model = Preset(spec->model_preset.c_str());
  const auto assumptions = fulcrum::plan::LoadCostAssumptions(kCatalog, nullptr);
  int64_t configurations = 0;
  size_t candidates = 0;
  for (auto _ : state) {
    auto result = fulcrum::plan::RunPlan(Shipped(), model, *spec, assumptions,
                                         static_cast<int>(state.range(0)));
    if (!result.ok()) std::abort();
    configurations = result->configurations;
    candidates = result->candidates.size();
    benchmark::DoNotOptimize(result);
  }
  state.counters["configurations"] = static_cast<double>(configurations);
  state.counters["candidates"] = static_cast<double>(candidates);
  state.counters["threads"] = static_cast<double>(state.range(0));
}

void BM_Plan70bPretrain(benchmark::State& state) {
  PlanExample(state, "llama-70b-pretrain", false);
}
BENCHMARK(BM_Plan70bPretrain)->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMillisecond);

// Issue 25's goal: the 70B plan with every framework per layout, under 1 s on 2 cores.
void BM_Plan70bEveryFramework(benchmark::State& state) {
  PlanExample(state, "llama-70b-pretrain", true);
}
BENCHMARK(BM_Plan70bEveryFramework)->Arg(2)->UseRealTime()->Unit(benchmark::kMillisecond);

// The README's other examples, on 2 threads.
void BM_Plan7bFinetune(benchmark::State& state) { PlanExample(state, "llama-7b-finetune", false); }
BENCHMARK(BM_Plan7bFinetune)->Arg(2)->UseRealTime()->Unit(benchmark::kMillisecond);
void BM_Plan8bLora(benchmark::State& state) { PlanExample(state, "llama-8b-lora", false); }
BENCHMARK(BM_Plan8bLora)->Arg(2)->UseRealTime()->Unit(benchmark::kMillisecond);
void BM_PlanResnet50(benchmark::State& state) { PlanExample(state, "resnet50", false); }
BENCHMARK(BM_PlanResnet50)->Arg(2)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace
