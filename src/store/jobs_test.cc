#include "store/jobs.h"

#include <gtest/gtest.h>

#include <filesystem>

namespace fulcrum::store {
namespace {

std::string TempDir(const std::string& name) {
  auto dir = std::filesystem::path(FULCRUM_BUILD_DIR) / "Testing" / "tmp" / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

JobRecord SampleJob() {
  JobRecord job;
  job.id = "train-a";
  job.name = "train-a";
  job.state = JobState::kRunning;
  job.argv = {"python", "train.py", "--lr", "3e-4"};
  job.gpus = {0, 2};
  job.budget_usd = 100;
  job.price_per_hour_usd = 3.6;
  job.created_at = 1000;
  job.started_at = 1001;
  return job;
}

// Takes a file at the current schema back to schema 4 (before the offer, agent and prediction
// columns), as a file written by the previous release looks.
void DropSchema5(JobsDb& db) {
  for (const char* column :
       {"planned_provider", "planned_instance_type", "planned_gpu", "planned_gpus_per_node",
        "planned_nodes", "planned_pricing", "measured_peak_bytes_per_gpu",
        "measured_gpu_utilization_pct", "measured_power_watts", "agent_reason", "preemptions",
        "skipped_checkpoints_json", "planned_interruptions",
        "planned_checkpoint_interval_seconds"}) {
    ASSERT_TRUE(db.db().Exec(std::string("ALTER TABLE jobs DROP COLUMN ") + column).ok());
  }
  ASSERT_TRUE(db.db().Exec("DROP TABLE predictions").ok());
}

TEST(JobsDbTest, RoundTripsAJobAndItsHistory) {
  auto db = JobsDb::Open(":memory:");
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  ASSERT_TRUE(db->UpsertJob(SampleJob()).ok());
  ASSERT_TRUE(db->SetHeartbeat("train-a", 1010, 42).ok());
  ASSERT_TRUE(db->SetHeartbeat("train-a", 1011, std::nullopt).ok());  // keeps the step
  ASSERT_TRUE(db->AddRestart({"train-a", 1020, 1, std::nullopt, "exit 1"}).ok());
  ASSERT_TRUE(db->AddCheckpoint({"train-a", "/ckpt/step-40", 1030, 12.5}).ok());

  auto jobs = db->ListJobs();
  ASSERT_TRUE(jobs.ok());
  ASSERT_EQ(jobs->size(), 1u);
  const JobRecord& job = jobs->front();
  EXPECT_EQ(job.argv, (std::vector<std::string>{"python", "train.py", "--lr", "3e-4"}));
  EXPECT_EQ(job.gpus, (std::vector<int>{0, 2}));
  EXPECT_EQ(job.step, 42);
  EXPECT_EQ(job.heartbeat_at, 1011);
  EXPECT_EQ(job.budget_usd, 100);
  EXPECT_FALSE(job.finished_at.has_value());
  EXPECT_FALSE(job.exit_code.has_value());

  auto restarts = db->ListRestarts("train-a");
  ASSERT_TRUE(restarts.ok());
  ASSERT_EQ(restarts->size(), 1u);
  EXPECT_EQ((*restarts)[0].exit_code, 1);
  EXPECT_FALSE((*restarts)[0].signal.has_value());
  auto checkpoints = db->ListCheckpoints("train-a");
  ASSERT_TRUE(checkpoints.ok());
  ASSERT_EQ(checkpoints->size(), 1u);
  EXPECT_EQ((*checkpoints)[0].duration_seconds, 12.5);
}

TEST(JobsDbTest, LedgerSplitsByUtcDayAndAddsToTheTotal) {
  auto db = JobsDb::Open(":memory:");
  ASSERT_TRUE(db.ok());
  ASSERT_TRUE(db->UpsertJob(SampleJob()).ok());
  // 1700006399 = 2023-11-14 23:59:59 UTC; one second later is the 15th.
  ASSERT_TRUE(db->AddSpend("train-a", 1700006399, 1, 0.001).ok());
  ASSERT_TRUE(db->AddSpend("train-a", 1700006399, 1, 0.001).ok());
  ASSERT_TRUE(db->AddSpend("train-a", 1700006400, 1, 0.001).ok());
  auto rows = db->SpendByDay();
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->size(), 2u);
  EXPECT_EQ((*rows)[0].day, "2023-11-14");
  EXPECT_DOUBLE_EQ((*rows)[0].seconds, 2);
  EXPECT_EQ((*rows)[1].day, "2023-11-15");
  auto job = db->GetJob("train-a");
  ASSERT_TRUE(job.ok() && job->has_value());
  EXPECT_NEAR((*job)->spend_usd, 0.003, 1e-12);
}

TEST(JobsDbTest, ReadOnlyOpenSeesWritesAndRefusesMissingFile) {
  std::string dir = TempDir("jobs_db_ro");
  auto missing = JobsDb::OpenInDataDir(dir, /*read_only=*/true);
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  auto writer = JobsDb::OpenInDataDir(dir);
  ASSERT_TRUE(writer.ok()) << writer.status().ToString();
  ASSERT_TRUE(writer->UpsertJob(SampleJob()).ok());
  ASSERT_TRUE(
      writer->AddAlert({0, "train-a", "stall", "warning", "no progress for 10m", 1050}).ok());
  auto reader = JobsDb::OpenInDataDir(dir, /*read_only=*/true);
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  auto jobs = reader->ListJobs();
  ASSERT_TRUE(jobs.ok());
  EXPECT_EQ(jobs->size(), 1u);
  auto alerts = reader->ListAlerts(1000);
  ASSERT_TRUE(alerts.ok());
  ASSERT_EQ(alerts->size(), 1u);
  EXPECT_EQ((*alerts)[0].name, "stall");
  EXPECT_TRUE(reader->ListAlerts(1051)->empty());
  EXPECT_FALSE(reader->UpsertJob(SampleJob()).ok());  // read-only really is
  std::filesystem::remove_all(dir);
}

// The agent reads jobs.db read-only and may start before any new `fulcrum run` migrated it: a
// file at the previous schema (2: no child_pgid, child_start_ticks) must still list its jobs.
TEST(JobsDbTest, AReadOnlyReaderReadsAFileAtAnOlderSchema) {
  const std::string path = TempDir("jobs-old-schema") + "/jobs.db";
  {
    auto writer = JobsDb::Open(path);
    ASSERT_TRUE(writer.ok()) << writer.status().message();
    ASSERT_TRUE(writer->UpsertJob(SampleJob()).ok());
    // Back to schema 2, as a file written by the previous release looks.
    ASSERT_TRUE(writer->db().Exec("ALTER TABLE jobs DROP COLUMN child_pgid").ok());
    ASSERT_TRUE(writer->db().Exec("ALTER TABLE jobs DROP COLUMN child_start_ticks").ok());
    ASSERT_TRUE(writer->db().Exec("PRAGMA user_version = 2").ok());
  }
  auto reader = JobsDb::Open(path, /*read_only=*/true);
  ASSERT_TRUE(reader.ok()) << reader.status().message();
  auto jobs = reader->ListJobs();
  ASSERT_TRUE(jobs.ok()) << jobs.status().message();
  ASSERT_EQ(jobs->size(), 1u);
  EXPECT_EQ((*jobs)[0].id, "train-a");
  EXPECT_FALSE((*jobs)[0].child_pgid);
  auto job = reader->GetJob("train-a");
  ASSERT_TRUE(job.ok() && job->has_value()) << job.status().message();
  EXPECT_EQ((**job).started_at, SampleJob().started_at) << "'start' is not 'started_at'";
}

TEST(JobsDbTest, RoundTripsThePlanAndTheMeasurement) {
  auto db = JobsDb::Open(":memory:");
  ASSERT_TRUE(db.ok());
  JobRecord job = SampleJob();
  job.plan.layout = "hyperbolic/1x-H100 x1 on_demand: tp1 pp1 dp1 zero0 mb2 (hf)";
  job.plan.step_seconds = 9.3;
  job.plan.step_seconds_p90 = 12.3;
  job.plan.tokens_per_step = 131072;
  job.plan.total_steps = 3815;
  job.plan.peak_bytes_per_gpu = 5.1e10;
  job.plan.total_hours = 10.0;
  job.plan.total_hours_p90 = 13.2;
  job.plan.cost_usd = 12.96;
  job.plan.cost_p90_usd = 17.05;
  job.plan.deadline_at = 1.8e9;
  ASSERT_TRUE(db->UpsertJob(job).ok());
  JobMeasure measure;
  measure.step_seconds = 13.1;
  measure.tokens_per_second = 10005.5;
  measure.tokens = 123456;
  ASSERT_TRUE(db->SetMeasure(job.id, measure).ok());
  auto back = db->GetJob(job.id);
  ASSERT_TRUE(back.ok() && back->has_value());
  const JobPlan& p = (**back).plan;
  EXPECT_EQ(p.layout, job.plan.layout);
  EXPECT_EQ(p.step_seconds, 9.3);
  EXPECT_EQ(p.step_seconds_p90, 12.3);
  EXPECT_EQ(p.tokens_per_step, 131072);
  EXPECT_EQ(p.total_steps, 3815);
  EXPECT_EQ(p.peak_bytes_per_gpu, 5.1e10);
  EXPECT_EQ(p.total_hours, 10.0);
  EXPECT_EQ(p.total_hours_p90, 13.2);
  EXPECT_EQ(p.cost_usd, 12.96);
  EXPECT_EQ(p.cost_p90_usd, 17.05);
  EXPECT_EQ(p.deadline_at, 1.8e9);
  EXPECT_EQ((**back).measured.step_seconds, 13.1);
  EXPECT_EQ((**back).measured.tokens_per_second, 10005.5);
  EXPECT_EQ((**back).measured.tokens, 123456);
  JobRecord bare = SampleJob();
  bare.id = "bare";
  ASSERT_TRUE(db->UpsertJob(bare).ok());
  auto plain = db->GetJob("bare");
  EXPECT_FALSE((**plain).plan.step_seconds) << "unknown is not zero";
  EXPECT_FALSE((**plain).measured.step_seconds);
}

// A file at schema 3 (before the plan columns) is migrated by a writer and keeps its jobs.
TEST(JobsDbTest, AWriterMigratesASchema3FileToThePlanColumns) {
  const std::string path = TempDir("jobs-schema3") + "/jobs.db";
  {
    auto writer = JobsDb::Open(path);
    ASSERT_TRUE(writer.ok()) << writer.status().message();
    ASSERT_TRUE(writer->UpsertJob(SampleJob()).ok());
    DropSchema5(*writer);
    for (const char* column :
         {"planned_layout", "planned_step_seconds", "planned_step_seconds_p90",
          "planned_tokens_per_step", "planned_total_steps", "planned_peak_bytes_per_gpu",
          "planned_total_hours", "planned_total_hours_p90", "planned_cost_usd",
          "planned_cost_p90_usd", "deadline_at", "measured_step_seconds",
          "measured_tokens_per_second", "tokens"}) {
      ASSERT_TRUE(writer->db().Exec(std::string("ALTER TABLE jobs DROP COLUMN ") + column).ok());
    }
    ASSERT_TRUE(writer->db().Exec("PRAGMA user_version = 3").ok());
  }
  {
    auto reader = JobsDb::Open(path, /*read_only=*/true);
    ASSERT_TRUE(reader.ok()) << reader.status().message();
    auto jobs = reader->ListJobs();
    ASSERT_TRUE(jobs.ok()) << jobs.status().message();
    ASSERT_EQ(jobs->size(), 1u);
    EXPECT_FALSE((*jobs)[0].plan.step_seconds);
  }
  auto writer = JobsDb::Open(path);
  ASSERT_TRUE(writer.ok()) << writer.status().message();
  EXPECT_EQ(*writer->db().UserVersion(), JobsDb::kSchemaVersion);
  JobMeasure measure;
  measure.step_seconds = 2.0;
  ASSERT_TRUE(writer->SetMeasure("train-a", measure).ok());
  auto job = writer->GetJob("train-a");
  ASSERT_TRUE(job.ok() && job->has_value());
  EXPECT_EQ((**job).measured.step_seconds, 2.0);
  EXPECT_EQ((**job).argv, SampleJob().argv);
}

TEST(JobsDbTest, RoundTripsTheSchema5Fields) {
  auto db = JobsDb::Open(":memory:");
  ASSERT_TRUE(db.ok());
  JobRecord job = SampleJob();
  job.plan.provider = "azure";
  job.plan.instance_type = "Standard_NC24ads_A100_v4";
  job.plan.gpu = "A100-PCIe-80GB";
  job.plan.gpus_per_node = 1;
  job.plan.nodes = 2;
  job.plan.pricing = "spot";
  job.plan.interruptions = 0.8;
  job.plan.checkpoint_interval_seconds = 1800;
  job.preemptions = 3;
  job.skipped_checkpoints = {{"step-40", "no COMPLETE marker"}};
  ASSERT_TRUE(db->UpsertJob(job).ok());
  JobMeasure m;
  m.step_seconds = 1.5;
  m.peak_bytes_per_gpu = 4.2e10;
  m.agent_reason = "GPU 0 is shared with another process: utilisation and power not the job's";
  ASSERT_TRUE(db->SetMeasure(job.id, m).ok());
  ASSERT_TRUE(db->SetSkippedCheckpoints(job.id, {{"a", "x"}, {"b", "y"}}).ok());
  auto back = db->GetJob(job.id);
  ASSERT_TRUE(back.ok() && back->has_value());
  const JobRecord& r = **back;
  EXPECT_EQ(r.plan.provider, "azure");
  EXPECT_EQ(r.plan.instance_type, "Standard_NC24ads_A100_v4");
  EXPECT_EQ(r.plan.gpu, "A100-PCIe-80GB");
  EXPECT_EQ(r.plan.gpus_per_node, 1);
  EXPECT_EQ(r.plan.nodes, 2);
  EXPECT_EQ(r.plan.pricing, "spot");
  EXPECT_EQ(r.preemptions, 3);
  EXPECT_EQ(r.plan.interruptions, 0.8);
  EXPECT_EQ(r.plan.checkpoint_interval_seconds, 1800);
  EXPECT_EQ(r.measured.peak_bytes_per_gpu, 4.2e10);
  EXPECT_FALSE(r.measured.power_watts);
  EXPECT_EQ(r.measured.agent_reason, m.agent_reason);
  ASSERT_EQ(r.skipped_checkpoints.size(), 2u);
  EXPECT_EQ(r.skipped_checkpoints[1].name, "b");
  EXPECT_EQ(r.skipped_checkpoints[1].reason, "y");
}

// A finished run's predictions are for the work it did, never for the whole plan.
TEST(JobsDbTest, PredictionLogScalesThePlanToTheWorkDone) {
  JobRecord job = SampleJob();
  job.state = JobState::kSucceeded;
  job.generation = 2;
  job.finished_at = 5000;
  job.step = 25;
  job.plan.total_steps = 100;
  job.plan.step_seconds = 0.5;
  job.plan.total_hours = 2.0;
  job.plan.cost_usd = 8.0;
  job.plan.gpu = "H100-SXM5-80GB";
  job.plan.gpus_per_node = 8;
  job.measured.step_seconds = 0.7;
  job.price_per_hour_usd = 6.0;
  job.spend_usd = 3.0;
  auto r = PredictionOf(job);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->uid, "train-a.2");
  EXPECT_EQ(r->work_fraction, 0.25);
  EXPECT_EQ(r->predicted_hours, 0.5);
  EXPECT_EQ(r->predicted_cost_usd, 2.0);
  EXPECT_EQ(r->measured_hours, 0.5) << "$3 billed at $6/h";
  EXPECT_EQ(r->measured_cost_usd, 3.0);
  EXPECT_FALSE(r->measured_peak_bytes_per_gpu) << "no agent: unknown";
  JobRecord unplanned = SampleJob();
  EXPECT_FALSE(PredictionOf(unplanned)) << "nothing was predicted";
  JobRecord unpriced = job;
  unpriced.price_per_hour_usd.reset();
  unpriced.started_at = 5000 - 900;
  EXPECT_EQ(PredictionOf(unpriced)->measured_hours, 0.25) << "no price: the run's wall time";
  EXPECT_FALSE(PredictionOf(unpriced)->measured_cost_usd);

  auto db = JobsDb::Open(":memory:");
  ASSERT_TRUE(db.ok());
  ASSERT_TRUE(db->AddPrediction(*r).ok());
  ASSERT_TRUE(db->AddPrediction(*r).ok()) << "the same uid replaces its row";
  auto log = db->ListPredictions();
  ASSERT_TRUE(log.ok()) << log.status().message();
  ASSERT_EQ(log->size(), 1u);
  EXPECT_EQ((*log)[0].gpu, "H100-SXM5-80GB");
  EXPECT_EQ((*log)[0].gpus_per_node, 8);
  EXPECT_EQ((*log)[0].measured_step_seconds, 0.7);
  EXPECT_EQ((*log)[0].predicted_cost_usd, 2.0);
}

// A reader of a schema-4 file (the agent before a new `fulcrum run` migrated it) reads the
// schema-5 columns as their defaults and an empty prediction log.
TEST(JobsDbTest, AReadOnlyReaderOfASchema4FileHasNoPredictions) {
  const std::string path = TempDir("jobs-schema4") + "/jobs.db";
  {
    auto writer = JobsDb::Open(path);
    ASSERT_TRUE(writer.ok()) << writer.status().message();
    ASSERT_TRUE(writer->UpsertJob(SampleJob()).ok());
    DropSchema5(*writer);
    ASSERT_TRUE(writer->db().Exec("PRAGMA user_version = 4").ok());
  }
  auto reader = JobsDb::Open(path, /*read_only=*/true);
  ASSERT_TRUE(reader.ok()) << reader.status().message();
  auto jobs = reader->ListJobs();
  ASSERT_TRUE(jobs.ok()) << jobs.status().message();
  ASSERT_EQ(jobs->size(), 1u);
  EXPECT_EQ((*jobs)[0].preemptions, 0);
  EXPECT_TRUE((*jobs)[0].skipped_checkpoints.empty());
  auto log = reader->ListPredictions();
  ASSERT_TRUE(log.ok()) << log.status().message();
  EXPECT_TRUE(log->empty());
  auto writer = JobsDb::Open(path);
  ASSERT_TRUE(writer.ok()) << writer.status().message();
  EXPECT_EQ(*writer->db().UserVersion(), 5);
  EXPECT_TRUE(writer->ListPredictions().ok());
}

TEST(JobsDbTest, AgesAndActiveStates) {
  EXPECT_EQ(AgeSeconds(100.0, 130.0), 30.0);
  EXPECT_FALSE(AgeSeconds(std::nullopt, 130.0).has_value());
  EXPECT_TRUE(IsActiveState(JobState::kRunning));
  EXPECT_TRUE(IsActiveState(JobState::kQueued));
  EXPECT_FALSE(IsActiveState(JobState::kSucceeded));
  EXPECT_FALSE(IsActiveState(JobState::kCrashLoop));
}

TEST(JobsDbTest, StatesRoundTripByName) {
  for (JobState s : {JobState::kQueued, JobState::kStarting, JobState::kRunning, JobState::kBackoff,
                     JobState::kCheckpointing, JobState::kSucceeded, JobState::kFailed,
                     JobState::kStopped, JobState::kCrashLoop, JobState::kLost}) {
    EXPECT_EQ(ParseJobState(JobStateName(s)), s) << JobStateName(s);
  }
  EXPECT_FALSE(ParseJobState("paused").has_value());
  EXPECT_TRUE(IsFinishedState(JobState::kFailed));
  EXPECT_FALSE(IsFinishedState(JobState::kStopped)) << "a stopped job is continued";
  auto db = JobsDb::Open(":memory:");
  ASSERT_TRUE(db.ok());
  JobRecord job = SampleJob();
  job.state = JobState::kCrashLoop;
  job.generation = 3;
  job.start = JobStart::kContinued;
  ASSERT_TRUE(db->UpsertJob(job).ok());
  auto back = db->GetJob("train-a");
  ASSERT_TRUE(back.ok() && back->has_value());
  EXPECT_EQ((*back)->state, JobState::kCrashLoop);
  EXPECT_EQ((*back)->generation, 3);
  EXPECT_EQ((*back)->start, JobStart::kContinued);
  EXPECT_EQ((*back)->uid(), "train-a.3");
}

}  // namespace
}  // namespace fulcrum::store
