// `fulcrum status`: the jobs of this data dir (run, local queue, Slurm) with state, GPUs,
// restarts, step, checkpoint age, heartbeat age and spend; Slurm jobs also show squeue/sacct.
#include <CLI/CLI.hpp>
#include <map>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cluster/slurm.h"
#include "core/clock.h"
#include "core/parse.h"
#include "core/table.h"
#include "store/gpu_shares.h"
#include "store/job_view.h"
#include "store/jobs.h"
#include "store/jobs_projection.h"
#include "supervise/run_flags.h"

namespace fulcrum::cli {
namespace {

std::string Age(const std::optional<double>& seconds) {
  return seconds ? FormatDuration(std::max(0.0, *seconds)) + " ago" : "-";
}

std::string Percent(double fraction) { return FormatNumber(100 * fraction, 0) + " %"; }

// One line of planned vs measured for a job that knows its plan: "" for one that does not.
std::string QuoteLine(const store::JobRecord& j, double now) {
  const store::JobProjection p = store::ProjectJob(j, now);
  if (!p.planned_step_seconds && !p.progress_fraction) return "";
  std::string line = j.id + ":";
  if (p.planned_step_seconds) {
    line += " step " + FormatNumber(*p.planned_step_seconds, 3) + " s planned";
    line += p.measured_step_seconds
                ? ", " + FormatNumber(*p.measured_step_seconds, 3) + " s measured (" +
                      FormatNumber(p.speed_vs_plan.value_or(0), 2) + " x planned speed)"
                : ", not measured yet";
  }
  if (p.progress_fraction) line += "; " + Percent(*p.progress_fraction) + " done";
  if (p.eta_seconds) {
    line += "; ETA " + FormatDuration(*p.eta_seconds) + " (P90 " +
            FormatDuration(p.eta_p90_seconds.value_or(*p.eta_seconds)) + ")";
  }
  if (p.projected_cost_usd) {
    line += "; projected " + FormatUsd(*p.projected_cost_usd) + " (P90 " +
            FormatUsd(p.projected_cost_p90_usd.value_or(*p.projected_cost_usd)) + ")";
  }
  if (p.deadline_met_probability)
    line += "; deadline met with " + Percent(*p.deadline_met_probability) + " probability";
  if (p.expected_remaining_interruptions) {
    line += "; spot: " + std::to_string(j.preemptions) + " preemption" +
            (j.preemptions == 1 ? "" : "s") + " so far, " +
            FormatNumber(*p.expected_remaining_interruptions, 1) + " more expected";
  }
  return line;
}

// "GPU 0, 30.0 GiB reserved (time-slicing), peak 12.1 GiB" for a job that shares a GPU.
std::string ShareLine(const store::GpuShareRecord& share, const store::JobRecord& j) {
  std::string line;
  if (!share.gpu) {
    line = "waits for " +
           (share.memory_bytes ? FormatBytes(*share.memory_bytes)
                               : FormatNumber(share.fraction.value_or(0), 2)) +
           " of one GPU";
  } else {
    line = "GPU " + std::to_string(*share.gpu);
    if (!share.mig_uuid.empty()) line += " MIG " + share.mig_profile + " " + share.mig_uuid;
    line += ", " + FormatBytes(share.reservation_bytes.value_or(0)) + " reserved (" +
            (share.mode == "time" ? std::string("time-slicing") : share.mode) + ")";
  }
  line += j.measured.peak_bytes_per_gpu ? ", peak " + FormatBytes(*j.measured.peak_bytes_per_gpu)
                                        : ", peak unknown";
  if (share.over_at) line += "; over its reservation";
  return line;
}

Status ShowStatus(CliContext& ctx, const std::string& data_dir_flag, bool json, bool all) {
  const std::string data_dir = store::ResolveDataDir(data_dir_flag);
  std::vector<store::JobRecord> jobs;
  std::map<std::string, store::GpuShareRecord> shares;
  auto db = store::JobsDb::OpenInDataDir(data_dir, /*read_only=*/true);
  if (db.ok()) {
    FULCRUM_ASSIGN_OR_RETURN(jobs, db->ListJobs());
    FULCRUM_ASSIGN_OR_RETURN(auto rows, store::ListGpuShares(db->db()));
    for (auto& row : rows) shares[row.job_id] = std::move(row);
  } else if (db.status().code() != StatusCode::kNotFound) {
    return db.status();
  }
  const double now = SystemClock().UnixSeconds();
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
      const store::JobState state = store::EffectiveState(j);
      return !store::IsActiveState(state) && state != store::JobState::kLost && j.finished_at &&
             now - *j.finished_at > 24 * 3600;
    });
  }
  if (json) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& j : jobs) {
      std::optional<std::string> slurm_state;
      if (auto it = slurm.find(j.slurm_job_id); it != slurm.end()) slurm_state = it->second.state;
      nlohmann::json row = store::JobJson(j, now, slurm_state);
      row["argv"] = j.argv;  // the CLI's own addition (the API leaves command lines out)
      const auto receiver = supervise::ShownReceiver(j.run_options);  // redacted: a secret
      row["receiver"] = receiver ? nlohmann::json(*receiver) : nlohmann::json();
      auto share = shares.find(j.id);
      row["gpu_share"] =
          share == shares.end() ? nlohmann::json() : store::GpuShareJson(share->second);
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
    if (auto share = shares.find(j.id); share != shares.end()) {
      notes.push_back(j.id + ": " + ShareLine(share->second, j));
      if (share->second.gpu) gpus = std::to_string(*share->second.gpu) + " (shared)";
    }
    const nlohmann::json view = store::JobJson(j, now);
    const store::JobState effective = store::EffectiveState(j);
    std::string state(store::JobStateName(effective));
    if (j.start == store::JobStart::kContinued) state += " (continued)";
    std::string queue = j.queue;
    if (auto it = slurm.find(j.slurm_job_id); it != slurm.end()) {
      queue = "slurm " + j.slurm_job_id;
      if (!store::IsActiveState(effective) || effective == store::JobState::kQueued)
        state = ToLower(it->second.state);
    }
    table.AddRow({j.id, state, queue, gpus, std::to_string(j.restarts),
                  j.step ? std::to_string(*j.step) : "-",
                  Age(store::AgeSeconds(j.last_checkpoint_at, now)),
                  Age(store::AgeSeconds(j.heartbeat_at, now)),
                  view["spend_usd"].is_null() ? "-" : FormatUsd(view["spend_usd"].get<double>()),
                  j.budget_usd ? FormatUsd(*j.budget_usd) : "-"});
    if (const std::string reason = view["reason"]; !reason.empty())
      notes.push_back(j.id + ": " + reason);
    if (std::string quote = QuoteLine(j, now); !quote.empty()) notes.push_back(std::move(quote));
    for (const store::SkippedCheckpointRecord& skipped : j.skipped_checkpoints) {
      notes.push_back(j.id + ": skipped checkpoint " + skipped.name + ": " + skipped.reason);
    }
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
      "Examples:\n  fulcrum status\n  fulcrum status --json | jq '.jobs[] | {id, state, "
      "restarts}'");
  cmd->add_option("--data-dir", *data_dir, "Shared data dir holding jobs.db (as for fulcrum run)")
      ->type_name("DIR");
  cmd->add_flag(
      "--json", *json,
      "Print {\"jobs\": [{id, state, queue, gpus, step, restarts, last_checkpoint_age_seconds, "
      "spend_usd, budget_usd, heartbeat_age_seconds, slurm_state, planned_step_seconds, "
      "measured_step_seconds, progress_fraction, eta_seconds, eta_p90_seconds, "
      "projected_cost_usd, projected_cost_p90_usd, deadline_met_probability, preemptions, "
      "spot_interruptions_per_hour, expected_remaining_interruptions, "
      "measured_peak_bytes_per_gpu, measured_gpu_utilization_pct, measured_power_watts, "
      "agent_figures_reason, skipped_checkpoints: [{name, reason}], gpu_share: {gpu, "
      "reservation_bytes, mode, mig_uuid, mig_profile, memory_bytes, fraction, enforce, over_at} "
      "or null, ...}]}");
  cmd->add_flag("--all", *all, "Also list jobs that finished more than a day ago");
  cmd->callback([&ctx, data_dir, json, all] {
    Status s = ShowStatus(ctx, *data_dir, *json, *all);
    if (!s.ok()) ReportError(ctx, s);
  });
}

}  // namespace fulcrum::cli
