// The supervisor's store: <data-dir>/jobs.db (jobs, restarts, checkpoints, spend ledger, alerts).
// Written by `fulcrum run` / `fulcrum submit`, read (read-only) by the agent for /v1/jobs, its
// idle detector and the delivery of the supervisors' alerts (alert::JobAlertFeed). Times are Unix
// seconds (double); unknown values are std::nullopt. A JobsDb owns one SQLite connection and is not
// thread-safe: give each thread its own (SQLite serialises writers between connections and
// processes). Schema version in PRAGMA user_version.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "store/sqlite.h"

namespace fulcrum::store {

// Job states, stored and shown by their names ("queued", "crash_loop", ...). Active: kQueued
// (local queue or Slurm, waiting), kStarting, kRunning, kBackoff (waiting to restart),
// kCheckpointing (a stop waits for its checkpoint). Final: kSucceeded, kFailed, kCrashLoop (the
// job finished: its name's next run is a new job), kStopped (notice, signal, budget: its next run
// continues it). kLost: the supervisor vanished without a word (kill -9, reboot); stored by
// nobody, derived from a dead supervisor_pid (EffectiveState), and continued like kStopped.
enum class JobState {
  kQueued,
  kStarting,
  kRunning,
  kBackoff,
  kCheckpointing,
  kSucceeded,
  kFailed,
  kStopped,
  kCrashLoop,
  kLost,
};
std::string_view JobStateName(JobState state);
// nullopt for a name that is none of the above.
std::optional<JobState> ParseJobState(std::string_view name);
bool IsActiveState(JobState state);
// Whether the job ended on its own (succeeded, failed, crash_loop): a later run is a new job.
bool IsFinishedState(JobState state);
// Comparison with a state's name, for code written before the enum (`j.state == "running"`).
inline bool operator==(JobState state, std::string_view name) {
  return JobStateName(state) == name;
}

// How a run of `fulcrum run` related to the job's previous run.
enum class JobStart {
  kNew,        // first run of the name, or the previous one finished: new uid, counts from 0
  kContinued,  // the previous run was stopped or lost: same uid, counts go on, resumes
};
std::string_view JobStartName(JobStart start);

// What the job was planned to do (`fulcrum run --plan`, or --expect-step-seconds by hand) and what
// the supervisor measured of it so far. Every field is unknown until given or measured.
struct JobPlan {
  std::string layout;  // "hyperbolic/1x-H100 tp1 pp1 dp1 zero0 mb2 (hf)"; "" = no plan file
  std::optional<double> step_seconds;      // planned P50
  std::optional<double> step_seconds_p90;  // planned P90
  std::optional<double> tokens_per_step;
  std::optional<int64_t> total_steps;
  std::optional<double> peak_bytes_per_gpu;
  std::optional<double> total_hours;  // planned P50, overheads included
  std::optional<double> total_hours_p90;
  std::optional<double> cost_usd;  // planned expected
  std::optional<double> cost_p90_usd;
  std::optional<double> deadline_at;  // Unix seconds (--deadline from the first start)
  // The planned offer and its hardware (schema 5; "" / nullopt without a plan file): what
  // `fulcrum plan --calibrate-from` matches offers against and `cost --accuracy` groups by.
  std::string provider;
  std::string instance_type;
  std::string gpu;  // catalog GPU name ("H100-SXM5-80GB")
  std::optional<int> gpus_per_node;
  std::optional<int> nodes;
  std::string pricing;  // on_demand | spot | reserved_1y | reserved_3y
  // The spot model's expected interruptions over the planned run (0 on demand) and the planned
  // checkpoint interval: what the re-quote starts from before preemptions are seen.
  std::optional<double> interruptions;
  std::optional<double> checkpoint_interval_seconds;
};

struct JobMeasure {
  std::optional<double> step_seconds;       // over the sliding window
  std::optional<double> tokens_per_second;  // over the sliding window
  std::optional<int64_t> tokens;            // last token count seen (heartbeat JSON)
  // From a local agent (schema 5), over the job's own processes: the highest GPU memory any one
  // of its GPUs held for them, and the mean utilisation and power of the GPUs only the job uses.
  // Unknown (nullopt) with `agent_reason` saying why (no agent, no per-process data, GPU shared).
  std::optional<double> peak_bytes_per_gpu;
  std::optional<double> gpu_utilization_pct;
  std::optional<double> power_watts;
  std::string agent_reason;
};

// A checkpoint candidate the supervisor does not count as complete, and why (the scanner's
// supervise::SkippedCheckpoint, kept in the row so that `status` can show it).
struct SkippedCheckpointRecord {
  std::string name;
  std::string reason;
};

struct JobRecord {
  std::string id;    // unique; the --name of the job
  std::string name;  // same as id for now (kept separate for the API)
  JobState state = JobState::kQueued;
  std::string queue;  // "run" (direct), "local" (submit), "slurm"
  std::vector<std::string> argv;
  std::vector<int> gpus;  // GPU indices the job runs on (CUDA_VISIBLE_DEVICES)
  int gpus_requested = 0;
  std::optional<int64_t> step;  // last progress step seen (regex capture)
  int restarts = 0;
  std::optional<double> last_checkpoint_at;
  std::string last_checkpoint_path;
  double spend_usd = 0;
  std::optional<double> budget_usd;
  std::optional<double> price_per_hour_usd;
  std::optional<double> created_at;
  std::optional<double> started_at;
  std::optional<double> finished_at;
  std::optional<double> heartbeat_at;
  std::optional<double> not_before;  // local queue: earliest start
  std::optional<int> exit_code;
  std::string reason;  // why it ended / why it waits ("preempted: aws", "budget", ...)
  std::optional<int64_t> supervisor_pid;
  std::string slurm_job_id;
  std::string checkpoint_dir;
  std::string workdir;
  std::vector<std::string> run_options;  // extra `fulcrum run` options for queued jobs
  // Identity across runs of the same name: generation N has uid "<id>.N"; a new job takes the
  // next generation, a continued one keeps it. 0 = not started yet (queued).
  int generation = 0;
  std::optional<JobStart> start;  // of the latest run; nullopt before the first
  // While a child runs: its process group (the leader's pid) and the leader's start time in
  // clock ticks since boot. Still set after the supervisor's death: the next supervisor ends
  // what is left of that group (supervise::EndStaleProcessGroup) before it starts anew.
  std::optional<int64_t> child_pgid;
  std::optional<int64_t> child_start_ticks;
  JobPlan plan;
  JobMeasure measured;
  int preemptions = 0;  // stops on a preemption notice over the job's runs (schema 5)
  std::vector<SkippedCheckpointRecord> skipped_checkpoints;  // the last scan's (schema 5)
  std::string uid() const { return id + "." + std::to_string(generation); }
};

struct RestartRecord {
  std::string job_id;
  double at = 0;
  std::optional<int> exit_code;
  std::optional<int> signal;
  std::string reason;
};

struct CheckpointRecord {
  std::string job_id;
  std::string path;
  double completed_at = 0;
  std::optional<double> duration_seconds;  // from the checkpoint request to completion
};

struct AlertRecord {
  int64_t id = 0;
  std::string job_id;
  std::string name;      // "stall", "crash_loop", "missing_checkpoint", "budget_warning", ...
  std::string severity;  // "warning" | "critical"
  std::string summary;
  double at = 0;
};

struct SpendRow {
  std::string job_id;
  std::string day;  // UTC, YYYY-MM-DD
  double seconds = 0;
  double usd = 0;
};

// Predicted vs measured figures of one finished run (a job's uid), kept in the prediction log
// (schema 5) for `fulcrum cost --accuracy`. The predictions are for the work the run did: the
// plan's totals times work_fraction (steps done / planned steps). Unknown = nullopt.
struct PredictionRecord {
  std::string uid;  // "<job>.<generation>"
  std::string job_id;
  double finished_at = 0;
  std::string state;  // succeeded | failed | crash_loop
  std::string layout;
  std::string gpu;
  std::optional<int> gpus_per_node;
  std::optional<int> nodes;
  std::optional<double> work_fraction;
  std::optional<double> predicted_step_seconds, measured_step_seconds;
  std::optional<double> predicted_peak_bytes_per_gpu, measured_peak_bytes_per_gpu;
  std::optional<double> predicted_hours, measured_hours;
  std::optional<double> predicted_cost_usd, measured_cost_usd;
};

// The prediction log row of a finished job (nullopt without a plan: nothing was predicted).
// measured_hours is the billed time (spend / price, over the job's runs) where the price is
// known, else the latest run's started..finished.
std::optional<PredictionRecord> PredictionOf(const JobRecord& job);

// Seconds since `at` at time `now`, nullopt when `at` is unknown.
std::optional<double> AgeSeconds(const std::optional<double>& at, double now);
// The state to show: kLost when an active, non-queued, non-Slurm job's supervisor pid is gone.
JobState EffectiveState(const JobRecord& job);

class JobsDb {
 public:
  static constexpr int kSchemaVersion = 5;

  // Opens (creating and migrating unless read_only) the file at `path`. A read-only reader
  // accepts an older schema (the agent may start before a new `fulcrum run` migrated the file)
  // and reads the columns added since as their defaults.
  static Result<JobsDb> Open(const std::string& path, bool read_only = false);
  // <data_dir>/jobs.db, creating data_dir when needed.
  static Result<JobsDb> OpenInDataDir(const std::string& data_dir, bool read_only = false);

  // --- read API (used by the agent) ---
  Result<std::vector<JobRecord>> ListJobs();
  Result<std::optional<JobRecord>> GetJob(const std::string& id);
  Result<std::vector<RestartRecord>> ListRestarts(const std::string& job_id);
  Result<std::vector<CheckpointRecord>> ListCheckpoints(const std::string& job_id);
  // Alerts raised at or after `since` (Unix seconds), newest first.
  Result<std::vector<AlertRecord>> ListAlerts(double since);
  // Alerts with an id above `after_id`, oldest (lowest id) first, at most `limit`: a reader's
  // cursor over new rows (ids only grow).
  Result<std::vector<AlertRecord>> ListAlertsAfter(int64_t after_id, size_t limit);
  // The highest alert id so far (0 when there is none).
  Result<int64_t> LastAlertId();
  // Spend per job and UTC day, ordered by day then job.
  Result<std::vector<SpendRow>> SpendByDay();
  // The prediction log, oldest finish first (empty at a schema before 5).
  Result<std::vector<PredictionRecord>> ListPredictions();

  // --- write API (the supervisor and the local queue) ---
  // Inserts or replaces the whole row.
  Status UpsertJob(const JobRecord& job);
  Status UpdateState(const std::string& id, JobState state, const std::string& reason);
  Status SetHeartbeat(const std::string& id, double at, std::optional<int64_t> step);
  // The sliding-window measurement of the job's speed (and its last token count), and the
  // agent's figures.
  Status SetMeasure(const std::string& id, const JobMeasure& measure);
  Status SetSkippedCheckpoints(const std::string& id,
                               const std::vector<SkippedCheckpointRecord>& skipped);
  // Inserts or replaces the row of `record.uid`.
  Status AddPrediction(const PredictionRecord& record);
  Status AddRestart(const RestartRecord& restart);
  Status AddCheckpoint(const CheckpointRecord& checkpoint);
  // Returns the new row's id.
  Result<int64_t> AddAlert(const AlertRecord& alert);
  // Adds `seconds` and `usd` to the job's ledger row for the UTC day of `at` and to its total.
  Status AddSpend(const std::string& job_id, double at, double seconds, double usd);
  Status DeleteJob(const std::string& id);

  Database& db() { return db_; }

 private:
  JobsDb(Database db, int version) : db_(std::move(db)), version_(version) {}
  Database db_;
  int version_;  // of the file: a read-only reader may meet one older than kSchemaVersion
};

// The shared data directory: core/paths.h DataDir (`flag`, $FULCRUM_DATA_DIR, /var/lib/fulcrum as
// root, $XDG_DATA_HOME/fulcrum or ~/.local/share/fulcrum).
std::string ResolveDataDir(const std::string& flag);

}  // namespace fulcrum::store
