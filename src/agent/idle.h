// Idle detection and release. A machine is idle while every GPU is under the utilization and
// memory thresholds and no supervised job runs or heartbeats; after `after_seconds` of that it
// is released by running the configured command (argv, no shell), preceded by a warning
// `warn_before_seconds` earlier. Dry run (the default) logs instead of running. IdleDetector is a
// pure state machine on monotonic seconds (tests drive it with numbers); ReleaseRunner runs the
// command through RunCapture (with a timeout) on a helper thread and collects its result. Neither
// is thread-safe: the sampler thread owns both.
#pragma once

#include <future>
#include <optional>
#include <string>
#include <vector>

#include "agent/config.h"
#include "agent/live_state.h"
#include "core/status.h"
#include "core/subprocess.h"
#include "telemetry/gpu_sample.h"

namespace fulcrum::agent {

enum class IdleAction { kNone, kWarn, kRelease, kBusyAgain };

// Whether one GPU is idle: utilization and memory known and under the thresholds.
bool GpuIsIdle(const telemetry::GpuSample& sample, const IdleConfig& config);

class IdleDetector {
 public:
  explicit IdleDetector(IdleConfig config) : config_(std::move(config)) {}
  // Feeds one tick; returns what to do now (each of warn/release once per idle period;
  // kBusyAgain once when activity returns after a warning).
  IdleAction Update(const telemetry::GpuSnapshot& snapshot, bool job_active, double now);
  // Postpones a release: the idle period restarts at `now` (POST /v1/idle/cancel).
  IdleAction Cancel(double now);
  IdleStatus Status(double now) const;

 private:
  IdleConfig config_;
  std::optional<double> idle_since_;
  bool warned_ = false;
  bool released_ = false;
};

// Runs a release command now and waits for it (no shell; killed after the release timeout):
// NotFound when argv[0] cannot be run. ReleaseRunner runs it on a helper thread; `bench
// --release-on-reject --arm` in the foreground.
Result<CaptureResult> RunReleaseCommand(const std::vector<std::string>& argv);
// The argv as one line for logs and dry runs ("aws ec2 terminate-instances ...").
std::string ShowReleaseCommand(const std::vector<std::string>& argv);

class ReleaseRunner {
 public:
  ~ReleaseRunner();
  // Dry run: logs the argv. Otherwise starts it (no shell) and returns at once.
  Status Run(const std::vector<std::string>& argv, bool dry_run);
  // Collects a finished command; logs its exit status. Call every tick.
  void Poll();

 private:
  std::future<Result<CaptureResult>> pending_;
};

}  // namespace fulcrum::agent
