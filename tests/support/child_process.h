// The one long-lived child of the end-to-end tests: a program started through
// core/subprocess's SpawnToFiles in its own process group, stdout and stderr in files (so a
// chatty peer never blocks on a full pipe), reaped here, and stopped on destruction (SIGTERM,
// then SIGKILL after a grace; a grace of 0 = SIGKILL at once). The peers (a `fulcrum agent`,
// Prometheus, Alertmanager) are built on it in support/agent_process.h. Not thread-safe; one
// owner each.
#pragma once

#include <sys/types.h>

#include <map>
#include <string>
#include <vector>

namespace fulcrum::testing {

// Where a child's output goes; the same path twice = one file for both streams.
struct ChildLogs {
  std::string out_path;
  std::string err_path;
};

class ChildProcess {
 public:
  // `program` is looked up in PATH when it has no '/'. `log_prefix`.out / .err receive output;
  // stopped with SIGTERM, SIGKILL after 10 s.
  ChildProcess(const std::string& program, const std::vector<std::string>& args,
               const std::string& log_prefix, const std::map<std::string, std::string>& env = {});
  ChildProcess(const std::string& program, const std::vector<std::string>& args, ChildLogs logs,
               const std::map<std::string, std::string>& env, double stop_grace_seconds);
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  pid_t pid() const { return pid_; }
  // True once it has ended (reaped here), or when it never started.
  bool Exited();
  // Its exit code, or 128+N when signal N killed it; -1 while it runs.
  int exit_code() const { return exit_code_; }
  // Sends `signal` to it (not its group); no-op once it has ended.
  void Signal(int signal);
  // Sends `signal` and waits up to `seconds` for the end; exit_code().
  int Stop(int signal, double seconds = 10);
  std::string out() const;
  std::string err() const;

 private:
  ChildLogs logs_;
  double stop_grace_seconds_ = 10;
  pid_t pid_ = -1;
  int exit_code_ = -1;
};

// A real peer (Alertmanager) with stdout and stderr in one log: SIGTERM, then SIGKILL after
// 5 s, on destruction.
class PeerProcess : public ChildProcess {
 public:
  PeerProcess(const std::string& program, const std::vector<std::string>& args,
              const std::string& log_path)
      : ChildProcess(program, args, ChildLogs{log_path, log_path}, {}, 5) {}
  std::string log() const { return out(); }
};

}  // namespace fulcrum::testing
