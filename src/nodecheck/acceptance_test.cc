#include "nodecheck/acceptance.h"

#include <gtest/gtest.h>

#include "nodecheck/sim_bench.h"
#include "nodecheck/testing_datasheet.h"

namespace fulcrum::nodecheck {
namespace {

using nlohmann::json;

Datasheet H100() { return TestH100Datasheet(); }

// What a plan of 8 x H100 SXM with NVLink assumed.
NodeExpectation Planned() {
  NodeExpectation e;
  e.origin = "plan.json rank 1";
  e.gpu = "H100-SXM5-80GB";
  e.gpus_per_node = 8;
  e.gemm_tflops = 989;
  e.memory_bandwidth_bytes_per_second = 3.35e12;
  e.interconnect = "nvlink";
  e.interconnect_bytes_per_second = 450e9;
  e.host_bytes_per_second = 31.5e9;
  e.disk_write_bytes_per_second = 131072000;
  return e;
}

// The `bench --json` object for a sim node (the same report the real program's JSON gets).
json BenchOf(SimGpuSpec spec, double disk_bytes_per_second = 5e8) {
  auto source = SimBenchSource::Create(spec);
  EXPECT_TRUE(source.ok());
  GpuBenchOptions options;
  options.stability_seconds = 5;
  auto run = (*source)->RunGpuBench(options);
  Datasheet sheet = spec.datasheet;
  auto report = BuildGpuReport(run->json_text, &sheet);
  EXPECT_TRUE(report.ok());
  return {{"gpu", *report},
          {"gpu_skipped_reason", nullptr},
          {"disk", {{"write_bytes_per_second", disk_bytes_per_second}}}};
}

const AcceptanceCheck& CheckNamed(const Acceptance& a, const std::string& name) {
  for (const auto& c : a.checks) {
    if (c.name == name) return c;
  }
  static AcceptanceCheck none;
  ADD_FAILURE() << "no check " << name;
  return none;
}

std::vector<DoctorCheck> HealthyStack() {
  return {{"nvidia-driver", CheckStatus::kOk, "driver 550.54.15", ""},
          {"cuda-toolkit", CheckStatus::kOk, "12.4", ""},
          {"disk-free", CheckStatus::kFail, "not the node's fault", ""}};
}

TEST(AcceptanceTest, HealthyNodeIsAccepted) {
  Acceptance a = Evaluate(Planned(), BenchOf({H100(), 8, 1.0, 0, {}}), HealthyStack(), 8);
  EXPECT_EQ(a.verdict, "accept");
  EXPECT_TRUE(a.reasons.empty());
  for (const char* name :
       {"gpu-model", "gpu-count", "gemm-bf16", "memory-bandwidth", "interconnect", "host-link",
        "disk-write", "stability", "doctor-nvidia-driver", "doctor-cuda-toolkit"}) {
    EXPECT_EQ(CheckNamed(a, name).verdict, "accept") << name;
  }
  // Only the node's stack counts: a full checkpoint disk is the job's setup, not a lemon.
  for (const auto& c : a.checks) EXPECT_NE(c.name, "doctor-disk-free");
}

TEST(AcceptanceTest, NodeAtSixtyPercentOfItsDatasheetIsRejected) {
  Acceptance a = Evaluate(Planned(), BenchOf({H100(), 8, 0.6, 0, {}}), HealthyStack(), 8);
  EXPECT_EQ(a.verdict, "reject");
  EXPECT_EQ(CheckNamed(a, "gemm-bf16").verdict, "reject");
  EXPECT_EQ(CheckNamed(a, "memory-bandwidth").verdict, "reject");
  EXPECT_EQ(CheckNamed(a, "interconnect").verdict, "reject");
  EXPECT_EQ(CheckNamed(a, "gpu-model").verdict, "accept");
  ASSERT_FALSE(a.reasons.empty());
  EXPECT_NE(a.reasons[0].find("60 %"), std::string::npos) << a.reasons[0];
  EXPECT_NE(a.reasons[0].find("989.0 TFLOP/s"), std::string::npos) << a.reasons[0];
  // At the threshold it passes: 70 % of the plan's figure is still accepted.
  EXPECT_EQ(Evaluate(Planned(), BenchOf({H100(), 8, 0.7, 0, {}}), HealthyStack(), 8).verdict,
            "accept");
}

TEST(AcceptanceTest, WrongModelCountSlowDiskSwingAndBrokenStackAreEachRejected) {
  SimGpuSpec a100{H100(), 8, 1.0, 0, {}};
  a100.datasheet.name = "A100-SXM4-80GB";
  EXPECT_EQ(CheckNamed(Evaluate(Planned(), BenchOf(a100), {}, 8), "gpu-model").verdict, "reject");
  Acceptance four = Evaluate(Planned(), BenchOf({H100(), 4, 1.0, 0, {}}), {}, 4);
  EXPECT_EQ(CheckNamed(four, "gpu-count").verdict, "reject");
  EXPECT_EQ(four.verdict, "reject");
  Acceptance slow_disk = Evaluate(Planned(), BenchOf({H100(), 8, 1.0, 0, {}}, 5e7), {}, 8);
  EXPECT_EQ(CheckNamed(slow_disk, "disk-write").verdict, "reject");
  Acceptance noisy = Evaluate(Planned(), BenchOf({H100(), 8, 1.0, 0.4, {}}), {}, 8);
  EXPECT_EQ(CheckNamed(noisy, "stability").verdict, "reject");
  EXPECT_EQ(noisy.verdict, "reject");
  Acceptance steady = Evaluate(Planned(), BenchOf({H100(), 8, 1.0, 0.2, {}}), {}, 8);
  EXPECT_EQ(CheckNamed(steady, "stability").verdict, "accept");
  std::vector<DoctorCheck> old_driver = {
      {"cuda-toolkit", CheckStatus::kFail, "CUDA 12.4 needs driver >= 550.54.14", ""}};
  Acceptance stack = Evaluate(Planned(), BenchOf({H100(), 8, 1.0, 0, {}}), old_driver, 8);
  EXPECT_EQ(CheckNamed(stack, "doctor-cuda-toolkit").verdict, "reject");
  EXPECT_EQ(stack.verdict, "reject");
  json wrong = BenchOf({H100(), 8, 1.0, 0, {}});
  wrong["gpu"]["gemm"][0]["correct"] = false;
  Acceptance faulty = Evaluate(Planned(), wrong, {}, 8);
  EXPECT_EQ(CheckNamed(faulty, "gemm-bf16").verdict, "reject");
  EXPECT_NE(CheckNamed(faulty, "gemm-bf16").reason.find("wrong results"), std::string::npos);
  std::vector<DoctorCheck> cpu_torch = {
      {"framework:torch", CheckStatus::kFail, "torch 2.5 is a CPU-only build", ""}};
  Acceptance torch = Evaluate(Planned(), BenchOf({H100(), 8, 1.0, 0, {}}), cpu_torch, 8);
  EXPECT_EQ(CheckNamed(torch, "doctor-framework:torch").verdict, "reject");
}

TEST(AcceptanceTest, UnmeasuredGpuIsNotAcceptedAndUnknownIsNotZero) {
  json no_gpu = {{"gpu", nullptr}, {"gpu_skipped_reason", "no usable CUDA GPU"}, {"disk", nullptr}};
  Acceptance a = Evaluate(Planned(), no_gpu, {}, std::nullopt);
  EXPECT_EQ(a.verdict, "reject");
  EXPECT_NE(CheckNamed(a, "gpu-model").reason.find("no usable CUDA GPU"), std::string::npos);
  EXPECT_EQ(CheckNamed(a, "gpu-count").verdict, "unknown");
  EXPECT_EQ(CheckNamed(a, "gemm-bf16").verdict, "unknown");
  EXPECT_TRUE(CheckNamed(a, "gemm-bf16").measured.is_null());
  EXPECT_EQ(a.reasons.size(), 1u) << "one reason, not one per unmeasured figure";
  // A plan figure the catalog does not have is unknown, not a reject.
  NodeExpectation unsourced = Planned();
  unsourced.memory_bandwidth_bytes_per_second.reset();
  Acceptance b = Evaluate(unsourced, BenchOf({H100(), 8, 1.0, 0, {}}), {}, 8);
  EXPECT_EQ(CheckNamed(b, "memory-bandwidth").verdict, "unknown");
  EXPECT_EQ(b.verdict, "accept");
}

TEST(AcceptanceTest, JsonCarriesTheContractFields) {
  Acceptance a = Evaluate(Planned(), BenchOf({H100(), 8, 0.6, 0, {}}), {}, 8);
  json doc = AcceptanceJson(a, Planned());
  EXPECT_EQ(doc["verdict"], "reject");
  EXPECT_EQ(doc["reasons"].size(), a.reasons.size());
  EXPECT_EQ(doc["expected_from"], "plan.json rank 1");
  for (const auto& c : doc["checks"]) {
    for (const char* key : {"name", "expected", "measured", "verdict"}) {
      EXPECT_TRUE(c.contains(key)) << key;
    }
  }
  EXPECT_EQ(FormatCheckValue(json(131072000.0), "bytes/s"), "131 MB/s");
  EXPECT_EQ(FormatCheckValue(json(0.4), "swing"), "40 %");
}

}  // namespace
}  // namespace fulcrum::nodecheck
