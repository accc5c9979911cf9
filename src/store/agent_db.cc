#include "store/agent_db.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iterator>
#include <set>

namespace fulcrum::store {
namespace {

// Schema v1. The metric columns are spelled out so that what migration 1 creates never changes;
// a metric added to telemetry::Metrics() later gets its column from EnsureMetricColumns.
const char* const kMigrations[] = {
    R"(
CREATE TABLE gpus (gpu INTEGER PRIMARY KEY, uuid TEXT NOT NULL, name TEXT NOT NULL,
                   last_seen REAL NOT NULL);
CREATE TABLE samples (
  gpu INTEGER NOT NULL, ts REAL NOT NULL,
  gpu_utilization_ratio REAL, gpu_memory_utilization_ratio REAL, gpu_memory_used_bytes REAL,
  gpu_memory_total_bytes REAL, gpu_memory_used_ratio REAL, gpu_power_watts REAL,
  gpu_power_limit_watts REAL, gpu_temperature_celsius REAL, gpu_sm_clock_hz REAL,
  gpu_memory_clock_hz REAL, gpu_clock_event_reasons REAL, gpu_thermal_slowdown REAL,
  gpu_power_capped REAL, gpu_ecc_corrected_errors_total REAL,
  gpu_ecc_uncorrected_errors_total REAL, gpu_xid_last REAL, gpu_pcie_tx_bytes_per_second REAL,
  gpu_pcie_rx_bytes_per_second REAL,
  PRIMARY KEY (gpu, ts)) WITHOUT ROWID;
CREATE INDEX samples_ts ON samples (ts);
CREATE TABLE rollups (
  gpu INTEGER NOT NULL, minute REAL NOT NULL, samples INTEGER NOT NULL,
  gpu_utilization_ratio REAL, gpu_memory_utilization_ratio REAL, gpu_memory_used_bytes REAL,
  gpu_memory_total_bytes REAL, gpu_memory_used_ratio REAL, gpu_power_watts REAL,
  gpu_power_limit_watts REAL, gpu_temperature_celsius REAL, gpu_sm_clock_hz REAL,
  gpu_memory_clock_hz REAL, gpu_clock_event_reasons REAL, gpu_thermal_slowdown REAL,
  gpu_power_capped REAL, gpu_ecc_corrected_errors_total REAL,
  gpu_ecc_uncorrected_errors_total REAL, gpu_xid_last REAL, gpu_pcie_tx_bytes_per_second REAL,
  gpu_pcie_rx_bytes_per_second REAL,
  PRIMARY KEY (gpu, minute)) WITHOUT ROWID;
CREATE INDEX rollups_minute ON rollups (minute);
CREATE TABLE meta (key TEXT PRIMARY KEY, value REAL NOT NULL);
CREATE TABLE alerts (
  id INTEGER PRIMARY KEY AUTOINCREMENT, fingerprint TEXT NOT NULL, name TEXT NOT NULL,
  status TEXT NOT NULL, severity TEXT NOT NULL, gpu INTEGER NOT NULL, value REAL NOT NULL,
  threshold REAL NOT NULL, started_at REAL NOT NULL, fired_at REAL, resolved_at REAL,
  summary TEXT NOT NULL, labels TEXT NOT NULL, UNIQUE (fingerprint, started_at));
CREATE INDEX alerts_status ON alerts (status, resolved_at);
CREATE TABLE alert_state (
  rule_name TEXT NOT NULL, gpu INTEGER NOT NULL, status TEXT NOT NULL, started_at REAL NOT NULL,
  fired_at REAL NOT NULL, last_active_at REAL NOT NULL, value REAL NOT NULL,
  PRIMARY KEY (rule_name, gpu));
CREATE TABLE outbox (
  id TEXT PRIMARY KEY, receiver TEXT NOT NULL, format TEXT NOT NULL, body TEXT NOT NULL,
  created_at REAL NOT NULL, attempts INTEGER NOT NULL, next_attempt_at REAL NOT NULL,
  last_error TEXT NOT NULL, state TEXT NOT NULL, delivered_at REAL);
CREATE INDEX outbox_due ON outbox (state, next_attempt_at);
)",
    // Schema v2: Prometheus naming (README changelog). `_hz` columns become `_hertz`; the PCIe
    // throughput gauges become byte counters, filled for the stored rows by integrating the old
    // rate over each GPU's sample (and rollup minute) spacing; XID events get a table.
    R"(
ALTER TABLE samples RENAME COLUMN gpu_sm_clock_hz TO gpu_sm_clock_hertz;
ALTER TABLE samples RENAME COLUMN gpu_memory_clock_hz TO gpu_memory_clock_hertz;
ALTER TABLE rollups RENAME COLUMN gpu_sm_clock_hz TO gpu_sm_clock_hertz;
ALTER TABLE rollups RENAME COLUMN gpu_memory_clock_hz TO gpu_memory_clock_hertz;
ALTER TABLE samples ADD COLUMN gpu_pcie_tx_bytes_total REAL;
ALTER TABLE samples ADD COLUMN gpu_pcie_rx_bytes_total REAL;
ALTER TABLE rollups ADD COLUMN gpu_pcie_tx_bytes_total REAL;
ALTER TABLE rollups ADD COLUMN gpu_pcie_rx_bytes_total REAL;
UPDATE samples SET gpu_pcie_tx_bytes_total = t.tx, gpu_pcie_rx_bytes_total = t.rx FROM (
  SELECT gpu AS g, ts AS at,
         SUM(COALESCE(gpu_pcie_tx_bytes_per_second, 0) * dt) OVER w AS tx,
         SUM(COALESCE(gpu_pcie_rx_bytes_per_second, 0) * dt) OVER w AS rx
  FROM (SELECT gpu, ts, gpu_pcie_tx_bytes_per_second, gpu_pcie_rx_bytes_per_second,
               ts - LAG(ts, 1, ts) OVER (PARTITION BY gpu ORDER BY ts) AS dt FROM samples)
  WINDOW w AS (PARTITION BY gpu ORDER BY ts)) AS t
WHERE samples.gpu = t.g AND samples.ts = t.at AND samples.gpu_pcie_tx_bytes_per_second IS NOT NULL;
UPDATE rollups SET gpu_pcie_tx_bytes_total = t.tx, gpu_pcie_rx_bytes_total = t.rx FROM (
  SELECT gpu AS g, minute AS at,
         SUM(COALESCE(gpu_pcie_tx_bytes_per_second, 0) * 60) OVER w AS tx,
         SUM(COALESCE(gpu_pcie_rx_bytes_per_second, 0) * 60) OVER w AS rx
  FROM rollups WINDOW w AS (PARTITION BY gpu ORDER BY minute)) AS t
WHERE rollups.gpu = t.g AND rollups.minute = t.at AND rollups.gpu_pcie_tx_bytes_per_second IS NOT NULL;
ALTER TABLE samples DROP COLUMN gpu_pcie_tx_bytes_per_second;
ALTER TABLE samples DROP COLUMN gpu_pcie_rx_bytes_per_second;
ALTER TABLE rollups DROP COLUMN gpu_pcie_tx_bytes_per_second;
ALTER TABLE rollups DROP COLUMN gpu_pcie_rx_bytes_per_second;
CREATE TABLE xid_events (gpu INTEGER NOT NULL, ts REAL NOT NULL, xid INTEGER NOT NULL);
CREATE INDEX xid_events_ts ON xid_events (ts);
)",
    // Schema v3 (issue 29): the outbox schedules on the monotonic clock (next_attempt_at stays,
    // wall-clock, for humans) and keeps each alert's notifications in order (order_key), not all
    // of a receiver's.
    R"(
ALTER TABLE outbox ADD COLUMN order_key TEXT NOT NULL DEFAULT '';
ALTER TABLE outbox ADD COLUMN due_mono REAL NOT NULL DEFAULT 0;
ALTER TABLE outbox ADD COLUMN age_seconds REAL NOT NULL DEFAULT 0;
ALTER TABLE outbox ADD COLUMN touched_mono REAL NOT NULL DEFAULT -1;
CREATE INDEX outbox_receiver_key ON outbox (receiver, state, order_key);
)",
};

static_assert(std::size(kMigrations) == AgentDb::kSchemaVersion);

std::string JoinColumns(const std::string& prefix, const std::string& suffix) {
  std::string out;
  for (const std::string& c : SampleColumns()) {
    if (!out.empty()) out += ", ";
    out += prefix + c + suffix;
  }
  return out;
}

}  // namespace

const char* const* AgentDbMigrations() { return kMigrations; }

const std::vector<std::string>& SampleColumns() {
  static const std::vector<std::string> kColumns = [] {
    std::vector<std::string> names;
    for (const telemetry::MetricDef& m : telemetry::Metrics()) names.emplace_back(m.name);
    return names;
  }();
  return kColumns;
}

namespace {

// Adds a REAL column to `table` for every metric of telemetry::Metrics() it lacks, so that a
// metric added after schema v1 is stored (and rolled up) without a hand-written migration.
Status EnsureMetricColumns(Database& db, const std::string& table) {
  FULCRUM_ASSIGN_OR_RETURN(Statement info, db.Prepare("PRAGMA table_info(" + table + ")"));
  std::set<std::string> present;
  while (info.Step()) present.insert(info.ColumnText(1));
  FULCRUM_RETURN_IF_ERROR(info.status());
  for (const std::string& c : SampleColumns()) {
    if (present.count(c) > 0) continue;
    bool identifier = !c.empty() && std::all_of(c.begin(), c.end(), [](char ch) {
      return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_';
    });
    if (!identifier) return Status::Internal("metric name '" + c + "' is not a column name");
    FULCRUM_RETURN_IF_ERROR(db.Exec("ALTER TABLE " + table + " ADD COLUMN " + c + " REAL"));
  }
  return Status::Ok();
}

// Both tables, under the write lock (BEGIN IMMEDIATE) so that two openers of one file do not
// both add a column: the second reads the table again and finds it there.
Status EnsureAllMetricColumns(Database& db) {
  FULCRUM_RETURN_IF_ERROR(db.Begin().WithContext(db.path() + ": cannot lock the database"));
  Status status = EnsureMetricColumns(db, "samples");
  if (status.ok()) status = EnsureMetricColumns(db, "rollups");
  if (!status.ok()) {
    (void)db.Rollback();
    return status;
  }
  return db.Commit();
}

}  // namespace

Result<AgentDb> AgentDb::Open(const std::string& path, bool read_only) {
  Database::Options options;
  options.read_only = read_only;
  FULCRUM_ASSIGN_OR_RETURN(Database db, Database::Open(path, options));
  if (read_only) {
    FULCRUM_ASSIGN_OR_RETURN(int version, db.UserVersion());
    if (version != kSchemaVersion) {
      return Status::InvalidInput(path + ": schema version " + std::to_string(version) +
                                  ", this fulcrum reads version " + std::to_string(kSchemaVersion));
    }
  } else {
    FULCRUM_RETURN_IF_ERROR(db.Migrate(kSchemaVersion, kMigrations));
    FULCRUM_RETURN_IF_ERROR(EnsureAllMetricColumns(db));
  }
  return AgentDb(std::move(db));
}

Result<AgentDb> AgentDb::OpenInDataDir(const std::string& data_dir, bool read_only) {
  if (!read_only) FULCRUM_RETURN_IF_ERROR(CreateDataDir(data_dir));
  std::string path = (std::filesystem::path(data_dir) / "agent.db").string();
  if (read_only && !std::filesystem::exists(path)) {
    return Status::NotFound(path + " does not exist (has `fulcrum agent` run with --data-dir " +
                            data_dir + "?)");
  }
  return Open(path, read_only);
}

Status AgentDb::WriteSamples(const telemetry::GpuSnapshot& snapshot) {
  if (!insert_sample_) {
    std::string placeholders;
    for (size_t i = 0; i < SampleColumns().size(); ++i) placeholders += ", ?";
    FULCRUM_ASSIGN_OR_RETURN(
        Statement s, db_.Prepare("INSERT OR REPLACE INTO samples (gpu, ts, " + JoinColumns("", "") +
                                 ") VALUES (?, ?" + placeholders + ")"));
    insert_sample_ = std::move(s);
    FULCRUM_ASSIGN_OR_RETURN(
        Statement g, db_.Prepare("INSERT INTO gpus (gpu, uuid, name, last_seen) VALUES (?,?,?,?) "
                                 "ON CONFLICT (gpu) DO UPDATE SET uuid = excluded.uuid, "
                                 "name = excluded.name, last_seen = excluded.last_seen"));
    upsert_gpu_ = std::move(g);
  }
  for (const telemetry::GpuSample& sample : snapshot) {
    Statement& s = *insert_sample_;
    s.Reset();
    s.Bind(1, static_cast<int64_t>(sample.index)).Bind(2, sample.timestamp);
    int column = 3;
    for (const std::string& name : SampleColumns()) {
      const telemetry::MetricDef* def = telemetry::FindMetric(name);
      s.Bind(column++, def != nullptr ? def->extract(sample) : std::nullopt);
    }
    FULCRUM_RETURN_IF_ERROR(s.Run());
    for (int xid : sample.new_xids) {
      if (!insert_xid_) {
        FULCRUM_ASSIGN_OR_RETURN(
            Statement x, db_.Prepare("INSERT INTO xid_events (gpu, ts, xid) VALUES (?,?,?)"));
        insert_xid_ = std::move(x);
      }
      insert_xid_->Reset();
      insert_xid_->Bind(1, static_cast<int64_t>(sample.index))
          .Bind(2, sample.timestamp)
          .Bind(3, static_cast<int64_t>(xid));
      FULCRUM_RETURN_IF_ERROR(insert_xid_->Run());
    }
    Statement& g = *upsert_gpu_;
    g.Reset();
    g.Bind(1, static_cast<int64_t>(sample.index))
        .Bind(2, std::string_view(sample.uuid))
        .Bind(3, std::string_view(sample.name))
        .Bind(4, sample.timestamp);
    FULCRUM_RETURN_IF_ERROR(g.Run());
  }
  return Status::Ok();
}

Status AgentDb::WriteAlert(const AgentAlert& a) {
  if (a.status == "inactive") {
    FULCRUM_ASSIGN_OR_RETURN(
        Statement del, db_.Prepare("DELETE FROM alerts WHERE fingerprint = ? AND started_at = ?"));
    del.Bind(1, std::string_view(a.fingerprint)).Bind(2, a.started_at);
    return del.Run();
  }
  FULCRUM_ASSIGN_OR_RETURN(
      Statement s,
      db_.Prepare("INSERT INTO alerts (fingerprint, name, status, severity, gpu, value, threshold, "
                  "started_at, fired_at, resolved_at, summary, labels) "
                  "VALUES (?,?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT (fingerprint, started_at) DO "
                  "UPDATE SET status = excluded.status, value = excluded.value, "
                  "fired_at = COALESCE(excluded.fired_at, fired_at), "
                  "resolved_at = excluded.resolved_at, summary = excluded.summary, "
                  "labels = excluded.labels, severity = excluded.severity"));
  s.Bind(1, std::string_view(a.fingerprint))
      .Bind(2, std::string_view(a.name))
      .Bind(3, std::string_view(a.status))
      .Bind(4, std::string_view(a.severity))
      .Bind(5, static_cast<int64_t>(a.gpu))
      .Bind(6, a.value)
      .Bind(7, a.threshold)
      .Bind(8, a.started_at)
      .Bind(9, a.fired_at)
      .Bind(10, a.resolved_at)
      .Bind(11, std::string_view(a.summary))
      .Bind(12, std::string_view(a.labels_json));
  return s.Run();
}

Status AgentDb::WriteStates(const std::vector<AlertStateRow>& states) {
  FULCRUM_RETURN_IF_ERROR(db_.Exec("DELETE FROM alert_state"));
  FULCRUM_ASSIGN_OR_RETURN(
      Statement s,
      db_.Prepare("INSERT OR REPLACE INTO alert_state (rule_name, gpu, status, "
                  "started_at, fired_at, last_active_at, value) VALUES (?,?,?,?,?,?,?)"));
  for (const AlertStateRow& r : states) {
    s.Reset();
    s.Bind(1, std::string_view(r.rule_name))
        .Bind(2, static_cast<int64_t>(r.gpu))
        .Bind(3, std::string_view(r.status))
        .Bind(4, r.started_at)
        .Bind(5, r.fired_at)
        .Bind(6, r.last_active_at)
        .Bind(7, r.value);
    FULCRUM_RETURN_IF_ERROR(s.Run());
  }
  return Status::Ok();
}

Status InsertNotification(Database& db, const Notification& n);  // outbox_sqlite.cc

Status AgentDb::Write(const WriteBatch& batch) {
  FULCRUM_RETURN_IF_ERROR(db_.Begin());
  Status status;
  for (const auto& snapshot : batch.snapshots) {
    if (status.ok()) status = WriteSamples(snapshot);
  }
  for (const AgentAlert& a : batch.alert_changes) {
    if (status.ok()) status = WriteAlert(a);
  }
  if (status.ok() && batch.states) status = WriteStates(*batch.states);
  for (const Notification& n : batch.notifications) {
    if (status.ok()) status = InsertNotification(db_, n);
  }
  if (!status.ok()) {
    (void)db_.Rollback();
    return status.WithContext(db_.path());
  }
  return db_.Commit();
}

Status AgentDb::Maintain(double now, const Retention& retention) {
  double current_minute = std::floor(now / 60) * 60;
  if (last_rollup_minute_ < 0) {
    FULCRUM_ASSIGN_OR_RETURN(Statement meta,
                             db_.Prepare("SELECT value FROM meta WHERE key = 'rolled_up_to'"));
    if (meta.Step()) {
      last_rollup_minute_ = meta.ColumnDouble(0);
    } else {
      FULCRUM_ASSIGN_OR_RETURN(Statement first, db_.Prepare("SELECT MIN(ts) FROM samples"));
      if (!first.Step() || first.ColumnIsNull(0)) return Status::Ok();  // nothing stored yet
      last_rollup_minute_ = std::floor(first.ColumnDouble(0) / 60) * 60;
    }
  }
  if (current_minute <= last_rollup_minute_) return Status::Ok();
  // Roll up [last_rollup_minute_, current_minute): complete minutes only.
  std::string aggregates;
  for (const std::string& c : SampleColumns()) {
    const telemetry::MetricDef* def = telemetry::FindMetric(c);
    aggregates +=
        std::string(", ") + (def != nullptr && def->rollup_max ? "MAX(" : "AVG(") + c + ")";
  }
  FULCRUM_RETURN_IF_ERROR(db_.Begin());
  FULCRUM_ASSIGN_OR_RETURN(
      Statement roll,
      db_.Prepare("INSERT OR REPLACE INTO rollups (gpu, minute, samples, " + JoinColumns("", "") +
                  ") SELECT gpu, CAST(ts / 60 AS INTEGER) * 60.0 AS m, COUNT(*)" + aggregates +
                  " FROM samples WHERE ts >= ? AND ts < ? GROUP BY gpu, m"));
  roll.Bind(1, last_rollup_minute_).Bind(2, current_minute);
  Status status = roll.Run();
  if (status.ok()) {
    FULCRUM_ASSIGN_OR_RETURN(Statement del_raw, db_.Prepare("DELETE FROM samples WHERE ts < ?"));
    status = del_raw.Bind(1, now - retention.raw_seconds).Run();
  }
  if (status.ok()) {
    FULCRUM_ASSIGN_OR_RETURN(Statement del_roll,
                             db_.Prepare("DELETE FROM rollups WHERE minute < ?"));
    status = del_roll.Bind(1, now - retention.rollup_seconds).Run();
  }
  // Delivered or failed notifications and resolved alerts go with the rollups' retention;
  // pending notifications and open alerts are never pruned.
  if (status.ok()) {
    FULCRUM_ASSIGN_OR_RETURN(
        Statement del_outbox,
        db_.Prepare("DELETE FROM outbox WHERE state != 'pending' AND created_at < ?"));
    status = del_outbox.Bind(1, now - retention.rollup_seconds).Run();
  }
  if (status.ok()) {
    FULCRUM_ASSIGN_OR_RETURN(Statement del_xids,
                             db_.Prepare("DELETE FROM xid_events WHERE ts < ?"));
    status = del_xids.Bind(1, now - retention.rollup_seconds).Run();
  }
  if (status.ok()) {
    FULCRUM_ASSIGN_OR_RETURN(
        Statement del_alerts,
        db_.Prepare("DELETE FROM alerts WHERE status = 'resolved' AND resolved_at < ?"));
    status = del_alerts.Bind(1, now - retention.rollup_seconds).Run();
  }
  if (status.ok()) {
    FULCRUM_ASSIGN_OR_RETURN(
        Statement meta,
        db_.Prepare("INSERT OR REPLACE INTO meta (key, value) VALUES ('rolled_up_to', ?)"));
    status = meta.Bind(1, current_minute).Run();
  }
  if (!status.ok()) {
    (void)db_.Rollback();
    return status;
  }
  FULCRUM_RETURN_IF_ERROR(db_.Commit());
  last_rollup_minute_ = current_minute;
  return Status::Ok();
}

namespace {

// Per-second rate of a counter's points: (v1 - v0) / (t1 - t0) at t1; a decrease (counter
// reset) starts over, as Prometheus rate() does.
std::vector<std::pair<double, double>> RateOf(const std::vector<std::pair<double, double>>& in) {
  std::vector<std::pair<double, double>> out;
  for (size_t i = 1; i < in.size(); ++i) {
    double dt = in[i].first - in[i - 1].first;
    double dv = in[i].second - in[i - 1].second;
    if (dt > 0 && dv >= 0) out.emplace_back(in[i].first, dv / dt);
  }
  return out;
}

std::vector<std::pair<double, double>> Bucketed(const std::vector<std::pair<double, double>>& in,
                                                double step) {
  std::vector<std::pair<double, double>> out;
  double sum = 0;
  int n = 0;
  double bucket = 0;
  for (const auto& [t, v] : in) {
    double b = static_cast<double>(static_cast<int64_t>(t / step)) * step;
    if (n > 0 && b != bucket) {
      out.emplace_back(bucket, sum / n);
      sum = 0;
      n = 0;
    }
    bucket = b;
    sum += v;
    ++n;
  }
  if (n > 0) out.emplace_back(bucket, sum / n);
  return out;
}

}  // namespace

Result<std::vector<Series>> AgentDb::QuerySeries(const std::string& metric, std::optional<int> gpu,
                                                 double since, double now,
                                                 std::optional<double> step_seconds,
                                                 const Retention& retention) {
  // A name of an earlier release answers as it did: the same column under its new name, or the
  // rate of the counter that replaced a per-second gauge.
  if (const telemetry::RenamedMetric* renamed = telemetry::FindRenamedMetric(metric)) {
    if (renamed->kind == telemetry::RenamedMetric::kSame) {
      return QuerySeries(renamed->new_name, gpu, since, now, step_seconds, retention);
    }
    FULCRUM_ASSIGN_OR_RETURN(
        std::vector<Series> counters,
        QuerySeries(renamed->new_name, gpu, since, now, std::nullopt, retention));
    for (Series& s : counters) {
      s.points = RateOf(s.points);
      if (step_seconds && *step_seconds > 0) s.points = Bucketed(s.points, *step_seconds);
    }
    return counters;
  }
  bool known = false;
  for (const std::string& c : SampleColumns()) known = known || c == metric;
  if (!known) {
    std::string list;
    for (const std::string& c : SampleColumns()) list += (list.empty() ? "" : ", ") + c;
    return Status::InvalidInput("unknown metric '" + metric + "'; expected one of " + list);
  }
  bool raw = since >= now - retention.raw_seconds;
  std::string table = raw ? "samples" : "rollups";
  std::string time = raw ? "ts" : "minute";
  std::string sql;
  if (step_seconds && *step_seconds > 0) {
    std::string bucket = "CAST(" + time + " / ?3 AS INTEGER) * ?3";
    sql = "SELECT gpu, " + bucket + " AS b, AVG(" + metric + ") FROM " + table + " WHERE " + time +
          " >= ?1 AND " + metric + " IS NOT NULL AND (?2 < 0 OR gpu = ?2) " +
          "GROUP BY gpu, b ORDER BY gpu, b";
  } else {
    sql = "SELECT gpu, " + time + ", " + metric + " FROM " + table + " WHERE " + time +
          " >= ?1 AND " + metric + " IS NOT NULL AND (?2 < 0 OR gpu = ?2) ORDER BY gpu, " + time;
  }
  FULCRUM_ASSIGN_OR_RETURN(Statement s, db_.Prepare(sql));
  s.Bind(1, since).Bind(2, static_cast<int64_t>(gpu.value_or(-1)));
  if (step_seconds && *step_seconds > 0) s.Bind(3, *step_seconds);
  std::vector<Series> out;
  while (s.Step()) {
    int g = static_cast<int>(s.ColumnInt(0));
    if (out.empty() || out.back().gpu != g) out.push_back(Series{g, {}});
    out.back().points.emplace_back(s.ColumnDouble(1), s.ColumnDouble(2));
  }
  FULCRUM_RETURN_IF_ERROR(s.status());
  return out;
}

Result<std::vector<AgentAlert>> AgentDb::ListAlerts(double resolved_since) {
  FULCRUM_ASSIGN_OR_RETURN(
      Statement s,
      db_.Prepare(
          "SELECT id, fingerprint, name, status, severity, gpu, value, threshold, "
          "started_at, fired_at, resolved_at, summary, labels FROM alerts WHERE status "
          "IN ('pending', 'firing') OR resolved_at >= ? ORDER BY started_at DESC, id DESC"));
  s.Bind(1, resolved_since);
  std::vector<AgentAlert> out;
  while (s.Step()) {
    AgentAlert a;
    a.id = s.ColumnInt(0);
    a.fingerprint = s.ColumnText(1);
    a.name = s.ColumnText(2);
    a.status = s.ColumnText(3);
    a.severity = s.ColumnText(4);
    a.gpu = static_cast<int>(s.ColumnInt(5));
    a.value = s.ColumnDouble(6);
    a.threshold = s.ColumnDouble(7);
    a.started_at = s.ColumnDouble(8);
    a.fired_at = s.ColumnOptionalDouble(9);
    a.resolved_at = s.ColumnOptionalDouble(10);
    a.summary = s.ColumnText(11);
    a.labels_json = s.ColumnText(12);
    out.push_back(std::move(a));
  }
  FULCRUM_RETURN_IF_ERROR(s.status());
  return out;
}

Result<std::vector<AlertStateRow>> AgentDb::LoadAlertStates() {
  FULCRUM_ASSIGN_OR_RETURN(Statement s,
                           db_.Prepare("SELECT rule_name, gpu, status, started_at, fired_at, "
                                       "last_active_at, value FROM alert_state"));
  std::vector<AlertStateRow> out;
  while (s.Step()) {
    out.push_back({s.ColumnText(0), static_cast<int>(s.ColumnInt(1)), s.ColumnText(2),
                   s.ColumnDouble(3), s.ColumnDouble(4), s.ColumnDouble(5), s.ColumnDouble(6)});
  }
  FULCRUM_RETURN_IF_ERROR(s.status());
  return out;
}

Result<std::vector<XidEvent>> AgentDb::ListXidEvents(double since) {
  FULCRUM_ASSIGN_OR_RETURN(
      Statement s,
      db_.Prepare("SELECT gpu, ts, xid FROM xid_events WHERE ts >= ? ORDER BY ts, rowid"));
  s.Bind(1, since);
  std::vector<XidEvent> out;
  while (s.Step()) {
    out.push_back(
        {static_cast<int>(s.ColumnInt(0)), s.ColumnDouble(1), static_cast<int>(s.ColumnInt(2))});
  }
  FULCRUM_RETURN_IF_ERROR(s.status());
  return out;
}

Result<std::vector<GpuRow>> AgentDb::ListGpus() {
  FULCRUM_ASSIGN_OR_RETURN(Statement s,
                           db_.Prepare("SELECT gpu, uuid, name, last_seen FROM gpus ORDER BY gpu"));
  std::vector<GpuRow> out;
  while (s.Step()) {
    out.push_back(
        {static_cast<int>(s.ColumnInt(0)), s.ColumnText(1), s.ColumnText(2), s.ColumnDouble(3)});
  }
  FULCRUM_RETURN_IF_ERROR(s.status());
  return out;
}

namespace {
Result<int64_t> Count(Database& db, const char* sql) {
  FULCRUM_ASSIGN_OR_RETURN(Statement s, db.Prepare(sql));
  if (!s.Step()) return s.status().ok() ? Status::Internal("COUNT returned no row") : s.status();
  return s.ColumnInt(0);
}
}  // namespace

Result<int64_t> AgentDb::CountSamples() { return Count(db_, "SELECT COUNT(*) FROM samples"); }
Result<int64_t> AgentDb::CountRollups() { return Count(db_, "SELECT COUNT(*) FROM rollups"); }

}  // namespace fulcrum::store
