// End-to-end tests of sharing a node's GPUs by memory (`fulcrum submit --gpu-memory`): the real
// binary's queue worker packs jobs of the test trainer on `--node-gpus 2x80GiB`, sets
// CUDA_VISIBLE_DEVICES, and under time-slicing stops (after a checkpoint) a job whose
// per-process memory, as a fake agent's /v1/gpus reports it, passes its reservation.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "store/jobs.h"
#include "support/fake_gpus_agent.h"
#include "support/run_binary.h"

namespace fulcrum::testing {
namespace {
namespace fs = std::filesystem;

constexpr double kGiB = 1024.0 * 1024 * 1024;

class GpuShareTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = MakeTempDir("gpu-share");
    data_ = dir_ + "/data";
  }
  void TearDown() override {
    EXPECT_TRUE(WaitForQueueWorkersToExit(data_, 60)) << "a queue worker outlived the test";
    if (!HasFailure()) fs::remove_all(dir_);
  }

  // `submit --node-gpus 2x80GiB --name NAME <extra> -- sh -c 'echo CVD=...; exec trainer ...'`.
  RunOutput Submit(const std::string& name, std::vector<std::string> extra,
                   const std::string& trainer_args) {
    std::vector<std::string> args = {"submit",       "--json",  "--data-dir", data_,
                                     "--node-gpus",  "2x80GiB", "--name",     name,
                                     "--preemption", "none",    "--agent",    agent_};
    args.insert(args.end(), extra.begin(), extra.end());
    args.insert(args.end(), {"--", "/bin/sh", "-c",
                             "echo CVD=$CUDA_VISIBLE_DEVICES; exec " +
                                 std::string(FULCRUM_TRAINER) + " " + trainer_args});
    return RunFulcrum(args);
  }

  std::vector<nlohmann::json> Jobs() {
    RunOutput r = RunFulcrum({"status", "--json", "--data-dir", data_});
    if (r.exit_code != 0) return {};
    return nlohmann::json::parse(r.out)["jobs"].get<std::vector<nlohmann::json>>();
  }

  std::optional<store::JobRecord> Job(const std::string& name) {
    auto db = store::JobsDb::OpenInDataDir(data_, true);
    if (!db.ok()) return std::nullopt;
    auto job = db->GetJob(name);
    return job.ok() ? *job : std::nullopt;
  }

  std::string dir_, data_, agent_ = "none";
};

// The most intervals [start, end) that overlap at one time.
int MostAtOnce(std::vector<std::pair<double, double>> spans) {
  std::vector<std::pair<double, int>> edges;
  for (const auto& [start, end] : spans) {
    edges.push_back({start, 1});
    edges.push_back({end, -1});
  }
  std::sort(edges.begin(), edges.end());  // an end before a start at the same time
  int now = 0, most = 0;
  for (const auto& [at, delta] : edges) most = std::max(most, now += delta);
  return most;
}

TEST_F(GpuShareTest, SixJobsOf30GiBRunTwoPerGpuOnTwo80GiBGpus) {
  for (int i = 0; i < 6; ++i) {
    RunOutput r =
        Submit("share-" + std::to_string(i), {"--gpu-memory", "30GiB"}, "--steps 100 --step-ms 20");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto submitted = nlohmann::json::parse(r.out)["submit"];
    EXPECT_EQ(submitted["gpu_memory_bytes"], 30 * kGiB);
  }
  std::vector<nlohmann::json> jobs;
  ASSERT_TRUE(PollUntil(
      [&] {
        jobs = Jobs();
        return jobs.size() == 6 && std::all_of(jobs.begin(), jobs.end(), [](const auto& j) {
                 return j["state"] == "succeeded";
               });
      },
      120))
      << nlohmann::json(jobs).dump(2);
  std::map<int, std::vector<std::pair<double, double>>> by_gpu;
  std::vector<std::pair<double, double>> all;
  for (const auto& j : jobs) {
    const auto& share = j["gpu_share"];
    ASSERT_TRUE(share.is_object()) << j.dump(2);
    const int gpu = share["gpu"];
    EXPECT_EQ(share["reservation_bytes"], 30 * kGiB);
    EXPECT_EQ(share["mode"], "time");
    EXPECT_EQ(j["gpus"], nlohmann::json({gpu}));
    // The job itself saw its GPU.
    const std::string log = FileContents(data_ + "/logs/" + j["id"].get<std::string>() + ".log");
    EXPECT_NE(log.find("CVD=" + std::to_string(gpu)), std::string::npos) << log;
    const std::pair<double, double> span = {j["started_at"], j["finished_at"]};
    by_gpu[gpu].push_back(span);
    all.push_back(span);
  }
  // 80 GiB less the 10 % reserve holds two reservations of 30 GiB, never three.
  for (const auto& [gpu, spans] : by_gpu) EXPECT_LE(MostAtOnce(spans), 2) << "GPU " << gpu;
  EXPECT_GE(MostAtOnce(all), 3) << "the node held more than one job per GPU at once";
  EXPECT_EQ(by_gpu.size(), 2u);
}

TEST_F(GpuShareTest, AJobOverItsReservationIsStoppedWithItsCheckpointAndTheOtherKeepsRunning) {
  FakeGpusAgent agent;
  ASSERT_GT(agent.Start(), 0);
  agent_ = agent.url();
  const std::string ckpt = dir_ + "/ckpt";
  ASSERT_EQ(Submit("hog",
                   {"--gpu-memory", "30GiB", "--enforce", "--checkpoint-dir", ckpt,
                    "--checkpoint-every", "1h"},
                   "--steps 100000 --step-ms 5")
                .exit_code,
            0);
  ASSERT_EQ(Submit("calm", {"--gpu-memory", "30GiB", "--enforce"}, "--steps 100000 --step-ms 5")
                .exit_code,
            0);
  std::optional<store::JobRecord> hog, calm;
  ASSERT_TRUE(PollUntil(
      [&] {
        hog = Job("hog");
        calm = Job("calm");
        return hog && calm && hog->state == "running" && calm->state == "running" &&
               hog->child_pgid && calm->child_pgid;
      },
      60));
  // The agent sees the hog at 41 GiB on GPU 0 and the calm job within its 30 GiB.
  agent.Set(nlohmann::json{{"gpus",
                            {{{"index", 0},
                              {"processes",
                               {{{"pid", *hog->child_pgid}, {"used_memory_bytes", 41 * kGiB}},
                                {{"pid", *calm->child_pgid}, {"used_memory_bytes", 20 * kGiB}}}}}}}}
                .dump());
  ASSERT_TRUE(PollUntil(
      [&] {
        hog = Job("hog");
        return hog && hog->state == "stopped";
      },
      60))
      << (hog ? std::string(store::JobStateName(hog->state)) : "");
  EXPECT_TRUE(hog->last_checkpoint_at.has_value()) << "stopped after its checkpoint";
  calm = Job("calm");
  EXPECT_EQ(calm->state, "running") << "never another job's kill";
  auto db = store::JobsDb::OpenInDataDir(data_, true);
  auto alerts = db->ListAlerts(0);
  ASSERT_TRUE(alerts.ok());
  ASSERT_EQ(alerts->size(), 1u);
  EXPECT_EQ((*alerts)[0].name, "gpu-memory-over");
  EXPECT_EQ((*alerts)[0].job_id, "hog");
  RunOutput table = RunFulcrum({"status", "--data-dir", data_});
  EXPECT_NE(table.out.find("hog: GPU 0, 30.0 GiB reserved (time-slicing), peak 41.0 GiB; over its "
                           "reservation"),
            std::string::npos)
      << table.out;
  // End the calm job (a stop notice) so that the queue worker can leave.
  ASSERT_EQ(kill(static_cast<pid_t>(*calm->supervisor_pid), SIGTERM), 0);
  EXPECT_TRUE(PollUntil([&] { return Job("calm")->state == "stopped"; }, 30));
}

TEST_F(GpuShareTest, WithoutNodeGpusTheAgentsGpusAndTheirMemoryAreUsed) {
  FakeGpusAgent agent;
  ASSERT_GT(agent.Start(), 0);
  agent.Set(nlohmann::json{{"gpus",
                            {{{"index", 0}, {"memory_total_bytes", 80 * kGiB}},
                             {{"index", 1}, {"memory_total_bytes", 80 * kGiB}}}}}
                .dump());
  RunOutput too_big = RunFulcrum({"submit", "--data-dir", data_, "--agent", agent.url(), "--name",
                                  "big", "--gpu-memory", "75GiB", "--", "true"});
  EXPECT_EQ(too_big.exit_code, 2) << "72 GiB of the agent's 80 GiB GPUs can be reserved";
  RunOutput r = RunFulcrum({"submit", "--json", "--data-dir", data_, "--agent", agent.url(),
                            "--preemption", "none", "--name", "fits", "--gpu-memory", "60GiB", "--",
                            FULCRUM_TRAINER, "--steps", "5", "--step-ms", "10"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<nlohmann::json> jobs;
  ASSERT_TRUE(PollUntil(
      [&] {
        jobs = Jobs();
        return jobs.size() == 1 && jobs[0]["state"] == "succeeded";
      },
      60))
      << nlohmann::json(jobs).dump(2);
  EXPECT_EQ(jobs[0]["gpu_share"]["reservation_bytes"], 60 * kGiB);
}

TEST_F(GpuShareTest, BadRequestsExitTwoNamingWhatFits) {
  RunOutput big = Submit("big", {"--gpu-memory", "75GiB"}, "--steps 1");
  EXPECT_EQ(big.exit_code, 2);
  EXPECT_NE(big.err.find("expected at most 72.0 GiB"), std::string::npos) << big.err;
  RunOutput fraction = Submit("frac", {"--gpu-fraction", "1.5"}, "--steps 1");
  EXPECT_EQ(fraction.exit_code, 2);
  EXPECT_NE(fraction.err.find("(0, 1]"), std::string::npos) << fraction.err;
  RunOutput zero = Submit("zero", {"--gpu-fraction", "0"}, "--steps 1");
  EXPECT_EQ(zero.exit_code, 2) << "0 is outside (0, 1], not 'not given'";
  RunOutput both = Submit("both", {"--gpu-memory", "10GiB", "--gpus", "2"}, "--steps 1");
  EXPECT_EQ(both.exit_code, 2);
  RunOutput share = Submit("mode", {"--gpu-memory", "10GiB", "--share", "mig"}, "--steps 1");
  EXPECT_EQ(share.exit_code, 2);
  EXPECT_NE(share.err.find("auto or mps"), std::string::npos) << share.err;
  RunOutput node = RunFulcrum({"submit", "--data-dir", data_, "--node-gpus", "2xlots",
                               "--gpu-memory", "10GiB", "--", "true"});
  EXPECT_EQ(node.exit_code, 2);
  EXPECT_NE(node.err.find("2x80GiB"), std::string::npos) << node.err;
  EXPECT_TRUE(Jobs().empty()) << "nothing was queued";
}

}  // namespace
}  // namespace fulcrum::testing
