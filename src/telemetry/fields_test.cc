// The fields of issue 15 (dcgm-exporter's default counters): read through NVML (the fake
// libnvidia-ml.so.1), produced by the sim, carried by the sample JSON, and named for
// dcgm-exporter in its units. XIDs as events with counts.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "telemetry/nvml_api.h"
#include "telemetry/nvml_source.h"
#include "telemetry/sim_source.h"

namespace fulcrum::telemetry {
namespace {

class NvmlFieldsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    script_ =
        (std::filesystem::temp_directory_path() / ("fake_nvml_fields_" + std::to_string(getpid())))
            .string();
    setenv("FAKE_NVML_SCRIPT", script_.c_str(), 1);
  }
  void TearDown() override { std::filesystem::remove(script_); }
  void Write(const std::string& text) { std::ofstream(script_) << text; }
  std::string script_;
};

TEST_F(NvmlFieldsTest, ReadsEveryNewFieldInItsUnit) {
  Write(
      "count 2\ndriver 535.161.08\ngpu 0 memory_temp 71\ngpu 0 energy_mj 5000000\n"
      "gpu 0 pcie_replay 3\ngpu 0 nvlink_tx_kib 10\ngpu 0 nvlink_rx_kib 20\n"
      "gpu 0 remapped_cor 2\ngpu 0 remapped_unc 1\ngpu 0 remap_failure 1\ngpu 0 enc_util 12\n"
      "gpu 0 dec_util 34\ngpu 0 mem_total 85899345920\ngpu 0 mem_used 1073741824\n"
      "gpu 0 mem_reserved 536870912\ngpu 0 pci_bus_id 00000000:3B:00.0\ngpu 0 minor 5\n");
  auto source = NvmlSource::Open(FAKE_NVML_LIBRARY);
  ASSERT_TRUE(source.ok()) << source.status().ToString();
  auto snap = (*source)->Sample();
  ASSERT_TRUE(snap.ok());
  const GpuSample& g = (*snap)[0];
  EXPECT_EQ(g.driver_version, "535.161.08");
  EXPECT_EQ(g.pci_bus_id, "00000000:3B:00.0");
  EXPECT_EQ(g.minor, 5);
  EXPECT_EQ(*g.memory_temperature_celsius, 71);
  EXPECT_DOUBLE_EQ(*g.energy_joules, 5000);  // NVML: mJ
  EXPECT_EQ(*g.pcie_replays, 3);
  EXPECT_DOUBLE_EQ(*g.nvlink_tx_bytes, 10 * 1024.0);  // NVML: KiB
  EXPECT_DOUBLE_EQ(*g.nvlink_rx_bytes, 20 * 1024.0);
  EXPECT_EQ(*g.remapped_rows_correctable, 2);
  EXPECT_EQ(*g.remapped_rows_uncorrectable, 1);
  EXPECT_EQ(*g.row_remap_failure, 1);
  EXPECT_EQ(*g.encoder_utilization_pct, 12);
  EXPECT_EQ(*g.decoder_utilization_pct, 34);
  EXPECT_DOUBLE_EQ(*g.memory_reserved_bytes, 536870912);
  EXPECT_DOUBLE_EQ(*g.memory_free_bytes, 85899345920.0 - 1073741824 - 536870912);
  // GPU 1 has the fake's defaults: present, not zero-filled unknowns.
  EXPECT_TRUE((*snap)[1].memory_temperature_celsius.has_value());
  EXPECT_EQ((*snap)[1].minor, 1);
}

TEST_F(NvmlFieldsTest, UnsupportedNewFieldsAreAbsentAndProbedOnce) {
  Write(
      "count 1\ngpu 0 memory_temp unsupported\ngpu 0 nvlink_tx_kib unsupported\n"
      "gpu 0 enc_util unsupported\ndriver unsupported\n");
  auto source = NvmlSource::Open(FAKE_NVML_LIBRARY);
  ASSERT_TRUE(source.ok());
  const NvmlCapabilities& caps = (*source)->capabilities(0);
  auto has = [&](unsigned id) {
    return std::find(caps.fields.begin(), caps.fields.end(), id) != caps.fields.end();
  };
  EXPECT_FALSE(has(nvml::kFieldMemoryTemp));
  EXPECT_FALSE(has(nvml::kFieldNvlinkDataTx));
  EXPECT_TRUE(has(nvml::kFieldTotalEnergy));
  EXPECT_FALSE(caps.encoder);
  EXPECT_TRUE(caps.decoder);
  void* lib = dlopen(FAKE_NVML_LIBRARY, RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(lib, nullptr);
  auto count = reinterpret_cast<int (*)(const char*)>(dlsym(lib, "fakeNvmlCallCount"));
  int encoder_calls = count("nvmlDeviceGetEncoderUtilization");
  for (int i = 0; i < 3; ++i) {
    auto snap = (*source)->Sample();
    ASSERT_TRUE(snap.ok());
    const GpuSample& g = (*snap)[0];
    EXPECT_FALSE(g.memory_temperature_celsius.has_value());
    EXPECT_FALSE(g.nvlink_tx_bytes.has_value());
    EXPECT_FALSE(g.encoder_utilization_pct.has_value());
    EXPECT_TRUE(g.energy_joules.has_value());
    EXPECT_TRUE(g.decoder_utilization_pct.has_value());
    EXPECT_TRUE(g.driver_version.empty());
  }
  EXPECT_EQ(count("nvmlDeviceGetEncoderUtilization"), encoder_calls);  // never asked again
  dlclose(lib);
}

TEST_F(NvmlFieldsTest, EachXidIsAnEventCountedByCode) {
  Write("count 1\n");
  auto source = NvmlSource::Open(FAKE_NVML_LIBRARY);
  ASSERT_TRUE(source.ok());
  EXPECT_TRUE((*(*source)->Sample())[0].new_xids.empty());
  Write("count 1\nxid 0 13\nxid 0 13\nxid 0 48\n");
  GpuSample first = (*(*source)->Sample())[0];
  EXPECT_EQ(first.new_xids, (std::vector<int>{13, 13, 48}));
  EXPECT_EQ(first.xid_counts, (std::map<int, double>{{13, 2}, {48, 1}}));
  EXPECT_EQ(*first.last_xid, 48);
  GpuSample next = (*(*source)->Sample())[0];
  EXPECT_TRUE(next.new_xids.empty());            // delivered once
  EXPECT_EQ(next.xid_counts, first.xid_counts);  // counts never go back
}

TEST_F(NvmlFieldsTest, PcieByteCountersGrowWithTheRate) {
  Write("count 1\ngpu 0 pcie_tx_kb 1000\ngpu 0 pcie_rx_kb 2000\n");
  auto source = NvmlSource::Open(FAKE_NVML_LIBRARY);
  ASSERT_TRUE(source.ok());
  GpuSample a = (*(*source)->Sample())[0];
  usleep(50 * 1000);
  GpuSample b = (*(*source)->Sample())[0];
  ASSERT_TRUE(a.pcie_tx_bytes && b.pcie_tx_bytes);
  double dt = b.timestamp - a.timestamp;
  EXPECT_NEAR(*b.pcie_tx_bytes - *a.pcie_tx_bytes, 1000 * 1024.0 * dt, 1);
  EXPECT_NEAR(*b.pcie_rx_bytes - *a.pcie_rx_bytes, 2000 * 1024.0 * dt, 1);
}

TEST_F(NvmlFieldsTest, ProfilingRatiosFromGpmWhereSupportedAbsentElsewhere) {
  Write("count 2\ngpu 0 gpm 1\ngpu 0 gpm_graphics 90\ngpu 0 gpm_tensor 45\ngpu 0 gpm_dram 30\n");
  auto source = NvmlSource::Open(FAKE_NVML_LIBRARY);
  ASSERT_TRUE(source.ok()) << source.status().ToString();
  EXPECT_TRUE((*source)->capabilities(0).gpm);
  EXPECT_FALSE((*source)->capabilities(1).gpm);  // a pre-Hopper GPU
  GpuSample first = (*(*source)->Sample())[0];
  EXPECT_FALSE(first.tensor_active_ratio.has_value());  // GPM needs two samples
  auto snap = *(*source)->Sample();
  EXPECT_DOUBLE_EQ(*snap[0].gr_engine_active_ratio, 0.90);
  EXPECT_DOUBLE_EQ(*snap[0].tensor_active_ratio, 0.45);
  EXPECT_DOUBLE_EQ(*snap[0].dram_active_ratio, 0.30);
  EXPECT_FALSE(snap[1].tensor_active_ratio || snap[1].gr_engine_active_ratio ||
               snap[1].dram_active_ratio);
  // Fast ticks take no GPM sample: the interval of the ratios is full sample to full sample.
  ASSERT_TRUE((*source)->SampleFast().ok());
  EXPECT_DOUBLE_EQ(*(*(*source)->Sample())[0].tensor_active_ratio, 0.45);
}

std::vector<Fault> Scenario(const std::string& yaml) {
  auto faults = ParseScenario(yaml, "test.yaml");
  EXPECT_TRUE(faults.ok()) << faults.status().ToString();
  return faults.ok() ? *faults : std::vector<Fault>{};
}

TEST(SimFieldsTest, CountersIntegrateAndXidsArriveOnce) {
  ManualClock clock;
  SimSource sim(2, Scenario("- {at: 2s, gpu: 1, fault: \"xid:48\"}"), clock);
  GpuSample a = (*sim.Sample())[0];
  clock.Advance(1);
  auto mid = *sim.Sample();
  clock.Advance(1);
  auto at_fault = *sim.Sample();
  clock.Advance(1);
  auto after = *sim.Sample();
  const GpuSample& b = mid[0];
  EXPECT_NEAR(*b.energy_joules - *a.energy_joules, *b.power_watts * 1.0, 1e-6);
  EXPECT_NEAR(*b.pcie_tx_bytes - *a.pcie_tx_bytes, *b.pcie_tx_bytes_per_second, 1e-3);
  EXPECT_GT(*b.nvlink_tx_bytes, *a.nvlink_tx_bytes);
  for (const GpuSample& s : {a, b}) {
    EXPECT_TRUE(s.memory_temperature_celsius && s.memory_free_bytes && s.memory_reserved_bytes);
    EXPECT_TRUE(s.tensor_active_ratio && s.gr_engine_active_ratio && s.dram_active_ratio);
    EXPECT_FALSE(s.driver_version.empty());
    EXPECT_FALSE(s.pci_bus_id.empty());
  }
  EXPECT_TRUE(mid[1].new_xids.empty());
  EXPECT_EQ(at_fault[1].new_xids, std::vector<int>{48});
  EXPECT_TRUE(after[1].new_xids.empty());
  EXPECT_EQ(after[1].xid_counts, (std::map<int, double>{{48, 1}}));
  EXPECT_TRUE(after[0].xid_counts.empty());
}

TEST(SimFieldsTest, HangIsBusyAtLowPowerWithIdleTensorPipes) {
  ManualClock clock;
  SimSource sim(2, Scenario("- {at: 1s, gpu: 0, fault: hang}"), clock);
  clock.Advance(1);
  auto snap = *sim.Sample();
  EXPECT_EQ(*snap[0].utilization_gpu_pct, 100);
  EXPECT_LT(*snap[0].power_watts / *snap[0].power_limit_watts, 0.4);
  EXPECT_EQ(*snap[0].tensor_active_ratio, 0);
  EXPECT_GT(*snap[1].power_watts / *snap[1].power_limit_watts, 0.4);  // the other GPU trains
}

TEST(SampleJsonTest, NewFieldsRoundTripAndUnknownStaysNull) {
  GpuSample s;
  s.index = 3;
  s.pci_bus_id = "00000000:3B:00.0";
  s.minor = 3;
  s.driver_version = "550.54.15";
  s.energy_joules = 12.5;
  s.nvlink_rx_bytes = 4096;
  s.new_xids = {79};
  s.xid_counts = {{79, 2}};
  nlohmann::json j = SampleToJson(s);
  EXPECT_TRUE(j["memory_temperature_celsius"].is_null());
  auto back = SampleFromJson(j);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->pci_bus_id, s.pci_bus_id);
  EXPECT_EQ(back->minor, 3);
  EXPECT_EQ(back->driver_version, s.driver_version);
  EXPECT_EQ(*back->energy_joules, 12.5);
  EXPECT_EQ(*back->nvlink_rx_bytes, 4096);
  EXPECT_FALSE(back->memory_temperature_celsius.has_value());
  EXPECT_EQ(back->new_xids, s.new_xids);
  EXPECT_EQ(back->xid_counts, s.xid_counts);
}

const DcgmMetricDef* FindDcgm(std::string_view name) {
  for (const DcgmMetricDef& m : DcgmMetrics()) {
    if (name == m.name) return &m;
  }
  return nullptr;
}

TEST(DcgmMetricsTest, ValuesInDcgmExporterUnits) {
  GpuSample s;
  s.sm_clock_mhz = 1980;
  s.memory_used_bytes = 2.0 * 1024 * 1024 * 1024;
  s.energy_joules = 3;
  s.utilization_gpu_pct = 87;
  s.tensor_active_ratio = 0.4;
  EXPECT_EQ(*FindDcgm("DCGM_FI_DEV_SM_CLOCK")->extract(s), 1980);                  // MHz
  EXPECT_EQ(*FindDcgm("DCGM_FI_DEV_FB_USED")->extract(s), 2048);                   // MiB
  EXPECT_EQ(*FindDcgm("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION")->extract(s), 3000);  // mJ
  EXPECT_EQ(*FindDcgm("DCGM_FI_DEV_GPU_UTIL")->extract(s), 87);                    // percent
  EXPECT_EQ(*FindDcgm("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE")->extract(s), 0.4);        // ratio
  EXPECT_FALSE(FindDcgm("DCGM_FI_DEV_MEMORY_TEMP")->extract(s).has_value());
  EXPECT_EQ(FindDcgm("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION")->type, MetricType::kCounter);
}

TEST(RenamedMetricsTest, EveryOldNamePointsAtACurrentMetric) {
  for (const RenamedMetric& r : RenamedMetrics()) {
    EXPECT_EQ(FindMetric(r.old_name), nullptr) << r.old_name;
    const MetricDef* now = FindMetric(r.new_name);
    ASSERT_NE(now, nullptr) << r.new_name;
    if (r.kind == RenamedMetric::kRateOf) {
      EXPECT_EQ(now->type, MetricType::kCounter);
    }
  }
  ASSERT_NE(FindRenamedMetric("gpu_sm_clock_hz"), nullptr);
  EXPECT_STREQ(FindRenamedMetric("gpu_sm_clock_hz")->new_name, "gpu_sm_clock_hertz");
  // Prometheus naming: counters end in _total, no `_hz`.
  for (const MetricDef& m : Metrics()) {
    std::string name = m.name;
    EXPECT_EQ(name.find("_hz"), std::string::npos) << name;
    bool total = name.size() > 6 && name.compare(name.size() - 6, 6, "_total") == 0;
    EXPECT_EQ(m.type == MetricType::kCounter, total) << name;
  }
}

}  // namespace
}  // namespace fulcrum::telemetry

namespace fulcrum::telemetry {
namespace {

// Every counter dcgm-exporter enables by default (tests/fixtures/dcgm, with its source) is
// exported under --metrics-names dcgm with the same Prometheus type, except the two the fixture
// says why not.
TEST(DcgmMetricsTest, CoverDcgmExportersDefaultCounters) {
  std::ifstream in(std::string(FULCRUM_SOURCE_DIR) + "/tests/fixtures/dcgm/default_counters.json");
  nlohmann::json fixture = nlohmann::json::parse(in);
  ASSERT_GE(fixture["counters"].size(), 20u);
  for (const auto& c : fixture["counters"]) {
    std::string field = c["field"];
    if (fixture["not_exported"].contains(field)) continue;
    const DcgmMetricDef* m = FindDcgm(field);
    ASSERT_NE(m, nullptr) << field;
    EXPECT_EQ(m->type == MetricType::kCounter ? "counter" : "gauge", c["type"].get<std::string>())
        << field;
  }
}

}  // namespace
}  // namespace fulcrum::telemetry
