// `fulcrum cost`: spend per job and per UTC day from the supervisor's per-second ledger.
#include <CLI/CLI.hpp>
#include <map>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "core/parse.h"
#include "core/table.h"
#include "store/jobs.h"

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

}  // namespace

void RegisterCost(CLI::App* cmd, CliContext& ctx) {
  auto data_dir = std::make_shared<std::string>();
  auto job = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  cmd->description(
      "Spend per job and per UTC day, from the per-second ledger that fulcrum run keeps when it\n"
      "knows the machine's price (--price-per-hour or --offer).");
  cmd->footer("Examples:\n  fulcrum cost\n  fulcrum cost --job llama-ft --json");
  cmd->add_option("--data-dir", *data_dir, "Shared data dir holding jobs.db (as for fulcrum run)")
      ->type_name("DIR");
  cmd->add_option("--job", *job, "Only this job")->type_name("NAME");
  cmd->add_flag("--json", *json,
                "Print {\"cost\": {rows: [{day, job, seconds, usd}], jobs: [{job, usd, seconds}], "
                "days: [{day, usd}], total_usd}}");
  cmd->callback([&ctx, data_dir, job, json] {
    Status s = ShowCost(ctx, *data_dir, *job, *json);
    if (!s.ok()) ReportError(ctx, s);
  });
}

}  // namespace fulcrum::cli
