// `fulcrum query`: reads a metric's series from the agent's store (agent.db).
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <ctime>

#include "cli/command.h"
#include "core/clock.h"
#include "core/parse.h"
#include "core/table.h"
#include "store/agent_db.h"
#include "store/jobs.h"

namespace fulcrum::cli {
namespace {

struct QueryFlags {
  std::string metric, since = "1h", step, data_dir;
  int gpu = -1;
  bool json = false;
};

std::string UtcTime(double unix_seconds) {
  std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S", &tm);
  return text;
}

void RunQuery(CliContext& ctx, const QueryFlags& f) {
  auto since = ParseDurationSeconds(f.since);
  if (!since.ok() || *since <= 0) {
    return ReportError(ctx, Status::InvalidInput("--since '" + f.since +
                                                 "': expected a look-back such as 15m, 1h, 7d"));
  }
  std::optional<double> step;
  if (!f.step.empty()) {
    auto s = ParseDurationSeconds(f.step);
    if (!s.ok() || *s <= 0)
      return ReportError(ctx,
                         Status::InvalidInput("--step '" + f.step + "': expected a duration > 0"));
    step = *s;
  }
  std::string dir = store::ResolveDataDir(f.data_dir);
  auto db = store::AgentDb::OpenInDataDir(dir, /*read_only=*/true);
  if (!db.ok()) return ReportError(ctx, db.status());
  SystemClock clock;
  double now = clock.UnixSeconds();
  std::optional<int> gpu;
  if (f.gpu >= 0) gpu = f.gpu;
  auto series = db->QuerySeries(f.metric, gpu, now - *since, now, step);
  if (!series.ok()) return ReportError(ctx, series.status());
  if (f.json) {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& s : *series) {
      nlohmann::json points = nlohmann::json::array();
      for (const auto& [t, v] : s.points) points.push_back({t, v});
      list.push_back({{"gpu", s.gpu}, {"points", std::move(points)}});
    }
    PrintJson(ctx, {{"query",
                     {{"metric", f.metric},
                      {"since_seconds", *since},
                      {"step_seconds", step ? nlohmann::json(*step) : nlohmann::json(nullptr)},
                      {"series", std::move(list)}}}});
    return;
  }
  Table table({"time (UTC)", "gpu", f.metric}, {Align::kLeft, Align::kRight, Align::kRight});
  size_t points = 0;
  for (const auto& s : *series) {
    for (const auto& [t, v] : s.points) {
      table.AddRow(
          {UtcTime(t), std::to_string(s.gpu), FormatNumber(v, std::abs(v) >= 1000 ? 0 : 2)});
      ++points;
    }
  }
  if (points == 0) {
    ctx.out << "no samples of " << f.metric << " in the last " << FormatDuration(*since) << "\n";
    return;
  }
  ctx.out << table.Render();
}

}  // namespace

void RegisterQuery(CLI::App* cmd, CliContext& ctx) {
  cmd->footer(R"(
Examples:
  fulcrum query --metric gpu_temperature_celsius --gpu 0 --since 1h
  fulcrum query --metric gpu_utilization_ratio --since 7d --step 1h --json

Metrics are those of /metrics without the fulcrum_ prefix (docs/API.md): gpu_utilization_ratio,
gpu_memory_used_bytes, gpu_power_watts, gpu_temperature_celsius, gpu_sm_clock_hertz, ...
Names of earlier releases still answer (README changelog): gpu_sm_clock_hz, gpu_memory_clock_hz,
and gpu_pcie_tx/rx_bytes_per_second (now the rate of the gpu_pcie_tx/rx_bytes_total counters).
Look-backs within the raw retention (48 h) read raw samples, longer ones 1-minute rollups.)");
  auto f = std::make_shared<QueryFlags>();
  cmd->add_option("--metric", f->metric, "Metric name, e.g. gpu_temperature_celsius")->required();
  cmd->add_option("--gpu", f->gpu, "GPU index (default: every GPU)")->type_name("N");
  cmd->add_option("--since", f->since, "Look-back (default 1h)")->type_name("DURATION");
  cmd->add_option("--step", f->step, "Average points into buckets of this width")
      ->type_name("DURATION");
  cmd->add_option("--data-dir", f->data_dir,
                  "The agent's data directory (default $FULCRUM_DATA_DIR, else /var/lib/fulcrum "
                  "as root, else ~/.local/share/fulcrum)")
      ->type_name("DIR");
  cmd->add_flag("--json", f->json,
                "Print {\"query\": {metric, series: [{gpu, points: [[t, v]]}]}}");
  cmd->callback([&ctx, f] { RunQuery(ctx, *f); });
}

}  // namespace fulcrum::cli
