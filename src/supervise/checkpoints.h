// Finds checkpoints in a checkpoint directory and decides which are complete. A checkpoint is one
// top-level entry (file or directory) whose name matches a glob. Complete means (rule kAuto): a
// directory holding the marker file (default "COMPLETE") or PyTorch DCP's ".metadata"; a plain
// file whose size and mtime have not changed for `settle_seconds` while its writer was alive.
// An entry that was still changing when the job died is marked partial for good, so a resume is
// never handed a half-written checkpoint. Not thread-safe (owned by the supervisor loop).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"

namespace fulcrum::supervise {

enum class CompletionRule { kAuto, kMarker, kDcp, kStable };

Result<CompletionRule> ParseCompletionRule(const std::string& text);

struct CheckpointScanOptions {
  std::string dir;
  std::string pattern = "*";  // fnmatch glob on entry names; hidden entries are skipped
  CompletionRule rule = CompletionRule::kAuto;
  std::string marker = "COMPLETE";
  double settle_seconds = 30;  // kStable / plain files under kAuto
  int keep = 0;                // keep the newest K complete checkpoints; 0 = keep all
};

struct Checkpoint {
  std::string path;
  std::string name;
  double mtime_unix = 0;  // newest mtime inside the entry
};

class CheckpointScanner {
 public:
  explicit CheckpointScanner(CheckpointScanOptions options) : options_(std::move(options)) {}

  // Re-reads the directory at monotonic time `now`. Returns the complete checkpoints, oldest
  // first (by mtime, then name). A missing directory is not an error (no checkpoints yet).
  Result<std::vector<Checkpoint>> Scan(double now);
  // The job died at `now`: entries not complete yet are partial from now on.
  void OnWriterDied(double now);
  // Removes complete checkpoints beyond the newest `keep` (never the newest). Returns removed
  // paths.
  std::vector<std::string> Prune(const std::vector<Checkpoint>& complete);

  const CheckpointScanOptions& options() const { return options_; }

 private:
  struct Observed {
    double size = -1;
    double mtime = -1;
    double changed_at = 0;  // monotonic time of the last observed change
    bool tainted = false;
    bool complete = false;
  };
  std::map<std::string, Observed> seen_;
  CheckpointScanOptions options_;
  bool first_scan_ = true;
};

}  // namespace fulcrum::supervise
