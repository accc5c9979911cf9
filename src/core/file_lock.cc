#include "core/file_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace fulcrum {
namespace {

// The pid in `holder_file`, "?" when it cannot be read.
std::string HolderPid(const std::string& holder_file) {
  int fd = ::open(holder_file.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return "?";
  char buf[32] = {0};
  ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  std::string pid = n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
  while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' ')) pid.pop_back();
  return pid.empty() ? "?" : pid;
}

// Writes this process's pid to `holder_file` (created 0600; a symlink is refused). Best effort:
// the lock holds without it, only a second holder's message would lack the pid.
void WriteHolderPid(const std::string& holder_file) {
  int fd = ::open(holder_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return;
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::write(fd, pid.data(), pid.size()) < 0) {
    // Nothing to do: see above.
  }
  ::close(fd);
}

}  // namespace

Result<FileLock> FileLock::LockDirectory(const std::string& dir, const std::string& holder_file,
                                         const std::string& busy) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return Status::IoError(dir + ": " + strerror(errno));
  // flock(2): "LOCK_EX Place an exclusive lock. Only one process may hold an exclusive lock for
  // a given file at a given time"; the lock belongs to the open file description, so it lasts
  // until this descriptor (and any dup of it) is closed. A directory is a file to flock.
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int error = errno;
    ::close(fd);
    if (error != EWOULDBLOCK) return Status::IoError(dir + ": flock: " + strerror(error));
    return Status::Unavailable(busy + " pid " + HolderPid(holder_file) + " (lock " + dir + ")");
  }
  WriteHolderPid(holder_file);
  return FileLock(fd);
}

Result<FileLock> FileLock::LockRecord(const std::string& path, off_t offset,
                                      const std::string& holder_file, const std::string& busy) {
  int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return Status::IoError(path + ": " + strerror(errno));
  // fcntl(2), "Open file description locks (non-POSIX)": F_OFD_SETLK acquires (l_type F_WRLCK)
  // a lock "on the bytes specified by the l_whence, l_start, and l_len fields"; "If a
  // conflicting lock is held by another process, this call returns -1 and sets errno to EAGAIN";
  // l_pid "must be set to zero". The lock belongs to the open file description: it conflicts
  // with another open(2) of the file in this process too, and is "only automatically released
  // on the last close of the open file description, instead of being released on any close of
  // the file". EACCES is what traditional F_SETLK may return for the same conflict.
  struct flock lock {};
  lock.l_type = F_WRLCK;
  lock.l_whence = SEEK_SET;
  lock.l_start = offset;
  lock.l_len = 1;
  lock.l_pid = 0;
  if (::fcntl(fd, F_OFD_SETLK, &lock) != 0) {
    const int error = errno;
    ::close(fd);
    if (error != EAGAIN && error != EACCES) {
      return Status::IoError(path + ": fcntl(F_OFD_SETLK): " + strerror(error));
    }
    return Status::Unavailable(busy + " pid " + HolderPid(holder_file) + " (lock " + path +
                               " byte " + std::to_string(offset) + ")");
  }
  WriteHolderPid(holder_file);
  return FileLock(fd);
}

FileLock& FileLock::operator=(FileLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

FileLock::~FileLock() {
  if (fd_ >= 0) ::close(fd_);
}

uint64_t Fnv1a64(const std::string& text) {
  uint64_t hash = 14695981039346656037ull;
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  return hash;
}

}  // namespace fulcrum
