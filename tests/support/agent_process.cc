#include "support/agent_process.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <filesystem>
#include <fstream>

#include "support/run_binary.h"

namespace fulcrum::testing {

using nlohmann::json;

std::string ReadFile(const std::filesystem::path& path) { return FileContents(path.string()); }

void WriteFile(const std::filesystem::path& path, const std::string& text) {
  std::ofstream(path) << text;
  // Owner-only, as a config holding secrets must be (the agent refuses one others can read).
  std::filesystem::permissions(
      path, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
}

std::string RawRequest(int port, const std::string& request, double seconds) {
  int fd = ConnectLoopback(port, seconds);
  std::string response;
  if (fd >= 0 && send(fd, request.data(), request.size(), MSG_NOSIGNAL) ==
                     static_cast<ssize_t>(request.size())) {
    char buf[4096];
    ssize_t n = 0;
    while ((n = recv(fd, buf, sizeof buf, 0)) > 0) response.append(buf, static_cast<size_t>(n));
  }
  if (fd >= 0) close(fd);
  return response;
}

int StatusOf(const std::string& response) {
  if (response.rfind("HTTP/1.", 0) != 0 || response.size() < 12) return 0;
  return std::atoi(response.c_str() + 9);
}

bool WaitFor(const std::function<bool()>& ready, double seconds) {
  return PollUntil(ready, seconds, 0.05);
}

namespace {

// `fulcrum agent ARGS --json`.
std::vector<std::string> AgentArgv(std::vector<std::string> args) {
  args.insert(args.begin(), "agent");
  args.push_back("--json");
  return args;
}

ChildLogs NumberedLogs(const std::string& dir) {
  static int counter = 0;
  const std::string prefix = dir + "/agent" + std::to_string(++counter);
  return {prefix + ".out", prefix + ".err"};
}

}  // namespace

AgentProcess::AgentProcess(const std::string& dir, std::vector<std::string> args,
                           std::map<std::string, std::string> env)
    : AgentProcess(std::move(args), NumberedLogs(dir), 0, env) {}

AgentProcess::AgentProcess(std::vector<std::string> args, ChildLogs logs, double stop_grace_seconds,
                           const std::map<std::string, std::string>& env)
    : process_(FULCRUM_BINARY, AgentArgv(std::move(args)), std::move(logs), env,
               stop_grace_seconds) {
  WaitFor([&] { return out().find('\n') != std::string::npos || Exited(); }, 15);
  std::string line = out();
  json doc = json::parse(line.substr(0, line.find('\n')), nullptr, false);
  if (!doc.is_discarded() && doc.contains("agent")) port_ = doc["agent"]["port"].get<int>();
}

httplib::Client AgentProcess::Client() const {
  httplib::Client c("127.0.0.1", port_);
  c.set_connection_timeout(2);
  c.set_read_timeout(5);
  return c;
}

json AgentProcess::Get(const std::string& path) const {
  auto res = Client().Get(path);
  if (!res || res->status != 200) return json();
  return json::parse(res->body, nullptr, false);
}

WebhookRecorder::WebhookRecorder() {
  http_.server().Post(R"(/hook.*)", [this](const httplib::Request& req, httplib::Response& res) {
    MutexLock lock(mutex_);
    ++attempts_;
    if (status_ != 200) {
      res.status = status_;
      return;
    }
    posts_.push_back({req.get_header_value("Idempotency-Key"), req.body});
    res.set_content("{}", "application/json");
  });
  http_.Start();
}

void WebhookRecorder::SetStatus(int status) {
  MutexLock lock(mutex_);
  status_ = status;
}

std::vector<std::pair<std::string, std::string>> WebhookRecorder::Posts() {
  MutexLock lock(mutex_);
  return posts_;
}

int WebhookRecorder::Attempts() {
  MutexLock lock(mutex_);
  return attempts_;
}

json WebhookRecorder::Find(const std::string& needle) {
  for (const auto& [key, body] : Posts()) {
    if (body.find(needle) != std::string::npos) return json::parse(body, nullptr, false);
  }
  return json();
}

AgentPeer::AgentPeer(const std::string& data_dir, std::vector<std::string> args)
    : agent_(
          [&] {
            for (const char* a : {"--listen", "127.0.0.1:0", "--data-dir"}) args.push_back(a);
            args.push_back(data_dir);
            return args;
          }(),
          ChildLogs{data_dir + "/agent.out", data_dir + "/agent.err"}, 10) {}

std::string AgentPeer::Get(const std::string& path) const {
  auto res = agent_.Client().Get(path);
  return res && res->status == 200 ? res->body : std::string();
}

std::string PrometheusPeer::Config(const std::vector<std::string>& targets,
                                   const std::vector<std::string>& rule_files) {
  std::string yaml = "global: {scrape_interval: 1s, evaluation_interval: 1s}\n";
  if (!rule_files.empty()) {
    yaml += "rule_files:\n";
    for (const std::string& f : rule_files) yaml += "  - '" + f + "'\n";
  }
  yaml += "scrape_configs:\n  - job_name: fulcrum\n    static_configs:\n      - targets: [";
  for (size_t i = 0; i < targets.size(); ++i) yaml += (i ? ", '" : "'") + targets[i] + "'";
  return yaml + "]\n";
}

namespace {
std::vector<std::string> PrometheusArgs(const std::string& dir, int port,
                                        const std::string& config) {
  std::filesystem::create_directories(dir + "/data");
  std::ofstream(dir + "/prometheus.yml") << config;
  return {"--config.file=" + dir + "/prometheus.yml", "--storage.tsdb.path=" + dir + "/data",
          "--web.listen-address=127.0.0.1:" + std::to_string(port)};
}
}  // namespace

PrometheusPeer::PrometheusPeer(const std::string& dir, const std::vector<std::string>& targets,
                               const std::vector<std::string>& rule_files)
    : port_(FreeLoopbackPort()),
      process_("prometheus", PrometheusArgs(dir, port_, Config(targets, rule_files)),
               dir + "/prometheus") {}

json PrometheusPeer::Api(const std::string& path_and_query) const {
  httplib::Client client("127.0.0.1", port_);
  client.set_connection_timeout(1);
  client.set_read_timeout(5);
  auto res = client.Get("/api/v1/" + path_and_query);
  if (!res || res->status != 200) return nullptr;
  auto doc = json::parse(res->body, nullptr, false);
  return doc.is_discarded() ? json(nullptr) : doc;
}

json PrometheusPeer::Query(const std::string& expr) const {
  json doc = Api("query?query=" + UrlEncode(expr));
  if (!doc.is_object() || doc.value("status", "") != "success") return nullptr;
  return doc["data"]["result"];
}

json PrometheusPeer::WaitForSeries(const std::string& expr, size_t min_series,
                                   double seconds) const {
  json result;
  PollUntil(
      [&] {
        result = Query(expr);
        return result.is_array() && result.size() >= min_series;
      },
      seconds);
  return result;
}

std::string UrlEncode(const std::string& text) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

}  // namespace fulcrum::testing
