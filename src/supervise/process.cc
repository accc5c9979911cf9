#include "supervise/process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/subprocess.h"

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
    ReleaseKeeper();  // before the reap: an unreaped leader keeps its pgid from being reused
    ::waitpid(pid_, nullptr, 0);
  }
  ReleaseKeeper();
  for (int& fd : fds_) {
    if (fd >= 0) ::close(fd);
  }
}

namespace {

// One /proc/PID/stat entry: the fields this file needs.
struct ProcStat {
  pid_t pid = 0;
  pid_t pgrp = 0;
  int64_t start_ticks = 0;  // field 22
};

std::optional<ProcStat> ReadProcStat(const std::filesystem::path& dir) {
  std::ifstream stat(dir / "stat");
  std::string line;
  if (!std::getline(stat, line)) return std::nullopt;
  const size_t paren = line.rfind(')');  // the command name may hold spaces
  if (paren == std::string::npos) return std::nullopt;
  std::istringstream fields(line.substr(paren + 1));
  // Fields 3.. : state ppid pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt utime
  // stime cutime cstime priority nice num_threads itrealvalue starttime.
  std::string state;
  long ppid = 0, pgrp = 0;
  if (!(fields >> state >> ppid >> pgrp)) return std::nullopt;
  if (state == "Z" || state == "X") return std::nullopt;  // gone but for its exit status
  std::string skip;
  for (int i = 0; i < 15; ++i) fields >> skip;
  int64_t start = 0;
  if (!(fields >> start)) return std::nullopt;
  ProcStat out;
  out.pid = static_cast<pid_t>(std::stol(dir.filename().string()));
  out.pgrp = static_cast<pid_t>(pgrp);
  out.start_ticks = start;
  return out;
}

// Every live process of the machine (as far as /proc shows them).
std::vector<ProcStat> ListProcesses() {
  std::vector<ProcStat> out;
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator("/proc", ec);
       !ec && it != std::filesystem::end(it); it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    if (auto stat = ReadProcStat(it->path())) out.push_back(*stat);
  }
  return out;
}

// The keeper, in the forked copy of the supervisor (async-signal-safe calls only): waits for EOF
// on `read_fd` (the runner closed its end, or the supervisor died), then ends the job's group.
[[noreturn]] void RunKeeper(int read_fd, pid_t job_pgid) {
  // Not the job's: a Ctrl-C, a SIGTERM to the supervisor's group must not end the keeper first.
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGPIPE}) {
    ::signal(sig, SIG_IGN);
  }
  ::prctl(PR_SET_NAME, "fulcrum-keeper");
  // Drop every other descriptor (the job's pipes, jobs.db, the job lock): the keeper holds none.
  if (read_fd > 0) ::close_range(0, static_cast<unsigned>(read_fd - 1), 0);
  ::close_range(static_cast<unsigned>(read_fd + 1), ~0U, 0);
  char byte;
  while (::read(read_fd, &byte, 1) < 0 && errno == EINTR) {
  }
  ::kill(-job_pgid, SIGKILL);
  _exit(0);
}

// In the child after fork: async-signal-safe calls only. Reports a failure to exec through
// `error_fd` (errno as an int) and exits 127.
[[noreturn]] void ExecChild(const ChildSpec& spec, char* const* argv, char* const* envp, int out_fd,
                            int err_fd, int error_fd) {
  sigset_t all;
  sigemptyset(&all);
  ::sigprocmask(SIG_SETMASK, &all, nullptr);
  for (int sig : {SIGTERM, SIGINT, SIGUSR1, SIGUSR2, SIGHUP, SIGPIPE}) ::signal(sig, SIG_DFL);
  if (!spec.output_file.empty() || spec.detached) {
    int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (null_fd >= 0) ::dup2(null_fd, STDIN_FILENO);
  }
  if (out_fd >= 0) ::dup2(out_fd, STDOUT_FILENO);
  if (err_fd >= 0) ::dup2(err_fd, STDERR_FILENO);
  int error = 0;
  if (!spec.cwd.empty() && ::chdir(spec.cwd.c_str()) != 0) {
    error = errno;
  } else {
    ::execvpe(argv[0], argv, envp);
    error = errno;
  }
  (void)!::write(error_fd, &error, sizeof error);
  _exit(127);
}

Status ExecError(const ChildSpec& spec, int error) {
  std::string what = spec.argv[0];
  if (error == ENOENT && !spec.cwd.empty() && ::access(spec.cwd.c_str(), X_OK) != 0) {
    return Status::NotFound(spec.cwd + ": working directory not found");
  }
  if (error == ENOENT) {
    return Status::NotFound(what + ": command not found" +
                            (what.find('/') == std::string::npos ? " (not on PATH)" : ""));
  }
  return Status::InvalidInput(what + ": cannot execute: " + strerror(error));
}

}  // namespace

Status PosixProcessRunner::Start(const ChildSpec& spec) {
  if (pid_ > 0) return Status::Internal("a child is already running");
  if (spec.argv.empty()) return Status::InvalidInput("no command given");
  // Build argv and envp before fork: the child may only call async-signal-safe functions.
  std::vector<char*> argv = ArgvPointers(spec.argv);
  ChildEnvironment env(spec.env);

  int out_pipe[2] = {-1, -1}, err_pipe[2] = {-1, -1}, error_pipe[2] = {-1, -1};
  // The job's go-ahead: it execs once its keeper runs (issue 19's test saw a kill -9 that came
  // between the job's exec and the keeper's fork leave the job's grandchild running).
  int go_pipe[2] = {-1, -1};
  auto close_all = [&] {
    for (int* p : {out_pipe, err_pipe, error_pipe, go_pipe}) {
      for (int i = 0; i < 2; ++i) {
        if (p[i] >= 0) ::close(p[i]);
        p[i] = -1;
      }
    }
  };
  int file_fd = -1;
  if (!spec.output_file.empty() || spec.detached) {
    // Nobody reads a detached child's pipes: without a file its output goes to /dev/null.
    const std::string path = spec.output_file.empty() ? "/dev/null" : spec.output_file;
    file_fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
    if (file_fd < 0) {
      return Status::IoError(path + ": cannot open for the job's output: " + strerror(errno));
    }
  } else if (::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0) {
    close_all();
    return Status::IoError(std::string("pipe: ") + strerror(errno));
  }
  if (::pipe2(error_pipe, O_CLOEXEC) != 0 || (!spec.detached && ::pipe2(go_pipe, O_CLOEXEC) != 0)) {
    close_all();
    if (file_fd >= 0) ::close(file_fd);
    return Status::IoError(std::string("pipe: ") + strerror(errno));
  }
  const int child_out = file_fd >= 0 ? file_fd : out_pipe[1];
  const int child_err = file_fd >= 0 ? file_fd : err_pipe[1];
  pid_t pid = ::fork();
  if (pid < 0) {
    close_all();
    if (file_fd >= 0) ::close(file_fd);
    return Status::IoError(std::string("fork: ") + strerror(errno));
  }
  if (pid == 0) {
    if (spec.detached) {
      ::setsid();
      if (::fork() != 0) _exit(0);  // the grandchild is reparented to init
    } else {
      ::setpgid(0, 0);
      // If the supervisor dies (kill -9), its job must not run on unsupervised and unbilled.
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      ::close(go_pipe[1]);
      char go = 0;
      ssize_t got;
      while ((got = ::read(go_pipe[0], &go, 1)) < 0 && errno == EINTR) {
      }
      if (got != 1) _exit(127);  // the supervisor died before its keeper ran
      ::close(go_pipe[0]);
    }
    ExecChild(spec, argv.data(), env.Pointers(), child_out, child_err, error_pipe[1]);
  }
  // The child's ends: closed before the keeper forks, so that it never holds them.
  if (file_fd >= 0) ::close(file_fd);
  for (int* p : {out_pipe, err_pipe, error_pipe}) {
    if (p[1] >= 0) ::close(p[1]);
    p[1] = -1;
  }
  if (!spec.detached) {
    ::setpgid(pid, pid);  // also in the parent, so signals reach the group
    ::close(go_pipe[0]);
    go_pipe[0] = -1;
    StartKeeper(pid);
    const char go = 1;
    while (::write(go_pipe[1], &go, 1) < 0 && errno == EINTR) {
    }
    ::close(go_pipe[1]);
    go_pipe[1] = -1;
  }
  // EOF once the child has exec'd (close-on-exec) or exited; an int when exec failed.
  int error = 0;
  ssize_t got;
  while ((got = ::read(error_pipe[0], &error, sizeof error)) < 0 && errno == EINTR) {
  }
  ::close(error_pipe[0]);
  error_pipe[0] = -1;
  if (spec.detached) {
    while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
    }
  }
  if (got == static_cast<ssize_t>(sizeof error)) {
    if (!spec.detached) {
      ReleaseKeeper();  // before the leader is reaped: its zombie still holds the group's id
      while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
      }
    }
    close_all();
    return ExecError(spec, error);
  }
  if (spec.detached) {
    close_all();
    return Status::Ok();
  }
  fds_[0] = out_pipe[0];
  fds_[1] = err_pipe[0];
  for (int fd : fds_) {
    if (fd >= 0) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  }
  pid_ = pid;
  return Status::Ok();
}

void PosixProcessRunner::SignalGroup(int signal) {
  if (pid_ > 0) ::kill(-pid_, signal);
}

void PosixProcessRunner::Signal(int signal, SignalTarget target) {
  if (pid_ <= 0) return;
  switch (target) {
    case SignalTarget::kNone:
      return;
    case SignalTarget::kLeader:
      ::kill(pid_, signal);
      return;
    case SignalTarget::kGroup:
      ::kill(-pid_, signal);
      return;
    case SignalTarget::kChildren:
      break;
  }
  // Every member of the child's process group but the child itself.
  for (const ProcStat& p : ListProcesses()) {
    if (p.pgrp == pid_ && p.pid != pid_) ::kill(p.pid, signal);
  }
}

std::optional<int64_t> PosixProcessRunner::start_ticks() const {
  return pid_ > 0 ? ProcessStartTicks(pid_) : std::nullopt;
}

// Without a keeper (no pipe, no fork) PR_SET_PDEATHSIG still ends the leader.
void PosixProcessRunner::StartKeeper(pid_t job_pgid) {
  int keeper_pipe[2] = {-1, -1};
  if (::pipe2(keeper_pipe, O_CLOEXEC) != 0) return;
  const pid_t keeper = ::fork();
  if (keeper == 0) {
    ::close(keeper_pipe[1]);
    RunKeeper(keeper_pipe[0], job_pgid);
  }
  ::close(keeper_pipe[0]);
  if (keeper > 0) {
    keeper_pid_ = keeper;
    keeper_fd_ = keeper_pipe[1];
  } else {
    ::close(keeper_pipe[1]);
  }
}

void PosixProcessRunner::ReleaseKeeper() {
  if (keeper_fd_ >= 0) ::close(keeper_fd_);  // the keeper SIGKILLs the group and exits
  keeper_fd_ = -1;
  if (keeper_pid_ > 0) {
    while (::waitpid(keeper_pid_, nullptr, 0) < 0 && errno == EINTR) {
    }
  }
  keeper_pid_ = -1;
}

std::optional<int64_t> ProcessStartTicks(int64_t pid) {
  auto stat = ReadProcStat(std::filesystem::path("/proc") / std::to_string(pid));
  if (!stat) return std::nullopt;
  return stat->start_ticks;
}

int EndStaleProcessGroup(int64_t pgid, int64_t leader_start_ticks) {
  if (pgid <= 1) return 0;
  if (auto leader = ProcessStartTicks(pgid); leader && *leader != leader_start_ticks) return 0;
  int signalled = 0;
  for (const ProcStat& p : ListProcesses()) {
    if (p.pgrp != pgid || p.start_ticks < leader_start_ticks) continue;
    if (::kill(p.pid, SIGKILL) == 0) ++signalled;
  }
  return signalled;
}

std::vector<int64_t> ProcessGroupPids(int64_t pgid) {
  std::vector<int64_t> out;
  if (pgid <= 1) return out;
  for (const ProcStat& p : ListProcesses()) {
    if (p.pgrp == pgid) out.push_back(p.pid);
  }
  return out;
}

Result<SignalTarget> ParseSignalTarget(const std::string& text) {
  if (text == "none") return SignalTarget::kNone;
  if (text == "leader") return SignalTarget::kLeader;
  if (text == "group") return SignalTarget::kGroup;
  if (text == "children") return SignalTarget::kChildren;
  return Status::InvalidInput("--signal-target: expected leader, group, children or none, found '" +
                              text + "'")
      .WithDetail({"",
                   std::nullopt,
                   "--signal-target",
                   "leader, group, children or none",
                   text,
                   {"none", "group"}});
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
  // WNOWAIT: the leader stays a zombie until the group is ended, so its pgid cannot be reused
  // by an unrelated process while this runner and its keeper signal it.
  siginfo_t info{};
  if (::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) != 0 ||
      info.si_pid != pid_) {
    return std::nullopt;
  }
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
  ReleaseKeeper();
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
  ChildExit exit;
  if (WIFEXITED(status)) exit.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) exit.signal = WTERMSIG(status);
  return exit;
}

}  // namespace fulcrum::supervise
