// The one job view: status --json and /v1/jobs both render JobJson, so one row gives one object.
#include "store/job_view.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

namespace fulcrum::store {
namespace {

JobRecord Unpriced() {
  JobRecord job;
  job.id = job.name = "no-price";
  job.state = JobState::kSucceeded;
  job.queue = "run";
  job.generation = 1;
  job.start = JobStart::kNew;
  return job;
}

TEST(JobViewTest, SpendIsNullWithoutAPriceAndAValueWithOne) {
  // The reported drift: /v1/jobs said 0 where status said null for a job without a price.
  EXPECT_TRUE(JobJson(Unpriced(), 0)["spend_usd"].is_null());
  JobRecord priced = Unpriced();
  priced.price_per_hour_usd = 3.6;
  EXPECT_EQ(JobJson(priced, 0)["spend_usd"], 0.0) << "priced: nothing spent yet is a known 0";
  priced.spend_usd = 1.25;
  EXPECT_EQ(JobJson(priced, 0)["spend_usd"], 1.25);
}

TEST(JobViewTest, IdentityAndAges) {
  JobRecord job = Unpriced();
  job.generation = 2;
  job.start = JobStart::kContinued;
  job.heartbeat_at = 90;
  auto view = JobJson(job, 100);
  EXPECT_EQ(view["uid"], "no-price.2");
  EXPECT_EQ(view["start"], "continued");
  EXPECT_EQ(view["state"], "succeeded");
  EXPECT_EQ(view["heartbeat_age_seconds"], 10.0);
  EXPECT_FALSE(view.contains("argv")) << "command lines stay out of the shared view";
  EXPECT_TRUE(view["slurm_state"].is_null());
  EXPECT_EQ(JobJson(job, 100, std::string("RUNNING"))["slurm_state"], "RUNNING");
}

TEST(JobViewTest, ActiveJobWithADeadSupervisorIsLost) {
  JobRecord job = Unpriced();
  job.state = JobState::kRunning;
  pid_t child = fork();
  if (child == 0) _exit(0);
  ASSERT_GT(child, 0);
  waitpid(child, nullptr, 0);  // a pid that is gone
  job.supervisor_pid = child;
  auto view = JobJson(job, 0);
  EXPECT_EQ(view["state"], "lost");
  EXPECT_NE(view["reason"].get<std::string>().find("is gone"), std::string::npos);
  job.supervisor_pid = getpid();
  EXPECT_EQ(JobJson(job, 0)["state"], "running");
}

TEST(JobViewTest, ThePlanAndItsReQuoteAreInTheSharedView) {
  JobRecord job = Unpriced();
  for (const char* field : {"planned_step_seconds", "measured_step_seconds", "progress_fraction",
                            "eta_seconds", "eta_p90_seconds", "projected_cost_usd",
                            "projected_cost_p90_usd", "deadline_met_probability"}) {
    ASSERT_TRUE(JobJson(job, 0).contains(field)) << field;
    EXPECT_TRUE(JobJson(job, 0)[field].is_null()) << field << ": unknown without a plan";
  }
  job.state = JobState::kRunning;
  job.supervisor_pid = getpid();
  job.price_per_hour_usd = 3600;
  job.step = 50;
  job.plan.step_seconds = 2;
  job.plan.total_steps = 100;
  job.plan.deadline_at = 1000;
  job.measured.step_seconds = 4;
  auto view = JobJson(job, 500);
  EXPECT_EQ(view["planned_step_seconds"], 2.0);
  EXPECT_EQ(view["measured_step_seconds"], 4.0);
  EXPECT_EQ(view["speed_vs_plan"], 0.5);
  EXPECT_EQ(view["progress_fraction"], 0.5);
  EXPECT_EQ(view["eta_seconds"], 200.0);
  EXPECT_GT(view["eta_p90_seconds"].get<double>(), 200.0);
  EXPECT_EQ(view["projected_cost_usd"], 200.0) << "nothing spent + 200 s at $1/s";
  EXPECT_GT(view["deadline_met_probability"].get<double>(), 0.5) << "200 s of the 500 s left";
}

TEST(JobViewTest, SkippedCheckpointsSpotOutlookAndAgentFigures) {
  JobRecord job = Unpriced();
  auto bare = JobJson(job, 0);
  EXPECT_EQ(bare["skipped_checkpoints"], nlohmann::json::array());
  EXPECT_EQ(bare["preemptions"], 0);
  EXPECT_TRUE(bare["spot_interruptions_per_hour"].is_null()) << "not on spot";
  EXPECT_TRUE(bare["measured_peak_bytes_per_gpu"].is_null());
  job.skipped_checkpoints = {{"checkpoint-1500", "no trainer_state.json"}};
  job.measured.agent_reason = "no local agent (--agent none)";
  job.plan.pricing = "spot";
  job.plan.total_hours = 1;
  job.plan.interruptions = 0.5;
  job.preemptions = 1;
  job.created_at = 0;
  auto view = JobJson(job, 3600);
  ASSERT_EQ(view["skipped_checkpoints"].size(), 1u);
  EXPECT_EQ(view["skipped_checkpoints"][0]["name"], "checkpoint-1500");
  EXPECT_EQ(view["skipped_checkpoints"][0]["reason"], "no trainer_state.json");
  EXPECT_EQ(view["agent_figures_reason"], "no local agent (--agent none)");
  EXPECT_TRUE(view["measured_power_watts"].is_null()) << "unknown, with the reason beside it";
  EXPECT_EQ(view["planned_pricing"], "spot");
  EXPECT_EQ(view["preemptions"], 1);
  EXPECT_EQ(view["spot_model_interruptions_per_hour"], 0.5);
  EXPECT_EQ(view["spot_interruptions_per_hour"], 0.75) << "(1 + 0.5 x 1 h) / (1 h + 1 h)";
}

}  // namespace
}  // namespace fulcrum::store
