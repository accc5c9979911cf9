#include "supervise/process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

extern char** environ;

namespace fulcrum::supervise {

std::string SignalName(int signal) {
  const char* abbrev = sigabbrev_np(signal);
  return abbrev != nullptr ? std::string("SIG") + abbrev : "signal " + std::to_string(signal);
}

std::string ChildExit::Describe() const {
  if (exit_code) return "exit " + std::to_string(*exit_code);
  if (signal) return "killed by " + SignalName(*signal);
  return "unknown end";
}

PosixProcessRunner::~PosixProcessRunner() {
  if (pid_ > 0) {
    ::kill(-pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  for (int& fd : fds_) {
    if (fd >= 0) ::close(fd);
  }
}

Status PosixProcessRunner::Start(const ChildSpec& spec) {
  if (pid_ > 0) return Status::Internal("a child is already running");
  if (spec.argv.empty()) return Status::InvalidInput("no command given");
  // Build argv and envp before fork: the child may only call async-signal-safe functions.
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string entry = *e;
    std::string key = entry.substr(0, entry.find('='));
    if (spec.env.count(key) == 0) env_strings.push_back(std::move(entry));
  }
  for (const auto& [key, value] : spec.env) env_strings.push_back(key + "=" + value);
  std::vector<char*> argv, envp;
  for (const auto& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (auto& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);

  int out_pipe[2], err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0)
    return Status::IoError(std::string("pipe: ") + strerror(errno));
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
    ::close(out_pipe[0]);
    ::close(out_pipe[1]);
    return Status::IoError(std::string("pipe: ") + strerror(errno));
  }
  pid_t pid = ::fork();
  if (pid < 0) return Status::IoError(std::string("fork: ") + strerror(errno));
  if (pid == 0) {
    ::setpgid(0, 0);
    // If the supervisor dies (kill -9), its job must not run on unsupervised and unbilled.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    sigset_t all;
    sigemptyset(&all);
    ::sigprocmask(SIG_SETMASK, &all, nullptr);
    for (int sig : {SIGTERM, SIGINT, SIGUSR1, SIGUSR2, SIGHUP, SIGPIPE}) ::signal(sig, SIG_DFL);
    ::dup2(out_pipe[1], STDOUT_FILENO);
    ::dup2(err_pipe[1], STDERR_FILENO);
    if (!spec.cwd.empty() && ::chdir(spec.cwd.c_str()) != 0) _exit(126);
    ::execvpe(argv[0], argv.data(), envp.data());
    const char msg[] = "fulcrum run: cannot execute the command\n";
    (void)!::write(STDERR_FILENO, msg, sizeof msg - 1);
    _exit(127);
  }
  ::setpgid(pid, pid);  // also in the parent, so signals reach the group at once
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  fds_[0] = out_pipe[0];
  fds_[1] = err_pipe[0];
  for (int fd : fds_) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  pid_ = pid;
  return Status::Ok();
}

void PosixProcessRunner::SignalGroup(int signal) {
  if (pid_ > 0) ::kill(-pid_, signal);
}

void PosixProcessRunner::ReadAvailable(int index, const LineSink& sink) {
  char buf[65536];
  while (fds_[index] >= 0) {
    ssize_t n = ::read(fds_[index], buf, sizeof buf);
    if (n > 0) {
      partial_[index].append(buf, static_cast<size_t>(n));
      size_t start = 0, nl;
      while ((nl = partial_[index].find('\n', start)) != std::string::npos) {
        sink(index == 0 ? Stream::kStdout : Stream::kStderr,
             std::string_view(partial_[index]).substr(start, nl - start));
        start = nl + 1;
      }
      partial_[index].erase(0, start);
      continue;
    }
    if (n == 0) {  // EOF
      FlushPartial(index, sink);
      ::close(fds_[index]);
      fds_[index] = -1;
    }
    return;  // EAGAIN or an error
  }
}

void PosixProcessRunner::FlushPartial(int index, const LineSink& sink) {
  if (partial_[index].empty()) return;
  sink(index == 0 ? Stream::kStdout : Stream::kStderr, partial_[index]);
  partial_[index].clear();
}

std::optional<ChildExit> PosixProcessRunner::Wait(double timeout_seconds, const LineSink& sink) {
  const int timeout_ms = static_cast<int>(timeout_seconds * 1000);
  pollfd pfds[2];
  int count = 0;
  for (int i = 0; i < 2; ++i) {
    if (fds_[i] >= 0) pfds[count++] = {fds_[i], POLLIN, 0};
  }
  if (pid_ > 0 && count == 0) {
    // Output closed (or handed to a grandchild): poll the exit in short steps.
    ::poll(nullptr, 0, std::min(timeout_ms, 10));
  } else {
    ::poll(count > 0 ? pfds : nullptr, static_cast<nfds_t>(count), timeout_ms);
  }
  ReadAvailable(0, sink);
  ReadAvailable(1, sink);
  if (pid_ <= 0) return std::nullopt;
  int status = 0;
  pid_t done = ::waitpid(pid_, &status, WNOHANG);
  if (done != pid_) return std::nullopt;
  // Drain what is left in the pipes without blocking on grandchildren that keep them open.
  ReadAvailable(0, sink);
  ReadAvailable(1, sink);
  for (int i = 0; i < 2; ++i) {
    FlushPartial(i, sink);
    if (fds_[i] >= 0) {
      ::close(fds_[i]);
      fds_[i] = -1;
    }
  }
  // The group may outlive its leader; make sure nothing of this job keeps running.
  ::kill(-pid_, SIGKILL);
  pid_ = -1;
  ChildExit exit;
  if (WIFEXITED(status)) exit.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) exit.signal = WTERMSIG(status);
  return exit;
}

}  // namespace fulcrum::supervise
