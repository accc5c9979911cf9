// End-to-end test of issue 25's "run --plan" item: a spec's `deadline` and `budget_usd` reach
// `fulcrum plan --json` (top-level `constraints`), `fulcrum run --plan FILE --pick 1` takes them
// as its --deadline and --budget-usd unless the run line gives those, and `fulcrum status --json`
// shows the job's deadline_at, budget_usd and the odds of meeting the deadline while it runs.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>

#include "supervise/supervisor.h"
#include "support/child_process.h"
#include "support/run_binary.h"

namespace fulcrum::testing {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;

constexpr double kThreeDays = 3 * 86400.0;

double UnixNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

class PlanRunConstraintsE2E : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = MakeTempDir("plan-run-constraints-e2e"); }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(dir_);
  }

  // Plans a seconds-long LoRA job whose spec has a 3-day deadline and a $5,000 budget.
  std::string WritePlan() {
    const std::string spec = dir_ + "/spec.yaml";
    std::ofstream(spec) << "model: llama-3-8b\n"
                           "method: lora\n"
                           "tokens: 204800\n"
                           "seq_len: 2048\n"
                           "global_batch: 1\n"
                           "constraints:\n"
                           "  deadline: 3d\n"
                           "  budget_usd: 5000\n";
    RunOutput plan =
        RunFulcrum({"--catalog", SourcePath("catalog"), "plan", spec, "--top", "3", "--json"});
    EXPECT_EQ(plan.exit_code, 0) << plan.err;
    const std::string path = dir_ + "/plan.json";
    std::ofstream(path) << plan.out;
    return path;
  }

  // Starts `fulcrum run --plan PLAN --pick 1 EXTRA... -- trainer` (a trainer far longer than the
  // test), waits until status shows it running, returns its status row and stops it.
  json RunningJob(const std::string& name, const std::string& plan,
                  const std::vector<std::string>& extra, double* started_at) {
    const std::string data = dir_ + "/data";
    std::vector<std::string> args = {
        "run",  "--name",       name, "--data-dir", data, "--preemption", "none", "--agent",
        "none", "--stop-grace", "1s", "--plan",     plan, "--pick",       "1"};
    args.insert(args.end(), extra.begin(), extra.end());
    for (const char* word : {"--", FULCRUM_TRAINER, "--steps", "100000", "--step-ms", "50"}) {
      args.push_back(word);
    }
    *started_at = UnixNow();
    ChildProcess run(FULCRUM_BINARY, args, dir_ + "/" + name);
    json row;
    const bool running = PollUntil(
        [&] {
          RunOutput status = RunFulcrum({"status", "--json", "--data-dir", data});
          if (status.exit_code != 0) return false;
          json doc = json::parse(status.out, nullptr, false);
          if (doc.is_discarded()) return false;
          for (const json& job : doc.value("jobs", json::array())) {
            if (job.value("id", "") == name && job.value("state", "") == "running") row = job;
          }
          return !row.is_null();
        },
        60, 0.2);
    EXPECT_TRUE(running) << "the run never showed as running: " << run.err();
    EXPECT_EQ(run.Stop(SIGTERM, 30), supervise::kExitStopped) << run.err();
    return row;
  }

  std::string dir_;
};

TEST_F(PlanRunConstraintsE2E, RunTakesThePlansDeadlineAndBudget) {
  const std::string plan = WritePlan();
  const json doc = json::parse(FileContents(plan));
  ASSERT_TRUE(doc.contains("constraints")) << "plan --json names the spec's limits";
  EXPECT_EQ(doc["constraints"]["deadline_seconds"], kThreeDays);
  EXPECT_EQ(doc["constraints"]["budget_usd"], 5000.0);
  ASSERT_GT(doc["candidates"][0]["cost"]["usd_per_hour"].get<double>(), 0);

  double started = 0;
  const json job = RunningJob("inherits", plan, {}, &started);
  ASSERT_FALSE(job.is_null());
  EXPECT_EQ(job["budget_usd"], 5000.0) << job;
  ASSERT_TRUE(job["deadline_at"].is_number()) << job;
  const double deadline_at = job["deadline_at"].get<double>();
  EXPECT_GE(deadline_at, started + kThreeDays - 1) << "3 days from the run's start";
  EXPECT_LE(deadline_at, UnixNow() + kThreeDays);
  ASSERT_TRUE(job["deadline_met_probability"].is_number()) << job;
  EXPECT_GT(job["deadline_met_probability"].get<double>(), 0.99)
      << "a plan of seconds against 3 days: " << job;
}

TEST_F(PlanRunConstraintsE2E, TheRunLineOverridesThePlansLimits) {
  const std::string plan = WritePlan();
  double started = 0;
  const json job =
      RunningJob("overrides", plan, {"--budget-usd", "10", "--deadline", "1d"}, &started);
  ASSERT_FALSE(job.is_null());
  EXPECT_EQ(job["budget_usd"], 10.0) << job;
  ASSERT_TRUE(job["deadline_at"].is_number()) << job;
  const double deadline_at = job["deadline_at"].get<double>();
  EXPECT_GE(deadline_at, started + 86400 - 1) << "--deadline 1d, not the plan's 3 days";
  EXPECT_LE(deadline_at, UnixNow() + 86400);
}

TEST_F(PlanRunConstraintsE2E, APlanWithoutConstraintsSetsNoLimits) {
  // A plan file written before `constraints` (or a spec without limits): nothing is invented.
  const std::string plan = WritePlan();
  json doc = json::parse(FileContents(plan));
  doc.erase("constraints");
  std::ofstream(plan) << doc.dump();
  double started = 0;
  const json job = RunningJob("unlimited", plan, {}, &started);
  ASSERT_FALSE(job.is_null());
  EXPECT_TRUE(job["budget_usd"].is_null()) << job;
  EXPECT_TRUE(job["deadline_at"].is_null()) << job;
  EXPECT_TRUE(job["deadline_met_probability"].is_null()) << job;
}

}  // namespace
}  // namespace fulcrum::testing
