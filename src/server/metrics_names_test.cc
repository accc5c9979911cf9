// /metrics under dcgm-exporter's names (--metrics-names dcgm|both), the XID counter by code and
// the `_info` series.
#include <gtest/gtest.h>

#include "server/metrics.h"
#include "support/run_binary.h"

namespace fulcrum::server {
namespace {

telemetry::GpuSnapshot Gpus() {
  telemetry::GpuSample a;
  a.index = 0;
  a.uuid = "GPU-a";
  a.name = "NVIDIA H100 80GB HBM3";
  a.pci_bus_id = "00000000:18:00.0";
  a.minor = 0;
  a.driver_version = "550.54.15";
  a.temperature_celsius = 71;
  a.sm_clock_mhz = 1980;
  a.memory_used_bytes = 4.0 * 1024 * 1024 * 1024;
  a.energy_joules = 2.5;
  a.last_xid = 79;
  a.xid_counts = {{13, 2}, {79, 1}};
  telemetry::GpuSample b = a;
  b.index = 1;
  b.uuid = "GPU-b";
  b.minor = 1;
  b.temperature_celsius.reset();  // unknown on this GPU
  b.xid_counts.clear();
  b.last_xid = 0;
  return {a, b};
}

bool Has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(MetricsNamesTest, ParsesTheThreeModesAndRejectsOthers) {
  EXPECT_EQ(*ParseMetricsNames("fulcrum"), MetricsNames::kFulcrum);
  EXPECT_EQ(*ParseMetricsNames("dcgm"), MetricsNames::kDcgm);
  EXPECT_EQ(*ParseMetricsNames("both"), MetricsNames::kBoth);
  auto bad = ParseMetricsNames("DCGM-exporter");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "--metrics-names 'DCGM-exporter': expected fulcrum, dcgm or both");
}

TEST(MetricsNamesTest, DcgmModeUsesDcgmExporterNamesLabelsAndUnits) {
  std::string text = RenderMetrics(Gpus(), "node-1", {}, {}, MetricsNames::kDcgm);
  EXPECT_TRUE(Has(text,
                  "DCGM_FI_DEV_GPU_TEMP{gpu=\"0\",UUID=\"GPU-a\",pci_bus_id=\"00000000:18:00.0\","
                  "device=\"nvidia0\",modelName=\"NVIDIA H100 80GB HBM3\",Hostname=\"node-1\","
                  "DCGM_FI_DRIVER_VERSION=\"550.54.15\"} 71\n"))
      << text;
  EXPECT_FALSE(Has(text, "DCGM_FI_DEV_GPU_TEMP{gpu=\"1\""));  // unknown: no series
  EXPECT_TRUE(Has(text, "DCGM_FI_DEV_SM_CLOCK{gpu=\"0\""));
  EXPECT_TRUE(Has(text, "} 1980\n"));                                      // MHz
  EXPECT_TRUE(Has(text, "DCGM_FI_DRIVER_VERSION=\"550.54.15\"} 4096\n"));  // FB_USED in MiB
  EXPECT_TRUE(Has(text, "# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter"));
  EXPECT_TRUE(Has(text, "DCGM_FI_DRIVER_VERSION=\"550.54.15\"} 2500\n"));  // mJ
  EXPECT_TRUE(Has(text, "DCGM_FI_DEV_XID_ERRORS{gpu=\"0\""));
  EXPECT_FALSE(Has(text, "fulcrum_gpu_"));
  EXPECT_TRUE(Has(text, "fulcrum_agent_samples_total"));  // the agent's own metrics stay
}

TEST(MetricsNamesTest, BothModeHasBothSets) {
  std::string text = RenderMetrics(Gpus(), "node-1", {}, {}, MetricsNames::kBoth);
  EXPECT_TRUE(Has(text, "fulcrum_gpu_temperature_celsius{gpu=\"0\""));
  EXPECT_TRUE(Has(text, "DCGM_FI_DEV_GPU_TEMP{gpu=\"0\""));
  std::string fulcrum_only = RenderMetrics(Gpus(), "node-1", {}, {});
  EXPECT_FALSE(Has(fulcrum_only, "DCGM_FI_"));
}

TEST(MetricsNamesTest, XidCounterByCodeAndInfoSeries) {
  std::string text = RenderMetrics(Gpus(), "node-1", {}, {});
  EXPECT_TRUE(Has(text, "# TYPE fulcrum_gpu_xid_errors_total counter"));
  EXPECT_TRUE(Has(text,
                  "fulcrum_gpu_xid_errors_total{gpu=\"0\",uuid=\"GPU-a\","
                  "model=\"NVIDIA H100 80GB HBM3\",hostname=\"node-1\",xid=\"13\"} 2\n"))
      << text;
  EXPECT_TRUE(Has(text, "xid=\"79\"} 1\n"));
  EXPECT_FALSE(Has(text, "fulcrum_gpu_xid_errors_total{gpu=\"1\""));
  EXPECT_TRUE(Has(text,
                  "fulcrum_gpu_info{gpu=\"1\",uuid=\"GPU-b\",model=\"NVIDIA H100 80GB "
                  "HBM3\",hostname=\"node-1\",pci_bus_id=\"00000000:18:00.0\","
                  "device=\"nvidia1\",driver_version=\"550.54.15\"} 1\n"))
      << text;
  EXPECT_TRUE(Has(text, "# TYPE fulcrum_gpu_energy_joules_total counter"));
  EXPECT_TRUE(Has(text, "fulcrum_gpu_sm_clock_hertz{gpu=\"0\""));
  EXPECT_FALSE(Has(text, "_hz{"));
}

// promtool parses every mode; fulcrum's own names also pass its lint (dcgm-exporter's names
// break the `_total` convention by design, so that mode is checked for parsing only).
TEST(MetricsNamesTest, PromtoolParsesEveryMode) {
  for (MetricsNames names : {MetricsNames::kFulcrum, MetricsNames::kDcgm, MetricsNames::kBoth}) {
    testing::RunOptions in;
    in.stdin_text = RenderMetrics(Gpus(), "host", {}, {}, names);
    testing::RunOutput check = testing::RunProgram("promtool", {"check", "metrics"}, in);
    int rc = check.exit_code;
    std::string output = check.out + check.err;
    if (names == MetricsNames::kFulcrum) {
      EXPECT_EQ(rc, 0) << output;
      EXPECT_EQ(output, "") << output;
    } else {
      EXPECT_EQ(output.find("error while linting"), std::string::npos) << output;
      // Lint remarks, if any, are about dcgm-exporter's own names only.
      size_t start = 0;
      for (size_t end; (end = output.find('\n', start)) != std::string::npos; start = end + 1) {
        std::string line = output.substr(start, end - start);
        EXPECT_EQ(line.rfind("DCGM_FI_", 0), 0u) << line;
      }
    }
  }
}

}  // namespace
}  // namespace fulcrum::server
