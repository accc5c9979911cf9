// The agent's store: <data-dir>/agent.db (SQLite, WAL). Raw samples (one row per GPU per tick,
// one column per metric of telemetry::Metrics()), 1-minute rollups, XID events, alert instances
// and the evaluator's state, and the notification outbox (see outbox_sqlite.h). Write() applies one
// batch in one transaction, so a kill -9 loses only the batch being built, never a committed alert
// or outbox entry. Times are Unix seconds. An AgentDb owns one connection and is not thread-safe:
// the sampler thread writes through its own, readers (HTTP, `fulcrum query`) open their own.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "store/outbox.h"
#include "store/sqlite.h"
#include "telemetry/gpu_sample.h"

namespace fulcrum::store {

// One alert instance (rule x gpu x start) as shown by /v1/alerts.
struct AgentAlert {
  int64_t id = 0;
  std::string fingerprint;
  std::string name;
  std::string status;  // "pending" | "firing" | "resolved"; Write() with "inactive" deletes it
  std::string severity;
  int gpu = -1;
  double value = 0;
  double threshold = 0;
  double started_at = 0;
  std::optional<double> fired_at;
  std::optional<double> resolved_at;
  std::string summary;
  std::string labels_json = "{}";  // {"alertname": ..., "gpu": ...}
};

// The evaluator's state of one pending/firing alert, restored after a restart.
struct AlertStateRow {
  std::string rule_name;
  int gpu = -1;
  std::string status;  // "pending" | "firing"
  double started_at = 0;
  double fired_at = 0;
  double last_active_at = 0;
  double value = 0;
};

struct WriteBatch {
  std::vector<telemetry::GpuSnapshot> snapshots;
  std::vector<AgentAlert> alert_changes;             // upserted by (fingerprint, started_at)
  std::optional<std::vector<AlertStateRow>> states;  // replaces all state rows when set
  std::vector<Notification> notifications;           // enqueued (existing ids ignored)
};

struct Retention {
  double raw_seconds = 48 * 3600.0;      // raw samples kept 48 h
  double rollup_seconds = 30 * 86400.0;  // 1-minute rollups kept 30 days
};

struct Series {
  int gpu = 0;
  std::vector<std::pair<double, double>> points;  // (unix seconds, value)
};

// One XID error as it arrived (NVML event set, or the sim's scripted fault).
struct XidEvent {
  int gpu = 0;
  double at = 0;  // unix seconds of the sample that carried it
  int xid = 0;
};

struct GpuRow {
  int gpu = 0;
  std::string uuid;
  std::string name;
  double last_seen = 0;
};

class AgentDb {
 public:
  // v2: Prometheus names (_hertz, PCIe byte counters), xid_events. v3: outbox order_key and
  // monotonic scheduling columns.
  static constexpr int kSchemaVersion = 3;

  // Opens (creating and migrating unless read_only); refuses a newer schema version.
  static Result<AgentDb> Open(const std::string& path, bool read_only = false);
  // <data_dir>/agent.db, creating data_dir when needed.
  static Result<AgentDb> OpenInDataDir(const std::string& data_dir, bool read_only = false);

  Status Write(const WriteBatch& batch);
  // Writes rollups of every complete minute not yet rolled up (up to `now`), then deletes raw
  // samples and rollups past their retention. Cheap when nothing is due; call every tick.
  Status Maintain(double now, const Retention& retention);

  // Points of `metric` (a telemetry metric name) since `since` (unix), all GPUs or one. Reads
  // raw samples when `since` is within the raw retention, else rollups. `step_seconds` > 0
  // averages points into buckets of that width. A renamed metric's old name
  // (telemetry::RenamedMetrics) answers as before. Unknown metric: kInvalidInput.
  Result<std::vector<Series>> QuerySeries(const std::string& metric, std::optional<int> gpu,
                                          double since, double now,
                                          std::optional<double> step_seconds,
                                          const Retention& retention = {});
  // Pending and firing alerts, and resolved ones resolved at or after `resolved_since`.
  Result<std::vector<AgentAlert>> ListAlerts(double resolved_since);
  Result<std::vector<AlertStateRow>> LoadAlertStates();
  // XID events at or after `since` (unix), oldest first.
  Result<std::vector<XidEvent>> ListXidEvents(double since);
  Result<std::vector<GpuRow>> ListGpus();
  Result<int64_t> CountSamples();
  Result<int64_t> CountRollups();

  Database& db() { return db_; }

 private:
  explicit AgentDb(Database db) : db_(std::move(db)) {}
  Status WriteSamples(const telemetry::GpuSnapshot& snapshot);
  Status WriteAlert(const AgentAlert& alert);
  Status WriteStates(const std::vector<AlertStateRow>& states);
  Database db_;
  std::optional<Statement> insert_sample_;
  std::optional<Statement> upsert_gpu_;
  std::optional<Statement> insert_xid_;
  double last_rollup_minute_ = -1;  // cached meta value
};

// The metric columns of the samples and rollups tables: the names of telemetry::Metrics(), in
// order (Open adds the column of a metric that a file made by an older binary lacks).
const std::vector<std::string>& SampleColumns();

// The schema migrations, one per version (AgentDb::kSchemaVersion of them), for tests that
// build a file of an earlier version.
const char* const* AgentDbMigrations();

}  // namespace fulcrum::store
