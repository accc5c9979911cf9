// Host facts for /v1/host: CPU utilization (from /proc/stat, between two calls), memory (from
// /proc/meminfo) and disk space (statvfs of a path). HostProbe keeps the previous CPU counters;
// Read() is thread-safe (a mutex). Unknown values are nullopt.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>

namespace fulcrum::agent {

struct HostInfo {
  std::string hostname;
  std::optional<double> cpu_utilization_pct;  // since the previous Read(); nullopt on the first
  std::optional<double> memory_used_bytes;
  std::optional<double> memory_total_bytes;
  std::string disk_path;
  std::optional<double> disk_free_bytes;
  std::optional<double> disk_total_bytes;
};

std::string Hostname();

class HostProbe {
 public:
  HostInfo Read(const std::string& disk_path);

 private:
  std::mutex mutex_;
  uint64_t last_busy_ = 0;   // guarded by mutex_
  uint64_t last_total_ = 0;  // guarded by mutex_
};

}  // namespace fulcrum::agent
