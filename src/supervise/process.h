// The one way to start a long-lived child (short helpers use core/subprocess's RunCapture): one
// child in its own process group with an argv (never a shell string) and an environment; signal
// its group, wait for its output lines or its exit. Its output goes to pipes read by Wait, or to a
// file. A detached child (the local queue's worker) gets its own session, is reparented to init
// and is never waited for. Start reports a command that cannot be executed (not found, not
// executable) as an error rather than as an exit code. PosixProcessRunner is the real one
// (fork/execvpe, pipes, poll); tests use a fake. A runner holds at most one child at a time and
// is used from one thread.
// The job must not outlive its supervisor, kill -9 included: the child has PR_SET_PDEATHSIG, and
// a small keeper process (forked, not exec'd, outside the job's group) SIGKILLs the job's whole
// process group when its pipe from the runner closes, which the kernel does when the supervisor
// dies. The child execs only once its keeper runs, so no kill finds the job without one. Only a
// kill of the keeper itself as well (e.g. SIGKILL to the supervisor's own group) leaves the group
// running: EndStaleProcessGroup lets the next supervisor end it.
#pragma once

#include <sys/types.h>

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace fulcrum::supervise {

struct ChildSpec {
  std::vector<std::string> argv;
  std::map<std::string, std::string> env;  // set on top of the supervisor's environment
  std::string cwd;                         // "" = inherit
  // "" = stdout/stderr to pipes that Wait reads line by line; else both appended to this file
  // (and stdin from /dev/null).
  std::string output_file;
  // Own session, reparented to init, outlives the runner; Start returns once it has exec'd and
  // the runner holds no child afterwards. Implies stdin from /dev/null.
  bool detached = false;
};

struct ChildExit {
  std::optional<int> exit_code;  // set when the child exited
  std::optional<int> signal;     // set when a signal killed it
  bool success() const { return exit_code && *exit_code == 0; }
  std::string Describe() const;  // "exit 3", "killed by SIGKILL"
};

enum class Stream { kStdout, kStderr };

// Who gets a checkpoint-request signal: nobody, the process fulcrum started, its whole process
// group, or every process of the group but the one fulcrum started (a launcher's workers).
enum class SignalTarget { kNone, kLeader, kGroup, kChildren };
using LineSink = std::function<void(Stream, std::string_view line)>;

class ProcessRunner {
 public:
  virtual ~ProcessRunner() = default;
  // NotFound / PermissionDenied-like errors when argv[0] cannot be executed.
  virtual Status Start(const ChildSpec& spec) = 0;
  virtual bool running() const = 0;
  virtual int64_t pid() const = 0;
  // The child's start time in clock ticks since boot (/proc/PID/stat field 22): with pid() it
  // identifies the job's process group after a supervisor's death. nullopt when unknown.
  virtual std::optional<int64_t> start_ticks() const { return std::nullopt; }
  // Sends `signal` to the child's whole process group (no-op without a child).
  virtual void SignalGroup(int signal) = 0;
  // Sends `signal` to `target` (no-op without a child or for kNone).
  virtual void Signal(int signal, SignalTarget target) = 0;
  // Waits up to `timeout_seconds` for output (delivered line by line to `sink`) or the child's
  // exit, whichever comes first. Returns the exit once, when the child has ended. Without a child
  // it just waits out the timeout.
  virtual std::optional<ChildExit> Wait(double timeout_seconds, const LineSink& sink) = 0;
};

class PosixProcessRunner final : public ProcessRunner {
 public:
  PosixProcessRunner() = default;
  ~PosixProcessRunner() override;
  PosixProcessRunner(const PosixProcessRunner&) = delete;
  PosixProcessRunner& operator=(const PosixProcessRunner&) = delete;

  Status Start(const ChildSpec& spec) override;
  bool running() const override { return pid_ > 0; }
  int64_t pid() const override { return pid_; }
  std::optional<int64_t> start_ticks() const override;
  void SignalGroup(int signal) override;
  void Signal(int signal, SignalTarget target) override;
  std::optional<ChildExit> Wait(double timeout_seconds, const LineSink& sink) override;

 private:
  void ReadAvailable(int index, const LineSink& sink);
  void FlushPartial(int index, const LineSink& sink);
  void StartKeeper(pid_t job_pgid);
  void ReleaseKeeper();
  pid_t pid_ = -1;
  pid_t keeper_pid_ = -1;
  int keeper_fd_ = -1;     // write end of the keeper's pipe; closing it ends the job's group
  int fds_[2] = {-1, -1};  // stdout, stderr read ends
  std::string partial_[2];
};

// Start time of process `pid` in clock ticks since boot; nullopt when there is no such process.
std::optional<int64_t> ProcessStartTicks(int64_t pid);

// SIGKILLs what is left of a job's process group `pgid` whose leader started at
// `leader_start_ticks` (recorded by a supervisor that died without ending it). Processes that
// are not that group's are left alone: a live leader pid with another start time (the pid was
// reused), members that started before the leader. Returns how many processes were signalled.
int EndStaleProcessGroup(int64_t pgid, int64_t leader_start_ticks);

// The live processes of process group `pgid` (a job's: its leader and whatever it started that
// kept the group), from /proc.
std::vector<int64_t> ProcessGroupPids(int64_t pgid);

std::string SignalName(int signal);
// "leader", "group", "children", "none".
Result<SignalTarget> ParseSignalTarget(const std::string& text);

}  // namespace fulcrum::supervise
