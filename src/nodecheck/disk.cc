#include "nodecheck/disk.h"

#include <fcntl.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <random>
#include <vector>

namespace fulcrum::nodecheck {
namespace {

std::string Errno(const std::string& what) { return what + ": " + std::strerror(errno); }

}  // namespace

Result<DiskBenchResult> RunDiskBench(const DiskBenchOptions& options,
                                     const std::function<void(double)>& progress) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(options.directory, ec)) {
    return Status::InvalidInput("disk bench: " + options.directory +
                                ": expected an existing directory");
  }
  if (options.total_bytes <= 0 || options.block_bytes <= 0) {
    return Status::InvalidInput("disk bench: sizes must be positive");
  }
  std::string file = (fs::path(options.directory) / ".fulcrum-disk-bench.tmp").string();
  int fd = open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return Status::IoError(Errno("disk bench: cannot create " + file));

  // Random bytes so that compressing or deduplicating storage cannot flatter the figure.
  std::vector<char> block(static_cast<size_t>(options.block_bytes));
  std::mt19937_64 rng(42);
  for (size_t i = 0; i + 8 <= block.size(); i += 8) {
    uint64_t v = rng();
    std::memcpy(&block[i], &v, 8);
  }

  Status failure;
  double written = 0;
  auto start = std::chrono::steady_clock::now();
  while (written < options.total_bytes) {
    size_t want = static_cast<size_t>(std::min(options.block_bytes, options.total_bytes - written));
    size_t done = 0;
    while (done < want) {
      ssize_t n = write(fd, block.data() + done, want - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        failure = Status::IoError(Errno("disk bench: write to " + file));
        break;
      }
      done += static_cast<size_t>(n);
    }
    if (!failure.ok()) break;
    written += static_cast<double>(want);
    if (progress) progress(written / options.total_bytes);
  }
  if (failure.ok() && fsync(fd) != 0) failure = Status::IoError(Errno("disk bench: fsync " + file));
  auto end = std::chrono::steady_clock::now();
  close(fd);
  fs::remove(file, ec);
  if (!failure.ok()) return failure;

  DiskBenchResult result;
  result.path = options.directory;
  result.written_bytes = written;
  result.seconds = std::chrono::duration<double>(end - start).count();
  result.write_bytes_per_second = result.seconds > 0 ? written / result.seconds : 0;
  if (options.checkpoint_bytes && result.write_bytes_per_second > 0) {
    result.checkpoint_bytes = options.checkpoint_bytes;
    result.checkpoint_seconds = *options.checkpoint_bytes / result.write_bytes_per_second;
  }
  struct statvfs vfs;
  if (statvfs(options.directory.c_str(), &vfs) == 0) {
    result.free_bytes = static_cast<double>(vfs.f_bavail) * static_cast<double>(vfs.f_frsize);
  }
  return result;
}

}  // namespace fulcrum::nodecheck
