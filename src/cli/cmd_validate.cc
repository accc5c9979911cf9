// `fulcrum validate [options] [-- CMD ARGS...]`: the selection guides' test procedure before
// trusting a rented server with a long job. The composition is validate::RunValidate; this file
// parses flags and prints the report.
#include <signal.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/bench_source_options.h"
#include "cli/command.h"
#include "core/clock.h"
#include "core/parse.h"
#include "core/paths.h"
#include "validate/validate.h"

namespace fulcrum::cli {
namespace {

// Two sim GPUs by default, so that the gpu-lost drill has one to leave out.
BenchSourceFlags TwoSimGpus() {
  BenchSourceFlags flags;
  flags.sim_gpus = 2;
  return flags;
}

// The signal edge: a handler may only store a number; the validation polls it.
std::atomic<int> g_interrupt{0};

void OnInterrupt(int sig) { g_interrupt.store(sig); }

struct ValidateFlags {
  std::string duration = "10m";
  std::string small_run = "2m";
  std::string checkpoint_every;
  std::string drill_timeout = "2m";
  std::string network_cut = "5s";
  std::string max_drift = "30";
  BenchSourceFlags source = TwoSimGpus();  // --source and --sim-*, as bench and doctor take them
  std::string report;
  std::string expect;
  std::string gpus;
  std::string work_dir;
  std::string progress_regex;
  std::string drills;  // comma lists
  std::string skip;
  bool json = false;
  bool quiet = false;
  std::vector<std::string> command;
};

Status Seconds(const std::string& flag, const std::string& text, double& out) {
  auto seconds = ParseDurationSeconds(text);
  if (!seconds.ok()) return seconds.status().WithContext(flag);
  out = *seconds;
  return Status::Ok();
}

Status RunValidateCommand(CliContext& ctx, const ValidateFlags& f) {
  validate::ValidateOptions o;
  o.command = f.command;
  std::error_code ec;
  o.fulcrum_binary = std::filesystem::read_symlink("/proc/self/exe", ec).string();
  if (ec) return Status::IoError("/proc/self/exe: cannot find this program (" + ec.message() + ")");
  o.source = f.source.source;
  o.sim_gpus = f.source.sim_gpus;
  o.sim_gpu = f.source.sim_gpu;
  o.sim_fraction = f.source.sim_fraction;
  o.sim_swing = f.source.sim_swing;
  o.sim_scenario = f.source.sim_scenario;
  FULCRUM_RETURN_IF_ERROR(Seconds("--duration", f.duration, o.duration_seconds));
  FULCRUM_RETURN_IF_ERROR(Seconds("--small-run", f.small_run, o.small_run_seconds));
  FULCRUM_RETURN_IF_ERROR(Seconds("--drill-timeout", f.drill_timeout, o.drill_timeout_seconds));
  FULCRUM_RETURN_IF_ERROR(Seconds("--network-cut", f.network_cut, o.network_cut_seconds));
  if (!f.checkpoint_every.empty()) {
    double every = 0;
    FULCRUM_RETURN_IF_ERROR(Seconds("--checkpoint-every", f.checkpoint_every, every));
    o.checkpoint_every_seconds = every;
  }
  auto drift = ParseDouble(f.max_drift);
  if (!drift.ok() || !(*drift > 0)) {
    return Status::InvalidInput("--max-drift: expected a percentage above 0, e.g. 30, found '" +
                                f.max_drift + "'");
  }
  o.max_drift = *drift / 100;
  if (!f.drills.empty())
    for (const auto& name : Split(f.drills, ',')) o.drills.push_back(name);
  if (!f.skip.empty())
    for (const auto& name : Split(f.skip, ',')) o.skip_phases.push_back(name);
  if (!f.progress_regex.empty()) o.progress_regex = f.progress_regex;
  o.expect_plan = f.expect;
  o.gpus = f.gpus;
  o.work_dir = f.work_dir;
  o.progress = [&ctx](const std::string& text) {
    ctx.err << "fulcrum validate: " << text << '\n' << std::flush;
  };
  if (!f.quiet) {
    o.job_output = [&ctx](const std::string& line) { ctx.err << "  | " << line << '\n'; };
  }
  o.catalog_dir = ctx.catalog_dir;
  FULCRUM_RETURN_IF_ERROR(validate::CheckValidateOptions(o));
  if (o.source == "sim") {  // the sim flags' errors now, not from the bench child
    FULCRUM_ASSIGN_OR_RETURN(catalog::Catalog cat,
                             catalog::Catalog::Load(DefaultCatalogDir(ctx.catalog_dir)));
    FULCRUM_RETURN_IF_ERROR(MakeBenchSource(f.source, cat).status());
  }
  o.interrupted = [] { return g_interrupt.load() != 0; };
  g_interrupt.store(0);
  struct sigaction sa {};
  sa.sa_handler = OnInterrupt;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaction(sig, &sa, nullptr);
  SystemClock clock;
  auto ran = validate::RunValidate(o, clock);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) signal(sig, SIG_DFL);
  FULCRUM_ASSIGN_OR_RETURN(validate::ValidateReport report, std::move(ran));
  if (!f.report.empty()) {
    std::ofstream out(f.report);
    out << validate::ReportHtml(report);
    if (!out) return Status::IoError(f.report + ": cannot write the report");
  }
  if (f.json) {
    PrintJson(ctx, validate::ReportJson(report));
  } else {
    ctx.out << validate::ReportText(report);
    if (!f.report.empty()) ctx.out << "report: " << f.report << "\n";
  }
  ctx.exit_code = validate::ValidateExitCode(report);
  return Status::Ok();
}

}  // namespace

void RegisterValidate(CLI::App* cmd, CliContext& ctx) {
  auto f = std::make_shared<ValidateFlags>();
  cmd->description(
      "Validate a freshly rented server before trusting it with a long job: the selection\n"
      "guides' test procedure as one command, in four phases, each with a verdict (pass, fail,\n"
      "skipped) and its reasons:\n\n"
      "  environment  fulcrum doctor (driver/CUDA/framework, persistence, ECC, clocks, disk,\n"
      "               /dev/shm, NCCL) and fulcrum bench --quick against the datasheet and,\n"
      "               with --expect, against what the plan assumed.\n"
      "  small-run    CMD under fulcrum run for --small-run: it starts, reports progress\n"
      "               (--progress-regex, or {\"step\": N} in $FULCRUM_HEARTBEAT_FILE), writes\n"
      "               a checkpoint on request and, with --expect, its step time is within\n"
      "               the plan's band (up to the plan's P90).\n"
      "  fault-drill  on that run, one at a time: crash (SIGKILL of the training process),\n"
      "               preemption-notice (an AWS spot notice on a local metadata endpoint, through\n"
      "               the supervisor's own watcher), sigterm (to fulcrum run, as a scheduler\n"
      "               sends it; validate runs it again), gpu-lost (a sim agent reports XID 79;\n"
      "               the restart must get CUDA_VISIBLE_DEVICES without that GPU) and\n"
      "               network-cut (root only: the job runs in a network namespace that validate\n"
      "               makes, whose link goes down for --network-cut). Each must resume from the\n"
      "               last complete checkpoint with its progress kept; each reports the time to\n"
      "               detect, the time to resume and the steps lost.\n"
      "  stress       the job (without CMD: the bench's stability kernel, or the sim source's\n"
      "               load) for --duration while a fulcrum agent samples the GPUs: thermal\n"
      "               throttling, XIDs, uncorrected ECC errors, SM clock drops while busy and a\n"
      "               throughput swing above --max-drift fail it. Time at the power limit is\n"
      "               reported, not failed: a healthy GPU holds it at full load.\n\n"
      "Without CMD the small run and the drills are skipped. The job runs with a fresh\n"
      "checkpoint directory (FULCRUM_CHECKPOINT_DIR) in --work-dir; it must checkpoint when\n"
      "$FULCRUM_CHECKPOINT_REQUEST_FILE appears and resume from $FULCRUM_RESUME_FROM, as under\n"
      "fulcrum run. Nothing outside this machine is touched. On SIGINT or SIGTERM the phase\n"
      "under way fails as unfinished, the rest are skipped, the job is stopped cleanly\n"
      "(checkpoint first) and the report is printed.\n\n"
      "Exit codes: 0 every phase passed or was skipped; 3 a phase failed; 2 bad usage.");
  cmd->footer(
      "Examples:\n"
      "  fulcrum validate --duration 72h --report report.html -- python3 train.py\n"
      "  fulcrum validate --source sim --duration 2m --json -- \\\n"
      "      python3 examples/torch_train.py --steps 100000 --step-sleep 0.05 --checkpoint-every "
      "0");
  // A flag given twice takes its last value (a script's defaults, then the user's).
  cmd->option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  cmd->add_option("--duration", f->duration, "Length of the stress phase (default 10m; e.g. 72h)")
      ->type_name("DURATION");
  AddBenchSourceOptions(cmd, f->source);  // --source nvml|sim, --sim-gpu, --sim-gpus, ...
  cmd->add_option("--report", f->report, "Also write the report as HTML with charts to FILE")
      ->type_name("FILE");
  cmd->add_flag("--json", f->json,
                "Print {\"phases\": [{name, verdict, reasons, metrics}], \"drills\": [{fault, "
                "verdict, detect_seconds, resume_seconds, lost_steps, resumed_from, reason}]}");
  cmd->add_option("--expect", f->expect,
                  "plan.json (fulcrum plan --json), first candidate: the bench must show its GPU "
                  "model, GPUs per node and GEMM (90 % of the datasheet or more), the small run "
                  "its step time (up to its P90)")
      ->type_name("FILE");
  cmd->add_option("--small-run", f->small_run, "Length of the small run (default 2m)")
      ->type_name("DURATION");
  cmd->add_option("--checkpoint-every", f->checkpoint_every,
                  "How often the supervisor asks for a checkpoint (default: the smaller of 30s "
                  "and a quarter of the small run)")
      ->type_name("DURATION");
  cmd->add_option("--drills", f->drills,
                  "Drills to run, comma list (default all: crash, preemption-notice, sigterm, "
                  "gpu-lost, network-cut)")
      ->type_name("LIST");
  cmd->add_option("--skip", f->skip,
                  "Phases to skip, comma list (environment, small-run, fault-drill, stress)")
      ->type_name("LIST");
  cmd->add_option("--drill-timeout", f->drill_timeout,
                  "Longest wait for the supervisor's reaction or the job's resume (default 2m)")
      ->type_name("DURATION");
  cmd->add_option("--network-cut", f->network_cut, "How long the link stays down (default 5s)")
      ->type_name("DURATION");
  cmd->add_option("--max-drift", f->max_drift,
                  "Largest throughput swing the stress phase accepts, (max - min) / median in % "
                  "(default 30)")
      ->type_name("PCT");
  cmd->add_option("--progress-regex", f->progress_regex,
                  "Regex on the job's output whose first group is the step (default "
                  "'^step[ =:]*(\\d+)')")
      ->type_name("REGEX");
  cmd->add_option("--gpus", f->gpus, "GPU indices of the job (default every GPU of the source)")
      ->type_name("LIST");
  cmd->add_option("--work-dir", f->work_dir,
                  "Keep the job's data, checkpoints and logs in a new validate-XXXXXX directory "
                  "here (default a temporary directory, removed at the end)")
      ->type_name("DIR");
  cmd->add_flag("--quiet", f->quiet, "Do not echo the job's output on stderr");
  cmd->add_option("command", f->command, "The training command and its arguments, after --")
      ->type_name("-- CMD ARGS...");
  cmd->callback([&ctx, f] {
    Status s = RunValidateCommand(ctx, *f);
    if (!s.ok()) ReportError(ctx, s);
  });
}

}  // namespace fulcrum::cli
