#include "agent/live_state.h"

namespace fulcrum::agent {

void LiveState::Publish(telemetry::GpuSnapshot snapshot, const AgentCounters& counters) {
  MutexLock lock(mutex_);
  latest_ = std::move(snapshot);
  counters_ = counters;
}

void LiveState::SetIdle(const IdleStatus& idle) {
  MutexLock lock(mutex_);
  idle_ = idle;
}

telemetry::GpuSnapshot LiveState::Latest() const {
  MutexLock lock(mutex_);
  return latest_;
}

AgentCounters LiveState::Counters() const {
  MutexLock lock(mutex_);
  return counters_;
}

IdleStatus LiveState::Idle() const {
  MutexLock lock(mutex_);
  return idle_;
}

server::HostInfo LiveState::Host() { return host_probe_.Read(disk_path_); }

void LiveState::RequestIdleCancel() {
  MutexLock lock(mutex_);
  cancel_requested_ = true;
}

bool LiveState::TakeIdleCancel() {
  MutexLock lock(mutex_);
  bool requested = cancel_requested_;
  cancel_requested_ = false;
  return requested;
}

}  // namespace fulcrum::agent
