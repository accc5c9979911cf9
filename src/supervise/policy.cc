#include "supervise/policy.h"

#include <algorithm>
#include <cmath>

namespace fulcrum::supervise {

RestartDecision RestartPolicy::OnFailure(double now, std::optional<int> exit_code,
                                         const std::string& what) {
  RestartDecision d;
  if (exit_code && std::find(options_.final_exit_codes.begin(), options_.final_exit_codes.end(),
                             *exit_code) != options_.final_exit_codes.end()) {
    d.verdict = RestartVerdict::kFinalExit;
    d.reason = what + " (declared final)";
    return d;
  }
  recent_failures_.push_back(now);
  while (!recent_failures_.empty() &&
         now - recent_failures_.front() > options_.crash_loop_window_seconds) {
    recent_failures_.pop_front();
  }
  if (options_.crash_loop_failures > 0 &&
      static_cast<int>(recent_failures_.size()) >= options_.crash_loop_failures) {
    d.verdict = RestartVerdict::kCrashLoop;
    d.reason = what + ": " + std::to_string(recent_failures_.size()) + " failures within " +
               std::to_string(static_cast<int>(options_.crash_loop_window_seconds)) +
               " s without a new checkpoint";
    return d;
  }
  if (options_.max_restarts >= 0 && restarts_ >= options_.max_restarts) {
    d.verdict = RestartVerdict::kTooManyRestarts;
    d.reason = what + ": restart limit " + std::to_string(options_.max_restarts) + " reached";
    return d;
  }
  d.wait_seconds = std::min(
      options_.backoff_max_seconds,
      options_.backoff_initial_seconds * std::pow(2.0, static_cast<double>(consecutive_failures_)));
  ++consecutive_failures_;
  ++restarts_;
  d.verdict = RestartVerdict::kRestart;
  d.reason = what + ", restart " + std::to_string(restarts_) +
             (options_.max_restarts >= 0 ? " of " + std::to_string(options_.max_restarts) : "");
  return d;
}

void RestartPolicy::OnCheckpoint(double /*now*/) {
  recent_failures_.clear();
  consecutive_failures_ = 0;
}

double EstimateMtbfSeconds(double prior_mtbf_seconds, double observed_seconds, int failures) {
  return (prior_mtbf_seconds + observed_seconds) / (1 + std::max(0, failures));
}

}  // namespace fulcrum::supervise
