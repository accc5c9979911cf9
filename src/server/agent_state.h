// The read-only view of a running agent that the HTTP server serves (/v1/gpus, /v1/idle,
// /v1/host, /metrics): the plain values it shows and the interface it reads them through. The
// server owns this contract; agent::LiveState implements it (the server includes nothing from
// agent/). Implementations must be thread-safe: HTTP worker threads call it concurrently with
// the sampler thread publishing. RequestIdleCancel() is the one request back (POST
// /v1/idle/cancel), consumed by the sampler.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "telemetry/gpu_sample.h"

namespace fulcrum::server {

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
  // Why the agent runs degraded ("" = it does not), for /v1/health: e.g. agent.db refuses writes
  // and alerts are delivered from memory.
  std::string degraded;
};

// Host facts for /v1/host. Unknown values are nullopt.
struct HostInfo {
  std::string hostname;
  std::optional<double> cpu_utilization_pct;  // since the previous read; nullopt on the first
  std::optional<double> memory_used_bytes;
  std::optional<double> memory_total_bytes;
  std::string disk_path;
  std::optional<double> disk_free_bytes;
  std::optional<double> disk_total_bytes;
};

class AgentStateView {
 public:
  virtual ~AgentStateView() = default;
  virtual telemetry::GpuSnapshot Latest() const = 0;
  virtual AgentCounters Counters() const = 0;
  virtual IdleStatus Idle() const = 0;
  // Host facts now (CPU utilization since the previous call), disk space of the data dir.
  virtual HostInfo Host() = 0;
  // Asks the sampler to postpone a pending idle release.
  virtual void RequestIdleCancel() = 0;
};

}  // namespace fulcrum::server
