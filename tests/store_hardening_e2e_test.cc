// End-to-end tests of the stores under a hostile environment (issue 29): many first users of a new
// data dir at once, damaged database files, and a jobs.db that another process holds locked while
// a job runs. The real binary on temp data dirs; the lock and the damage come from this process.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>
#include <fstream>
#include <future>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "store/jobs.h"
#include "support/run_binary.h"

namespace fulcrum::testing {
namespace {
namespace fs = std::filesystem;

class StoreHardeningTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = MakeTempDir("store_hardening");
    data_ = dir_ + "/data";
  }
  void TearDown() override {
    // The queue workers that `submit` starts may still be running the last jobs.
    EXPECT_TRUE(WaitForQueueWorkersToExit(data_, 120)) << "a queue worker outlived the test";
    if (!HasFailure()) fs::remove_all(dir_);
  }

  // Runs `count` copies of `args_of(i)` at once; their outputs in order.
  static std::vector<RunOutput> RunConcurrently(
      int count, const std::function<std::vector<std::string>(int)>& args_of) {
    std::vector<std::future<RunOutput>> running;
    for (int i = 0; i < count; ++i) {
      running.push_back(std::async(std::launch::async, [args = args_of(i)] {
        RunOptions options;
        options.timeout_seconds = 120;
        return RunFulcrum(args, options);
      }));
    }
    std::vector<RunOutput> outputs;
    for (auto& r : running) outputs.push_back(r.get());
    return outputs;
  }

  std::string dir_, data_;
};

// The reported race: 20 parallel `fulcrum run` on a new data dir, 2-5 exited 1 with "migration to
// schema version 1: table jobs already exists".
TEST_F(StoreHardeningTest, TwentyConcurrentRunsOnANewDataDirAllSucceed) {
  constexpr int kRuns = 20;
  const auto outputs = RunConcurrently(kRuns, [&](int i) {
    return std::vector<std::string>{
        "run",        "--quiet", "--name",       "first-" + std::to_string(i),
        "--data-dir", data_,     "--preemption", "none",
        "--agent",    "none",    "--",           "true"};
  });
  for (int i = 0; i < kRuns; ++i) {
    EXPECT_EQ(outputs[static_cast<size_t>(i)].exit_code, 0)
        << "run " << i << ": " << outputs[static_cast<size_t>(i)].err;
  }
  auto db = store::JobsDb::OpenInDataDir(data_, /*read_only=*/true);
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  auto jobs = db->ListJobs();
  ASSERT_TRUE(jobs.ok());
  EXPECT_EQ(jobs->size(), static_cast<size_t>(kRuns));
  for (const auto& job : *jobs) EXPECT_EQ(job.state, "succeeded") << job.id << ": " << job.reason;
}

// The reported race: 50 parallel `fulcrum submit`, 17 failed with "duplicate column name:
// planned_layout". Every submit queues its job, and the queue worker runs every one of them.
TEST_F(StoreHardeningTest, FiftyConcurrentSubmitsOnANewDataDirAllSucceed) {
  constexpr int kSubmits = 50;
  const auto outputs = RunConcurrently(kSubmits, [&](int i) {
    return std::vector<std::string>{"submit",
                                    "--data-dir",
                                    data_,
                                    "--node-gpus",
                                    "0",
                                    "--gpus",
                                    "0",
                                    "--name",
                                    "sub-" + std::to_string(i),
                                    "--preemption",
                                    "none",
                                    "--agent",
                                    "none",
                                    "--",
                                    "true"};
  });
  for (int i = 0; i < kSubmits; ++i) {
    EXPECT_EQ(outputs[static_cast<size_t>(i)].exit_code, 0)
        << "submit " << i << ": " << outputs[static_cast<size_t>(i)].err;
  }
  ASSERT_TRUE(WaitForQueueWorkersToExit(data_, 120));
  auto db = store::JobsDb::OpenInDataDir(data_, /*read_only=*/true);
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  auto jobs = db->ListJobs();
  ASSERT_TRUE(jobs.ok());
  EXPECT_EQ(jobs->size(), static_cast<size_t>(kSubmits));
  for (const auto& job : *jobs) EXPECT_EQ(job.state, "succeeded") << job.id << ": " << job.reason;
}

}  // namespace
}  // namespace fulcrum::testing
