// Fuzz target: the agent's HTTP request path: request line, percent-decoding of the path and
// the query, headers (Host allow-list, Content-Length, Transfer-Encoding), the guard, the limits
// and every route's query parsing (/v1/series metric, gpu, since, step), through
// AgentServer::ServeRawRequest (httplib's own parsing, no socket). Besides crashes and sanitizer
// reports it stops on a broken invariant: every request gets an HTTP/1.1 status line with a
// status 200-599, never 500 (a 500 is an exception the guard caught: a bug), and every JSON
// answer is valid JSON (UTF-8 included).
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "core/clock.h"
#include "server/http_server.h"
#include "store/agent_db.h"

namespace {

using namespace fulcrum;

class FixedState final : public server::AgentStateView {
 public:
  telemetry::GpuSnapshot Latest() const override {
    telemetry::GpuSample s;
    s.index = 0;
    s.uuid = "GPU-fuzz";
    s.name = "fuzz";
    s.temperature_celsius = 60;
    return {s};
  }
  server::AgentCounters Counters() const override { return {}; }
  server::IdleStatus Idle() const override { return {}; }
  server::HostInfo Host() override { return {}; }
  void RequestIdleCancel() override {}
};

std::filesystem::path DataDir() {
  return std::filesystem::temp_directory_path() / ("fulcrum-http-fuzz-" + std::to_string(getpid()));
}

server::AgentServer& Server() {
  static FixedState state;
  static ManualClock clock;
  static server::AgentServer* server = [] {
    // A real (empty) agent.db, so that /v1/series and /v1/alerts reach their queries; removed
    // at exit.
    const auto dir = DataDir();
    std::filesystem::create_directories(dir);
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(DataDir(), ec);
    });
    if (!store::AgentDb::OpenInDataDir(dir.string()).ok()) std::abort();
    server::ServerOptions options;
    options.listen = "127.0.0.1:0";
    options.token = "fuzz-token";
    options.data_dir = dir.string();
    options.source_kind = "sim";
    options.gpu_count = 1;
    options.hostname = "fuzz";
    return new server::AgentServer(options, state, clock);
  }();
  return *server;
}

void Fail(const std::string& why, const std::string& request, const std::string& response) {
  std::fprintf(stderr, "http_request_fuzz: %s\n--- request ---\n%s\n--- response ---\n%s\n",
               why.c_str(), request.c_str(), response.substr(0, 2000).c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string request(reinterpret_cast<const char*>(data), size);
  const std::string response = Server().ServeRawRequest(request);
  if (response.empty()) return 0;  // httplib closed without answering (e.g. no request line)
  if (response.rfind("HTTP/1.1 ", 0) != 0 || response.size() < 12) {
    Fail("no status line", request, response);
  }
  const int status = std::atoi(response.c_str() + 9);
  if (status < 200 || status > 599) Fail("status out of range", request, response);
  if (status == 500) Fail("500: an exception reached the guard", request, response);
  const size_t body_at = response.find("\r\n\r\n");
  const std::string head = response.substr(0, body_at);
  const std::string body = body_at == std::string::npos ? "" : response.substr(body_at + 4);
  // A HEAD answer has the headers of the GET and no body.
  if (!body.empty() && head.find("application/json") != std::string::npos) {
    if (!nlohmann::json::accept(body)) {
      Fail("invalid JSON body", request, response);
    }
  }
  return 0;
}
