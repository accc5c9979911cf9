// Host facts for /v1/host: CPU utilization (from /proc/stat, between two calls), memory (from
// /proc/meminfo) and disk space (statvfs of a path). HostProbe keeps the previous CPU counters;
// Read() is thread-safe (a mutex). Unknown values are nullopt.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/mutex.h"
#include "server/agent_state.h"

namespace fulcrum::agent {

using server::HostInfo;

std::string Hostname();

class HostProbe {
 public:
  HostInfo Read(const std::string& disk_path);

 private:
  Mutex mutex_;
  uint64_t last_busy_ GUARDED_BY(mutex_) = 0;
  uint64_t last_total_ GUARDED_BY(mutex_) = 0;
};

}  // namespace fulcrum::agent
