#include "store/jobs.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/paths.h"
#include "store/job_view.h"

namespace fulcrum::store {
namespace {

const char* const kMigrations[] = {
    R"sql(
CREATE TABLE jobs (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  state TEXT NOT NULL,
  queue TEXT NOT NULL DEFAULT 'run',
  argv_json TEXT NOT NULL DEFAULT '[]',
  gpus_json TEXT NOT NULL DEFAULT '[]',
  gpus_requested INTEGER NOT NULL DEFAULT 0,
  step INTEGER,
  restarts INTEGER NOT NULL DEFAULT 0,
  last_checkpoint_at REAL,
  last_checkpoint_path TEXT NOT NULL DEFAULT '',
  spend_usd REAL NOT NULL DEFAULT 0,
  budget_usd REAL,
  price_per_hour_usd REAL,
  created_at REAL,
  started_at REAL,
  finished_at REAL,
  heartbeat_at REAL,
  not_before REAL,
  exit_code INTEGER,
  reason TEXT NOT NULL DEFAULT '',
  supervisor_pid INTEGER,
  slurm_job_id TEXT NOT NULL DEFAULT '',
  checkpoint_dir TEXT NOT NULL DEFAULT '',
  workdir TEXT NOT NULL DEFAULT '',
  run_options_json TEXT NOT NULL DEFAULT '[]'
);
CREATE TABLE restarts (
  job_id TEXT NOT NULL, at REAL NOT NULL, exit_code INTEGER, signal INTEGER,
  reason TEXT NOT NULL DEFAULT '');
CREATE INDEX restarts_job ON restarts(job_id, at);
CREATE TABLE checkpoints (
  job_id TEXT NOT NULL, path TEXT NOT NULL, completed_at REAL NOT NULL, duration_seconds REAL,
  PRIMARY KEY (job_id, path));
CREATE TABLE ledger (
  job_id TEXT NOT NULL, day TEXT NOT NULL, seconds REAL NOT NULL DEFAULT 0,
  usd REAL NOT NULL DEFAULT 0, PRIMARY KEY (job_id, day));
CREATE TABLE alerts (
  id INTEGER PRIMARY KEY AUTOINCREMENT, job_id TEXT NOT NULL, name TEXT NOT NULL,
  severity TEXT NOT NULL, summary TEXT NOT NULL, at REAL NOT NULL);
CREATE INDEX alerts_at ON alerts(at);
)sql",
    R"sql(
ALTER TABLE jobs ADD COLUMN generation INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN start TEXT NOT NULL DEFAULT '';
)sql",
    R"sql(
ALTER TABLE jobs ADD COLUMN child_pgid INTEGER;
ALTER TABLE jobs ADD COLUMN child_start_ticks INTEGER;
)sql",
    R"sql(
ALTER TABLE jobs ADD COLUMN planned_layout TEXT NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN planned_step_seconds REAL;
ALTER TABLE jobs ADD COLUMN planned_step_seconds_p90 REAL;
ALTER TABLE jobs ADD COLUMN planned_tokens_per_step REAL;
ALTER TABLE jobs ADD COLUMN planned_total_steps INTEGER;
ALTER TABLE jobs ADD COLUMN planned_peak_bytes_per_gpu REAL;
ALTER TABLE jobs ADD COLUMN planned_total_hours REAL;
ALTER TABLE jobs ADD COLUMN planned_total_hours_p90 REAL;
ALTER TABLE jobs ADD COLUMN planned_cost_usd REAL;
ALTER TABLE jobs ADD COLUMN planned_cost_p90_usd REAL;
ALTER TABLE jobs ADD COLUMN deadline_at REAL;
ALTER TABLE jobs ADD COLUMN measured_step_seconds REAL;
ALTER TABLE jobs ADD COLUMN measured_tokens_per_second REAL;
ALTER TABLE jobs ADD COLUMN tokens INTEGER;
)sql",
    R"sql(
ALTER TABLE jobs ADD COLUMN planned_provider TEXT NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN planned_instance_type TEXT NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN planned_gpu TEXT NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN planned_gpus_per_node INTEGER;
ALTER TABLE jobs ADD COLUMN planned_nodes INTEGER;
ALTER TABLE jobs ADD COLUMN planned_pricing TEXT NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN planned_interruptions REAL;
ALTER TABLE jobs ADD COLUMN planned_checkpoint_interval_seconds REAL;
ALTER TABLE jobs ADD COLUMN measured_peak_bytes_per_gpu REAL;
ALTER TABLE jobs ADD COLUMN measured_gpu_utilization_pct REAL;
ALTER TABLE jobs ADD COLUMN measured_power_watts REAL;
ALTER TABLE jobs ADD COLUMN agent_reason TEXT NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN preemptions INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN skipped_checkpoints_json TEXT NOT NULL DEFAULT '[]';
CREATE TABLE predictions (
  uid TEXT PRIMARY KEY, job_id TEXT NOT NULL, finished_at REAL NOT NULL, state TEXT NOT NULL,
  layout TEXT NOT NULL DEFAULT '', gpu TEXT NOT NULL DEFAULT '', gpus_per_node INTEGER,
  nodes INTEGER, work_fraction REAL,
  predicted_step_seconds REAL, measured_step_seconds REAL,
  predicted_peak_bytes_per_gpu REAL, measured_peak_bytes_per_gpu REAL,
  predicted_hours REAL, measured_hours REAL, predicted_cost_usd REAL, measured_cost_usd REAL);
CREATE INDEX predictions_finished ON predictions(finished_at);
)sql",
};

constexpr std::pair<JobState, std::string_view> kStateNames[] = {
    {JobState::kQueued, "queued"},
    {JobState::kStarting, "starting"},
    {JobState::kRunning, "running"},
    {JobState::kBackoff, "backoff"},
    {JobState::kCheckpointing, "checkpointing"},
    {JobState::kSucceeded, "succeeded"},
    {JobState::kFailed, "failed"},
    {JobState::kStopped, "stopped"},
    {JobState::kCrashLoop, "crash_loop"},
    {JobState::kLost, "lost"},
};

constexpr const char* kJobColumns =
    "id, name, state, queue, argv_json, gpus_json, gpus_requested, step, restarts, "
    "last_checkpoint_at, last_checkpoint_path, spend_usd, budget_usd, price_per_hour_usd, "
    "created_at, started_at, finished_at, heartbeat_at, not_before, exit_code, reason, "
    "supervisor_pid, slurm_job_id, checkpoint_dir, workdir, run_options_json, generation, start, "
    "child_pgid, child_start_ticks, planned_layout, planned_step_seconds, "
    "planned_step_seconds_p90, planned_tokens_per_step, planned_total_steps, "
    "planned_peak_bytes_per_gpu, planned_total_hours, planned_total_hours_p90, planned_cost_usd, "
    "planned_cost_p90_usd, deadline_at, measured_step_seconds, measured_tokens_per_second, tokens, "
    "planned_provider, planned_instance_type, planned_gpu, planned_gpus_per_node, planned_nodes, "
    "planned_pricing, measured_peak_bytes_per_gpu, measured_gpu_utilization_pct, "
    "measured_power_watts, agent_reason, preemptions, skipped_checkpoints_json, "
    "planned_interruptions, planned_checkpoint_interval_seconds";
constexpr int kJobColumnCount = 58;

constexpr const char* kPredictionColumns =
    "uid, job_id, finished_at, state, layout, gpu, gpus_per_node, nodes, work_fraction, "
    "predicted_step_seconds, measured_step_seconds, predicted_peak_bytes_per_gpu, "
    "measured_peak_bytes_per_gpu, predicted_hours, measured_hours, predicted_cost_usd, "
    "measured_cost_usd";

// The columns to SELECT from a file at schema `version` (a reader may meet a file that no writer
// of this version has migrated yet): columns added later read as their defaults.
std::string SelectJobColumns(int version) {
  // Column -> (schema version that added it, its default).
  static const std::map<std::string, std::pair<int, std::string>> kAdded = {
      {"generation", {2, "0"}},
      {"start", {2, "''"}},
      {"child_pgid", {3, "NULL"}},
      {"child_start_ticks", {3, "NULL"}},
      {"planned_layout", {4, "''"}},
      {"planned_step_seconds", {4, "NULL"}},
      {"planned_step_seconds_p90", {4, "NULL"}},
      {"planned_tokens_per_step", {4, "NULL"}},
      {"planned_total_steps", {4, "NULL"}},
      {"planned_peak_bytes_per_gpu", {4, "NULL"}},
      {"planned_total_hours", {4, "NULL"}},
      {"planned_total_hours_p90", {4, "NULL"}},
      {"planned_cost_usd", {4, "NULL"}},
      {"planned_cost_p90_usd", {4, "NULL"}},
      {"deadline_at", {4, "NULL"}},
      {"measured_step_seconds", {4, "NULL"}},
      {"measured_tokens_per_second", {4, "NULL"}},
      {"tokens", {4, "NULL"}},
      {"planned_provider", {5, "''"}},
      {"planned_instance_type", {5, "''"}},
      {"planned_gpu", {5, "''"}},
      {"planned_gpus_per_node", {5, "NULL"}},
      {"planned_nodes", {5, "NULL"}},
      {"planned_pricing", {5, "''"}},
      {"measured_peak_bytes_per_gpu", {5, "NULL"}},
      {"measured_gpu_utilization_pct", {5, "NULL"}},
      {"measured_power_watts", {5, "NULL"}},
      {"agent_reason", {5, "''"}},
      {"preemptions", {5, "0"}},
      {"skipped_checkpoints_json", {5, "'[]'"}},
      {"planned_interruptions", {5, "NULL"}},
      {"planned_checkpoint_interval_seconds", {5, "NULL"}},
  };
  std::string out;
  std::istringstream columns(kJobColumns);
  std::string column;
  while (std::getline(columns >> std::ws, column, ',')) {
    auto added = kAdded.find(column);
    if (!out.empty()) out += ", ";
    out += added != kAdded.end() && version < added->second.first
               ? added->second.second + " AS " + column
               : column;
  }
  return out;
}

std::optional<int64_t> OptionalInt(const Statement& s, int column) {
  if (s.ColumnIsNull(column)) return std::nullopt;
  return s.ColumnInt(column);
}

std::optional<int> OptionalInt32(const Statement& s, int column) {
  if (s.ColumnIsNull(column)) return std::nullopt;
  return static_cast<int>(s.ColumnInt(column));
}

std::optional<int64_t> Widen(std::optional<int> value) {
  return value ? std::optional<int64_t>(*value) : std::nullopt;
}

std::vector<SkippedCheckpointRecord> SkippedFromJson(const std::string& text) {
  auto parsed = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  std::vector<SkippedCheckpointRecord> out;
  if (!parsed.is_array()) return out;
  for (const auto& item : parsed) {
    if (item.is_object()) out.push_back({item.value("name", ""), item.value("reason", "")});
  }
  return out;
}

std::string SkippedToJson(const std::vector<SkippedCheckpointRecord>& skipped) {
  return SkippedCheckpointsJson(skipped).dump();
}

template <typename T>
std::vector<T> FromJsonArray(const std::string& text) {
  auto parsed = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  std::vector<T> out;
  if (!parsed.is_array()) return out;
  for (const auto& item : parsed) {
    if constexpr (std::is_same_v<T, int>) {
      if (item.is_number_integer()) out.push_back(item.get<int>());
    } else {
      if (item.is_string()) out.push_back(item.get<std::string>());
    }
  }
  return out;
}

JobRecord ReadJob(const Statement& s) {
  JobRecord j;
  j.id = s.ColumnText(0);
  j.name = s.ColumnText(1);
  // A state this build does not know (a newer writer) reads as lost rather than as a live one.
  j.state = ParseJobState(s.ColumnText(2)).value_or(JobState::kLost);
  j.queue = s.ColumnText(3);
  j.argv = FromJsonArray<std::string>(s.ColumnText(4));
  j.gpus = FromJsonArray<int>(s.ColumnText(5));
  j.gpus_requested = static_cast<int>(s.ColumnInt(6));
  j.step = OptionalInt(s, 7);
  j.restarts = static_cast<int>(s.ColumnInt(8));
  j.last_checkpoint_at = s.ColumnOptionalDouble(9);
  j.last_checkpoint_path = s.ColumnText(10);
  j.spend_usd = s.ColumnDouble(11);
  j.budget_usd = s.ColumnOptionalDouble(12);
  j.price_per_hour_usd = s.ColumnOptionalDouble(13);
  j.created_at = s.ColumnOptionalDouble(14);
  j.started_at = s.ColumnOptionalDouble(15);
  j.finished_at = s.ColumnOptionalDouble(16);
  j.heartbeat_at = s.ColumnOptionalDouble(17);
  j.not_before = s.ColumnOptionalDouble(18);
  if (auto code = OptionalInt(s, 19)) j.exit_code = static_cast<int>(*code);
  j.reason = s.ColumnText(20);
  j.supervisor_pid = OptionalInt(s, 21);
  j.slurm_job_id = s.ColumnText(22);
  j.checkpoint_dir = s.ColumnText(23);
  j.workdir = s.ColumnText(24);
  j.run_options = FromJsonArray<std::string>(s.ColumnText(25));
  j.generation = static_cast<int>(s.ColumnInt(26));
  const std::string start = s.ColumnText(27);
  if (start == "new") j.start = JobStart::kNew;
  if (start == "continued") j.start = JobStart::kContinued;
  j.child_pgid = OptionalInt(s, 28);
  j.child_start_ticks = OptionalInt(s, 29);
  j.plan.layout = s.ColumnText(30);
  j.plan.step_seconds = s.ColumnOptionalDouble(31);
  j.plan.step_seconds_p90 = s.ColumnOptionalDouble(32);
  j.plan.tokens_per_step = s.ColumnOptionalDouble(33);
  j.plan.total_steps = OptionalInt(s, 34);
  j.plan.peak_bytes_per_gpu = s.ColumnOptionalDouble(35);
  j.plan.total_hours = s.ColumnOptionalDouble(36);
  j.plan.total_hours_p90 = s.ColumnOptionalDouble(37);
  j.plan.cost_usd = s.ColumnOptionalDouble(38);
  j.plan.cost_p90_usd = s.ColumnOptionalDouble(39);
  j.plan.deadline_at = s.ColumnOptionalDouble(40);
  j.measured.step_seconds = s.ColumnOptionalDouble(41);
  j.measured.tokens_per_second = s.ColumnOptionalDouble(42);
  j.measured.tokens = OptionalInt(s, 43);
  j.plan.provider = s.ColumnText(44);
  j.plan.instance_type = s.ColumnText(45);
  j.plan.gpu = s.ColumnText(46);
  j.plan.gpus_per_node = OptionalInt32(s, 47);
  j.plan.nodes = OptionalInt32(s, 48);
  j.plan.pricing = s.ColumnText(49);
  j.measured.peak_bytes_per_gpu = s.ColumnOptionalDouble(50);
  j.measured.gpu_utilization_pct = s.ColumnOptionalDouble(51);
  j.measured.power_watts = s.ColumnOptionalDouble(52);
  j.measured.agent_reason = s.ColumnText(53);
  j.preemptions = static_cast<int>(s.ColumnInt(54));
  j.skipped_checkpoints = SkippedFromJson(s.ColumnText(55));
  j.plan.interruptions = s.ColumnOptionalDouble(56);
  j.plan.checkpoint_interval_seconds = s.ColumnOptionalDouble(57);
  return j;
}

std::string Placeholders(int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += i == 0 ? "?" : ",?";
  return out;
}

Statement& BindOptionalInt(Statement& s, int index, std::optional<int64_t> value) {
  if (value) return s.Bind(index, *value);
  return s.BindNull(index);
}

// Rows of "SELECT id, job_id, name, severity, summary, at FROM alerts ...".
Result<std::vector<AlertRecord>> ReadAlerts(Statement& s) {
  std::vector<AlertRecord> out;
  while (s.Step()) {
    out.push_back({s.ColumnInt(0), s.ColumnText(1), s.ColumnText(2), s.ColumnText(3),
                   s.ColumnText(4), s.ColumnDouble(5)});
  }
  FULCRUM_RETURN_IF_ERROR(s.status());
  return out;
}

std::string UtcDay(double unix_seconds) {
  std::time_t t = static_cast<std::time_t>(std::floor(unix_seconds));
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[16];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", &tm);
  return buf;
}

}  // namespace

std::optional<double> AgeSeconds(const std::optional<double>& at, double now) {
  if (!at) return std::nullopt;
  return now - *at;
}

std::string_view JobStateName(JobState state) {
  for (const auto& [value, name] : kStateNames) {
    if (value == state) return name;
  }
  return "lost";
}

std::optional<JobState> ParseJobState(std::string_view name) {
  for (const auto& [value, text] : kStateNames) {
    if (text == name) return value;
  }
  return std::nullopt;
}

bool IsActiveState(JobState state) {
  return state == JobState::kQueued || state == JobState::kStarting ||
         state == JobState::kRunning || state == JobState::kBackoff ||
         state == JobState::kCheckpointing;
}

bool IsFinishedState(JobState state) {
  return state == JobState::kSucceeded || state == JobState::kFailed ||
         state == JobState::kCrashLoop;
}

std::string_view JobStartName(JobStart start) {
  return start == JobStart::kNew ? "new" : "continued";
}

JobState EffectiveState(const JobRecord& job) {
  if (IsActiveState(job.state) && job.state != JobState::kQueued && job.supervisor_pid &&
      job.queue != "slurm" && ::kill(static_cast<pid_t>(*job.supervisor_pid), 0) != 0 &&
      errno == ESRCH) {
    return JobState::kLost;
  }
  return job.state;
}

Result<JobsDb> JobsDb::Open(const std::string& path, bool read_only) {
  if (read_only && !std::filesystem::exists(path)) {
    return Status::NotFound(path + ": no jobs database (no job has run with this data dir)");
  }
  Database::Options options;
  options.read_only = read_only;
  FULCRUM_ASSIGN_OR_RETURN(Database db, Database::Open(path, options));
  if (read_only) {
    FULCRUM_ASSIGN_OR_RETURN(int version, db.UserVersion());
    if (version > kSchemaVersion) {
      return Status::InvalidInput(path + ": schema version " + std::to_string(version) +
                                  " is newer than this fulcrum understands (" +
                                  std::to_string(kSchemaVersion) + ")");
    }
    if (version == 0) return Status::NotFound(path + ": jobs database not initialised yet");
    return JobsDb(std::move(db), version);
  }
  FULCRUM_RETURN_IF_ERROR(db.Migrate(kSchemaVersion, kMigrations));
  return JobsDb(std::move(db), kSchemaVersion);
}

Result<JobsDb> JobsDb::OpenInDataDir(const std::string& data_dir, bool read_only) {
  std::error_code ec;
  if (!read_only) {
    std::filesystem::create_directories(data_dir, ec);
    if (ec) return Status::IoError(data_dir + ": cannot create data dir: " + ec.message());
  }
  return Open((std::filesystem::path(data_dir) / "jobs.db").string(), read_only);
}

Result<std::vector<JobRecord>> JobsDb::ListJobs() {
  FULCRUM_ASSIGN_OR_RETURN(Statement s, db_.Prepare("SELECT " + SelectJobColumns(version_) +
                                                    " FROM jobs ORDER BY created_at, id"));
  std::vector<JobRecord> jobs;
  while (s.Step()) jobs.push_back(ReadJob(s));
  FULCRUM_RETURN_IF_ERROR(s.status());
  return jobs;
}

Result<std::optional<JobRecord>> JobsDb::GetJob(const std::string& id) {
  FULCRUM_ASSIGN_OR_RETURN(
      Statement s, db_.Prepare("SELECT " + SelectJobColumns(version_) + " FROM jobs WHERE id = ?"));
  s.Bind(1, id);
  if (s.Step()) return std::optional<JobRecord>(ReadJob(s));
  FULCRUM_RETURN_IF_ERROR(s.status());
  return std::optional<JobRecord>();
}

Result<std::vector<RestartRecord>> JobsDb::ListRestarts(const std::string& job_id) {
  FULCRUM_ASSIGN_OR_RETURN(Statement s,
                           db_.Prepare("SELECT job_id, at, exit_code, signal, reason FROM restarts "
                                       "WHERE job_id = ? ORDER BY at"));
  s.Bind(1, job_id);
  std::vector<RestartRecord> out;
  while (s.Step()) {
    RestartRecord r;
    r.job_id = s.ColumnText(0);
    r.at = s.ColumnDouble(1);
    if (auto v = OptionalInt(s, 2)) r.exit_code = static_cast<int>(*v);
    if (auto v = OptionalInt(s, 3)) r.signal = static_cast<int>(*v);
    r.reason = s.ColumnText(4);
    out.push_back(std::move(r));
  }
  FULCRUM_RETURN_IF_ERROR(s.status());
  return out;
}

Result<std::vector<CheckpointRecord>> JobsDb::ListCheckpoints(const std::string& job_id) {
  FULCRUM_ASSIGN_OR_RETURN(Statement s,
                           db_.Prepare("SELECT job_id, path, completed_at, duration_seconds FROM "
                                       "checkpoints WHERE job_id = ? ORDER BY completed_at"));
  s.Bind(1, job_id);
  std::vector<CheckpointRecord> out;
  while (s.Step()) {
    out.push_back({s.ColumnText(0), s.ColumnText(1), s.ColumnDouble(2), s.ColumnOptionalDouble(3)});
  }
  FULCRUM_RETURN_IF_ERROR(s.status());
  return out;
}

Result<std::vector<AlertRecord>> JobsDb::ListAlertsAfter(int64_t after_id, size_t limit) {
  FULCRUM_ASSIGN_OR_RETURN(Statement s,
                           db_.Prepare("SELECT id, job_id, name, severity, summary, at FROM alerts "
                                       "WHERE id > ? ORDER BY id LIMIT ?"));
  s.Bind(1, after_id).Bind(2, static_cast<int64_t>(limit));
  return ReadAlerts(s);
}

Result<int64_t> JobsDb::LastAlertId() {
  FULCRUM_ASSIGN_OR_RETURN(Statement s, db_.Prepare("SELECT COALESCE(MAX(id), 0) FROM alerts"));
  int64_t id = 0;
  if (s.Step()) id = s.ColumnInt(0);
  FULCRUM_RETURN_IF_ERROR(s.status());
  return id;
}

Result<std::vector<AlertRecord>> JobsDb::ListAlerts(double since) {
  FULCRUM_ASSIGN_OR_RETURN(Statement s,
                           db_.Prepare("SELECT id, job_id, name, severity, summary, at FROM alerts "
                                       "WHERE at >= ? ORDER BY at DESC, id DESC"));
  s.Bind(1, since);
  return ReadAlerts(s);
}

Result<std::vector<SpendRow>> JobsDb::SpendByDay() {
  FULCRUM_ASSIGN_OR_RETURN(
      Statement s,
      db_.Prepare("SELECT job_id, day, seconds, usd FROM ledger ORDER BY day, job_id"));
  std::vector<SpendRow> out;
  while (s.Step()) {
    out.push_back({s.ColumnText(0), s.ColumnText(1), s.ColumnDouble(2), s.ColumnDouble(3)});
  }
  FULCRUM_RETURN_IF_ERROR(s.status());
  return out;
}

Status JobsDb::UpsertJob(const JobRecord& j) {
  FULCRUM_ASSIGN_OR_RETURN(Statement s,
                           db_.Prepare(std::string("INSERT OR REPLACE INTO jobs (") + kJobColumns +
                                       ") VALUES (" + Placeholders(kJobColumnCount) + ")"));
  s.Bind(1, j.id).Bind(2, j.name).Bind(3, JobStateName(j.state)).Bind(4, j.queue);
  s.Bind(5, nlohmann::json(j.argv).dump()).Bind(6, nlohmann::json(j.gpus).dump());
  s.Bind(7, static_cast<int64_t>(j.gpus_requested));
  BindOptionalInt(s, 8, j.step);
  s.Bind(9, static_cast<int64_t>(j.restarts)).Bind(10, j.last_checkpoint_at);
  s.Bind(11, j.last_checkpoint_path).Bind(12, j.spend_usd).Bind(13, j.budget_usd);
  s.Bind(14, j.price_per_hour_usd).Bind(15, j.created_at).Bind(16, j.started_at);
  s.Bind(17, j.finished_at).Bind(18, j.heartbeat_at).Bind(19, j.not_before);
  BindOptionalInt(s, 20, j.exit_code ? std::optional<int64_t>(*j.exit_code) : std::nullopt);
  s.Bind(21, j.reason);
  BindOptionalInt(s, 22, j.supervisor_pid);
  s.Bind(23, j.slurm_job_id).Bind(24, j.checkpoint_dir).Bind(25, j.workdir);
  s.Bind(26, nlohmann::json(j.run_options).dump());
  s.Bind(27, static_cast<int64_t>(j.generation));
  s.Bind(28, j.start ? JobStartName(*j.start) : std::string_view(""));
  BindOptionalInt(s, 29, j.child_pgid);
  BindOptionalInt(s, 30, j.child_start_ticks);
  s.Bind(31, j.plan.layout).Bind(32, j.plan.step_seconds).Bind(33, j.plan.step_seconds_p90);
  s.Bind(34, j.plan.tokens_per_step);
  BindOptionalInt(s, 35, j.plan.total_steps);
  s.Bind(36, j.plan.peak_bytes_per_gpu).Bind(37, j.plan.total_hours);
  s.Bind(38, j.plan.total_hours_p90).Bind(39, j.plan.cost_usd).Bind(40, j.plan.cost_p90_usd);
  s.Bind(41, j.plan.deadline_at).Bind(42, j.measured.step_seconds);
  s.Bind(43, j.measured.tokens_per_second);
  BindOptionalInt(s, 44, j.measured.tokens);
  s.Bind(45, j.plan.provider).Bind(46, j.plan.instance_type).Bind(47, j.plan.gpu);
  BindOptionalInt(s, 48, Widen(j.plan.gpus_per_node));
  BindOptionalInt(s, 49, Widen(j.plan.nodes));
  s.Bind(50, j.plan.pricing).Bind(51, j.measured.peak_bytes_per_gpu);
  s.Bind(52, j.measured.gpu_utilization_pct).Bind(53, j.measured.power_watts);
  s.Bind(54, j.measured.agent_reason).Bind(55, static_cast<int64_t>(j.preemptions));
  s.Bind(56, SkippedToJson(j.skipped_checkpoints));
  s.Bind(57, j.plan.interruptions).Bind(58, j.plan.checkpoint_interval_seconds);
  return s.Run();
}

Status JobsDb::UpdateState(const std::string& id, JobState state, const std::string& reason) {
  FULCRUM_ASSIGN_OR_RETURN(Statement s,
                           db_.Prepare("UPDATE jobs SET state = ?, reason = ? WHERE id = ?"));
  return s.Bind(1, JobStateName(state)).Bind(2, reason).Bind(3, id).Run();
}

Status JobsDb::SetHeartbeat(const std::string& id, double at, std::optional<int64_t> step) {
  FULCRUM_ASSIGN_OR_RETURN(
      Statement s,
      db_.Prepare("UPDATE jobs SET heartbeat_at = ?, step = COALESCE(?, step) WHERE id = ?"));
  s.Bind(1, at);
  BindOptionalInt(s, 2, step);
  return s.Bind(3, id).Run();
}

Status JobsDb::SetMeasure(const std::string& id, const JobMeasure& m) {
  FULCRUM_ASSIGN_OR_RETURN(
      Statement s,
      db_.Prepare("UPDATE jobs SET measured_step_seconds = ?, measured_tokens_per_second = ?, "
                  "tokens = ?, measured_peak_bytes_per_gpu = ?, measured_gpu_utilization_pct = ?, "
                  "measured_power_watts = ?, agent_reason = ? WHERE id = ?"));
  s.Bind(1, m.step_seconds).Bind(2, m.tokens_per_second);
  BindOptionalInt(s, 3, m.tokens);
  s.Bind(4, m.peak_bytes_per_gpu).Bind(5, m.gpu_utilization_pct).Bind(6, m.power_watts);
  return s.Bind(7, m.agent_reason).Bind(8, id).Run();
}

Status JobsDb::SetSkippedCheckpoints(const std::string& id,
                                     const std::vector<SkippedCheckpointRecord>& skipped) {
  FULCRUM_ASSIGN_OR_RETURN(
      Statement s, db_.Prepare("UPDATE jobs SET skipped_checkpoints_json = ? WHERE id = ?"));
  return s.Bind(1, SkippedToJson(skipped)).Bind(2, id).Run();
}

Status JobsDb::AddPrediction(const PredictionRecord& r) {
  FULCRUM_ASSIGN_OR_RETURN(Statement s,
                           db_.Prepare(std::string("INSERT OR REPLACE INTO predictions (") +
                                       kPredictionColumns + ") VALUES (" + Placeholders(17) + ")"));
  s.Bind(1, r.uid).Bind(2, r.job_id).Bind(3, r.finished_at).Bind(4, r.state).Bind(5, r.layout);
  s.Bind(6, r.gpu);
  BindOptionalInt(s, 7, Widen(r.gpus_per_node));
  BindOptionalInt(s, 8, Widen(r.nodes));
  s.Bind(9, r.work_fraction).Bind(10, r.predicted_step_seconds).Bind(11, r.measured_step_seconds);
  s.Bind(12, r.predicted_peak_bytes_per_gpu).Bind(13, r.measured_peak_bytes_per_gpu);
  s.Bind(14, r.predicted_hours).Bind(15, r.measured_hours);
  return s.Bind(16, r.predicted_cost_usd).Bind(17, r.measured_cost_usd).Run();
}

Result<std::vector<PredictionRecord>> JobsDb::ListPredictions() {
  std::vector<PredictionRecord> out;
  if (version_ < 5) return out;
  FULCRUM_ASSIGN_OR_RETURN(Statement s, db_.Prepare(std::string("SELECT ") + kPredictionColumns +
                                                    " FROM predictions ORDER BY finished_at, uid"));
  while (s.Step()) {
    PredictionRecord r;
    r.uid = s.ColumnText(0);
    r.job_id = s.ColumnText(1);
    r.finished_at = s.ColumnDouble(2);
    r.state = s.ColumnText(3);
    r.layout = s.ColumnText(4);
    r.gpu = s.ColumnText(5);
    r.gpus_per_node = OptionalInt32(s, 6);
    r.nodes = OptionalInt32(s, 7);
    r.work_fraction = s.ColumnOptionalDouble(8);
    r.predicted_step_seconds = s.ColumnOptionalDouble(9);
    r.measured_step_seconds = s.ColumnOptionalDouble(10);
    r.predicted_peak_bytes_per_gpu = s.ColumnOptionalDouble(11);
    r.measured_peak_bytes_per_gpu = s.ColumnOptionalDouble(12);
    r.predicted_hours = s.ColumnOptionalDouble(13);
    r.measured_hours = s.ColumnOptionalDouble(14);
    r.predicted_cost_usd = s.ColumnOptionalDouble(15);
    r.measured_cost_usd = s.ColumnOptionalDouble(16);
    out.push_back(std::move(r));
  }
  FULCRUM_RETURN_IF_ERROR(s.status());
  return out;
}

std::optional<PredictionRecord> PredictionOf(const JobRecord& job) {
  const JobPlan& plan = job.plan;
  if (!plan.step_seconds && !plan.total_hours && !plan.peak_bytes_per_gpu) return std::nullopt;
  PredictionRecord r;
  r.uid = job.uid();
  r.job_id = job.id;
  r.finished_at = job.finished_at.value_or(0);
  r.state = std::string(JobStateName(job.state));
  r.layout = plan.layout;
  r.gpu = plan.gpu;
  r.gpus_per_node = plan.gpus_per_node;
  r.nodes = plan.nodes;
  if (plan.total_steps && *plan.total_steps > 0 && job.step) {
    r.work_fraction = std::clamp(
        static_cast<double>(*job.step) / static_cast<double>(*plan.total_steps), 0.0, 1.0);
  }
  r.predicted_step_seconds = plan.step_seconds;
  r.measured_step_seconds = job.measured.step_seconds;
  r.predicted_peak_bytes_per_gpu = plan.peak_bytes_per_gpu;
  r.measured_peak_bytes_per_gpu = job.measured.peak_bytes_per_gpu;
  // Totals only for the work done: a run that stopped at 25 of 100 steps is compared with a
  // quarter of the plan, never with all of it.
  if (r.work_fraction && *r.work_fraction > 0) {
    if (plan.total_hours) r.predicted_hours = *plan.total_hours * *r.work_fraction;
    if (plan.cost_usd) r.predicted_cost_usd = *plan.cost_usd * *r.work_fraction;
  }
  if (job.price_per_hour_usd && *job.price_per_hour_usd > 0) {
    r.measured_hours = job.spend_usd / *job.price_per_hour_usd;
  } else if (job.finished_at && job.started_at) {
    r.measured_hours = (*job.finished_at - *job.started_at) / 3600;
  }
  if (job.price_per_hour_usd) r.measured_cost_usd = job.spend_usd;
  return r;
}

Status JobsDb::AddRestart(const RestartRecord& r) {
  FULCRUM_ASSIGN_OR_RETURN(
      Statement s,
      db_.Prepare(
          "INSERT INTO restarts (job_id, at, exit_code, signal, reason) VALUES (?,?,?,?,?)"));
  s.Bind(1, r.job_id).Bind(2, r.at);
  BindOptionalInt(s, 3, r.exit_code ? std::optional<int64_t>(*r.exit_code) : std::nullopt);
  BindOptionalInt(s, 4, r.signal ? std::optional<int64_t>(*r.signal) : std::nullopt);
  return s.Bind(5, r.reason).Run();
}

Status JobsDb::AddCheckpoint(const CheckpointRecord& c) {
  FULCRUM_ASSIGN_OR_RETURN(
      Statement s, db_.Prepare("INSERT OR REPLACE INTO checkpoints (job_id, path, completed_at, "
                               "duration_seconds) VALUES (?,?,?,?)"));
  return s.Bind(1, c.job_id)
      .Bind(2, c.path)
      .Bind(3, c.completed_at)
      .Bind(4, c.duration_seconds)
      .Run();
}

Result<int64_t> JobsDb::AddAlert(const AlertRecord& a) {
  FULCRUM_ASSIGN_OR_RETURN(
      Statement s,
      db_.Prepare("INSERT INTO alerts (job_id, name, severity, summary, at) VALUES (?,?,?,?,?)"));
  FULCRUM_RETURN_IF_ERROR(s.Bind(1, a.job_id)
                              .Bind(2, a.name)
                              .Bind(3, a.severity)
                              .Bind(4, a.summary)
                              .Bind(5, a.at)
                              .Run());
  return db_.LastInsertRowId();
}

Status JobsDb::AddSpend(const std::string& job_id, double at, double seconds, double usd) {
  FULCRUM_RETURN_IF_ERROR(db_.Begin());
  Status status;
  {
    auto ledger = db_.Prepare(
        "INSERT INTO ledger (job_id, day, seconds, usd) VALUES (?,?,?,?) ON CONFLICT(job_id, day) "
        "DO UPDATE SET seconds = seconds + excluded.seconds, usd = usd + excluded.usd");
    status = ledger.ok()
                 ? ledger->Bind(1, job_id).Bind(2, UtcDay(at)).Bind(3, seconds).Bind(4, usd).Run()
                 : ledger.status();
  }
  if (status.ok()) {
    auto total = db_.Prepare("UPDATE jobs SET spend_usd = spend_usd + ? WHERE id = ?");
    status = total.ok() ? total->Bind(1, usd).Bind(2, job_id).Run() : total.status();
  }
  if (!status.ok()) {
    (void)db_.Rollback();
    return status;
  }
  return db_.Commit();
}

Status JobsDb::DeleteJob(const std::string& id) {
  FULCRUM_ASSIGN_OR_RETURN(Statement s, db_.Prepare("DELETE FROM jobs WHERE id = ?"));
  return s.Bind(1, id).Run();
}

std::string ResolveDataDir(const std::string& flag) { return DataDir(flag); }

}  // namespace fulcrum::store
