// End-to-end test of the closed loop (issue 16): `fulcrum plan --json` quotes a small job,
// `fulcrum run --plan` runs the test trainer at 0.7 x the planned speed, the supervisor measures
// the speed from the trainer's JSON heartbeat, `fulcrum status --json` re-quotes the run, and the
// deadline alert reaches a webhook sink (127.0.0.1, ephemeral port) before half the planned time.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <future>
#include <nlohmann/json.hpp>

#include "store/jobs.h"
#include "support/agent_process.h"
#include "support/run_binary.h"

namespace fulcrum::testing {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;

class PlanRunE2E : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = MakeTempDir("plan-run-e2e"); }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(dir_);
  }
  std::string dir_;
};

std::string OfferOf(const json& c) {
  return c["provider"].get<std::string>() + "/" + c["instance_type"].get<std::string>() + " " +
         c["pricing"].get<std::string>();
}

TEST_F(PlanRunE2E, DeadlineAlertReachesTheSinkBeforeHalfThePlannedTime) {
  // The job: 10 000 steps of one 2048-token sequence, where the step time, not the start-up,
  // decides the cost. Its uncalibrated pick is the offer the rehearsal below runs on.
  const std::vector<std::string> full = {"--catalog",  SourcePath("catalog"),
                                         "plan",       "--model",
                                         "llama-3-8b", "--method",
                                         "lora",       "--tokens",
                                         "20480000",   "--seq-len",
                                         "2048",       "--global-batch",
                                         "1",          "--top",
                                         "3",          "--json"};
  RunOutput before = RunFulcrum(full);
  ASSERT_EQ(before.exit_code, 0) << before.err;
  const json old_plan = json::parse(before.out);
  ASSERT_FALSE(old_plan["candidates"].empty());
  const std::string job_offer = OfferOf(old_plan["candidates"][0]);

  // Its rehearsal, 100 steps: a plan of seconds on one GPU, run on the job's offer (--pick its
  // rank: at 100 steps the start-up and the minimum billing can rank another offer first).
  RunOutput plan = RunFulcrum({"--catalog", SourcePath("catalog"), "plan", "--model", "llama-3-8b",
                               "--method", "lora", "--tokens", "204800", "--seq-len", "2048",
                               "--global-batch", "1", "--top", "20", "--json"});
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  const std::string plan_file = dir_ + "/plan.json";
  std::ofstream(plan_file) << plan.out;
  const json rehearsal = json::parse(plan.out);
  json candidate;
  for (const json& c : rehearsal["candidates"]) {
    if (OfferOf(c) == job_offer && candidate.is_null()) candidate = c;
  }
  ASSERT_FALSE(candidate.is_null()) << job_offer << " is not among the rehearsal's candidates";
  const std::string pick_rank = std::to_string(candidate["rank"].get<int>());
  const double planned_step = candidate["time"]["step_seconds"].get<double>();
  const double planned_seconds = 100 * planned_step;
  ASSERT_GT(planned_step, 0.02) << "a step the test can time: " << candidate["time"];
  ASSERT_LT(planned_seconds, 120) << candidate["time"];

  // The trainer at 0.7 x the planned speed; the deadline 20 % over the planned time.
  const long step_ms = std::lround(1000 * planned_step / 0.7);
  const std::string data = dir_ + "/data";
  WebhookRecorder sink;
  const auto started = std::chrono::steady_clock::now();
  auto run = std::async(std::launch::async, [&] {
    RunOptions options;
    options.timeout_seconds = 120;
    return RunFulcrum({"run",
                       "--name",
                       "slow",
                       "--data-dir",
                       data,
                       "--preemption",
                       "none",
                       "--agent",
                       "none",
                       "--plan",
                       plan_file,
                       "--pick",
                       pick_rank,
                       "--deadline",
                       std::to_string(1.2 * planned_seconds) + "s",
                       "--receiver",
                       sink.url(),
                       "--",
                       FULCRUM_TRAINER,
                       "--steps",
                       "25",
                       "--step-ms",
                       std::to_string(step_ms),
                       "--heartbeat-json"},
                      options);
  });
  const bool alerted =
      PollUntil([&] { return !sink.Find("deadline_risk").is_null(); }, planned_seconds);
  const double arrived =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  ASSERT_TRUE(alerted) << "no deadline alert within the planned time";
  EXPECT_LT(arrived, planned_seconds / 2) << "the alert came too late to act";
  const std::string body = sink.Find("deadline_risk").dump();
  EXPECT_NE(body.find("x planned speed the run misses the deadline by"), std::string::npos) << body;

  // While it runs, status re-quotes it: planned vs measured, the remaining time with its P90,
  // the projected cost and the odds of the deadline.
  RunOutput status = RunFulcrum({"status", "--json", "--data-dir", data});
  ASSERT_EQ(status.exit_code, 0) << status.err;
  const json job = json::parse(status.out)["jobs"][0];
  EXPECT_EQ(job["state"], "running") << job;
  EXPECT_DOUBLE_EQ(job["planned_step_seconds"].get<double>(), planned_step);
  const double measured = job["measured_step_seconds"].get<double>();
  EXPECT_GT(measured, planned_step * 1.2) << "0.7 x speed is 1.43 x the step time";
  EXPECT_GT(job["progress_fraction"].get<double>(), 0);
  EXPECT_LT(job["progress_fraction"].get<double>(), 0.6);
  EXPECT_GE(job["eta_p90_seconds"].get<double>(), job["eta_seconds"].get<double>());
  EXPECT_GE(job["projected_cost_p90_usd"].get<double>(), job["projected_cost_usd"].get<double>());
  EXPECT_GT(job["projected_cost_usd"].get<double>(), 0);
  EXPECT_LT(job["deadline_met_probability"].get<double>(), 0.5);
  EXPECT_EQ(job["planned_total_steps"], 100);
  EXPECT_EQ(job["planned_tokens_per_step"], 2048.0);
  EXPECT_EQ(job["planned_gpu"], candidate["gpu"]);
  EXPECT_EQ(job["planned_pricing"], candidate["pricing"]);
  EXPECT_TRUE(job["measured_peak_bytes_per_gpu"].is_null()) << "--agent none: not invented";
  EXPECT_NE(job["agent_figures_reason"].get<std::string>().find("no local agent"),
            std::string::npos)
      << job;
  EXPECT_TRUE(job["skipped_checkpoints"].is_array());

  RunOutput done = run.get();
  EXPECT_EQ(done.exit_code, 0) << done.err;

  // The finished job is in the prediction log: the planner's error on its class is the slowdown.
  RunOutput accuracy = RunFulcrum({"cost", "--accuracy", "--json", "--data-dir", data});
  ASSERT_EQ(accuracy.exit_code, 0) << accuracy.err;
  const json classes = json::parse(accuracy.out)["accuracy"]["classes"];
  ASSERT_EQ(classes.size(), 1u) << classes;
  EXPECT_EQ(classes[0]["gpu"], candidate["gpu"]);
  EXPECT_EQ(classes[0]["jobs"], 1);
  EXPECT_GT(classes[0]["step_time"]["bias"].get<double>(), 0.2) << "0.7 x speed: +43 %";
  EXPECT_TRUE(classes[0]["memory"]["bias"].is_null()) << "no agent: no measured memory";

  // Re-plan the job. The run was its 100-step rehearsal on the offer the uncalibrated plan picks;
  // calibrated from the slow run, that offer's class (its GPU model, count and interconnect) is
  // 1.43 x slower and so dearer, while offers of other classes keep their estimate: one of them
  // comes first. Right, because the measured run is the only evidence about that class, and it
  // says the estimate was too good by 1.43 x.
  std::vector<std::string> calibrated_args = full;
  for (const char* arg : {"--calibrate-from", "slow", "--data-dir"}) calibrated_args.push_back(arg);
  calibrated_args.push_back(data);
  RunOutput after = RunFulcrum(calibrated_args);
  ASSERT_EQ(after.exit_code, 0) << after.err;
  const json new_plan = json::parse(after.out);
  const auto offer_of = OfferOf;
  ASSERT_EQ(offer_of(candidate), job_offer) << "the run was on the job's uncalibrated pick";
  const json& pick = new_plan["candidates"][0];
  EXPECT_NE(offer_of(pick), job_offer) << "plan --calibrate-from changes its pick";
  const json& from = new_plan["calibrated_from"];
  EXPECT_EQ(from["job"], "slow") << from;
  EXPECT_EQ(from["hardware_class"]["gpu"], candidate["gpu"]);
  EXPECT_GT(from["step_time_factor"].get<double>(), 1.2) << from;
  EXPECT_NEAR(from["step_time_factor"].get<double>() * planned_step,
              from["measured_step_seconds"].get<double>(), 1e-9);
  EXPECT_EQ(from["pick"]["provider"], pick["provider"]);
  ASSERT_FALSE(from["changes"].empty());
  EXPECT_EQ(from["changes"][0].get<std::string>().rfind("another offer: ", 0), 0) << from;
  // The job's offer is still planned, at the measured speed...
  const json& job_now = from["job_offer_now"];
  ASSERT_FALSE(job_now.is_null()) << from;
  EXPECT_NEAR(job_now["step_seconds"].get<double>(), from["measured_step_seconds"].get<double>(),
              1e-3 * from["measured_step_seconds"].get<double>());
  EXPECT_GT(job_now["expected_usd"].get<double>(),
            old_plan["candidates"][0]["cost"]["expected_usd"].get<double>());
  // ...and the new pick, of another class, has the same figures as before the calibration.
  bool found = false;
  for (const json& c : old_plan["candidates"]) {
    if (offer_of(c) != offer_of(pick) || c["nodes"] != pick["nodes"]) continue;
    found = true;
    EXPECT_EQ(c["time"]["step_seconds"], pick["time"]["step_seconds"]);
  }
  EXPECT_TRUE(found) << "the new pick was already in the uncalibrated top 3";
}

TEST_F(PlanRunE2E, AJobOnPlanSpeedRaisesNoDeadlineAlert) {
  // The same figures by hand: 0.1 s per step planned and run, 40 steps, the deadline 2 x away.
  const std::string data = dir_ + "/data";
  WebhookRecorder sink;
  RunOptions options;
  options.timeout_seconds = 60;
  RunOutput r = RunFulcrum({"run",
                            "--name",
                            "onplan",
                            "--data-dir",
                            data,
                            "--preemption",
                            "none",
                            "--agent",
                            "none",
                            "--expect-step-seconds",
                            "0.1",
                            "--total-steps",
                            "40",
                            "--tokens-per-step",
                            "4096",
                            "--deadline",
                            "8s",
                            "--progress-regex",
                            "^step (\\d+)",
                            "--receiver",
                            sink.url(),
                            "--",
                            FULCRUM_TRAINER,
                            "--steps",
                            "40",
                            "--step-ms",
                            "100"},
                           options);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find("deadline_risk"), std::string::npos) << r.err;
  EXPECT_TRUE(sink.Posts().empty());
  RunOutput status = RunFulcrum({"status", "--json", "--data-dir", data});
  const json job = json::parse(status.out)["jobs"][0];
  EXPECT_EQ(job["progress_fraction"], 1.0) << job;
  EXPECT_EQ(job["planned_tokens_per_step"], 4096.0);
  EXPECT_GT(job["measured_tokens_per_second"].get<double>(), 0);
}

TEST_F(PlanRunE2E, CalibrateFromRefusesAJobItCannotUse) {
  const std::string data = dir_ + "/data";
  {
    auto db = store::JobsDb::OpenInDataDir(data);
    ASSERT_TRUE(db.ok()) << db.status().message();
    store::JobRecord by_hand;
    by_hand.id = by_hand.name = "by-hand";
    by_hand.state = store::JobState::kSucceeded;
    by_hand.plan.step_seconds = 0.1;  // --expect-step-seconds: no offer, no hardware class
    by_hand.measured.step_seconds = 0.2;
    ASSERT_TRUE(db->UpsertJob(by_hand).ok());
    store::JobRecord unmeasured = by_hand;
    unmeasured.id = unmeasured.name = "unmeasured";
    unmeasured.plan.gpu = "H100-SXM5-80GB";
    unmeasured.plan.gpus_per_node = 8;
    unmeasured.measured.step_seconds.reset();
    ASSERT_TRUE(db->UpsertJob(unmeasured).ok());
  }
  const auto plan = [&](const std::string& job) {
    return RunFulcrum({"--catalog", SourcePath("catalog"), "plan", "--model", "llama-3-8b",
                       "--tokens", "1B", "--calibrate-from", job, "--data-dir", data});
  };
  RunOutput typo = plan("by-hnad");
  EXPECT_EQ(typo.exit_code, 2) << typo.err;
  EXPECT_NE(typo.err.find("--calibrate-from: expected a job of this data dir"), std::string::npos)
      << typo.err;
  EXPECT_NE(typo.err.find("did you mean by-hand?"), std::string::npos) << typo.err;
  RunOutput hand = plan("by-hand");
  EXPECT_EQ(hand.exit_code, 2) << hand.err;
  EXPECT_NE(hand.err.find("expected a job run with --plan"), std::string::npos) << hand.err;
  RunOutput unmeasured = plan("unmeasured");
  EXPECT_EQ(unmeasured.exit_code, 2) << unmeasured.err;
  EXPECT_NE(unmeasured.err.find("no measured step time yet"), std::string::npos) << unmeasured.err;
}

// The running error per hardware class, from a prediction log seeded as the supervisor writes it.
TEST_F(PlanRunE2E, CostAccuracyGroupsThePredictionLogByHardwareClass) {
  const std::string data = dir_ + "/data";
  RunOutput empty = RunFulcrum({"cost", "--accuracy", "--data-dir", data});
  EXPECT_EQ(empty.exit_code, 0) << empty.err;
  EXPECT_NE(empty.out.find("No finished job with a plan"), std::string::npos) << empty.out;
  {
    auto db = store::JobsDb::OpenInDataDir(data);
    ASSERT_TRUE(db.ok()) << db.status().message();
    const auto row = [](const std::string& uid, const std::string& gpu, int gpus, double planned,
                        double measured) {
      store::PredictionRecord r;
      r.uid = uid;
      r.job_id = uid.substr(0, uid.find('.'));
      r.finished_at = 1.7e9;
      r.state = "succeeded";
      r.gpu = gpu;
      r.gpus_per_node = gpus;
      r.predicted_step_seconds = planned;
      r.measured_step_seconds = measured;
      r.predicted_cost_usd = 100;
      r.measured_cost_usd = 100 * measured / planned;
      return r;
    };
    ASSERT_TRUE(db->AddPrediction(row("a.1", "H100-SXM5-80GB", 8, 1.0, 1.3)).ok());
    ASSERT_TRUE(db->AddPrediction(row("a.2", "H100-SXM5-80GB", 8, 1.0, 1.1)).ok());
    ASSERT_TRUE(db->AddPrediction(row("b.1", "A100-SXM4-80GB", 8, 2.0, 1.5)).ok());
  }
  RunOutput table = RunFulcrum({"cost", "--accuracy", "--data-dir", data});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("Planner error on 3 finished jobs"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("H100-SXM5-80GB x8"), std::string::npos) << table.out;
  RunOutput out = RunFulcrum({"cost", "--accuracy", "--json", "--data-dir", data});
  ASSERT_EQ(out.exit_code, 0) << out.err;
  const json accuracy = json::parse(out.out)["accuracy"];
  ASSERT_EQ(accuracy["classes"].size(), 2u) << accuracy;
  const json& h100 = accuracy["classes"][0];
  EXPECT_EQ(h100["class"], "H100-SXM5-80GB x8");
  EXPECT_EQ(h100["jobs"], 2);
  EXPECT_NEAR(h100["step_time"]["bias"].get<double>(), 0.2, 1e-9);
  EXPECT_NEAR(h100["step_time"]["worst"].get<double>(), 0.3, 1e-9);
  EXPECT_NEAR(h100["cost"]["mean_abs_error"].get<double>(), 0.2, 1e-9);
  EXPECT_NEAR(accuracy["classes"][1]["step_time"]["bias"].get<double>(), -0.25, 1e-9);
  EXPECT_EQ(accuracy["jobs"].size(), 3u);
}

// A local agent (NVML through the fake library) sees the job's own process on GPU 0: status shows
// its memory, the GPU's utilisation and power, and no reason; the prediction log keeps the memory.
TEST_F(PlanRunE2E, AgentFiguresOfTheJobsProcessReachStatus) {
  const std::string script = dir_ + "/nvml.txt";
  std::ofstream(script) << "count 1\ngpu 0 util_gpu 87\ngpu 0 power_mw 350000\n";
  AgentProcess agent(dir_,
                     {"--source", "nvml", "--listen", "127.0.0.1:0", "--data-dir", dir_ + "/agent",
                      "--interval", "200ms"},
                     {{"LD_LIBRARY_PATH", FAKE_NVML_DIR}, {"FAKE_NVML_SCRIPT", script}});
  ASSERT_GT(agent.port(), 0) << agent.err();
  const std::string data = dir_ + "/data";
  // The job's shell adds its own pid (the leader of the job's process group; exec keeps it) to
  // the fake GPU's compute processes, 20 GiB.
  RunOptions options;
  options.timeout_seconds = 60;
  RunOutput r = RunFulcrum(
      {"run", "--name", "gpu", "--data-dir", data, "--preemption", "none", "--agent",
       "http://127.0.0.1:" + std::to_string(agent.port()), "--expect-step-seconds", "0.1",
       "--total-steps", "80", "--progress-regex", "^step (\\d+)", "--", "sh", "-c",
       "echo \"gpu 0 process $$ 21474836480\" >> " + script +
           "; exec " FULCRUM_TRAINER " --steps 80 --step-ms 100"},
      options);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  RunOutput status = RunFulcrum({"status", "--json", "--data-dir", data});
  ASSERT_EQ(status.exit_code, 0) << status.err;
  const json job = json::parse(status.out)["jobs"][0];
  EXPECT_EQ(job["measured_peak_bytes_per_gpu"], 21474836480.0) << job;
  EXPECT_EQ(job["measured_gpu_utilization_pct"], 87.0) << job;
  EXPECT_EQ(job["measured_power_watts"], 350.0) << job;
  EXPECT_TRUE(job["agent_figures_reason"].is_null()) << job;
}

TEST_F(PlanRunE2E, BadPlanFilesAreUsageErrors) {
  const std::string plan_file = dir_ + "/plan.json";
  std::ofstream(plan_file) << R"({"candidates": [{"rank": 1, "time": {"step_seconds": 1}}]})";
  RunOutput pick = RunFulcrum({"run", "--data-dir", dir_ + "/data", "--plan", plan_file, "--pick",
                               "4", "--", FULCRUM_TRAINER});
  EXPECT_EQ(pick.exit_code, 2) << pick.err;
  EXPECT_NE(pick.err.find("--pick: expected a rank from 1 to 1, found 4"), std::string::npos)
      << pick.err;
  std::ofstream(plan_file) << "not json";
  RunOutput bad =
      RunFulcrum({"run", "--data-dir", dir_ + "/data", "--plan", plan_file, "--", FULCRUM_TRAINER});
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  EXPECT_NE(bad.err.find(plan_file), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace fulcrum::testing
