// LiveState: what the sampler thread publishes for the HTTP thread(s) to read: the latest
// snapshot, the idle detector's status, the agent's own counters, and requests back (cancel a
// pending idle release). Every member function is thread-safe (one mutex, copies out).
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>

#include "telemetry/gpu_sample.h"

namespace fulcrum::agent {

struct IdleStatus {
  bool enabled = false;
  bool dry_run = true;
  bool idle = false;
  double idle_seconds = 0;
  double threshold_seconds = 0;
  std::optional<double> release_in_seconds;  // nullopt while not idle
  bool warned = false;                       // the warning webhook went out
  bool released = false;                     // the release command ran (or was dry-run logged)
};

struct AgentCounters {
  uint64_t samples_total = 0;        // ticks sampled
  uint64_t sample_errors_total = 0;  // ticks whose source failed
  uint64_t store_errors_total = 0;   // failed store writes (samples kept in memory and retried)
  uint64_t transitions_total = 0;    // alert state changes
  uint64_t notifications_total = 0;  // notifications enqueued
  double last_sample_seconds = 0;    // wall time the last tick's Sample() took
  std::optional<size_t> outbox_pending;
};

class LiveState {
 public:
  void Publish(telemetry::GpuSnapshot snapshot, const AgentCounters& counters);
  void SetIdle(const IdleStatus& idle);
  telemetry::GpuSnapshot Latest() const;
  AgentCounters Counters() const;
  IdleStatus Idle() const;
  // Set by POST /v1/idle/cancel, consumed by the sampler thread.
  void RequestIdleCancel();
  bool TakeIdleCancel();

 private:
  mutable std::mutex mutex_;
  telemetry::GpuSnapshot latest_;  // guarded by mutex_
  AgentCounters counters_;         // guarded by mutex_
  IdleStatus idle_;                // guarded by mutex_
  bool cancel_requested_ = false;  // guarded by mutex_
};

}  // namespace fulcrum::agent
