// GCC 12 reports a false -Wmaybe-uninitialized inside std::regex's std::function under
// -fsanitize (the asan preset); it must be silenced before any header is read.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include "supervise/supervisor.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <numeric>

#include <nlohmann/json.hpp>

#include "core/parse.h"
#include "core/table.h"
#include "core/text_file.h"
#include "spot/interval.h"
#include "store/jobs_projection.h"

namespace fulcrum::supervise {
namespace fs = std::filesystem;
namespace {

constexpr double kScanIntervalSeconds = 0.2;
constexpr double kLedgerIntervalSeconds = 1.0;
constexpr double kAgentPollSeconds = 5.0;
constexpr double kHangPollSeconds = 1.0;  // the RAS poller itself reports every 10 s by default
// Progress samples (4 = three step intervals) before a projection may raise an alert: one
// interval is startup noise.
constexpr size_t kMinSamplesForAlert = 4;

std::string JoinInts(const std::vector<int>& values) {
  std::string out;
  for (int v : values) {
    if (!out.empty()) out.push_back(',');
    out.append(std::to_string(v));
  }
  return out;
}

double FileMtime(const std::string& path) {
  std::error_code ec;
  auto t = fs::last_write_time(path, ec);
  if (ec) return 0;
  return std::chrono::duration<double>(std::chrono::file_clock::to_sys(t).time_since_epoch())
      .count();
}

}  // namespace

bool PreparedBySubmit(const store::JobRecord& row) {
  return !row.supervisor_pid &&
         (row.state == store::JobState::kQueued || row.state == store::JobState::kStarting);
}

store::JobStart DecideStart(const store::JobRecord& previous, StartMode mode) {
  if (mode == StartMode::kNew) return store::JobStart::kNew;
  if (mode == StartMode::kContinue) return store::JobStart::kContinued;
  return store::IsFinishedState(store::EffectiveState(previous)) ? store::JobStart::kNew
                                                                 : store::JobStart::kContinued;
}

Supervisor::Supervisor(SupervisorOptions options, Clock& clock, ProcessRunner& runner,
                       store::JobsDb* db)
    : options_(std::move(options)),
      clock_(clock),
      runner_(runner),
      db_(db),
      scanner_(options_.checkpoints),
      policy_(options_.restart) {
  if (!options_.progress_regex.empty()) progress_regex_.emplace(options_.progress_regex);
}

double Supervisor::CheckpointIntervalSeconds() const {
  if (options_.checkpoint_every_seconds) return *options_.checkpoint_every_seconds;
  if (checkpoint_durations_.empty()) return 1800;  // until a checkpoint duration is measured
  const size_t n = std::min<size_t>(checkpoint_durations_.size(), 5);
  const double delta = std::accumulate(checkpoint_durations_.end() - static_cast<long>(n),
                                       checkpoint_durations_.end(), 0.0) /
                       static_cast<double>(n);
  const double mtbf = EstimateMtbfSeconds(options_.mtbf_prior_seconds,
                                          clock_.MonotonicSeconds() - started_, failures_);
  return std::max(1.0, spot::DalyIntervalSeconds(std::max(delta, 1e-3), mtbf));
}

void Supervisor::Event(const std::string& text) {
  if (options_.on_event) options_.on_event(text);
}

void Supervisor::Alert(const std::string& name, const std::string& severity,
                       const std::string& summary) {
  Event("ALERT " + name + " (" + severity + "): " + summary);
  const store::AlertRecord record{0, job_.id, name, severity, summary, clock_.UnixSeconds()};
  Write("record the alert", [record](store::JobsDb& db) { return db.AddAlert(record).status(); });
  if (options_.on_alert) options_.on_alert(record);
}

void Supervisor::SaveJob() {
  Write("update the job", [job = job_](store::JobsDb& db) { return db.UpsertJob(job); });
}

void Supervisor::Write(std::string what, store::JobsWriter::Write write) {
  if (db_ == nullptr) return;
  if (writer_) {
    writer_->Post(std::move(what), std::move(write));
    return;
  }
  Status s = write(*db_);
  if (!s.ok()) Event("cannot " + what + " in jobs.db: " + s.message());
}

void Supervisor::LogStoreNotes() {
  if (!writer_) return;
  for (const std::string& note : writer_->TakeNotes()) Event(note);
}

void Supervisor::CloseStore() {
  if (!writer_) return;
  if (!writer_->Flush(options_.final_write_seconds)) {
    Event(std::to_string(writer_->Pending()) + " record(s) of the job could not be written to " +
          "jobs.db within " + FormatDuration(options_.final_write_seconds) +
          " (locked by another process?); `fulcrum status` misses the end of this run");
  }
  LogStoreNotes();
  writer_.reset();
}

void Supervisor::Init() {
  started_ = clock_.MonotonicSeconds();
  last_accrual_ = started_;
  job_.id = options_.job_id;
  job_.name = options_.job_id;
  job_.queue = options_.queue;
  job_.created_at = clock_.UnixSeconds();
  job_.generation = 1;
  job_.start = store::JobStart::kNew;
  if (db_ != nullptr) {
    auto existing = db_->GetJob(options_.job_id);
    if (existing.ok() && existing->has_value()) {
      const store::JobRecord& old = **existing;
      // A row that `fulcrum submit` queued carries the decision made then (and its counts).
      const bool prepared = PreparedBySubmit(old) && options_.start_mode == StartMode::kAuto;
      const store::JobStart start = prepared ? old.start.value_or(store::JobStart::kNew)
                                             : DecideStart(old, options_.start_mode);
      job_.created_at = old.created_at ? old.created_at : job_.created_at;
      job_.queue = old.queue == "run" ? options_.queue : old.queue;
      job_.slurm_job_id = old.slurm_job_id;
      job_.not_before = old.not_before;
      job_.gpus_requested = old.gpus_requested;
      job_.run_options = old.run_options;
      job_.start = start;
      if (prepared || start == store::JobStart::kContinued) {
        job_.plan = old.plan;  // a continued run keeps its plan and first deadline
        job_.measured = old.measured;
        job_.generation = std::max(1, old.generation);
        job_.spend_usd = old.spend_usd;
        job_.restarts = old.restarts;
        job_.preemptions = old.preemptions;
        job_.step = old.step;
      } else {
        job_.generation = old.generation + 1;
      }
    }
    if (auto past = db_->ListCheckpoints(options_.job_id); past.ok()) {
      for (const auto& c : *past) {
        if (c.duration_seconds) checkpoint_durations_.push_back(*c.duration_seconds);
      }
    }
    // From here on the store is the writer's: the reads above are the last on this thread.
    if (options_.write_store_async) writer_ = std::make_unique<store::JobsWriter>(*db_);
  }
  Event(std::string(job_.start == store::JobStart::kNew ? "new job " : "continuing job ") +
        job_.uid() +
        (job_.start == store::JobStart::kContinued
             ? " (restart count " + std::to_string(job_.restarts) + ")"
             : ""));
  const std::optional<double> deadline_at = job_.plan.deadline_at;
  if (!options_.plan.layout.empty() || options_.plan.step_seconds || options_.plan.total_steps) {
    job_.plan = options_.plan;
  }
  job_.plan.deadline_at = deadline_at;
  if (!job_.plan.deadline_at && options_.deadline_seconds) {
    job_.plan.deadline_at = clock_.UnixSeconds() + *options_.deadline_seconds;
  }
  job_.argv = options_.argv;
  job_.gpus = options_.gpus;
  job_.budget_usd = options_.budget_usd;
  job_.price_per_hour_usd = options_.price_per_hour_usd;
  job_.checkpoint_dir = options_.checkpoints.dir;
  job_.workdir = options_.cwd;
  job_.started_at = clock_.UnixSeconds();
  job_.finished_at.reset();
  job_.exit_code.reset();
  job_.reason.clear();
  job_.supervisor_pid = static_cast<int64_t>(::getpid());
  job_.state = store::JobState::kStarting;
  initial_scan_ = true;
  ScanCheckpoints(true);
  initial_scan_ = false;
  if (!latest_checkpoint_.empty()) Event("latest complete checkpoint: " + latest_checkpoint_);
  SaveJob();
}

void Supervisor::StartChild() {
  const double now = clock_.MonotonicSeconds();
  ScanCheckpoints(true);
  if (options_.unhealthy_gpus && !options_.gpus.empty() && policy_.restarts() > 0) {
    std::vector<int> bad = options_.unhealthy_gpus();
    std::vector<int> keep;
    for (int g : options_.gpus) {
      if (std::find(bad.begin(), bad.end(), g) == bad.end()) keep.push_back(g);
    }
    if (keep.size() != options_.gpus.size()) {
      Alert("gpu_unhealthy", "critical",
            "leaving out GPU(s) " + JoinInts(bad) + " on restart; running on " + JoinInts(keep));
      options_.gpus = keep;
      job_.gpus = keep;
    }
    if (keep.empty()) {
      Finish(store::JobState::kFailed, "no healthy GPU left to restart on", kExitGaveUp);
      return;
    }
  }
  ChildSpec spec;
  spec.argv = options_.argv;
  spec.cwd = options_.cwd;
  spec.env["FULCRUM_JOB_ID"] = job_.id;
  spec.env["FULCRUM_JOB_UID"] = job_.uid();
  spec.env["FULCRUM_RESTART_COUNT"] = std::to_string(job_.restarts);
  spec.env["FULCRUM_CHECKPOINT_DIR"] = options_.checkpoints.dir;
  spec.env["FULCRUM_RESUME_FROM"] = latest_checkpoint_;
  spec.env["FULCRUM_HEARTBEAT_FILE"] = options_.heartbeat_file;
  spec.env["FULCRUM_CHECKPOINT_REQUEST_FILE"] = options_.checkpoint_request_file;
  spec.env["FULCRUM_READY_FILE"] = options_.ready_file;
  // A request or a readiness left over from the previous child is not this one's.
  std::error_code ec;
  if (!options_.checkpoint_request_file.empty()) fs::remove(options_.checkpoint_request_file, ec);
  if (!options_.ready_file.empty()) fs::remove(options_.ready_file, ec);
  ready_ = false;
  window_.clear();  // a new child's first steps include its startup
  if (!options_.gpus.empty()) spec.env["CUDA_VISIBLE_DEVICES"] = JoinInts(options_.gpus);
  heartbeat_mtime_ = options_.heartbeat_file.empty() ? 0 : FileMtime(options_.heartbeat_file);
  Status s = runner_.Start(spec);
  if (!s.ok()) {
    Finish(store::JobState::kFailed, "cannot start the command: " + s.message(), kExitGaveUp);
    return;
  }
  Event("started pid " + std::to_string(runner_.pid()) +
        (latest_checkpoint_.empty() ? " (fresh start)" : " resuming from " + latest_checkpoint_));
  job_.child_pgid = runner_.pid();
  job_.child_start_ticks = runner_.start_ticks();
  if (!job_.child_start_ticks) job_.child_pgid.reset();
  child_started_ = now;
  last_progress_ = now;
  stall_alerted_ = false;
  hang_text_.clear();  // a new child's ranks are new processes: any hang of theirs is new
  hang_acted_ = false;
  checkpoint_requested_at_.reset();
  next_checkpoint_at_ = now + CheckpointIntervalSeconds();
  phase_ = Phase::kRunning;
  job_.state = store::JobState::kRunning;
  SaveJob();
}

void Supervisor::OnLine(Stream stream, std::string_view line) {
  if (options_.on_output) options_.on_output(stream, line);
  if (!progress_regex_) return;
  std::match_results<std::string_view::const_iterator> match;
  if (std::regex_search(line.begin(), line.end(), match, *progress_regex_)) {
    last_progress_ = clock_.MonotonicSeconds();
    stall_alerted_ = false;
    ready_ = true;
    job_.heartbeat_at = clock_.UnixSeconds();
    if (match.size() > 1 && match[1].matched) {
      auto step = ParseInt(std::string(match[1].first, match[1].second));
      if (step.ok()) {
        job_.step = *step;
        RecordProgress(*step, std::nullopt);
      }
    }
  }
}

void Supervisor::ScanCheckpoints(bool force) {
  if (options_.checkpoints.dir.empty()) return;
  const double now = clock_.MonotonicSeconds();
  if (!force && now - last_scan_ < kScanIntervalSeconds) return;
  last_scan_ = now;
  auto complete = scanner_.Scan(now);
  for (const auto& note : scanner_.TakeNotes()) Event(note);  // skips, with the reason
  RecordSkippedCheckpoints();
  if (!complete.ok()) {
    Event(complete.status().message());
    return;
  }
  if (complete->empty() || (complete->back().path == latest_checkpoint_ &&
                            job_.last_checkpoint_at == complete->back().mtime_unix)) {
    return;  // nothing new; one saved again under its name (Lightning's last.ckpt) is new
  }
  const Checkpoint& newest = complete->back();
  const bool first_sight = initial_scan_;
  latest_checkpoint_ = newest.path;
  job_.last_checkpoint_path = newest.path;
  job_.last_checkpoint_at = newest.mtime_unix;
  if (first_sight) return;  // found at start-up, not written by this run
  std::optional<double> duration;
  if (checkpoint_requested_at_) {
    duration = now - *checkpoint_requested_at_;
    checkpoint_durations_.push_back(*duration);
    checkpoint_requested_at_.reset();
  }
  last_checkpoint_mono_ = now;
  missing_alerted_ = false;
  policy_.OnCheckpoint(now);
  Event("checkpoint complete: " + newest.path +
        (duration ? " (" + FormatNumber(*duration, 2) + " s after the request)" : ""));
  Write("record the checkpoint",
        [c = store::CheckpointRecord{job_.id, newest.path, clock_.UnixSeconds(), duration}](
            store::JobsDb& db) { return db.AddCheckpoint(c); });
  for (const auto& removed : scanner_.Prune(*complete)) Event("removed old checkpoint " + removed);
  if (phase_ == Phase::kStopping) checkpoint_at_stop_ = newest.path;
  SaveJob();
}

bool Supervisor::JobReady() {
  if (ready_) return true;
  if (options_.ready_file.empty() && options_.heartbeat_file.empty()) return ready_ = true;
  std::error_code ec;
  if (!options_.ready_file.empty() && fs::exists(options_.ready_file, ec)) ready_ = true;
  return ready_;
}

std::string Supervisor::RequestCheckpoint() {
  std::string channels;
  if (!options_.checkpoint_request_file.empty()) {
    std::ofstream(options_.checkpoint_request_file) << "checkpoint\n";
    channels = "request file";
  }
  if (options_.signal_target != SignalTarget::kNone) {
    static constexpr const char* kTargetNames[] = {"none", "leader", "group", "children"};
    const std::string what = SignalName(options_.checkpoint_signal) + " to " +
                             kTargetNames[static_cast<int>(options_.signal_target)];
    if (JobReady()) {
      runner_.Signal(options_.checkpoint_signal, options_.signal_target);
      channels += (channels.empty() ? "" : ", ") + what;
    } else {
      channels += (channels.empty() ? "" : ", ") + std::string("no ") + what +
                  ": the job has not said it is ready";
    }
  }
  return channels.empty() ? "no channel" : channels;
}

void Supervisor::CheckCadence() {
  if (options_.checkpoints.dir.empty() || phase_ != Phase::kRunning || !runner_.running()) return;
  const double now = clock_.MonotonicSeconds();
  const double interval = CheckpointIntervalSeconds();
  if (options_.checkpoint_requests && now >= next_checkpoint_at_) {
    const std::string channels = RequestCheckpoint();
    if (!checkpoint_requested_at_) checkpoint_requested_at_ = now;
    next_checkpoint_at_ = now + interval;
    Event("requested a checkpoint (" + channels + ")");
  }
  const double since = std::max(last_checkpoint_mono_, child_started_);
  if (!missing_alerted_ && now - since > 2 * interval) {
    missing_alerted_ = true;
    Alert("missing_checkpoint", "warning",
          "no new complete checkpoint in " + FormatDuration(now - since) + " (interval " +
              FormatDuration(interval) + ")");
  }
}

void Supervisor::CheckProgress() {
  const double now = clock_.MonotonicSeconds();
  if (!options_.heartbeat_file.empty()) {
    double mtime = FileMtime(options_.heartbeat_file);
    if (mtime != 0 && mtime != heartbeat_mtime_) {
      heartbeat_mtime_ = mtime;
      ready_ = true;
      last_progress_ = now;
      stall_alerted_ = false;
      job_.heartbeat_at = clock_.UnixSeconds();
      ReadHeartbeatJson();
    }
  }
  if (!options_.stall_timeout_seconds || phase_ != Phase::kRunning || !runner_.running()) return;
  if (!stall_alerted_ && now - last_progress_ > *options_.stall_timeout_seconds) {
    stall_alerted_ = true;
    Alert("stall", "warning",
          "no progress for " + FormatDuration(now - last_progress_) +
              (options_.restart_on_stall ? "; restarting the job" : ""));
    if (options_.restart_on_stall) runner_.SignalGroup(SIGKILL);
  }
}

std::optional<HeartbeatFigures> ReadHeartbeatFigures(const std::string& path) {
  Result<std::string> text = ReadTextFile(path, "a heartbeat file", kMaxHeartbeatBytes);
  if (!text.ok()) return std::nullopt;
  const auto doc = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object() || !doc.contains("step") || !doc["step"].is_number_integer())
    return std::nullopt;
  HeartbeatFigures figures;
  figures.step = doc["step"].get<int64_t>();
  if (doc.contains("tokens") && doc["tokens"].is_number_integer())
    figures.tokens = doc["tokens"].get<int64_t>();
  return figures;
}

void Supervisor::ReadHeartbeatJson() {
  // A touched (empty) file is a heartbeat without figures; a half-written one is skipped.
  const std::optional<HeartbeatFigures> figures = ReadHeartbeatFigures(options_.heartbeat_file);
  if (!figures) return;
  job_.step = figures->step;
  RecordProgress(figures->step, figures->tokens);
}

void Supervisor::RecordProgress(int64_t step, std::optional<int64_t> tokens) {
  const double now = clock_.MonotonicSeconds();
  if (tokens) job_.measured.tokens = tokens;
  if (!window_.empty() && step < window_.back().step) window_.clear();  // resumed further back
  if (!window_.empty() && step == window_.back().step) return;
  window_.push_back({now, step, tokens});
  while (window_.size() > 2 && now - window_.front().at > options_.measure_window_seconds)
    window_.pop_front();
  const ProgressSample& first = window_.front();
  const ProgressSample& last = window_.back();
  const double seconds = last.at - first.at;
  if (window_.size() < 2 || !(seconds > 0)) return;
  job_.measured.step_seconds = seconds / static_cast<double>(last.step - first.step);
  if (first.tokens && last.tokens) {
    job_.measured.tokens_per_second = static_cast<double>(*last.tokens - *first.tokens) / seconds;
  } else if (job_.plan.tokens_per_step) {
    job_.measured.tokens_per_second = *job_.plan.tokens_per_step / *job_.measured.step_seconds;
  }
  measure_dirty_ = true;
}

void Supervisor::CheckProjection() {
  if (phase_ != Phase::kRunning || window_.size() < kMinSamplesForAlert) return;
  const store::JobProjection p = store::ProjectJob(job_, clock_.UnixSeconds());
  const std::string speed =
      p.speed_vs_plan ? "at the current " + FormatNumber(*p.speed_vs_plan, 2) + " x planned speed"
                      : "at the measured " + FormatNumber(p.measured_step_seconds.value_or(0), 3) +
                            " s per step";
  const std::string replan =
      "; re-plan: fulcrum plan ... (measured " +
      FormatNumber(p.measured_step_seconds.value_or(0), 3) + " s per step" +
      (p.planned_step_seconds ? ", planned " + FormatNumber(*p.planned_step_seconds, 3) : "") + ")";
  if (!deadline_alerted_ && p.deadline_met_probability && *p.deadline_met_probability < 0.5) {
    deadline_alerted_ = true;
    Alert("deadline_risk", "warning",
          speed + " the run misses the deadline by " +
              FormatDuration(p.deadline_miss_seconds.value_or(0)) + " with " +
              FormatNumber(100 * (1 - *p.deadline_met_probability), 0) + " % probability" + replan);
  }
  if (!budget_risk_alerted_ && p.budget_exceeded_probability &&
      *p.budget_exceeded_probability > 0.5) {
    budget_risk_alerted_ = true;
    Alert("budget_risk", "warning",
          speed + " the run costs " + FormatUsd(p.projected_cost_usd.value_or(0)) + " (P90 " +
              FormatUsd(p.projected_cost_p90_usd.value_or(0)) + "), over the " +
              FormatUsd(job_.budget_usd.value_or(0)) + " budget with " +
              FormatNumber(100 * *p.budget_exceeded_probability, 0) + " % probability" + replan);
  }
}

void Supervisor::AccrueSpend() {
  const double now = clock_.MonotonicSeconds();
  const double dt = now - last_accrual_;
  if (dt >= kLedgerIntervalSeconds || phase_ == Phase::kDone) {
    last_accrual_ = now;
    if (job_.heartbeat_at) {
      Write("record the heartbeat",
            [id = job_.id, at = *job_.heartbeat_at, step = job_.step](store::JobsDb& db) {
              return db.SetHeartbeat(id, at, step);
            });
    }
    PollAgentFigures(now);
    if (measure_dirty_) {
      measure_dirty_ = false;
      Write("record the measured speed",
            [id = job_.id, m = job_.measured](store::JobsDb& db) { return db.SetMeasure(id, m); });
    }
    CheckProjection();
    if (options_.price_per_hour_usd) {
      // Per-second billing: the machine costs money while the supervisor holds it, child or not.
      const double usd = *options_.price_per_hour_usd * dt / 3600;
      job_.spend_usd += usd;
      Write("record spend", [id = job_.id, at = clock_.UnixSeconds(), dt, usd](store::JobsDb& db) {
        return db.AddSpend(id, at, dt, usd);
      });
    }
  }
  CheckBudget(now);
}

void Supervisor::CheckBudget(double now) {
  if (!options_.price_per_hour_usd || !options_.budget_usd || phase_ == Phase::kDone) return;
  // The ledger is written once a second, the budget checked every tick against the spend up to
  // now: at any price the warning comes when 80 % is reached and the stop when 100 % is, not up
  // to a ledger tick later (where one tick may cost more than the last 20 %).
  const double spend = job_.spend_usd + *options_.price_per_hour_usd * (now - last_accrual_) / 3600;
  const double budget = *options_.budget_usd;
  if (!budget_warned_ && spend >= 0.8 * budget) {
    budget_warned_ = true;
    Alert("budget_warning", "warning",
          "spent " + FormatUsd(spend) + " of the " + FormatUsd(budget) + " budget (80 %)");
  }
  if (spend >= budget && (phase_ == Phase::kRunning || phase_ == Phase::kBackoff)) {
    Alert("budget_exhausted", "critical",
          "spent " + FormatUsd(spend) + " of " + FormatUsd(budget) +
              "; checkpointing and stopping within the stop grace of " +
              FormatDuration(options_.stop_grace_seconds));
    BeginStop("budget of " + FormatUsd(budget) + " reached", store::JobState::kStopped,
              kExitBudget);
  }
}

void Supervisor::BeginStop(const std::string& reason, store::JobState final_state, int exit_code) {
  if (phase_ == Phase::kBackoff || !runner_.running()) {
    Finish(final_state, reason, exit_code);
    return;
  }
  if (phase_ != Phase::kRunning) return;
  const double now = clock_.MonotonicSeconds();
  stop_reason_ = reason;
  stop_state_ = final_state;
  stop_exit_code_ = exit_code;
  checkpoint_at_stop_.clear();
  phase_ = Phase::kStopping;
  job_.state = store::JobState::kCheckpointing;
  job_.reason = reason;
  SaveJob();
  // A budget stop ends within the grace, SIGTERM's wait included: the spend bound is one
  // supervisor tick plus the grace over the budget. Other stops wait the grace for the
  // checkpoint, then kill_after for SIGTERM.
  const bool bounded = exit_code == kExitBudget;
  const double checkpoint_wait =
      bounded ? std::max(0.0, options_.stop_grace_seconds - options_.kill_after_seconds)
              : options_.stop_grace_seconds;
  stop_hard_deadline_ = bounded ? now + options_.stop_grace_seconds : 1e300;
  if (!options_.checkpoints.dir.empty()) {
    const std::string channels = RequestCheckpoint();
    checkpoint_requested_at_ = now;
    stop_deadline_ = now + checkpoint_wait;
    Event("stopping (" + reason + "): requested a checkpoint (" + channels + "), waiting up to " +
          FormatDuration(checkpoint_wait));
  } else {
    stop_deadline_ = now;
    Event("stopping (" + reason + ")");
  }
}

double Supervisor::HangGraceSeconds() const {
  double longest_checkpoint = 0;
  for (double d : checkpoint_durations_) longest_checkpoint = std::max(longest_checkpoint, d);
  return std::max(options_.hang_grace_seconds, 2 * longest_checkpoint);
}

void Supervisor::CheckHang(double now) {
  if (!options_.nccl_stalled || phase_ != Phase::kRunning || !runner_.running()) return;
  if (now - last_hang_poll_ < kHangPollSeconds) return;
  last_hang_poll_ = now;
  const std::vector<telemetry::NcclLaggingRank> stalled =
      options_.nccl_stalled(runner_.pid(), job_.uid());
  const std::string text = DescribeHang(stalled);
  if (text != hang_text_) {  // a new hang, or the ranks moved on (not the same stall)
    if (!hang_text_.empty() && text.empty()) Event("NCCL: no rank stalled any more");
    hang_text_ = text;
    hang_since_ = now;
    hang_acted_ = false;
    if (!text.empty()) {
      Event(text + " (acting with --on-hang " + HangActionName(options_.on_hang) + " after " +
            FormatDuration(HangGraceSeconds()) + " if it stays)");
    }
  }
  if (hang_text_.empty() || hang_acted_ || now - hang_since_ < HangGraceSeconds()) return;
  hang_acted_ = true;
  const std::string what = hang_text_ + " (stalled " + FormatDuration(now - hang_since_) + ")";
  if (options_.on_hang == HangAction::kIgnore) {
    Alert("nccl_hang", "critical", what + "; --on-hang ignore: the job is left running");
    return;
  }
  std::optional<std::string> evidence;
  if (options_.hang_evidence) evidence = options_.hang_evidence(stalled);
  const std::string reason = what + (evidence ? "; " + *evidence : "");
  if (options_.on_hang == HangAction::kStop) {
    Alert("nccl_hang", "critical", reason + "; stopping the job (--on-hang stop)");
    TerminateHungJob(reason, false, store::JobState::kStopped, kExitGaveUp);
  } else if (evidence) {
    Alert("nccl_hang", "critical", reason + "; stopping the job for a requeue on another node");
    TerminateHungJob(reason, false, store::JobState::kStopped, kExitStopped);
  } else {
    Alert("nccl_hang", "critical", reason + "; restarting the job from its last checkpoint");
    TerminateHungJob(reason, true, store::JobState::kStopped, kExitStopped);
  }
}

void Supervisor::TerminateHungJob(const std::string& reason, bool restart,
                                  store::JobState final_state, int exit_code) {
  const double now = clock_.MonotonicSeconds();
  stop_reason_ = reason;
  stop_state_ = final_state;
  stop_exit_code_ = exit_code;
  restart_after_kill_ = restart;
  job_.reason = reason;
  SaveJob();
  Event("the job is hung; sending SIGTERM (SIGKILL after " +
        FormatDuration(options_.kill_after_seconds) + ")");
  runner_.SignalGroup(SIGTERM);
  phase_ = Phase::kTerminating;
  term_sent_at_ = now;
  kill_deadline_ = now + options_.kill_after_seconds;
}

void Supervisor::OnExit(const ChildExit& exit) {
  job_.child_pgid.reset();  // the runner ended the group with its leader
  job_.child_start_ticks.reset();
  ScanCheckpoints(true);  // a checkpoint finished just before the exit still counts
  scanner_.OnWriterDied(clock_.MonotonicSeconds());
  const double now = clock_.MonotonicSeconds();
  if (phase_ == Phase::kTerminating && restart_after_kill_) {
    // A hung job ended by the supervisor: a failure like a crash, restarted within the budget.
    restart_after_kill_ = false;
    phase_ = Phase::kRunning;
    RestartAfterFailure(now, std::nullopt, exit.signal, stop_reason_ + "; job " + exit.Describe());
    return;
  }
  if (phase_ == Phase::kStopping || phase_ == Phase::kTerminating) {
    std::string reason = stop_reason_ + "; job " + exit.Describe();
    reason +=
        latest_checkpoint_.empty() ? "; no checkpoint" : "; last checkpoint " + latest_checkpoint_;
    Finish(exit.success() && stop_state_ != store::JobState::kStopped ? store::JobState::kSucceeded
                                                                      : stop_state_,
           reason, stop_exit_code_);
    return;
  }
  if (exit.success()) {
    Finish(store::JobState::kSucceeded, "exit 0", 0);
    return;
  }
  RestartAfterFailure(now, exit.exit_code, exit.signal, exit.Describe());
}

void Supervisor::RestartAfterFailure(double now, std::optional<int> exit_code,
                                     std::optional<int> signal, const std::string& what) {
  ++failures_;
  RestartDecision decision = policy_.OnFailure(now, exit_code, what);
  Write("record the restart", [r = store::RestartRecord{job_.id, clock_.UnixSeconds(), exit_code,
                                                        signal, decision.reason}](
                                  store::JobsDb& db) { return db.AddRestart(r); });
  switch (decision.verdict) {
    case RestartVerdict::kFinalExit:
      Finish(store::JobState::kFailed, decision.reason, exit_code.value_or(kExitGaveUp));
      return;
    case RestartVerdict::kTooManyRestarts:
      Alert("restart_limit", "critical", decision.reason);
      Finish(store::JobState::kFailed, decision.reason, kExitGaveUp);
      return;
    case RestartVerdict::kCrashLoop:
      Alert("crash_loop", "critical", decision.reason + "; stopped to save money");
      Finish(store::JobState::kCrashLoop, decision.reason, kExitGaveUp);
      return;
    case RestartVerdict::kRestart:
      break;
  }
  ++job_.restarts;
  phase_ = Phase::kBackoff;
  restart_at_ = now + decision.wait_seconds;
  job_.state = store::JobState::kBackoff;
  job_.reason = decision.reason;
  SaveJob();
  Event(decision.reason + " in " + FormatNumber(decision.wait_seconds, 2) + " s");
}

void Supervisor::Finish(store::JobState state, const std::string& reason, int exit_code) {
  phase_ = Phase::kDone;
  AccrueSpend();
  job_.state = state;
  job_.reason = reason;
  job_.finished_at = clock_.UnixSeconds();
  job_.exit_code = exit_code;
  job_.supervisor_pid.reset();
  SaveJob();
  RecordPrediction();
  outcome_ = {state, reason, exit_code, policy_.restarts(), latest_checkpoint_};
  Event("job " + std::string(store::JobStateName(state)) + ": " + reason);
}

void Supervisor::RecordSkippedCheckpoints() {
  std::vector<store::SkippedCheckpointRecord> skipped;
  for (const SkippedCheckpoint& s : scanner_.skipped()) skipped.push_back({s.name, s.reason});
  const auto same = [](const store::SkippedCheckpointRecord& a,
                       const store::SkippedCheckpointRecord& b) {
    return a.name == b.name && a.reason == b.reason;
  };
  if (std::equal(skipped.begin(), skipped.end(), job_.skipped_checkpoints.begin(),
                 job_.skipped_checkpoints.end(), same)) {
    return;
  }
  job_.skipped_checkpoints = std::move(skipped);
  if (initial_scan_) return;  // Init's scan is saved with the whole row
  Write("record the skipped checkpoints",
        [id = job_.id, skipped = job_.skipped_checkpoints](store::JobsDb& db) {
          return db.SetSkippedCheckpoints(id, skipped);
        });
}

void Supervisor::PollAgentFigures(double now) {
  store::JobMeasure& m = job_.measured;
  if (!options_.job_gpu_figures) {
    if (m.agent_reason.empty()) {
      m.agent_reason = "no local agent (--agent none): no per-process GPU figures";
      measure_dirty_ = true;
    }
    return;
  }
  if (!runner_.running() || now - last_agent_poll_ < kAgentPollSeconds) return;
  last_agent_poll_ = now;
  const JobGpuFigures f = options_.job_gpu_figures(runner_.pid());  // the group's leader
  if (f.peak_bytes_per_gpu) {
    m.peak_bytes_per_gpu = std::max(m.peak_bytes_per_gpu.value_or(0), *f.peak_bytes_per_gpu);
  }
  m.gpu_utilization_pct = f.gpu_utilization_pct;
  m.power_watts = f.power_watts;
  m.agent_reason = f.reason;
  measure_dirty_ = true;
}

void Supervisor::RecordPrediction() {
  if (db_ == nullptr || !store::IsFinishedState(job_.state)) return;
  const std::optional<store::PredictionRecord> prediction = store::PredictionOf(job_);
  if (!prediction) return;
  Write("record the prediction log",
        [p = *prediction](store::JobsDb& db) { return db.AddPrediction(p); });
}

void Supervisor::Tick() {
  auto exit = runner_.Wait(options_.tick_seconds,
                           [this](Stream s, std::string_view line) { OnLine(s, line); });
  if (exit) {
    OnExit(*exit);
    if (phase_ == Phase::kDone) return;
  }
  const double now = clock_.MonotonicSeconds();
  LogStoreNotes();
  ScanCheckpoints(false);
  CheckProgress();
  AccrueSpend();
  if (phase_ == Phase::kDone) return;
  if (phase_ == Phase::kRunning || phase_ == Phase::kBackoff) {
    std::optional<std::string> notice;
    if (options_.stop_notice) notice = options_.stop_notice();
    if (!notice && options_.preemption_notice) {
      if (auto preempted = options_.preemption_notice()) {
        ++job_.preemptions;  // saved with the row by the stop
        notice = "preemption notice: " + *preempted;
      }
    }
    if (notice) {
      BeginStop(*notice, store::JobState::kStopped, kExitStopped);
      if (phase_ == Phase::kDone) return;
    }
  }
  if (phase_ == Phase::kBackoff && now >= restart_at_) StartChild();
  CheckHang(now);
  CheckCadence();
  if (phase_ == Phase::kStopping && (!checkpoint_at_stop_.empty() || now >= stop_deadline_)) {
    Event(checkpoint_at_stop_.empty() ? "no checkpoint within the grace period; sending SIGTERM"
                                      : "checkpoint saved; sending SIGTERM");
    runner_.SignalGroup(SIGTERM);
    phase_ = Phase::kTerminating;
    term_sent_at_ = now;
    kill_deadline_ = std::min(now + options_.kill_after_seconds, stop_hard_deadline_);
  } else if (phase_ == Phase::kTerminating && now >= kill_deadline_) {
    Event("the job ignored SIGTERM for " + FormatDuration(now - term_sent_at_) + "; SIGKILL");
    runner_.SignalGroup(SIGKILL);
    kill_deadline_ = now + 3600;
  }
}

SupervisorOutcome Supervisor::Run() {
  Init();
  StartChild();
  while (phase_ != Phase::kDone) Tick();
  CloseStore();
  return outcome_;
}

}  // namespace fulcrum::supervise
