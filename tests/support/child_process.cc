#include "support/child_process.h"

#include <fcntl.h>
#include <httplib.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "support/fake_http_server.h"
#include "support/run_binary.h"

namespace fulcrum::testing {
namespace {

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

ChildProcess::ChildProcess(const std::string& program, const std::vector<std::string>& args,
                           const std::string& log_prefix,
                           const std::map<std::string, std::string>& env)
    : log_prefix_(log_prefix) {
  std::string out = log_prefix + ".out", err = log_prefix + ".err";
  pid_ = fork();
  if (pid_ == 0) {
    setpgid(0, 0);
    int o = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int e = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(o, 1);
    dup2(e, 2);
    for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
    std::vector<char*> argv{const_cast<char*>(program.c_str())};
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execvp(program.c_str(), argv.data());
    _exit(127);
  }
}

ChildProcess::~ChildProcess() {
  if (pid_ <= 0 || Exited()) return;
  kill(pid_, SIGTERM);
  if (!PollUntil([&] { return Exited(); }, 10)) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
}

bool ChildProcess::Exited() {
  if (exited_ || pid_ <= 0) return true;
  int status = 0;
  if (waitpid(pid_, &status, WNOHANG) == pid_) exited_ = true;
  return exited_;
}

std::string ChildProcess::out() const { return ReadAll(log_prefix_ + ".out"); }
std::string ChildProcess::err() const { return ReadAll(log_prefix_ + ".err"); }

namespace {
std::vector<std::string> AgentArgs(const std::string& data_dir, std::vector<std::string> args) {
  args.insert(args.begin(), "agent");
  for (const char* a : {"--listen", "127.0.0.1:0", "--json", "--data-dir"}) args.push_back(a);
  args.push_back(data_dir);
  return args;
}
}  // namespace

AgentPeer::AgentPeer(const std::string& data_dir, std::vector<std::string> args)
    : process_(FULCRUM_BINARY, AgentArgs(data_dir, std::move(args)), data_dir + "/agent") {
  PollUntil([&] { return process_.out().find('\n') != std::string::npos || process_.Exited(); },
            15);
  std::string line = process_.out();
  auto doc = nlohmann::json::parse(line.substr(0, line.find('\n')), nullptr, false);
  if (!doc.is_discarded() && doc.contains("agent")) port_ = doc["agent"]["port"].get<int>();
}

std::string AgentPeer::Get(const std::string& path) const {
  httplib::Client client("127.0.0.1", port_);
  client.set_connection_timeout(2);
  client.set_read_timeout(5);
  auto res = client.Get(path);
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

nlohmann::json PrometheusPeer::Api(const std::string& path_and_query) const {
  httplib::Client client("127.0.0.1", port_);
  client.set_connection_timeout(1);
  client.set_read_timeout(5);
  auto res = client.Get("/api/v1/" + path_and_query);
  if (!res || res->status != 200) return nullptr;
  auto doc = nlohmann::json::parse(res->body, nullptr, false);
  return doc.is_discarded() ? nlohmann::json(nullptr) : doc;
}

nlohmann::json PrometheusPeer::Query(const std::string& expr) const {
  nlohmann::json doc = Api("query?query=" + UrlEncode(expr));
  if (!doc.is_object() || doc.value("status", "") != "success") return nullptr;
  return doc["data"]["result"];
}

nlohmann::json PrometheusPeer::WaitForSeries(const std::string& expr, size_t min_series,
                                             double seconds) const {
  nlohmann::json result;
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
