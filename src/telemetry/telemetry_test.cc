#include <dlfcn.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include "telemetry/nvml_source.h"
#include "telemetry/replay_source.h"
#include "telemetry/sim_source.h"

namespace fulcrum::telemetry {
namespace {

std::vector<Fault> Scenario(const std::string& yaml) {
  auto faults = ParseScenario(yaml, "test.yaml");
  EXPECT_TRUE(faults.ok()) << faults.status().ToString();
  return faults.ok() ? *faults : std::vector<Fault>{};
}

TEST(SimSourceTest, OverheatTakesEffectInTheNextSampleAtItsTime) {
  ManualClock clock;
  SimSource sim(2, Scenario("- {at: 5s, gpu: 1, fault: overheat}"), clock);
  clock.Advance(4.9);
  auto before = sim.Sample();
  ASSERT_TRUE(before.ok());
  EXPECT_LT(*(*before)[1].temperature_celsius, 80);
  clock.Advance(0.1);
  auto after = sim.Sample();
  EXPECT_EQ(*(*after)[1].temperature_celsius, 95);
  EXPECT_LT(*(*after)[0].temperature_celsius, 80);  // other GPU untouched
}

TEST(SimSourceTest, HeatRampIsGradualAndForEnds) {
  ManualClock clock;
  SimSource sim(1, Scenario("- {at: 0s, gpu: 0, fault: heat-ramp, rate: 1, for: 20s}"), clock);
  double t0 = *(*sim.Sample())[0].temperature_celsius;
  clock.Advance(10);
  double t10 = *(*sim.Sample())[0].temperature_celsius;
  EXPECT_GT(t10, t0 + 5);
  EXPECT_LT(t10, 95);
  clock.Advance(15);
  EXPECT_LT(*(*sim.Sample())[0].temperature_celsius, 80);
}

TEST(SimSourceTest, FaultKindsChangeTheRightFields) {
  ManualClock clock;
  SimSource sim(6, Scenario(R"(
- {at: 1s, gpu: 0, fault: thermal-slowdown}
- {at: 1s, gpu: 1, fault: power-cap}
- {at: 1s, gpu: 2, fault: "xid:79"}
- {at: 1s, gpu: 3, fault: ecc-uncorrectable}
- {at: 1s, gpu: 4, fault: utilization-collapse}
- {at: 1s, gpu: 5, fault: process-exit}
)"),
                clock);
  clock.Advance(1);
  auto snap = *sim.Sample();
  EXPECT_TRUE(*snap[0].clock_event_reasons & kReasonHwThermal);
  EXPECT_TRUE(*snap[1].clock_event_reasons & kReasonSwPowerCap);
  EXPECT_EQ(*snap[1].power_watts, *snap[1].power_limit_watts);
  EXPECT_EQ(*snap[2].last_xid, 79);
  EXPECT_FALSE(snap[2].temperature_celsius.has_value());  // fallen off the bus: unknown, not 0
  EXPECT_EQ(*snap[3].ecc_uncorrected, 1);
  EXPECT_EQ(*snap[4].utilization_gpu_pct, 2);
  EXPECT_TRUE(snap[5].processes->empty());
}

TEST(SimSourceTest, MemoryLeakReachesFull) {
  ManualClock clock;
  SimSource sim(1, Scenario("- {at: 0s, gpu: 0, fault: memory-leak, over: 30s}"), clock);
  clock.Advance(30);
  auto s = (*sim.Sample())[0];
  EXPECT_DOUBLE_EQ(*s.memory_used_bytes, *s.memory_total_bytes);
}

TEST(SimSourceTest, ScenarioDuplicateKeysRefused) {
  auto dup = ParseScenario("- {at: 1s, gpu: 0, fault: overheat, gpu: 1}\n", "s.yaml");
  ASSERT_FALSE(dup.ok());
  EXPECT_EQ(dup.status().message(),
            "s.yaml:1: [0].gpu: expected each key once in a mapping, found \"gpu\" again "
            "(first on line 1)");
  EXPECT_FALSE(ParseScenario("faults: []\nfaults: []\n", "s.yaml").ok());
}

TEST(SimSourceTest, ScenarioNonFiniteNumbersRefused) {
  for (const char* bad : {".inf", ".nan", "nan", "1e400"}) {
    auto rate = ParseScenario(
        std::string("- {at: 1s, gpu: 0, fault: heat-ramp, rate: ") + bad + "}\n", "s.yaml");
    ASSERT_FALSE(rate.ok()) << bad;
    EXPECT_EQ(
        rate.status().message(),
        std::string("s.yaml:1: faults[0].rate: expected a rate in C/s > 0, found \"") + bad + "\"");
    auto at =
        ParseScenario(std::string("- {at: ") + bad + ", gpu: 0, fault: overheat}\n", "s.yaml");
    ASSERT_FALSE(at.ok()) << bad;
  }
}

TEST(SimSourceTest, ScenarioErrorsNameFileLineAndField) {
  auto bad = ParseScenario(
      "- {at: 5s, gpu: 0, fault: overheat}\n- {at: soon, gpu: 0, fault: overheat}\n", "s.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("s.yaml:2"), std::string::npos) << bad.status().message();
  EXPECT_NE(bad.status().message().find("s.yaml:2: faults[1].at: expected a duration"),
            std::string::npos)
      << bad.status().message();
  auto typo = ParseScenario("- {at: 1s, gpu: 0, fault: overheat, ovr: 5s}\n", "s.yaml");
  ASSERT_FALSE(typo.ok());
  EXPECT_NE(typo.status().message().find("faults[0].ovr: expected a known field"),
            std::string::npos)
      << typo.status().message();
  EXPECT_NE(typo.status().message().find("did you mean over"), std::string::npos);
  auto unknown = ParseScenario("- {at: 1s, gpu: 0, fault: meltdown}", "s.yaml");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().message(),
            "s.yaml:1: faults[0].fault: expected a fault (overheat, heat-ramp, thermal-slowdown, "
            "power-cap, ecc-uncorrectable, utilization-collapse, memory-leak, process-exit, hang, "
            "recover, xid:N), found \"meltdown\"");
  auto near = ParseScenario("- {at: 1s, gpu: 0, fault: overheet}", "s.yaml");
  ASSERT_FALSE(near.ok());
  EXPECT_NE(near.status().message().find("did you mean overheat?"), std::string::npos)
      << near.status().message();
  EXPECT_FALSE(ParseScenario("- {at: 1s, gpu: 0, fault: 'xid:abc'}", "s.yaml").ok());
}

TEST(ReplaySourceTest, RecordThenReplayRoundTrips) {
  auto path = std::filesystem::temp_directory_path() / "fulcrum_replay_test.jsonl";
  std::filesystem::remove(path);
  ManualClock clock;
  SimSource sim(2, Scenario("- {at: 1s, gpu: 0, fault: overheat}"), clock);
  {
    auto rec = Recorder::Open(path.string());
    ASSERT_TRUE(rec.ok());
    for (int i = 0; i < 3; ++i) {
      ASSERT_TRUE((*rec)->Append(*sim.Sample(), clock.UnixSeconds()).ok());
      clock.Advance(1);
    }
  }
  auto replay = ReplaySource::Open(path.string(), clock);
  ASSERT_TRUE(replay.ok()) << replay.status().ToString();
  EXPECT_EQ((*replay)->gpu_count(), 2);
  EXPECT_EQ((*replay)->frames(), 3u);
  EXPECT_LT(*(*(*replay)->Sample())[0].temperature_celsius, 90);
  auto second = *(*replay)->Sample();
  EXPECT_EQ(*second[0].temperature_celsius, 95);
  EXPECT_EQ(second[1].uuid, "GPU-5151c0de-0000-4000-8000-000000000001");
  EXPECT_DOUBLE_EQ(second[0].timestamp, clock.UnixSeconds());
  std::filesystem::remove(path);
}

TEST(ReplaySourceTest, BadLineNamesFileAndLine) {
  auto path = std::filesystem::temp_directory_path() / "fulcrum_replay_bad.jsonl";
  std::ofstream(path) << "{\"t\": 1, \"gpus\": []}\nnot json\n";
  auto replay = ReplaySource::Open(path.string(), SystemClock());
  ASSERT_FALSE(replay.ok());
  EXPECT_NE(replay.status().message().find(":2"), std::string::npos);
  std::filesystem::remove(path);
}

class NvmlSourceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    script_ = (std::filesystem::temp_directory_path() / ("fake_nvml_" + std::to_string(getpid())))
                  .string();
    setenv("FAKE_NVML_SCRIPT", script_.c_str(), 1);
  }
  void TearDown() override { std::filesystem::remove(script_); }
  void Write(const std::string& text) { std::ofstream(script_) << text; }
  std::string script_;
};

TEST_F(NvmlSourceTest, ReadsScriptedValuesThroughDlopen) {
  Write(
      "count 2\ngpu 0 name NVIDIA A100-SXM4-80GB\ngpu 0 temperature 71\ngpu 0 power_mw 250500\n"
      "gpu 0 process 4242 1073741824\ngpu 1 reasons 64\n");
  auto source = NvmlSource::Open(FAKE_NVML_LIBRARY);
  ASSERT_TRUE(source.ok()) << source.status().ToString();
  EXPECT_EQ((*source)->gpu_count(), 2);
  auto snap = (*source)->Sample();
  ASSERT_TRUE(snap.ok());
  const GpuSample& g0 = (*snap)[0];
  EXPECT_EQ(g0.name, "NVIDIA A100-SXM4-80GB");
  EXPECT_EQ(*g0.temperature_celsius, 71);
  EXPECT_DOUBLE_EQ(*g0.power_watts, 250.5);
  EXPECT_DOUBLE_EQ(*g0.pcie_tx_bytes_per_second, 1000 * 1024.0);
  ASSERT_TRUE(g0.processes.has_value());
  ASSERT_EQ(g0.processes->size(), 1u);
  EXPECT_EQ((*g0.processes)[0].pid, 4242);
  EXPECT_EQ(*(*g0.processes)[0].used_memory_bytes, 1073741824.0);
  EXPECT_EQ(*(*snap)[1].clock_event_reasons, kReasonHwThermal);
  EXPECT_EQ(*g0.last_xid, 0);
}

TEST_F(NvmlSourceTest, UnsupportedIsUnknownAndProbedOnce) {
  Write("count 1\ngpu 0 power_mw unsupported\ngpu 0 ecc_uncorrected unsupported\n");
  auto source = NvmlSource::Open(FAKE_NVML_LIBRARY);
  ASSERT_TRUE(source.ok());
  EXPECT_FALSE((*source)->capabilities(0).power);
  EXPECT_TRUE((*source)->capabilities(0).temperature);
  void* lib = dlopen(FAKE_NVML_LIBRARY, RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(lib, nullptr);
  auto count = reinterpret_cast<int (*)(const char*)>(dlsym(lib, "fakeNvmlCallCount"));
  int power_calls = count("nvmlDeviceGetPowerUsage");
  int temp_calls = count("nvmlDeviceGetTemperature");
  for (int i = 0; i < 3; ++i) {
    auto snap = (*source)->Sample();
    EXPECT_FALSE((*snap)[0].power_watts.has_value());
    EXPECT_FALSE((*snap)[0].ecc_uncorrected.has_value());
    EXPECT_TRUE((*snap)[0].temperature_celsius.has_value());
  }
  EXPECT_EQ(count("nvmlDeviceGetPowerUsage"), power_calls);  // never asked again
  EXPECT_EQ(count("nvmlDeviceGetTemperature"), temp_calls + 3);
  dlclose(lib);
}

TEST_F(NvmlSourceTest, XidEventsAndLostGpu) {
  Write("count 2\n");
  auto source = NvmlSource::Open(FAKE_NVML_LIBRARY);
  ASSERT_TRUE(source.ok());
  EXPECT_EQ(*(*(*source)->Sample())[1].last_xid, 0);
  Write("count 2\nxid 1 79\ngpu 1 lost\n");
  auto snap = *(*source)->Sample();
  EXPECT_EQ(*snap[1].last_xid, 79);
  EXPECT_FALSE(snap[1].temperature_celsius.has_value());
  EXPECT_EQ(*snap[0].last_xid, 0);
  EXPECT_TRUE(snap[0].temperature_celsius.has_value());
}

TEST(NvmlSourceOpenTest, MissingLibraryIsUnavailable) {
  auto source = NvmlSource::Open("/nonexistent/libnvidia-ml.so.1");
  ASSERT_FALSE(source.ok());
  EXPECT_EQ(source.status().code(), StatusCode::kUnavailable);
}

}  // namespace
}  // namespace fulcrum::telemetry

namespace fulcrum::telemetry {
namespace {

TEST(SimSourceTest, ShippedExampleScenarioLoads) {
  auto faults = LoadScenario(std::string(FULCRUM_SOURCE_DIR) + "/examples/faults.yaml");
  ASSERT_TRUE(faults.ok()) << faults.status().ToString();
  EXPECT_EQ(faults->size(), 10u);
}

}  // namespace
}  // namespace fulcrum::telemetry

namespace fulcrum::telemetry {
namespace {

TEST(MetricTableTest, ReasonFlagsAndUnknownStayUnknown) {
  GpuSample s;
  const MetricDef* thermal = FindMetric("gpu_thermal_slowdown");
  const MetricDef* capped = FindMetric("gpu_power_capped");
  ASSERT_NE(thermal, nullptr);
  ASSERT_NE(capped, nullptr);
  EXPECT_FALSE(thermal->extract(s).has_value());  // reasons unknown: no value, not 0
  s.clock_event_reasons = kReasonSwThermal | kReasonHwPowerBrake;
  EXPECT_EQ(*thermal->extract(s), 0.0);
  EXPECT_EQ(*capped->extract(s), 0.0);
  s.clock_event_reasons = kReasonHwThermal | kReasonSwPowerCap;
  EXPECT_EQ(*thermal->extract(s), 1.0);
  EXPECT_EQ(*capped->extract(s), 1.0);
  s.sm_clock_mhz = 1980;
  EXPECT_EQ(*FindMetric("gpu_sm_clock_hertz")->extract(s), 1.98e9);
  EXPECT_EQ(FindMetric("gpu_bogus"), nullptr);
  EXPECT_EQ(ClockEventReasonNames(kReasonHwThermal | kReasonGpuIdle),
            (std::vector<std::string>{"gpu_idle", "hw_thermal_slowdown"}));
}

}  // namespace
}  // namespace fulcrum::telemetry
