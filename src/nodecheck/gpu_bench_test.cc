#include "nodecheck/gpu_bench.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

namespace fulcrum::nodecheck {
namespace {

std::vector<Datasheet> Candidates() {
  return {{"H100-SXM5-80GB", 80, 989, 989, 494, 67, 3.35e12, {}, {}},
          {"H100-PCIe-80GB", 80, 756, 756, 378, 51, 2.0e12, {}, {}},
          {"H100-NVL-94GB", 94, 835, 835, 418, 60, 3.9e12, {}, {}},
          {"A100-SXM4-40GB", 40, 312, 312, 156, 19.5, 1.555e12, {}, {}},
          {"A100-SXM4-80GB", 80, 312, 312, 156, 19.5, 2.039e12, {}, {}},
          {"L4", 24, 121, 121, 60, 30, 0.3e12, {}, {}}};
}

constexpr double kGiB = 1024.0 * 1024 * 1024;

TEST(GpuBenchTest, MatchesCudaDeviceNamesToCatalog) {
  auto c = Candidates();
  EXPECT_EQ(c[*MatchDatasheet("NVIDIA H100 80GB HBM3", 79.1 * kGiB, c)].name, "H100-SXM5-80GB");
  EXPECT_EQ(c[*MatchDatasheet("NVIDIA H100 PCIe", 79.6 * kGiB, c)].name, "H100-PCIe-80GB");
  EXPECT_EQ(c[*MatchDatasheet("NVIDIA H100 NVL", 93.1 * kGiB, c)].name, "H100-NVL-94GB");
  EXPECT_EQ(c[*MatchDatasheet("NVIDIA A100-SXM4-40GB", 39.4 * kGiB, c)].name, "A100-SXM4-40GB");
  EXPECT_EQ(c[*MatchDatasheet("NVIDIA A100-SXM4-80GB", 79.2 * kGiB, c)].name, "A100-SXM4-80GB");
  EXPECT_EQ(c[*MatchDatasheet("NVIDIA L4", 22.5 * kGiB, c)].name, "L4");
  EXPECT_FALSE(MatchDatasheet("NVIDIA GeForce GTX 1080", 8 * kGiB, c).has_value());
  EXPECT_FALSE(MatchDatasheet("NVIDIA A100-SXM4-80GB", 10 * kGiB, c).has_value());
}

TEST(GpuBenchTest, Verdicts) {
  EXPECT_EQ(SpecVerdict(700, 989), "ok");
  EXPECT_EQ(SpecVerdict(600, 989), "low");
  EXPECT_EQ(SpecVerdict(600, std::nullopt), "unknown");
  EXPECT_EQ(StabilityVerdict(600, 700, 650), "ok");
  EXPECT_EQ(StabilityVerdict(400, 700, 600), "unstable");
}

TEST(GpuBenchTest, ReportAddsSpecAndVerdicts) {
  std::string json = R"({"device": {"name": "NVIDIA H100 80GB HBM3", "memory_bytes": 85000000000},
    "gemm": [{"dtype": "bf16", "size": 8192, "tflops": 750, "correct": true},
             {"dtype": "fp32", "size": 4096, "tflops": 30, "correct": true},
             {"dtype": "fp16", "size": 8192, "tflops": 760, "correct": false}],
    "memory_bandwidth_bytes_per_second": 2.9e12,
    "stability": {"seconds": 5, "mean_tflops": 700, "min_tflops": 690, "max_tflops": 710, "cv": 0.01, "intervals": []}})";
  auto c = Candidates();
  auto report = BuildGpuReport(json, &c[0]);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  const auto& r = *report;
  EXPECT_EQ(r["datasheet_gpu"], "H100-SXM5-80GB");
  EXPECT_NEAR(r["gemm"][0]["percent_of_spec"].get<double>(), 100.0 * 750 / 989, 1e-9);
  EXPECT_EQ(r["gemm"][0]["verdict"], "ok");
  EXPECT_EQ(r["gemm"][1]["verdict"], "low");           // 30 of 67
  EXPECT_EQ(r["gemm"][2]["verdict"], "wrong-result");  // correctness beats speed
  EXPECT_EQ(r["memory_bandwidth"]["verdict"], "ok");
  EXPECT_EQ(r["stability"]["verdict"], "ok");
  EXPECT_NEAR(r["stability"]["swing_fraction"].get<double>(), 20.0 / 700, 1e-12);

  auto unknown = BuildGpuReport(json, nullptr);
  ASSERT_TRUE(unknown.ok());
  EXPECT_TRUE((*unknown)["gemm"][0]["spec"].is_null());
  EXPECT_EQ((*unknown)["gemm"][0]["verdict"], "unknown");
  EXPECT_FALSE(BuildGpuReport("not json", nullptr).ok());
}

TEST(GpuBenchTest, MissingProgramIsSkippedWithReason) {
  GpuBenchOptions options;
  options.program = "/nonexistent/fulcrum-gpubench";
  auto run = RunGpuBench(options);
  ASSERT_TRUE(run.ok());
  ASSERT_TRUE(run->skipped_reason.has_value());
  EXPECT_NE(run->skipped_reason->find("/nonexistent/fulcrum-gpubench"), std::string::npos);
}

// A directory with an executable fulcrum-gpubench stand-in at `relative` (or none when empty).
std::filesystem::path FakeInstall(const std::string& name, const std::string& relative) {
  auto root = std::filesystem::temp_directory_path() / ("fulcrum-locate-" + name);
  std::filesystem::remove_all(root);
  std::filesystem::create_directories(root / "bin");
  if (!relative.empty()) {
    auto program = root / relative;
    std::filesystem::create_directories(program.parent_path());
    std::ofstream(program) << "#!/bin/sh\nexit 0\n";
    std::filesystem::permissions(program, std::filesystem::perms::owner_all);
  }
  return root;
}

TEST(GpuBenchTest, LocatesTheInstalledProgramBesideOrInLibexec) {
  GpuBenchBuild build;
  build.built = true;
  build.libexec_from_bindir = "../libexec/fulcrum";
  auto installed = FakeInstall("libexec", "libexec/fulcrum/fulcrum-gpubench");
  auto found = LocateGpuBench((installed / "bin").string(), "", build);
  EXPECT_FALSE(found.missing_reason) << *found.missing_reason;
  EXPECT_EQ(found.program, (installed / "libexec/fulcrum/fulcrum-gpubench").string());

  // A build tree: the program next to the binary wins.
  auto tree = FakeInstall("beside", "bin/fulcrum-gpubench");
  EXPECT_EQ(LocateGpuBench((tree / "bin").string(), "", build).program,
            (tree / "bin/fulcrum-gpubench").string());

  // $FULCRUM_GPUBENCH is the only place looked at when set, and a wrong one is named.
  auto by_env = LocateGpuBench((installed / "bin").string(), "/nonexistent/gpubench", build);
  ASSERT_TRUE(by_env.missing_reason);
  EXPECT_NE(by_env.missing_reason->find("FULCRUM_GPUBENCH"), std::string::npos);
  EXPECT_NE(by_env.missing_reason->find("/nonexistent/gpubench"), std::string::npos);
  std::filesystem::remove_all(installed);
  std::filesystem::remove_all(tree);
}

// The bug of issue 27: a fulcrum built with the bench but installed without it said "no CUDA
// toolkit at build time". The reason now tells the two causes apart and names where it looked.
TEST(GpuBenchTest, MissingReasonSaysBuiltButNotInstalledOrBuiltWithoutCuda) {
  auto empty = FakeInstall("empty", "");
  std::string bin = (empty / "bin").string();
  std::string libexec_path = (empty / "libexec/fulcrum/fulcrum-gpubench").string();
  GpuBenchBuild built;
  built.built = true;
  auto not_installed = LocateGpuBench(bin, "", built);
  ASSERT_TRUE(not_installed.missing_reason);
  EXPECT_NE(not_installed.missing_reason->find("not installed"), std::string::npos)
      << *not_installed.missing_reason;
  EXPECT_EQ(not_installed.missing_reason->find("without"), std::string::npos)
      << *not_installed.missing_reason;
  EXPECT_NE(not_installed.missing_reason->find(libexec_path), std::string::npos)
      << *not_installed.missing_reason;

  GpuBenchBuild without;
  without.built = false;
  without.not_built_reason = "configured with -DFULCRUM_CUDA=OFF";
  auto not_built = LocateGpuBench(bin, "", without);
  ASSERT_TRUE(not_built.missing_reason);
  EXPECT_NE(not_built.missing_reason->find("without the CUDA GPU bench"), std::string::npos);
  EXPECT_NE(not_built.missing_reason->find(without.not_built_reason), std::string::npos);
  EXPECT_EQ(not_built.missing_reason->find("not installed"), std::string::npos);
  std::filesystem::remove_all(empty);
}

// What this build says about itself matches what the build made (CMakeLists.txt passes it).
TEST(GpuBenchTest, ThisBuildKnowsWhetherItMadeTheProgram) {
  GpuBenchBuild build = ThisGpuBenchBuild();
  bool made = std::filesystem::exists(std::string(FULCRUM_BUILD_DIR) + "/fulcrum-gpubench");
  EXPECT_EQ(build.built, made);
  EXPECT_EQ(build.not_built_reason.empty(), made) << build.not_built_reason;
}

TEST(GpuBenchTest, ProgramThatFindsNoGpuIsSkippedWithItsReason) {
  // A stand-in program with fulcrum-gpubench's no-GPU contract: exit 3 and {"error": ...}.
  auto dir = std::filesystem::temp_directory_path() / "fulcrum-gpubench-test";
  std::filesystem::create_directories(dir);
  auto script = dir / "gpubench.sh";
  {
    std::ofstream out(script);
    out << "#!/bin/sh\necho '{\"error\": \"no usable CUDA GPU: 0 devices\"}'\nexit 3\n";
  }
  std::filesystem::permissions(script, std::filesystem::perms::owner_all);
  GpuBenchOptions options;
  options.program = script.string();
  auto run = RunGpuBench(options);
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->skipped_reason, "no usable CUDA GPU: 0 devices");

  {
    std::ofstream out(script);
    out << "#!/bin/sh\necho 'Segmentation fault' >&2\nexit 139\n";
  }
  auto crashed = RunGpuBench(options);
  EXPECT_FALSE(crashed.ok());
  std::filesystem::remove_all(dir);
}

TEST(GpuBenchTest, RealGpuBenchWhenBuilt) {
  std::string program = std::string(FULCRUM_BUILD_DIR) + "/fulcrum-gpubench";
  if (!std::filesystem::exists(program))
    GTEST_SKIP() << "fulcrum-gpubench not built (no CUDA toolkit)";
  GpuBenchOptions options;
  options.program = program;
  options.quick = true;
  options.stability_seconds = 2;
  auto run = RunGpuBench(options);
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  if (run->skipped_reason) {
    // No GPU here: the reason must say so, never a made-up figure.
    EXPECT_NE(run->skipped_reason->find("GPU"), std::string::npos) << *run->skipped_reason;
    EXPECT_TRUE(run->json_text.empty());
    return;
  }
  auto report = BuildGpuReport(run->json_text, nullptr);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  for (const auto& gemm : (*report)["gemm"])
    EXPECT_TRUE(gemm["correct"].get<bool>()) << gemm.dump();
}

}  // namespace
}  // namespace fulcrum::nodecheck
