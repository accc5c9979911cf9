// Store ingest: how many GPU samples per second agent.db takes, in the agent's batch shape (one
// transaction per tick of `gpus` samples, 18 metric columns each), and how long a 1-hour series
// query takes. Run: build/agent_store_bench (figures in docs/BENCH.md, "Agent").
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <filesystem>

#include "store/agent_db.h"
#include "telemetry/sim_source.h"

namespace {

namespace fs = std::filesystem;

std::string FreshDir(const std::string& name) {
  fs::path dir = fs::temp_directory_path() / (name + "-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir.string();
}

// Arg 0: GPUs per tick; arg 1: ticks per transaction (1 = the agent at a 1 s interval).
void BM_StoreIngest(benchmark::State& state) {
  int gpus = static_cast<int>(state.range(0));
  int ticks_per_batch = static_cast<int>(state.range(1));
  std::string dir = FreshDir("fulcrum-ingest");
  auto db = fulcrum::store::AgentDb::OpenInDataDir(dir);
  if (!db.ok()) {
    state.SkipWithError(db.status().message().c_str());
    return;
  }
  fulcrum::ManualClock clock;
  fulcrum::telemetry::SimSource sim(gpus, {}, clock);
  for (auto _ : state) {
    fulcrum::store::WriteBatch batch;
    for (int t = 0; t < ticks_per_batch; ++t) {
      clock.Advance(1);
      batch.snapshots.push_back(*sim.Sample());
    }
    fulcrum::Status st = db->Write(batch);
    if (!st.ok()) state.SkipWithError(st.message().c_str());
  }
  state.SetItemsProcessed(state.iterations() * gpus * ticks_per_batch);
  state.counters["samples_per_second"] =
      benchmark::Counter(static_cast<double>(state.iterations() * gpus * ticks_per_batch),
                         benchmark::Counter::kIsRate);
  fs::remove_all(dir);
}
BENCHMARK(BM_StoreIngest)
    ->Args({8, 1})
    ->Args({8, 10})
    ->Args({8, 60})
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

// /v1/series for one GPU over the last hour of 1 s samples (8 GPUs stored).
void BM_SeriesQueryOneHour(benchmark::State& state) {
  std::string dir = FreshDir("fulcrum-query");
  auto db = fulcrum::store::AgentDb::OpenInDataDir(dir);
  fulcrum::ManualClock clock;
  fulcrum::telemetry::SimSource sim(8, {}, clock);
  fulcrum::store::WriteBatch batch;
  for (int t = 0; t < 3600; ++t) {
    clock.Advance(1);
    batch.snapshots.push_back(*sim.Sample());
  }
  (void)db->Write(batch);
  double now = clock.UnixSeconds();
  for (auto _ : state) {
    auto series = db->QuerySeries("gpu_temperature_celsius", 0, now - 3600, now, std::nullopt);
    benchmark::DoNotOptimize(series);
  }
  fs::remove_all(dir);
}
BENCHMARK(BM_SeriesQueryOneHour)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace
