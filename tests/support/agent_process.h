// The running agent and the peers around it, for the end-to-end tests (fulcrum_test_support):
// AgentProcess runs `fulcrum agent ... --json` as a child in its own process group (killed on
// destruction) and reads its port from the first JSON line; WebhookRecorder is a receiver on
// 127.0.0.1 that records every POST under /hook and answers a settable status (503 = "down").
// Small file and wire helpers go with them. AgentProcess: one test thread drives it;
// WebhookRecorder: thread-safe (its handler runs on the server's threads).
#pragma once

#include <httplib.h>
#include <sys/types.h>

#include <filesystem>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "core/mutex.h"
#include "support/fake_http_server.h"

namespace fulcrum::testing {

std::string ReadFile(const std::filesystem::path& path);
void WriteFile(const std::filesystem::path& path, const std::string& text);

// Sends `request` verbatim to 127.0.0.1:port and returns what comes back until the server
// closes or `seconds` pass ("" when it never answers).
std::string RawRequest(int port, const std::string& request, double seconds = 5);

// "HTTP/1.1 405 Method Not Allowed\r\n..." -> 405 (0 when there is no status line).
int StatusOf(const std::string& response);

// Polls `ready` every 50 ms until it holds or `seconds` pass.
bool WaitFor(const std::function<bool()>& ready, double seconds);

// Starts `program args...` (PATH looked up) in its own process group with stdout and stderr
// to the given files (the same file allowed) and `env` added; returns its pid.
pid_t SpawnLogged(const std::string& program, const std::vector<std::string>& args,
                  const std::string& out_path, const std::string& err_path,
                  const std::map<std::string, std::string>& env = {});

// A real peer (Alertmanager, Prometheus) for the test's lifetime: SIGTERM, then SIGKILL after
// 5 s, on destruction.
class PeerProcess {
 public:
  PeerProcess(const std::string& program, const std::vector<std::string>& args,
              const std::string& log_path);
  ~PeerProcess();
  PeerProcess(const PeerProcess&) = delete;
  PeerProcess& operator=(const PeerProcess&) = delete;
  std::string log() const { return ReadFile(log_path_); }

 private:
  std::string log_path_;
  pid_t pid_ = -1;
};

// `fulcrum agent ... --json` as a child process (args must include --listen); killed on
// destruction.
class AgentProcess {
 public:
  AgentProcess(const std::string& dir, std::vector<std::string> args,
               std::map<std::string, std::string> env = {});
  ~AgentProcess();
  AgentProcess(const AgentProcess&) = delete;
  AgentProcess& operator=(const AgentProcess&) = delete;
  int port() const { return port_; }  // 0 when it did not start
  pid_t pid() const { return pid_; }
  std::string err() const { return ReadFile(err_path_); }
  std::string out() const { return ReadFile(out_path_); }
  bool Exited();
  // Sends `signal` and waits (up to 10 s) for the exit; returns the exit code or 128+signal.
  int Stop(int signal);
  httplib::Client Client() const;
  // GET `path`, parsed; null json unless it answered 200 with JSON.
  nlohmann::json Get(const std::string& path) const;

 private:
  std::string dir_, tag_, out_path_, err_path_;
  pid_t pid_ = -1;
  int port_ = 0;
  int exit_code_ = -1;
};

// A webhook receiver on 127.0.0.1: records every POST to /hook...; answers `status`.
class WebhookRecorder {
 public:
  WebhookRecorder();
  std::string url() const { return http_.url() + "/hook"; }
  void SetStatus(int status);
  // (Idempotency-Key, body) of each POST answered 200, in arrival order.
  std::vector<std::pair<std::string, std::string>> Posts();
  int Attempts();  // every POST, whatever the answer
  // The first delivered body containing `needle`, parsed (null json when none yet).
  nlohmann::json Find(const std::string& needle);

 private:
  Mutex mutex_;
  int status_ GUARDED_BY(mutex_) = 200;
  int attempts_ GUARDED_BY(mutex_) = 0;
  std::vector<std::pair<std::string, std::string>> posts_ GUARDED_BY(mutex_);
  FakeHttpServer http_;  // last: stopped before the state its handler touches is destroyed
};

}  // namespace fulcrum::testing
