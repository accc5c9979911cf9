#include "support/child_process.h"

#include <signal.h>
#include <sys/wait.h>

#include "core/subprocess.h"
#include "support/run_binary.h"

namespace fulcrum::testing {

ChildProcess::ChildProcess(const std::string& program, const std::vector<std::string>& args,
                           const std::string& log_prefix,
                           const std::map<std::string, std::string>& env)
    : ChildProcess(program, args, ChildLogs{log_prefix + ".out", log_prefix + ".err"}, env, 10) {}

ChildProcess::ChildProcess(const std::string& program, const std::vector<std::string>& args,
                           ChildLogs logs, const std::map<std::string, std::string>& env,
                           double stop_grace_seconds)
    : logs_(std::move(logs)), stop_grace_seconds_(stop_grace_seconds) {
  std::vector<std::string> argv = {program};
  argv.insert(argv.end(), args.begin(), args.end());
  SpawnOptions options;
  options.out_path = logs_.out_path;
  options.err_path = logs_.err_path;
  options.env = env;
  auto pid = SpawnToFiles(argv, options);
  if (pid.ok()) pid_ = *pid;
}

ChildProcess::~ChildProcess() {
  if (Exited()) return;
  if (stop_grace_seconds_ > 0 && Stop(SIGTERM, stop_grace_seconds_) >= 0) return;
  kill(pid_, SIGKILL);
  int status = 0;
  waitpid(pid_, &status, 0);
}

bool ChildProcess::Exited() {
  if (pid_ <= 0 || exit_code_ >= 0) return true;
  int status = 0;
  if (waitpid(pid_, &status, WNOHANG) != pid_) return false;
  exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return true;
}

void ChildProcess::Signal(int signal) {
  if (!Exited()) kill(pid_, signal);
}

int ChildProcess::Stop(int signal, double seconds) {
  Signal(signal);
  PollUntil([&] { return Exited(); }, seconds, 0.05);
  return exit_code_;
}

std::string ChildProcess::out() const { return FileContents(logs_.out_path); }
std::string ChildProcess::err() const { return FileContents(logs_.err_path); }

}  // namespace fulcrum::testing
