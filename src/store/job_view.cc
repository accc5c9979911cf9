#include "store/job_view.h"

#include "store/jobs_projection.h"

namespace fulcrum::store {
namespace {

template <typename T>
nlohmann::json Optional(const std::optional<T>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json();
}

nlohmann::json NonEmpty(const std::string& text) {
  return text.empty() ? nlohmann::json() : nlohmann::json(text);
}

}  // namespace

nlohmann::json SkippedCheckpointsJson(const std::vector<SkippedCheckpointRecord>& skipped) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& s : skipped) out.push_back({{"name", s.name}, {"reason", s.reason}});
  return out;
}

nlohmann::json JobJson(const JobRecord& j, double now,
                       const std::optional<std::string>& slurm_state) {
  const JobState state = EffectiveState(j);
  std::string reason = j.reason;
  if (state == JobState::kLost && j.state != JobState::kLost) {
    reason = "supervisor pid " + std::to_string(j.supervisor_pid.value_or(0)) + " is gone";
  }
  const JobProjection projection = ProjectJob(j, now);
  return {
      {"id", j.id},
      {"name", j.name},
      {"uid", j.generation > 0 ? nlohmann::json(j.uid()) : nlohmann::json()},
      {"generation", j.generation},
      {"start", j.start ? nlohmann::json(JobStartName(*j.start)) : nlohmann::json()},
      {"state", JobStateName(state)},
      {"queue", j.queue},
      {"gpus", j.gpus},
      {"gpus_requested", j.gpus_requested},
      {"step", Optional(j.step)},
      {"restarts", j.restarts},
      {"last_checkpoint", NonEmpty(j.last_checkpoint_path)},
      {"last_checkpoint_age_seconds", Optional(AgeSeconds(j.last_checkpoint_at, now))},
      // Unknown is not zero: without a price nothing was metered.
      {"spend_usd",
       j.price_per_hour_usd || j.spend_usd > 0 ? nlohmann::json(j.spend_usd) : nlohmann::json()},
      {"budget_usd", Optional(j.budget_usd)},
      {"price_per_hour_usd", Optional(j.price_per_hour_usd)},
      {"started_at", Optional(j.started_at)},
      {"finished_at", Optional(j.finished_at)},
      {"not_before", Optional(j.not_before)},
      {"heartbeat_age_seconds", Optional(AgeSeconds(j.heartbeat_at, now))},
      {"exit_code", Optional(j.exit_code)},
      {"reason", reason},
      {"slurm_job_id", NonEmpty(j.slurm_job_id)},
      {"slurm_state", Optional(slurm_state)},
      // The plan and its re-quote (issue 16); null without a plan or before a measurement.
      {"planned_layout", NonEmpty(j.plan.layout)},
      {"planned_tokens_per_step", Optional(j.plan.tokens_per_step)},
      {"planned_total_steps", Optional(j.plan.total_steps)},
      {"planned_peak_bytes_per_gpu", Optional(j.plan.peak_bytes_per_gpu)},
      {"planned_total_hours", Optional(j.plan.total_hours)},
      {"planned_total_hours_p90", Optional(j.plan.total_hours_p90)},
      {"planned_cost_usd", Optional(j.plan.cost_usd)},
      {"planned_cost_p90_usd", Optional(j.plan.cost_p90_usd)},
      {"deadline_at", Optional(j.plan.deadline_at)},
      {"planned_step_seconds", Optional(projection.planned_step_seconds)},
      {"measured_step_seconds", Optional(projection.measured_step_seconds)},
      {"measured_tokens_per_second", Optional(j.measured.tokens_per_second)},
      {"speed_vs_plan", Optional(projection.speed_vs_plan)},
      {"progress_fraction", Optional(projection.progress_fraction)},
      {"eta_seconds", Optional(projection.eta_seconds)},
      {"eta_p90_seconds", Optional(projection.eta_p90_seconds)},
      {"projected_cost_usd", Optional(projection.projected_cost_usd)},
      {"projected_cost_p90_usd", Optional(projection.projected_cost_p90_usd)},
      {"deadline_met_probability", Optional(projection.deadline_met_probability)},
      // The planned offer (schema 5), the spot outlook and the agent's per-process figures.
      {"planned_provider", NonEmpty(j.plan.provider)},
      {"planned_instance_type", NonEmpty(j.plan.instance_type)},
      {"planned_gpu", NonEmpty(j.plan.gpu)},
      {"planned_gpus_per_node", Optional(j.plan.gpus_per_node)},
      {"planned_nodes", Optional(j.plan.nodes)},
      {"planned_pricing", NonEmpty(j.plan.pricing)},
      {"preemptions", j.preemptions},
      {"spot_model_interruptions_per_hour", Optional(projection.spot_model_interruptions_per_hour)},
      {"spot_interruptions_per_hour", Optional(projection.spot_interruptions_per_hour)},
      {"expected_remaining_interruptions", Optional(projection.expected_remaining_interruptions)},
      {"seconds_lost_per_interruption", Optional(projection.seconds_lost_per_interruption)},
      {"measured_peak_bytes_per_gpu", Optional(j.measured.peak_bytes_per_gpu)},
      {"measured_gpu_utilization_pct", Optional(j.measured.gpu_utilization_pct)},
      {"measured_power_watts", Optional(j.measured.power_watts)},
      {"agent_figures_reason", NonEmpty(j.measured.agent_reason)},
      {"skipped_checkpoints", SkippedCheckpointsJson(j.skipped_checkpoints)},
  };
}

}  // namespace fulcrum::store
