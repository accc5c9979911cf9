// `fulcrum status`: the jobs of this data dir (run, local queue, Slurm) with state, GPUs,
// restarts, step, checkpoint age, heartbeat age and spend; Slurm jobs also show squeue/sacct.
#include <signal.h>

#include <CLI/CLI.hpp>
#include <map>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cluster/slurm.h"
#include "core/clock.h"
#include "core/parse.h"
#include "core/table.h"
#include "store/jobs.h"

namespace fulcrum::cli {
namespace {

nlohmann::json Optional(const std::optional<double>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json();
}

std::string Age(const std::optional<double>& seconds) {
  return seconds ? FormatDuration(std::max(0.0, *seconds)) + " ago" : "-";
}

Status ShowStatus(CliContext& ctx, const std::string& data_dir_flag, bool json, bool all) {
  const std::string data_dir = store::ResolveDataDir(data_dir_flag);
  std::vector<store::JobRecord> jobs;
  auto db = store::JobsDb::OpenInDataDir(data_dir, /*read_only=*/true);
  if (db.ok()) {
    FULCRUM_ASSIGN_OR_RETURN(jobs, db->ListJobs());
  } else if (db.status().code() != StatusCode::kNotFound) {
    return db.status();
  }
  const double now = SystemClock().UnixSeconds();
  // A job whose supervisor died without a word (kill -9, reboot) is not running any more.
  for (auto& job : jobs) {
    if (store::IsActiveState(job.state) && job.state != "queued" && job.supervisor_pid &&
        job.queue != "slurm" && ::kill(static_cast<pid_t>(*job.supervisor_pid), 0) != 0 &&
        errno == ESRCH) {
      job.state = "lost";
      job.reason = "supervisor pid " + std::to_string(*job.supervisor_pid) + " is gone";
    }
  }
  std::vector<std::string> slurm_ids;
  for (const auto& job : jobs) {
    if (!job.slurm_job_id.empty()) slurm_ids.push_back(job.slurm_job_id);
  }
  std::map<std::string, cluster::SlurmJobState> slurm;
  std::string slurm_error;
  if (!slurm_ids.empty()) {
    auto states = cluster::QuerySlurm(slurm_ids);
    if (states.ok()) {
      for (const auto& s : *states) slurm[s.job_id] = s;
    } else {
      slurm_error = states.status().message();
    }
  }
  if (!all) {
    std::erase_if(jobs, [&](const store::JobRecord& j) {
      return !store::IsActiveState(j.state) && j.state != "lost" && j.finished_at &&
             now - *j.finished_at > 24 * 3600;
    });
  }
  if (json) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& j : jobs) {
      nlohmann::json row = {
          {"id", j.id},
          {"name", j.name},
          {"state", j.state},
          {"queue", j.queue},
          {"gpus", j.gpus},
          {"gpus_requested", j.gpus_requested},
          {"step", j.step ? nlohmann::json(*j.step) : nlohmann::json()},
          {"restarts", j.restarts},
          {"last_checkpoint", j.last_checkpoint_path.empty()
                                  ? nlohmann::json()
                                  : nlohmann::json(j.last_checkpoint_path)},
          {"last_checkpoint_age_seconds", Optional(store::AgeSeconds(j.last_checkpoint_at, now))},
          {"spend_usd", j.price_per_hour_usd || j.spend_usd > 0 ? nlohmann::json(j.spend_usd)
                                                                : nlohmann::json()},
          {"budget_usd", Optional(j.budget_usd)},
          {"started_at", Optional(j.started_at)},
          {"finished_at", Optional(j.finished_at)},
          {"not_before", Optional(j.not_before)},
          {"heartbeat_age_seconds", Optional(store::AgeSeconds(j.heartbeat_at, now))},
          {"exit_code", j.exit_code ? nlohmann::json(*j.exit_code) : nlohmann::json()},
          {"reason", j.reason},
          {"argv", j.argv},
          {"slurm_job_id",
           j.slurm_job_id.empty() ? nlohmann::json() : nlohmann::json(j.slurm_job_id)},
          {"slurm_state", nlohmann::json()}};
      if (auto it = slurm.find(j.slurm_job_id); it != slurm.end())
        row["slurm_state"] = it->second.state;
      out.push_back(row);
    }
    nlohmann::json top = {{"jobs", out}, {"data_dir", data_dir}};
    if (!slurm_error.empty()) top["slurm_error"] = slurm_error;
    PrintJson(ctx, top);
    return Status::Ok();
  }
  if (jobs.empty()) {
    ctx.out << "No jobs in " << data_dir << " (fulcrum run / fulcrum submit start one).\n";
    return Status::Ok();
  }
  Table table({"JOB", "STATE", "QUEUE", "GPUS", "RESTARTS", "STEP", "CHECKPOINT", "HEARTBEAT",
               "SPEND", "BUDGET"},
              {Align::kLeft, Align::kLeft, Align::kLeft, Align::kLeft, Align::kRight, Align::kRight,
               Align::kLeft, Align::kLeft, Align::kRight, Align::kRight});
  std::vector<std::string> notes;
  for (const auto& j : jobs) {
    std::string gpus;
    for (int g : j.gpus) gpus += (gpus.empty() ? "" : ",") + std::to_string(g);
    if (gpus.empty())
      gpus = j.gpus_requested > 0 ? std::to_string(j.gpus_requested) + " wanted" : "-";
    std::string state = j.state;
    std::string queue = j.queue;
    if (auto it = slurm.find(j.slurm_job_id); it != slurm.end()) {
      queue = "slurm " + j.slurm_job_id;
      if (!store::IsActiveState(j.state) || j.state == "queued") state = ToLower(it->second.state);
    }
    table.AddRow({j.id, state, queue, gpus, std::to_string(j.restarts),
                  j.step ? std::to_string(*j.step) : "-",
                  Age(store::AgeSeconds(j.last_checkpoint_at, now)),
                  Age(store::AgeSeconds(j.heartbeat_at, now)),
                  j.price_per_hour_usd || j.spend_usd > 0 ? FormatUsd(j.spend_usd) : "-",
                  j.budget_usd ? FormatUsd(*j.budget_usd) : "-"});
    if (!j.reason.empty()) notes.push_back(j.id + ": " + j.reason);
  }
  ctx.out << table.Render();
  if (!notes.empty()) ctx.out << "\n";
  for (const auto& n : notes) ctx.out << n << "\n";
  if (!slurm_error.empty()) ctx.out << "Slurm: " << slurm_error << "\n";
  return Status::Ok();
}

}  // namespace

void RegisterStatus(CLI::App* cmd, CliContext& ctx) {
  auto data_dir = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  auto all = std::make_shared<bool>(false);
  cmd->description(
      "List supervised jobs (fulcrum run, the local queue, Slurm): state, GPUs, restarts, last\n"
      "step, checkpoint age, heartbeat age, spend and budget. Slurm jobs also show their\n"
      "squeue/sacct state. Finished jobs older than a day are hidden unless --all.");
  cmd->footer(
      "Examples:\n  fulcrum status\n  fulcrum status --json | jq '.jobs[] | {id, state, restarts}'");
  cmd->add_option("--data-dir", *data_dir, "Shared data dir holding jobs.db (as for fulcrum run)")
      ->type_name("DIR");
  cmd->add_flag(
      "--json", *json,
      "Print {\"jobs\": [{id, state, queue, gpus, step, restarts, last_checkpoint_age_seconds, "
      "spend_usd, budget_usd, heartbeat_age_seconds, slurm_state, ...}]}");
  cmd->add_flag("--all", *all, "Also list jobs that finished more than a day ago");
  cmd->callback([&ctx, data_dir, json, all] {
    Status s = ShowStatus(ctx, *data_dir, *json, *all);
    if (!s.ok()) ReportError(ctx, s);
  });
}

}  // namespace fulcrum::cli
