// A per-job lock so that no two supervisors run the same job: an exclusive flock(2) on
// <data-dir>/locks/<job>.lock held for the supervisor's lifetime (released by the kernel when the
// process dies, so a crashed supervisor never leaves a stale lock). The file holds the holder's
// pid for the error message. Move-only RAII value; not shared between threads.
#pragma once

#include <string>

#include "core/status.h"

namespace fulcrum::supervise {

class JobLock {
 public:
  // Fails with kUnavailable ("job X is already supervised by pid N") when another process holds it.
  static Result<JobLock> Acquire(const std::string& data_dir, const std::string& job_id);
  // The same lock on any file (created with store::CreateDataFile's modes), e.g. the agent's
  // <data-dir>/agent.lock. When held, kUnavailable "<busy> pid N (lock PATH)".
  static Result<JobLock> AcquireFile(const std::string& path, const std::string& busy);
  JobLock(JobLock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  JobLock& operator=(JobLock&& other) noexcept;
  JobLock(const JobLock&) = delete;
  JobLock& operator=(const JobLock&) = delete;
  ~JobLock();

 private:
  explicit JobLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

// Job names become file names: letters, digits, '-', '_', '.'; 1-100 characters, not "." or "..".
Status ValidateJobName(const std::string& name);

}  // namespace fulcrum::supervise
