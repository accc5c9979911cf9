#include "supervise/checkpoints.h"

#include <fnmatch.h>

#include <algorithm>
#include <chrono>
#include <filesystem>

namespace fulcrum::supervise {
namespace fs = std::filesystem;
namespace {

double ToUnix(fs::file_time_type t) {
  auto sys = std::chrono::file_clock::to_sys(t);
  return std::chrono::duration<double>(sys.time_since_epoch()).count();
}

double WallNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// Total size and newest mtime of a file or a directory tree.
void Measure(const fs::path& path, double& size, double& mtime) {
  std::error_code ec;
  size = 0;
  mtime = ToUnix(fs::last_write_time(path, ec));
  if (fs::is_directory(path, ec)) {
    for (auto it = fs::recursive_directory_iterator(path, ec); !ec && it != fs::end(it);
         it.increment(ec)) {
      std::error_code ec2;
      if (it->is_regular_file(ec2)) size += static_cast<double>(it->file_size(ec2));
      mtime = std::max(mtime, ToUnix(it->last_write_time(ec2)));
    }
  } else {
    size = static_cast<double>(fs::file_size(path, ec));
  }
}

bool HasMarker(const fs::path& entry, const std::string& marker, bool is_dir) {
  std::error_code ec;
  if (is_dir) return fs::exists(entry / marker, ec);
  return fs::exists(entry.string() + "." + marker, ec);
}

}  // namespace

Result<CompletionRule> ParseCompletionRule(const std::string& text) {
  if (text == "auto") return CompletionRule::kAuto;
  if (text == "marker") return CompletionRule::kMarker;
  if (text == "dcp") return CompletionRule::kDcp;
  if (text == "stable") return CompletionRule::kStable;
  return Status::InvalidInput(
      "--checkpoint-complete: expected auto, marker, dcp or stable, found '" + text + "'");
}

Result<std::vector<Checkpoint>> CheckpointScanner::Scan(double now) {
  std::vector<Checkpoint> complete;
  std::error_code ec;
  if (!fs::is_directory(options_.dir, ec)) return complete;
  std::map<std::string, Observed> still_there;
  const double wall_now = WallNow();
  for (auto it = fs::directory_iterator(options_.dir, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.empty() || name[0] == '.') continue;
    const std::string marker_suffix = "." + options_.marker;
    if (name.size() > marker_suffix.size() &&
        name.compare(name.size() - marker_suffix.size(), marker_suffix.size(), marker_suffix) ==
            0) {
      continue;  // a sibling marker file, not a checkpoint
    }
    if (fnmatch(options_.pattern.c_str(), name.c_str(), 0) != 0) continue;
    std::error_code ec2;
    const bool is_dir = it->is_directory(ec2);
    Observed obs;
    if (auto found = seen_.find(name); found != seen_.end()) obs = found->second;
    double size = 0, mtime = 0;
    Measure(it->path(), size, mtime);
    if (size != obs.size || mtime != obs.mtime) {
      // First sight of an old, quiet entry counts as settled already.
      obs.changed_at = (first_scan_ || obs.size < 0) && wall_now - mtime >= options_.settle_seconds
                           ? now - options_.settle_seconds
                           : now;
      obs.size = size;
      obs.mtime = mtime;
      obs.tainted = false;  // a new writer is at work
    }
    if (!obs.complete) {
      const bool marker = HasMarker(it->path(), options_.marker, is_dir);
      const bool dcp = is_dir && fs::exists(it->path() / ".metadata", ec2);
      const bool stable = !obs.tainted && now - obs.changed_at >= options_.settle_seconds;
      switch (options_.rule) {
        case CompletionRule::kMarker:
          obs.complete = marker;
          break;
        case CompletionRule::kDcp:
          obs.complete = dcp;
          break;
        case CompletionRule::kStable:
          obs.complete = stable;
          break;
        case CompletionRule::kAuto:
          obs.complete = marker || dcp || (!is_dir && stable);
          break;
      }
    }
    if (obs.complete) complete.push_back({it->path().string(), name, obs.mtime});
    still_there[name] = obs;
  }
  if (ec) return Status::IoError(options_.dir + ": cannot list checkpoint dir: " + ec.message());
  seen_ = std::move(still_there);
  first_scan_ = false;
  std::sort(complete.begin(), complete.end(), [](const Checkpoint& a, const Checkpoint& b) {
    return a.mtime_unix != b.mtime_unix ? a.mtime_unix < b.mtime_unix : a.name < b.name;
  });
  return complete;
}

void CheckpointScanner::OnWriterDied(double /*now*/) {
  for (auto& [name, obs] : seen_) {
    if (!obs.complete) obs.tainted = true;
  }
}

std::vector<std::string> CheckpointScanner::Prune(const std::vector<Checkpoint>& complete) {
  std::vector<std::string> removed;
  if (options_.keep <= 0 || static_cast<int>(complete.size()) <= options_.keep) return removed;
  const size_t remove_count = complete.size() - static_cast<size_t>(options_.keep);
  for (size_t i = 0; i < remove_count; ++i) {
    std::error_code ec;
    fs::remove_all(complete[i].path, ec);
    fs::remove(complete[i].path + "." + options_.marker, ec);
    if (!ec) removed.push_back(complete[i].path);
    seen_.erase(complete[i].name);
  }
  return removed;
}

}  // namespace fulcrum::supervise
