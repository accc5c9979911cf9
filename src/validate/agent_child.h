// A `fulcrum agent` that validate starts for itself: the stress phase's watcher (the source under
// test) and the gpu-lost drill's sim agent whose GPU falls off the bus (XID 79). A long-lived
// child of this binary on 127.0.0.1 with its own data dir, its output in a file; stopped with
// SIGTERM on destruction. Used from one thread.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "supervise/process.h"

namespace fulcrum::validate {

struct AgentChildOptions {
  std::string fulcrum_binary;
  std::string source = "sim";  // nvml | sim
  int sim_gpus = 2;
  std::string sim_scenario;  // "" = none
  int port = 0;              // 0 = any free port
  std::string data_dir;      // the agent's own (agent.db); the log goes beside it
  std::string interval = "1s";
};

class AgentChild {
 public:
  // Starts the agent and waits (up to `timeout_seconds`) for its startup line.
  static Result<std::unique_ptr<AgentChild>> Start(const AgentChildOptions& options,
                                                   double timeout_seconds);
  ~AgentChild();
  AgentChild(const AgentChild&) = delete;
  AgentChild& operator=(const AgentChild&) = delete;

  const std::string& url() const { return url_; }
  int gpu_count() const { return gpu_count_; }
  // GET url()+path_and_query, the body of a 200 answer.
  Result<std::string> Get(const std::string& path_and_query, double timeout_seconds) const;

 private:
  AgentChild() = default;
  supervise::PosixProcessRunner runner_;
  std::string url_, log_file_;
  int gpu_count_ = 0;
};

// A loopback port that was free a moment ago (for a peer that binds it later); 0 when none.
int FreeLoopbackPort();

}  // namespace fulcrum::validate
