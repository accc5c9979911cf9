// The supervisor of `fulcrum run`: starts the job's command, asks it for checkpoints on a cadence,
// watches progress, preemption notices and spend, restarts it after failures (backoff, limits,
// crash loops), stops it cleanly (checkpoint first, then SIGTERM, then SIGKILL) and records all of
// it in jobs.db. Its decisions run from memory: the records go through a store::JobsWriter (its
// own thread), so that a locked jobs.db never delays a stop. One thread drives Run(); the seams
// (Clock, ProcessRunner, notice and stop callbacks) let unit tests drive it with a ManualClock
// and a fake runner. Times in seconds.
#pragma once

#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "core/clock.h"
#include "store/jobs.h"
#include "store/jobs_writer.h"
#include "supervise/agent_health.h"
#include "supervise/checkpoints.h"
#include "supervise/nccl_hang.h"
#include "supervise/policy.h"
#include "supervise/process.h"

namespace fulcrum::supervise {

// Whether this run is a new job or continues the name's previous run.
enum class StartMode {
  kAuto,      // new after succeeded/failed/crash_loop; continue after stopped/lost
  kNew,       // --new
  kContinue,  // --continue
};

// The rule of StartMode for a name whose previous run left `previous` in jobs.db.
store::JobStart DecideStart(const store::JobRecord& previous, StartMode mode);
// A row written by `fulcrum submit` that no supervisor has taken yet: it already holds the
// identity decided at submit time (generation, start, counts).
bool PreparedBySubmit(const store::JobRecord& row);

struct SupervisorOptions {
  std::string job_id;
  std::vector<std::string> argv;
  std::string cwd;
  std::vector<int> gpus;  // empty = CUDA_VISIBLE_DEVICES left as inherited
  std::string queue = "run";
  StartMode start_mode = StartMode::kAuto;
  // A stop waits up to stop_grace for the checkpoint, then kill_after for SIGTERM. A budget stop
  // fits both in stop_grace (the checkpoint gets stop_grace - kill_after), so that the spend ends
  // at most one tick plus stop_grace of the hourly price over the budget.
  double stop_grace_seconds = 60;
  double kill_after_seconds = 10;  // after SIGTERM, SIGKILL the group
  // Checkpoints ("" dir = no checkpoint handling).
  CheckpointScanOptions checkpoints;
  std::optional<double> checkpoint_every_seconds = 1800;  // nullopt = auto (Daly)
  // A checkpoint request creates this file (the job checkpoints and deletes it); "" = none.
  std::string checkpoint_request_file;
  // Signals are opt-in: `checkpoint_signal` goes to `signal_target` with each request, and only
  // once the job is ready (touched `ready_file`, or its first heartbeat or progress line; with
  // neither file configured it counts as ready at once).
  int checkpoint_signal = 10;  // SIGUSR1
  SignalTarget signal_target = SignalTarget::kNone;
  std::string ready_file;
  double mtbf_prior_seconds = 24 * 3600;  // for auto cadence
  bool checkpoint_requests = true;        // false: never signal on a cadence
  RestartPolicyOptions restart;
  // Progress.
  std::string heartbeat_file;
  std::string progress_regex;  // first capture group = step number
  std::optional<double> stall_timeout_seconds;
  bool restart_on_stall = false;
  // Money.
  std::optional<double> price_per_hour_usd;
  std::optional<double> budget_usd;
  // The plan (--plan, --expect-step-seconds ...): recorded, re-quoted, alerted on.
  store::JobPlan plan;
  std::optional<double> deadline_seconds;  // from the job's first start (kept across continues)
  // Progress samples older than this leave the speed measurement's sliding window.
  double measure_window_seconds = 60;
  // Before a restart: GPU indices to leave out (e.g. fallen off the bus per the agent).
  std::function<std::vector<int>()> unhealthy_gpus;
  // Polled every tick: a notice text means "stop cleanly now" (preemption, SIGTERM, ...).
  std::function<std::optional<std::string>()> stop_notice;
  // Polled every tick after stop_notice: the cloud's preemption notice (its text, e.g. "aws"):
  // stops like stop_notice and counts a preemption (store::JobRecord::preemptions).
  std::function<std::optional<std::string>()> preemption_notice;
  // Polled every kAgentPollSeconds while a child runs, with its process group: what a local
  // agent says of the job's GPU memory, utilisation and power (unset: no agent; the row then says
  // so in measured.agent_reason).
  std::function<JobGpuFigures(int64_t pgid)> job_gpu_figures;
  // NCCL hangs: polled about once a second while a child runs, the stalled ranks of the job's
  // own communicators (NCCL's RAS socket through telemetry::NcclRasPoller, filtered with
  // JobStalledRanks; empty = none). Unset: hangs are not watched.
  // Called with the child's process group and the job's uid (FULCRUM_JOB_UID).
  std::function<std::vector<telemetry::NcclLaggingRank>(int64_t pgid, const std::string& job_uid)>
      nccl_stalled;
  HangAction on_hang = HangAction::kRequeue;
  // The same ranks must stay stalled this long before on_hang acts, and at least twice the
  // longest checkpoint measured (ranks wait at a collective while one rank saves).
  double hang_grace_seconds = 300;
  // With on_hang requeue or stop, asked once before the hung job is stopped: a text means this
  // node must not run the job again (cluster/: the node drained, with the XID that proves it);
  // a requeue then ends the run with exit 75 (the sbatch script requeues it elsewhere) instead
  // of restarting here. nullopt: no such evidence.
  std::function<std::optional<std::string>(const std::vector<telemetry::NcclLaggingRank>&)>
      hang_evidence;
  // Output of the job (each line) and the supervisor's own events.
  std::function<void(Stream, std::string_view)> on_output;
  std::function<void(const std::string&)> on_event;
  // Each alert as it is raised (its jobs.db row is written asynchronously: id 0):
  // `fulcrum run --receiver` delivers it.
  std::function<void(const store::AlertRecord&)> on_alert;
  double tick_seconds = 0.05;
  // false: each record is written to jobs.db on the supervisor's thread, waiting for it (for a
  // test that reads the store while the job runs); true: through the JobsWriter's thread.
  bool write_store_async = true;
  // When the job has ended, the records still queued get this long to reach jobs.db.
  double final_write_seconds = 60;
};

struct SupervisorOutcome {
  store::JobState state = store::JobState::kFailed;  // succeeded, failed, stopped, crash_loop
  std::string reason;
  int exit_code = 0;  // what `fulcrum run` exits with
  int restarts = 0;
  std::string last_checkpoint;
};

// Exit codes of `fulcrum run` beyond 0 / the child's final code.
inline constexpr int kExitGaveUp = 1;    // restart limit or crash loop
inline constexpr int kExitStopped = 75;  // stopped by notice or signal (resumable; EX_TEMPFAIL)
inline constexpr int kExitBudget = 76;   // stopped at the budget

// What the job's heartbeat file says when it holds JSON such as {"step": 120, "tokens": 491520}
// (docs/CHECKPOINTS.md): the step and, if given, the tokens so far. nullopt for a touched (empty),
// half-written or non-JSON file, and for one over kMaxHeartbeatBytes (read through core's one
// reader, so a runaway job cannot make the supervisor read gigabytes every poll).
inline constexpr size_t kMaxHeartbeatBytes = 64u << 10;
struct HeartbeatFigures {
  int64_t step = 0;
  std::optional<int64_t> tokens;
};
std::optional<HeartbeatFigures> ReadHeartbeatFigures(const std::string& path);

class Supervisor {
 public:
  // `db` may be null (no store). `clock` and `runner` must outlive the supervisor.
  Supervisor(SupervisorOptions options, Clock& clock, ProcessRunner& runner, store::JobsDb* db);

  // Runs the job to its end.
  SupervisorOutcome Run();

  // The interval currently in force (seconds); with auto cadence it follows Daly's formula.
  double CheckpointIntervalSeconds() const;
  // The job's row as the supervisor knows it (what jobs.db holds once the writes are done).
  const store::JobRecord& job() const { return job_; }

 private:
  enum class Phase { kRunning, kBackoff, kStopping, kTerminating, kDone };

  void Init();
  void StartChild();
  void Tick();
  void OnLine(Stream stream, std::string_view line);
  void OnExit(const ChildExit& exit);
  // A failed child: the restart policy decides (restart after backoff, give up, crash loop).
  void RestartAfterFailure(double now, std::optional<int> exit_code, std::optional<int> signal,
                           const std::string& what);
  void ScanCheckpoints(bool force);
  void CheckCadence();
  // Creates the request file and, when opted in and the job is ready, sends the signal. Returns
  // the channels used ("request file, SIGUSR1 to group").
  std::string RequestCheckpoint();
  bool JobReady();
  void CheckProgress();
  void AccrueSpend();
  // A step (and token count) seen now, from the progress regex or the heartbeat file's JSON.
  void RecordProgress(int64_t step, std::optional<int64_t> tokens);
  void ReadHeartbeatJson();
  // Deadline and budget alerts from the re-quote (store::ProjectJob), once each per run.
  void CheckProjection();
  void CheckBudget(double now);
  void BeginStop(const std::string& reason, store::JobState final_state, int exit_code);
  // NCCL's stalled ranks (nccl_stalled) against the grace; acts once per hang with on_hang.
  void CheckHang(double now);
  double HangGraceSeconds() const;
  // SIGTERM now (a hung job cannot checkpoint), SIGKILL after kill_after; on its exit the job
  // restarts (`restart`) or finishes with `final_state`, `exit_code`.
  void TerminateHungJob(const std::string& reason, bool restart, store::JobState final_state,
                        int exit_code);
  void Finish(store::JobState state, const std::string& reason, int exit_code);
  // A finished job's predicted vs measured figures into the prediction log (store::PredictionOf).
  void RecordPrediction();
  // The scanner's skipped checkpoints into the row when they changed (status shows them).
  void RecordSkippedCheckpoints();
  // job_gpu_figures into job_.measured: the peak is the highest seen, the rest the latest.
  void PollAgentFigures(double now);
  void Alert(const std::string& name, const std::string& severity, const std::string& summary);
  void Event(const std::string& text);
  void SaveJob();
  // Records in jobs.db (`what` names it in a failure: "update the job"), never waiting for it
  // unless write_store_async is off; a no-op without a store.
  void Write(std::string what, store::JobsWriter::Write write);
  // The writer's notes (a locked store, a failed write) as events.
  void LogStoreNotes();
  // Waits (up to final_write_seconds) for the queued records, then stops the writer.
  void CloseStore();

  SupervisorOptions options_;
  Clock& clock_;
  ProcessRunner& runner_;
  store::JobsDb* db_;
  std::unique_ptr<store::JobsWriter> writer_;  // after Init's reads, while Run() runs
  CheckpointScanner scanner_;
  RestartPolicy policy_;
  std::optional<std::regex> progress_regex_;

  store::JobRecord job_;
  Phase phase_ = Phase::kRunning;
  SupervisorOutcome outcome_;
  double started_ = 0;  // monotonic
  double restart_at_ = 0;
  double child_started_ = 0;
  double last_progress_ = 0;
  double heartbeat_mtime_ = 0;
  bool stall_alerted_ = false;
  bool ready_ = false;  // the current child said it is up (ready file, heartbeat, progress)
  double last_scan_ = -1e18;
  double last_accrual_ = 0;
  double pending_usd_ = 0, pending_seconds_ = 0;
  bool budget_warned_ = false;
  struct ProgressSample {
    double at = 0;  // monotonic
    int64_t step = 0;
    std::optional<int64_t> tokens;
  };
  std::deque<ProgressSample> window_;  // the sliding window of the speed measurement
  bool measure_dirty_ = false;         // job_.measured changed since it was last stored
  double last_agent_poll_ = -1e300;    // monotonic time of the last job_gpu_figures call
  bool deadline_alerted_ = false;
  bool budget_risk_alerted_ = false;
  std::string latest_checkpoint_;
  bool initial_scan_ = false;  // the scan at start-up: what it finds was not written by this run
  double last_checkpoint_mono_ = 0;
  std::optional<double> checkpoint_requested_at_;  // monotonic, outstanding request
  double next_checkpoint_at_ = 0;
  bool missing_alerted_ = false;
  std::vector<double> checkpoint_durations_;
  int failures_ = 0;
  // Stop in progress.
  double stop_deadline_ = 0;
  double kill_deadline_ = 0;
  double term_sent_at_ = 0;
  double stop_hard_deadline_ = 1e300;  // a budget stop's SIGKILL comes by then
  store::JobState stop_state_ = store::JobState::kStopped;
  std::string stop_reason_;
  int stop_exit_code_ = 0;
  std::string checkpoint_at_stop_;
  // NCCL hang watch.
  double last_hang_poll_ = -1e300;   // monotonic
  std::string hang_text_;            // the stalled ranks as last described ("" = none)
  double hang_since_ = 0;            // when hang_text_ was first seen
  bool hang_acted_ = false;          // on_hang ran for hang_text_
  bool restart_after_kill_ = false;  // the child being terminated is restarted on its exit
};

}  // namespace fulcrum::supervise
