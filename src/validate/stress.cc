// The stress phase: the job (or, without one, the bench's stability kernel or the sim source's
// load) runs for --duration while a `fulcrum agent` on the source under test samples the GPUs;
// then its stored series (GET /v1/series) are read back and judged: thermal throttling,
// XIDs, new uncorrected ECC errors, SM clock swings, and the drift of the job's own throughput
// (the selection guides warn of 30 % swings on shared hosts).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "core/parse.h"
#include "core/subprocess.h"
#include "core/table.h"
#include "validate/validation.h"

namespace fulcrum::validate {
namespace {

struct Watched {
  const char* metric;
  const char* title;
  double scale;
};

// Metric names of docs/API.md (/v1/series).
constexpr Watched kWatched[] = {
    {"gpu_utilization_ratio", "utilisation (%)", 100},
    {"gpu_sm_clock_hertz", "SM clock (MHz)", 1e-6},
    {"gpu_temperature_celsius", "temperature (C)", 1},
    {"gpu_power_watts", "power (W)", 1},
    {"gpu_thermal_slowdown", "thermal slowdown (0/1)", 1},
    {"gpu_power_capped", "power capped (0/1)", 1},
    {"gpu_ecc_uncorrected_errors_total", "uncorrected ECC errors", 1},
    {"gpu_xid_last", "last XID", 1},
};

std::string Percent(double ratio) { return FormatNumber(ratio * 100, 0) + " %"; }

// The stress phase's watcher: an agent on the source under test, sampling fast enough for a
// short run (--duration / 60, between 0.2 s and 1 s).
AgentChildOptions WatcherOptions(const ValidateOptions& options, const std::string& work_dir) {
  AgentChildOptions agent_options;
  agent_options.fulcrum_binary = options.fulcrum_binary;
  agent_options.source = options.source;
  agent_options.sim_gpus = options.sim_gpus;
  agent_options.sim_scenario = options.sim_scenario;
  agent_options.data_dir = work_dir + "/agent";
  agent_options.interval =
      FormatNumber(std::clamp(options.duration_seconds / 60, 0.2, 1.0), 2) + "s";
  return agent_options;
}

// One series of a /v1/series answer, its points from `unix_start` - 1 s on; nullopt when none.
std::optional<SeriesData> ParseSeries(const nlohmann::json& series, const Watched& watched,
                                      double unix_start) {
  SeriesData data;
  data.metric = watched.metric;
  data.gpu = series.value("gpu", 0);
  data.scale = watched.scale;
  data.title = "GPU " + std::to_string(data.gpu) + " " + watched.title;
  for (const auto& p : series.value("points", nlohmann::json::array())) {
    if (!p.is_array() || p.size() < 2 || !p[0].is_number() || !p[1].is_number()) continue;
    const double t = p[0].get<double>();
    if (t + 1 < unix_start) continue;
    data.points.push_back({t, p[1].get<double>()});
  }
  if (data.points.empty()) return std::nullopt;
  return data;
}

// The lowest SM clock among the samples taken while the GPU was busy (utilisation 50 % or more
// at the same timestamp in `seen`; a sample without one counts), +inf when there is none.
double BusyClockMinimum(const SeriesData& clock, const std::vector<SeriesData>& seen) {
  std::map<double, double> busy;
  for (const SeriesData& u : seen)
    if (u.metric == "gpu_utilization_ratio" && u.gpu == clock.gpu)
      for (const auto& [t, v] : u.points) busy[t] = v;
  double busy_lo = INFINITY;
  for (const auto& [t, v] : clock.points) {
    auto it = busy.find(t);
    if (it == busy.end() || it->second >= 0.5) busy_lo = std::min(busy_lo, v);
  }
  return busy_lo;
}

struct StressFindings {
  std::vector<std::string> failures;
  std::vector<std::string> notes;  // reported after the verdict's reasons, failing nothing
};

// Judges one GPU's series of one metric: its figures go to `gpu_json`, a fault to `findings`.
// `seen` holds the series read before it (utilisation is read before the SM clock).
void JudgeSeries(const SeriesData& data, const std::vector<SeriesData>& seen,
                 nlohmann::json& gpu_json, StressFindings& findings) {
  double lo = INFINITY, hi = -INFINITY, sum = 0;
  int on = 0;
  for (const auto& [t, v] : data.points) {
    lo = std::min(lo, v), hi = std::max(hi, v), sum += v;
    if (v != 0) ++on;
  }
  const double mean = sum / static_cast<double>(data.points.size());
  const std::string gpu = "GPU " + std::to_string(data.gpu);
  const std::string n =
      std::to_string(on) + " of " + std::to_string(data.points.size()) + " samples";
  nlohmann::json& m = gpu_json;
  const std::string& metric = data.metric;
  if (metric == "gpu_utilization_ratio") {
    m["utilization_mean"] = mean;
  } else if (metric == "gpu_sm_clock_hertz") {
    m["sm_clock_mhz_min"] = lo * 1e-6, m["sm_clock_mhz_max"] = hi * 1e-6;
    // A clock drop counts while the GPU is busy (an idle GPU lowers its clock by design).
    const double busy_lo = BusyClockMinimum(data, seen);
    if (hi > 0 && std::isfinite(busy_lo) && busy_lo < 0.7 * hi) {
      findings.failures.push_back(gpu + ": SM clock fell from " + FormatNumber(hi * 1e-6, 0) +
                                  " to " + FormatNumber(busy_lo * 1e-6, 0) + " MHz while busy");
    }
  } else if (metric == "gpu_temperature_celsius") {
    m["temperature_max_celsius"] = hi;
  } else if (metric == "gpu_power_watts") {
    m["power_mean_watts"] = mean;
  } else if (metric == "gpu_thermal_slowdown") {
    m["thermal_slowdown_samples"] = on;
    if (on > 0) {
      findings.failures.push_back(gpu + ": thermal throttling (hardware slowdown) in " + n);
    }
  } else if (metric == "gpu_power_capped") {
    // At full load a healthy GPU holds its power limit: NVML's clocks-event reason
    // SW_POWER_CAP ("the SW power scaling algorithm is reducing the clocks", nvml.h) is
    // set on every busy sample of a GEMM-bound H100/A100. It is reported, not failed; what
    // it costs is judged by the busy SM clock (above) and the job's throughput drift, and a
    // provider's lowered power limit by the environment phase's bench against the datasheet.
    m["power_capped_samples"] = on;
    if (on > 0) findings.notes.push_back(gpu + ": at its power limit in " + n + " (not a failure)");
  } else if (metric == "gpu_ecc_uncorrected_errors_total") {
    m["ecc_uncorrected_new"] = hi - lo;
    if (hi > lo) {
      findings.failures.push_back(gpu + ": " + FormatNumber(hi - lo, 0) +
                                  " new uncorrected ECC error(s)");
    }
  } else if (metric == "gpu_xid_last") {
    if (hi > 0) {
      m["xid"] = hi;
      findings.failures.push_back(gpu + ": XID " + FormatNumber(hi, 0) + " (NVIDIA Xid catalog)");
    }
  }
}

}  // namespace

void Validation::StressLoad(bool has_job, double start, PhaseResult& phase,
                            std::vector<std::string>& failures) {
  const double duration = options_.duration_seconds;
  if (has_job) {
    job_->Pump(duration);
    if (!job_->running()) {
      failures.push_back("the job ended during the stress run (fulcrum run " +
                         (job_->run_exit() ? job_->run_exit()->Describe() : std::string("?")) +
                         "): " + job_->Tail(4));
    }
  } else if (options_.source == "nvml" && options_.command.empty()) {
    // The bench's sustained-GEMM stability run, again and again for the duration.
    while (Now() - start < duration && !Interrupted()) {
      CaptureOptions capture;
      capture.timeout_seconds = std::max(60.0, duration - (Now() - start) + 120);
      auto bench = RunCapture({options_.fulcrum_binary, "bench", "--skip-disk", "--json"}, capture);
      if (!bench.ok() || bench->exit_code != 0) {
        failures.push_back("fulcrum bench (stability) failed: " +
                           (bench.ok() ? bench->err : bench.status().message()));
        break;
      }
      auto json = nlohmann::json::parse(bench->out, nullptr, false);
      if (json.is_object() && json.contains("gpu_skipped_reason") &&
          json["gpu_skipped_reason"].is_string()) {
        phase.reasons.push_back("no stability kernel: " +
                                json["gpu_skipped_reason"].get<std::string>());
        break;
      }
      ScanBenchVerdicts(json, "", failures);  // an unstable sustained GEMM fails the stress
    }
  } else {
    while (Now() - start < duration && !Interrupted()) {  // the sim's load
      std::this_thread::sleep_for(
          std::chrono::duration<double>(std::min(0.1, std::max(0.0, duration - (Now() - start)))));
    }
  }
}

void Validation::JudgeThroughput(double start, double end, double unix_start, PhaseResult& phase,
                                 std::vector<std::string>& failures) {
  const double window = std::max(options_.duration_seconds / 8, 0.5);
  std::vector<double> rates;
  for (double w0 = start; w0 + window <= end + 1e-9; w0 += window) {
    std::optional<int64_t> first, last;
    double first_at = 0, last_at = 0;
    for (const StepSeen& s : job_->steps()) {
      if (s.at < w0 || s.at >= w0 + window) continue;
      if (!first) first = s.step, first_at = s.at;
      last = s.step, last_at = s.at;
    }
    if (first && last && *last > *first && last_at > first_at) {
      const double rate = static_cast<double>(*last - *first) / (last_at - first_at);
      rates.push_back(rate);
      report_.throughput.push_back({unix_start + (w0 + window / 2 - start), rate});
    }
  }
  if (rates.size() < 2) {
    phase.reasons.push_back("too few steps to measure throughput drift");
    return;
  }
  std::vector<double> sorted = rates;
  std::sort(sorted.begin(), sorted.end());
  const double median = sorted[sorted.size() / 2];
  const double drift = (sorted.back() - sorted.front()) / median;
  phase.metrics["steps_per_second"] = {
      {"min", sorted.front()}, {"median", median}, {"max", sorted.back()}};
  phase.metrics["throughput_drift"] = drift;
  if (drift > options_.max_drift) {
    failures.push_back("throughput swung " + Percent(drift) + " (" +
                       FormatNumber(sorted.front(), 2) + " to " + FormatNumber(sorted.back(), 2) +
                       " steps/s), above " + Percent(options_.max_drift));
  }
}

void Validation::JudgeGpus(const AgentChild& agent, double unix_start, PhaseResult& phase,
                           std::vector<std::string>& failures, std::vector<std::string>& notes) {
  const int since = static_cast<int>(std::ceil(options_.duration_seconds)) + 30;
  nlohmann::json gpus = nlohmann::json::object();
  StressFindings findings;
  for (const Watched& w : kWatched) {
    auto body = agent.Get(
        "/v1/series?metric=" + std::string(w.metric) + "&since=" + std::to_string(since), 5);
    if (!body.ok()) continue;
    auto json = nlohmann::json::parse(*body, nullptr, false);
    if (!json.is_object() || !json.contains("series")) continue;
    for (const auto& s : json["series"]) {
      std::optional<SeriesData> data = ParseSeries(s, w, unix_start);
      if (!data) continue;
      JudgeSeries(*data, report_.series, gpus[std::to_string(data->gpu)], findings);
      report_.series.push_back(std::move(*data));
    }
  }
  failures.insert(failures.end(), findings.failures.begin(), findings.failures.end());
  notes.insert(notes.end(), findings.notes.begin(), findings.notes.end());
  phase.metrics["gpus"] = gpus;
  if (gpus.empty()) phase.reasons.push_back("the agent stored no samples");
}

PhaseResult Validation::Stress() {
  PhaseResult phase;
  phase.name = "stress";
  const double duration = options_.duration_seconds;
  const bool has_job = job_ && job_->running();
  std::vector<std::string> failures;
  std::vector<std::string> notes;  // reported after the verdict's reasons, failing nothing
  Say("stress: " + std::string(has_job ? "the job" : "the load") + " for " +
      FormatDuration(duration) + ", watched by fulcrum agent --source " + options_.source);
  auto agent = AgentChild::Start(WatcherOptions(options_, work_dir_), 60);
  if (!agent.ok()) {
    // The GPUs cannot be watched: the stress phase cannot say the server is stable.
    failures.push_back(
        "no GPU watch: " + agent.status().message() +
        (options_.source == "nvml" ? " (on a machine without GPUs: --source sim)" : ""));
    if (!has_job) {
      phase.verdict = Verdict::kFail;
      phase.reasons = failures;
      return phase;
    }
  }
  if (job_ && !has_job && !job_failure_.empty()) {
    phase.reasons.push_back("the job is not running: " + job_failure_);
  }
  const double unix_start = clock_.UnixSeconds();
  const double start = Now();
  StressLoad(has_job, start, phase, failures);
  const double end = Now();
  phase.metrics["seconds"] = end - start;
  if (has_job) JudgeThroughput(start, end, unix_start, phase, failures);   // the job's drift
  if (agent.ok()) JudgeGpus(**agent, unix_start, phase, failures, notes);  // as the agent saw them
  if (failures.empty()) {
    phase.verdict = Verdict::kPass;
    phase.reasons.insert(
        phase.reasons.begin(),
        "no thermal throttling, clock drop, XID, ECC error or throughput drift over " +
            FormatDuration(end - start));
  } else {
    phase.verdict = Verdict::kFail;
    phase.reasons.insert(phase.reasons.end(), failures.begin(), failures.end());
  }
  phase.reasons.insert(phase.reasons.end(), notes.begin(), notes.end());
  return phase;
}

}  // namespace fulcrum::validate
