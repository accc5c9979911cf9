// Pure decisions of the supervisor, with no I/O: the restart policy (exponential backoff, restart
// limit, exit codes declared final, crash-loop detection) and the checkpoint interval (Daly,
// from spot/interval.h). Times are seconds on the supervisor's monotonic clock. Values, not
// thread-safe to mutate.
#pragma once

#include <deque>
#include <optional>
#include <string>
#include <vector>

namespace fulcrum::supervise {

struct RestartPolicyOptions {
  int max_restarts = 10;               // restarts after the first start; < 0 = unlimited
  std::vector<int> final_exit_codes;   // exits with these codes end the job (no restart)
  double backoff_initial_seconds = 1;  // first wait; doubles each failure
  double backoff_max_seconds = 300;
  int crash_loop_failures = 3;             // N failures ...
  double crash_loop_window_seconds = 600;  // ... within M seconds without a new checkpoint
};

enum class RestartVerdict { kRestart, kFinalExit, kTooManyRestarts, kCrashLoop };

struct RestartDecision {
  RestartVerdict verdict = RestartVerdict::kRestart;
  double wait_seconds = 0;  // backoff before the restart (kRestart only)
  std::string reason;       // human text: "exit 1, restart 2 of 10 in 4 s"
};

class RestartPolicy {
 public:
  explicit RestartPolicy(RestartPolicyOptions options) : options_(std::move(options)) {}

  // A failure (non-zero exit or a signal) at time `now`. `exit_code` nullopt = killed by signal.
  RestartDecision OnFailure(double now, std::optional<int> exit_code, const std::string& what);
  // A new complete checkpoint appeared at `now`: the job makes progress, so earlier failures no
  // longer count towards a crash loop and the backoff starts again from its initial value.
  void OnCheckpoint(double now);
  int restarts() const { return restarts_; }

 private:
  RestartPolicyOptions options_;
  int restarts_ = 0;
  int consecutive_failures_ = 0;
  std::deque<double> recent_failures_;  // failure times since the last checkpoint
};

// Mean time between failures estimated from `failures` seen in `observed_seconds` of running,
// blended with a prior of `prior_mtbf_seconds` worth one failure-free period:
// M = (prior + observed) / (1 + failures).
double EstimateMtbfSeconds(double prior_mtbf_seconds, double observed_seconds, int failures);

}  // namespace fulcrum::supervise
