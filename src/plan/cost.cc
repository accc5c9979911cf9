#include "plan/cost.h"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "catalog/offer_query.h"
#include "core/parse.h"
#include "core/row_reader.h"
#include "spot/interval.h"
#include "spot/job_estimate.h"
#include "spot/spot_catalog.h"

namespace fulcrum::plan {
namespace {

// Smallest k with P(Poisson(lambda) <= k) >= q.
// Large means use the normal approximation (exp(-lambda) underflows; the loop would grow with
// the work): lambda + z_q sqrt(lambda), z_0.9 = 1.2816.
int PoissonQuantile(double lambda, double q) {
  if (lambda <= 0) return 0;
  if (lambda > 500) {
    const double z = q >= 0.9 ? 1.2816 : 0.0;
    return static_cast<int>(std::min(1e9, std::ceil(lambda + z * std::sqrt(lambda))));
  }
  double term = std::exp(-lambda), sum = term;
  int k = 0;
  while (sum < q && k < 100000) {
    ++k;
    term *= lambda / k;
    sum += term;
  }
  return k;
}

constexpr double kMonthSeconds = 730.0 * 3600.0;  // 730 h per month (8760 / 12)

double StorageUsd(const ExtraCosts& extra, double seconds) {
  const double months = seconds / kMonthSeconds;
  return (extra.storage_gb * extra.storage_usd_per_gb_month + extra.priced_storage_usd_per_month) *
             months +
         extra.retained_storage_usd;
}

double EgressUsd(const ExtraCosts& extra) {
  return extra.egress_gb * extra.egress_usd_per_gb + extra.priced_egress_usd;
}

double ExtrasUsd(const ExtraCosts& extra, double seconds) {
  return StorageUsd(extra, seconds) + EgressUsd(extra);
}

// Instance cost of running all nodes for `seconds`: billed time, or for a reserved row not
// owned, the whole term (every term the run touches) as the commitment it is.
double InstanceUsd(const RunInput& in, double seconds, const CostAssumptions& a) {
  const double hourly_all = in.hourly_usd * in.nodes;
  const double term = ReservedTermSeconds(in.pricing);
  if (term > 0 && !in.reserved_owned) {
    return hourly_all * std::max(1.0, std::ceil(seconds / term - 1e-9)) * term / 3600.0;
  }
  return hourly_all * BilledSeconds(seconds, in.provider, a) / 3600.0;
}

// The one P90: the interruption P90 with the time past the start-up scaled by the estimator's
// P90 step-time ratio; the instance part of the P90 cost follows (reserved terms are fixed).
void ApplyEstimatorBand(const RunInput& in, const CostAssumptions& a, RunCost& out) {
  const double ratio = std::max(1.0, in.step_p90_ratio);
  if (ratio == 1.0) return;
  const double before = out.p90_seconds;
  out.p90_seconds = a.startup_seconds + std::max(0.0, before - a.startup_seconds) * ratio;
  if (!IsSpot(in.pricing)) {
    out.p90_usd = InstanceUsd(in, out.p90_seconds, a) + ExtrasUsd(in.extra, out.p90_seconds);
    return;
  }
  const double instance_usd = out.p90_usd - ExtrasUsd(in.extra, before);
  out.p90_usd = instance_usd * (before > 0 ? out.p90_seconds / before : 1) +
                ExtrasUsd(in.extra, out.p90_seconds);
}

// Longest spot segment simulated, in expected preemptions (see EstimateSpotRun).
constexpr double kMaxSimulatedPreemptions = 50;

}  // namespace

StorageNeeds PlannedStorageNeeds(const PlanSpec& spec, double trained_parameters,
                                 const CostAssumptions& a, bool* checkpoint_assumed) {
  StorageNeeds n = spec.storage;
  *checkpoint_assumed = false;
  if (spec.checkpointing && n.checkpoint_gb <= 0 && spec.extra.storage_gb <= 0) {
    n.checkpoint_gb = trained_parameters * a.checkpoint_bytes_per_trained_param / 1e9;
    *checkpoint_assumed = n.checkpoint_gb > 0;
  }
  return n;
}

ExtraCosts ExtrasFor(const ExtraCosts& base, const StorageNeeds& n, const std::string& provider,
                     const CostAssumptions& a, std::vector<std::string>* unpriced) {
  ExtraCosts e = base;
  if (n.disk_gb <= 0 && n.checkpoint_gb <= 0 && n.egress_gb <= 0) return e;
  const spot::StoragePrice* price = nullptr;
  for (const spot::StoragePrice& p : a.storage_prices) {
    if (EqualsIgnoreCase(p.provider, provider)) price = &p;
  }
  auto rate = [&](const std::optional<double> spot::StoragePrice::*field, double amount,
                  const char* part) {
    if (amount <= 0) return 0.0;
    if (price == nullptr || !(price->*field)) {
      unpriced->push_back(part);
      return 0.0;
    }
    return *(price->*field);
  };
  const double disk = rate(&spot::StoragePrice::disk_usd_per_gb_month, n.disk_gb, "disk");
  const double checkpoint =
      rate(&spot::StoragePrice::checkpoint_usd_per_gb_month, n.checkpoint_gb, "checkpoint storage");
  e.priced_storage_usd_per_month += n.disk_gb * disk + n.checkpoint_gb * checkpoint;
  e.retained_storage_usd += n.checkpoint_gb * checkpoint * n.keep_days * 86400.0 / kMonthSeconds;
  e.priced_egress_usd +=
      n.egress_gb * rate(&spot::StoragePrice::egress_usd_per_gb, n.egress_gb, "egress");
  return e;
}

const spot::StorageKind* CheckpointStorageFor(const catalog::Offer& offer,
                                              const CostAssumptions& a) {
  return spot::StorageKindForInstance(a.storage_kinds, offer.provider, offer.instance_type);
}

std::optional<double> HourlyPriceUsd(const catalog::Offer& offer, const catalog::Provider* provider,
                                     PricingModel pricing) {
  // One price rule for the planner and the offer filter (catalog/offer_query).
  catalog::Pricing same = catalog::Pricing::kOnDemand;
  switch (pricing) {
    case PricingModel::kOnDemand:
      same = catalog::Pricing::kOnDemand;
      break;
    case PricingModel::kSpot:
    case PricingModel::kSpotWithFallback:
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

bool BillingTermsUnknown(const catalog::Provider* provider) {
  return provider == nullptr || !provider->billing_granularity_seconds;
}

double ReservedTermSeconds(PricingModel pricing) {
  switch (pricing) {
    case PricingModel::kReserved1y:
      return 8760.0 * 3600.0;
    case PricingModel::kReserved3y:
      return 3 * 8760.0 * 3600.0;
    case PricingModel::kOnDemand:
    case PricingModel::kSpot:
    case PricingModel::kSpotWithFallback:
      return 0;
  }
  return 0;
}

double BilledSeconds(double seconds, const catalog::Provider* provider,
                     const CostAssumptions& assumptions) {
  double granularity = assumptions.unknown_granularity_seconds;
  double minimum = assumptions.unknown_minimum_billed_seconds;
  if (!BillingTermsUnknown(provider)) {
    granularity = *provider->billing_granularity_seconds;
    minimum = provider->minimum_billed_seconds.value_or(0);
  }
  granularity = std::max(granularity, 1e-9);
  const double billed = std::ceil(seconds / granularity - 1e-9) * granularity;
  return std::max(billed, minimum);
}

double PlannedCheckpointIntervalSeconds(double write_seconds, double mtbf_seconds,
                                        double work_seconds, const CostAssumptions& a,
                                        std::optional<double> every) {
  if (every && *every > 0) return *every;
  double interval = std::min(spot::YoungIntervalSeconds(write_seconds, mtbf_seconds),
                             a.max_checkpoint_interval_seconds);
  if (a.max_checkpoint_overhead > 0 && write_seconds > a.max_checkpoint_overhead * interval) {
    interval = write_seconds / a.max_checkpoint_overhead;
  }
  return std::min(interval, std::max(work_seconds, 1.0));
}

namespace {

// The published runs' losses beyond hardware interruptions for a run of `gpus` GPUs doing
// `work_seconds` of steady-state work: the fitted overhead, in proportion to the GPUs below the
// smallest published run.
double OtherLossSeconds(double work_seconds, int gpus, const CostAssumptions& a) {
  if (a.goodput_extra_overhead <= 0 || a.goodput_reference_gpus <= 0) return 0;
  return a.goodput_extra_overhead * std::min(1.0, gpus / a.goodput_reference_gpus) * work_seconds;
}

}  // namespace

RunCost EstimateRunCost(const RunInput& in, const CostAssumptions& a) {
  RunCost out;
  // Mean time between interruptions of the whole run (any GPU failing stops it).
  double rate = a.interruptions_per_gpu_hour;
  if (in.provider != nullptr && in.provider->gpu_failure_rate_pct_per_year) {
    rate = *in.provider->gpu_failure_rate_pct_per_year / 100.0 / 8760.0;
  }
  const double per_hour = rate * in.gpus + a.interruptions_per_node_hour * in.nodes;
  const double mtbf_seconds = 3600.0 / std::max(per_hour, 1e-12);
  // A restart: a new start-up (provisioning, image, rendezvous) and, with checkpoints, loading
  // the last one (reading ~ writing it).
  double restart_seconds = a.startup_seconds;
  double lost_per_failure = 0;
  double work = in.work_seconds;
  if (in.checkpointing) {
    const double per_node = in.checkpoint_write_bytes_per_second_per_node.value_or(
        a.checkpoint_write_bytes_per_second_per_node);
    out.checkpoint_write_seconds =
        in.trained_parameters * a.checkpoint_bytes_per_trained_param / (per_node * in.nodes);
    out.checkpoint_interval_seconds =
        PlannedCheckpointIntervalSeconds(out.checkpoint_write_seconds, mtbf_seconds,
                                         in.work_seconds, a, in.checkpoint_every_seconds);
    work += in.work_seconds / out.checkpoint_interval_seconds * out.checkpoint_write_seconds;
    lost_per_failure = out.checkpoint_interval_seconds / 2.0;
    restart_seconds += out.checkpoint_write_seconds;
  } else {
    lost_per_failure = in.work_seconds / 2.0;  // start over
  }
  const double per_failure = lost_per_failure + restart_seconds;
  out.other_loss_seconds = OtherLossSeconds(in.work_seconds, in.gpus, a);
  out.goodput_published = a.goodput_extra_overhead > 0;
  const double base = work + a.startup_seconds;
  const double failures = base / mtbf_seconds;
  out.expected_interruptions = failures;
  out.failure_seconds = failures * per_failure;
  out.total_seconds = base + out.failure_seconds + out.other_loss_seconds;
  out.p90_seconds = base + PoissonQuantile(failures, 0.9) * per_failure + out.other_loss_seconds;
  out.p90_seconds = std::max(out.p90_seconds, out.total_seconds);
  const double hourly_all = in.hourly_usd * in.nodes;
  const double instance_usd = InstanceUsd(in, out.total_seconds, a);
  out.reserved_commitment = ReservedTermSeconds(in.pricing) > 0 && !in.reserved_owned;
  out.expected_usd = instance_usd + ExtrasUsd(in.extra, out.total_seconds);
  out.p90_usd = InstanceUsd(in, out.p90_seconds, a) + ExtrasUsd(in.extra, out.p90_seconds);
  CostBreakdown& b = out.breakdown;
  b.storage_usd = StorageUsd(in.extra, out.total_seconds);
  b.egress_usd = EgressUsd(in.extra);
  b.checkpoint_usd = hourly_all * (work - in.work_seconds) / 3600.0;
  b.failures_usd = hourly_all * failures * lost_per_failure / 3600.0;
  b.restarts_usd = hourly_all * (failures * restart_seconds + out.other_loss_seconds) / 3600.0;
  const double used_usd = hourly_all * BilledSeconds(out.total_seconds, in.provider, a) / 3600.0;
  b.commitment_usd = out.reserved_commitment ? std::max(0.0, instance_usd - used_usd) : 0;
  b.compute_usd =
      instance_usd - b.commitment_usd - b.checkpoint_usd - b.failures_usd - b.restarts_usd;
  if (IsSpot(in.pricing)) out = EstimateSpotRun(in, out, a);
  ApplyEstimatorBand(in, a, out);
  out.goodput_fraction = out.total_seconds > 0 ? in.work_seconds / out.total_seconds : 1;
  return out;
}

RunCost EstimateSpotRun(const RunInput& in, const RunCost& uninterrupted,
                        const CostAssumptions& a) {
  RunCost out = uninterrupted;
  out.risk_adjusted = false;
  if (a.spot_mtti_seconds_per_instance <= 0) return out;
  spot::SpotJobInput job;
  // Spot pays the same hardware failures as its on-demand twin (its own checkpoints are the
  // simulator's): the work handed to the simulator includes the expected failure losses.
  job.work_seconds =
      in.work_seconds + uninterrupted.failure_seconds + uninterrupted.other_loss_seconds;
  job.deadline_seconds = in.deadline_seconds;
  if (job.deadline_seconds) {
    job.deadline_seconds = std::max(0.0, *job.deadline_seconds - a.startup_seconds);
  }
  // Spot only waits through every preemption; spot with fallback switches to on-demand when the
  // deadline needs it (greedy when the offer has no on-demand price to fall back to).
  job.on_demand_usd_per_hour = in.on_demand_usd_per_hour.value_or(in.hourly_usd) * in.nodes;
  if (in.pricing == PricingModel::kSpot) {
    job.policy = spot::Policy::kSpotOnly;
  } else if (!in.on_demand_usd_per_hour) {
    job.policy = spot::Policy::kGreedy;
  }
  job.spot_usd_per_hour = in.hourly_usd * in.nodes;
  // An instance of this size, all nodes at once: the traces' size and gang factors.
  const spot::RiskScale size =
      spot::InstanceSizeRiskFor(a.spot_instance_size, in.gpus / std::max(1, in.nodes));
  const spot::RiskScale gang = spot::GangRiskFor(a.spot_gang, in.nodes);
  job.mtti_seconds = a.spot_mtti_seconds_per_instance * size.mtti_factor * gang.mtti_factor;
  job.changeover_seconds = a.startup_seconds;
  job.outage_mean_seconds = a.spot_outage_mean_seconds * size.outage_factor * gang.outage_factor;
  job.restart_seconds = uninterrupted.checkpoint_write_seconds;  // reading ~ writing it
  job.checkpoint_cost_seconds = std::max(uninterrupted.checkpoint_write_seconds, 1e-3);
  if (in.provider != nullptr) {
    job.notice.notice_seconds = in.provider->spot_notice_seconds.value_or(0);
  }
  if (BillingTermsUnknown(in.provider)) {
    job.billing_granularity_seconds = a.unknown_granularity_seconds;
    job.minimum_billed_seconds = a.unknown_minimum_billed_seconds;
  } else {
    job.billing_granularity_seconds = *in.provider->billing_granularity_seconds;
    job.minimum_billed_seconds = in.provider->minimum_billed_seconds.value_or(0);
  }
  job.notice.poll_interval_seconds = a.spot_notice_poll_seconds;
  job.notice.margin_seconds = a.spot_notice_margin_seconds;
  // The planned cadence (or --checkpoint-every) bounds the interval the simulator would pick
  // for the preemptions alone.
  if (!in.checkpointing) {
    job.checkpoint_interval_seconds = spot::kNever;
  } else if (in.checkpoint_every_seconds) {
    job.checkpoint_interval_seconds = uninterrupted.checkpoint_interval_seconds;
  } else {
    job.checkpoint_interval_seconds =
        std::min(spot::AutoCheckpointIntervalSeconds(job.checkpoint_cost_seconds, job.mtti_seconds,
                                                     job.notice),
                 uninterrupted.checkpoint_interval_seconds);
  }
  job.trials = a.spot_trials;
  job.seed = a.spot_seed;
  job.threads = 1;
  // The simulation's cost grows with the preemptions. A job needing more than
  // kMaxSimulatedPreemptions of them is simulated as a segment of that many and scaled: the
  // preemptions form a renewal process, so time and cost per unit of work converge; scaling the
  // segment's P90 over-states the P90 of the whole (conservative). Bounds the planner's time by
  // the search space, not by the work. With a deadline-driven fallback the segment is that many
  // MTTIs of work (the safety net ends the preemptions). Without one (spot-only, or no deadline)
  // every window of spot capacity is lived through; a window (exponential, mean MTTI) yields
  // E[max(0, X - r)] = MTTI exp(-r / MTTI) of progress after a relaunch of r (memorylessness of
  // the exponential), so a gang whose relaunch is long next to its MTTI needs many windows.
  const bool fallback = job.policy != spot::Policy::kSpotOnly && job.deadline_seconds;
  const double relaunch = job.changeover_seconds + job.restart_seconds;
  const double progress_per_window =
      fallback ? job.mtti_seconds
               : job.mtti_seconds * std::exp(-relaunch / std::max(job.mtti_seconds, 1.0));
  double scale = 1;
  if (job.work_seconds > kMaxSimulatedPreemptions * progress_per_window) {
    scale = job.work_seconds / (kMaxSimulatedPreemptions * progress_per_window);
    job.work_seconds /= scale;
    if (job.deadline_seconds) *job.deadline_seconds /= scale;
  }
  Result<spot::SpotJobEstimate> est = spot::EstimateSpotJob(job);
  if (!est.ok()) return out;
  est->expected_hours *= scale;
  est->p90_hours *= scale;
  est->expected_cost_usd *= scale;
  est->p90_cost_usd *= scale;
  est->preemptions_mean *= scale;
  // The first start-up is billed at the spot price on every node, as on-demand rows do.
  const double startup_usd = a.startup_seconds / 3600.0 * in.hourly_usd * in.nodes;
  // Never faster than the on-demand twin: the same work, failures and start-up, plus preemptions.
  out.total_seconds =
      std::max(est->expected_hours * 3600.0 + a.startup_seconds, uninterrupted.total_seconds);
  out.p90_seconds = std::max(
      {est->p90_hours * 3600.0 + a.startup_seconds, out.total_seconds, uninterrupted.p90_seconds});
  out.expected_usd = est->expected_cost_usd + startup_usd + ExtrasUsd(in.extra, out.total_seconds);
  out.p90_usd = std::max(est->p90_cost_usd + startup_usd + ExtrasUsd(in.extra, out.p90_seconds),
                         out.expected_usd);
  out.expected_interruptions = uninterrupted.expected_interruptions + est->preemptions_mean;
  out.other_loss_seconds = uninterrupted.other_loss_seconds;
  out.goodput_published = uninterrupted.goodput_published;
  CostBreakdown& b = out.breakdown;
  b.storage_usd = StorageUsd(in.extra, out.total_seconds);
  b.egress_usd = EgressUsd(in.extra);
  const double instance_usd = out.expected_usd - b.storage_usd - b.egress_usd;
  // `uninterrupted` is already at the spot price: what it does not explain is preemption loss.
  b.checkpoint_usd = std::min(instance_usd, uninterrupted.breakdown.checkpoint_usd);
  b.compute_usd = std::min(instance_usd - b.checkpoint_usd, uninterrupted.breakdown.compute_usd);
  b.restarts_usd = std::min(instance_usd - b.checkpoint_usd - b.compute_usd,
                            uninterrupted.breakdown.restarts_usd);
  b.failures_usd = std::max(0.0, instance_usd - b.checkpoint_usd - b.compute_usd - b.restarts_usd);
  b.commitment_usd = 0;
  out.checkpoint_interval_seconds = est->checkpoint_interval_seconds.value_or(0);
  out.spot_policy = est->policy;
  out.deadline_met_fraction = est->deadline_met_fraction;
  out.risk_adjusted = true;
  return out;
}

namespace {

const TableSchema kGoodputSchema = {
    {"run", "gpus", "trained_parameters", "steady_days", "end_to_end_days", "source"}, {"note"}};
// Plausibility limits (not outside facts: they only catch typos).
constexpr double kMaxRunGpus = 1e6;
constexpr double kMaxRunDays = 3650;
constexpr double kMaxTrainedParameters = 1e14;
// GPUs per node assumed for a published run in the fit (BLOOM, MPT-7B and Llama 3 all ran
// 8-GPU servers: arXiv 2211.05100 sec. 3.4, the MPT-7B post, arXiv 2407.21783 sec. 3.3.1).
constexpr int kPublishedGpusPerNode = 8;

// The hardware model's run for a published one: its GPUs in 8-GPU nodes, its steady days.
RunInput PublishedRunInput(const GoodputRun& run) {
  RunInput in;
  in.work_seconds = run.steady_days * 86400.0;
  in.gpus = run.gpus;
  in.nodes = std::max(1, run.gpus / kPublishedGpusPerNode);
  in.trained_parameters = run.trained_parameters;
  return in;
}

}  // namespace

Result<std::vector<GoodputRun>> LoadGoodputRuns(const std::string& catalog_dir) {
  FULCRUM_ASSIGN_OR_RETURN(CsvTable table,
                           LoadTableFile(catalog_dir + "/goodput.csv", kGoodputSchema));
  std::vector<GoodputRun> runs;
  for (size_t i = 0; i < table.size(); ++i) {
    RowReader row = table.Row(i);
    GoodputRun r;
    FULCRUM_ASSIGN_OR_RETURN(r.run, row.RequiredText("run"));
    FULCRUM_ASSIGN_OR_RETURN(double gpus, row.Number("gpus", 1, kMaxRunGpus));
    r.gpus = static_cast<int>(gpus);
    FULCRUM_ASSIGN_OR_RETURN(r.trained_parameters,
                             row.Number("trained_parameters", 1, kMaxTrainedParameters));
    FULCRUM_ASSIGN_OR_RETURN(r.steady_days, row.Number("steady_days", 1e-3, kMaxRunDays));
    FULCRUM_ASSIGN_OR_RETURN(r.end_to_end_days,
                             row.Number("end_to_end_days", r.steady_days, kMaxRunDays));
    FULCRUM_ASSIGN_OR_RETURN(r.source, row.RequiredText("source"));
    runs.push_back(std::move(r));
  }
  return runs;
}

void FitGoodput(const std::vector<GoodputRun>& runs, CostAssumptions& a) {
  CostAssumptions hardware = a;
  hardware.goodput_extra_overhead = 0;
  double sum = 0, reference = 0;
  std::string names;
  for (const GoodputRun& run : runs) {
    const RunInput in = PublishedRunInput(run);
    const double explained = QuotePublishedRun(run, hardware).total_seconds / in.work_seconds - 1;
    sum += std::max(0.0, run.end_to_end_days / run.steady_days - 1 - explained);
    reference = reference == 0 ? run.gpus : std::min(reference, static_cast<double>(run.gpus));
    names += (names.empty() ? "" : ", ") + run.run;
  }
  a.goodput_extra_overhead = runs.empty() ? 0 : sum / static_cast<double>(runs.size());
  a.goodput_reference_gpus = reference;
  a.goodput_source = runs.empty() ? "" : "catalog/goodput.csv (" + names + ")";
}

RunCost QuotePublishedRun(const GoodputRun& run, const CostAssumptions& a) {
  const RunInput in = PublishedRunInput(run);
  RunCost out = EstimateRunCost(in, a);
  // A published end-to-end figure starts with the run: its first start-up is not in it (the
  // restarts after interruptions are).
  out.total_seconds -= a.startup_seconds;
  out.p90_seconds -= a.startup_seconds;
  out.goodput_fraction = in.work_seconds / out.total_seconds;
  return out;
}

namespace {

// The cost tables of catalog_dir, each loaded once, with the first table that is there but does
// not load (a broken row: its file:line error; a spot trace that does not read) in `broken`, in
// the order storage, storage prices, spot bands, goodput, spot traces. An absent table is not an
// error: its default is noted.
CostAssumptions LoadCostTables(const std::string& catalog_dir, std::string* note, Status* broken) {
  const auto present_but_broken = [&](const char* file, const Status& status) {
    return !status.ok() && std::filesystem::exists(catalog_dir + "/" + file);
  };
  // A trace set: "none there" (NotFound) selects the default band; any other error is a trace
  // that is there but does not read, which must stop the plan, not switch the risk model quietly.
  const auto broken_traces = [](const Status& status) {
    return !status.ok() && status.code() != StatusCode::kNotFound;
  };
  std::vector<Status> problems;  // in the order above
  CostAssumptions a;
  std::string missing;
  Result<std::vector<spot::StorageKind>> kinds = spot::LoadStorageKinds(catalog_dir);
  if (present_but_broken("storage.csv", kinds.status())) problems.push_back(kinds.status());
  Result<spot::StorageKind> kind =
      kinds.ok() ? spot::FindStorageKind(*kinds, "") : Result<spot::StorageKind>(kinds.status());
  if (kinds.ok()) a.storage_kinds = *kinds;
  if (kind.ok()) {
    a.checkpoint_write_bytes_per_second_per_node = kind->write_bytes_per_second;
    a.checkpoint_write_kind = kind->kind;
  } else {
    missing += "storage.csv";
  }
  Result<std::vector<spot::StoragePrice>> prices = spot::LoadStoragePrices(catalog_dir);
  if (present_but_broken("storage_prices.csv", prices.status()))
    problems.push_back(prices.status());
  if (prices.ok()) a.storage_prices = std::move(*prices);
  if (broken != nullptr) {
    if (auto bands = spot::LoadSpotBands(catalog_dir);
        present_but_broken("spot_bands.csv", bands.status()))
      problems.push_back(bands.status());
  }
  Result<std::vector<GoodputRun>> runs = LoadGoodputRuns(catalog_dir);
  if (present_but_broken("goodput.csv", runs.status())) problems.push_back(runs.status());
  Result<spot::SpotRisk> risk = spot::CalibratedSpotRisk(catalog_dir);
  Result<double> mtti = spot::DefaultMttiSeconds(catalog_dir);
  if (risk.ok()) {
    a.spot_mtti_seconds_per_instance = risk->mtti_seconds;
    a.spot_outage_mean_seconds = risk->outage_mean_seconds;
    a.spot_risk_source = risk->source;
  } else if (mtti.ok()) {
    a.spot_mtti_seconds_per_instance = *mtti;
    a.spot_risk_source = "the default AWS Spot Advisor band (catalog/spot_bands.csv)";
  } else {
    missing += std::string(missing.empty() ? "" : ", ") + "spot_bands.csv";
  }
  if (broken_traces(risk.status())) problems.push_back(risk.status());
  Result<spot::RiskScaleTable> gang = spot::CalibratedGangRisk(catalog_dir);
  if (gang.ok()) a.spot_gang = std::move(*gang);
  if (broken_traces(gang.status())) problems.push_back(gang.status());
  Result<spot::RiskScaleTable> size = spot::CalibratedInstanceSizeRisk(catalog_dir);
  if (size.ok()) a.spot_instance_size = std::move(*size);
  if (broken_traces(size.status())) problems.push_back(size.status());
  if (broken != nullptr) *broken = problems.empty() ? Status::Ok() : problems.front();
  // After every other assumption: the fit subtracts what the hardware model explains.
  std::string goodput_problem;
  if (runs.ok()) {
    FitGoodput(*runs, a);
  } else {
    goodput_problem = runs.status().message() +
                      ": times are quoted with hardware interruptions only (no published-run "
                      "losses)";
  }
  if (note != nullptr) {
    std::vector<std::string> parts;
    if (!missing.empty()) {
      parts.push_back("catalog has no " + missing +
                      ": checkpoint writes assumed at 1 GB/s per node and spot rows not "
                      "risk-adjusted");
    }
    if (!goodput_problem.empty()) parts.push_back(goodput_problem);
    for (const std::string& part : parts) *note += (note->empty() ? "" : "; ") + part;
  }
  return a;
}

}  // namespace

Status CheckCostTables(const std::string& catalog_dir) {
  Status broken;
  LoadCostTables(catalog_dir, nullptr, &broken);
  return broken;
}

CostAssumptions LoadCostAssumptions(const std::string& catalog_dir, std::string* note) {
  return LoadCostTables(catalog_dir, note, nullptr);
}

Result<CostAssumptions> LoadCheckedCostAssumptions(const std::string& catalog_dir,
                                                   std::string* note) {
  Status broken;
  CostAssumptions a = LoadCostTables(catalog_dir, note, &broken);
  if (!broken.ok()) return broken;
  return a;
}

}  // namespace fulcrum::plan
