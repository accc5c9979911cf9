#include "plan/cost.h"

#include <algorithm>
#include <cmath>

namespace fulcrum::plan {
namespace {

// Smallest k with P(Poisson(lambda) <= k) >= q.
int PoissonQuantile(double lambda, double q) {
  if (lambda <= 0) return 0;
  double term = std::exp(-lambda), sum = term;
  int k = 0;
  while (sum < q && k < 100000) {
    ++k;
    term *= lambda / k;
    sum += term;
  }
  return k;
}

double ExtrasUsd(const ExtraCosts& extra, double seconds) {
  const double months = seconds / (730.0 * 3600.0);  // 730 h per month (8760 / 12)
  return extra.storage_gb * extra.storage_usd_per_gb_month * months +
         extra.egress_gb * extra.egress_usd_per_gb;
}

}  // namespace

std::optional<double> HourlyPriceUsd(const catalog::Offer& offer, const catalog::Provider* provider,
                                     PricingModel pricing) {
  switch (pricing) {
    case PricingModel::kOnDemand:
      return offer.on_demand_usd_per_hour;
    case PricingModel::kSpot:
      return offer.spot_usd_per_hour;
    case PricingModel::kReserved1y:
    case PricingModel::kReserved3y: {
      if (provider == nullptr || !offer.on_demand_usd_per_hour) return std::nullopt;
      const std::optional<double>& pct = pricing == PricingModel::kReserved1y
                                             ? provider->reserved_1y_discount_pct
                                             : provider->reserved_3y_discount_pct;
      if (!pct) return std::nullopt;
      return *offer.on_demand_usd_per_hour * (1.0 - *pct / 100.0);
    }
  }
  return std::nullopt;
}

double BilledSeconds(double seconds, const catalog::Provider* provider,
                     const CostAssumptions& assumptions) {
  double granularity = assumptions.unknown_granularity_seconds;
  double minimum = 0;
  if (provider != nullptr) {
    granularity = provider->billing_granularity_seconds.value_or(granularity);
    minimum = provider->minimum_billed_seconds.value_or(0);
  }
  granularity = std::max(granularity, 1e-9);
  const double billed = std::ceil(seconds / granularity - 1e-9) * granularity;
  return std::max(billed, minimum);
}

RunCost EstimateRunCost(const RunInput& in, const CostAssumptions& a) {
  RunCost out;
  // Mean time between interruptions of the whole run (any GPU failing stops it).
  double rate = a.interruptions_per_gpu_hour;
  if (in.provider != nullptr && in.provider->gpu_failure_rate_pct_per_year) {
    rate = *in.provider->gpu_failure_rate_pct_per_year / 100.0 / 8760.0;
  }
  const double mtbf_seconds = 3600.0 / std::max(rate * in.gpus, 1e-12);
  const double restart_seconds = a.startup_seconds;
  double per_failure_lost = 0;
  double work = in.work_seconds;
  if (in.checkpointing) {
    out.checkpoint_write_seconds = in.trained_parameters * a.checkpoint_bytes_per_trained_param /
                                   (a.checkpoint_write_bytes_per_second_per_node * in.nodes);
    // Young (1974): tau = sqrt(2 delta M), capped at the job length.
    out.checkpoint_interval_seconds =
        std::min(std::sqrt(2.0 * out.checkpoint_write_seconds * mtbf_seconds),
                 std::max(in.work_seconds, 1.0));
    work += in.work_seconds / out.checkpoint_interval_seconds * out.checkpoint_write_seconds;
    per_failure_lost = out.checkpoint_interval_seconds / 2.0 + restart_seconds;
  } else {
    per_failure_lost = in.work_seconds / 2.0 + restart_seconds;  // start over
  }
  const double base = work + a.startup_seconds;
  const double failures = base / mtbf_seconds;
  out.total_seconds = base + failures * per_failure_lost;
  out.p90_seconds = base + PoissonQuantile(failures, 0.9) * per_failure_lost;
  out.p90_seconds = std::max(out.p90_seconds, out.total_seconds);
  const double hourly_all = in.hourly_usd * in.nodes;
  out.expected_usd = hourly_all * BilledSeconds(out.total_seconds, in.provider, a) / 3600.0 +
                     ExtrasUsd(in.extra, out.total_seconds);
  out.p90_usd = hourly_all * BilledSeconds(out.p90_seconds, in.provider, a) / 3600.0 +
                ExtrasUsd(in.extra, out.p90_seconds);
  if (in.pricing == PricingModel::kSpot) return EstimateSpotRun(in, out);
  return out;
}

RunCost EstimateSpotRun(const RunInput& /*input*/, const RunCost& uninterrupted) {
  // Placeholder until src/spot offers a planner API: list price x time, not risk-adjusted.
  RunCost out = uninterrupted;
  out.risk_adjusted = false;
  return out;
}

}  // namespace fulcrum::plan
