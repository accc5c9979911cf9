// Fast ticks: SampleFast reads only the cheap fields; merging them over the last full sample;
// the 1 s aggregate that is stored.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "telemetry/nvml_source.h"

namespace fulcrum::telemetry {
namespace {

TEST(FastFieldsTest, MergeTakesOnlyTheFastFields) {
  GpuSample full;
  full.index = 0;
  full.timestamp = 10;
  full.temperature_celsius = 60;
  full.sm_clock_mhz = 1980;
  full.memory_used_bytes = 1e9;
  full.new_xids = {13};
  GpuSample fast;
  fast.index = 0;
  fast.timestamp = 10.3;
  fast.temperature_celsius = 95;
  fast.power_watts = 300;
  fast.last_xid = 79;
  fast.new_xids = {79};
  fast.xid_counts = {{79, 1}};
  MergeFastFields(fast, full);
  EXPECT_EQ(full.timestamp, 10.3);
  EXPECT_EQ(*full.temperature_celsius, 95);
  EXPECT_EQ(*full.power_watts, 300);
  EXPECT_FALSE(full.utilization_gpu_pct.has_value());  // unknown in the fast reading
  EXPECT_EQ(*full.sm_clock_mhz, 1980);                 // not a fast field: kept
  EXPECT_EQ(*full.memory_used_bytes, 1e9);
  EXPECT_EQ(*full.last_xid, 79);
  EXPECT_EQ(full.new_xids, std::vector<int>{79});
}

TEST(FastFieldsTest, AggregateStoresTheMeanAndEveryXid) {
  FastFieldAggregate aggregate;
  auto reading = [](double temperature, std::optional<double> power, std::vector<int> xids) {
    GpuSample s;
    s.temperature_celsius = temperature;
    s.power_watts = power;
    s.new_xids = std::move(xids);
    return GpuSnapshot{s};
  };
  aggregate.Add(reading(60, 100, {}));
  aggregate.Add(reading(90, std::nullopt, {48}));
  aggregate.Add(reading(90, 200, {}));
  GpuSnapshot full = reading(80, 300, {13});
  full[0].sm_clock_mhz = 1980;
  aggregate.Add(full);  // the full sample is a reading too
  aggregate.Apply(full);
  EXPECT_DOUBLE_EQ(*full[0].temperature_celsius, 80);  // (60 + 90 + 90 + 80) / 4
  EXPECT_DOUBLE_EQ(*full[0].power_watts, 200);         // unknown readings do not count
  EXPECT_EQ(*full[0].sm_clock_mhz, 1980);
  EXPECT_EQ(full[0].new_xids, (std::vector<int>{48, 13}));  // each XID once, in order
  GpuSnapshot next = reading(70, 100, {});
  aggregate.Apply(next);  // started over: nothing added since
  EXPECT_EQ(*next[0].temperature_celsius, 70);
  EXPECT_TRUE(next[0].new_xids.empty());
}

TEST(FastFieldsTest, NvmlFastSampleCallsOnlyTheCheapGetters) {
  std::string script =
      (std::filesystem::temp_directory_path() / ("fake_nvml_fast_" + std::to_string(getpid())))
          .string();
  setenv("FAKE_NVML_SCRIPT", script.c_str(), 1);
  std::ofstream(script) << "count 2\ngpu 1 temperature 88\n";
  auto source = NvmlSource::Open(FAKE_NVML_LIBRARY);
  ASSERT_TRUE(source.ok()) << source.status().ToString();
  void* lib = dlopen(FAKE_NVML_LIBRARY, RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(lib, nullptr);
  auto count = reinterpret_cast<int (*)(const char*)>(dlsym(lib, "fakeNvmlCallCount"));
  int ecc = count("nvmlDeviceGetTotalEccErrors"), fields = count("nvmlDeviceGetFieldValues");
  int clocks = count("nvmlDeviceGetClockInfo"), temps = count("nvmlDeviceGetTemperature");
  std::ofstream(script) << "count 2\ngpu 1 temperature 88\nxid 1 79\n";
  auto snap = (*source)->SampleFast();
  ASSERT_TRUE(snap.ok());
  ASSERT_EQ(snap->size(), 2u);
  const GpuSample& g = (*snap)[1];
  EXPECT_EQ(*g.temperature_celsius, 88);
  EXPECT_TRUE(g.utilization_gpu_pct && g.power_watts);
  EXPECT_EQ(g.new_xids, std::vector<int>{79});  // XID events through the event set
  EXPECT_EQ(*g.last_xid, 79);
  EXPECT_FALSE(g.sm_clock_mhz || g.ecc_uncorrected || g.energy_joules || g.processes);
  EXPECT_EQ(count("nvmlDeviceGetTemperature"), temps + 2);
  EXPECT_EQ(count("nvmlDeviceGetTotalEccErrors"), ecc);
  EXPECT_EQ(count("nvmlDeviceGetFieldValues"), fields);
  EXPECT_EQ(count("nvmlDeviceGetClockInfo"), clocks);
  // The event was handed out once: the next full sample has no new XID but keeps the count.
  auto full = (*source)->Sample();
  EXPECT_TRUE((*full)[1].new_xids.empty());
  EXPECT_EQ((*full)[1].xid_counts, (std::map<int, double>{{79, 1}}));
  dlclose(lib);
  std::filesystem::remove(script);
}

}  // namespace
}  // namespace fulcrum::telemetry
