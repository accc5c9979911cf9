#include "plan/cost.h"

#include <algorithm>
#include <cmath>

#include "catalog/offer_query.h"
#include "spot/estimate.h"
#include "spot/interval.h"
#include "spot/spot_catalog.h"

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
  // One price rule for the planner and the offer filter (catalog/offer_query).
  catalog::Pricing same = catalog::Pricing::kOnDemand;
  switch (pricing) {
    case PricingModel::kOnDemand:
      same = catalog::Pricing::kOnDemand;
      break;
    case PricingModel::kSpot:
      same = catalog::Pricing::kSpot;
      break;
    case PricingModel::kReserved1y:
      same = catalog::Pricing::kReserved1y;
      break;
    case PricingModel::kReserved3y:
      same = catalog::Pricing::kReserved3y;
      break;
  }
  return catalog::OfferUsdPerHour(offer, provider, same);
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
    // Young (1974), capped at the job length.
    out.checkpoint_interval_seconds =
        std::min(spot::YoungIntervalSeconds(out.checkpoint_write_seconds, mtbf_seconds),
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
  if (in.pricing == PricingModel::kSpot) return EstimateSpotRun(in, out, a);
  return out;
}

RunCost EstimateSpotRun(const RunInput& in, const RunCost& uninterrupted,
                        const CostAssumptions& a) {
  RunCost out = uninterrupted;
  out.risk_adjusted = false;
  if (a.spot_mtti_seconds_per_instance <= 0 || !in.on_demand_usd_per_hour) return out;
  spot::SpotJobInput job;
  job.work_seconds = in.work_seconds;
  job.deadline_seconds = in.deadline_seconds;
  if (job.deadline_seconds) {
    job.deadline_seconds = std::max(0.0, *job.deadline_seconds - a.startup_seconds);
  }
  job.on_demand_usd_per_hour = *in.on_demand_usd_per_hour * in.nodes;
  job.spot_usd_per_hour = in.hourly_usd * in.nodes;
  job.mtti_seconds = a.spot_mtti_seconds_per_instance / std::max(1, in.nodes);
  job.changeover_seconds = a.startup_seconds;
  job.restart_seconds = uninterrupted.checkpoint_write_seconds;  // reading ~ writing it
  job.checkpoint_cost_seconds = std::max(uninterrupted.checkpoint_write_seconds, 1e-3);
  if (!in.checkpointing) job.checkpoint_interval_seconds = spot::kNever;
  if (in.provider != nullptr) {
    job.notice.notice_seconds = in.provider->spot_notice_seconds.value_or(0);
    job.billing_granularity_seconds =
        in.provider->billing_granularity_seconds.value_or(a.unknown_granularity_seconds);
    job.minimum_billed_seconds = in.provider->minimum_billed_seconds.value_or(0);
  } else {
    job.billing_granularity_seconds = a.unknown_granularity_seconds;
  }
  job.notice.poll_interval_seconds = a.spot_notice_poll_seconds;
  job.notice.margin_seconds = a.spot_notice_margin_seconds;
  job.trials = a.spot_trials;
  job.seed = a.spot_seed;
  job.threads = 1;
  Result<spot::SpotJobEstimate> est = spot::EstimateSpotJob(job);
  if (!est.ok()) return out;
  // The first start-up is billed at the spot price on every node, as on-demand rows do.
  const double startup_usd = a.startup_seconds / 3600.0 * in.hourly_usd * in.nodes;
  out.total_seconds = est->expected_hours * 3600.0 + a.startup_seconds;
  out.p90_seconds = std::max(est->p90_hours * 3600.0 + a.startup_seconds, out.total_seconds);
  out.expected_usd = est->expected_cost_usd + startup_usd + ExtrasUsd(in.extra, out.total_seconds);
  out.p90_usd = std::max(est->p90_cost_usd + startup_usd + ExtrasUsd(in.extra, out.p90_seconds),
                         out.expected_usd);
  out.checkpoint_interval_seconds = est->checkpoint_interval_seconds.value_or(0);
  out.spot_policy = est->policy;
  out.deadline_met_fraction = est->deadline_met_fraction;
  out.risk_adjusted = true;
  return out;
}

CostAssumptions LoadCostAssumptions(const std::string& catalog_dir, std::string* note) {
  CostAssumptions a;
  std::string missing;
  Result<std::vector<spot::StorageKind>> kinds = spot::LoadStorageKinds(catalog_dir);
  Result<spot::StorageKind> kind =
      kinds.ok() ? spot::FindStorageKind(*kinds, "") : Result<spot::StorageKind>(kinds.status());
  if (kind.ok()) {
    a.checkpoint_write_bytes_per_second_per_node = kind->write_bytes_per_second;
  } else {
    missing += "storage.csv";
  }
  Result<double> mtti = spot::DefaultMttiSeconds(catalog_dir);
  if (mtti.ok()) {
    a.spot_mtti_seconds_per_instance = *mtti;
  } else {
    missing += std::string(missing.empty() ? "" : ", ") + "spot_bands.csv";
  }
  if (note != nullptr && !missing.empty()) {
    *note = "catalog has no " + missing +
            ": checkpoint writes assumed at 1 GB/s per node and spot rows not risk-adjusted";
  }
  return a;
}

}  // namespace fulcrum::plan
