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
  EXPECT_NE(run->skipped_reason->find("without the CUDA GPU bench"), std::string::npos);
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
