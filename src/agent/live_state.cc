#include "agent/live_state.h"

namespace fulcrum::agent {

void LiveState::Publish(telemetry::GpuSnapshot snapshot, const AgentCounters& counters) {
  std::lock_guard<std::mutex> lock(mutex_);
  latest_ = std::move(snapshot);
  counters_ = counters;
}

void LiveState::SetIdle(const IdleStatus& idle) {
  std::lock_guard<std::mutex> lock(mutex_);
  idle_ = idle;
}

telemetry::GpuSnapshot LiveState::Latest() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return latest_;
}

AgentCounters LiveState::Counters() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return counters_;
}

IdleStatus LiveState::Idle() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return idle_;
}

void LiveState::RequestIdleCancel() {
  std::lock_guard<std::mutex> lock(mutex_);
  cancel_requested_ = true;
}

bool LiveState::TakeIdleCancel() {
  std::lock_guard<std::mutex> lock(mutex_);
  bool requested = cancel_requested_;
  cancel_requested_ = false;
  return requested;
}

}  // namespace fulcrum::agent
