// GCC 12 reports a false -Wmaybe-uninitialized inside std::regex's std::function under
// -fsanitize (the asan preset); it must be silenced before any header is read.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include "supervise/run_flags.h"

#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <regex>

#include "alert/delivery.h"
#include "alert/notify.h"
#include "core/parse.h"
#include "supervise/notice.h"
#include "supervise/plan_file.h"
#include "supervise/process.h"
#include "telemetry/nccl_ras.h"

namespace fulcrum::supervise {
namespace {

struct FlagSpec {
  const char* name;
  const char* type;
  const char* help;
};

// The value flags, in --help order. Defaults are stated in the help and applied in Resolve.
constexpr FlagSpec kValueFlags[] = {
    {"--stop-grace", "DURATION",
     "How long a stop (preemption, budget, SIGTERM) waits for the requested checkpoint before "
     "it sends SIGTERM to the job (default 60s); a budget stop ends within it, --kill-after "
     "included"},
    {"--kill-after", "DURATION", "After SIGTERM, SIGKILL the job's process group (default 10s)"},
    {"--checkpoint-dir", "DIR",
     "Where the job writes checkpoints (one file or directory each); exported as "
     "FULCRUM_CHECKPOINT_DIR. Without it there is no checkpoint handling"},
    {"--checkpoint-every", "DURATION|auto",
     "Send the checkpoint signal this often (default 30m); 'auto' = Daly's optimum from the "
     "measured checkpoint duration and failure rate"},
    {"--checkpoint-signal", "SIGNAL",
     "Also send this signal with each checkpoint request (opt-in; with it --signal-target "
     "defaults to group). Without it requests only create $FULCRUM_CHECKPOINT_REQUEST_FILE"},
    {"--signal-target", "leader|group|children|none",
     "Who gets --checkpoint-signal: the command, its process group, the group but the command (a "
     "launcher's workers), or nobody (default none; group when --checkpoint-signal is given). "
     "Sent only after the job touched $FULCRUM_READY_FILE or showed progress"},
    {"--checkpoint-pattern", "GLOB",
     "Entries of the checkpoint dir that are checkpoints (default *)"},
    {"--checkpoint-complete", "RULE",
     "When a checkpoint is complete: auto (the marker, the layout's own commit file or pointer, "
     "a torch.save/safetensors file proven whole, DCP .metadata; else a plain file whose size "
     "settled), marker, dcp, stable, rename (the job renames each checkpoint into place) "
     "(default auto)"},
    {"--checkpoint-layout", "LAYOUT",
     "Which entries are checkpoints: auto (detected), plain, hf-trainer, deepspeed, megatron, "
     "lightning, accelerate, orbax, torchtitan (default auto; see docs/CHECKPOINTS.md)"},
    {"--checkpoint-marker", "NAME",
     "Marker file inside a checkpoint directory, or NAME appended to a file checkpoint "
     "(model.pt.COMPLETE) (default COMPLETE)"},
    {"--checkpoint-settle", "DURATION",
     "How long a file that nothing proves complete must stay unchanged (default 30s)"},
    {"--checkpoint-request-file", "PATH",
     "File whose appearance asks the job for a checkpoint (the job deletes it); exported as "
     "FULCRUM_CHECKPOINT_REQUEST_FILE (default <data-dir>/run/<name>.checkpoint-request)"},
    {"--keep", "K", "Keep the newest K complete checkpoints, delete older ones (default 0 = all)"},
    {"--mtbf", "DURATION",
     "Prior mean time between failures for --checkpoint-every auto (default 24h)"},
    {"--max-restarts", "N", "Restarts after failures before giving up (default 10; -1 = no limit)"},
    {"--backoff", "DURATION", "First wait before a restart; doubles per failure (default 1s)"},
    {"--backoff-max", "DURATION", "Longest wait between restarts (default 5m)"},
    {"--crash-loop-failures", "N",
     "A crash loop is N failures within --crash-loop-window without a new checkpoint (default 3; 0 "
     "= off)"},
    {"--crash-loop-window", "DURATION", "Window of the crash-loop rule (default 10m)"},
    {"--notice-poll", "DURATION",
     "How often preemption notice sources are polled (default 0.5s; AWS suggests 5 s, the "
     "link-local endpoints are cheap)"},
    {"--aws-metadata-url", "URL",
     "AWS instance metadata base URL (default http://169.254.169.254)"},
    {"--gcp-metadata-url", "URL",
     "GCP metadata base URL (default http://metadata.google.internal)"},
    {"--azure-metadata-url", "URL", "Azure metadata base URL (default http://169.254.169.254)"},
    {"--alibaba-metadata-url", "URL",
     "Alibaba Cloud ECS metadata base URL (default http://100.100.100.200)"},
    {"--progress-regex", "REGEX",
     "Output lines matching REGEX count as progress; the first capture group is the step number"},
    {"--heartbeat-file", "PATH",
     "File the job touches to show progress; exported as FULCRUM_HEARTBEAT_FILE (default "
     "<data-dir>/run/<name>.heartbeat)"},
    {"--stall-timeout", "DURATION", "Alert when there is no progress for this long (default off)"},
    {"--on-hang", "requeue|stop|ignore",
     "What to do when NCCL reports that a collective of the job has stalled (its RAS socket, "
     "NCCL >= 2.24; see --nccl-ras): requeue = SIGTERM the job, SIGKILL after --kill-after, and "
     "restart it from its last checkpoint within --max-restarts (under Slurm, when the agent "
     "saw an XID on the hung rank's GPU, drain the node and exit 75 so the batch script "
     "requeues the job elsewhere); stop = end the run (exit 1); ignore = alert only (default "
     "requeue). The alert and `fulcrum status` name the rank, host, pid and GPU"},
    {"--hang-grace", "DURATION",
     "How long the same ranks must stay stalled before --on-hang acts (default 5m; at least "
     "twice the longest checkpoint measured, during which the other ranks wait)"},
    {"--nccl-ras", "IPV4:PORT|off",
     "NCCL's RAS status socket on this node (default 127.0.0.1:28028, NCCL's NCCL_RAS_ADDR "
     "default); nothing listening is normal and silent. 'off' = do not watch for hangs"},
    {"--nccl-ras-interval", "DURATION",
     "How often the RAS socket is asked (default 10s; a stall is the same ranks behind on two "
     "reports in a row)"},
    {"--price-per-hour", "USD", "Price of this machine per hour, for the ledger and the budget"},
    {"--offer", "PROVIDER/INSTANCE[/REGION]", "Take the price from the catalog's offer"},
    {"--budget-usd", "USD", "Warn at 80 %; at 100 % checkpoint and stop the job"},
    {"--agent", "URL",
     "Local fulcrum agent asked for GPU health before a restart (default http://127.0.0.1:9400; "
     "'none' to skip)"},
    {"--receiver", "URL",
     "Also deliver the job's alerts (crash_loop, budget, stall, ...) to this webhook from this "
     "process, for a node without a running agent (an agent delivers them to its own receivers). "
     "The URL is a secret: it shows in the process list; --receiver-file keeps it out"},
    {"--receiver-file", "PATH",
     "Read the --receiver URL from this file, which only its owner may read (chmod 600): the "
     "URL stays out of the process list. fulcrum submit stores --receiver so (in "
     "<data-dir>/secrets/<name>.receiver) for the runs it starts"},
    {"--receiver-format", "FORMAT",
     "Payload of --receiver: generic, alertmanager, slack, feishu, dingtalk, wecom (default "
     "generic)"},
    {"--plan", "FILE",
     "The plan this run follows (the output of fulcrum plan --json): its step time, tokens per "
     "step, total steps, memory, hours and cost are recorded in jobs.db, re-quoted as the run "
     "goes (fulcrum status); its price is the run's unless --price-per-hour/--offer, and its "
     "spec's deadline and budget are the run's unless --deadline/--budget-usd"},
    {"--pick", "RANK", "With --plan: the candidate of this rank (default 1)"},
    {"--expect-step-seconds", "SECONDS",
     "Planned seconds per step, by hand (without --plan, or over it)"},
    {"--tokens-per-step", "N", "Tokens per step, by hand (without --plan, or over it)"},
    {"--total-steps", "N", "Steps of the whole run, by hand (without --plan, or over it)"},
    {"--deadline", "DURATION",
     "The run must finish within this long of its first start: an alert when the projection "
     "from the measured speed misses it"},
    {"--log-dir", "DIR", "Rotating log files of the job's output (default <data-dir>/logs)"},
    {"--log-max-bytes", "BYTES", "Size of one log file before it rotates (default 10MiB)"},
    {"--log-files", "N", "Rotated log files kept (default 5)"},
};

constexpr FlagSpec kSwitches[] = {
    {"--restart-on-stall", "", "Kill and restart the job after --stall-timeout without progress"},
    {"--spot", "", "With --offer: use the spot price"},
    {"--no-checkpoint-requests", "",
     "Never send the checkpoint signal on a cadence (the job checkpoints by itself); stops still "
     "send it"},
};

Status FlagError(const std::string& flag, const std::string& expected, const std::string& found) {
  return Status::InvalidInput(flag + ": expected " + expected + ", found '" + found + "'")
      .WithDetail({"", std::nullopt, flag, expected, found, {}});
}

// An integer flag that must be at least `minimum`.
Result<int> BoundedInt(const RunFlags& f, const std::string& name, int64_t fallback,
                       int64_t minimum, const std::string& expected) {
  auto it = f.values.find(name);
  if (it == f.values.end() || it->second.empty()) return static_cast<int>(fallback);
  auto v = ParseInt(it->second);
  if (!v.ok() || *v < minimum || *v > 1000000) return FlagError(name, expected, it->second);
  return static_cast<int>(*v);
}

Result<double> Duration(const RunFlags& f, const std::string& name, double fallback) {
  auto it = f.values.find(name);
  if (it == f.values.end() || it->second.empty()) return fallback;
  auto v = ParseDurationSeconds(it->second);
  if (!v.ok()) return v.status().WithContext(name);
  return *v;
}

std::string Text(const RunFlags& f, const std::string& name, const std::string& fallback) {
  auto it = f.values.find(name);
  return it == f.values.end() || it->second.empty() ? fallback : it->second;
}

Result<std::optional<double>> OptionalUsd(const RunFlags& f, const std::string& name) {
  auto it = f.values.find(name);
  if (it == f.values.end() || it->second.empty()) return std::optional<double>();
  auto v = ParseDouble(it->second);
  if (!v.ok() || *v < 0) {
    return Status::InvalidInput(name + ": expected a non-negative amount in USD, found '" +
                                it->second + "'");
  }
  return std::optional<double>(*v);
}

Result<std::optional<double>> PositiveNumber(const RunFlags& f, const std::string& name) {
  auto it = f.values.find(name);
  if (it == f.values.end() || it->second.empty()) return std::optional<double>();
  auto v = ParseDouble(it->second);
  if (!v.ok() || !(*v > 0)) return FlagError(name, "a positive number", it->second);
  return std::optional<double>(*v);
}

// --on-hang, --hang-grace, --nccl-ras, --nccl-ras-interval.
Status ResolveHangFlags(const RunFlags& f, ResolvedRun& r) {
  SupervisorOptions& o = r.supervisor;
  FULCRUM_ASSIGN_OR_RETURN(o.on_hang, ParseHangAction(Text(f, "--on-hang", "requeue")));
  FULCRUM_ASSIGN_OR_RETURN(o.hang_grace_seconds, Duration(f, "--hang-grace", 300));
  if (!(o.hang_grace_seconds >= 0)) {
    return FlagError("--hang-grace", "a duration of 0s or more", Text(f, "--hang-grace", ""));
  }
  r.nccl_ras = Text(f, "--nccl-ras", telemetry::kNcclRasDefaultAddress);
  if (r.nccl_ras != "off") {
    FULCRUM_RETURN_IF_ERROR(
        telemetry::ValidateNcclRasAddress(r.nccl_ras).WithContext("--nccl-ras (or 'off')"));
  }
  FULCRUM_ASSIGN_OR_RETURN(r.nccl_ras_interval_seconds, Duration(f, "--nccl-ras-interval", 10));
  if (!(r.nccl_ras_interval_seconds >= 1 && r.nccl_ras_interval_seconds <= 3600)) {
    return FlagError("--nccl-ras-interval", "1s to 1h", Text(f, "--nccl-ras-interval", ""));
  }
  return Status::Ok();
}

// --plan / --pick and the figures given by hand over them.
Status ResolvePlan(const RunFlags& f, ResolvedRun& r) {
  SupervisorOptions& o = r.supervisor;
  const std::string plan_path = Text(f, "--plan", "");
  if (!plan_path.empty()) {
    FULCRUM_ASSIGN_OR_RETURN(int pick, BoundedInt(f, "--pick", 1, 1, "a rank of 1 or more"));
    FULCRUM_ASSIGN_OR_RETURN(PlannedRun planned, ReadPlanFile(plan_path, pick));
    o.plan = planned.plan;
    r.plan_usd_per_hour = planned.usd_per_hour;
    // The spec's limits are the run's unless --deadline / --budget-usd say otherwise.
    o.deadline_seconds = planned.deadline_seconds;
    if (!f.values.count("--budget-usd")) o.budget_usd = planned.budget_usd;
  } else if (f.values.count("--pick")) {
    return Status::InvalidInput("--pick needs --plan FILE");
  }
  FULCRUM_ASSIGN_OR_RETURN(auto step, PositiveNumber(f, "--expect-step-seconds"));
  if (step) o.plan.step_seconds = step;
  FULCRUM_ASSIGN_OR_RETURN(auto tokens, PositiveNumber(f, "--tokens-per-step"));
  if (tokens) o.plan.tokens_per_step = tokens;
  if (f.values.count("--total-steps")) {
    FULCRUM_ASSIGN_OR_RETURN(int steps, BoundedInt(f, "--total-steps", 0, 1, "1 or more"));
    o.plan.total_steps = steps;
  }
  if (f.values.count("--deadline")) {
    FULCRUM_ASSIGN_OR_RETURN(double deadline, Duration(f, "--deadline", 0));
    if (!(deadline > 0)) return FlagError("--deadline", "a duration such as 7d", "0");
    o.deadline_seconds = deadline;
  }
  return Status::Ok();
}

// The webhook URL in `path` (one line; surrounding blanks ignored). Refuses a file that anyone
// but its owner may read: the URL carries the receiver's token.
Result<std::string> ReadReceiverFile(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return FlagError("--receiver-file", "a readable file holding the webhook URL",
                     path + " (" + strerror(errno) + ")");
  }
  struct stat st {};
  std::string text;
  bool regular = fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
  char buffer[4096];
  for (ssize_t n; regular && (n = read(fd, buffer, sizeof buffer)) > 0;) text.append(buffer, n);
  close(fd);
  if (!regular) return FlagError("--receiver-file", "a regular file", path);
  if ((st.st_mode & (S_IRWXG | S_IRWXO)) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return Status::InvalidInput("--receiver-file " + path +
                                ": expected a file only its owner can read (chmod 600), found "
                                "mode " +
                                mode)
        .WithDetail({path, std::nullopt, "--receiver-file", "mode 0600", mode, {}});
  }
  return std::string(Trim(text));
}

// Writes `text` to `path` readable by its owner only (0600, whatever the umask), its directory
// made 0700 when it is new.
Status WriteOwnerOnlyFile(const std::string& path, const std::string& text) {
  const std::filesystem::path dir = std::filesystem::path(path).parent_path();
  std::error_code ec;
  if (!std::filesystem::exists(dir, ec)) {
    std::filesystem::create_directories(dir, ec);
    std::filesystem::permissions(dir, std::filesystem::perms::owner_all, ec);
  }
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return Status::IoError(path + ": cannot write (" + strerror(errno) + ")");
  const std::string line = text + "\n";
  const bool ok = fchmod(fd, 0600) == 0 &&
                  write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size()) &&
                  fsync(fd) == 0;
  close(fd);
  if (!ok) return Status::IoError(path + ": cannot write (" + strerror(errno) + ")");
  return Status::Ok();
}

}  // namespace

std::string ReceiverSecretPath(const std::string& data_dir, const std::string& job_id) {
  return data_dir + "/secrets/" + job_id + ".receiver";
}

Status MoveReceiverToFile(RunFlags& flags, const std::string& data_dir, const std::string& job_id,
                          bool write) {
  auto it = flags.values.find("--receiver");
  if (it == flags.values.end()) return Status::Ok();
  const std::string path = ReceiverSecretPath(data_dir, job_id);
  if (write) FULCRUM_RETURN_IF_ERROR(WriteOwnerOnlyFile(path, it->second));
  flags.values.erase(it);
  flags.values["--receiver-file"] = path;
  return Status::Ok();
}

std::optional<std::string> ShownReceiver(const std::vector<std::string>& run_options) {
  for (size_t i = 0; i + 1 < run_options.size(); ++i) {
    if (run_options[i] == "--receiver") return alert::RedactUrl(run_options[i + 1]);
    if (run_options[i] == "--receiver-file") {
      auto url = ReadReceiverFile(run_options[i + 1]);
      return url.ok() ? alert::RedactUrl(*url) : "<unreadable " + run_options[i + 1] + ">";
    }
  }
  return std::nullopt;
}

void AddRunFlags(CLI::App& app, RunFlags& flags) {
  for (const FlagSpec& spec : kValueFlags) {
    app.add_option_function<std::string>(
           spec.name,
           [&flags, name = std::string(spec.name)](const std::string& v) {
             flags.values[name] = v;
           },
           spec.help)
        ->type_name(spec.type)
        ->group("Supervision");
  }
  for (const FlagSpec& spec : kSwitches) {
    app.add_flag_callback(
           spec.name, [&flags, name = std::string(spec.name)] { flags.switches[name] = true; },
           spec.help)
        ->group("Supervision");
  }
  app.add_option("--final-exit-code", flags.final_exit_codes,
                 "Exit code that ends the job without a restart (repeatable); 0 always ends it")
      ->type_name("CODE")
      ->delimiter(',')
      ->allow_extra_args(false)
      ->group("Supervision");
  app.add_option("--preemption", flags.preemption,
                 "Notice sources to watch: aws, gcp, azure, alibaba (comma list), 'none', or "
                 "'auto' = probe aws, gcp and azure once, and alibaba on an Alibaba Cloud ECS "
                 "instance (DMI product name), and watch those that answer (default auto). "
                 "SIGTERM to fulcrum is always a notice")
      ->type_name("SOURCES")
      ->delimiter(',')
      ->allow_extra_args(false)
      ->group("Supervision");
}

std::vector<std::string> RunFlagsToArgs(const RunFlags& flags) {
  std::vector<std::string> args;
  for (const auto& [name, value] : flags.values) {
    args.push_back(name);
    args.push_back(value);
  }
  for (const auto& [name, on] : flags.switches) {
    if (on) args.push_back(name);
  }
  for (const auto& code : flags.final_exit_codes) {
    args.push_back("--final-exit-code");
    args.push_back(code);
  }
  for (const auto& source : flags.preemption) {
    args.push_back("--preemption");
    args.push_back(source);
  }
  return args;
}

Result<double> ResolveOfferPrice(const catalog::Catalog& catalog, const std::string& offer,
                                 bool spot) {
  auto parts = Split(offer, '/');
  if (parts.size() < 2 || parts.size() > 3) {
    return Status::InvalidInput("--offer: expected PROVIDER/INSTANCE[/REGION], found '" + offer +
                                "'");
  }
  std::optional<double> price;
  std::string regions;
  for (const auto& o : catalog.offers()) {
    if (!EqualsIgnoreCase(o.provider, parts[0]) || !EqualsIgnoreCase(o.instance_type, parts[1]))
      continue;
    if (parts.size() == 3 && !EqualsIgnoreCase(o.region, parts[2])) continue;
    const std::optional<double> p = spot ? o.spot_usd_per_hour : o.on_demand_usd_per_hour;
    regions += (regions.empty() ? "" : ", ") + o.region;
    if (!p) {
      return Status::NotFound("--offer " + offer + ": no " + (spot ? "spot" : "on-demand") +
                              " price in " + o.region + " (" + o.origin + ")");
    }
    if (price && *price != *p) {
      return Status::InvalidInput("--offer " + offer + ": the price differs between regions (" +
                                  regions + "); add /REGION");
    }
    price = p;
  }
  if (!price)
    return Status::NotFound("--offer: no offer '" + offer +
                            "' in the catalog (see fulcrum offers)");
  return *price;
}

Result<int> ParseSignal(const std::string& text) {
  const std::string expected =
      "a signal the job can handle: a name (SIGUSR1, USR2) or number, not KILL or STOP";
  int found = 0;
  if (auto n = ParseInt(text); n.ok()) {
    if (*n > 0 && *n < NSIG) found = static_cast<int>(*n);
  }
  std::string name = text;
  for (char& c : name) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (name.rfind("SIG", 0) == 0) name = name.substr(3);
  for (int sig = 1; sig < NSIG && found == 0; ++sig) {
    const char* abbrev = sigabbrev_np(sig);
    if (abbrev != nullptr && name == abbrev) found = sig;
  }
  if (found == 0) return FlagError("--checkpoint-signal", expected, text);
  // No process can catch these: a checkpoint request would kill or freeze the job.
  if (found == SIGKILL || found == SIGSTOP) {
    return Status::InvalidInput("--checkpoint-signal: " + SignalName(found) +
                                " cannot be handled by the job (each checkpoint request would " +
                                (found == SIGKILL ? "kill" : "freeze") + " it); use SIGUSR1")
        .WithDetail(
            {"", std::nullopt, "--checkpoint-signal", expected, text, {"SIGUSR1", "SIGUSR2"}});
  }
  return found;
}

Result<std::vector<int>> ParseGpuList(const std::string& text) {
  std::vector<int> gpus;
  for (const std::string& part : Split(text, ',')) {
    auto n = ParseInt(Trim(part));
    if (!n.ok() || *n < 0 || *n > 1023) {
      return Status::InvalidInput("--gpus: expected GPU indices such as 0,1,3, found '" + text +
                                  "'");
    }
    gpus.push_back(static_cast<int>(*n));
  }
  return gpus;
}

Result<ResolvedRun> ResolveRunFlags(const RunFlags& f, const std::string& data_dir,
                                    const std::string& job_id) {
  ResolvedRun r;
  SupervisorOptions& o = r.supervisor;
  o.job_id = job_id;
  FULCRUM_ASSIGN_OR_RETURN(o.stop_grace_seconds, Duration(f, "--stop-grace", 60));
  FULCRUM_ASSIGN_OR_RETURN(o.kill_after_seconds, Duration(f, "--kill-after", 10));
  o.checkpoints.dir = Text(f, "--checkpoint-dir", "");
  if (!o.checkpoints.dir.empty()) {
    o.checkpoints.dir = std::filesystem::absolute(o.checkpoints.dir).lexically_normal().string();
    FULCRUM_RETURN_IF_ERROR(CheckCheckpointDir(o.checkpoints.dir));
  }
  const std::string every = Text(f, "--checkpoint-every", "30m");
  if (every == "auto") {
    o.checkpoint_every_seconds.reset();
  } else {
    FULCRUM_ASSIGN_OR_RETURN(double seconds, Duration(f, "--checkpoint-every", 1800));
    if (seconds <= 0)
      return Status::InvalidInput("--checkpoint-every: expected > 0 or auto, found '" + every +
                                  "'");
    o.checkpoint_every_seconds = seconds;
  }
  FULCRUM_ASSIGN_OR_RETURN(o.checkpoint_signal,
                           ParseSignal(Text(f, "--checkpoint-signal", "SIGUSR1")));
  // Signals are opt-in: a launcher without a handler (torchrun) dies of SIGUSR1.
  const bool signal_given = !Text(f, "--checkpoint-signal", "").empty();
  FULCRUM_ASSIGN_OR_RETURN(
      o.signal_target,
      ParseSignalTarget(Text(f, "--signal-target", signal_given ? "group" : "none")));
  o.checkpoint_request_file =
      Text(f, "--checkpoint-request-file", data_dir + "/run/" + job_id + ".checkpoint-request");
  o.ready_file = data_dir + "/run/" + job_id + ".ready";
  o.checkpoints.pattern = Text(f, "--checkpoint-pattern", "*");
  FULCRUM_ASSIGN_OR_RETURN(o.checkpoints.rule,
                           ParseCompletionRule(Text(f, "--checkpoint-complete", "auto")));
  FULCRUM_ASSIGN_OR_RETURN(o.checkpoints.layout,
                           ParseCheckpointLayout(Text(f, "--checkpoint-layout", "auto")));
  o.checkpoints.marker = Text(f, "--checkpoint-marker", "COMPLETE");
  FULCRUM_ASSIGN_OR_RETURN(o.checkpoints.settle_seconds, Duration(f, "--checkpoint-settle", 30));
  FULCRUM_ASSIGN_OR_RETURN(o.checkpoints.keep,
                           BoundedInt(f, "--keep", 0, 0, "0 (keep all) or more"));
  FULCRUM_ASSIGN_OR_RETURN(o.mtbf_prior_seconds, Duration(f, "--mtbf", 24 * 3600));
  FULCRUM_ASSIGN_OR_RETURN(o.restart.max_restarts, BoundedInt(f, "--max-restarts", 10, -1,
                                                              "0 or more, or -1 for no limit"));
  FULCRUM_ASSIGN_OR_RETURN(o.restart.backoff_initial_seconds, Duration(f, "--backoff", 1));
  FULCRUM_ASSIGN_OR_RETURN(o.restart.backoff_max_seconds, Duration(f, "--backoff-max", 300));
  FULCRUM_ASSIGN_OR_RETURN(o.restart.crash_loop_failures,
                           BoundedInt(f, "--crash-loop-failures", 3, 0, "0 (off) or more"));
  FULCRUM_ASSIGN_OR_RETURN(o.restart.crash_loop_window_seconds,
                           Duration(f, "--crash-loop-window", 600));
  for (const auto& code : f.final_exit_codes) {
    auto n = ParseInt(code);
    if (!n.ok() || *n < 0 || *n > 255) {
      return Status::InvalidInput("--final-exit-code: expected 0-255, found '" + code + "'");
    }
    o.restart.final_exit_codes.push_back(static_cast<int>(*n));
  }
  o.progress_regex = Text(f, "--progress-regex", "");
  if (!o.progress_regex.empty()) {
    try {
      std::regex check(o.progress_regex);
    } catch (const std::regex_error& e) {
      return Status::InvalidInput("--progress-regex: '" + o.progress_regex +
                                  "' is not a regex: " + e.what());
    }
  }
  o.heartbeat_file = Text(f, "--heartbeat-file", data_dir + "/run/" + job_id + ".heartbeat");
  if (f.values.count("--stall-timeout")) {
    FULCRUM_ASSIGN_OR_RETURN(double stall, Duration(f, "--stall-timeout", 0));
    o.stall_timeout_seconds = stall;
  }
  o.restart_on_stall = f.switches.count("--restart-on-stall") > 0;
  o.checkpoint_requests = f.switches.count("--no-checkpoint-requests") == 0;
  FULCRUM_ASSIGN_OR_RETURN(o.price_per_hour_usd, OptionalUsd(f, "--price-per-hour"));
  FULCRUM_ASSIGN_OR_RETURN(o.budget_usd, OptionalUsd(f, "--budget-usd"));
  r.offer = Text(f, "--offer", "");
  r.offer_spot = f.switches.count("--spot") > 0;
  if (!r.offer.empty() && o.price_per_hour_usd) {
    return Status::InvalidInput("--offer and --price-per-hour both set the price; give one");
  }
  FULCRUM_RETURN_IF_ERROR(ResolvePlan(f, r));
  FULCRUM_RETURN_IF_ERROR(ResolveHangFlags(f, r));
  if (!o.price_per_hour_usd && r.offer.empty()) o.price_per_hour_usd = r.plan_usd_per_hour;
  if (o.budget_usd && !o.price_per_hour_usd && r.offer.empty()) {
    const std::string budget = f.values.count("--budget-usd")
                                   ? "--budget-usd"
                                   : "the plan's budget (constraints.budget_usd)";
    return Status::InvalidInput(budget + " needs a price: give --price-per-hour or --offer");
  }
  std::vector<std::string> sources =
      f.preemption.empty() ? std::vector<std::string>{"auto"} : f.preemption;
  for (const auto& s : sources) {
    if (s == "auto") {
      r.preemption_auto = true;
    } else if (s == "aws" || s == "gcp" || s == "azure" || s == "alibaba") {
      r.preemption_sources.push_back(s);
    } else if (s != "none") {
      return Status::InvalidInput(
          "--preemption: expected aws, gcp, azure, alibaba, none or auto, found '" + s + "'");
    }
  }
  if (r.preemption_auto) {
    r.preemption_sources = {"aws", "gcp", "azure"};
    if (OnAlibabaEcs(f.dmi_product_name_path)) r.preemption_sources.push_back("alibaba");
  }
  r.aws_url = Text(f, "--aws-metadata-url", kAwsMetadataUrl);
  r.gcp_url = Text(f, "--gcp-metadata-url", kGcpMetadataUrl);
  r.azure_url = Text(f, "--azure-metadata-url", kAzureMetadataUrl);
  r.alibaba_url = Text(f, "--alibaba-metadata-url", kAlibabaMetadataUrl);
  FULCRUM_ASSIGN_OR_RETURN(r.notice_poll_seconds, Duration(f, "--notice-poll", 0.5));
  r.agent_url = Text(f, "--agent", "http://127.0.0.1:9400");
  r.receiver_url = Text(f, "--receiver", "");
  const std::string receiver_file = Text(f, "--receiver-file", "");
  if (!receiver_file.empty()) {
    if (!r.receiver_url.empty()) {
      return Status::InvalidInput("--receiver and --receiver-file both give the webhook; give one");
    }
    FULCRUM_ASSIGN_OR_RETURN(r.receiver_url, ReadReceiverFile(receiver_file));
  }
  r.receiver_format = Text(f, "--receiver-format", "generic");
  if (auto format = alert::ParseReceiverFormat(r.receiver_format); !format.ok()) {
    return FlagError("--receiver-format", "generic, alertmanager, slack, feishu, dingtalk or wecom",
                     r.receiver_format);
  }
  if (!r.receiver_url.empty()) {
    FULCRUM_RETURN_IF_ERROR(alert::ValidateReceiverUrl(
        receiver_file.empty() ? "--receiver" : "--receiver-file", r.receiver_url));
  } else if (f.values.count("--receiver-format")) {
    return Status::InvalidInput("--receiver-format needs --receiver URL");
  }
  r.log_dir = Text(f, "--log-dir", data_dir + "/logs");
  const std::string max_bytes = Text(f, "--log-max-bytes", "10MiB");
  auto bytes = ParseBytes(max_bytes);
  // A rotating log needs room for at least one line per file.
  if (!bytes.ok() || !(*bytes >= 1024)) {
    return FlagError("--log-max-bytes", "a size of at least 1KiB, such as 10MiB", max_bytes);
  }
  r.log_max_bytes = *bytes;
  FULCRUM_ASSIGN_OR_RETURN(r.log_files, BoundedInt(f, "--log-files", 5, 1, "1 or more"));
  return r;
}

}  // namespace fulcrum::supervise
