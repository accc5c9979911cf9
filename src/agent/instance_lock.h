// One agent per data dir: an exclusive flock(2) on <data-dir>/agent.lock, held for the agent's
// lifetime and released by the kernel when the process dies (kill -9 leaves no stale lock). The
// file holds the holder's pid, so a second agent's error names the first one. Move-only RAII
// value; not shared between threads.
#pragma once

#include <string>

#include "core/status.h"

namespace fulcrum::agent {

class InstanceLock {
 public:
  // kUnavailable ("data dir D is in use by another fulcrum agent (pid N)") when it is held.
  static Result<InstanceLock> Acquire(const std::string& data_dir);
  InstanceLock(InstanceLock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  InstanceLock& operator=(InstanceLock&& other) noexcept;
  InstanceLock(const InstanceLock&) = delete;
  InstanceLock& operator=(const InstanceLock&) = delete;
  ~InstanceLock();

 private:
  explicit InstanceLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

}  // namespace fulcrum::agent
