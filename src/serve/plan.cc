#include "serve/plan.h"

#include <algorithm>
#include <cmath>

#include "core/parallel.h"

namespace fulcrum::serve {
namespace {

// Most sequences per replica when --concurrency is not given: vLLM's max_num_seqs default (256,
// SchedulerConfig of the 0.x releases); the KV cache may allow more.
constexpr int64_t kDefaultMaxConcurrency = 256;

bool Exceeds(double estimate, double ratio, const std::optional<double>& target) {
  return target && estimate * ratio > *target;
}

// A target at P50 (P90) is missed when the estimate times the fitted P50 (P90) ratio of
// measured to predicted time exceeds it.
bool MissesTargets(const ServeEstimate& e, const ServePlanRequest& r) {
  const LatencyTargets& t = r.targets;
  const ServeLatencyBand& b = r.band;
  const double ttft = e.speed.prefill_seconds, tpot = e.speed.tpot_seconds;
  return Exceeds(ttft, b.ttft_p50_ratio, t.ttft_p50_seconds) ||
         Exceeds(ttft, b.ttft_p90_ratio, t.ttft_p90_seconds) ||
         Exceeds(tpot, b.tpot_p50_ratio, t.tpot_p50_seconds) ||
         Exceeds(tpot, b.tpot_p90_ratio, t.tpot_p90_seconds);
}

void MarkPareto(std::vector<ServeCandidate>& candidates) {
  for (ServeCandidate& c : candidates) {
    c.pareto = std::none_of(candidates.begin(), candidates.end(), [&](const ServeCandidate& o) {
      const double cost = o.usd_per_million_output_tokens, tpot = o.estimate.speed.tpot_seconds;
      const double c_cost = c.usd_per_million_output_tokens, c_tpot = c.estimate.speed.tpot_seconds;
      return cost <= c_cost && tpot <= c_tpot && (cost < c_cost || tpot < c_tpot);
    });
  }
}

// What planning one offer gave: its candidates (one per tp that fits and meets the targets) and
// why the others were left out.
struct OfferOutcome {
  std::vector<ServeCandidate> candidates;
  int unsupported = 0, unfit = 0, too_slow = 0, unpriced = 0;
};

ServeRequest RequestOn(const catalog::Offer& offer, const catalog::Gpu& gpu,
                       const ServePlanRequest& r) {
  ServeRequest s;
  s.model = r.model;
  s.gpu = gpu;
  s.interconnect =
      offer.interconnect == catalog::Interconnect::kUnknown
          ? (gpu.nvlink_gbps ? catalog::Interconnect::kNvlink : catalog::Interconnect::kPcie)
          : offer.interconnect;
  s.precision = r.precision;
  s.kv_precision =
      r.kv_precision.value_or(gpu.bf16_tflops ? KvPrecision::kBf16 : KvPrecision::kFp16);
  s.input_len = r.input_len;
  s.output_len = r.output_len;
  return s;
}

// The candidate of `offer` at s.tp and s.batch sequences per replica, priced at `price` per
// instance-hour: replicas for the traffic, utilization, cost per token.
ServeCandidate CandidateOf(const catalog::Offer& offer, const catalog::Gpu& gpu,
                           const ServeRequest& s, const ServeEstimate& e, double price,
                           const ServePlanRequest& r) {
  ServeCandidate c;
  c.offer = &offer;
  c.gpu = &gpu;
  c.tp = s.tp;
  c.concurrency = s.batch;
  c.estimate = e;
  c.ttft_p90_seconds = e.speed.prefill_seconds * r.band.ttft_p90_ratio;
  c.tpot_p90_seconds = e.speed.tpot_seconds * r.band.tpot_p90_ratio;
  const double request_seconds =
      e.speed.prefill_seconds + static_cast<double>(r.output_len) * e.speed.tpot_seconds;
  c.requests_per_second_per_replica = static_cast<double>(s.batch) / request_seconds;
  const int64_t per_instance = offer.gpu_count / s.tp;
  if (r.requests_per_second > 0) {
    c.replicas = static_cast<int64_t>(
        std::ceil(r.requests_per_second / c.requests_per_second_per_replica - 1e-9));
    c.instances = (c.replicas + per_instance - 1) / per_instance;
  } else {
    c.replicas = per_instance;
    c.instances = 1;
  }
  const double capacity = static_cast<double>(c.replicas) * c.requests_per_second_per_replica;
  const double served = r.requests_per_second > 0 ? r.requests_per_second : capacity;
  c.utilization = served / capacity;
  c.usd_per_hour = static_cast<double>(c.instances) * price;
  c.usd_per_million_output_tokens =
      c.usd_per_hour / (served * static_cast<double>(r.output_len) * 3600) * 1e6;
  c.usd_per_million_input_tokens =
      c.usd_per_hour / (served * static_cast<double>(r.input_len) * 3600) * 1e6;
  if (s.tp > 1 && s.interconnect == catalog::Interconnect::kPcie) {
    c.warnings.push_back("tp-over-pcie: tensor-parallel all-reduces over PCIe");
  }
  return c;
}

// Tries `s` (tp set) on `offer`: the most sequences that fit (or --concurrency), halved until the
// targets are met. Counts a miss in `outcome` or adds the candidate.
void TryTensorParallel(const catalog::Offer& offer, const catalog::Gpu& gpu, ServeRequest s,
                       double price, const ServePlanRequest& r, OfferOutcome& outcome) {
  s.batch = 1;
  Result<ServeEstimate> probe = EstimateServing(s);
  if (!probe.ok() || probe->memory.max_concurrency < 1) {
    ++outcome.unfit;
    return;
  }
  s.batch = r.concurrency.value_or(std::min(probe->memory.max_concurrency, kDefaultMaxConcurrency));
  Result<ServeEstimate> e = EstimateServing(s);
  if (!e.ok() || !e->memory.fits) {
    ++outcome.unfit;
    return;
  }
  // Without --concurrency, halve the sequences per replica until the targets are met (fewer
  // sequences: shorter batch prefill and decode step).
  while (MissesTargets(*e, r) && !r.concurrency && s.batch > 1) {
    s.batch /= 2;
    e = EstimateServing(s);
    if (!e.ok()) break;
  }
  if (!e.ok() || MissesTargets(*e, r)) {
    ++outcome.too_slow;
    return;
  }
  outcome.candidates.push_back(CandidateOf(offer, gpu, s, *e, price, r));
}

OfferOutcome PlanOffer(const catalog::Catalog& catalog, const catalog::Offer& offer,
                       const ServePlanRequest& r) {
  OfferOutcome outcome;
  const catalog::Gpu* gpu = catalog.FindGpu(offer.gpu);
  if (gpu == nullptr) return outcome;
  const std::optional<double> price = catalog::OfferUsdPerHour(
      offer, catalog.FindProvider(offer.provider), catalog::Pricing::kOnDemand);
  if (!price) {
    ++outcome.unpriced;
    return outcome;
  }
  ServeRequest s = RequestOn(offer, *gpu, r);
  if (!CheckSupport(*gpu, s.precision, s.kv_precision).ok()) {
    ++outcome.unsupported;
    return outcome;
  }
  for (int64_t tp = 1; tp <= offer.gpu_count; tp *= 2) {
    if (offer.gpu_count % tp != 0 || r.model.heads % tp != 0) continue;
    if (!r.tp.empty() && std::find(r.tp.begin(), r.tp.end(), tp) == r.tp.end()) continue;
    s.tp = tp;
    TryTensorParallel(offer, *gpu, s, *price, r, outcome);
  }
  return outcome;
}

}  // namespace

Result<std::vector<ServeCandidate>> PlanServing(const catalog::Catalog& catalog,
                                                const catalog::ResolvedFilter& offers,
                                                const ServePlanRequest& r) {
  std::vector<OfferOutcome> outcomes(offers.offers.size());
  ParallelFor(offers.offers.size(), r.threads, 4, [&](size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) outcomes[i] = PlanOffer(catalog, *offers.offers[i], r);
  });
  std::vector<ServeCandidate> out;
  int unsupported = 0, unfit = 0, too_slow = 0, unpriced = 0;
  for (OfferOutcome& o : outcomes) {  // in the offers' order: the result does not depend on threads
    for (ServeCandidate& c : o.candidates) out.push_back(std::move(c));
    unsupported += o.unsupported;
    unfit += o.unfit;
    too_slow += o.too_slow;
    unpriced += o.unpriced;
  }
  if (out.empty()) {
    return Status::InvalidInput(
        "no offer serves the model: of " + std::to_string(offers.offers.size()) + " offers, " +
        std::to_string(unsupported) + " lack tensor cores for --precision " +
        std::string(PrecisionName(r.precision)) + ", " + std::to_string(unpriced) +
        " have no on-demand price; " + std::to_string(unfit) + " layouts do not fit in memory, " +
        std::to_string(too_slow) + " miss the latency targets");
  }
  MarkPareto(out);
  std::stable_sort(out.begin(), out.end(), [](const ServeCandidate& a, const ServeCandidate& b) {
    return a.usd_per_million_output_tokens < b.usd_per_million_output_tokens;
  });
  return out;
}

}  // namespace fulcrum::serve
