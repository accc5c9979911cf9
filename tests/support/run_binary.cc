#include "support/run_binary.h"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include "core/subprocess.h"
#include "support/json_contract.h"

namespace fulcrum::testing {

using fulcrum::CaptureOptions;
using fulcrum::RunCapture;

RunOutput RunProgram(const std::string& program, const std::vector<std::string>& args,
                     const RunOptions& options) {
  signal(SIGPIPE, SIG_IGN);  // as before: a test writing to a dead peer must not die of it
  std::vector<std::string> argv = {program};
  argv.insert(argv.end(), args.begin(), args.end());
  CaptureOptions capture;
  capture.timeout_seconds = options.timeout_seconds;
  capture.max_output_bytes = size_t{256} << 20;
  capture.stdin_text = options.stdin_text;
  capture.env = options.env;
  capture.cwd = options.cwd;
  RunOutput result;
  auto run = RunCapture(argv, capture);
  if (!run.ok()) {
    result.exit_code = 127;
    result.err = run.status().message();
    return result;
  }
  result.exit_code = run->exit_code;
  result.out = std::move(run->out);
  result.err = std::move(run->err);
  result.timed_out = run->timed_out;
  return result;
}

RunOutput RunFulcrum(const std::vector<std::string>& args, const RunOptions& options) {
  RunOutput output = RunProgram(FULCRUM_BINARY, args, options);
  CheckJsonContract(args, output);
  return output;
}

std::string MakeTempDir(const std::string& prefix) {
  namespace fs = std::filesystem;
  std::random_device rd;
  fs::path base = fs::path(FULCRUM_BUILD_DIR) / "Testing" / "tmp";
  fs::create_directories(base);
  for (int attempt = 0; attempt < 100; ++attempt) {
    fs::path dir =
        base / (prefix + "-" + std::to_string(getpid()) + "-" + std::to_string(rd() % 1000000));
    std::error_code ec;
    if (fs::create_directory(dir, ec)) return dir.string();
  }
  return (base / prefix).string();
}

std::string FileContents(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

bool PollUntil(const std::function<bool()>& ready, double seconds, double poll_seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    if (ready()) return true;
    std::this_thread::sleep_for(std::chrono::duration<double>(poll_seconds));
  }
  return ready();
}

bool WaitForQueueWorkersToExit(const std::string& data_dir, double seconds) {
  const std::string dir = std::filesystem::absolute(data_dir).lexically_normal().string();
  return PollUntil(
      [&] {
        std::error_code ec;
        for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
          std::string cmdline = FileContents(entry.path().string() + "/cmdline");
          // argv is NUL-separated: match whole arguments.
          const std::string padded = std::string(1, '\0') + cmdline;
          if (padded.find(std::string("\0--queue-worker\0", 16)) != std::string::npos &&
              padded.find(std::string(1, '\0') + dir + std::string(1, '\0')) != std::string::npos)
            return false;
        }
        return true;
      },
      seconds, 0.05);
}

std::string SourcePath(const std::string& relative) {
  return std::string(FULCRUM_SOURCE_DIR) + "/" + relative;
}

}  // namespace fulcrum::testing
