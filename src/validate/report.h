// The result of `fulcrum validate`: one verdict per phase (environment, small-run, fault-drill,
// stress) with its reasons and metrics, one row per fault drill (time to detect, time to
// resume, steps lost, the checkpoint it resumed from), and the time series the stress phase
// watched. One model, three views: text, JSON ({"phases": [...], "drills": [...]}, a documented
// contract) and a self-contained HTML page whose charts are the dashboard's uPlot, embedded.
// Plain values; thread-compatible.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace fulcrum::validate {

enum class Verdict { kPass, kFail, kSkipped };
const char* VerdictName(Verdict verdict);  // "pass", "fail", "skipped"

struct PhaseResult {
  std::string name;  // environment, small-run, fault-drill, stress
  Verdict verdict = Verdict::kSkipped;
  std::vector<std::string> reasons;
  nlohmann::json metrics = nlohmann::json::object();
};

struct DrillResult {
  std::string fault;  // crash, preemption-notice, sigterm, gpu-lost, network-cut
  Verdict verdict = Verdict::kSkipped;
  std::optional<double> detect_seconds;  // fault to the supervisor's reaction
  std::optional<double> resume_seconds;  // fault to the first step after the restart
  std::optional<int64_t> lost_steps;     // steps done before the fault and done again
  std::string resumed_from;              // the checkpoint the restart got ("" = none)
  std::string reason;
};

// One metric of one GPU over time (Unix seconds, value), as the agent's /v1/series has it.
struct SeriesData {
  std::string metric;
  std::string title;  // "GPU 0 SM clock (MHz)"
  int gpu = 0;
  double scale = 1;  // value shown = value * scale
  std::vector<std::pair<double, double>> points;
};

struct ValidateReport {
  std::vector<PhaseResult> phases;
  std::vector<DrillResult> drills;
  std::vector<SeriesData> series;  // the stress phase's, for the HTML charts
  // Steps per second of the job over the stress phase (Unix seconds, rate), for the charts.
  std::vector<std::pair<double, double>> throughput;
};

// 0 when no phase failed (skipped phases do not fail), 3 when one did.
int ValidateExitCode(const ValidateReport& report);
nlohmann::json ReportJson(const ValidateReport& report);
std::string ReportText(const ValidateReport& report);
std::string ReportHtml(const ValidateReport& report);

}  // namespace fulcrum::validate
