#include "spot/job_estimate.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <utility>

#include "core/parse.h"
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

namespace {

// Availability pooled over traces, for "at least `at_least` instances obtainable".
struct Pooled {
  double up_seconds = 0, total_seconds = 0, interruptions = 0;
  double mtti() const { return up_seconds / interruptions; }
  double outage() const { return (total_seconds - up_seconds) / interruptions; }
  double available_fraction() const { return up_seconds / total_seconds; }
};

Pooled Pool(const std::vector<Trace>& traces, int64_t at_least) {
  Pooled out;
  for (const Trace& trace : traces) {
    Trace up = trace;  // 1 while at least `at_least` instances are obtainable
    for (int64_t& c : up.counts) c = c >= at_least ? 1 : 0;
    const PreemptionModel model = PreemptionModel::FromTrace(up);
    const double period = trace.gap_seconds * static_cast<double>(trace.counts.size());
    const double available = model.AvailableFraction() * period;
    const double mtti = model.MeanTimeToInterruptionSeconds();
    out.up_seconds += available;
    out.total_seconds += period;
    if (mtti > 0 && std::isfinite(mtti)) out.interruptions += available / mtti;
  }
  return out;
}

// The traces of catalog_dir/spot-traces/<name>/*.json, by file name.
Result<std::vector<std::pair<std::string, Trace>>> LoadTraces(const std::string& catalog_dir,
                                                              const char* name) {
  const std::filesystem::path dir = std::filesystem::path(catalog_dir) / "spot-traces" / name;
  std::error_code ec;
  std::vector<std::string> paths;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (entry.path().extension() == ".json") paths.push_back(entry.path().string());
  }
  if (ec || paths.empty()) return Status::NotFound(dir.string() + ": no spot traces");
  std::sort(paths.begin(), paths.end());
  std::vector<std::pair<std::string, Trace>> out;
  for (const std::string& path : paths) {
    FULCRUM_ASSIGN_OR_RETURN(Trace trace, LoadTrace(path));
    out.emplace_back(std::filesystem::path(path).stem().string(), std::move(trace));
  }
  return out;
}

std::vector<Trace> TracesOnly(std::vector<std::pair<std::string, Trace>> named) {
  std::vector<Trace> out;
  for (auto& [name, trace] : named) out.push_back(std::move(trace));
  return out;
}

RiskScale ScaleOf(int count, const Pooled& p, const Pooled& one) {
  RiskScale r;
  r.count = count;
  r.mtti_factor = p.mtti() / one.mtti();
  r.outage_factor = one.outage() > 0 ? p.outage() / one.outage() : 1;
  r.available_fraction = p.available_fraction();
  return r;
}

}  // namespace

Result<SpotRisk> CalibratedSpotRisk(const std::string& catalog_dir) {
  FULCRUM_ASSIGN_OR_RETURN(auto named, LoadTraces(catalog_dir, "preemption-1node"));
  const std::vector<Trace> traces = TracesOnly(std::move(named));
  const Pooled pooled = Pool(traces, 1);
  if (pooled.interruptions <= 0) {
    return Status::NotFound(catalog_dir + "/spot-traces/preemption-1node: no preemption");
  }
  SpotRisk risk;
  risk.mtti_seconds = pooled.mtti();
  risk.outage_mean_seconds = pooled.outage();
  risk.traces = static_cast<int>(traces.size());
  risk.source = "public AWS V100 spot preemption traces (skypilot-org/spot-traces, " +
                std::to_string(risk.traces) + " zones)";
  return risk;
}

Result<RiskScaleTable> CalibratedGangRisk(const std::string& catalog_dir) {
  FULCRUM_ASSIGN_OR_RETURN(auto named, LoadTraces(catalog_dir, "availability-16node"));
  const std::vector<Trace> traces = TracesOnly(std::move(named));
  int64_t largest = 0;
  for (const Trace& t : traces) {
    largest = std::max(largest, *std::max_element(t.counts.begin(), t.counts.end()));
  }
  RiskScaleTable table;
  const Pooled one = Pool(traces, 1);
  for (int64_t n = 1; n <= largest && one.interruptions > 0; ++n) {
    const Pooled gang = Pool(traces, n);
    if (gang.interruptions <= 0) break;  // a gang of n never formed, or never broke
    table.rows.push_back(ScaleOf(static_cast<int>(n), gang, one));
  }
  if (table.rows.empty()) return Status::NotFound(catalog_dir + ": the traces show no gang");
  table.source = "public AWS V100 16-node spot availability traces (skypilot-org/spot-traces, " +
                 std::to_string(traces.size()) + " zones)";
  return table;
}

RiskScale GangRiskFor(const RiskScaleTable& table, int nodes) {
  nodes = std::max(1, nodes);
  RiskScale g;
  g.count = nodes;
  if (table.rows.empty()) {
    g.mtti_factor = 1.0 / nodes;
    return g;
  }
  for (const RiskScale& row : table.rows) {
    if (row.count == nodes) return row;
  }
  const RiskScale& top = table.rows.back();
  const int largest = top.count;
  if (nodes < largest) return top;  // a gap in the table: the larger gang's (conservative)
  const double groups = static_cast<double>(nodes) / largest;
  g.mtti_factor = top.mtti_factor / groups;
  g.outage_factor = top.outage_factor;
  g.available_fraction = std::pow(top.available_fraction, groups);
  return g;
}

Result<RiskScaleTable> CalibratedInstanceSizeRisk(const std::string& catalog_dir) {
  FULCRUM_ASSIGN_OR_RETURN(auto named, LoadTraces(catalog_dir, "availability-1node"));
  std::map<int, std::vector<Trace>> by_size;  // "<zone>_<gpu>_<gpus>" -> gpus
  for (auto& [name, trace] : named) {
    const size_t underscore = name.rfind('_');
    Result<double> gpus =
        ParseDouble(name.substr(underscore == std::string::npos ? 0 : underscore + 1));
    if (!gpus.ok() || *gpus < 1) {
      return Status::InvalidInput(trace.origin +
                                  ": expected <zone>_<gpu>_<gpus per instance>.json");
    }
    by_size[static_cast<int>(*gpus)].push_back(std::move(trace));
  }
  if (by_size.count(1) == 0) return Status::NotFound(catalog_dir + ": no 1-GPU availability trace");
  const Pooled one = Pool(by_size[1], 1);
  if (one.interruptions <= 0) return Status::NotFound(catalog_dir + ": no interruption");
  RiskScaleTable table;
  for (const auto& [gpus, traces] : by_size) {
    const Pooled p = Pool(traces, 1);
    if (p.interruptions > 0) table.rows.push_back(ScaleOf(gpus, p, one));
  }
  table.source = "public AWS 1- and 8-GPU spot availability traces (skypilot-org/spot-traces, " +
                 std::to_string(named.size()) + " traces)";
  return table;
}

RiskScale InstanceSizeRiskFor(const RiskScaleTable& table, int gpus) {
  gpus = std::max(1, gpus);
  RiskScale r;
  r.count = gpus;
  if (table.rows.empty()) return r;
  if (gpus <= table.rows.front().count) return table.rows.front();
  if (gpus >= table.rows.back().count) return table.rows.back();
  for (size_t i = 1; i < table.rows.size(); ++i) {
    const RiskScale& a = table.rows[i - 1];
    const RiskScale& b = table.rows[i];
    if (gpus > b.count) continue;
    const double t =
        (std::log2(gpus) - std::log2(a.count)) / (std::log2(b.count) - std::log2(a.count));
    auto mix = [t](double x, double y) {
      return std::exp((1 - t) * std::log(x) + t * std::log(y));
    };
    r.mtti_factor = mix(a.mtti_factor, b.mtti_factor);
    r.outage_factor = mix(std::max(a.outage_factor, 1e-9), std::max(b.outage_factor, 1e-9));
    r.available_fraction = mix(a.available_fraction, b.available_fraction);
    return r;
  }
  return table.rows.back();
}

}  // namespace fulcrum::spot
