// Google Benchmark for serve-plan: the whole plan (every offer of the shipped catalog x every
// tensor-parallel layout, with continuous batching's queueing model and the replica search) for
// the two examples of examples/*-serve.yaml, wall time. Goal (issue 26): a full serve-plan over
// the catalog with the queueing model < 10 ms.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <string>

#include "catalog/catalog.h"
#include "catalog/offer_query.h"
#include "serve/plan.h"
#include "support/shipped_catalog.h"
#include "workload/model_io.h"

namespace {

const std::string& kCatalog = fulcrum::bench_support::ShippedCatalogDir();

const fulcrum::catalog::Catalog& Shipped() { return fulcrum::bench_support::ShippedCatalog(); }

// Every on-demand offer of the catalog (no GPU or provider filter).
fulcrum::catalog::ResolvedFilter AllOffers() {
  fulcrum::catalog::OfferFilter filter;
  filter.pricing = {fulcrum::catalog::Pricing::kOnDemand};
  auto offers = fulcrum::catalog::ResolveOfferFilter(Shipped(), filter);
  if (!offers.ok()) std::abort();
  return *offers;
}

void RunPlan(benchmark::State& state, const fulcrum::serve::ServePlanRequest& request) {
  const fulcrum::catalog::ResolvedFilter offers = AllOffers();
  size_t candidates = 0;
  for (auto _ : state) {
    auto plan = fulcrum::serve::PlanServing(Shipped(), offers, request);
    if (!plan.ok()) std::abort();
    candidates = plan->size();
    benchmark::DoNotOptimize(plan);
  }
  state.counters["offers"] = static_cast<double>(offers.offers.size());
  state.counters["candidates"] = static_cast<double>(candidates);
}

// A request as the examples write it; targets in seconds (0 = none).
fulcrum::serve::ServePlanRequest Request(const char* model, fulcrum::serve::Precision precision,
                                         fulcrum::serve::KvPrecision kv, int64_t input_len,
                                         int64_t output_len, double requests_per_second,
                                         double ttft_p90, double tpot_p90) {
  fulcrum::serve::ServePlanRequest r;
  auto preset = fulcrum::workload::LoadModelPreset(kCatalog, model);
  if (!preset.ok()) std::abort();
  r.model = *preset;
  r.precision = precision;
  r.kv_precision = kv;
  r.input_len = input_len;
  r.output_len = output_len;
  r.requests_per_second = requests_per_second;
  if (ttft_p90 > 0) r.targets.ttft_p90_seconds = ttft_p90;
  if (tpot_p90 > 0) r.targets.tpot_p90_seconds = tpot_p90;
  // FULCRUM_BENCH_THREADS=1: one thread, for a deterministic instruction count under callgrind
  // (docs/BENCH.md); unset = the hardware's threads.
  if (const char* threads = std::getenv("FULCRUM_BENCH_THREADS")) r.threads = std::atoi(threads);
  return r;
}

using fulcrum::serve::KvPrecision;
using fulcrum::serve::Precision;

// examples/llama-8b-chatbot-serve.yaml over the whole catalog (no GPU filter; its P99 TTFT target
// and output-length spread left out).
void BM_ServePlan8bChatbot(benchmark::State& state) {
  RunPlan(state, Request("llama-3-8b", Precision::kInt4WeightOnly, KvPrecision::kFp16, 512, 256, 5,
                         2, 0.08));
}
BENCHMARK(BM_ServePlan8bChatbot)->Unit(benchmark::kMillisecond)->UseRealTime();

// examples/llama-70b-serve.yaml over the whole catalog (fp8: the GPUs without it are skipped).
void BM_ServePlan70bService(benchmark::State& state) {
  RunPlan(state,
          Request("llama-3-70b", Precision::kFp8, KvPrecision::kFp8, 1024, 512, 20, 1, 0.04));
}
BENCHMARK(BM_ServePlan70bService)->Unit(benchmark::kMillisecond)->UseRealTime();

// The 8B model in bf16 without targets: every offer that has bf16, at its largest batch.
void BM_ServePlanAllOffersBf16(benchmark::State& state) {
  RunPlan(state, Request("llama-3-8b", Precision::kBf16, KvPrecision::kBf16, 512, 128, 0, 0, 0));
}
BENCHMARK(BM_ServePlanAllOffersBf16)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
