// Issue 29, item 10: `fulcrum validate` of a real PyTorch job that never checkpoints (it ignores
// FULCRUM_CHECKPOINT_REQUEST_FILE; tests/trainer/torch_no_checkpoint.py, Debian's python3-torch
// on the CPU) fails the small run within the small run plus one checkpoint request window and
// skips every drill and the stress run with that reason, instead of waiting out a checkpoint in
// each of the five drills (5 x (--checkpoint-every + --drill-timeout)) and then the stress run's
// --duration. Skipped where torch is not installed; the sanitizer presets leave out tests named
// *Torch*.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "support/run_binary.h"

namespace fulcrum::testing {
namespace {

constexpr const char* kPython = "/usr/bin/python3";

// "2.5s".
std::string FormatSeconds(double seconds) {
  std::string text = std::to_string(seconds);
  text.erase(text.find_last_not_of('0') + 1);
  if (text.back() == '.') text.pop_back();
  return text + "s";
}

TEST(ValidateNoCheckpointTorchTest, FailsTheSmallRunAndSkipsEveryDrillWithTheReason) {
  if (RunProgram(kPython, {"-c", "import torch"}).exit_code != 0) {
    GTEST_SKIP() << "no PyTorch for " << kPython << " (Debian: apt-get install python3-torch)";
  }
  const std::string dir = MakeTempDir("validate-no-checkpoint");
  const double small_run = 12, every = 4, drill_timeout = 60, duration = 60;
  RunOptions options;
  // The safety net: the drills waiting out their checkpoint would take 5 x 64 s.
  options.timeout_seconds = 200;
  const auto began = std::chrono::steady_clock::now();
  RunOutput r = RunFulcrum({"validate",
                            "--source",
                            "sim",
                            "--skip",
                            "environment",
                            "--small-run",
                            FormatSeconds(small_run),
                            "--checkpoint-every",
                            FormatSeconds(every),
                            "--drill-timeout",
                            FormatSeconds(drill_timeout),
                            "--duration",
                            FormatSeconds(duration),
                            "--json",
                            "--quiet",
                            "--work-dir",
                            dir,
                            "--",
                            kPython,
                            SourcePath("tests/trainer/torch_no_checkpoint.py"),
                            "--steps",
                            "1000000",
                            "--step-sleep",
                            "0.05"},
                           options);
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  ASSERT_FALSE(r.timed_out) << "validate waited for checkpoints that never come: " << r.err;
  ASSERT_EQ(r.exit_code, 3) << r.out << r.err;
  const auto report = nlohmann::json::parse(r.out);
  nlohmann::json small, drills_phase, stress;
  for (const auto& p : report["phases"]) {
    if (p["name"] == "small-run") small = p;
    if (p["name"] == "fault-drill") drills_phase = p;
    if (p["name"] == "stress") stress = p;
  }
  ASSERT_TRUE(small.is_object()) << r.out;
  EXPECT_EQ(small["verdict"], "fail") << small.dump();
  EXPECT_EQ(small["metrics"]["checkpoint_on_request"], false);
  EXPECT_GT(small["metrics"]["steps"].get<int64_t>(), 0) << "the job trained: it only never saved";
  EXPECT_NE(small.dump().find("the job does not checkpoint on request"), std::string::npos)
      << small.dump();
  EXPECT_EQ(drills_phase["verdict"], "skipped") << drills_phase.dump();
  ASSERT_EQ(report["drills"].size(), 5u) << r.out;
  for (const auto& d : report["drills"]) {
    SCOPED_TRACE(d.dump());
    EXPECT_EQ(d["verdict"], "skipped");
    EXPECT_EQ(d["reason"], "needs a checkpoint written on request, and the small run saw none");
  }
  // The stress run is not waited out either (it used to add its whole --duration).
  EXPECT_EQ(stress["verdict"], "skipped") << stress.dump();
  EXPECT_NE(stress.dump().find("the job does not checkpoint on request"), std::string::npos)
      << stress.dump();
  // Within the small run (or the job's start, when the import of torch took longer) plus the
  // last request's window, and one more window for validate's own start and its SIGKILL of the
  // job: not the drills' 5 x (every + drill timeout) nor the stress run's duration.
  const double started = small["metrics"].value("startup_seconds", 0.0);
  EXPECT_LT(elapsed, std::max(small_run, started) + 2 * every) << r.err;
  std::filesystem::remove_all(dir);
}

// A job that ignores the request file but checkpoints on its own cadence: its checkpoints land
// after requests, yet none answered one (a stop's request would go unanswered). The small run
// says so; the drills still run on the cadence's checkpoints.
TEST(ValidateNoCheckpointTest, CheckpointsOnItsOwnCadenceAreNotCheckpointsOnRequest) {
  const std::string dir = MakeTempDir("validate-cadence");
  RunOptions options;
  options.timeout_seconds = 120;
  RunOutput r = RunFulcrum({"validate",
                            "--source",
                            "sim",
                            "--skip",
                            "environment,stress",
                            "--small-run",
                            "1.5s",
                            "--checkpoint-every",
                            "0.4s",
                            "--drills",
                            "crash",
                            "--drill-timeout",
                            "20s",
                            "--json",
                            "--quiet",
                            "--work-dir",
                            dir,
                            "--",
                            FULCRUM_TRAINER,
                            "--steps",
                            "1000000",
                            "--step-ms",
                            "20",
                            "--ignore-requests",
                            "--checkpoint-every-steps",
                            "15"},
                           options);
  ASSERT_EQ(r.exit_code, 3) << r.out << r.err;
  const auto report = nlohmann::json::parse(r.out);
  nlohmann::json small;
  for (const auto& p : report["phases"])
    if (p["name"] == "small-run") small = p;
  EXPECT_EQ(small["verdict"], "fail") << small.dump();
  EXPECT_GT(small["metrics"]["checkpoints"].get<int>(), 0) << small.dump();
  EXPECT_EQ(small["metrics"]["checkpoint_on_request"], false);
  EXPECT_NE(small.dump().find("but the job never took a request"), std::string::npos)
      << small.dump();
  ASSERT_EQ(report["drills"].size(), 1u);
  EXPECT_EQ(report["drills"][0]["verdict"], "pass") << report["drills"][0].dump();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace fulcrum::testing
