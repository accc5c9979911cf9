#include "supervise/checkpoints.h"

#include <fnmatch.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <limits>
#include <tuple>

#include "core/input_error.h"

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

// Layouts whose checkpoints are numbered in their names: ordered by that number.
bool Numbered(CheckpointLayout layout) {
  return layout != CheckpointLayout::kPlain && layout != CheckpointLayout::kLightning &&
         layout != CheckpointLayout::kAuto;
}

struct Candidate {
  Checkpoint checkpoint;
  double size = 0;  // bytes, all files of the entry (a marker inside it too)
  bool complete = false;
  std::string reason;  // why not complete
};

// A checkpoint that shrank to less than this share of the complete one before it is not
// complete (issue 29: a job that wrote only its marker, or a truncated save).
constexpr double kMinShareOfPrevious = 0.10;
// ...when the one before holds at least 1 MiB: below, metadata files (a commit note, a step
// number) differ by more than the data, and no model's weights fit.
constexpr double kMinSizeToCompare = 1 << 20;

std::string Bytes(double size) { return std::to_string(static_cast<uint64_t>(size)) + " bytes"; }

// Marks complete candidates (sorted oldest first) of 0 bytes, or under kMinShareOfPrevious of
// the complete one before them, as not complete; returns {path, reason} for each.
std::vector<std::pair<std::string, std::string>> RejectEmptyOrShrunk(
    std::vector<Candidate>& candidates) {
  std::vector<std::pair<std::string, std::string>> rejected;
  const Candidate* previous = nullptr;
  for (Candidate& c : candidates) {
    if (!c.complete) continue;
    if (c.size <= 0) {
      c.reason = "its files are 0 bytes";
    } else if (previous != nullptr && previous->size >= kMinSizeToCompare &&
               c.size < kMinShareOfPrevious * previous->size) {
      const int shrank = static_cast<int>(100 * (1 - c.size / previous->size));
      c.reason = Bytes(c.size) + ", " + std::to_string(shrank) + " % smaller than " +
                 previous->checkpoint.name + " (" + Bytes(previous->size) +
                 "): truncated or partly written";
    } else {
      previous = &c;
      continue;
    }
    c.complete = false;
    rejected.emplace_back(c.checkpoint.path, c.reason);
  }
  return rejected;
}

// System directories by their resolved path (Filesystem Hierarchy Standard 3.0, chapters 3-5):
// the root and its shared directories, whose other files a scan would take for checkpoints and
// a prune would remove. Under the pseudo filesystems and the boot partition nothing is a job's:
// their subtrees are refused too. A directory inside /home, /tmp or /var is a job's own.
bool SystemDirectory(const fs::path& resolved) {
  static const char* const kTrees[] = {"/proc", "/sys", "/dev", "/boot"};
  static const char* const kExact[] = {
      "/",          "/bin",       "/etc",      "/lib",       "/lib32",
      "/lib64",     "/libx32",    "/sbin",     "/usr",       "/usr/bin",
      "/usr/lib",   "/usr/lib64", "/usr/sbin", "/usr/share", "/usr/include",
      "/usr/local", "/var",       "/var/lib",  "/var/log",   "/var/cache",
      "/run",       "/home",      "/root",     "/tmp",       "/var/tmp"};
  const std::string path = resolved.string();
  for (const char* top : kTrees) {
    const std::string t = top;
    if (path == t || path.rfind(t + "/", 0) == 0) return true;
  }
  return std::find(std::begin(kExact), std::end(kExact), path) != std::end(kExact);
}

}  // namespace

Status CheckCheckpointDir(const std::string& dir) {
  std::error_code ec;
  std::string resolved = fs::weakly_canonical(fs::absolute(dir, ec), ec).string();
  while (resolved.size() > 1 && resolved.back() == '/') resolved.pop_back();
  if (ec || !SystemDirectory(resolved)) return Status::Ok();
  std::string normal = fs::path(dir).lexically_normal().string();
  while (normal.size() > 1 && normal.back() == '/') normal.pop_back();
  return InputError({"",
                     std::nullopt,
                     "--checkpoint-dir " + dir,
                     "a directory of the job's own (not / or a system directory)",
                     "the system directory " + resolved +
                         (normal == resolved ? "" : " (" + dir + " -> " + resolved + ")"),
                     {}},
                    FoundIs::kDescription);
}

Result<CompletionRule> ParseCompletionRule(const std::string& text) {
  static const std::vector<std::string> kNames = {"auto", "marker", "dcp", "stable", "rename"};
  for (size_t i = 0; i < kNames.size(); ++i) {
    if (text == kNames[i]) return static_cast<CompletionRule>(i);
  }
  return InputError({"", std::nullopt, "--checkpoint-complete", JoinNames(kNames), text,
                     NearestNames(text, kNames)});
}

bool CheckpointScanner::Complete(const std::string& name, Observed& obs, double now, bool is_dir,
                                 std::string& evidence) {
  const bool stable = !obs.tainted && now - obs.changed_at >= options_.settle_seconds;
  if (stable) obs.settled_complete = true;
  const fs::path path = fs::path(options_.dir) / name;
  std::error_code ec;
  switch (options_.rule) {
    case CompletionRule::kMarker:
      evidence = "marker " + options_.marker;
      return is_dir ? fs::exists(path / options_.marker, ec)
                    : fs::exists(path.string() + "." + options_.marker, ec);
    case CompletionRule::kDcp:
      evidence = "DCP .metadata";
      return is_dir && fs::exists(path / ".metadata", ec);
    case CompletionRule::kStable:
      evidence = "unchanged for the settle time";
      return obs.settled_complete;
    case CompletionRule::kRename:
      evidence = "renamed into place (--checkpoint-complete rename)";
      return true;
    case CompletionRule::kAuto:
      break;
  }
  evidence = obs.judgement.reason;
  switch (obs.judgement.verdict) {
    case EntryVerdict::kComplete:
      return true;
    case EntryVerdict::kNeedsSettle:
      evidence = "unchanged for " + std::to_string(static_cast<int>(options_.settle_seconds)) +
                 " s while its writer ran (no format proof, no marker)";
      return obs.settled_complete;
    default:
      return false;
  }
}

Result<std::vector<Checkpoint>> CheckpointScanner::Scan(double now) {
  std::vector<Checkpoint> complete;
  skipped_.clear();
  std::error_code ec;
  if (!fs::is_directory(options_.dir, ec)) return complete;
  FULCRUM_RETURN_IF_ERROR(CheckCheckpointDir(options_.dir));
  std::vector<CheckpointEntry> entries;
  for (auto it = fs::directory_iterator(options_.dir, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.empty() || name[0] == '.') continue;
    if (fnmatch(options_.pattern.c_str(), name.c_str(), 0) != 0) continue;
    std::error_code ec2;
    const bool is_dir = it->is_directory(ec2);
    if (!is_dir && !it->is_regular_file(ec2)) continue;  // dangling links, sockets
    entries.push_back({name, is_dir});
  }
  if (ec) return Status::IoError(options_.dir + ": cannot list checkpoint dir: " + ec.message());

  const CheckpointLayout layout = options_.layout == CheckpointLayout::kAuto
                                      ? DetectCheckpointLayout(options_.dir, entries)
                                      : options_.layout;
  if (!layout_known_ || layout != layout_) {
    if (layout_known_ || layout != CheckpointLayout::kPlain) {
      notes_.push_back("checkpoint layout: " + std::string(CheckpointLayoutName(layout)) +
                       (options_.layout == CheckpointLayout::kAuto ? " (detected)" : ""));
    }
    layout_ = layout;
    layout_known_ = true;
  }
  LayoutContext context;
  context.layout = layout;
  context.dir = options_.dir;
  context.marker = options_.marker;
  context.default_pattern = options_.pattern == "*";
  ReadLayoutPointer(context);
  const std::string fingerprint =
      std::string(CheckpointLayoutName(layout)) + "\n" + context.fingerprint();

  std::map<std::string, Observed> still_there;
  std::vector<Candidate> candidates;
  const double wall_now = WallNow();
  for (const CheckpointEntry& entry : entries) {
    const fs::path path = fs::path(options_.dir) / entry.name;
    Observed obs;
    if (auto found = seen_.find(entry.name); found != seen_.end()) obs = found->second;
    double size = 0, mtime = 0;
    Measure(path, size, mtime);
    if (size != obs.size || mtime != obs.mtime) {
      // First sight of an old, quiet entry counts as settled already.
      obs.changed_at = (first_scan_ || obs.size < 0) && wall_now - mtime >= options_.settle_seconds
                           ? now - options_.settle_seconds
                           : now;
      obs.size = size;
      obs.mtime = mtime;
      obs.tainted = false;  // a new writer is at work
      obs.settled_complete = false;
      obs.judged_for.clear();
    }
    if (obs.judged_for != fingerprint) {
      obs.judgement = JudgeCheckpointEntry(context, entry);
      obs.judged_for = fingerprint;
    }
    if (obs.judgement.verdict != EntryVerdict::kNotACheckpoint) {
      Candidate c;
      c.size = obs.size;
      c.checkpoint = {path.string(),
                      entry.name,
                      obs.mtime,
                      obs.judgement.step,
                      layout,
                      "",
                      obs.judgement.protect,
                      obs.judgement.recognised};
      c.complete = Complete(entry.name, obs, now, entry.is_dir, c.checkpoint.evidence);
      if (!c.complete) {
        c.reason = options_.rule != CompletionRule::kAuto ? "no " + c.checkpoint.evidence
                   : obs.judgement.verdict != EntryVerdict::kNeedsSettle ? obs.judgement.reason
                   : obs.tainted
                       ? "its writer died before it settled (no format proof, no marker)"
                       : "waiting " + std::to_string(static_cast<int>(options_.settle_seconds)) +
                             " s for it to settle (no format proof, no marker)";
      }
      candidates.push_back(std::move(c));
    }
    still_there[entry.name] = std::move(obs);
  }
  seen_ = std::move(still_there);
  first_scan_ = false;
  // Skips are reported where a resume is decided (the first scan, the first after the writer
  // died), not while the job is still writing its next checkpoint.
  const bool report_skips = report_skips_;
  report_skips_ = false;

  const bool numbered = Numbered(layout);
  const auto key = [numbered](const Candidate& c) {
    return std::make_tuple(
        numbered ? c.checkpoint.step.value_or(std::numeric_limits<int64_t>::min()) : 0,
        c.checkpoint.mtime_unix, c.checkpoint.name);
  };
  std::sort(candidates.begin(), candidates.end(),
            [&](const Candidate& a, const Candidate& b) { return key(a) < key(b); });
  for (const auto& [path, reason] : RejectEmptyOrShrunk(candidates)) {
    std::string& reported = reported_[fs::path(path).filename().string()];
    if (reported != reason)
      notes_.push_back("warning: checkpoint " + path + " is not complete: " + reason);
    reported = reason;
  }
  size_t newest_complete = candidates.size();
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (candidates[i].complete) {
      complete.push_back(candidates[i].checkpoint);
      newest_complete = i;
    }
  }
  const size_t first_skipped = newest_complete == candidates.size() ? 0 : newest_complete + 1;
  for (size_t i = first_skipped; i < candidates.size(); ++i) {
    const Candidate& c = candidates[i];
    if (c.complete) continue;
    skipped_.push_back({c.checkpoint.name, c.reason});
    if (!report_skips) continue;
    std::string& reported = reported_[c.checkpoint.name];
    if (reported != c.reason) {
      notes_.push_back("skipped checkpoint " + c.checkpoint.path + ": " + c.reason);
      reported = c.reason;
    }
  }
  for (auto it = reported_.begin(); it != reported_.end();) {
    it = seen_.count(it->first) != 0 ? std::next(it) : reported_.erase(it);
  }
  return complete;
}

std::vector<std::string> CheckpointScanner::TakeNotes() {
  std::vector<std::string> notes;
  notes.swap(notes_);
  return notes;
}

void CheckpointScanner::OnWriterDied(double /*now*/) {
  report_skips_ = true;
  for (auto& [name, obs] : seen_) {
    if (!obs.settled_complete) obs.tainted = true;
  }
}

std::vector<std::string> CheckpointScanner::Prune(const std::vector<Checkpoint>& complete) {
  std::vector<std::string> removed;
  if (options_.keep <= 0 || static_cast<int>(complete.size()) <= options_.keep) return removed;
  const Checkpoint& newest = complete.back();
  // What a protected entry resolves to (Lightning's last.ckpt may be a symlink) stays too.
  std::vector<fs::path> kept;
  for (const Checkpoint& c : complete) {
    std::error_code ec;
    if (c.protect) kept.push_back(fs::canonical(c.path, ec));
  }
  const size_t remove_count = complete.size() - static_cast<size_t>(options_.keep);
  for (size_t i = 0; i < remove_count; ++i) {
    const Checkpoint& c = complete[i];
    if (c.protect || !c.recognised || c.layout != newest.layout) continue;
    std::error_code canonical_ec;
    if (std::find(kept.begin(), kept.end(), fs::canonical(c.path, canonical_ec)) != kept.end()) {
      continue;
    }
    std::error_code ec;
    fs::remove_all(c.path, ec);
    fs::remove(c.path + "." + options_.marker, ec);
    if (!ec) removed.push_back(c.path);
    seen_.erase(c.name);
  }
  return removed;
}

}  // namespace fulcrum::supervise
