// Cost of alert::Evaluator on the agent's sampling tick: 8 GPUs x 16 metrics per batch with the
// shipped default rules, in steady state (nothing changes) and while every GPU flaps between
// hot and cool (a transition per GPU per tick, the worst case). Figures in docs/BENCH.md.
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "alert/evaluator.h"
#include "alert/rules_yaml.h"

namespace {

using fulcrum::alert::Sample;

// The 16 per-GPU series the agent feeds (docs/API.md), with plausible busy-GPU values.
std::vector<Sample> MakeTick(int gpus, double t, double temperature) {
  const std::vector<std::pair<std::string, double>> metrics = {
      {"gpu_utilization_ratio", 0.97},
      {"gpu_memory_utilization_ratio", 0.6},
      {"gpu_memory_used_bytes", 60e9},
      {"gpu_memory_total_bytes", 80e9},
      {"gpu_power_watts", 350},
      {"gpu_power_limit_watts", 400},
      {"gpu_temperature_celsius", temperature},
      {"gpu_sm_clock_hertz", 1.98e9},
      {"gpu_memory_clock_hertz", 1.593e9},
      {"gpu_clock_event_reasons", 0},
      {"gpu_thermal_slowdown", 0},
      {"gpu_power_capped", 0},
      {"gpu_ecc_corrected_errors_total", 0},
      {"gpu_ecc_uncorrected_errors_total", 0},
      {"gpu_xid_last", 0},
      {"gpu_pcie_tx_bytes_total", 1e12},
  };
  std::vector<Sample> batch;
  for (int gpu = 0; gpu < gpus; ++gpu) {
    for (const auto& [name, value] : metrics) batch.push_back({name, gpu, value, t});
  }
  batch.push_back({"job_running", -1, 1, t});
  return batch;
}

void BM_EvaluatorSteadyTick(benchmark::State& state) {
  fulcrum::alert::Evaluator evaluator(*fulcrum::alert::DefaultRules());
  std::vector<Sample> batch = MakeTick(static_cast<int>(state.range(0)), 1.8e9, 60);
  double t = 1.8e9;
  for (auto _ : state) {
    t += 1;
    for (Sample& s : batch) s.unix_time = t;
    benchmark::DoNotOptimize(evaluator.Evaluate(batch));
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(batch.size()));
  state.counters["samples_per_tick"] = static_cast<double>(batch.size());
}
BENCHMARK(BM_EvaluatorSteadyTick)->Arg(8)->Arg(64);

void BM_EvaluatorFlappingTick(benchmark::State& state) {
  fulcrum::alert::Evaluator evaluator(*fulcrum::alert::DefaultRules());
  std::vector<Sample> hot = MakeTick(8, 1.8e9, 95);
  std::vector<Sample> cool = MakeTick(8, 1.8e9, 60);
  double t = 1.8e9;
  bool flip = false;
  size_t transitions = 0;
  for (auto _ : state) {
    t += 1;
    std::vector<Sample>& batch = flip ? hot : cool;
    flip = !flip;
    for (Sample& s : batch) s.unix_time = t;
    transitions += evaluator.Evaluate(batch).size();
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(hot.size()));
  state.counters["transitions_per_tick"] =
      static_cast<double>(transitions) / static_cast<double>(state.iterations());
}
BENCHMARK(BM_EvaluatorFlappingTick);

}  // namespace
