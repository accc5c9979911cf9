// The node agent: composes a GPU source, the store, the alert evaluator with its durable outbox
// and delivery worker, the idle detector and the HTTP server (the one place that knows all of
// them). Threads: Run() is the sampler (the caller's thread); the delivery worker and the HTTP
// server have their own. Run() returns when a byte arrives on the stop fd (the CLI's SIGTERM /
// SIGINT handler writes one), after flushing the last samples and stopping the other threads.
#pragma once

#include <memory>

#include "agent/config.h"
#include "core/clock.h"
#include "core/status.h"

namespace fulcrum::agent {

class Agent {
 public:
  // Opens the source, the store (schema checked) and the rules, binds the listen address.
  // Input errors (bad rules file, scenario, source) are kInvalidInput/kNotFound.
  static Result<std::unique_ptr<Agent>> Create(const AgentConfig& config, const Clock& clock);
  ~Agent();

  // Samples every interval until `stop_fd` becomes readable; then shuts down cleanly.
  Status Run(int stop_fd);
  int port() const;  // the bound HTTP port
  int gpu_count() const;
  std::string source_kind() const;
  std::string data_dir() const;

  struct Impl;

 private:
  explicit Agent(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace fulcrum::agent
