#include "core/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>

namespace fulcrum {

bool ProgramExists(const std::string& program) {
  if (program.empty()) return false;
  if (program.find('/') != std::string::npos) return access(program.c_str(), X_OK) == 0;
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    std::string dir = dirs.substr(start, end - start);
    if (!dir.empty() && access((dir + "/" + program).c_str(), X_OK) == 0) return true;
    start = end + 1;
  }
  return false;
}

ChildEnvironment::ChildEnvironment(const std::map<std::string, std::string>& extra) {
  for (char** e = environ; *e != nullptr; ++e) {
    std::string entry = *e;
    if (!extra.count(entry.substr(0, entry.find('=')))) strings_.push_back(std::move(entry));
  }
  for (const auto& [key, value] : extra) strings_.push_back(key + "=" + value);
  for (auto& entry : strings_) pointers_.push_back(entry.data());
  pointers_.push_back(nullptr);
}

std::vector<char*> ArgvPointers(const std::vector<std::string>& argv) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  return args;
}

Result<int> SpawnToFiles(const std::vector<std::string>& argv, const SpawnOptions& options) {
  if (argv.empty()) return Status::InvalidInput("SpawnToFiles: empty argv");
  if (!ProgramExists(argv[0])) return Status::NotFound(argv[0] + ": program not found");
  std::vector<char*> args = ArgvPointers(argv);
  ChildEnvironment env(options.env);
  const bool one_file = !options.out_path.empty() && options.err_path == options.out_path;
  pid_t pid = fork();
  if (pid < 0) return Status::IoError(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    setpgid(0, 0);
    const int flags = O_WRONLY | O_CREAT | O_TRUNC;
    const int out = options.out_path.empty() ? -1 : open(options.out_path.c_str(), flags, 0644);
    const int err = one_file                   ? out
                    : options.err_path.empty() ? -1
                                               : open(options.err_path.c_str(), flags, 0644);
    if (out >= 0) dup2(out, 1);
    if (err >= 0) dup2(err, 2);
    execvpe(args[0], args.data(), env.Pointers());
    _exit(127);
  }
  setpgid(pid, pid);
  return static_cast<int>(pid);
}

Result<CaptureResult> RunCapture(const std::vector<std::string>& argv,
                                 const CaptureOptions& options) {
  if (argv.empty()) return Status::InvalidInput("RunCapture: empty argv");
  if (!ProgramExists(argv[0])) return Status::NotFound(argv[0] + ": program not found");
  int in_pipe[2], out_pipe[2], err_pipe[2];
  if (pipe2(in_pipe, O_CLOEXEC) != 0)
    return Status::IoError(std::string("pipe: ") + std::strerror(errno));
  if (pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0) {
    return Status::IoError(std::string("pipe: ") + std::strerror(errno));
  }
  std::vector<char*> args = ArgvPointers(argv);
  ChildEnvironment env(options.env);
  pid_t pid = fork();
  if (pid < 0) return Status::IoError(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    setpgid(0, 0);
    dup2(in_pipe[0], 0);
    dup2(out_pipe[1], 1);
    dup2(err_pipe[1], 2);
    if (!options.cwd.empty() && chdir(options.cwd.c_str()) != 0) _exit(127);
    execvpe(args[0], args.data(), env.Pointers());
    _exit(127);
  }
  setpgid(pid, pid);
  close(in_pipe[0]);
  close(out_pipe[1]);
  close(err_pipe[1]);
  if (!options.stdin_text.empty()) {
    // Small inputs only (fits the pipe buffer); larger ones would need a writer thread. A child
    // that exits without reading must not kill us with SIGPIPE.
    struct sigaction ignore_pipe {
    }, previous{};
    ignore_pipe.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &ignore_pipe, &previous);
    ssize_t ignored = write(in_pipe[1], options.stdin_text.data(), options.stdin_text.size());
    (void)ignored;
    sigaction(SIGPIPE, &previous, nullptr);
  }
  close(in_pipe[1]);

  CaptureResult result;
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::milliseconds(static_cast<int64_t>(options.timeout_seconds * 1000));
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  std::string* sinks[2] = {&result.out, &result.err};
  int open_fds = 2;
  char buf[16384];
  while (open_fds > 0) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      result.timed_out = true;
      kill(-pid, SIGKILL);
      break;
    }
    if (poll(fds, 2, static_cast<int>(std::min<int64_t>(left.count(), 500))) < 0 && errno != EINTR)
      break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t got = read(fds[i].fd, buf, sizeof buf);
      if (got > 0) {
        size_t room =
            options.max_output_bytes - std::min(options.max_output_bytes, sinks[i]->size());
        sinks[i]->append(buf, std::min(room, static_cast<size_t>(got)));
      } else if (got == 0 || errno != EINTR) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  for (auto& fd : fds) {
    if (fd.fd >= 0) close(fd.fd);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status))
    result.exit_code = WEXITSTATUS(status);
  else if (WIFSIGNALED(status))
    result.exit_code = 128 + WTERMSIG(status);
  if (result.exit_code == 127 && result.out.empty()) {
    return Status::NotFound(argv[0] + ": could not be executed");
  }
  return result;
}

}  // namespace fulcrum
