// Hostile loopback clients for the hardening stress test (issue 29), each as a hostile network
// would behave: a header flood (many requests at once, each with megabytes of small header
// lines), a trickler that keeps N sockets sending one header byte every 2 s and reconnects each
// one the server closes (a slowloris), a /v1/health latency probe (a new connection per probe,
// the whole answer read), and the memory and open-file figures around them. All on 127.0.0.1.
// HeaderFlood and HealthProbeMs block their caller; Trickler runs its own thread (its counters
// are atomic). bench/perf/idle_sockets_latency.sh does the same from Python, as a benchmark.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <string>
#include <thread>
#include <vector>

namespace fulcrum::testing {

// A GET of /v1/health with `bytes` of 35-byte header lines.
std::string HeaderFloodRequest(size_t bytes);
// Sends `requests` copies of `flood` (HeaderFloodRequest) to 127.0.0.1:port at once and reads
// each answer to the end; the HTTP status of each (0: no answer).
std::vector<int> HeaderFlood(int port, int requests, const std::string& flood);

// `sockets` connections to 127.0.0.1:port, each sending a request line and "X-Slow: " at once,
// then one byte every 2 s, reconnected whenever the server closes it; stopped on destruction.
class Trickler {
 public:
  Trickler(int port, int sockets);
  ~Trickler();
  Trickler(const Trickler&) = delete;
  Trickler& operator=(const Trickler&) = delete;
  int open() const { return open_; }              // connected now
  int reconnects() const { return reconnects_; }  // closed by the server and opened again

 private:
  void Run();
  int port_;
  int count_;
  std::atomic<bool> stop_{false};
  std::atomic<int> open_{0};
  std::atomic<int> reconnects_{0};
  std::thread thread_;
};

// One probe: a new connection to 127.0.0.1:port, `GET /v1/health` (Connection: close), the
// whole answer read. Its latency in milliseconds, or -1 when no 200 came within
// `timeout_seconds`.
double HealthProbeMs(int port, double timeout_seconds);

// The nearest-rank `q` quantile (0 < q <= 1) of `values`; 0 when there are none.
double Quantile(std::vector<double> values, double q);

// VmRSS / VmHWM (peak resident set) of process `pid` from /proc/PID/status, in MiB; -1 when
// unreadable.
double ResidentMiB(pid_t pid);
double PeakResidentMiB(pid_t pid);

// Raises this process's RLIMIT_NOFILE soft limit to at least `wanted` (at most the hard limit;
// children inherit it); the soft limit after.
long RaiseOpenFileLimit(long wanted);

}  // namespace fulcrum::testing
