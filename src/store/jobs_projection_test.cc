#include "store/jobs_projection.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>

namespace fulcrum::store {
namespace {

constexpr double kNow = 1.8e9;

JobRecord Running(int64_t step) {
  JobRecord j;
  j.id = "train";
  j.state = JobState::kRunning;
  j.supervisor_pid = ::getpid();
  j.step = step;
  j.plan.step_seconds = 1.0;
  j.plan.step_seconds_p90 = 1.2;
  j.plan.total_steps = 1000;
  j.price_per_hour_usd = 3600;  // $1 per second
  j.spend_usd = 100;
  return j;
}

TEST(JobsProjectionTest, WithoutAMeasurementThePlanQuotesTheRest) {
  const JobProjection p = ProjectJob(Running(200), kNow);
  EXPECT_DOUBLE_EQ(*p.progress_fraction, 0.2);
  EXPECT_DOUBLE_EQ(*p.eta_seconds, 800);
  EXPECT_DOUBLE_EQ(*p.projected_cost_usd, 900);
  EXPECT_GT(*p.eta_p90_seconds, 800);
  EXPECT_GT(*p.projected_cost_p90_usd, 900);
  EXPECT_FALSE(p.measured_step_seconds);
  EXPECT_FALSE(p.speed_vs_plan);
  EXPECT_FALSE(p.deadline_met_probability) << "no deadline";
}

TEST(JobsProjectionTest, TheMeasuredSpeedDrivesTheQuoteAndTheOdds) {
  JobRecord j = Running(200);
  j.measured.step_seconds = 1.0 / 0.7;
  j.plan.deadline_at = kNow + 900;  // the plan's 800 s fit, 0.7 x speed needs 1143 s
  const JobProjection slow = ProjectJob(j, kNow);
  EXPECT_NEAR(*slow.speed_vs_plan, 0.7, 1e-12);
  EXPECT_NEAR(*slow.eta_seconds, 800 / 0.7, 1e-9);
  EXPECT_NEAR(*slow.deadline_miss_seconds, 800 / 0.7 - 900, 1e-9);
  EXPECT_LT(*slow.deadline_met_probability, 0.5);
  EXPECT_GT(*slow.deadline_met_probability, 0.0);

  j.measured.step_seconds = 1.0;
  const JobProjection on_plan = ProjectJob(j, kNow);
  EXPECT_GT(*on_plan.deadline_met_probability, 0.5);

  j.plan.deadline_at = kNow - 1;  // past, with work left
  EXPECT_EQ(*ProjectJob(j, kNow).deadline_met_probability, 0.0);
}

TEST(JobsProjectionTest, TheIntervalNarrowsAsTheRunProceeds) {
  auto relative_width = [](int64_t step) {
    const JobProjection p = ProjectJob(Running(step), kNow);
    return *p.eta_p90_seconds / *p.eta_seconds;
  };
  // At the start the spread is the plan's own P50..P90 (1.2).
  EXPECT_NEAR(relative_width(0), 1.2, 1e-9);
  EXPECT_LT(relative_width(500), relative_width(100));
  EXPECT_LT(relative_width(900), relative_width(500));
  const JobProjection end = ProjectJob(Running(1000), kNow);
  EXPECT_EQ(*end.eta_seconds, 0);
  EXPECT_EQ(*end.eta_p90_seconds, 0);
}

TEST(JobsProjectionTest, BudgetOddsFollowTheProjectedCost) {
  JobRecord j = Running(200);
  j.budget_usd = 2000;
  EXPECT_LT(*ProjectJob(j, kNow).budget_exceeded_probability, 0.01);
  j.budget_usd = 850;  // the projected $900 is over it
  EXPECT_GT(*ProjectJob(j, kNow).budget_exceeded_probability, 0.5);
}

TEST(JobsProjectionTest, UnknownStaysUnknown) {
  JobRecord j;
  j.state = JobState::kRunning;
  j.supervisor_pid = ::getpid();
  const JobProjection none = ProjectJob(j, kNow);
  EXPECT_FALSE(none.progress_fraction);
  EXPECT_FALSE(none.eta_seconds);
  EXPECT_FALSE(none.projected_cost_usd);
  JobRecord finished = Running(1000);
  finished.state = JobState::kSucceeded;
  const JobProjection done = ProjectJob(finished, kNow);
  EXPECT_EQ(*done.progress_fraction, 1.0);
  EXPECT_FALSE(done.eta_seconds) << "a finished job has no remaining time";
}

}  // namespace
}  // namespace fulcrum::store

namespace fulcrum::store {
namespace {

// A spot job: the model expects 1 interruption over its planned 1000 s (3.6 per hour); each loses
// half the planned 600 s checkpoint interval. Preemptions seen push the rate, and the remaining
// time, up; an on-demand job that was never preempted has no spot term.
TEST(JobsProjectionTest, PreemptionsSoFarAndTheSpotModelFeedTheInterval) {
  JobRecord j = Running(200);
  j.plan.pricing = "spot";
  j.plan.total_hours = 1000.0 / 3600;
  j.plan.interruptions = 1.0;
  j.plan.checkpoint_interval_seconds = 600;
  const JobProjection model = ProjectJob(j, kNow);  // 100 s billed so far, none seen
  EXPECT_NEAR(*model.spot_model_interruptions_per_hour, 3.6, 1e-9);
  EXPECT_NEAR(*model.spot_interruptions_per_hour, 1.0 / (1100.0 / 3600), 1e-9);
  const double n = *model.expected_remaining_interruptions;
  EXPECT_NEAR(n, *model.spot_interruptions_per_hour * 800 / 3600, 1e-9);
  EXPECT_EQ(model.seconds_lost_per_interruption, 300);
  EXPECT_NEAR(*model.eta_seconds, 800 + 300 * n, 1e-9);
  JobRecord preempted = j;
  preempted.preemptions = 3;
  const JobProjection seen = ProjectJob(preempted, kNow);
  EXPECT_NEAR(*seen.spot_interruptions_per_hour, 4.0 / (1100.0 / 3600), 1e-9);
  EXPECT_GT(*seen.eta_seconds, *model.eta_seconds);
  EXPECT_GT(*seen.eta_p90_seconds - *seen.eta_seconds, *model.eta_p90_seconds - *model.eta_seconds)
      << "more interruptions to come: a wider interval";
  const JobProjection on_demand = ProjectJob(Running(200), kNow);
  EXPECT_FALSE(on_demand.spot_interruptions_per_hour);
  EXPECT_DOUBLE_EQ(*on_demand.eta_seconds, 800);
}

}  // namespace
}  // namespace fulcrum::store
