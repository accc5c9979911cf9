// Runs a short-lived helper program (nvidia-smi, nvcc, python3, sbatch ...) and captures its
// output: argv only, never a shell string; a timeout after which the whole process group is
// killed; stdout and stderr captured separately (each capped). SpawnToFiles starts a long-lived
// peer (a test's daemon) with its output in files, for the caller to reap. For supervised
// children see supervise/. Thread-compatible: concurrent calls from different threads are fine.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/status.h"

namespace fulcrum {

struct CaptureResult {
  int exit_code = -1;  // exit status; 128+N when killed by signal N
  std::string out;
  std::string err;
  bool timed_out = false;
};

struct CaptureOptions {
  double timeout_seconds = 30;
  size_t max_output_bytes = 4 << 20;  // per stream; the rest is discarded
  std::string stdin_text;
  std::map<std::string, std::string> env;  // added to (or overriding) the inherited environment
  std::string cwd;                         // "" = the caller's working directory
};

// NotFound when argv[0] cannot be executed (not on PATH); otherwise the result, whatever the
// exit code.
Result<CaptureResult> RunCapture(const std::vector<std::string>& argv,
                                 const CaptureOptions& options = {});

struct SpawnOptions {
  std::string out_path;  // stdout, truncated first; "" = inherited
  std::string err_path;  // stderr, truncated first; the same path as out_path = one file
  std::map<std::string, std::string> env;  // added to (or overriding) the inherited environment
};

// Starts `argv` (argv[0] looked up on PATH) in its own process group, stdin inherited, and
// returns its pid; the caller signals and reaps it (waitpid). NotFound when argv[0] cannot be
// executed.
Result<int> SpawnToFiles(const std::vector<std::string>& argv, const SpawnOptions& options);

// True when `program` (no '/') is found on PATH and executable, or is an executable path.
bool ProgramExists(const std::string& program);

// "KEY=value" entries of a child's environment: ours with `extra` added or overriding. Built
// before fork, so that the child allocates nothing between fork and exec; Pointers() is valid
// while this lives. Every spawner here (RunCapture, SpawnToFiles, supervise's process runner)
// builds its envp with it.
class ChildEnvironment {
 public:
  explicit ChildEnvironment(const std::map<std::string, std::string>& extra);
  char** Pointers() { return pointers_.data(); }

 private:
  std::vector<std::string> strings_;
  std::vector<char*> pointers_;
};

// `argv` as execvp wants it: pointers into the strings, then nullptr (valid while argv lives).
std::vector<char*> ArgvPointers(const std::vector<std::string>& argv);

}  // namespace fulcrum
