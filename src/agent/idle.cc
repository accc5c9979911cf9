#include "agent/idle.h"

#include <spdlog/spdlog.h>

#include <chrono>

namespace fulcrum::agent {

bool GpuIsIdle(const telemetry::GpuSample& s, const IdleConfig& config) {
  if (!s.utilization_gpu_pct || *s.utilization_gpu_pct >= config.utilization_below_pct)
    return false;
  if (!s.memory_used_bytes || !s.memory_total_bytes || *s.memory_total_bytes <= 0) return false;
  return *s.memory_used_bytes / *s.memory_total_bytes < config.memory_below_ratio;
}

IdleAction IdleDetector::Update(const telemetry::GpuSnapshot& snapshot, bool job_active,
                                double now) {
  if (!config_.enabled) return IdleAction::kNone;
  bool idle = !snapshot.empty() && !job_active;
  for (const auto& s : snapshot) idle = idle && GpuIsIdle(s, config_);
  if (!idle) {
    bool was_warned = warned_;
    idle_since_.reset();
    warned_ = false;
    released_ = false;
    return was_warned ? IdleAction::kBusyAgain : IdleAction::kNone;
  }
  if (!idle_since_) idle_since_ = now;
  double idle_for = now - *idle_since_;
  if (!released_ && idle_for >= config_.after_seconds) {
    released_ = true;
    warned_ = true;
    return IdleAction::kRelease;
  }
  if (!warned_ && idle_for >= config_.after_seconds - config_.warn_before_seconds) {
    warned_ = true;
    return IdleAction::kWarn;
  }
  return IdleAction::kNone;
}

IdleAction IdleDetector::Cancel(double now) {
  bool was_warned = warned_;
  if (idle_since_) idle_since_ = now;
  warned_ = false;
  released_ = false;
  return was_warned ? IdleAction::kBusyAgain : IdleAction::kNone;
}

IdleStatus IdleDetector::Status(double now) const {
  IdleStatus s;
  s.enabled = config_.enabled;
  s.dry_run = config_.dry_run;
  s.idle = idle_since_.has_value();
  s.idle_seconds = idle_since_ ? now - *idle_since_ : 0;
  s.threshold_seconds = config_.after_seconds;
  if (idle_since_ && config_.enabled) {
    s.release_in_seconds = std::max(0.0, config_.after_seconds - s.idle_seconds);
  }
  s.warned = warned_;
  s.released = released_;
  return s;
}

namespace {
// A release command (a cloud CLI call, `shutdown`) that has not finished in this time is killed.
constexpr double kReleaseTimeoutSeconds = 120;

Status CheckReleaseCommand(const std::vector<std::string>& argv) {
  if (argv.empty() || !ProgramExists(argv[0])) {
    return Status::NotFound("cannot run release command '" + (argv.empty() ? "" : argv[0]) +
                            "': not found");
  }
  return Status::Ok();
}
}  // namespace

Result<CaptureResult> RunReleaseCommand(const std::vector<std::string>& argv) {
  FULCRUM_RETURN_IF_ERROR(CheckReleaseCommand(argv));
  CaptureOptions options;
  options.timeout_seconds = kReleaseTimeoutSeconds;
  return RunCapture(argv, options);
}

std::string ShowReleaseCommand(const std::vector<std::string>& argv) {
  std::string shown;
  for (const auto& a : argv) shown += (shown.empty() ? "" : " ") + a;
  return shown;
}

// The destructor of an std::async future waits for the command (bounded by its timeout).
ReleaseRunner::~ReleaseRunner() { Poll(); }

Status ReleaseRunner::Run(const std::vector<std::string>& argv, bool dry_run) {
  std::string shown = ShowReleaseCommand(argv);
  if (dry_run) {
    spdlog::warn("idle release (dry run): would run: {}", shown);
    return Status::Ok();
  }
  Poll();
  if (pending_.valid()) return Status::Unavailable("the previous release command is still running");
  FULCRUM_RETURN_IF_ERROR(CheckReleaseCommand(argv));
  pending_ = std::async(std::launch::async, [argv] { return RunReleaseCommand(argv); });
  spdlog::warn("idle release: ran {}", shown);
  return Status::Ok();
}

void ReleaseRunner::Poll() {
  if (!pending_.valid() ||
      pending_.wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
    return;
  }
  Result<CaptureResult> done = pending_.get();
  if (!done.ok()) {
    spdlog::error("idle release command failed: {}", done.status().message());
  } else if (done->timed_out) {
    spdlog::error("idle release command did not finish within {:.0f} s; killed",
                  kReleaseTimeoutSeconds);
  } else if (done->exit_code != 0) {
    spdlog::error("idle release command exited with status {}", done->exit_code);
  }
}

}  // namespace fulcrum::agent
