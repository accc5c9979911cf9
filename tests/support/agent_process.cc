#include "support/agent_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include "support/run_binary.h"

namespace fulcrum::testing {

using nlohmann::json;
using SteadyClock = std::chrono::steady_clock;

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

void WriteFile(const std::filesystem::path& path, const std::string& text) {
  std::ofstream(path) << text;
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

pid_t SpawnLogged(const std::string& program, const std::vector<std::string>& args,
                  const std::string& out_path, const std::string& err_path,
                  const std::map<std::string, std::string>& env) {
  pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    int o = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int e = err_path == out_path ? o : open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(o, 1);
    dup2(e, 2);
    for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
    std::vector<char*> argv{const_cast<char*>(program.c_str())};
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execvp(program.c_str(), argv.data());
    _exit(127);
  }
  return pid;
}

PeerProcess::PeerProcess(const std::string& program, const std::vector<std::string>& args,
                         const std::string& log_path)
    : log_path_(log_path), pid_(SpawnLogged(program, args, log_path, log_path, {})) {}

PeerProcess::~PeerProcess() {
  if (pid_ > 0) {
    kill(pid_, SIGTERM);
    if (!WaitFor([&] { return waitpid(pid_, nullptr, WNOHANG) == pid_; }, 5)) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
}

AgentProcess::AgentProcess(const std::string& dir, std::vector<std::string> args,
                           std::map<std::string, std::string> env)
    : dir_(dir) {
  static int counter = 0;
  tag_ = std::to_string(++counter);
  args.insert(args.begin(), "agent");
  args.push_back("--json");
  std::string out = dir + "/agent" + tag_ + ".out", err = dir + "/agent" + tag_ + ".err";
  out_path_ = out;
  err_path_ = err;
  pid_ = SpawnLogged(FULCRUM_BINARY, args, out, err, env);
  WaitFor([&] { return ReadFile(out_path_).find('\n') != std::string::npos || Exited(); }, 15);
  std::string line = ReadFile(out_path_);
  json doc = json::parse(line.substr(0, line.find('\n')), nullptr, false);
  if (!doc.is_discarded() && doc.contains("agent")) port_ = doc["agent"]["port"].get<int>();
}

AgentProcess::~AgentProcess() {
  if (pid_ > 0 && exit_code_ < 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
}

bool AgentProcess::Exited() {
  if (exit_code_ >= 0) return true;
  int status = 0;
  if (waitpid(pid_, &status, WNOHANG) == pid_) {
    exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return true;
  }
  return false;
}

int AgentProcess::Stop(int signal) {
  kill(pid_, signal);
  WaitFor([&] { return Exited(); }, 10);
  return exit_code_;
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

}  // namespace fulcrum::testing
