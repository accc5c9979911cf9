// Long-lived peers of the end-to-end tests: a program started as a child in its own process
// group with stdout and stderr in files (so a chatty peer never blocks on a full pipe), stopped
// on destruction (SIGTERM, then SIGKILL after 10 s); and on top of it the real peers the
// telemetry tests need: a `fulcrum agent` on a free loopback port, and Debian's Prometheus
// scraping given targets every second on loopback. Not thread-safe; one owner each.
#pragma once

#include <sys/types.h>

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace fulcrum::testing {

class ChildProcess {
 public:
  // `program` is looked up in PATH when it has no '/'. `log_prefix`.out / .err receive output.
  ChildProcess(const std::string& program, const std::vector<std::string>& args,
               const std::string& log_prefix, const std::map<std::string, std::string>& env = {});
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  pid_t pid() const { return pid_; }
  bool Exited();
  std::string out() const;
  std::string err() const;

 private:
  pid_t pid_ = -1;
  bool exited_ = false;
  std::string log_prefix_;
};

// `fulcrum agent ARGS --listen 127.0.0.1:0 --json --data-dir DIR`; port() is 0 when it did not
// come up within 15 s (see err()).
class AgentPeer {
 public:
  AgentPeer(const std::string& data_dir, std::vector<std::string> args);
  int port() const { return port_; }
  std::string err() const { return process_.err(); }
  // GET path on the agent; the body, "" on failure.
  std::string Get(const std::string& path) const;

 private:
  ChildProcess process_;
  int port_ = 0;
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

// PollUntil (poll a condition until it holds or time runs out) is in support/run_binary.h.

}  // namespace fulcrum::testing
