// `fulcrum run [options] -- CMD ARGS...`: supervise one training command (see supervise/).
#include <signal.h>
#include <unistd.h>

#include <spdlog/sinks/rotating_file_sink.h>
#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "catalog/catalog.h"
#include "cli/command.h"
#include "core/clock.h"
#include "core/parse.h"
#include "core/paths.h"
#include "store/jobs.h"
#include "supervise/agent_health.h"
#include "supervise/lock.h"
#include "supervise/notice.h"
#include "supervise/process.h"
#include "supervise/run_flags.h"
#include "supervise/supervisor.h"

namespace fulcrum::cli {
namespace {

// The signal edge: a handler may only store a number. Read by the supervisor's stop callback.
std::atomic<int> g_stop_signal{0};

void OnStopSignal(int sig) { g_stop_signal.store(sig); }

void InstallStopHandlers() {
  struct sigaction sa {};
  sa.sa_handler = OnStopSignal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: poll() returns at once
  for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGUSR1}) sigaction(sig, &sa, nullptr);
}

struct RunArgs {
  std::string name;
  std::string data_dir;
  std::string gpus;
  bool json = false;
  bool quiet = false;
  supervise::RunFlags flags;
  std::vector<std::string> command;
};

std::unique_ptr<supervise::NoticeWatcher> MakeWatcher(
    const supervise::ResolvedRun& r, const std::function<void(const std::string&)>& event) {
  std::vector<std::unique_ptr<supervise::NoticeSource>> sources;
  const double timeout = r.preemption_auto ? 0.3 : 1.0;
  for (const auto& name : r.preemption_sources) {
    std::unique_ptr<supervise::NoticeSource> source;
    if (name == "aws") source = supervise::MakeAwsNoticeSource(r.aws_url, timeout);
    if (name == "gcp") source = supervise::MakeGcpNoticeSource(r.gcp_url, timeout);
    if (name == "azure") source = supervise::MakeAzureNoticeSource(r.azure_url, timeout);
    if (r.preemption_auto) {
      auto probe = source->Check();
      if (!probe.ok()) continue;  // not on this cloud
    }
    event("watching " + name + " preemption notices every " +
          FormatDuration(r.notice_poll_seconds));
    sources.push_back(std::move(source));
  }
  return std::make_unique<supervise::NoticeWatcher>(std::move(sources), r.notice_poll_seconds);
}

Status RunJob(CliContext& ctx, RunArgs& args) {
  if (args.command.empty()) {
    return Status::InvalidInput("no command: put it after --, e.g. fulcrum run -- python train.py");
  }
  if (args.name.empty()) args.name = std::filesystem::path(args.command[0]).filename().string();
  FULCRUM_RETURN_IF_ERROR(supervise::ValidateJobName(args.name));
  const std::string data_dir = store::ResolveDataDir(args.data_dir);
  FULCRUM_ASSIGN_OR_RETURN(supervise::ResolvedRun resolved,
                           supervise::ResolveRunFlags(args.flags, data_dir, args.name));
  supervise::SupervisorOptions& options = resolved.supervisor;
  options.argv = args.command;
  options.cwd = std::filesystem::current_path().string();
  if (!args.gpus.empty()) {
    FULCRUM_ASSIGN_OR_RETURN(options.gpus, supervise::ParseGpuList(args.gpus));
  }
  if (!resolved.offer.empty()) {
    FULCRUM_ASSIGN_OR_RETURN(catalog::Catalog catalog,
                             catalog::Catalog::Load(DefaultCatalogDir(ctx.catalog_dir)));
    FULCRUM_ASSIGN_OR_RETURN(
        double price, supervise::ResolveOfferPrice(catalog, resolved.offer, resolved.offer_spot));
    options.price_per_hour_usd = price;
  }
  if (const char* queue = std::getenv("FULCRUM_QUEUE"); queue != nullptr && *queue != '\0') {
    options.queue = queue;  // set by the local queue and the sbatch script
  }
  FULCRUM_ASSIGN_OR_RETURN(supervise::JobLock lock,
                           supervise::JobLock::Acquire(data_dir, args.name));
  FULCRUM_ASSIGN_OR_RETURN(store::JobsDb db, store::JobsDb::OpenInDataDir(data_dir));
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(options.heartbeat_file).parent_path(),
                                      ec);
  if (!options.checkpoints.dir.empty())
    std::filesystem::create_directories(options.checkpoints.dir, ec);
  std::filesystem::create_directories(resolved.log_dir, ec);

  // Job output and supervisor events: rotating files plus the terminal.
  const std::string log_path = resolved.log_dir + "/" + args.name + ".log";
  std::shared_ptr<spdlog::logger> file_log;
  try {
    auto sink = std::make_shared<spdlog::sinks::rotating_file_sink_mt>(
        log_path, static_cast<size_t>(resolved.log_max_bytes),
        static_cast<size_t>(resolved.log_files));
    file_log = std::make_shared<spdlog::logger>("job", sink);
    file_log->set_pattern("%Y-%m-%dT%H:%M:%S.%e %v");
    file_log->flush_on(spdlog::level::info);
  } catch (const spdlog::spdlog_ex& e) {
    return Status::IoError(log_path + ": cannot open log file: " + e.what());
  }
  std::ostream& job_out = args.json ? ctx.err : ctx.out;
  options.on_output = [&](supervise::Stream stream, std::string_view line) {
    file_log->info("{} {}", stream == supervise::Stream::kStdout ? "out" : "err", line);
    if (args.quiet) return;
    std::ostream& os = stream == supervise::Stream::kStdout ? job_out : ctx.err;
    os << line << '\n' << std::flush;
  };
  auto event = [&](const std::string& text) {
    file_log->info("fulcrum {}", text);
    ctx.err << "fulcrum run: " << text << '\n' << std::flush;
  };
  options.on_event = event;
  const std::string agent_url = resolved.agent_url;
  options.unhealthy_gpus = [agent_url] {
    return supervise::UnhealthyGpusFromAgent(agent_url, 0.5);
  };

  auto watcher = MakeWatcher(resolved, event);
  watcher->Start();
  g_stop_signal.store(0);
  InstallStopHandlers();
  options.stop_notice = [&watcher]() -> std::optional<std::string> {
    if (int sig = g_stop_signal.load(); sig != 0) {
      return "received " + supervise::SignalName(sig) +
             (sig == SIGUSR1 ? " (Slurm's advance notice)" : "");
    }
    if (auto notice = watcher->Notice()) return "preemption notice: " + *notice;
    return std::nullopt;
  };

  SystemClock clock;
  supervise::PosixProcessRunner runner;
  supervise::Supervisor supervisor(options, clock, runner, &db);
  supervise::SupervisorOutcome outcome = supervisor.Run();
  watcher->Stop();
  for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGUSR1}) signal(sig, SIG_DFL);

  if (args.json) {
    auto job = db.GetJob(args.name);
    nlohmann::json out = {{"job", args.name},
                          {"state", outcome.state},
                          {"reason", outcome.reason},
                          {"exit_code", outcome.exit_code},
                          {"restarts", outcome.restarts},
                          {"last_checkpoint", outcome.last_checkpoint.empty()
                                                  ? nlohmann::json()
                                                  : nlohmann::json(outcome.last_checkpoint)},
                          {"spend_usd", job.ok() && job->has_value() && options.price_per_hour_usd
                                            ? nlohmann::json((*job)->spend_usd)
                                            : nlohmann::json()},
                          {"log_file", log_path}};
    PrintJson(ctx, {{"run", out}});
  }
  ctx.exit_code = outcome.exit_code;
  return Status::Ok();
}

}  // namespace

void RegisterRun(CLI::App* cmd, CliContext& ctx) {
  auto args = std::make_shared<RunArgs>();
  cmd->description(
      "Run a training command under supervision: checkpoints on a cadence, restarts after\n"
      "crashes (backoff, crash-loop guard), clean stops on spot preemption notices, SIGTERM or\n"
      "budget, resume from the last complete checkpoint, spend ledger.\n\n"
      "The command gets FULCRUM_JOB_ID, FULCRUM_RESTART_COUNT, FULCRUM_CHECKPOINT_DIR,\n"
      "FULCRUM_RESUME_FROM (latest complete checkpoint, empty on a fresh start),\n"
      "FULCRUM_HEARTBEAT_FILE and CUDA_VISIBLE_DEVICES (with --gpus). It runs in its own\n"
      "process group, from an argv (never a shell string).\n\n"
      "Exit codes: 0 the job succeeded; the job's own code when it is declared final;\n"
      "1 gave up (restart limit, crash loop); 2 bad usage; 75 stopped by a notice or signal\n"
      "(resumable); 76 stopped at the budget.");
  cmd->footer(
      "Examples:\n"
      "  fulcrum run --name llama-ft --gpus 0,1 --checkpoint-dir ckpt --checkpoint-every auto \\\n"
      "      --price-per-hour 4.10 --budget-usd 200 --progress-regex 'step (\\d+)' \\\n"
      "      -- torchrun --nproc-per-node 2 train.py");
  cmd->add_option("--name", args->name,
                  "Job name: identifies the job in status, cost, alerts and the lock "
                  "(default: the command's file name)")
      ->type_name("NAME");
  cmd->add_option("--data-dir", args->data_dir,
                  "Shared data dir holding jobs.db (default $FULCRUM_DATA_DIR, /var/lib/fulcrum as "
                  "root, else ~/.local/share/fulcrum)")
      ->type_name("DIR");
  cmd->add_option("--gpus", args->gpus, "GPU indices for CUDA_VISIBLE_DEVICES, e.g. 0,1")
      ->type_name("LIST");
  cmd->add_flag("--json", args->json,
                "At the end print {\"run\": {job, state, reason, exit_code, restarts, "
                "last_checkpoint, spend_usd, log_file}}; the job's stdout goes to stderr");
  cmd->add_flag("--quiet", args->quiet, "Do not echo the job's output (the log file still has it)");
  supervise::AddRunFlags(*cmd, args->flags);
  cmd->add_option("command", args->command, "The command and its arguments, after --")
      ->type_name("-- CMD ARGS...");
  cmd->callback([&ctx, args] {
    Status s = RunJob(ctx, *args);
    if (!s.ok()) ReportError(ctx, s);
  });
}

}  // namespace fulcrum::cli
