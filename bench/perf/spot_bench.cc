// Speed of the spot simulator: simulated 48-hour job runs per second (items_per_second), for
// the exponential model (MTTI 6 h, Daly interval) and a trace, one thread and all cores.
// Goal (issue #5): >= 1 million runs/s on the 2-core machine for the exponential model.
#include <benchmark/benchmark.h>

#include "spot/job_estimate.h"
#include "spot/simulator.h"

namespace fulcrum::spot {
namespace {

JobParams PaperJob() {
  JobParams job;
  job.work_seconds = 48 * 3600.0;
  job.deadline_seconds = 52 * 3600.0;
  job.changeover_seconds = 12 * 60.0;
  job.checkpoint_cost_seconds = 150;
  job.checkpoint_interval_seconds = DalyIntervalSeconds(150, 6 * 3600.0);
  job.notice = {120, 5, 10};
  job.on_demand_usd_per_hour = 3.06;
  job.spot_usd_per_hour = 0.9731;
  job.minimum_billed_seconds = 60;
  return job;
}

void BM_ExponentialRunsOneThread(benchmark::State& state) {
  const JobParams job = PaperJob();
  const PreemptionModel model = *PreemptionModel::Exponential(6 * 3600.0);
  const auto policy = static_cast<Policy>(state.range(0));
  uint64_t trial = 0;
  double sink = 0;
  for (auto _ : state) {
    SplitMix64 rng(TrialSeed(1, trial++));
    AvailabilityCursor cursor(model, rng);
    sink += SimulateTrial(job, policy, cursor).cost_usd;
  }
  benchmark::DoNotOptimize(sink);
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
  state.SetLabel(std::string(PolicyName(policy)));
}
BENCHMARK(BM_ExponentialRunsOneThread)->Arg(1)->Arg(2);

// The whole Simulate() call as `fulcrum spot` makes it: trials split over all cores, results
// stored and summarised (percentiles).
void BM_ExponentialSimulateAllCores(benchmark::State& state) {
  const JobParams job = PaperJob();
  const PreemptionModel model = *PreemptionModel::Exponential(6 * 3600.0);
  SimulationOptions options;
  options.trials = 100000;
  options.threads = 0;
  for (auto _ : state) {
    auto s = Simulate(job, model, static_cast<Policy>(state.range(0)), options);
    benchmark::DoNotOptimize(s);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * options.trials);
}
BENCHMARK(BM_ExponentialSimulateAllCores)
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

void BM_TraceRunsOneThread(benchmark::State& state) {
  JobParams job = PaperJob();
  Trace trace{600, {}, "bench"};
  for (int i = 0; i < 432; ++i) trace.counts.push_back(i % 37 < 4 ? 0 : 1);
  const PreemptionModel model = PreemptionModel::FromTrace(trace);
  uint64_t trial = 0;
  double sink = 0;
  for (auto _ : state) {
    SplitMix64 rng(TrialSeed(1, trial++));
    AvailabilityCursor cursor(model, rng);
    sink += SimulateTrial(job, Policy::kUniformProgress, cursor).cost_usd;
  }
  benchmark::DoNotOptimize(sink);
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(BM_TraceRunsOneThread);

// What the planner pays per spot offer: EstimateSpotJob with 2000 trials on one thread.
void BM_EstimateSpotJob(benchmark::State& state) {
  SpotJobInput in;
  in.work_seconds = 48 * 3600.0;
  in.deadline_seconds = 52 * 3600.0;
  in.on_demand_usd_per_hour = 3.06;
  in.spot_usd_per_hour = 0.9731;
  in.mtti_seconds = 6 * 3600.0;
  in.changeover_seconds = 720;
  in.checkpoint_cost_seconds = 150;
  in.notice = {120, 5, 10};
  for (auto _ : state) {
    auto est = EstimateSpotJob(in);
    benchmark::DoNotOptimize(est);
  }
}
BENCHMARK(BM_EstimateSpotJob)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace fulcrum::spot
