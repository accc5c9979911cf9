#include "support/hostile_clients.h"

#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <string>

#include "support/agent_process.h"
#include "support/fake_http_server.h"

namespace fulcrum::testing {
namespace {

bool SendAll(int fd, const std::string& bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = send(fd, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

std::string ReadToEnd(int fd) {
  std::string out;
  char buf[16384];
  ssize_t n = 0;
  while ((n = recv(fd, buf, sizeof buf, 0)) > 0) out.append(buf, static_cast<size_t>(n));
  return out;
}

double StatusFieldMiB(pid_t pid, const std::string& field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field + ":", 0) == 0) return std::atof(line.c_str() + field.size() + 1) / 1024;
  }
  return -1;
}

constexpr const char* kTrickleHead = "GET /v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ";

}  // namespace

std::string HeaderFloodRequest(size_t bytes) {
  std::string flood = "GET /v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\n";
  flood.reserve(bytes + 64);
  for (int i = 0; flood.size() < bytes; ++i) {
    flood += "X-Flood-" + std::to_string(100000 + i) + ": aaaaaaaaaaaaaaaaaa\r\n";  // 35 bytes
  }
  flood += "\r\n";
  return flood;
}

std::vector<int> HeaderFlood(int port, int requests, const std::string& flood) {
  std::vector<int> statuses(static_cast<size_t>(requests), 0);
  std::vector<std::thread> clients;
  for (int i = 0; i < requests; ++i) {
    clients.emplace_back([&, i] {
      int fd = ConnectLoopback(port, 30);
      if (fd < 0) return;
      (void)SendAll(fd, flood);  // the server may stop reading once it has answered
      statuses[static_cast<size_t>(i)] = StatusOf(ReadToEnd(fd));
      close(fd);
    });
  }
  for (auto& c : clients) c.join();
  return statuses;
}

Trickler::Trickler(int port, int sockets) : port_(port), count_(sockets) {
  thread_ = std::thread([this] { Run(); });
}

Trickler::~Trickler() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

void Trickler::Run() {
  auto opened = [&] {
    // A connect that a full listen backlog holds is given up after 1 s (retried next round), so
    // that stopping never waits on SYN retries.
    int fd = ConnectLoopback(port_, 1);
    if (fd >= 0 && !SendAll(fd, kTrickleHead)) {
      close(fd);
      fd = -1;
    }
    return fd;
  };
  std::vector<int> fds(static_cast<size_t>(count_), -1);
  for (int& fd : fds) {
    if (stop_) break;
    fd = opened();
    if (fd >= 0) ++open_;
  }
  while (!stop_) {
    const auto round = std::chrono::steady_clock::now();
    for (int& fd : fds) {
      if (stop_) break;
      // Closed by the server: an answer or EOF is readable, or the byte cannot be sent.
      pollfd p{fd, POLLIN, 0};
      const bool closed = fd < 0 || poll(&p, 1, 0) != 0 || send(fd, "a", 1, MSG_NOSIGNAL) != 1;
      if (!closed) continue;
      if (fd >= 0) {
        close(fd);
        --open_;
      }
      fd = opened();
      if (fd >= 0) ++open_;
      ++reconnects_;
    }
    while (!stop_ && std::chrono::steady_clock::now() - round < std::chrono::seconds(2)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  for (int fd : fds) {
    if (fd >= 0) close(fd);
  }
  open_ = 0;
}

double HealthProbeMs(int port, double timeout_seconds) {
  const auto start = std::chrono::steady_clock::now();
  int fd = ConnectLoopback(port, timeout_seconds);
  if (fd < 0) return -1;
  const bool sent =
      SendAll(fd, "GET /v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
  const std::string answer = sent ? ReadToEnd(fd) : std::string();
  close(fd);
  if (StatusOf(answer) != 200) return -1;
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

double Quantile(std::vector<double> values, double q) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t rank = static_cast<size_t>(std::ceil(q * static_cast<double>(values.size())));
  return values[std::min(values.size(), std::max<size_t>(rank, 1)) - 1];
}

double ResidentMiB(pid_t pid) { return StatusFieldMiB(pid, "VmRSS"); }
double PeakResidentMiB(pid_t pid) { return StatusFieldMiB(pid, "VmHWM"); }

long RaiseOpenFileLimit(long wanted) {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return -1;
  if (limit.rlim_cur < static_cast<rlim_t>(wanted)) {
    limit.rlim_cur = std::min(limit.rlim_max, static_cast<rlim_t>(wanted));
    (void)setrlimit(RLIMIT_NOFILE, &limit);
    (void)getrlimit(RLIMIT_NOFILE, &limit);
  }
  return static_cast<long>(limit.rlim_cur);
}

}  // namespace fulcrum::testing
