#include "store/jobs_projection.h"

#include <algorithm>
#include <cmath>

namespace fulcrum::store {
namespace {

constexpr double kZ90 = 1.2815515655446004;  // standard normal 90th percentile

double NormalCdf(double z) { return 0.5 * std::erfc(-z / std::sqrt(2.0)); }

// P(X <= limit) for X = median * exp(sigma Z).
double ProbabilityAtMost(double median, double sigma, double limit) {
  if (limit <= 0) return median <= 0 ? 1.0 : 0.0;
  if (median <= 0) return 1.0;
  if (sigma <= 0) return median <= limit ? 1.0 : 0.0;
  return NormalCdf(std::log(limit / median) / sigma);
}

// Fills the spot rates of `p`: the model's and the one after the preemptions seen (nothing for a
// job that is not on spot and was never preempted).
void SpotRates(const JobRecord& job, double now, JobProjection& p) {
  const JobPlan& plan = job.plan;
  if (plan.pricing != "spot" && job.preemptions == 0) return;
  const double planned_hours = plan.total_hours.value_or(0);
  const double model_rate =
      plan.interruptions && planned_hours > 0 ? *plan.interruptions / planned_hours : 0;
  double run_hours = 0;
  if (job.price_per_hour_usd && *job.price_per_hour_usd > 0) {
    run_hours = job.spend_usd / *job.price_per_hour_usd;
  } else if (job.created_at) {
    run_hours = std::max(0.0, now - *job.created_at) / 3600;
  }
  p.spot_model_interruptions_per_hour = model_rate;
  if (run_hours + planned_hours <= 0) return;
  p.spot_interruptions_per_hour =
      (job.preemptions + model_rate * planned_hours) / (run_hours + planned_hours);
  if (plan.checkpoint_interval_seconds && *plan.checkpoint_interval_seconds > 0) {
    p.seconds_lost_per_interruption = *plan.checkpoint_interval_seconds / 2;
  }
}

}  // namespace

JobProjection ProjectJob(const JobRecord& job, double now) {
  JobProjection p;
  const JobPlan& plan = job.plan;
  p.planned_step_seconds = plan.step_seconds;
  p.measured_step_seconds = job.measured.step_seconds;
  if (plan.step_seconds && job.measured.step_seconds && *job.measured.step_seconds > 0) {
    p.speed_vs_plan = *plan.step_seconds / *job.measured.step_seconds;
  }
  SpotRates(job, now, p);
  if (!plan.total_steps || *plan.total_steps <= 0) return p;
  const double total = static_cast<double>(*plan.total_steps);
  const double done = std::clamp(static_cast<double>(job.step.value_or(0)), 0.0, total);
  p.progress_fraction = done / total;
  if (IsFinishedState(EffectiveState(job))) return p;
  const std::optional<double> step_seconds =
      job.measured.step_seconds ? job.measured.step_seconds : plan.step_seconds;
  if (!step_seconds) return p;
  double sigma = kDefaultStepSigma;
  if (plan.step_seconds && plan.step_seconds_p90 && *plan.step_seconds > 0 &&
      *plan.step_seconds_p90 > *plan.step_seconds) {
    sigma = std::log(*plan.step_seconds_p90 / *plan.step_seconds) / kZ90;
  }
  sigma *= std::sqrt(1 - *p.progress_fraction);
  const double work_seconds = (total - done) * *step_seconds;
  const double n = p.spot_interruptions_per_hour.value_or(0) * work_seconds / 3600;
  if (p.spot_interruptions_per_hour) p.expected_remaining_interruptions = n;
  const double lost = p.seconds_lost_per_interruption.value_or(0);
  const double eta = work_seconds + n * lost;
  p.eta_seconds = eta;
  p.eta_p90_seconds = work_seconds * std::exp(kZ90 * sigma) + (n + kZ90 * std::sqrt(n)) * lost;
  if (plan.deadline_at) {
    const double left = *plan.deadline_at - now;
    p.deadline_met_probability = ProbabilityAtMost(eta, sigma, left);
    p.deadline_miss_seconds = eta - left;
  }
  if (job.price_per_hour_usd) {
    const double per_second = *job.price_per_hour_usd / 3600;
    p.projected_cost_usd = job.spend_usd + eta * per_second;
    p.projected_cost_p90_usd = job.spend_usd + *p.eta_p90_seconds * per_second;
    if (job.budget_usd && per_second > 0) {
      const double affordable_seconds = (*job.budget_usd - job.spend_usd) / per_second;
      p.budget_exceeded_probability = 1 - ProbabilityAtMost(eta, sigma, affordable_seconds);
    }
  }
  return p;
}

}  // namespace fulcrum::store
