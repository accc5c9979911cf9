// Exclusive locks a process holds for its lifetime: one agent per data dir, one supervisor per
// job. The kernel drops them when the holder's descriptor closes or the process dies (kill -9
// included), so a crash never leaves a stale lock. They are taken on the thing they protect, not
// on a lock file: removing a file cannot let a second holder in. A holder file beside the lock
// keeps the holder's pid, for the message only. Move-only RAII value; not shared between threads.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "core/status.h"

namespace fulcrum {

class FileLock {
 public:
  // flock(2) LOCK_EX | LOCK_NB on the directory `dir` itself (opened O_RDONLY | O_DIRECTORY).
  // Held: kUnavailable "<busy> pid N (lock <dir>)", N read from `holder_file` ("?" when that
  // file is gone). On success `holder_file` gets this process's pid.
  static Result<FileLock> LockDirectory(const std::string& dir, const std::string& holder_file,
                                        const std::string& busy);
  // An open file description lock (fcntl(2) F_OFD_SETLK, F_WRLCK) on the one byte at `offset`
  // of the existing file `path`: a record of that file, so many locks can share one file. It does
  // not conflict with a lock on another byte. Held: as LockDirectory, "(lock <path> byte N)".
  // Closing it is a close of the file: "If a process closes any file descriptor referring to a
  // file, then all of the process's [traditional record] locks on that file are released"
  // (fcntl(2)), SQLite's included, so on an SQLite database destroy the FileLock only after the
  // process's own connections to that file are closed.
  static Result<FileLock> LockRecord(const std::string& path, off_t offset,
                                     const std::string& holder_file, const std::string& busy);

  FileLock(FileLock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  FileLock& operator=(FileLock&& other) noexcept;
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;
  ~FileLock();

 private:
  explicit FileLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

// 64-bit FNV-1a of `text` (the FNV spec, draft-eastlake-fnv: offset basis 14695981039346656037,
// prime 1099511628211): a stable number for a name, e.g. the record a job's lock takes.
uint64_t Fnv1a64(const std::string& text);

}  // namespace fulcrum
