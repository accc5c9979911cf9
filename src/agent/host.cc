#include "agent/host.h"

#include <sys/statvfs.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

namespace fulcrum::agent {

std::string Hostname() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "unknown";
  return name;
}

HostInfo HostProbe::Read(const std::string& disk_path) {
  HostInfo info;
  info.hostname = Hostname();
  std::ifstream stat("/proc/stat");
  std::string cpu;
  uint64_t user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
  if (stat >> cpu >> user >> nice >> system >> idle >> iowait >> irq >> softirq >> steal &&
      cpu == "cpu") {
    uint64_t busy = user + nice + system + irq + softirq + steal;
    uint64_t total = busy + idle + iowait;
    MutexLock lock(mutex_);
    if (last_total_ != 0 && total > last_total_) {
      info.cpu_utilization_pct =
          100.0 * static_cast<double>(busy - last_busy_) / static_cast<double>(total - last_total_);
    }
    last_busy_ = busy;
    last_total_ = total;
  }
  std::ifstream meminfo("/proc/meminfo");
  std::string line;
  std::optional<double> total_kib, available_kib;
  while (std::getline(meminfo, line)) {
    std::istringstream words(line);
    std::string key;
    double kib = 0;
    words >> key >> kib;
    if (key == "MemTotal:") total_kib = kib;
    if (key == "MemAvailable:") available_kib = kib;
  }
  if (total_kib) info.memory_total_bytes = *total_kib * 1024;
  if (total_kib && available_kib) info.memory_used_bytes = (*total_kib - *available_kib) * 1024;
  info.disk_path = disk_path;
  struct statvfs fs {};
  if (statvfs(disk_path.c_str(), &fs) == 0) {
    info.disk_free_bytes = static_cast<double>(fs.f_bavail) * fs.f_frsize;
    info.disk_total_bytes = static_cast<double>(fs.f_blocks) * fs.f_frsize;
  }
  return info;
}

}  // namespace fulcrum::agent
