// One job under validation: `fulcrum run` (this binary) as a long-lived child of a
// supervise::PosixProcessRunner, with its output read line by line and turned into what the
// drills check: the steps the job reports (the progress regex), the checkpoints the supervisor
// saw complete, each start of the training process and what it resumed from, the supervisor's
// restarts and stops. A stopped `fulcrum run` (exit 75) can be started again with the same
// arguments: it continues the job. Times are seconds on the Clock's monotonic scale. Used from
// one thread.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/status.h"
#include "supervise/process.h"

namespace fulcrum::validate {

// A start of the training process, from the supervisor's "started pid N ..." event.
struct TrainingStart {
  double at = 0;
  int64_t pid = 0;
  std::string resumed_from;  // "" = a fresh start
  // The first step the process reported after this start (nullopt: none yet).
  std::optional<int64_t> first_step;
  std::optional<double> first_step_at;
  // The first step came from the sampled JSON heartbeat, which may skip steps: it is then at
  // least, not exactly, the resumed step plus one.
  bool first_step_sampled = false;
};

struct StepSeen {
  double at = 0;
  int64_t step = 0;
};

struct CheckpointSeen {
  double at = 0;
  std::string path;
  bool after_request = false;  // the supervisor timed it from a request it made
};

struct RunEvent {
  double at = 0;
  std::string text;  // without the "fulcrum run: " prefix
};

class JobSession {
 public:
  // `run_argv`: the whole `fulcrum run ...` command line (argv[0] = this binary). `progress`:
  // the regex whose first group is the step. `log`: each line, for the user (may be empty).
  // `heartbeat_file`: the job's FULCRUM_HEARTBEAT_FILE; while no output line has matched the
  // regex, a {"step": N} written there (the JSON heartbeat `fulcrum run` reads) is the step.
  JobSession(std::vector<std::string> run_argv, const std::string& progress_regex,
             std::string heartbeat_file, const Clock& clock,
             std::function<void(const std::string&)> log);

  // Polled while pumping: true ends every wait early (the user interrupted validate), until
  // SetInterruptible(false) (the final clean stop). May be empty.
  void SetInterrupt(std::function<bool()> interrupted) { interrupted_ = std::move(interrupted); }
  void SetInterruptible(bool on) { interruptible_ = on; }

  // Starts `fulcrum run` (again, after it ended). kInvalidInput for a bad regex.
  Status Start();
  // Reads output until `done` holds or `seconds` pass (or `fulcrum run` ended and `done` still
  // fails); returns `done`'s last answer.
  bool PumpUntil(const std::function<bool()>& done, double seconds);
  void Pump(double seconds);

  bool running() const { return runner_.running(); }
  // How the last `fulcrum run` ended (nullopt while it runs or before the first start).
  const std::optional<supervise::ChildExit>& run_exit() const { return run_exit_; }
  // The signal goes to the `fulcrum run` process only (as a scheduler sends it).
  void SignalSupervisor(int signal);

  const std::vector<TrainingStart>& starts() const { return starts_; }
  const std::vector<StepSeen>& steps() const { return steps_; }
  const std::vector<CheckpointSeen>& checkpoints() const { return checkpoints_; }
  const std::vector<RunEvent>& events() const { return events_; }
  std::optional<int64_t> last_step() const;
  // The newest complete checkpoint the supervisor knows ("" = none).
  const std::string& latest_checkpoint() const { return latest_checkpoint_; }
  // The last lines of output (job and supervisor), newest last, for reasons.
  std::string Tail(size_t lines) const;
  double Now() const { return clock_.MonotonicSeconds(); }

 private:
  void OnLine(supervise::Stream stream, std::string_view line);
  void RecordStep(double at, int64_t step, bool sampled);
  void PollHeartbeat();

  std::vector<std::string> run_argv_;
  std::string progress_text_;
  std::optional<std::regex> progress_;
  std::string heartbeat_file_;
  double heartbeat_mtime_ = 0;
  size_t progress_lines_ = 0;  // output lines that matched the regex
  // The first step a restarted job reported before `fulcrum run` said it started it (the child
  // can print steps before the parent's "started" line is read): an index into steps_.
  std::optional<size_t> unclaimed_restart_;
  const Clock& clock_;
  std::function<void(const std::string&)> log_;
  std::function<bool()> interrupted_;
  bool interruptible_ = true;
  bool Interrupted() const { return interruptible_ && interrupted_ && interrupted_(); }
  supervise::PosixProcessRunner runner_;
  std::optional<supervise::ChildExit> run_exit_;
  std::vector<TrainingStart> starts_;
  std::vector<StepSeen> steps_;
  std::vector<CheckpointSeen> checkpoints_;
  std::vector<RunEvent> events_;
  std::string latest_checkpoint_;
  std::deque<std::string> tail_;
};

}  // namespace fulcrum::validate
