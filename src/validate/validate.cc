// GCC 12 reports a false -Wmaybe-uninitialized inside std::regex's std::function under
// -fsanitize (the asan preset); it must be silenced before any header is read.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include "validate/validate.h"

#include <signal.h>
#include <stdlib.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "core/input_error.h"
#include "core/parse.h"
#include "core/subprocess.h"
#include "core/table.h"
#include "supervise/plan_file.h"
#include "supervise/run_flags.h"
#include "supervise/supervisor.h"
#include "telemetry/nvml_source.h"
#include "validate/validation.h"

namespace fulcrum::validate {
namespace {
namespace fs = std::filesystem;

constexpr double kStartupSeconds = 120;  // a command's start (imports, CUDA init) may take this

std::vector<std::string> Names(const auto& table) {
  return std::vector<std::string>(std::begin(table), std::end(table));
}

Status CheckName(const std::string& flag, const std::string& value, const auto& table) {
  const std::vector<std::string> names = Names(table);
  if (std::find(names.begin(), names.end(), value) != names.end()) return Status::Ok();
  std::string all;
  for (const auto& n : names) {
    if (!all.empty()) all += ", ";
    all += n;
  }
  ErrorDetail detail;
  detail.field = flag;
  detail.expected = "one of " + all;
  detail.found = value;
  detail.nearest = NearestNames(value, names);
  return Status::InvalidInput(flag + ": unknown name '" + value + "'; expected one of " + all)
      .WithDetail(detail);
}

Status Positive(const std::string& flag, double value) {
  if (value > 0 && std::isfinite(value)) return Status::Ok();
  ErrorDetail detail;
  detail.field = flag;
  detail.expected = "a duration above 0, e.g. 2m";
  detail.found = FormatDuration(value);
  return Status::InvalidInput(flag + ": expected a duration above 0, found " +
                              FormatDuration(value))
      .WithDetail(detail);
}

std::string Seconds(double s) { return FormatNumber(s, s < 10 ? 2 : 1) + " s"; }

// Seconds per step over the steps of one training process: (t_last - t_first) / steps.
std::optional<double> StepSeconds(const std::vector<StepSeen>& steps, double from, double to) {
  const StepSeen* first = nullptr;
  const StepSeen* last = nullptr;
  for (const StepSeen& s : steps) {
    if (s.at < from || s.at > to) continue;
    if (first == nullptr) first = &s;
    if (s.step <= (last ? last->step : first->step - 1)) {  // a restart: start over
      first = &s;
    }
    last = &s;
  }
  if (first == nullptr || last == nullptr || last->step <= first->step) return std::nullopt;
  return (last->at - first->at) / static_cast<double>(last->step - first->step);
}

}  // namespace

std::optional<int64_t> CheckpointStep(const std::string& path) {
  const std::string name = fs::path(path).filename().string();
  static const std::regex number(R"((\d+))");
  std::optional<int64_t> step;
  for (auto it = std::sregex_iterator(name.begin(), name.end(), number);
       it != std::sregex_iterator(); ++it) {
    auto value = ParseInt(it->str());
    if (value.ok()) step = *value;
  }
  return step;
}

Status CheckValidateOptions(const ValidateOptions& o) {
  FULCRUM_RETURN_IF_ERROR(CheckName("--source", o.source, std::array{"nvml", "sim"}));
  for (const auto& d : o.drills) FULCRUM_RETURN_IF_ERROR(CheckName("--drills", d, kDrillNames));
  for (const auto& p : o.skip_phases) FULCRUM_RETURN_IF_ERROR(CheckName("--skip", p, kPhaseNames));
  FULCRUM_RETURN_IF_ERROR(Positive("--duration", o.duration_seconds));
  FULCRUM_RETURN_IF_ERROR(Positive("--small-run", o.small_run_seconds));
  FULCRUM_RETURN_IF_ERROR(Positive("--drill-timeout", o.drill_timeout_seconds));
  FULCRUM_RETURN_IF_ERROR(Positive("--network-cut", o.network_cut_seconds));
  if (o.checkpoint_every_seconds)
    FULCRUM_RETURN_IF_ERROR(Positive("--checkpoint-every", *o.checkpoint_every_seconds));
  if (o.sim_gpus < 1) {
    return Status::InvalidInput("--sim-gpus: expected 1 or more, found " +
                                std::to_string(o.sim_gpus));
  }
  if (!o.sim_scenario.empty() && o.source != "sim") {
    return Status::InvalidInput("--sim-scenario needs --source sim");
  }
  try {
    std::regex re(o.progress_regex);
    if (re.mark_count() < 1) {
      return Status::InvalidInput("--progress-regex: '" + o.progress_regex +
                                  "' has no capture group; its first group must be the step");
    }
  } catch (const std::regex_error& e) {
    return Status::InvalidInput("--progress-regex: not a regular expression: '" + o.progress_regex +
                                "' (" + e.what() + ")");
  }
  if (!o.gpus.empty()) FULCRUM_RETURN_IF_ERROR(supervise::ParseGpuList(o.gpus).status());
  if (!o.expect_plan.empty()) {
    FULCRUM_RETURN_IF_ERROR(supervise::ReadPlanFile(o.expect_plan, 1).status());
  }
  if (!o.command.empty() && !ProgramExists(o.command[0])) {
    return Status::InvalidInput(
        o.command[0] + ": command not found" +
        (o.command[0].find('/') == std::string::npos ? " (not on PATH)" : " (or not executable)"));
  }
  return Status::Ok();
}

Validation::Validation(const ValidateOptions& options, const Clock& clock)
    : options_(options), clock_(clock) {
  if (options_.drills.empty()) options_.drills = Names(kDrillNames);
  if (!options_.expect_plan.empty()) plan_ = supervise::ReadPlanFile(options_.expect_plan, 1);
}

Validation::~Validation() {
  StopJob();
  network_.reset();
  if (own_work_dir_) {
    std::error_code ec;
    fs::remove_all(work_dir_, ec);
  }
}

void Validation::Say(const std::string& text) const {
  if (options_.progress) options_.progress(text);
}

bool Validation::Wanted(const std::string& phase) const {
  return std::find(options_.skip_phases.begin(), options_.skip_phases.end(), phase) ==
         options_.skip_phases.end();
}

double Validation::CheckpointEvery() const {
  return options_.checkpoint_every_seconds.value_or(std::min(30.0, options_.small_run_seconds / 4));
}

Result<ValidateReport> Validation::Run() {
  FULCRUM_RETURN_IF_ERROR(CheckValidateOptions(options_));
  if (options_.work_dir.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/fulcrum-validate-XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr)
      return Status::IoError(pattern + ": cannot make a work directory");
    work_dir_ = pattern;
    own_work_dir_ = true;
  } else {
    // A fresh directory per run: a job, checkpoints or an agent left by an earlier validation
    // in the same --work-dir must not be resumed by this one.
    std::error_code ec;
    fs::create_directories(options_.work_dir, ec);
    if (ec) return Status::IoError(options_.work_dir + ": " + ec.message());
    std::string pattern = fs::absolute(options_.work_dir).string() + "/validate-XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr)
      return Status::IoError(pattern + ": cannot make a directory for this run");
    work_dir_ = pattern;
  }
  if (!options_.gpus.empty()) {
    FULCRUM_ASSIGN_OR_RETURN(gpus_, supervise::ParseGpuList(options_.gpus));
  } else if (options_.source == "sim") {
    for (int g = 0; g < options_.sim_gpus; ++g) gpus_.push_back(g);
  } else if (auto nvml = telemetry::NvmlSource::Open(); nvml.ok()) {
    for (int g = 0; g < (*nvml)->gpu_count(); ++g) gpus_.push_back(g);
  }

  auto skipped = [](const std::string& name, const std::string& why) {
    PhaseResult p;
    p.name = name;
    p.verdict = Verdict::kSkipped;
    p.reasons.push_back(why);
    return p;
  };
  // Each phase in order; after an interruption the one under way is unfinished, the rest skipped.
  // `cannot`: why the phase cannot run ("" = it can).
  auto phase = [&](const std::string& name, const std::function<PhaseResult()>& run,
                   const std::string& cannot = "") {
    if (Interrupted()) {
      report_.phases.push_back(skipped(name, "interrupted"));
      return;
    }
    if (!Wanted(name)) {
      report_.phases.push_back(skipped(name, "skipped by --skip"));
      return;
    }
    if (!cannot.empty()) {
      report_.phases.push_back(skipped(name, cannot));
      return;
    }
    PhaseResult result = run();
    if (Interrupted()) {
      result.verdict = Verdict::kFail;
      result.reasons.insert(result.reasons.begin(), "interrupted: the phase did not finish");
    }
    report_.phases.push_back(std::move(result));
  };
  phase("environment", [&] { return Environment(); });
  if (options_.command.empty()) {
    report_.phases.push_back(skipped("small-run", "no command (give one after --)"));
    report_.phases.push_back(skipped("fault-drill", "no command (give one after --)"));
  } else {
    Status started = StartJob();
    if (!started.ok()) return started;
    phase("small-run", [&] { return SmallRun(); });
    phase("fault-drill", [&] { return FaultDrills(); });
  }
  // A job that never checkpoints on request has failed the validation (a stop or preemption
  // would lose its work): the stress run is not waited out, the job is stopped now (issue 29).
  if (no_checkpoints_) StopJob();
  phase(
      "stress", [&] { return Stress(); },
      no_checkpoints_ ? "the small run failed: the job does not checkpoint on request (fix "
                        "that, then validate again)"
                      : "");
  StopJob();
  return report_;
}

// ---- the job ----

Status Validation::StartJob() {
  const std::string data_dir = work_dir_ + "/data";
  const std::string checkpoints = work_dir_ + "/checkpoints";
  const std::string heartbeat = work_dir_ + "/heartbeat.json";
  FULCRUM_ASSIGN_OR_RETURN(notice_, NoticeEndpoint::Start());
  drill_agent_port_ = FreeLoopbackPort();
  const bool wants_network = std::find(options_.drills.begin(), options_.drills.end(),
                                       "network-cut") != options_.drills.end();
  std::vector<std::string> command = options_.command;
  if (wants_network && Wanted("fault-drill")) {
    auto net = DrillNetwork::Create();
    if (net.ok()) {
      network_ = std::move(*net);
      command = network_->Wrap(command);
    } else {
      network_unavailable_ = net.status().message();
    }
  }
  const double grace = std::min(60.0, options_.drill_timeout_seconds / 2);
  std::vector<std::string> argv = {options_.fulcrum_binary,
                                   "run",
                                   "--name",
                                   "validate",
                                   "--data-dir",
                                   data_dir,
                                   "--agent",
                                   "http://127.0.0.1:" + std::to_string(drill_agent_port_),
                                   "--preemption",
                                   "aws",
                                   "--aws-metadata-url",
                                   notice_->url(),
                                   "--notice-poll",
                                   "0.2s",
                                   "--checkpoint-dir",
                                   checkpoints,
                                   "--checkpoint-every",
                                   FormatNumber(CheckpointEvery(), 3) + "s",
                                   "--progress-regex",
                                   options_.progress_regex,
                                   "--stop-grace",
                                   FormatNumber(grace, 3) + "s",
                                   "--max-restarts",
                                   "-1",
                                   "--heartbeat-file",
                                   heartbeat};
  if (!gpus_.empty()) {
    std::string list;
    for (int g : gpus_) {
      if (!list.empty()) list += ',';
      list += std::to_string(g);
    }
    argv.insert(argv.end(), {"--gpus", list});
  }
  argv.push_back("--");
  argv.insert(argv.end(), command.begin(), command.end());
  job_ = std::make_unique<JobSession>(argv, options_.progress_regex, heartbeat, clock_,
                                      options_.job_output);
  job_->SetInterrupt(options_.interrupted);
  Say("small-run: fulcrum run -- " + [&] {
    std::string s;
    for (const auto& a : options_.command) {
      if (!s.empty()) s += ' ';
      s += a;
    }
    return s;
  }());
  return job_->Start();
}

void Validation::StopJob() {
  if (!job_ || !job_->running()) return;
  job_->SetInterruptible(false);
  if (no_checkpoints_) {
    // A stop would wait the grace for a checkpoint that does not come; the run's keeper and
    // the job's PR_SET_PDEATHSIG end the job with it.
    Say("stopping the job (SIGKILL to fulcrum run: it does not checkpoint on request)");
    job_->SignalSupervisor(SIGKILL);
    job_->PumpUntil([&] { return !job_->running(); }, 10);
    return;
  }
  Say("stopping the job (SIGTERM to fulcrum run: checkpoint, then stop)");
  job_->SignalSupervisor(SIGTERM);
  job_->PumpUntil([&] { return !job_->running(); }, options_.drill_timeout_seconds);
  if (job_->running()) {
    job_->SignalSupervisor(SIGKILL);
    job_->PumpUntil([&] { return !job_->running(); }, 10);
  }
}

PhaseResult Validation::SmallRun() {
  PhaseResult phase;
  phase.name = "small-run";
  const double start = Now();
  const double every = CheckpointEvery();
  // 1. It starts and reports progress.
  const bool progressed = job_->PumpUntil(
      [&] {
        WatchRequestFile();
        return !job_->steps().empty();
      },
      std::max(options_.small_run_seconds, kStartupSeconds));
  if (!progressed) {
    phase.verdict = Verdict::kFail;
    if (job_->starts().empty()) {
      phase.reasons.push_back("the command did not start under fulcrum run: " + job_->Tail(8));
    } else if (!job_->running()) {
      phase.reasons.push_back("the job ended before it reported a step (" +
                              (job_->run_exit() ? job_->run_exit()->Describe() : "?") +
                              "): " + job_->Tail(8));
    } else {
      phase.reasons.push_back(
          "no progress within " + Seconds(Now() - start) +
          ": no output line matched --progress-regex '" + options_.progress_regex +
          "' and no {\"step\": N} came in FULCRUM_HEARTBEAT_FILE; " + job_->Tail(5));
    }
    job_failure_ = "the small run failed";
    return phase;
  }
  phase.metrics["startup_seconds"] = job_->steps().front().at - start;
  // A validation starts the job afresh (FULCRUM_RESUME_FROM empty), whatever ran before.
  phase.metrics["fresh_start"] =
      !job_->starts().empty() && job_->starts().front().resumed_from.empty();
  // 2. It checkpoints on request (the supervisor asks every `every`), and runs its few minutes.
  auto checkpoint_after_request = [&] {
    for (const auto& c : job_->checkpoints())
      if (c.after_request) return true;
    return false;
  };
  auto requested_checkpoint = [&] {
    WatchRequestFile();
    return request_taken_ && checkpoint_after_request();
  };
  job_->PumpUntil(
      [&] {
        WatchRequestFile();
        return Now() - start >= options_.small_run_seconds;
      },
      options_.small_run_seconds + 1);
  const double ran = Now() - start;
  // Every request of the small run had its time; the last gets one more request window. A job
  // whose checkpoint takes less than the small run answers its first request within this.
  if (!requested_checkpoint() && job_->running()) job_->PumpUntil(requested_checkpoint, every);
  std::vector<std::string> failures;
  if (!job_->running()) {
    failures.push_back("the job ended during the small run (" +
                       (job_->run_exit() ? job_->run_exit()->Describe() : "?") +
                       "): give it more steps than the validation takes; " + job_->Tail(5));
    job_failure_ = "the job ended";
  }
  const bool on_request = requested_checkpoint();
  if (!on_request) CheckpointFailure(checkpoint_after_request(), every, failures);
  const auto step_seconds = StepSeconds(job_->steps(), start, Now());
  phase.metrics["seconds"] = ran;
  phase.metrics["steps"] = job_->last_step() ? nlohmann::json(*job_->last_step()) : nullptr;
  phase.metrics["step_seconds"] = step_seconds ? nlohmann::json(*step_seconds) : nullptr;
  phase.metrics["checkpoints"] = job_->checkpoints().size();
  phase.metrics["checkpoint_on_request"] = on_request;
  if (!job_->checkpoints().empty()) {
    for (const auto& e : job_->events()) {
      std::smatch m;
      static const std::regex after(R"(\(([0-9.]+) s after the request\))");
      if (std::regex_search(e.text, m, after)) {
        phase.metrics["checkpoint_seconds"] = std::stod(m[1].str());
        break;
      }
    }
  }
  if (plan_) {
    const Result<supervise::PlannedRun>& plan = *plan_;
    if (plan.ok() && plan->plan.step_seconds) {
      const double p50 = *plan->plan.step_seconds;
      const double top = plan->plan.step_seconds_p90.value_or(p50 * 1.25);
      phase.metrics["planned_step_seconds"] = p50;
      phase.metrics["planned_step_seconds_p90"] = top;
      if (!step_seconds) {
        failures.push_back("no step time measured to compare with the plan's " + Seconds(p50));
      } else if (*step_seconds > top) {
        failures.push_back("measured " + Seconds(*step_seconds) + " per step, above the plan's " +
                           "band (P50 " + Seconds(p50) + ", P90 " + Seconds(top) + ")");
      } else {
        phase.reasons.push_back("step time " + Seconds(*step_seconds) + " within the plan's band " +
                                "(P50 " + Seconds(p50) + ", P90 " + Seconds(top) + ")");
      }
    }
  }
  if (failures.empty()) {
    phase.verdict = Verdict::kPass;
    phase.reasons.insert(
        phase.reasons.begin(),
        "started, reported " + std::to_string(job_->steps().size()) + " progress line(s)" +
            (step_seconds ? " at " + Seconds(*step_seconds) + " per step" : std::string()) +
            ", checkpointed on request");
  } else {
    phase.verdict = Verdict::kFail;
    phase.reasons.insert(phase.reasons.end(), failures.begin(), failures.end());
  }
  return phase;
}

// Why the small run saw no checkpoint on request: checkpoints on the job's own cadence
// (`after_request` without the request taken), or none at all (the drills are then skipped).
void Validation::CheckpointFailure(bool checkpoints_came, double every,
                                   std::vector<std::string>& failures) {
  if (checkpoints_came) {
    // Checkpoints came, on the job's own cadence: a stop's request would not be answered.
    failures.push_back(std::to_string(job_->checkpoints().size()) +
                       " checkpoint(s) completed, but the job never took a request (" +
                       RequestFile() +
                       " stayed in place): they came on its own cadence; the job does not "
                       "checkpoint on request (FULCRUM_CHECKPOINT_REQUEST_FILE: checkpoint, then "
                       "delete it)");
  } else {
    size_t requests = 0;
    for (const auto& e : job_->events())
      if (e.text.rfind("requested a checkpoint", 0) == 0) ++requests;
    failures.push_back(
        "no checkpoint completed after a request (" + std::to_string(requests) +
        " request(s), every " + Seconds(every) + ", the last waited for " + Seconds(every) +
        "): the job does not checkpoint on request (FULCRUM_CHECKPOINT_REQUEST_FILE or "
        "--checkpoint-signal), or not into FULCRUM_CHECKPOINT_DIR");
    // Every drill resumes from (or waits for) a checkpoint written on request: none can run.
    if (job_failure_.empty()) {
      job_failure_ = "needs a checkpoint written on request, and the small run saw none";
      no_checkpoints_ = true;
    }
  }
}

std::string Validation::RequestFile() const {
  // `fulcrum run`'s default for --data-dir DIR --name validate (supervise/run_flags.cc).
  return work_dir_ + "/data/run/validate.checkpoint-request";
}

void Validation::WatchRequestFile() {
  if (request_taken_ || !job_ || job_->starts().empty()) return;
  // The supervisor removes a stale request only when it starts the process: a request made
  // since this start that is gone was taken by the job.
  double last_request = -1;
  for (const RunEvent& e : job_->events())
    if (e.text.rfind("requested a checkpoint (request file", 0) == 0) last_request = e.at;
  if (last_request < job_->starts().back().at) return;
  std::error_code ec;
  if (!fs::exists(RequestFile(), ec) && !ec) request_taken_ = true;
}

Result<ValidateReport> RunValidate(const ValidateOptions& options, const Clock& clock) {
  Validation validation(options, clock);
  return validation.Run();
}

}  // namespace fulcrum::validate
