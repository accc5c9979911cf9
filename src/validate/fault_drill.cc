// GCC 12 reports a false -Wmaybe-uninitialized inside std::regex's std::function under
// -fsanitize (the asan preset); it must be silenced before any header is read.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
// The fault-drill phase: each fault injected into the running job, one at a time, then the check
// that the job resumed from its last complete checkpoint with its progress kept.
#include <signal.h>

#include <algorithm>
#include <fstream>
#include <regex>
#include <sstream>

#include "core/parse.h"
#include "core/table.h"
#include "supervise/agent_health.h"
#include "supervise/supervisor.h"
#include "validate/validation.h"

namespace fulcrum::validate {
namespace {

std::string Seconds(double s) { return FormatNumber(s, 2) + " s"; }

std::string JoinInts(const std::vector<int>& v) {
  std::string out;
  for (int g : v) {
    if (!out.empty()) out += ',';
    out += std::to_string(g);
  }
  return out;
}

// CUDA_VISIBLE_DEVICES in the environment of process `pid`; nullopt when it cannot be read.
std::optional<std::string> VisibleDevices(int64_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/environ", std::ios::binary);
  if (!in) return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  std::string entry;
  std::istringstream entries(text.str());
  while (std::getline(entries, entry, '\0')) {
    if (entry.rfind("CUDA_VISIBLE_DEVICES=", 0) == 0) return entry.substr(21);
  }
  return std::string();
}

}  // namespace

PhaseResult Validation::FaultDrills() {
  PhaseResult phase;
  phase.name = "fault-drill";
  int passed = 0, failed = 0, skipped = 0;
  for (const std::string fault : kDrillNames) {
    if (std::find(options_.drills.begin(), options_.drills.end(), fault) == options_.drills.end())
      continue;
    if (Interrupted()) break;
    Say("fault drill " + fault);
    DrillResult drill = Drill(fault);
    Say("fault drill " + fault + ": " + VerdictName(drill.verdict) + " (" + drill.reason + ")");
    if (drill.verdict == Verdict::kPass) ++passed;
    if (drill.verdict == Verdict::kFail) {
      ++failed;
      phase.reasons.push_back(fault + ": " + drill.reason);
    }
    if (drill.verdict == Verdict::kSkipped) {
      ++skipped;
      phase.reasons.push_back(fault + " skipped: " + drill.reason);
    }
    report_.drills.push_back(drill);
  }
  phase.metrics = {{"passed", passed}, {"failed", failed}, {"skipped", skipped}};
  phase.verdict = failed > 0 ? Verdict::kFail : passed > 0 ? Verdict::kPass : Verdict::kSkipped;
  if (phase.verdict == Verdict::kPass) {
    phase.reasons.insert(
        phase.reasons.begin(),
        std::to_string(passed) + " drill(s) resumed from the last complete checkpoint");
  }
  return phase;
}

std::string Validation::WaitForDrillable() {
  if (!job_->running() || job_->starts().empty()) {
    return "the job is not running" + (job_->run_exit()
                                           ? " (fulcrum run " + job_->run_exit()->Describe() + ")"
                                           : std::string());
  }
  const double since = job_->starts().back().at;
  // A checkpoint past step 0: a restart from a step-0 checkpoint cannot be told from a fresh
  // start, so CheckResume would call a correct resume a failure (seen when the job is slow to take
  // its first step, under a sanitizer). A name without a step number counts.
  auto ready = [&] {
    for (const CheckpointSeen& c : job_->checkpoints()) {
      if (c.at >= since && CheckpointStep(c.path).value_or(1) > 0 && !job_->steps().empty() &&
          job_->steps().back().at > c.at) {
        return true;
      }
    }
    return false;
  };
  const double wait = CheckpointEvery() + options_.drill_timeout_seconds;
  if (job_->PumpUntil(ready, wait)) return "";
  if (!job_->running()) {
    return "the job ended before a checkpoint to drill on (fulcrum run " +
           (job_->run_exit() ? job_->run_exit()->Describe() : std::string("?")) +
           "): " + job_->Tail(4);
  }
  return "no complete checkpoint from the job's current process within " + Seconds(wait) +
         " (requests every " + Seconds(CheckpointEvery()) +
         "): the job does not checkpoint on request";
}

bool Validation::RestartStoppedRun(DrillResult& drill, double t0) {
  job_->PumpUntil([&] { return !job_->running(); }, options_.drill_timeout_seconds);
  if (job_->running()) {
    drill.verdict = Verdict::kFail;
    drill.reason = "fulcrum run did not stop within " + Seconds(options_.drill_timeout_seconds);
    return false;
  }
  const auto& exit = job_->run_exit();
  if (!exit || exit->exit_code != supervise::kExitStopped) {
    drill.verdict = Verdict::kFail;
    drill.reason = "fulcrum run ended with " + (exit ? exit->Describe() : std::string("?")) +
                   ", not 75 (stopped, resumable): " + job_->Tail(4);
    return false;
  }
  bool saved = false;
  for (const RunEvent& e : job_->events())
    if (e.at >= t0 && e.text.rfind("checkpoint saved; sending SIGTERM", 0) == 0) saved = true;
  if (!saved) {
    drill.verdict = Verdict::kFail;
    drill.reason =
        "the job wrote no checkpoint within the stop's grace period after the request "
        "(it does not checkpoint on request)";
    return false;
  }
  Say("fault drill " + drill.fault + ": fulcrum run stopped (exit 75); running it again");
  Status s = job_->Start();
  if (!s.ok()) {
    drill.verdict = Verdict::kFail;
    drill.reason = "cannot run fulcrum run again: " + s.message();
    return false;
  }
  return true;
}

void Validation::CheckResume(DrillResult& drill, double t0, size_t starts_before,
                             int64_t step_before, const std::string& checkpoint_before) {
  const bool resumed = job_->PumpUntil(
      [&] { return job_->starts().size() > starts_before && job_->starts().back().first_step; },
      options_.drill_timeout_seconds);
  if (!resumed) {
    drill.verdict = Verdict::kFail;
    drill.reason = job_->starts().size() > starts_before
                       ? "the job restarted but reported no step within " +
                             Seconds(options_.drill_timeout_seconds)
                       : "no restart within " + Seconds(options_.drill_timeout_seconds);
    drill.reason += ": " + job_->Tail(4);
    return;
  }
  const TrainingStart& start = job_->starts().back();
  drill.resumed_from = start.resumed_from;
  drill.resume_seconds = *start.first_step_at - t0;
  const int64_t resumed_step = *start.first_step - 1;
  int64_t done_before = step_before;
  for (const StepSeen& s : job_->steps())
    if (s.at < start.at) done_before = std::max(done_before, s.step);
  drill.lost_steps = std::max<int64_t>(0, done_before - resumed_step);
  // The last complete checkpoint when the restart came.
  std::string expected = checkpoint_before;
  for (const CheckpointSeen& c : job_->checkpoints())
    if (c.at <= start.at) expected = c.path;
  const auto checkpoint_step = CheckpointStep(start.resumed_from);
  if (start.resumed_from.empty()) {
    drill.verdict = Verdict::kFail;
    drill.reason = "restarted without a checkpoint (FULCRUM_RESUME_FROM empty)";
  } else if (start.resumed_from != expected) {
    drill.verdict = Verdict::kFail;
    drill.reason =
        "resumed from " + start.resumed_from + ", not the last complete checkpoint " + expected;
  } else if (resumed_step <= 0) {
    drill.verdict = Verdict::kFail;
    drill.reason = "restarted from step 0 although FULCRUM_RESUME_FROM was " + start.resumed_from +
                   (checkpoint_step ? " (step " + std::to_string(*checkpoint_step) + ")" : "") +
                   ": the job cannot resume from its checkpoint";
  } else if (checkpoint_step && (start.first_step_sampled ? resumed_step < *checkpoint_step
                                                          : resumed_step != *checkpoint_step)) {
    drill.verdict = Verdict::kFail;
    drill.reason = "resumed at step " + std::to_string(resumed_step) + " but the checkpoint " +
                   start.resumed_from + " is step " + std::to_string(*checkpoint_step);
  } else {
    drill.verdict = Verdict::kPass;
    drill.reason = "resumed from " + start.resumed_from + " at step " +
                   std::to_string(resumed_step) + ", " + std::to_string(*drill.lost_steps) +
                   " step(s) lost";
  }
}

std::string Validation::DrillSkipReason(const std::string& fault) const {
  if (!job_failure_.empty()) return job_failure_;
  if (fault == "gpu-lost" && gpus_.size() < 2) {
    return "needs 2 or more GPUs to leave one out; the job has " + std::to_string(gpus_.size()) +
           " (--gpus, or --source sim --sim-gpus 2)";
  }
  if (fault == "network-cut" && !network_) {
    return network_unavailable_.empty() ? "no drill network" : network_unavailable_;
  }
  return "";
}

bool Validation::LoseGpu(int64_t pid, DrillResult& drill, InjectedFault& injected) {
  // The agent the supervisor asks before a restart sees the GPU fall off the bus (XID 79).
  const int lost_gpu = gpus_.back();
  injected.lost_gpu = lost_gpu;
  const std::string scenario = work_dir_ + "/gpu-lost.yaml";
  std::ofstream(scenario) << "- {at: 0s, gpu: " << lost_gpu << ", fault: \"xid:79\"}\n";
  AgentChildOptions agent;
  agent.fulcrum_binary = options_.fulcrum_binary;
  agent.source = "sim";
  agent.sim_gpus = *std::max_element(gpus_.begin(), gpus_.end()) + 1;
  agent.sim_scenario = scenario;
  agent.port = drill_agent_port_;
  agent.data_dir = work_dir_ + "/gpu-lost-agent";
  agent.interval = "0.2s";
  auto started = AgentChild::Start(agent, 30);
  if (!started.ok()) {
    drill.verdict = Verdict::kFail;
    drill.reason = "cannot start the sim agent that loses the GPU: " + started.status().message();
    return false;
  }
  injected.lost_gpu_agent = std::move(*started);
  const std::string url = injected.lost_gpu_agent->url();
  auto lost = [&] {
    auto health = supervise::GpuHealthFromAgent(url, 0.5);
    if (!health.ok()) return false;
    for (const auto& g : *health)
      if (g.index == lost_gpu && g.last_xid == supervise::kXidFallenOffTheBus) return true;
    return false;
  };
  if (!job_->PumpUntil(lost, 30)) {
    drill.verdict = Verdict::kFail;
    drill.reason = "the sim agent did not report XID 79 on GPU " + std::to_string(lost_gpu);
    return false;
  }
  injected.t0 = Now();
  ::kill(static_cast<pid_t>(pid), SIGKILL);  // a lost GPU ends the process that used it
  injected.detect = "^ALERT gpu_unhealthy";
  return true;
}

bool Validation::InjectFault(const std::string& fault, int64_t pid, DrillResult& drill,
                             InjectedFault& injected) {
  injected.t0 = Now();
  if (fault == "crash") {
    ::kill(static_cast<pid_t>(pid), SIGKILL);
    injected.detect = "^killed by SIGKILL";
  } else if (fault == "preemption-notice") {
    notice_->Raise();
    injected.detect = R"(^stopping \(preemption notice)";
  } else if (fault == "sigterm") {
    job_->SignalSupervisor(SIGTERM);
    injected.detect = R"(^stopping \(received SIGTERM)";
  } else if (fault == "gpu-lost") {
    return LoseGpu(pid, drill, injected);
  } else if (fault == "network-cut") {
    Status down = network_->SetLink(false);
    if (!down.ok()) {
      drill.reason = "cannot take the link down: " + down.message();
      return false;
    }
    injected.t0 = Now();
    job_->Pump(options_.network_cut_seconds);
    Status up = network_->SetLink(true);
    if (!up.ok()) {
      drill.verdict = Verdict::kFail;
      drill.reason = "cannot bring the link up again: " + up.message();
      return false;
    }
    injected.detect = ", restart ";
  }
  return true;
}

bool Validation::RodeOutNetworkCut(DrillResult& drill, size_t starts_before, int64_t step_before) {
  const int64_t step_up = job_->last_step().value_or(0);
  job_->PumpUntil(
      [&] {
        return job_->starts().size() > starts_before || job_->last_step().value_or(0) > step_up ||
               !job_->running();
      },
      options_.drill_timeout_seconds);
  if (job_->starts().size() != starts_before) return false;  // it restarted: check the resume
  if (job_->last_step().value_or(0) > step_up) {
    drill.verdict = Verdict::kPass;
    drill.lost_steps = 0;
    drill.reason = "rode it out: the link was down " + Seconds(options_.network_cut_seconds) +
                   ", no restart, steps went on (" + std::to_string(step_before) + " -> " +
                   std::to_string(*job_->last_step()) + ")";
  } else {
    drill.verdict = Verdict::kFail;
    drill.reason = "no progress and no restart within " + Seconds(options_.drill_timeout_seconds) +
                   " after the link came back";
  }
  return true;
}

void Validation::CheckGpuLeftOut(DrillResult& drill, int lost_gpu) {
  std::vector<int> keep;
  for (int g : gpus_)
    if (g != lost_gpu) keep.push_back(g);
  const auto visible = VisibleDevices(job_->starts().back().pid);
  if (visible && *visible != JoinInts(keep)) {
    drill.verdict = Verdict::kFail;
    drill.reason = "the restart got CUDA_VISIBLE_DEVICES=" + *visible + ", expected " +
                   JoinInts(keep) + " (GPU " + std::to_string(lost_gpu) + " left out)";
  } else {
    drill.reason +=
        "; restarted on GPU(s) " + JoinInts(keep) + " without lost GPU " + std::to_string(lost_gpu);
    gpus_ = keep;
  }
}

DrillResult Validation::Drill(const std::string& fault) {
  DrillResult drill;
  drill.fault = fault;
  drill.verdict = Verdict::kSkipped;
  if (std::string why = DrillSkipReason(fault); !why.empty()) {
    drill.reason = why;
    return drill;
  }
  if (std::string why = WaitForDrillable(); !why.empty()) {
    drill.verdict = Verdict::kFail;
    drill.reason = why;
    if (!job_->running()) job_failure_ = "the job is not running";
    return drill;
  }
  const size_t starts_before = job_->starts().size();
  const int64_t step_before = job_->last_step().value_or(0);
  const std::string checkpoint_before = job_->latest_checkpoint();
  InjectedFault injected;  // holds the gpu-lost drill's sim agent until the drill ends
  if (!InjectFault(fault, job_->starts().back().pid, drill, injected)) return drill;
  const double t0 = injected.t0;
  // Detection: the supervisor's event.
  const std::regex detect_re(injected.detect);
  auto detected = [&]() -> std::optional<double> {
    for (const RunEvent& e : job_->events())
      if (e.at >= t0 && std::regex_search(e.text, detect_re)) return e.at;
    return std::nullopt;
  };
  if (fault == "network-cut") {
    if (RodeOutNetworkCut(drill, starts_before, step_before)) return drill;
  } else if (!job_->PumpUntil([&] { return detected().has_value(); },
                              options_.drill_timeout_seconds)) {
    drill.verdict = Verdict::kFail;
    drill.reason = "the supervisor did not react within " +
                   Seconds(options_.drill_timeout_seconds) + ": " + job_->Tail(4);
    if (fault == "preemption-notice") notice_->Clear();
    return drill;
  }
  if (auto at = detected()) drill.detect_seconds = *at - t0;
  if (fault == "preemption-notice" || fault == "sigterm") {
    const bool again = RestartStoppedRun(drill, t0);
    notice_->Clear();
    if (!again) {
      if (!job_->running()) job_failure_ = "fulcrum run is not running after the " + fault;
      return drill;
    }
  }
  CheckResume(drill, t0, starts_before, step_before, checkpoint_before);
  if (fault == "gpu-lost" && drill.verdict == Verdict::kPass) {
    CheckGpuLeftOut(drill, injected.lost_gpu);
  }
  return drill;
}

}  // namespace fulcrum::validate
