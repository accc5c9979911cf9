// `fulcrum cost`: spend per job and per UTC day from the supervisor's per-second ledger;
// `--accuracy`: the planner's running error per hardware class, from the prediction log.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "core/parse.h"
#include "core/table.h"
#include "store/jobs.h"
#include "store/jobs_accuracy.h"

namespace fulcrum::cli {
namespace {

Status ShowCost(CliContext& ctx, const std::string& data_dir_flag, const std::string& job_filter,
                bool json) {
  const std::string data_dir = store::ResolveDataDir(data_dir_flag);
  std::vector<store::SpendRow> rows;
  auto db = store::JobsDb::OpenInDataDir(data_dir, /*read_only=*/true);
  if (db.ok()) {
    FULCRUM_ASSIGN_OR_RETURN(rows, db->SpendByDay());
  } else if (db.status().code() != StatusCode::kNotFound) {
    return db.status();
  }
  if (!job_filter.empty())
    std::erase_if(rows, [&](const auto& r) { return r.job_id != job_filter; });
  std::map<std::string, std::pair<double, double>> per_job;  // usd, seconds
  std::map<std::string, double> per_day;
  double total = 0;
  for (const auto& r : rows) {
    per_job[r.job_id].first += r.usd;
    per_job[r.job_id].second += r.seconds;
    per_day[r.day] += r.usd;
    total += r.usd;
  }
  if (json) {
    nlohmann::json days = nlohmann::json::array(), jobs = nlohmann::json::array(),
                   by_day = nlohmann::json::array();
    for (const auto& r : rows) {
      days.push_back({{"day", r.day}, {"job", r.job_id}, {"seconds", r.seconds}, {"usd", r.usd}});
    }
    for (const auto& [job, v] : per_job)
      jobs.push_back({{"job", job}, {"usd", v.first}, {"seconds", v.second}});
    for (const auto& [day, usd] : per_day) by_day.push_back({{"day", day}, {"usd", usd}});
    PrintJson(ctx,
              {{"cost", {{"rows", days}, {"jobs", jobs}, {"days", by_day}, {"total_usd", total}}}});
    return Status::Ok();
  }
  if (rows.empty()) {
    ctx.out << "No spend recorded in " << data_dir
            << " (fulcrum run records it when given --price-per-hour or --offer).\n";
    return Status::Ok();
  }
  Table table({"DAY (UTC)", "JOB", "HOURS", "SPEND"},
              {Align::kLeft, Align::kLeft, Align::kRight, Align::kRight});
  for (const auto& r : rows)
    table.AddRow({r.day, r.job_id, FormatNumber(r.seconds / 3600, 3), FormatUsd(r.usd)});
  ctx.out << table.Render() << "\n";
  Table jobs({"JOB", "HOURS", "SPEND"}, {Align::kLeft, Align::kRight, Align::kRight});
  for (const auto& [job, v] : per_job)
    jobs.AddRow({job, FormatNumber(v.second / 3600, 3), FormatUsd(v.first)});
  ctx.out << jobs.Render();
  ctx.out << "\nTotal: " << FormatUsd(total) << "\n";
  return Status::Ok();
}

nlohmann::json Optional(const std::optional<double>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

nlohmann::json StatsJson(const store::ErrorStats& e) {
  return {{"jobs", e.jobs},
          {"bias", Optional(e.bias)},
          {"mean_abs_error", Optional(e.mean_abs)},
          {"worst", Optional(e.worst)}};
}

nlohmann::json PredictionJson(const store::PredictionRecord& r) {
  return {{"uid", r.uid},
          {"job", r.job_id},
          {"finished_at", r.finished_at},
          {"state", r.state},
          {"layout", r.layout},
          {"gpu", r.gpu},
          {"gpus_per_node", r.gpus_per_node ? nlohmann::json(*r.gpus_per_node) : nullptr},
          {"nodes", r.nodes ? nlohmann::json(*r.nodes) : nullptr},
          {"work_fraction", Optional(r.work_fraction)},
          {"predicted_step_seconds", Optional(r.predicted_step_seconds)},
          {"measured_step_seconds", Optional(r.measured_step_seconds)},
          {"predicted_peak_bytes_per_gpu", Optional(r.predicted_peak_bytes_per_gpu)},
          {"measured_peak_bytes_per_gpu", Optional(r.measured_peak_bytes_per_gpu)},
          {"predicted_hours", Optional(r.predicted_hours)},
          {"measured_hours", Optional(r.measured_hours)},
          {"predicted_cost_usd", Optional(r.predicted_cost_usd)},
          {"measured_cost_usd", Optional(r.measured_cost_usd)}};
}

std::string Percent(const std::optional<double>& fraction, bool sign) {
  if (!fraction) return "-";
  std::string text = FormatNumber(100 * *fraction, 0) + " %";
  return sign && *fraction >= 0 ? "+" + text : text;
}

Status ShowAccuracy(CliContext& ctx, const std::string& data_dir_flag, bool json) {
  const std::string data_dir = store::ResolveDataDir(data_dir_flag);
  std::vector<store::PredictionRecord> log;
  auto db = store::JobsDb::OpenInDataDir(data_dir, /*read_only=*/true);
  if (db.ok()) {
    FULCRUM_ASSIGN_OR_RETURN(log, db->ListPredictions());
  } else if (db.status().code() != StatusCode::kNotFound) {
    return db.status();
  }
  const std::vector<store::ClassAccuracy> classes = store::AccuracyByClass(log);
  constexpr std::pair<const char*, store::ErrorStats store::ClassAccuracy::*> kQuantities[] = {
      {"step_time", &store::ClassAccuracy::step_time},
      {"memory", &store::ClassAccuracy::memory},
      {"hours", &store::ClassAccuracy::hours},
      {"cost", &store::ClassAccuracy::cost}};
  if (json) {
    nlohmann::json out = nlohmann::json::array(), rows = nlohmann::json::array();
    for (const store::ClassAccuracy& c : classes) {
      nlohmann::json j = {{"class", store::ClassLabel(c.gpu, c.gpus_per_node)},
                          {"gpu", c.gpu},
                          {"gpus_per_node", c.gpus_per_node ? nlohmann::json(*c.gpus_per_node)
                                                            : nlohmann::json(nullptr)},
                          {"jobs", c.jobs}};
      for (const auto& [name, member] : kQuantities) j[name] = StatsJson(c.*member);
      out.push_back(std::move(j));
    }
    for (const store::PredictionRecord& r : log) rows.push_back(PredictionJson(r));
    PrintJson(ctx, {{"accuracy", {{"classes", out}, {"jobs", rows}, {"data_dir", data_dir}}}});
    return Status::Ok();
  }
  if (log.empty()) {
    ctx.out << "No finished job with a plan in " << data_dir
            << " yet (fulcrum run --plan or --expect-step-seconds records one).\n";
    return Status::Ok();
  }
  ctx.out << "Planner error on " << log.size() << " finished job" << (log.size() == 1 ? "" : "s")
          << " of " << data_dir << ": (measured - predicted) / predicted\n";
  Table table(
      {"HARDWARE CLASS", "QUANTITY", "JOBS", "BIAS", "MEAN |ERROR|", "WORST"},
      {Align::kLeft, Align::kLeft, Align::kRight, Align::kRight, Align::kRight, Align::kRight});
  for (const store::ClassAccuracy& c : classes) {
    bool first = true;
    for (const auto& [name, member] : kQuantities) {
      const store::ErrorStats& e = c.*member;
      std::string quantity = name;
      std::replace(quantity.begin(), quantity.end(), '_', ' ');
      table.AddRow({first ? store::ClassLabel(c.gpu, c.gpus_per_node) : "", quantity,
                    std::to_string(e.jobs), Percent(e.bias, true), Percent(e.mean_abs, false),
                    Percent(e.worst, true)});
      first = false;
    }
  }
  ctx.out << table.Render();
  ctx.out << "\nHours and cost are compared for the work each job did (the plan's totals x the "
             "fraction of its steps done); memory needs a local agent's per-process figures.\n";
  return Status::Ok();
}

}  // namespace

void RegisterCost(CLI::App* cmd, CliContext& ctx) {
  auto data_dir = std::make_shared<std::string>();
  auto job = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  auto accuracy = std::make_shared<bool>(false);
  cmd->description(
      "Spend per job and per UTC day, from the per-second ledger that fulcrum run keeps when it\n"
      "knows the machine's price (--price-per-hour or --offer).");
  cmd->footer(
      "Examples:\n  fulcrum cost\n  fulcrum cost --job llama-ft --json\n  fulcrum cost "
      "--accuracy");
  cmd->add_option("--data-dir", *data_dir, "Shared data dir holding jobs.db (as for fulcrum run)")
      ->type_name("DIR");
  cmd->add_option("--job", *job, "Only this job")->type_name("NAME");
  cmd->add_flag("--json", *json,
                "Print {\"cost\": {rows: [{day, job, seconds, usd}], jobs: [{job, usd, seconds}], "
                "days: [{day, usd}], total_usd}}");
  cmd->add_flag("--accuracy", *accuracy,
                "The planner's running error on this data dir's finished jobs, per hardware class "
                "(GPU model x GPUs per node): predicted vs measured step time, memory, hours, "
                "cost; --json {\"accuracy\": {classes: [{class, gpu, gpus_per_node, jobs, "
                "step_time|memory|hours|cost: {jobs, bias, mean_abs_error, worst}}], jobs: "
                "[...], data_dir}}");
  cmd->callback([&ctx, data_dir, job, json, accuracy] {
    Status s =
        *accuracy ? ShowAccuracy(ctx, *data_dir, *json) : ShowCost(ctx, *data_dir, *job, *json);
    if (!s.ok()) ReportError(ctx, s);
  });
}

}  // namespace fulcrum::cli
