// LiveState: what the sampler thread publishes for the HTTP thread(s) to read (the server's
// server::AgentStateView): the latest snapshot, the idle detector's status, the agent's own
// counters, host facts of the data dir's disk, and requests back (cancel a pending idle
// release). Every member function is thread-safe (one mutex, copies out).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "agent/host.h"
#include "core/mutex.h"
#include "server/agent_state.h"
#include "telemetry/gpu_sample.h"

namespace fulcrum::agent {

using server::AgentCounters;
using server::IdleStatus;

class LiveState final : public server::AgentStateView {
 public:
  explicit LiveState(std::string disk_path = ".") : disk_path_(std::move(disk_path)) {}
  void Publish(telemetry::GpuSnapshot snapshot, const AgentCounters& counters);
  void SetIdle(const IdleStatus& idle);
  telemetry::GpuSnapshot Latest() const override;
  AgentCounters Counters() const override;
  IdleStatus Idle() const override;
  server::HostInfo Host() override;
  // Set by POST /v1/idle/cancel, consumed by the sampler thread.
  void RequestIdleCancel() override;
  bool TakeIdleCancel();

 private:
  const std::string disk_path_;
  HostProbe host_probe_;
  mutable Mutex mutex_;
  telemetry::GpuSnapshot latest_ GUARDED_BY(mutex_);
  AgentCounters counters_ GUARDED_BY(mutex_);
  IdleStatus idle_ GUARDED_BY(mutex_);
  bool cancel_requested_ GUARDED_BY(mutex_) = false;
};

}  // namespace fulcrum::agent
