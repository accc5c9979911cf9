// agent.db schema v2: the Prometheus renames migrate a v1 file (values kept, PCIe rates turned
// into byte counters), old names still answer QuerySeries, and XID events are stored.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "store/agent_db.h"
#include "support/run_binary.h"

namespace fulcrum::store {
namespace {

namespace fs = std::filesystem;

std::string TempDir(const std::string& name) { return testing::MakeTempDir(name); }

// A file as release 1 wrote it: schema v1, samples of GPU 0 at t = 100, 102, 103 with a 2 GHz
// SM clock and PCIe TX at 1000, 2000, 4000 bytes/s.
std::string WriteV1File(const std::string& dir) {
  std::string path = dir + "/agent.db";
  auto db = Database::Open(path);
  EXPECT_TRUE(db.ok()) << db.status().ToString();
  EXPECT_TRUE(db->Migrate(1, AgentDbMigrations()).ok());
  EXPECT_TRUE(
      db->Exec("INSERT INTO samples (gpu, ts, gpu_sm_clock_hz, gpu_pcie_tx_bytes_per_second,"
               " gpu_pcie_rx_bytes_per_second) VALUES (0, 100, 2e9, 1000, 10),"
               " (0, 102, 2e9, 2000, 20), (0, 103, 1.5e9, 4000, 40)")
          .ok());
  EXPECT_TRUE(db->Exec("INSERT INTO rollups (gpu, minute, samples, gpu_sm_clock_hz,"
                       " gpu_pcie_tx_bytes_per_second) VALUES (0, 0, 60, 1.9e9, 500),"
                       " (0, 60, 60, 1.8e9, 700)")
                  .ok());
  return path;
}

TEST(AgentDbV2Test, V1FileMigratesKeepingValuesUnderTheNewNames) {
  std::string dir = TempDir("agentdb-v2-migrate");
  WriteV1File(dir);
  auto db = AgentDb::OpenInDataDir(dir);
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  EXPECT_EQ(*db->db().UserVersion(), AgentDb::kSchemaVersion);
  auto clock = db->QuerySeries("gpu_sm_clock_hertz", 0, 0, 200, std::nullopt, {1e9, 1e9});
  ASSERT_TRUE(clock.ok()) << clock.status().ToString();
  ASSERT_EQ(clock->size(), 1u);
  EXPECT_EQ((*clock)[0].points,
            (std::vector<std::pair<double, double>>{{100, 2e9}, {102, 2e9}, {103, 1.5e9}}));
  // The counter integrates the old rate over the sample spacing: 0, 2 s x 2000, + 1 s x 4000.
  auto tx = db->QuerySeries("gpu_pcie_tx_bytes_total", 0, 0, 200, std::nullopt, {1e9, 1e9});
  ASSERT_TRUE(tx.ok());
  EXPECT_EQ((*tx)[0].points,
            (std::vector<std::pair<double, double>>{{100, 0}, {102, 4000}, {103, 8000}}));
  auto rx = db->QuerySeries("gpu_pcie_rx_bytes_total", 0, 0, 200, std::nullopt, {1e9, 1e9});
  EXPECT_EQ((*rx)[0].points.back().second, 80);
  // Rollups: the mean rate over each minute, times 60 s, summed.
  auto rolled = db->QuerySeries("gpu_pcie_tx_bytes_total", 0, 0, 1e12, std::nullopt, {1, 1e12});
  ASSERT_TRUE(rolled.ok());
  EXPECT_EQ((*rolled)[0].points, (std::vector<std::pair<double, double>>{{0, 30000}, {60, 72000}}));
  // New rows are written under the new columns.
  telemetry::GpuSample s;
  s.index = 0;
  s.timestamp = 104;
  s.sm_clock_mhz = 1980;
  s.pcie_tx_bytes = 9000;
  WriteBatch batch;
  batch.snapshots.push_back({s});
  ASSERT_TRUE(db->Write(batch).ok());
  auto again = db->QuerySeries("gpu_sm_clock_hertz", 0, 104, 200, std::nullopt, {1e9, 1e9});
  EXPECT_EQ((*again)[0].points.back().second, 1.98e9);
}

TEST(AgentDbV2Test, OldNamesAnswerAsBefore) {
  std::string dir = TempDir("agentdb-v2-old-names");
  WriteV1File(dir);
  auto db = AgentDb::OpenInDataDir(dir);
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  auto clock = db->QuerySeries("gpu_sm_clock_hz", 0, 0, 200, std::nullopt, {1e9, 1e9});
  ASSERT_TRUE(clock.ok()) << clock.status().ToString();
  EXPECT_EQ((*clock)[0].points.size(), 3u);
  // The per-second gauge of release 1 is the rate of the counter: the rates stored back then.
  auto rate = db->QuerySeries("gpu_pcie_tx_bytes_per_second", 0, 0, 200, std::nullopt, {1e9, 1e9});
  ASSERT_TRUE(rate.ok()) << rate.status().ToString();
  EXPECT_EQ((*rate)[0].points, (std::vector<std::pair<double, double>>{{102, 2000}, {103, 4000}}));
  auto bucketed = db->QuerySeries("gpu_pcie_tx_bytes_per_second", 0, 0, 200, 10.0, {1e9, 1e9});
  ASSERT_TRUE(bucketed.ok());
  EXPECT_EQ((*bucketed)[0].points, (std::vector<std::pair<double, double>>{{100, 3000}}));
  auto unknown = db->QuerySeries("gpu_clock_hz", 0, 0, 200, std::nullopt, {1e9, 1e9});
  EXPECT_EQ(unknown.status().code(), StatusCode::kInvalidInput);
}

TEST(AgentDbV2Test, EveryXidIsStoredAsAnEvent) {
  std::string dir = TempDir("agentdb-v2-xid");
  auto db = AgentDb::OpenInDataDir(dir);
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  telemetry::GpuSample a, b;
  a.index = 0;
  a.timestamp = 50;
  a.new_xids = {13, 13};
  b.index = 1;
  b.timestamp = 51;
  b.new_xids = {79};
  WriteBatch batch;
  batch.snapshots.push_back({a});
  batch.snapshots.push_back({b});
  ASSERT_TRUE(db->Write(batch).ok());
  auto events = db->ListXidEvents(0);
  ASSERT_TRUE(events.ok()) << events.status().ToString();
  ASSERT_EQ(events->size(), 3u);
  EXPECT_EQ((*events)[0].xid, 13);
  EXPECT_EQ((*events)[1].xid, 13);
  EXPECT_EQ((*events)[2].gpu, 1);
  EXPECT_EQ((*events)[2].xid, 79);
  EXPECT_EQ((*events)[2].at, 51);
  EXPECT_EQ(db->ListXidEvents(51)->size(), 1u);
}

}  // namespace
}  // namespace fulcrum::store
