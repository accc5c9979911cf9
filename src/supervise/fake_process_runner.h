// A fake ProcessRunner for unit tests (header only, not part of the library's objects): a child
// that "runs" until signalled or told to exit, on a ManualClock that each Wait advances by its
// timeout; `on_tick` and `on_signal` let a test act at clock times. Records every start (with its
// environment) and every signal.
#pragma once

#include <signal.h>

#include <functional>
#include <optional>
#include <utility>
#include <vector>

#include "core/clock.h"
#include "supervise/process.h"

namespace fulcrum::supervise {

// A child that runs until signalled or told to exit; `on_tick` lets a test act at clock times.
class FakeRunner final : public ProcessRunner {
 public:
  explicit FakeRunner(ManualClock& clock) : clock_(clock) {}
  Status Start(const ChildSpec& spec) override {
    starts.push_back(spec);
    start_times.push_back(clock_.MonotonicSeconds());
    running_ = true;
    if (exit_on_start) pending_ = exit_on_start;
    return Status::Ok();
  }
  bool running() const override { return running_; }
  int64_t pid() const override {
    return running_ ? 1000 + static_cast<int64_t>(starts.size()) : -1;
  }
  void SignalGroup(int signal) override {
    signals.push_back({signal, clock_.MonotonicSeconds()});
    if (!running_) return;
    if (signal == SIGKILL || (signal == SIGTERM && !ignore_term)) {
      ChildExit e;
      e.signal = signal;
      pending_ = e;
    }
    if (on_signal) on_signal(signal);
  }
  void Signal(int signal, SignalTarget target) override {
    if (target == SignalTarget::kNone) return;
    targets.push_back(target);
    SignalGroup(signal);
  }
  std::optional<ChildExit> Wait(double timeout, const LineSink& sink) override {
    clock_.Advance(timeout);
    if (on_tick) on_tick(clock_.MonotonicSeconds(), sink);
    if (running_ && pending_) {
      running_ = false;
      auto e = pending_;
      pending_.reset();
      return e;
    }
    return std::nullopt;
  }
  void Exit(ChildExit e) { pending_ = e; }

  std::vector<ChildSpec> starts;
  std::vector<double> start_times;
  std::vector<std::pair<int, double>> signals;
  std::vector<SignalTarget> targets;  // of Signal calls
  std::optional<ChildExit> exit_on_start;
  bool ignore_term = false;
  std::function<void(int)> on_signal;
  std::function<void(double, const LineSink&)> on_tick;

 private:
  ManualClock& clock_;
  bool running_ = false;
  std::optional<ChildExit> pending_;
};

}  // namespace fulcrum::supervise
