#include "store/agent_db.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <set>

#include "store/outbox_sqlite.h"

namespace fulcrum::store {
namespace {

namespace fs = std::filesystem;

std::string TempDir(const std::string& name) {
  fs::path dir =
      fs::path(FULCRUM_BUILD_DIR) / "Testing" / "tmp" / (name + "-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir.string();
}

telemetry::GpuSnapshot Snapshot(double t, int gpus, double temperature) {
  telemetry::GpuSnapshot snap;
  for (int g = 0; g < gpus; ++g) {
    telemetry::GpuSample s;
    s.index = g;
    s.uuid = "GPU-" + std::to_string(g);
    s.name = "Test GPU";
    s.timestamp = t;
    s.temperature_celsius = temperature + g;
    s.utilization_gpu_pct = 50;
    // power unknown: must be stored as NULL, not 0
    s.clock_event_reasons = g == 1 ? telemetry::kReasonHwThermal : 0;
    snap.push_back(s);
  }
  return snap;
}

std::set<std::string> Columns(Database& db, const std::string& table) {
  std::set<std::string> names;
  auto info = db.Prepare("PRAGMA table_info(" + table + ")");
  while (info->Step()) names.insert(info->ColumnText(1));
  return names;
}

// The stored columns come from the one metric list: every metric /metrics can show is stored
// and rolled up, and a file that lacks a metric's column (made before the metric existed) gets
// it on open.
TEST(AgentDbTest, EveryTelemetryMetricHasASampleAndRollupColumn) {
  std::string dir = TempDir("agentdb-columns");
  {
    auto db = AgentDb::OpenInDataDir(dir);
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    ASSERT_EQ(SampleColumns().size(), telemetry::Metrics().size());
    for (const char* table : {"samples", "rollups"}) {
      std::set<std::string> columns = Columns(db->db(), table);
      for (const telemetry::MetricDef& m : telemetry::Metrics()) {
        EXPECT_EQ(columns.count(m.name), 1u) << table << " lacks " << m.name;
      }
    }
    ASSERT_TRUE(db->db().Exec("ALTER TABLE samples DROP COLUMN gpu_pcie_rx_bytes_total").ok());
    ASSERT_TRUE(db->db().Exec("ALTER TABLE rollups DROP COLUMN gpu_xid_last").ok());
  }
  auto reopened = AgentDb::OpenInDataDir(dir);
  ASSERT_TRUE(reopened.ok()) << reopened.status().ToString();
  EXPECT_EQ(Columns(reopened->db(), "samples").count("gpu_pcie_rx_bytes_total"), 1u);
  EXPECT_EQ(Columns(reopened->db(), "rollups").count("gpu_xid_last"), 1u);
  WriteBatch batch;
  batch.snapshots.push_back(Snapshot(1000, 1, 60));
  EXPECT_TRUE(reopened->Write(batch).ok());
}

// agent.db (and its WAL) and the data dir are private to the agent's user, or shared with the
// `fulcrum` group where it exists; never world-readable whatever the umask.
TEST(AgentDbTest, DataDirAndDatabaseFilesAreNotWorldReadable) {
  const DataModes modes = DataFileModes();
  const std::string dir = TempDir("agentdb-modes") + "/nested/data";
  mode_t old_umask = umask(0);  // the modes must not depend on the caller's umask
  auto db = AgentDb::OpenInDataDir(dir);
  umask(old_umask);
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  WriteBatch batch;
  batch.snapshots.push_back(Snapshot(1000, 1, 60));
  ASSERT_TRUE(db->Write(batch).ok());
  auto mode = [](const std::string& path) { return fs::status(path).permissions(); };
  EXPECT_EQ(static_cast<unsigned>(mode(dir)), modes.dir_mode);
  EXPECT_EQ(static_cast<unsigned>(mode(fs::path(dir).parent_path().string())), modes.dir_mode);
  for (const char* file : {"/agent.db", "/agent.db-wal"}) {
    ASSERT_TRUE(fs::exists(dir + file)) << file;
    EXPECT_EQ(static_cast<unsigned>(mode(dir + file)), modes.file_mode) << file;
    EXPECT_EQ(static_cast<unsigned>(mode(dir + file)) & 07, 0u) << file;
  }
}

TEST(AgentDbTest, WritesAndQueriesRawSeries) {
  auto db = AgentDb::OpenInDataDir(TempDir("agentdb-raw"));
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  WriteBatch batch;
  for (int i = 0; i < 10; ++i) batch.snapshots.push_back(Snapshot(1000 + i, 2, 60 + i));
  ASSERT_TRUE(db->Write(batch).ok());
  auto series = db->QuerySeries("gpu_temperature_celsius", 0, 1005, 1010, std::nullopt);
  ASSERT_TRUE(series.ok()) << series.status().ToString();
  ASSERT_EQ(series->size(), 1u);
  ASSERT_EQ((*series)[0].points.size(), 5u);
  EXPECT_EQ((*series)[0].points[0], std::make_pair(1005.0, 65.0));
  auto all = db->QuerySeries("gpu_thermal_slowdown", std::nullopt, 0, 1010, std::nullopt);
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[1].points[0].second, 1.0);
  EXPECT_EQ((*all)[0].points[0].second, 0.0);
  auto unknown = db->QuerySeries("gpu_power_watts", std::nullopt, 0, 1010, std::nullopt);
  EXPECT_TRUE(unknown->empty());  // never 0 for an unknown value
  auto stepped = db->QuerySeries("gpu_temperature_celsius", 0, 1000, 1010, 5.0);
  ASSERT_EQ((*stepped)[0].points.size(), 2u);
  EXPECT_DOUBLE_EQ((*stepped)[0].points[0].second, 62.0);  // mean of 60..64
  auto bad = db->QuerySeries("gpu_temperature; DROP TABLE samples", 0, 0, 1, std::nullopt);
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidInput);
}

TEST(AgentDbTest, RollsUpCompleteMinutesAndAppliesRetention) {
  auto db = AgentDb::OpenInDataDir(TempDir("agentdb-rollup"));
  ASSERT_TRUE(db.ok());
  WriteBatch batch;
  // 3 minutes of samples at 1 s starting on a minute boundary; temperature = minute * 10.
  for (int i = 0; i < 180; ++i) batch.snapshots.push_back(Snapshot(6000 + i, 1, (i / 60) * 10.0));
  ASSERT_TRUE(db->Write(batch).ok());
  Retention retention{90, 3600};
  ASSERT_TRUE(db->Maintain(6000 + 179.5, retention).ok());
  EXPECT_EQ(*db->CountRollups(), 2);   // the third minute is not complete yet
  EXPECT_EQ(*db->CountSamples(), 90);  // raw kept 90 s
  auto rolled =
      db->QuerySeries("gpu_temperature_celsius", 0, 6000, 6000 + 179.5, std::nullopt, retention);
  ASSERT_EQ(rolled->size(), 1u);
  ASSERT_EQ((*rolled)[0].points.size(), 2u);
  EXPECT_EQ((*rolled)[0].points[0], std::make_pair(6000.0, 0.0));
  EXPECT_EQ((*rolled)[0].points[1], std::make_pair(6060.0, 10.0));
  ASSERT_TRUE(db->Maintain(6000 + 3700, retention).ok());
  EXPECT_EQ(*db->CountRollups(), 1);  // minute 6000 and 6060 too old; 6120 rolled up
}

TEST(AgentDbTest, PrunesOnlyFinishedNotificationsAndResolvedAlerts) {
  std::string dir = TempDir("agentdb-prune");
  auto db = AgentDb::OpenInDataDir(dir);
  ASSERT_TRUE(db.ok());
  auto outbox = SqliteOutbox::Open(dir + "/agent.db");
  ASSERT_TRUE(outbox.ok());
  Notification old_done, old_pending;
  old_done.id = "done";
  old_pending.id = "pending";
  old_done.created_at = old_pending.created_at = 100;
  ASSERT_TRUE((*outbox)->Enqueue(old_done).ok());
  ASSERT_TRUE((*outbox)->Enqueue(old_pending).ok());
  ASSERT_TRUE((*outbox)->MarkDelivered("done", 101).ok());
  WriteBatch b;
  b.snapshots.push_back(Snapshot(100, 1, 50));
  b.alert_changes.push_back(
      {0, "a", "Old", "resolved", "warning", 0, 1, 1, 100, 100.0, 150.0, "", "{}"});
  b.alert_changes.push_back(
      {0, "b", "Open", "firing", "warning", 0, 1, 1, 100, 100.0, {}, "", "{}"});
  ASSERT_TRUE(db->Write(b).ok());
  ASSERT_TRUE(db->Maintain(100 + 40 * 86400.0, Retention{}).ok());
  EXPECT_EQ((*outbox)->StateOf("done").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(*(*outbox)->StateOf("pending"), "pending");
  auto alerts = db->ListAlerts(0);
  ASSERT_EQ(alerts->size(), 1u);
  EXPECT_EQ((*alerts)[0].name, "Open");
}

TEST(AgentDbTest, AlertsUpsertListAndStates) {
  std::string dir = TempDir("agentdb-alerts");
  {
    auto db = AgentDb::OpenInDataDir(dir);
    ASSERT_TRUE(db.ok());
    AgentAlert a{0, "fp1", "GpuTooHot", "pending", "critical", 0, 90, 85, 100, {}, {}, "hot", "{}"};
    WriteBatch b1;
    b1.alert_changes.push_back(a);
    b1.states = std::vector<AlertStateRow>{{"GpuTooHot", 0, "pending", 100, 0, 100, 90}};
    ASSERT_TRUE(db->Write(b1).ok());
    a.status = "firing";
    a.fired_at = 400;
    AgentAlert gone{0, "fp2", "Other", "pending", "warning", 1, 1, 1, 200, {}, {}, "", "{}"};
    WriteBatch b2;
    b2.alert_changes = {a, gone};
    ASSERT_TRUE(db->Write(b2).ok());
    gone.status = "inactive";  // cleared before `for`: removed
    WriteBatch b3;
    b3.alert_changes = {gone};
    ASSERT_TRUE(db->Write(b3).ok());
  }
  auto db = AgentDb::OpenInDataDir(dir, /*read_only=*/true);  // survives a restart
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  auto alerts = db->ListAlerts(0);
  ASSERT_EQ(alerts->size(), 1u);
  EXPECT_EQ((*alerts)[0].status, "firing");
  EXPECT_EQ(*(*alerts)[0].fired_at, 400);
  auto states = db->LoadAlertStates();
  ASSERT_EQ(states->size(), 1u);
  EXPECT_EQ((*states)[0].rule_name, "GpuTooHot");
}

TEST(AgentDbTest, RefusesNewerSchema) {
  std::string dir = TempDir("agentdb-newer");
  {
    auto db = AgentDb::OpenInDataDir(dir);
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE(db->db().Exec("PRAGMA user_version = 99").ok());
  }
  auto db = AgentDb::OpenInDataDir(dir);
  ASSERT_FALSE(db.ok());
  EXPECT_NE(db.status().message().find("newer"), std::string::npos) << db.status().message();
}

Notification Note(const std::string& id, double due_mono, const std::string& order_key = "") {
  Notification n;
  n.id = id;
  n.receiver = "default";
  n.format = "generic";
  n.body = "{\"x\": 1}";
  n.order_key = order_key;
  n.created_at = 1.7e9;  // wall time, for humans: scheduling never reads it
  n.next_attempt_at = 1.7e9;
  n.due_mono = due_mono;
  return n;
}

TEST(SqliteOutboxTest, FollowsTheOutboxContract) {
  std::string dir = TempDir("outbox");
  auto outbox = SqliteOutbox::Open(dir + "/agent.db");
  ASSERT_TRUE(outbox.ok()) << outbox.status().ToString();
  SqliteOutbox& o = **outbox;
  ASSERT_TRUE(o.Enqueue(Note("b", 20)).ok());
  ASSERT_TRUE(o.Enqueue(Note("a", 10)).ok());
  Notification dup = Note("a", 99);
  dup.body = "changed";
  ASSERT_TRUE(o.Enqueue(dup).ok());  // existing id: no change
  auto due = o.FetchDue(15, 10);
  ASSERT_EQ(due->size(), 1u);
  EXPECT_EQ((*due)[0].id, "a");
  EXPECT_EQ((*due)[0].body, "{\"x\": 1}");
  Notification retry = (*due)[0];
  retry.attempts = 1;
  retry.due_mono = 50;
  retry.age_seconds = 5;
  retry.touched_mono = 15;
  retry.last_error = "HTTP 503";
  ASSERT_TRUE(o.ScheduleRetry(retry).ok());
  due = o.FetchDue(30, 10);
  ASSERT_EQ(due->size(), 1u);
  EXPECT_EQ((*due)[0].id, "b");
  due = o.FetchDue(60, 10);
  ASSERT_EQ(due->size(), 2u);
  EXPECT_EQ((*due)[0].id, "b");  // enqueue order
  EXPECT_EQ((*due)[1].id, "a");
  EXPECT_EQ((*due)[1].attempts, 1);
  EXPECT_EQ((*due)[1].last_error, "HTTP 503");
  EXPECT_EQ((*due)[1].age_seconds, 5);
  EXPECT_EQ((*due)[1].touched_mono, 15);
  ASSERT_TRUE(o.MarkDelivered("a", 61).ok());
  ASSERT_TRUE(o.MarkFailed("b", 3, "HTTP 400").ok());
  EXPECT_EQ(*o.PendingCount(), 0u);
  EXPECT_EQ(*o.StateOf("a"), "delivered");
  EXPECT_EQ(*o.StateOf("b"), "failed");
  EXPECT_EQ(o.StateOf("zzz").status().code(), StatusCode::kNotFound);
}

// Issue 29: one alert's notifications go in order (its resolved waits for its firing, due or
// not); another alert's go past a failing one.
TEST(SqliteOutboxTest, OrdersEachAlertButNotAcrossAlerts) {
  std::string dir = TempDir("outbox-order");
  auto outbox = SqliteOutbox::Open(dir + "/agent.db");
  ASSERT_TRUE(outbox.ok()) << outbox.status().ToString();
  SqliteOutbox& o = **outbox;
  ASSERT_TRUE(o.Enqueue(Note("hot-firing", 0, "hot")).ok());
  ASSERT_TRUE(o.Enqueue(Note("xid-firing", 0, "xid")).ok());
  ASSERT_TRUE(o.Enqueue(Note("hot-resolved", 0, "hot")).ok());
  auto due = o.FetchDue(1, 10);
  ASSERT_EQ(due->size(), 2u);
  EXPECT_EQ((*due)[0].id, "hot-firing");
  EXPECT_EQ((*due)[1].id, "xid-firing");
  Notification later = (*due)[0];
  later.due_mono = 100;  // the firing backs off: its resolved still waits, xid does not
  ASSERT_TRUE(o.ScheduleRetry(later).ok());
  due = o.FetchDue(2, 10);
  ASSERT_EQ(due->size(), 1u);
  EXPECT_EQ((*due)[0].id, "xid-firing");
  EXPECT_EQ(*o.PendingIds("default", "hot"),
            (std::vector<std::string>{"hot-firing", "hot-resolved"}));
  ASSERT_TRUE(o.MarkDelivered("hot-firing", 3).ok());
  due = o.FetchDue(2, 10);
  ASSERT_EQ(due->size(), 2u);
  EXPECT_EQ((*due)[0].id, "xid-firing");
  EXPECT_EQ((*due)[1].id, "hot-resolved");
}

// A new process (or boot) has another monotonic clock: Rebase makes every pending notification
// due now and moves its age stamp, keeping the age it had.
TEST(SqliteOutboxTest, RebaseMovesTheScheduleOntoANewMonotonicClock) {
  std::string dir = TempDir("outbox-rebase");
  auto outbox = SqliteOutbox::Open(dir + "/agent.db");
  ASSERT_TRUE(outbox.ok()) << outbox.status().ToString();
  SqliteOutbox& o = **outbox;
  Notification n = Note("n", 0);
  ASSERT_TRUE(o.Enqueue(n).ok());
  n.due_mono = 1e6;  // far ahead: a previous boot's clock
  n.age_seconds = 40;
  n.touched_mono = 9e5;
  ASSERT_TRUE(o.ScheduleRetry(n).ok());
  ASSERT_TRUE(o.FetchDue(5, 10)->empty());
  ASSERT_TRUE(o.Rebase(5).ok());
  auto due = o.FetchDue(5, 10);
  ASSERT_EQ(due->size(), 1u);
  EXPECT_EQ((*due)[0].age_seconds, 40);
  EXPECT_EQ((*due)[0].touched_mono, 5);
}

// A writer process commits batches (samples + an alert + an outbox entry) and reports each
// committed batch number on a pipe; it is killed with SIGKILL mid-stream. Everything reported
// must be in the database afterwards.
TEST(AgentDbCrashTest, KillNineLosesNothingCommitted) {
  std::string dir = TempDir("agentdb-kill9");
  { ASSERT_TRUE(AgentDb::OpenInDataDir(dir).ok()); }
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    auto db = AgentDb::OpenInDataDir(dir);
    if (!db.ok()) _exit(3);
    for (int i = 0;; ++i) {
      WriteBatch b;
      b.snapshots.push_back(Snapshot(10000 + i, 4, 70));
      b.alert_changes.push_back({0,
                                 "fp" + std::to_string(i),
                                 "A",
                                 "firing",
                                 "critical",
                                 0,
                                 1,
                                 0,
                                 static_cast<double>(i),
                                 1.0,
                                 {},
                                 "",
                                 "{}"});
      b.notifications.push_back(Note("n" + std::to_string(i), i));
      if (!db->Write(b).ok()) _exit(4);
      if (write(fds[1], &i, sizeof i) != sizeof i) _exit(5);
    }
  }
  close(fds[1]);
  std::set<int> acked;
  int value = 0;
  while (acked.size() < 200 && read(fds[0], &value, sizeof value) == sizeof value)
    acked.insert(value);
  kill(pid, SIGKILL);
  while (read(fds[0], &value, sizeof value) == sizeof value) acked.insert(value);
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status)) << "writer exited early with " << WEXITSTATUS(status);
  ASSERT_GE(acked.size(), 200u);

  auto db = AgentDb::OpenInDataDir(dir);
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  auto outbox = SqliteOutbox::Open(dir + "/agent.db");
  ASSERT_TRUE(outbox.ok());
  auto alerts = db->ListAlerts(0);
  std::set<std::string> alert_fps;
  for (const auto& a : *alerts) alert_fps.insert(a.fingerprint);
  for (int i : acked) {
    ASSERT_TRUE(alert_fps.count("fp" + std::to_string(i))) << "alert of batch " << i << " lost";
    ASSERT_EQ(*(*outbox)->StateOf("n" + std::to_string(i)), "pending") << "batch " << i;
    auto s = db->QuerySeries("gpu_temperature_celsius", 3, 10000 + i, 10000 + i, std::nullopt);
    ASSERT_EQ(s->size(), 1u) << "samples of batch " << i << " lost";
  }
}

}  // namespace
}  // namespace fulcrum::store
