#include "spot/job_estimate.h"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "spot/preemption.h"
#include "spot/spot_catalog.h"
#include "spot/trace.h"

namespace fulcrum::spot {

double AutoCheckpointIntervalSeconds(double checkpoint_cost_seconds, double mtti_seconds,
                                     const NoticeSettings& notice) {
  if (NoticeCoversCheckpoint(notice, checkpoint_cost_seconds)) return kNever;
  if (!std::isfinite(mtti_seconds)) return kNever;
  return std::max(1.0, DalyIntervalSeconds(checkpoint_cost_seconds, mtti_seconds));
}

Result<SpotJobEstimate> EstimateSpotJob(const SpotJobInput& input) {
  if (!(input.work_seconds >= 0 && input.work_seconds <= kMaxJobSeconds)) {
    return Status::InvalidInput("spot job: work of " + std::to_string(input.work_seconds) +
                                " s is beyond the 10-year limit");
  }
  FULCRUM_ASSIGN_OR_RETURN(
      PreemptionModel model,
      PreemptionModel::Exponential(input.mtti_seconds, input.outage_mean_seconds));
  JobParams job;
  job.work_seconds = input.work_seconds;
  job.deadline_seconds = input.deadline_seconds.value_or(kNever);
  job.changeover_seconds = input.changeover_seconds;
  job.restart_seconds = input.restart_seconds;
  job.checkpoint_cost_seconds = input.checkpoint_cost_seconds;
  job.checkpoint_interval_seconds =
      input.checkpoint_interval_seconds.value_or(AutoCheckpointIntervalSeconds(
          input.checkpoint_cost_seconds, input.mtti_seconds, input.notice));
  job.notice = input.notice;
  job.on_demand_usd_per_hour = input.on_demand_usd_per_hour;
  job.spot_usd_per_hour = input.spot_usd_per_hour;
  job.billing_granularity_seconds = input.billing_granularity_seconds;
  job.minimum_billed_seconds = input.minimum_billed_seconds;
  const Policy policy =
      input.policy.value_or(input.deadline_seconds ? Policy::kUniformProgress : Policy::kGreedy);
  SimulationOptions options;
  options.trials = input.trials;
  options.seed = input.seed;
  options.threads = input.threads;
  FULCRUM_ASSIGN_OR_RETURN(PolicySummary s, Simulate(job, model, policy, options));
  SpotJobEstimate estimate;
  estimate.policy = PolicyName(policy);
  if (std::isfinite(job.checkpoint_interval_seconds)) {
    estimate.checkpoint_interval_seconds = job.checkpoint_interval_seconds;
  }
  estimate.expected_cost_usd = s.mean_cost_usd;
  estimate.p90_cost_usd = s.p90_cost_usd;
  estimate.expected_hours = s.mean_hours;
  estimate.p90_hours = s.p90_hours;
  estimate.deadline_met_fraction = s.deadline_met_fraction;
  estimate.preemptions_mean = s.preemptions_mean;
  estimate.mtti_seconds = input.mtti_seconds;
  return estimate;
}

Result<double> DefaultMttiSeconds(const std::string& catalog_dir) {
  FULCRUM_ASSIGN_OR_RETURN(std::vector<SpotBand> bands, LoadSpotBands(catalog_dir));
  FULCRUM_ASSIGN_OR_RETURN(SpotBand band, FindSpotBand(bands, ""));
  return MttiSecondsFromMonthlyPct(band.assumed_pct_per_month);
}

Result<SpotRisk> CalibratedSpotRisk(const std::string& catalog_dir) {
  const std::filesystem::path dir =
      std::filesystem::path(catalog_dir) / "spot-traces" / "preemption-1node";
  std::error_code ec;
  std::vector<std::string> paths;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (entry.path().extension() == ".json") paths.push_back(entry.path().string());
  }
  if (ec || paths.empty()) return Status::NotFound(dir.string() + ": no spot traces");
  std::sort(paths.begin(), paths.end());
  double available = 0, unavailable = 0, transitions = 0;
  for (const std::string& path : paths) {
    FULCRUM_ASSIGN_OR_RETURN(Trace trace, LoadTrace(path));
    const PreemptionModel model = PreemptionModel::FromTrace(trace);
    const double period = trace.gap_seconds * static_cast<double>(trace.counts.size());
    const double up = model.AvailableFraction() * period;
    const double mtti = model.MeanTimeToInterruptionSeconds();
    available += up;
    unavailable += period - up;
    if (mtti > 0 && std::isfinite(mtti)) transitions += up / mtti;
  }
  if (transitions <= 0) return Status::NotFound(dir.string() + ": the traces show no preemption");
  SpotRisk risk;
  risk.mtti_seconds = available / transitions;
  risk.outage_mean_seconds = unavailable / transitions;
  risk.traces = static_cast<int>(paths.size());
  risk.source = "public AWS V100 spot preemption traces (skypilot-org/spot-traces, " +
                std::to_string(risk.traces) + " zones)";
  return risk;
}

Result<GangTable> CalibratedGangRisk(const std::string& catalog_dir) {
  const std::filesystem::path dir =
      std::filesystem::path(catalog_dir) / "spot-traces" / "availability-16node";
  std::error_code ec;
  std::vector<std::string> paths;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (entry.path().extension() == ".json") paths.push_back(entry.path().string());
  }
  if (ec || paths.empty()) return Status::NotFound(dir.string() + ": no availability traces");
  std::sort(paths.begin(), paths.end());
  std::vector<Trace> traces;
  int64_t largest = 0;
  for (const std::string& path : paths) {
    FULCRUM_ASSIGN_OR_RETURN(Trace trace, LoadTrace(path));
    largest = std::max(largest, *std::max_element(trace.counts.begin(), trace.counts.end()));
    traces.push_back(std::move(trace));
  }
  GangTable table;
  double mtti_1 = 0, outage_1 = 0;
  for (int64_t n = 1; n <= largest; ++n) {
    double up = 0, total = 0, transitions = 0;
    for (const Trace& trace : traces) {
      Trace gang = trace;  // 1 while at least n instances are obtainable
      for (int64_t& c : gang.counts) c = c >= n ? 1 : 0;
      const PreemptionModel model = PreemptionModel::FromTrace(gang);
      const double period = trace.gap_seconds * static_cast<double>(trace.counts.size());
      const double available = model.AvailableFraction() * period;
      const double mtti = model.MeanTimeToInterruptionSeconds();
      up += available;
      total += period;
      if (mtti > 0 && std::isfinite(mtti)) transitions += available / mtti;
    }
    if (transitions <= 0 || up <= 0) break;  // no gang of n ever formed, or it never broke
    const double mtti = up / transitions, outage = (total - up) / transitions;
    if (n == 1) {
      mtti_1 = mtti;
      outage_1 = outage;
    }
    GangRisk g;
    g.nodes = static_cast<int>(n);
    g.mtti_factor = mtti / mtti_1;
    g.outage_factor = outage_1 > 0 ? outage / outage_1 : 1;
    g.available_fraction = up / total;
    table.by_nodes.push_back(g);
  }
  if (table.by_nodes.empty()) return Status::NotFound(dir.string() + ": the traces show no gang");
  table.source = "public AWS V100 16-node spot availability traces (skypilot-org/spot-traces, " +
                 std::to_string(traces.size()) + " zones)";
  return table;
}

GangRisk GangRiskFor(const GangTable& table, int nodes) {
  nodes = std::max(1, nodes);
  GangRisk g;
  g.nodes = nodes;
  if (table.by_nodes.empty()) {
    g.mtti_factor = 1.0 / nodes;
    return g;
  }
  const int largest = static_cast<int>(table.by_nodes.size());
  if (nodes <= largest) return table.by_nodes[static_cast<size_t>(nodes - 1)];
  const GangRisk& top = table.by_nodes.back();
  const double groups = static_cast<double>(nodes) / largest;
  g.mtti_factor = top.mtti_factor / groups;
  g.outage_factor = top.outage_factor;
  g.available_fraction = std::pow(top.available_fraction, groups);
  return g;
}

}  // namespace fulcrum::spot
