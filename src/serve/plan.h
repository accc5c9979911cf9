// serve-plan: for each offer of the catalog that passes the filter and each tensor-parallel
// layout that fits, the replicas that serve the traffic within the latency targets, the hourly
// cost and the cost per million tokens; the Pareto front of cost per output token vs time per
// output token. On-demand prices. Pure computation over an immutable Catalog, thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "catalog/catalog.h"
#include "catalog/offer_query.h"
#include "serve/queueing.h"
#include "serve/serve.h"
#include "serve/spec.h"

namespace fulcrum::serve {

struct ServePlanRequest {
  workload::Model model;
  Precision precision = Precision::kBf16;
  std::optional<KvPrecision> kv_precision;    // nullopt = bf16, fp16 where the GPU has no bf16
  int64_t input_len = 512, output_len = 128;  // mean tokens per request
  Batching batching = Batching::kContinuous;
  EngineProfile engine;  // what it runs and on which GPUs; its fitted kernel efficiency
  // The step's token budget under continuous batching (--prefill-chunk); 0 = the engine's
  // default (ServeRequest::max_batched_tokens).
  int64_t prefill_chunk = 0;
  bool hf_fused_modules = false;  // ServeRequest::hf_fused_modules
  // Sequences per replica; nullopt = the most that fit (at most 256), halved until the latency
  // targets are met.
  std::optional<int64_t> concurrency;
  double requests_per_second = 0;  // traffic to serve; 0 = one instance per offer
  // Variability of the traffic (continuous batching's queue waits): inter-arrival times (Poisson
  // 1, constant 0) and output lengths (0 = fixed).
  double arrival_scv = 1, output_scv = 0;
  LatencyTargets targets;
  // Measured / predicted time quantiles over the calibration rows (fitted). Static batching
  // compares a target with the estimate x the ratio of its percentile (P90 for P95/P99);
  // continuous batching with the queueing model's percentile x the median ratio.
  ServeLatencyBand band = DefaultServeLatencyBand();
  std::vector<int64_t> tp;  // layouts to try; empty = every one the instance allows
  int threads = 0;          // offers are planned on the one parallel-for; <= 0: the hardware's
  // true: every search step evaluated in full, nothing reused (ReplicaQueue's straightforward
  // search, each replica count's cap chosen again): the reference the tests hold the default,
  // faster search to, answer for answer.
  bool straightforward_search = false;
  // Offers whose price or interconnect the catalog cannot confirm (plan::UnconfirmedOf: a
  // price-unverified caveat; several GPUs of unknown links) rank after the confirmed ones, as in
  // `plan` (docs/RANKING.md); false: by cost alone (--rank-unconfirmed mixed).
  bool unconfirmed_last = true;
};

struct ServeCandidate {
  const catalog::Offer* offer = nullptr;  // into the Catalog
  const catalog::Gpu* gpu = nullptr;
  int64_t tp = 1;
  int64_t concurrency = 1;  // sequences per replica
  int64_t replicas = 1;
  int64_t instances = 1;
  int64_t total_gpus = 0;  // instances x GPUs per instance: what is rented
  ServeEstimate estimate;  // one replica at `concurrency`
  // What the targets are compared with, every percentile filled (see ServePlanRequest::band).
  LatencyTargets latency;
  double ttft_p90_seconds = 0, tpot_p90_seconds = 0;  // = latency's
  double queue_wait_p90_seconds = 0;  // continuous batching: P90 wait for a free slot
  double requests_per_second_per_replica = 0;
  double usd_per_hour = 0;  // all instances, on demand
  // The whole hourly cost over the tokens served per hour (output, resp. input): two views of one
  // bill, not a split of it.
  double usd_per_million_output_tokens = 0, usd_per_million_input_tokens = 0;
  // Traffic / capacity of the replicas at their concurrency (continuous: the queue's load).
  double utilization = 0;
  bool pareto = false;      // no other candidate is cheaper per output token and faster per token
  uint8_t unconfirmed = 0;  // plan::Unconfirmed bits of the offer (plan::UnconfirmedOf)
  std::vector<std::string> warnings;
};

// Candidates sorted by $ per million output tokens, those whose offer the catalog cannot confirm
// after the others where request.unconfirmed_last (the Pareto front then over the confirmed
// ones, when any). An offer of several GPUs whose links the catalog does not state is planned
// over PCIe, as `plan` does: conservative, where a marketplace slice need not have NVLink.
// InvalidInput when no offer passes or none
// fits the model and targets (the message says which constraint emptied the set, and for
// targets no GPU meets even unloaded, which target and by how much).
Result<std::vector<ServeCandidate>> PlanServing(const catalog::Catalog& catalog,
                                                const catalog::ResolvedFilter& offers,
                                                const ServePlanRequest& request);

}  // namespace fulcrum::serve
