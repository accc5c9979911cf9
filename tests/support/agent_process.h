// The peers around the agent for the end-to-end tests (fulcrum_test_support), each on the one
// ChildProcess of support/child_process.h: AgentProcess runs `fulcrum agent ... --json` (killed
// on destruction) and reads its port from the first JSON line; AgentPeer is one on a free
// loopback port with its data dir; PrometheusPeer is Debian's Prometheus scraping given
// targets; WebhookRecorder is a receiver on 127.0.0.1 that records every POST under /hook and
// answers a settable status (503 = "down"). Small file and wire helpers go with them.
// AgentProcess, AgentPeer, PrometheusPeer: one test thread drives each; WebhookRecorder:
// thread-safe (its handler runs on the server's threads).
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
#include "support/child_process.h"
#include "support/fake_http_server.h"

namespace fulcrum::testing {

std::string ReadFile(const std::filesystem::path& path);
// Writes `text` to `path`, mode 0600.
void WriteFile(const std::filesystem::path& path, const std::string& text);

// Sends `request` verbatim to 127.0.0.1:port and returns what comes back until the server
// closes or `seconds` pass ("" when it never answers).
std::string RawRequest(int port, const std::string& request, double seconds = 5);

// "HTTP/1.1 405 Method Not Allowed\r\n..." -> 405 (0 when there is no status line).
int StatusOf(const std::string& response);

// Polls `ready` every 50 ms until it holds or `seconds` pass.
bool WaitFor(const std::function<bool()>& ready, double seconds);

// `fulcrum agent ... --json` as a child process (args must include --listen); killed on
// destruction.
class AgentProcess {
 public:
  AgentProcess(const std::string& dir, std::vector<std::string> args,
               std::map<std::string, std::string> env = {});
  // `fulcrum agent ARGS --json`, output in `logs`; stopped with SIGTERM and SIGKILL after
  // `stop_grace_seconds` (0 = SIGKILL at once).
  AgentProcess(std::vector<std::string> args, ChildLogs logs, double stop_grace_seconds,
               const std::map<std::string, std::string>& env = {});
  AgentProcess(const AgentProcess&) = delete;
  AgentProcess& operator=(const AgentProcess&) = delete;
  int port() const { return port_; }  // 0 when it did not start
  pid_t pid() const { return process_.pid(); }
  std::string err() const { return process_.err(); }
  std::string out() const { return process_.out(); }
  bool Exited() { return process_.Exited(); }
  // Sends `signal` and waits (up to 10 s) for the exit; returns the exit code or 128+signal.
  int Stop(int signal) { return process_.Stop(signal, 10); }
  httplib::Client Client() const;
  // GET `path`, parsed; null json unless it answered 200 with JSON.
  nlohmann::json Get(const std::string& path) const;

 private:
  ChildProcess process_;
  int port_ = 0;
};

// `fulcrum agent ARGS --listen 127.0.0.1:0 --json --data-dir DIR`, output in DIR/agent.out and
// .err, stopped with SIGTERM (SIGKILL after 10 s); port() is 0 when it did not come up within
// 15 s (see err()).
class AgentPeer {
 public:
  AgentPeer(const std::string& data_dir, std::vector<std::string> args);
  int port() const { return agent_.port(); }
  std::string err() const { return agent_.err(); }
  // GET path on the agent; the body, "" on failure.
  std::string Get(const std::string& path) const;

 private:
  AgentProcess agent_;
};

// Prometheus with `global: {scrape_interval: 1s, evaluation_interval: 1s}`, one job `fulcrum`
// whose static targets are `targets` ("127.0.0.1:PORT"), and `rule_files`.
class PrometheusPeer {
 public:
  PrometheusPeer(const std::string& dir, const std::vector<std::string>& targets,
                 const std::vector<std::string>& rule_files = {});
  int port() const { return port_; }
  std::string log() const { return process_.err() + process_.out(); }
  // GET /api/v1/<path_and_query> (already URL-encoded); the parsed answer, null on failure.
  nlohmann::json Api(const std::string& path_and_query) const;
  // An instant query's data.result (null on failure).
  nlohmann::json Query(const std::string& expr) const;
  // Polls Query(expr) until it returns at least `min_series` series or `seconds` pass.
  nlohmann::json WaitForSeries(const std::string& expr, size_t min_series, double seconds) const;

 private:
  static std::string Config(const std::vector<std::string>& targets,
                            const std::vector<std::string>& rule_files);
  int port_;
  ChildProcess process_;
};

std::string UrlEncode(const std::string& text);

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
