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

}  // namespace

JobProjection ProjectJob(const JobRecord& job, double now) {
  JobProjection p;
  const JobPlan& plan = job.plan;
  p.planned_step_seconds = plan.step_seconds;
  p.measured_step_seconds = job.measured.step_seconds;
  if (plan.step_seconds && job.measured.step_seconds && *job.measured.step_seconds > 0) {
    p.speed_vs_plan = *plan.step_seconds / *job.measured.step_seconds;
  }
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
  const double eta = (total - done) * *step_seconds;
  p.eta_seconds = eta;
  p.eta_p90_seconds = eta * std::exp(kZ90 * sigma);
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
