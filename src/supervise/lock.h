// A per-job lock so that no two supervisors run the same job: a core::FileLock record lock (an
// open file description lock, fcntl(2) F_OFD_SETLK) on the job's own byte of <data-dir>/jobs.db,
// held for the supervisor's lifetime and dropped by the kernel when the process dies (a crashed
// supervisor never leaves a stale lock). It lives on the database that holds the job, so removing
// a file in locks/ does not let a second supervisor in; <data-dir>/locks/<job>.pid keeps the
// holder's pid for the message. Destroy it after the process's JobsDb is closed (file_lock.h).
// Move-only RAII value; not shared between threads.
#pragma once

#include <sys/types.h>

#include <string>

#include "core/file_lock.h"
#include "core/status.h"

namespace fulcrum::supervise {

class JobLock {
 public:
  // Fails with kUnavailable ("job X is already supervised by pid N") when another process (or
  // another JobLock of this one) holds it.
  static Result<JobLock> Acquire(const std::string& data_dir, const std::string& job_id);

 private:
  explicit JobLock(FileLock lock) : lock_(std::move(lock)) {}
  FileLock lock_;
};

// The byte of jobs.db that job `job_id`'s lock takes: 2 TiB plus 40 bits of the name's FNV-1a
// hash, far above the bytes SQLite locks (1 GiB to 1 GiB + 512: PENDING_BYTE 0x40000000,
// RESERVED_BYTE, SHARED_FIRST and SHARED_SIZE 510 in SQLite's src/os.h), so the two never meet. Two
// names that share a byte (about 1 in 10^12 per pair) cannot run at the same time.
off_t JobLockOffset(const std::string& job_id);

// Job names become file names: letters, digits, '-', '_', '.'; 1-100 characters, not "." or "..".
Status ValidateJobName(const std::string& name);

}  // namespace fulcrum::supervise
