// `fulcrum run [options] -- CMD ARGS...`: supervise one training command. The wiring is
// supervise::RunJob; this file parses flags, installs the signal edge and prints.
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cluster/gpu_fault.h"
#include "cluster/nccl_hang_drain.h"
#include "core/clock.h"
#include "core/paths.h"
#include "store/jobs.h"
#include "supervise/process.h"
#include "supervise/run_job.h"

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
  bool new_job = false;
  bool continue_job = false;
  supervise::RunFlags flags;
  std::vector<std::string> command;
};

Status RunCommand(CliContext& ctx, RunArgs& args) {
  if (args.new_job && args.continue_job) {
    return Status::InvalidInput("--new and --continue exclude each other; give one");
  }
  supervise::RunJobRequest request;
  request.name = args.name;
  request.data_dir = store::ResolveDataDir(args.data_dir);
  request.catalog_dir = DefaultCatalogDir(ctx.catalog_dir);
  request.cwd = std::filesystem::current_path().string();
  request.gpus = args.gpus;
  request.start_mode = args.new_job        ? supervise::StartMode::kNew
                       : args.continue_job ? supervise::StartMode::kContinue
                                           : supervise::StartMode::kAuto;
  request.flags = args.flags;
  request.command = args.command;
  if (const char* queue = std::getenv("FULCRUM_QUEUE"); queue != nullptr && *queue != '\0') {
    request.queue = queue;  // set by the local queue and the sbatch script
  }
  std::ostream& job_out = args.json ? ctx.err : ctx.out;
  supervise::RunJobHooks hooks;
  hooks.output = [&](supervise::Stream stream, std::string_view line) {
    if (args.quiet) return;
    std::ostream& os = stream == supervise::Stream::kStdout ? job_out : ctx.err;
    os << line << '\n' << std::flush;
  };
  hooks.event = [&](const std::string& text) {
    ctx.err << "fulcrum run: " << text << '\n' << std::flush;
  };
  hooks.stop_requested = []() -> std::optional<std::string> {
    if (int sig = g_stop_signal.load(); sig != 0) {
      return "received " + supervise::SignalName(sig) +
             (sig == SIGUSR1 ? " (Slurm's advance notice)" : "");
    }
    return std::nullopt;
  };
  // Under Slurm a lost GPU drains the node and migrates the job (cluster/gpu_fault.h).
  // and a hang whose rank's GPU shows an XID drains the node too (cluster/nccl_hang_drain.h).
  if (request.queue == "slurm") {
    hooks.notice_sources = cluster::SlurmJobNoticeSources;
    hooks.hang_evidence = cluster::SlurmHangEvidence;
  }
  g_stop_signal.store(0);
  InstallStopHandlers();
  SystemClock clock;
  supervise::PosixProcessRunner runner;
  supervise::RunJob job(std::move(request), clock, runner, std::move(hooks));
  Result<supervise::RunJobResult> result = job.Run();
  for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGUSR1}) signal(sig, SIG_DFL);
  FULCRUM_RETURN_IF_ERROR(result.status());
  const supervise::SupervisorOutcome& outcome = result->outcome;
  if (args.json) {
    nlohmann::json out = {
        {"job", result->job_id},
        {"uid", result->uid},
        {"start", store::JobStartName(result->start)},
        {"state", store::JobStateName(outcome.state)},
        {"reason", outcome.reason},
        {"exit_code", outcome.exit_code},
        {"restarts", outcome.restarts},
        {"last_checkpoint", outcome.last_checkpoint.empty()
                                ? nlohmann::json()
                                : nlohmann::json(outcome.last_checkpoint)},
        {"spend_usd", result->spend_usd ? nlohmann::json(*result->spend_usd) : nlohmann::json()},
        {"log_file", result->log_file}};
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
  cmd->add_flag("--new", args->new_job,
                "Start a new job even if the name's last run was stopped or lost (new uid, "
                "restart count 0)");
  cmd->add_flag("--continue", args->continue_job,
                "Continue the name's last run even if it finished (same uid, counts go on)");
  supervise::AddRunFlags(*cmd, args->flags);
  cmd->add_option("command", args->command, "The command and its arguments, after --")
      ->type_name("-- CMD ARGS...");
  cmd->callback([&ctx, args] {
    Status s = RunCommand(ctx, *args);
    if (!s.ok()) ReportError(ctx, s);
  });
}

}  // namespace fulcrum::cli
