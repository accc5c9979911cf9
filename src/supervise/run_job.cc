#include "supervise/run_job.h"

#include <signal.h>
#include <unistd.h>

#include <spdlog/sinks/rotating_file_sink.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <filesystem>

#include "alert/delivery.h"
#include "alert/job_alert.h"
#include "alert/notify.h"
#include "alert/outbox_memory.h"
#include "catalog/catalog.h"
#include "core/parse.h"
#include "core/subprocess.h"
#include "supervise/agent_health.h"
#include "supervise/lock.h"
#include "supervise/nccl_hang.h"
#include "supervise/notice.h"
#include "telemetry/nccl_ras_poller.h"

namespace fulcrum::supervise {
namespace {
namespace fs = std::filesystem;

std::unique_ptr<NoticeWatcher> MakeWatcher(const ResolvedRun& r,
                                           const std::function<void(const std::string&)>& event,
                                           std::vector<std::unique_ptr<NoticeSource>> sources) {
  for (const auto& source : sources) {
    event("watching " + source->name() + " notices every " + FormatDuration(r.notice_poll_seconds));
  }
  const double timeout = r.preemption_auto ? 0.3 : 1.0;
  for (const auto& name : r.preemption_sources) {
    std::unique_ptr<NoticeSource> source;
    if (name == "aws") source = MakeAwsNoticeSource(r.aws_url, timeout);
    if (name == "gcp") source = MakeGcpNoticeSource(r.gcp_url, timeout);
    if (name == "azure") source = MakeAzureNoticeSource(r.azure_url, timeout);
    if (name == "alibaba") source = MakeAlibabaNoticeSource(r.alibaba_url, timeout);
    if (r.preemption_auto) {
      auto probe = source->Check();
      if (!probe.ok()) continue;  // not on this cloud
    }
    event("watching " + name + " preemption notices every " +
          FormatDuration(r.notice_poll_seconds));
    sources.push_back(std::move(source));
  }
  return std::make_unique<NoticeWatcher>(std::move(sources), r.notice_poll_seconds);
}

Result<std::shared_ptr<spdlog::logger>> OpenJobLog(const std::string& path, double max_bytes,
                                                   int files) {
  try {
    auto sink = std::make_shared<spdlog::sinks::rotating_file_sink_mt>(
        path, static_cast<size_t>(max_bytes), static_cast<size_t>(files));
    auto log = std::make_shared<spdlog::logger>("job", sink);
    log->set_pattern("%Y-%m-%dT%H:%M:%S.%e %v");
    log->flush_on(spdlog::level::info);
    return log;
  } catch (const spdlog::spdlog_ex& e) {
    return Status::IoError(path + ": cannot open log file: " + e.what());
  }
}

// A command that cannot be found is bad input, reported once before anything starts.
Status CheckCommand(const std::vector<std::string>& command, const std::string& cwd) {
  const std::string& program = command[0];
  std::string path = program;
  if (program.find('/') != std::string::npos && !fs::path(program).is_absolute() && !cwd.empty())
    path = (fs::path(cwd) / program).string();
  if (ProgramExists(path)) return Status::Ok();
  std::error_code ec;
  if (program.find('/') != std::string::npos && fs::exists(path, ec)) {
    return Status::InvalidInput(program + ": command is not executable (chmod +x?)");
  }
  return Status::InvalidInput(program + ": command not found" +
                              (program.find('/') == std::string::npos ? " (not on PATH)" : ""));
}

// `--receiver URL`: the job's alerts take the agent's path (notification per receiver -> outbox
// -> delivery worker) from this process. The outbox is in memory: what is still pending when the
// job ends gets up to kDrainSeconds; an alert is in jobs.db as well, for an agent to deliver.
class OwnDelivery {
 public:
  static constexpr double kDrainSeconds = 10;

  // `logger`: where the worker reports failed attempts (the job log and stderr; stdout is the
  // job's and --json's).
  OwnDelivery(const ResolvedRun& r, const Clock& clock, std::shared_ptr<spdlog::logger> logger)
      : clock_(clock), logger_(logger) {
    alert::Receiver receiver;
    receiver.name = "default";
    receiver.url = r.receiver_url;
    auto format = alert::ParseReceiverFormat(r.receiver_format);  // validated with the flags
    if (format.ok()) receiver.format = *format;
    receivers_.push_back(receiver);
    context_.hostname = HostName();
    worker_ = std::make_unique<alert::DeliveryWorker>(outbox_, poster_, receivers_, clock_,
                                                      alert::DeliveryOptions{}, std::move(logger));
    worker_->Start();
  }
  ~OwnDelivery() {
    // Real time, whatever the clock seam: the receiver answers in real time.
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::duration<double>(kDrainSeconds);
    while (std::chrono::steady_clock::now() < deadline) {
      auto pending = outbox_.PendingCount();
      if (!pending.ok() || *pending == 0) break;
      worker_->Wake();
      ::usleep(20000);
    }
    worker_->Stop();
    if (auto left = outbox_.PendingCount(); left.ok() && *left > 0) {
      logger_->warn(
          "{} alert notification(s) not delivered within {} s; the alerts stay in "
          "jobs.db, for a fulcrum agent on this data dir (started within the hour) to deliver",
          *left, kDrainSeconds);
    }
  }
  OwnDelivery(const OwnDelivery&) = delete;
  OwnDelivery& operator=(const OwnDelivery&) = delete;

  void Send(const store::AlertRecord& record) {
    for (const auto& n : alert::MakeNotifications(alert::JobAlertTransition(record), receivers_,
                                                  context_, clock_.UnixSeconds())) {
      (void)outbox_.Enqueue(n);
    }
    worker_->Wake();
  }

 private:
  static std::string HostName() {
    char name[256] = {};
    return ::gethostname(name, sizeof name - 1) == 0 ? name : "";
  }
  const Clock& clock_;
  std::shared_ptr<spdlog::logger> logger_;
  std::vector<alert::Receiver> receivers_;
  alert::NotifyContext context_;
  alert::MemoryOutbox outbox_;
  alert::CurlPoster poster_;
  std::unique_ptr<alert::DeliveryWorker> worker_;
};

// A supervisor that died without ending its job (its keeper killed too) left the job's process
// group recorded: with the job's lock held no supervisor owns it any more, so end it first.
void EndStaleTree(store::JobsDb& db, const std::string& name,
                  const std::function<void(const std::string&)>& event) {
  auto previous = db.GetJob(name);
  if (!previous.ok() || !previous->has_value()) return;
  const store::JobRecord& row = **previous;
  if (!row.child_pgid || !row.child_start_ticks) return;
  const int ended = EndStaleProcessGroup(*row.child_pgid, *row.child_start_ticks);
  if (ended > 0) {
    event("ended " + std::to_string(ended) + " process(es) of process group " +
          std::to_string(*row.child_pgid) + " left running by an earlier supervisor of '" + name +
          "'");
  }
}

// A damaged jobs.db does not stop a new job: it runs with its ledger in memory, and `warning`
// says so (loudly, once the job's log is open).
Result<store::JobsDb> OpenJobsDbOrMemory(const std::string& data_dir, std::string& warning) {
  auto opened = store::JobsDb::OpenInDataDir(data_dir);
  if (opened.ok() || !store::IsDamagedDatabase(opened.status())) return opened;
  warning = "WARNING: " + opened.status().message() +
            ". This run keeps its state and spend ledger in memory only: `fulcrum status`, "
            "`cost` and the agent do not see it, and a later run cannot continue it.";
  return store::JobsDb::Open(":memory:");
}

// --nccl-ras: a poller of NCCL's RAS socket on its own thread, whose stalled ranks of the job's
// own communicators the supervisor polls (--on-hang). Null with --nccl-ras off.
std::unique_ptr<telemetry::NcclRasPoller> WatchNcclRas(
    const ResolvedRun& r, SupervisorOptions& options,
    std::function<void(const std::string&)> note) {
  if (r.nccl_ras == "off") return nullptr;
  telemetry::NcclRasPollerOptions ras;
  ras.query.address = r.nccl_ras;
  ras.interval_seconds = r.nccl_ras_interval_seconds;
  ras.note = std::move(note);  // on the poller's thread
  auto poller = std::make_unique<telemetry::NcclRasPoller>(ras);
  options.nccl_stalled = [p = poller.get()](int64_t pgid, const std::string& uid) {
    const std::vector<telemetry::NcclLaggingRank> stalled = p->Stalled();
    if (stalled.empty()) return stalled;
    return JobStalledRanks(stalled, [&](int pid) { return ProcessOfJob(pid, pgid, uid); });
  };
  poller->Start();
  return poller;
}

}  // namespace

RunJob::RunJob(RunJobRequest request, Clock& clock, ProcessRunner& runner, RunJobHooks hooks)
    : request_(std::move(request)), clock_(clock), runner_(runner), hooks_(std::move(hooks)) {}

Result<RunJobResult> RunJob::Run() {
  RunJobRequest& q = request_;
  if (q.command.empty()) {
    return Status::InvalidInput("no command: put it after --, e.g. fulcrum run -- python train.py");
  }
  if (q.name.empty()) q.name = fs::path(q.command[0]).filename().string();
  FULCRUM_RETURN_IF_ERROR(ValidateJobName(q.name));
  FULCRUM_ASSIGN_OR_RETURN(ResolvedRun resolved, ResolveRunFlags(q.flags, q.data_dir, q.name));
  SupervisorOptions& options = resolved.supervisor;
  options.argv = q.command;
  options.cwd = q.cwd;
  options.start_mode = q.start_mode;
  if (!q.gpus.empty()) {
    FULCRUM_ASSIGN_OR_RETURN(options.gpus, ParseGpuList(q.gpus));
  }
  if (!resolved.offer.empty()) {
    FULCRUM_ASSIGN_OR_RETURN(catalog::Catalog catalog, catalog::Catalog::Load(q.catalog_dir));
    FULCRUM_ASSIGN_OR_RETURN(options.price_per_hour_usd,
                             ResolveOfferPrice(catalog, resolved.offer, resolved.offer_spot));
  }
  if (!q.queue.empty()) options.queue = q.queue;
  FULCRUM_RETURN_IF_ERROR(CheckCommand(q.command, q.cwd));
  std::error_code ec;
  const bool new_data_dir = !fs::exists(q.data_dir, ec);
  FULCRUM_ASSIGN_OR_RETURN(JobLock lock, JobLock::Acquire(q.data_dir, q.name));
  std::string store_warning;
  FULCRUM_ASSIGN_OR_RETURN(store::JobsDb db, OpenJobsDbOrMemory(q.data_dir, store_warning));
  if (q.start_mode == StartMode::kContinue) {
    FULCRUM_ASSIGN_OR_RETURN(auto previous, db.GetJob(q.name));
    if (!previous || previous->generation == 0) {
      return Status::InvalidInput("--continue: job '" + q.name +
                                  "' has no previous run in this data dir to continue");
    }
  }
  fs::create_directories(fs::path(options.heartbeat_file).parent_path(), ec);
  fs::create_directories(fs::path(options.checkpoint_request_file).parent_path(), ec);
  fs::create_directories(fs::path(options.ready_file).parent_path(), ec);
  if (!options.checkpoints.dir.empty()) fs::create_directories(options.checkpoints.dir, ec);
  fs::create_directories(resolved.log_dir, ec);
  // Logs and heartbeats hold what the job prints: owner-only (issue 29), in a data dir made 0700.
  if (new_data_dir) fs::permissions(q.data_dir, fs::perms::owner_all, ec);
  for (const std::string& own : {q.data_dir + "/run", q.data_dir + "/logs"})
    if (fs::is_directory(own, ec)) fs::permissions(own, fs::perms::owner_all, ec);

  // Job output and supervisor events: rotating files, then the caller's hooks.
  RunJobResult result;
  result.job_id = q.name;
  result.log_file = resolved.log_dir + "/" + q.name + ".log";
  FULCRUM_ASSIGN_OR_RETURN(auto file_log,
                           OpenJobLog(result.log_file, resolved.log_max_bytes, resolved.log_files));
  fs::permissions(result.log_file, fs::perms::owner_read | fs::perms::owner_write, ec);
  options.on_output = [&](Stream stream, std::string_view line) {
    file_log->info("{} {}", stream == Stream::kStdout ? "out" : "err", line);
    if (hooks_.output) hooks_.output(stream, line);
  };
  auto event = [&](const std::string& text) {
    file_log->info("fulcrum {}", text);
    if (hooks_.event) hooks_.event(text);
  };
  options.on_event = event;
  if (!store_warning.empty()) event(store_warning);
  EndStaleTree(db, q.name, event);
  const std::string agent_url = resolved.agent_url;
  if (agent_url != "none") {
    options.unhealthy_gpus = [agent_url] { return UnhealthyGpusFromAgent(agent_url, 0.5); };
    options.job_gpu_figures = [agent_url](int64_t pgid) {
      auto samples = GpuSamplesFromAgent(agent_url, 0.5);
      if (!samples.ok()) return JobGpuFigures{{}, {}, {}, samples.status().message()};
      return JobFiguresFromSamples(*samples, ProcessGroupPids(pgid));
    };
  }
  auto watcher = MakeWatcher(resolved, event,
                             hooks_.notice_sources ? hooks_.notice_sources(resolved)
                                                   : std::vector<std::unique_ptr<NoticeSource>>{});
  watcher->Start();
  options.stop_notice = [&]() -> std::optional<std::string> {
    if (hooks_.stop_requested) return hooks_.stop_requested();
    return std::nullopt;
  };
  options.preemption_notice = [&]() { return watcher->Notice(); };
  std::unique_ptr<telemetry::NcclRasPoller> nccl_ras =
      WatchNcclRas(resolved, options, [file_log](const std::string& line) {
        file_log->info("fulcrum {}", line);  // the job log only: its logger is thread-safe
      });
  if (hooks_.hang_evidence && options.on_hang != HangAction::kIgnore) {
    options.hang_evidence = hooks_.hang_evidence(resolved);
  }
  std::unique_ptr<OwnDelivery> delivery;
  if (!resolved.receiver_url.empty()) {
    std::vector<spdlog::sink_ptr> sinks = file_log->sinks();  // the job log, in its format
    auto err = std::make_shared<spdlog::sinks::stderr_sink_mt>();
    err->set_pattern("fulcrum run: %v");
    sinks.push_back(err);
    auto logger = std::make_shared<spdlog::logger>("fulcrum", sinks.begin(), sinks.end());
    logger->set_level(spdlog::level::info);
    delivery = std::make_unique<OwnDelivery>(resolved, clock_, std::move(logger));
    options.on_alert = [&delivery](const store::AlertRecord& record) { delivery->Send(record); };
  }
  const bool priced = options.price_per_hour_usd.has_value();
  Supervisor supervisor(std::move(options), clock_, runner_, &db);
  result.outcome = supervisor.Run();
  watcher->Stop();
  if (nccl_ras) nccl_ras->Stop();
  delivery.reset();                                // waits (bounded) for the last alerts to go out
  const store::JobRecord& job = supervisor.job();  // from memory: jobs.db may be locked
  result.uid = job.uid();
  result.start = job.start.value_or(store::JobStart::kNew);
  if (priced) result.spend_usd = job.spend_usd;
  return result;
}

}  // namespace fulcrum::supervise
