// A fake NCCL RAS status socket on 127.0.0.1 for tests, written from NVIDIA/nccl's
// src/ras/client_support.cc (rasClientEventLoop, rasClientRunInit, rasClientRunComms, the json*
// writers) and src/ras/client.cc at v2.24.3-1 and v2.29.2-1: "CLIENT PROTOCOL n" -> "SERVER
// PROTOCOL 2", "TIMEOUT n" -> "OK", "SET FORMAT json|text" -> "OK" (only when `json` is on,
// as from v2.28.7-1; else "ERROR: Unknown command ..."), "STATUS" -> the report, then close.
// StalledText / StalledJson render a job whose one rank is behind, with NCCL's format strings.
// Header-only; the server runs one thread; setters are thread-safe.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>

namespace fulcrum::testing {

// One rank as the fake job reports it.
struct FakeRasRank {
  int rank;
  const char* host;
  int pid;
  int cuda_dev;
  unsigned long all_reduce_ops;
};

// rasClientRunInit's header and rasClientRunComms's MISMATCH block (v2.29.2-1) for a job of
// `n` ranks on one communicator where every rank but `behind` launched `ops` AllReduce
// operations and `behind` launched ops - 1. Ranks live on host "10.0.0.<1 + rank / 4>", rank r
// in process pid_base + r.
inline std::string StalledText(int n, int behind, unsigned long ops, unsigned long long hash,
                               int pid_base = 4000) {
  char buf[512];
  std::string out =
      "NCCL version 2.29.2+cuda12.9 compiled with CUDA 12.9\n"
      "CUDA runtime version 12090, driver version 12090\n\n"
      "Job summary\n===========\n\n";
  out += "\nCommunicators... (0.002s)\n=============\n\n";
  out +=
      "Group     Comms     Nodes     Ranks     Ranks     Ranks    Status  Errors\n"
      "    #  in group  per comm  per node  per comm  in group\n";
  std::snprintf(buf, sizeof buf, "%5d  %8d  %8d  %8s  %8d  %8d  %8s  %6s\n", 0, 1, (n + 3) / 4, "4",
                n, n, "RUNNING", "MISMATCH");
  out += buf;
  out += "\nErrors\n======\n\nWarnings\n========\n\n";
  std::snprintf(buf, sizeof buf, "#%d-%d (%016llx) MISMATCH\n", 0, 0, hash);
  out += buf;
  out += "  Communicator ranks have different AllReduce operation counts\n";
  std::snprintf(buf, sizeof buf, "  %d ranks have launched up to operation %lu\n", n - 1, ops);
  out += buf;
  std::snprintf(buf, sizeof buf,
                "  Rank %d has launched up to operation %lu -- GPU %d managed by process %d on "
                "node 10.0.0.%d\n",
                behind, ops - 1, behind % 4, pid_base + behind, 1 + behind / 4);
  out += buf;
  out += "\n";
  return out;
}

// The same job through jsonWriteHeader / jsonWriteRankData / jsonWriteFooter (v2.29.2-1);
// `behind` -1: every rank at `ops` (nothing stalled).
inline std::string StalledJson(int n, int behind, unsigned long ops, unsigned long long hash,
                               int pid_base = 4000) {
  char buf[512];
  std::string out =
      "{\n  \"nccl_version\": \"2.29.2\",\n  \"cuda_runtime_version\": 12090,\n"
      "  \"cuda_driver_version\": 12090,\n  \"timestamp\": \"2026-01-01 00:00:00\",\n"
      "  \"communicators_count\": 1,\n  \"communicators\": [\n";
  std::snprintf(
      buf, sizeof buf,
      "    {\n      \"hash\": \"0x%llx\",\n      \"secondary_hash\": \"0x1:0x2\",\n"
      "      \"size\": %d,\n      \"ranks_count\": %d,\n      \"missing_ranks_count\": 0,\n"
      "      \"ranks\": [\n",
      hash, n, n);
  out += buf;
  for (int r = 0; r < n; ++r) {
    std::snprintf(
        buf, sizeof buf,
        "%s        {\n          \"rank\": %d,\n          \"host\": \"10.0.0.%d\",\n"
        "          \"pid\": %d,\n          \"cuda_dev\": %d,\n          \"nvml_dev\": %d,\n"
        "          \"status\": {\n            \"init_state\": 0,\n"
        "            \"async_error\": 0,\n            \"finalize_called\": false,\n"
        "            \"destroy_flag\": false,\n            \"abort_flag\": false\n"
        "          },\n          \"collective_counts\": {\n"
        "            \"Broadcast\": 0,\n            \"AllReduce\": %lu\n          }\n"
        "        }",
        r == 0 ? "" : ",\n", r, 1 + r / 4, pid_base + r, r % 4, r % 4, r == behind ? ops - 1 : ops);
    out += buf;
  }
  out += "\n      ],\n      \"missing_ranks\": [\n\n      ]\n    }";
  out +=
      "\n  ],\n  \"ras\": {\n    \"collection_time_sec\": 0.002,\n    \"timeouts_count\": 0\n"
      "  }\n}\n";
  return out;
}

class FakeNcclRas {
 public:
  FakeNcclRas() = default;
  ~FakeNcclRas() { Stop(); }
  FakeNcclRas(const FakeNcclRas&) = delete;
  FakeNcclRas& operator=(const FakeNcclRas&) = delete;

  // Binds 127.0.0.1 on an ephemeral port and serves; returns the port, -1 on failure.
  int Start() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        ::listen(fd_, 16) != 0 || ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len)) {
      return -1;
    }
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { Serve(); });
    return port_;
  }
  void Stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

  void SetReports(std::string text, std::string json) {
    std::lock_guard<std::mutex> lock(mutex_);
    text_ = std::move(text);
    json_ = std::move(json);
  }
  void SetJson(bool on) { json_on_ = on; }
  // Bytes sent at once on connect instead of speaking the protocol (a foreign service).
  void SetGarbage(std::string bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    garbage_ = std::move(bytes);
  }
  int statuses() const { return statuses_; }  // STATUS requests answered

 private:
  void Serve() {
    while (!stop_) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) continue;
      timeval tv{2, 0};
      ::setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
      Session(c);
      ::close(c);
    }
  }

  void Session(int c) {
    std::string garbage;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      garbage = garbage_;
    }
    if (!garbage.empty()) {
      Send(c, garbage);
      return;
    }
    bool json = false;
    std::string buffer;
    char chunk[1024];
    while (!stop_) {
      ssize_t n = ::recv(c, chunk, sizeof chunk, 0);
      if (n <= 0) return;
      buffer.append(chunk, static_cast<size_t>(n));
      size_t nl;
      while ((nl = buffer.find('\n')) != std::string::npos) {
        std::string cmd = buffer.substr(0, nl);
        buffer.erase(0, nl + 1);
        if (!cmd.empty() && cmd.back() == '\r') cmd.pop_back();
        if (::strncasecmp(cmd.c_str(), "client protocol ", 16) == 0) {
          Send(c, "SERVER PROTOCOL 2\n");
        } else if (::strncasecmp(cmd.c_str(), "timeout ", 8) == 0) {
          Send(c, "OK\n");
        } else if (json_on_ && ::strcasecmp(cmd.c_str(), "set format json") == 0) {
          json = true;
          Send(c, "OK\n");
        } else if (::strcasecmp(cmd.c_str(), "status") == 0 ||
                   ::strcasecmp(cmd.c_str(), "verbose status") == 0) {
          std::string report;
          {
            std::lock_guard<std::mutex> lock(mutex_);
            report = json ? json_ : text_;
          }
          Send(c, report);
          ++statuses_;
          return;  // RAS_CLIENT_FINISHED: the server closes after the report
        } else {
          Send(c, "ERROR: Unknown command " + cmd + "\n");
        }
      }
    }
  }

  static void Send(int c, const std::string& s) {
    size_t done = 0;
    while (done < s.size()) {
      ssize_t n = ::send(c, s.data() + done, s.size() - done, MSG_NOSIGNAL);
      if (n <= 0) return;
      done += static_cast<size_t>(n);
    }
  }

  int fd_ = -1;
  int port_ = -1;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> json_on_{true};
  std::atomic<int> statuses_{0};
  std::mutex mutex_;
  std::string text_, json_, garbage_;
};

}  // namespace fulcrum::testing
