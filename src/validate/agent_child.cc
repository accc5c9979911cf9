#include "validate/agent_child.h"

#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

namespace fulcrum::validate {
namespace fs = std::filesystem;

namespace {
// The agent's output goes to its file, not to pipes.
void Ignore(supervise::Stream, std::string_view) {}
}  // namespace

int FreeLoopbackPort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 0;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  ::close(fd);
  return port;
}

Result<std::unique_ptr<AgentChild>> AgentChild::Start(const AgentChildOptions& o,
                                                      double timeout_seconds) {
  std::unique_ptr<AgentChild> agent(new AgentChild());
  std::error_code ec;
  fs::create_directories(o.data_dir, ec);
  agent->log_file_ = o.data_dir + "/agent.out";
  fs::remove(agent->log_file_, ec);
  supervise::ChildSpec spec;
  spec.argv = {o.fulcrum_binary, "agent",    "--source",
               o.source,         "--listen", "127.0.0.1:" + std::to_string(o.port),
               "--data-dir",     o.data_dir, "--interval",
               o.interval,       "--json"};
  if (o.source == "sim") {
    spec.argv.insert(spec.argv.end(), {"--sim-gpus", std::to_string(o.sim_gpus)});
    if (!o.sim_scenario.empty())
      spec.argv.insert(spec.argv.end(), {"--sim-scenario", o.sim_scenario});
  }
  spec.output_file = agent->log_file_;
  FULCRUM_RETURN_IF_ERROR(agent->runner_.Start(spec));
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    if (auto exit = agent->runner_.Wait(0.05, Ignore)) {
      std::ifstream in(agent->log_file_);
      std::stringstream text;
      text << in.rdbuf();
      std::string why = text.str();
      // With --json its error is {"error": {"message": ...}}.
      auto json = nlohmann::json::parse(why, nullptr, false);
      if (json.is_object() && json.contains("error") && json["error"].contains("message") &&
          json["error"]["message"].is_string())
        why = json["error"]["message"].get<std::string>();
      while (!why.empty() && (why.back() == '\n' || why.back() == ' ')) why.pop_back();
      return Status::Unavailable("fulcrum agent --source " + o.source + " ended (" +
                                 exit->Describe() + "): " + why);
    }
    std::ifstream in(agent->log_file_);
    std::string line;
    while (std::getline(in, line)) {
      auto json = nlohmann::json::parse(line, nullptr, false);
      if (json.is_object() && json.contains("agent") && json["agent"].contains("url")) {
        agent->url_ = json["agent"]["url"].get<std::string>();
        agent->gpu_count_ = json["agent"].value("gpu_count", 0);
        return agent;
      }
    }
  }
  return Status::Unavailable("fulcrum agent --source " + o.source + " did not start within " +
                             std::to_string(static_cast<int>(timeout_seconds)) + " s");
}

AgentChild::~AgentChild() {
  if (!runner_.running()) return;
  runner_.SignalGroup(SIGTERM);
  for (int i = 0; i < 200 && runner_.running(); ++i) runner_.Wait(0.05, Ignore);
  if (runner_.running()) runner_.SignalGroup(SIGKILL);
  while (runner_.running()) runner_.Wait(0.05, Ignore);
}

Result<std::string> AgentChild::Get(const std::string& path_and_query,
                                    double timeout_seconds) const {
  httplib::Client client(url_);
  const auto usec = static_cast<time_t>(timeout_seconds * 1e6);
  client.set_connection_timeout(usec / 1000000, usec % 1000000);
  client.set_read_timeout(usec / 1000000, usec % 1000000);
  auto res = client.Get(path_and_query.c_str());
  if (!res) return Status::Unavailable(url_ + path_and_query + ": no answer");
  if (res->status != 200)
    return Status::Unavailable(url_ + path_and_query + ": HTTP " + std::to_string(res->status));
  return res->body;
}

}  // namespace fulcrum::validate
