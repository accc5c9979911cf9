#include "nodecheck/sim_bench.h"
#include "nodecheck/testing_datasheet.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace fulcrum::nodecheck {
namespace {

Datasheet H100() { return TestH100Datasheet(); }

nlohmann::json Bench(SimGpuSpec spec, double seconds = 5) {
  auto source = SimBenchSource::Create(std::move(spec));
  EXPECT_TRUE(source.ok()) << source.status().ToString();
  GpuBenchOptions options;
  options.stability_seconds = seconds;
  auto run = (*source)->RunGpuBench(options);
  EXPECT_TRUE(run.ok());
  EXPECT_FALSE(run->skipped_reason);
  return nlohmann::json::parse(run->json_text);
}

TEST(SimBenchTest, DeliversTheChosenFractionOfTheDatasheet) {
  SimGpuSpec spec{H100(), 4, 0.6, 0, {}};
  auto doc = Bench(spec);
  EXPECT_EQ(doc["device"]["name"], "H100-SXM5-80GB");
  EXPECT_EQ(doc["device"]["gpu_count"], 4);
  EXPECT_NEAR(doc["gemm"][0]["tflops"].get<double>(), 0.6 * 989, 1e-9);
  EXPECT_NEAR(doc["memory_bandwidth_bytes_per_second"].get<double>(), 0.6 * 3.35e12, 1);
  ASSERT_EQ(doc["p2p"].size(), 3u);
  EXPECT_NEAR(doc["p2p"][0]["bytes_per_second"].get<double>(), 0.6 * 450e9, 1);  // one direction
  EXPECT_NEAR(doc["h2d_bytes_per_second"].get<double>(), 0.6 * 31.5e9, 1);
  EXPECT_NEAR(doc["stability"]["mean_tflops"].get<double>(), 0.6 * 989, 1e-6);
  // The bench report of the real program's JSON reads the sim's too.
  Datasheet sheet = H100();
  auto report = BuildGpuReport(doc.dump(), &sheet);
  ASSERT_TRUE(report.ok());
  EXPECT_EQ((*report)["gemm"][0]["verdict"], "low");
  EXPECT_EQ((*report)["stability"]["verdict"], "ok");
}

TEST(SimBenchTest, SwingAndThrottlingShowInTheStabilityRun) {
  SimGpuSpec swinging{H100(), 1, 1.0, 0.4, {}};
  auto doc = Bench(swinging);
  const auto& st = doc["stability"];
  EXPECT_EQ(st["intervals"].size(), 5u);
  double swing = (st["max_tflops"].get<double>() - st["min_tflops"].get<double>()) /
                 st["mean_tflops"].get<double>();
  EXPECT_GT(swing, 0.30);
  EXPECT_EQ(StabilityVerdict(st["min_tflops"], st["max_tflops"], st["mean_tflops"]), "unstable");

  auto fault = telemetry::ParseFaultName("thermal-slowdown");
  ASSERT_TRUE(fault.ok());
  fault->at_seconds = 60;
  SimGpuSpec throttling{H100(), 1, 1.0, 0, {*fault}};
  auto source = SimBenchSource::Create(throttling);
  ASSERT_TRUE(source.ok());
  SimInterval before = (*source)->IntervalAt(0, 59);
  SimInterval after = (*source)->IntervalAt(0, 61);
  EXPECT_NEAR(before.tflops, 989, 1e-6);
  EXPECT_LT(after.tflops, 0.7 * before.tflops);
  EXPECT_NE(*after.clock_event_reasons & telemetry::kReasonHwThermal, 0u);
  auto long_run = Bench(throttling, 120);
  EXPECT_EQ(long_run["stability"]["intervals"].size(), 120u);
  EXPECT_LT(long_run["stability"]["min_tflops"].get<double>(), 0.7 * 989);
}

TEST(SimBenchTest, DoctorFactsComeFromTheSim) {
  auto source = SimBenchSource::Create({H100(), 2, 1.0, 0, {}});
  ASSERT_TRUE(source.ok());
  DoctorOptions options;
  options.python_timeout_seconds = 30;
  SystemFacts facts = (*source)->GatherFacts(options);
  ASSERT_EQ(facts.gpus.size(), 2u);
  EXPECT_EQ(facts.driver_version, SimBenchSource::DriverVersion());
  EXPECT_EQ(facts.cuda_toolkit_version, SimBenchSource::CudaVersion());
  EXPECT_EQ(facts.gpus[0].name, "H100-SXM5-80GB");
  EXPECT_EQ(facts.gpus[0].persistence_mode, true);
  EXPECT_TRUE(facts.disk_free_bytes.has_value());  // the host half is probed for real
  EXPECT_TRUE(facts.frameworks.empty()) << "this host's Python is not the sim node's";
  EXPECT_FALSE(facts.python_probe_note.empty());
}

TEST(SimBenchTest, BadSpecsNameTheFlag) {
  for (SimGpuSpec spec : {SimGpuSpec{H100(), 0, 1.0, 0, {}}, SimGpuSpec{H100(), 1, 0, 0, {}},
                          SimGpuSpec{H100(), 1, 1.0, 1.5, {}}}) {
    auto source = SimBenchSource::Create(spec);
    ASSERT_FALSE(source.ok());
    EXPECT_NE(source.status().message().find("--sim-"), std::string::npos)
        << source.status().message();
  }
  auto fault = telemetry::ParseFaultName("overheat");
  fault->gpu = 3;
  EXPECT_FALSE(SimBenchSource::Create({H100(), 2, 1.0, 0, {*fault}}).ok());
  auto source = SimBenchSource::Create({H100(), 2, 1.0, 0, {}});
  GpuBenchOptions options;
  options.device = 2;
  EXPECT_FALSE((*source)->RunGpuBench(options).ok());
}

}  // namespace
}  // namespace fulcrum::nodecheck
