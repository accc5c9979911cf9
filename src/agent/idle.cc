#include "agent/idle.h"

#include <spawn.h>
#include <sys/wait.h>

#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstring>

extern char** environ;

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

ReleaseRunner::~ReleaseRunner() { Poll(); }

Status ReleaseRunner::Run(const std::vector<std::string>& argv, bool dry_run) {
  std::string shown;
  for (const auto& a : argv) shown += (shown.empty() ? "" : " ") + a;
  if (dry_run) {
    spdlog::warn("idle release (dry run): would run: {}", shown);
    return Status::Ok();
  }
  Poll();
  if (child_ > 0) return Status::Unavailable("the previous release command is still running");
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  int rc = posix_spawnp(&pid, args[0], nullptr, nullptr, args.data(), environ);
  if (rc != 0) {
    return Status::IoError("cannot run release command '" + argv[0] + "': " + std::strerror(rc));
  }
  spdlog::warn("idle release: ran {} (pid {})", shown, pid);
  child_ = pid;
  return Status::Ok();
}

void ReleaseRunner::Poll() {
  if (child_ <= 0) return;
  int status = 0;
  pid_t done = waitpid(child_, &status, WNOHANG);
  if (done == child_) {
    if (WIFEXITED(status) && WEXITSTATUS(status) != 0) {
      spdlog::error("idle release command exited with status {}", WEXITSTATUS(status));
    }
    child_ = -1;
  } else if (done < 0) {
    child_ = -1;
  }
}

}  // namespace fulcrum::agent
