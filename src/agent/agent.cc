#include "agent/agent.h"

#include <poll.h>
#include <unistd.h>
#include <algorithm>
#include <cctype>
#include <cerrno>

#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <map>

#include "agent/disk_full.h"
#include "agent/host.h"
#include "agent/idle.h"
#include "agent/live_state.h"
#include "alert/delivery.h"
#include "alert/evaluator.h"
#include "alert/job_alert.h"
#include "alert/nccl_hang.h"
#include "alert/notify.h"
#include "alert/rules_yaml.h"
#include "core/file_lock.h"
#include "server/http_server.h"
#include "store/agent_db.h"
#include "store/jobs.h"
#include "store/outbox_sqlite.h"
#include "store/repair.h"
#include "store/sqlite.h"
#include "telemetry/nccl_ras_poller.h"
#include "telemetry/nvml_source.h"
#include "telemetry/replay_source.h"
#include "telemetry/sim_source.h"

namespace fulcrum::agent {

namespace {

constexpr double kFlushSeconds = 1.0;          // batch writes: at most this much is unflushed
constexpr double kMaintainSeconds = 10.0;      // rollups and retention cadence
constexpr size_t kMaxPendingSnapshots = 3600;  // while the store fails, keep at most an hour

store::AgentAlert ToAgentAlert(const alert::Transition& t) {
  store::AgentAlert a;
  a.fingerprint = t.fingerprint;
  a.name = t.rule_name;
  a.status = std::string(alert::ToString(t.to));
  a.severity = t.severity;
  a.gpu = t.gpu;
  a.value = t.value;
  a.threshold = t.threshold;
  a.started_at = t.started_at;
  if (t.fired_at > 0) a.fired_at = t.fired_at;
  if (t.resolved_at > 0) a.resolved_at = t.resolved_at;
  auto summary = t.annotations.find("summary");
  if (summary != t.annotations.end()) a.summary = summary->second;
  a.labels_json = nlohmann::json(t.labels).dump();
  return a;
}

alert::AlertStatus ParseStatus(const std::string& s) {
  return s == "firing" ? alert::AlertStatus::kFiring : alert::AlertStatus::kPending;
}

}  // namespace

struct Agent::Impl {
  AgentConfig config;
  const Clock& clock;
  std::string data_dir;
  std::string hostname;
  // An flock on the data dir itself, held for the agent's lifetime: one agent per data dir (the
  // kernel drops it when the process dies, kill -9 included; no file to remove can fool it).
  std::optional<FileLock> lock;
  std::unique_ptr<telemetry::GpuSource> source;
  std::unique_ptr<telemetry::Recorder> recorder;
  std::optional<store::AgentDb> db;
  std::unique_ptr<store::SqliteOutbox> outbox;
  std::unique_ptr<alert::FallbackOutbox> alert_outbox;  // over `outbox`: memory when it refuses
  std::optional<store::JobsDb> jobs;
  std::unique_ptr<alert::Evaluator> evaluator;
  alert::JobAlertFeed job_alerts;  // the supervisors' alerts in jobs.db
  std::vector<alert::Receiver> receivers;
  alert::NotifyContext notify_context;
  std::unique_ptr<alert::CurlPoster> poster;
  std::unique_ptr<alert::DeliveryWorker> delivery;
  LiveState live;
  std::unique_ptr<server::AgentServer> server;
  IdleDetector idle;
  ReleaseRunner release;
  AgentCounters counters;
  store::WriteBatch pending;
  double last_flush = 0;
  double store_error_logged_at = -1e18;  // monotonic; store write failures log once a minute
  uint64_t store_errors_unlogged = 0;
  double last_maintain = -1e18;
  double idle_started_at = 0;                    // unix time of the idle warning's alert
  telemetry::GpuSnapshot last_full;              // the last full sample (fast ticks merge over it)
  telemetry::FastFieldAggregate fast_aggregate;  // fast readings since the last full tick
  std::vector<alert::Sample> job_batch;          // job series of the last full tick
  std::unique_ptr<telemetry::NcclRasPoller> nccl_ras;  // names the ranks behind a hang; null if off
  std::optional<DiskFullAlert> disk_full;              // the agent's own alert of a full data disk
  double last_write_ok_mono = -1e18;                   // the last store write that succeeded

  Impl(AgentConfig c, const Clock& k)
      : config(std::move(c)),
        clock(k),
        data_dir(store::ResolveDataDir(config.data_dir)),
        live(data_dir),
        idle(config.idle) {}

  Status OpenSource() {
    if (config.source == "nvml") {
      FULCRUM_ASSIGN_OR_RETURN(source, telemetry::NvmlSource::Open());
    } else if (config.source == "sim") {
      std::vector<telemetry::Fault> faults;
      if (!config.sim_scenario.empty()) {
        FULCRUM_ASSIGN_OR_RETURN(faults, telemetry::LoadScenario(config.sim_scenario));
      }
      for (const telemetry::Fault& f : faults) {
        if (f.gpu >= config.sim_gpus) {
          return Status::InvalidInput(config.sim_scenario + ": fault '" + f.text + "' on GPU " +
                                      std::to_string(f.gpu) + ", but --sim-gpus is " +
                                      std::to_string(config.sim_gpus));
        }
      }
      source = std::make_unique<telemetry::SimSource>(config.sim_gpus, std::move(faults), clock);
      // The origin of the scenario's `at` times, for benchmarks that time faults to webhooks.
      spdlog::info("sim source: scenario times count from unix {:.3f}", clock.UnixSeconds());
    } else {
      FULCRUM_ASSIGN_OR_RETURN(source,
                               telemetry::ReplaySource::Open(config.source.substr(7), clock));
    }
    if (!config.record.empty()) {
      FULCRUM_ASSIGN_OR_RETURN(recorder, telemetry::Recorder::Open(config.record));
    }
    return Status::Ok();
  }

  Status OpenAlerts() {
    std::vector<alert::Rule> rules;
    if (config.rules.empty()) {
      FULCRUM_ASSIGN_OR_RETURN(rules, alert::DefaultRules());
    } else {
      std::vector<std::string> warnings;
      FULCRUM_ASSIGN_OR_RETURN(rules, alert::LoadRulesFile(config.rules, &warnings));
      for (const std::string& warning : warnings) spdlog::warn("{}", warning);
    }
    evaluator = std::make_unique<alert::Evaluator>(std::move(rules));
    FULCRUM_ASSIGN_OR_RETURN(auto states, db->LoadAlertStates());
    std::vector<alert::AlertState> restored;
    for (const auto& r : states) {
      restored.push_back({r.rule_name, r.gpu, ParseStatus(r.status), r.started_at, r.fired_at,
                          r.last_active_at, r.value});
    }
    size_t n = evaluator->Restore(restored);
    if (n > 0) spdlog::info("restored {} pending/firing alert(s) from the store", n);
    for (const ReceiverConfig& r : config.receivers) {
      FULCRUM_ASSIGN_OR_RETURN(alert::ReceiverFormat format, alert::ParseReceiverFormat(r.format));
      receivers.push_back({r.name, r.url, format, r.token, r.secret, r.routing_key});
    }
    FULCRUM_ASSIGN_OR_RETURN(outbox, store::SqliteOutbox::Open(db->db().path()));
    alert_outbox = std::make_unique<alert::FallbackOutbox>(*outbox, clock);
    poster = std::make_unique<alert::CurlPoster>();
    delivery = std::make_unique<alert::DeliveryWorker>(*alert_outbox, *poster, receivers, clock,
                                                       alert::DeliveryOptions{});
    return Status::Ok();
  }

  // 1 while a supervised job is running or heartbeating: per GPU it lists, else host-wide.
  void JobSamples(double now, std::vector<alert::Sample>& batch, bool& any_active) {
    any_active = false;
    if (!jobs) {
      auto opened = store::JobsDb::OpenInDataDir(data_dir, /*read_only=*/true);
      if (!opened.ok()) {
        batch.push_back({"job_running", -1, 0.0, now});
        return;
      }
      jobs = std::move(*opened);
    }
    auto list = jobs->ListJobs();
    if (!list.ok()) {
      spdlog::debug("jobs.db: {}", list.status().message());
      jobs.reset();
      return;
    }
    std::vector<int> busy_gpus;
    bool host_wide = false;
    // Seconds since each GPU's running job last showed progress (a step or a heartbeat; its
    // start before the first): the freshest job on the GPU counts.
    std::map<int, double> progress_age;
    auto note_age = [&](int gpu, double age) {
      auto [it, added] = progress_age.emplace(gpu, age);
      if (!added) it->second = std::min(it->second, age);
    };
    for (const auto& j : *list) {
      auto age = store::AgeSeconds(j.heartbeat_at, now);
      bool active =
          j.state == "running" || j.state == "checkpointing" ||
          (store::IsActiveState(j.state) && age && *age <= config.idle.heartbeat_max_age_seconds);
      if (!active) continue;
      any_active = true;
      if (j.gpus.empty()) host_wide = true;
      busy_gpus.insert(busy_gpus.end(), j.gpus.begin(), j.gpus.end());
      auto since_progress = store::AgeSeconds(j.heartbeat_at ? j.heartbeat_at : j.started_at, now);
      if (j.state == "running" && since_progress) {
        if (j.gpus.empty()) {
          for (int g = 0; g < source->gpu_count(); ++g) note_age(g, *since_progress);
        }
        for (int g : j.gpus) note_age(g, *since_progress);
      }
    }
    batch.push_back({"job_running", -1, host_wide || any_active ? 1.0 : 0.0, now});
    for (int g = 0; g < source->gpu_count(); ++g) {
      bool on = host_wide || std::find(busy_gpus.begin(), busy_gpus.end(), g) != busy_gpus.end();
      batch.push_back({"job_running", g, on ? 1.0 : 0.0, now});
    }
    for (const auto& [g, age] : progress_age) {
      batch.push_back({"job_progress_age_seconds", g, age, now});
    }
  }

  // The supervisors' alerts (crash_loop, budget, stall: rows of jobs.db) go to this agent's
  // receivers through the outbox like its own; they fire once and never resolve.
  void ForwardJobAlerts(double now) {
    if (!jobs) return;
    auto transitions = job_alerts.Poll(*jobs, now);
    if (!transitions.ok()) {
      spdlog::debug("jobs.db alerts: {}", transitions.status().message());
      return;
    }
    for (const alert::Transition& t : *transitions) {
      spdlog::info("job alert {} ({})", t.rule_name, t.labels.at("job"));
      auto notes = alert::MakeNotifications(t, receivers, notify_context, now);
      counters.notifications_total += notes.size();
      for (auto& n : notes) pending.notifications.push_back(std::move(n));
    }
  }

  void Record(const std::vector<alert::Transition>& transitions, double now) {
    for (const alert::Transition& t : transitions) {
      ++counters.transitions_total;
      spdlog::info("alert {} gpu {}: {} -> {} (value {})", t.rule_name, t.gpu,
                   alert::ToString(t.from), alert::ToString(t.to), t.value);
      pending.alert_changes.push_back(ToAgentAlert(t));
      auto notes = alert::MakeNotifications(t, receivers, notify_context, now);
      counters.notifications_total += notes.size();
      for (auto& n : notes) pending.notifications.push_back(std::move(n));
    }
  }

  // The idle warning and its end travel as a host-wide alert, so receivers get them in their
  // own format and /v1/alerts shows them.
  alert::Transition IdleTransition(alert::AlertStatus from, alert::AlertStatus to, double now,
                                   const std::string& summary) {
    alert::Transition t;
    t.rule_name = "IdleRelease";
    t.gpu = -1;
    t.from = from;
    t.to = to;
    t.value = idle.Status(clock.MonotonicSeconds()).idle_seconds;
    t.threshold = config.idle.after_seconds;
    t.at = now;
    if (to == alert::AlertStatus::kFiring) idle_started_at = now;
    t.started_at = idle_started_at;
    t.fired_at = idle_started_at;
    t.resolved_at = to == alert::AlertStatus::kResolved ? now : 0;
    t.severity = "warning";
    t.labels = {{"alertname", "IdleRelease"}, {"severity", "warning"}, {"hostname", hostname}};
    t.annotations = {{"summary", summary}};
    t.fingerprint = alert::Evaluator::Fingerprint("IdleRelease", -1);
    return t;
  }

  void HandleIdle(IdleAction action, double now) {
    std::vector<alert::Transition> out;
    double mono = clock.MonotonicSeconds();
    if (action == IdleAction::kWarn) {
      IdleStatus s = idle.Status(mono);
      std::string summary = fmt::format(
          "{}: every GPU idle for {:.0f} min; release in {:.0f} min{} (POST /v1/idle/cancel to "
          "postpone)",
          hostname, s.idle_seconds / 60, s.release_in_seconds.value_or(0) / 60,
          config.idle.dry_run ? " (dry run)" : "");
      spdlog::warn("{}", summary);
      out.push_back(
          IdleTransition(alert::AlertStatus::kInactive, alert::AlertStatus::kFiring, now, summary));
    } else if (action == IdleAction::kRelease) {
      Status st = release.Run(config.idle.command, config.idle.dry_run);
      if (!st.ok()) spdlog::error("{}", st.message());
    } else if (action == IdleAction::kBusyAgain) {
      out.push_back(IdleTransition(alert::AlertStatus::kFiring, alert::AlertStatus::kResolved, now,
                                   hostname + ": busy again, idle release cancelled"));
    }
    if (!out.empty()) Record(out, now);
  }

  void Flush(double mono, bool force) {
    bool has_events = !pending.alert_changes.empty() || !pending.notifications.empty();
    if (!force && !has_events && mono - last_flush < kFlushSeconds) return;
    if (pending.snapshots.empty() && !has_events && !pending.states) return;
    // Alerts never wait on the disk (issue 29): the outbox stores each notification, or holds it
    // in memory when agent.db refuses it, and delivery starts now either way.
    if (!pending.notifications.empty()) {
      for (const store::Notification& n : pending.notifications) (void)alert_outbox->Enqueue(n);
      pending.notifications.clear();
      // The outbox's own refusal may be the first sign of a full disk: disk_full jumps ahead of
      // these before delivery is woken.
      const auto refusal = alert_outbox->LastStoreRefusal();
      if (refusal.at_mono > last_write_ok_mono) NoteDiskFull(refusal.error);
      delivery->Wake();
    }
    Status st = db->Write(pending);
    if (!st.ok()) {
      NoteDiskFull(st.message());
      ++counters.store_errors_total;
      if (mono - store_error_logged_at >= 60) {  // a full disk failed 10 writes a second
        spdlog::error(
            "store write failed (will retry; logged at most once a minute, {} more "
            "since the last line): {}",
            store_errors_unlogged, st.message());
        store_error_logged_at = mono;
        store_errors_unlogged = 0;
      } else {
        ++store_errors_unlogged;
      }
      if (pending.snapshots.size() > kMaxPendingSnapshots) {
        pending.snapshots.erase(pending.snapshots.begin());
      }
      return;
    }
    pending = store::WriteBatch{};
    last_flush = mono;
    last_write_ok_mono = mono;
    // Sent with the next flush, after the firing.
    if (auto resolved = disk_full->Stored(clock.UnixSeconds())) {
      Record({*resolved}, clock.UnixSeconds());
    }
  }

  bool WaitForStop(int stop_fd, double until);

  // A store refusal: when it says the disk is full, the disk_full alert fires and its
  // notifications go out ahead of every pending one (its record waits for the store).
  void NoteDiskFull(std::string_view error) {
    const double now = clock.UnixSeconds();
    auto firing = disk_full->Refused(error, now);
    if (!firing) return;
    ++counters.transitions_total;
    spdlog::error("alert {}: {}", kDiskFullAlert, firing->annotations.at("summary"));
    pending.alert_changes.push_back(ToAgentAlert(*firing));
    auto notes = alert::MakeNotifications(*firing, receivers, notify_context, now);
    counters.notifications_total += notes.size();
    for (const store::Notification& n : notes) (void)alert_outbox->EnqueueFirst(n);
    delivery->Wake();
  }

  // The evaluator's pending/firing state, for the next write (restored after a restart).
  void SaveAlertStates() {
    std::vector<store::AlertStateRow> states;
    for (const auto& s : evaluator->Snapshot()) {
      states.push_back({s.rule_name, s.gpu, std::string(alert::ToString(s.status)), s.started_at,
                        s.fired_at, s.last_active_at, s.value});
    }
    pending.states = std::move(states);
  }

  // Alert rules over one tick's readings plus the job series of the last full tick; records
  // the transitions (and the state they leave, so that a restart does not notify them again).
  // `mono` (the tick's monotonic time) times the rules' `for` and `keep_firing_for`: a step of
  // the wall clock must not hold an alert firing or fire one early.
  void EvaluateAlerts(const telemetry::GpuSnapshot& snapshot, double now, double mono) {
    std::vector<alert::Sample> batch;
    batch.reserve(snapshot.size() * telemetry::Metrics().size() + job_batch.size());
    for (const auto& s : snapshot) {
      for (const auto& m : telemetry::Metrics()) {
        if (auto v = m.extract(s)) batch.push_back({m.name, s.index, *v, s.timestamp, mono});
      }
    }
    for (alert::Sample j : job_batch) {
      j.unix_time = now;
      j.monotonic_time = mono;
      batch.push_back(std::move(j));
    }
    std::vector<alert::Transition> transitions = evaluator->Evaluate(batch);
    if (nccl_ras && std::any_of(transitions.begin(), transitions.end(), alert::IsHangFiring)) {
      alert::NameStalledRanks(transitions, nccl_ras->Stalled());
    }
    Record(transitions, now);
    if (!transitions.empty()) SaveAlertStates();
  }

  // A fast tick between full samples (fast_interval, 100 ms by default): the cheap fields only,
  // merged over the last full sample, for alerting and the live view; stored as part of the next
  // full tick's 1 s aggregate.
  void FastTick() {
    double mono = clock.MonotonicSeconds();
    double now = clock.UnixSeconds();
    auto fast = source->SampleFast();
    if (!fast.ok() || last_full.empty()) return;  // the next full tick reports the failure
    fast_aggregate.Add(*fast);
    telemetry::GpuSnapshot merged = last_full;
    for (size_t i = 0; i < merged.size() && i < fast->size(); ++i) {
      telemetry::MergeFastFields((*fast)[i], merged[i]);
    }
    EvaluateAlerts(merged, now, mono);
    Flush(mono, /*force=*/false);
    live.Publish(std::move(merged), counters);
  }

  void Tick() {
    double mono = clock.MonotonicSeconds();
    double now = clock.UnixSeconds();
    auto snapshot = source->Sample();
    counters.last_sample_seconds = clock.MonotonicSeconds() - mono;
    if (!snapshot.ok()) {
      ++counters.sample_errors_total;
      if (counters.sample_errors_total % 60 == 1) {
        spdlog::error("GPU source failed: {}", snapshot.status().message());
      }
      return;
    }
    ++counters.samples_total;
    if (recorder) {
      Status st = recorder->Append(*snapshot, now);
      if (!st.ok()) spdlog::error("{}", st.message());
    }
    bool job_active = false;
    job_batch.clear();
    JobSamples(now, job_batch, job_active);
    ForwardJobAlerts(now);
    EvaluateAlerts(*snapshot, now, mono);
    if (live.TakeIdleCancel()) HandleIdle(idle.Cancel(mono), now);
    HandleIdle(idle.Update(*snapshot, job_active, mono), now);
    release.Poll();

    SaveAlertStates();
    last_full = *snapshot;
    // The stored row: this reading's fast fields averaged with the fast ticks' since the last
    // full tick, and every XID they carried.
    telemetry::GpuSnapshot stored = *snapshot;
    fast_aggregate.Add(*snapshot);
    fast_aggregate.Apply(stored);
    pending.snapshots.push_back(std::move(stored));
    Flush(mono, /*force=*/false);
    if (mono - last_maintain >= kMaintainSeconds) {
      Status st =
          db->Maintain(now, {config.raw_retention_seconds, config.rollup_retention_seconds});
      if (!st.ok()) spdlog::error("store maintenance failed: {}", st.message());
      last_maintain = mono;
      auto pending_count = alert_outbox->PendingCount();
      if (pending_count.ok()) counters.outbox_pending = *pending_count;
    }
    live.SetIdle(idle.Status(mono));
    counters.degraded = alert_outbox->DegradedReason();
    if (counters.degraded.empty()) counters.degraded = disk_full->reason();
    live.Publish(std::move(*snapshot), counters);
  }
};

namespace {

// A damaged agent.db does not stop the monitoring (under Restart=on-failure the agent would loop
// and no alert would go out): it is moved aside, said loudly, and a fresh one takes its place.
Result<store::AgentDb> OpenStoreOrStartFresh(const std::string& data_dir, const Clock& clock) {
  auto opened = store::AgentDb::OpenInDataDir(data_dir);
  if (opened.ok() || !store::IsDamagedDatabase(opened.status())) return opened;
  const std::string path = opened.status().detail()->file;
  FULCRUM_ASSIGN_OR_RETURN(std::string moved, store::MoveDamagedAside(path, clock.UnixSeconds()));
  spdlog::error(
      "{}: damaged ({}); moved it aside to {} and started with a fresh agent.db: monitoring and "
      "alerts go on, the samples and alert history before now are in the moved file (to recover "
      "them: fulcrum doctor --repair-db {})",
      path, opened.status().detail()->found, moved, moved);
  return store::AgentDb::OpenInDataDir(data_dir);
}

}  // namespace

Agent::Agent(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Agent::~Agent() {
  if (impl_->nccl_ras) impl_->nccl_ras->Stop();
  if (impl_->server) impl_->server->Stop();
  if (impl_->delivery) impl_->delivery->Stop();
}

Result<std::unique_ptr<Agent>> Agent::Create(const AgentConfig& config, const Clock& clock) {
  FULCRUM_RETURN_IF_ERROR(ValidateAgentConfig(config));
  auto impl = std::make_unique<Impl>(config, clock);
  impl->hostname = config.hostname.empty() ? Hostname() : config.hostname;
  FULCRUM_RETURN_IF_ERROR(store::CreateDataDir(impl->data_dir));
  FULCRUM_ASSIGN_OR_RETURN(
      FileLock lock,
      FileLock::LockDirectory(
          impl->data_dir, (std::filesystem::path(impl->data_dir) / "agent.pid").string(),
          "data dir " + impl->data_dir + " is in use by another fulcrum agent:"));
  impl->lock = std::move(lock);
  FULCRUM_RETURN_IF_ERROR(impl->OpenSource());
  FULCRUM_ASSIGN_OR_RETURN(store::AgentDb db, OpenStoreOrStartFresh(impl->data_dir, clock));
  impl->db = std::move(db);
  FULCRUM_RETURN_IF_ERROR(impl->OpenAlerts());
  if (config.nccl_ras != "off") {
    telemetry::NcclRasPollerOptions ras;
    ras.query.address = config.nccl_ras;
    ras.interval_seconds = config.nccl_ras_interval_seconds;
    impl->nccl_ras = std::make_unique<telemetry::NcclRasPoller>(ras);
  }

  server::ServerOptions options;
  options.listen = config.listen;
  options.token = config.token;
  options.data_dir = impl->data_dir;
  options.source_kind = impl->source->kind();
  options.interval_seconds = config.interval_seconds;
  options.gpu_count = impl->source->gpu_count();
  options.hostname = impl->hostname;
  options.retention = {config.raw_retention_seconds, config.rollup_retention_seconds};
  FULCRUM_ASSIGN_OR_RETURN(options.metrics_names, server::ParseMetricsNames(config.metrics_names));
  for (std::string host : config.allowed_hosts) {
    for (char& c : host) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    options.allowed_hosts.push_back(host);
  }
  impl->server = std::make_unique<server::AgentServer>(options, impl->live, clock);
  FULCRUM_RETURN_IF_ERROR(impl->server->Start());
  FULCRUM_ASSIGN_OR_RETURN(auto address, server::ParseListen(config.listen));
  impl->disk_full.emplace(impl->hostname, impl->data_dir);
  impl->notify_context = {impl->hostname,
                          "http://" + address.first + ":" + std::to_string(impl->server->port())};
  return std::unique_ptr<Agent>(new Agent(std::move(impl)));
}

// Sleeps until monotonic time `until` (on this agent's clock); true when `stop_fd` became
// readable first. A signal interrupting poll (EINTR) is not a tick: the wait resumes.
bool Agent::Impl::WaitForStop(int stop_fd, double until) {
  while (true) {
    double left = until - clock.MonotonicSeconds();
    pollfd fd{stop_fd, POLLIN, 0};
    int rc = poll(&fd, 1, left > 0 ? static_cast<int>(left * 1000 + 0.5) : 0);
    if (rc > 0) return true;
    if (rc == 0 || errno != EINTR) return false;
  }
}

Status Agent::Run(int stop_fd) {
  Impl& a = *impl_;
  a.delivery->Start();
  if (a.nccl_ras) a.nccl_ras->Start();
  a.live.SetIdle(a.idle.Status(a.clock.MonotonicSeconds()));
  // Full samples every `interval`; fast ticks every `fast_interval` in between (off when 0 or
  // not shorter than the interval).
  const double full_every = a.config.interval_seconds;
  const double fast = a.config.fast_interval_seconds;
  const bool fast_on = fast > 0 && fast < full_every;
  double next_full = a.clock.MonotonicSeconds();
  double next = next_full;
  while (true) {
    double now = a.clock.MonotonicSeconds();
    if (now + 1e-6 >= next_full) {
      a.Tick();
      next_full += full_every;
      if (next_full < now) next_full = now + full_every;  // fell behind: do not burst
    } else {
      a.FastTick();
    }
    next += fast_on ? fast : full_every;
    now = a.clock.MonotonicSeconds();
    if (next < now) next = now;
    if (next > next_full) next = next_full;
    if (a.WaitForStop(stop_fd, next)) break;
  }
  spdlog::info("stopping: flushing samples and alerts");
  a.Flush(a.clock.MonotonicSeconds(), /*force=*/true);
  if (a.nccl_ras) a.nccl_ras->Stop();
  a.server->Stop();
  a.delivery->Stop();
  return Status::Ok();
}

int Agent::port() const { return impl_->server->port(); }
int Agent::gpu_count() const { return impl_->source->gpu_count(); }
std::string Agent::source_kind() const { return impl_->source->kind(); }
std::string Agent::data_dir() const { return impl_->data_dir; }

}  // namespace fulcrum::agent
