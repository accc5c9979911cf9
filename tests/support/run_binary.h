// Runs the real fulcrum binary (or any program) as a child process for end-to-end tests:
// argv only (no shell), optional stdin text, optional extra environment, a timeout. Captures
// stdout and stderr separately. Thread-compatible (one call per thread).
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace fulcrum::testing {

struct RunOutput {
  int exit_code = -1;  // exit status, or 128+signal when killed
  std::string out;
  std::string err;
  bool timed_out = false;
};

struct RunOptions {
  std::string stdin_text;
  std::map<std::string, std::string> env;  // added to (or overriding) the test's environment
  double timeout_seconds = 120;
  std::string cwd;  // "" = the test's working directory
};

// Runs `FULCRUM_BINARY args...`.
RunOutput RunFulcrum(const std::vector<std::string>& args, const RunOptions& options = {});

// Runs `program args...` (program looked up in PATH when it has no '/').
RunOutput RunProgram(const std::string& program, const std::vector<std::string>& args,
                     const RunOptions& options = {});

// A fresh empty directory under the build tree's Testing/tmp, removed by the caller if wanted.
std::string MakeTempDir(const std::string& prefix);

// The whole content of the file at `path`, bytes as they are ("" when it cannot be read).
std::string FileContents(const std::string& path);

// Polls `ready` every `poll_seconds` until it holds or `seconds` have passed; its last answer.
bool PollUntil(const std::function<bool()>& ready, double seconds, double poll_seconds = 0.02);

// Waits up to `seconds` until no `fulcrum submit --queue-worker` serving `data_dir` is alive
// (found by its /proc cmdline). Submit starts a detached worker per call; the later ones wait
// for the queue lock and may open jobs.db after the test's jobs are done, so a test that removes
// the data dir waits for them first. True when none is left.
bool WaitForQueueWorkersToExit(const std::string& data_dir, double seconds = 10);

// Path of the source tree's file (e.g. "catalog/gpus.csv").
std::string SourcePath(const std::string& relative);

}  // namespace fulcrum::testing
