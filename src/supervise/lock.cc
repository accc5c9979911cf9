#include "supervise/lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "store/sqlite.h"

namespace fulcrum::supervise {

Status ValidateJobName(const std::string& name) {
  if (name.empty() || name.size() > 100 || name == "." || name == "..") {
    return Status::InvalidInput("--name: expected 1-100 characters, found '" + name + "'");
  }
  for (char c : name) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.')) {
      return Status::InvalidInput("--name: expected letters, digits, '-', '_' or '.', found '" +
                                  name + "'");
    }
  }
  return Status::Ok();
}

Result<JobLock> JobLock::Acquire(const std::string& data_dir, const std::string& job_id) {
  FULCRUM_RETURN_IF_ERROR(ValidateJobName(job_id));
  std::filesystem::path dir = std::filesystem::path(data_dir) / "locks";
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::IoError(dir.string() + ": " + ec.message());
  const std::string path = (dir / (job_id + ".lock")).string();
  return AcquireFile(path, "job '" + job_id + "' is already supervised by");
}

Result<JobLock> JobLock::AcquireFile(const std::string& path, const std::string& busy) {
  FULCRUM_RETURN_IF_ERROR(store::CreateDataFile(path));
  int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return Status::IoError(path + ": " + strerror(errno));
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    char buf[32] = {0};
    ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
    ::close(fd);
    std::string holder = n > 0 ? std::string(buf, static_cast<size_t>(n)) : "?";
    while (!holder.empty() && (holder.back() == '\n' || holder.back() == ' ')) holder.pop_back();
    return Status::Unavailable(busy + " pid " + holder + " (lock " + path + ")");
  }
  std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, pid.data(), pid.size(), 0) < 0) {
    // The lock holds without the pid; only the message would lack it.
  }
  return JobLock(fd);
}

JobLock& JobLock::operator=(JobLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

JobLock::~JobLock() {
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace fulcrum::supervise
