// The agent's HTTP server: the /v1 JSON API of docs/API.md, /metrics in the Prometheus text
// format, and the dashboard (server/dashboard.h). Connections are read by server/http_front.h
// (one epoll thread; request head capped at 64 KiB, the whole request due within a deadline, the
// idlest connection still sending its request closed at the connection cap); each request is
// then checked (501 unknown method, 505 unsupported version, 400 duplicate Host, 431) and
// answered by cpp-httplib's parsing and routes on a worker. Reads the latest state through
// AgentStateView (server/agent_state.h) and history from agent.db / jobs.db through its own
// read-only connections. Mutating endpoints need `Authorization: Bearer <token>`; bad requests get
// 4xx {"error": ...} (docs/API.md "Status codes"): one guard turns any exception into a 500, bodies
// are capped, wrong methods get 405 with Allow, Host names outside the allow-list 403. Start()
// binds and serves on a background thread; Stop() joins.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.h"
#include "core/status.h"
#include "server/agent_state.h"
#include "server/metrics.h"
#include "store/agent_db.h"

namespace fulcrum::server {

struct ServerOptions {
  std::string listen = "127.0.0.1:9400";  // host:port; port 0 = any free port
  std::string token;                      // "" = mutating endpoints are refused (403)
  std::string data_dir;                   // agent.db and jobs.db
  std::string source_kind;                // "nvml" | "sim" | "replay"
  double interval_seconds = 1;
  int gpu_count = 0;  // GPUs the source has (before the first sample too)
  std::string hostname;
  // Requests answered at once (a worker thread each, started on demand); more queue. A
  // connection still sending its request holds no worker.
  int worker_threads = 16;
  // Connections open at once (clamped below RLIMIT_NOFILE); at the cap a new connection closes
  // its address's idlest connection still sending its request (issue 29), never refused.
  int max_connections = 1024;
  // A request's head and body must arrive within this many seconds of its connection's accept;
  // then the connection is closed (slowloris defence; issue 29).
  double request_deadline_seconds = 10;
  // Host header names accepted besides loopback names and the listen address (DNS-rebinding
  // defence), lower case; --allowed-host.
  std::vector<std::string> allowed_hosts;
  store::Retention retention;
  MetricsNames metrics_names = MetricsNames::kFulcrum;  // --metrics-names
};

// "127.0.0.1:9400" -> host, port. Port 0 allowed. Errors quote the text.
Result<std::pair<std::string, int>> ParseListen(const std::string& text);

class AgentServer {
 public:
  AgentServer(ServerOptions options, AgentStateView& state, const Clock& clock);
  ~AgentServer();
  AgentServer(const AgentServer&) = delete;
  AgentServer& operator=(const AgentServer&) = delete;

  // Binds (failing with kUnavailable when the address is taken) and starts serving.
  Status Start();
  void Stop();
  int port() const;  // the bound port (useful with port 0)

  // Answers one request given as the raw bytes a client would send, through the same request
  // parsing, guard, limits and routes as a connection, without a socket (the HTTP fuzz target
  // and tests). Returns the raw response (status line, headers, body). Needs no Start().
  std::string ServeRawRequest(std::string_view request);

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace fulcrum::server
