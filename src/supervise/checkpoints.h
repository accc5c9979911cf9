// Finds checkpoints in a checkpoint directory and decides which are complete. The directory's
// layout (checkpoints_layout.h: plain, HF Trainer, DeepSpeed, Megatron, Lightning, Accelerate,
// Orbax, torchtitan; detected each scan unless given) says which top-level entries are
// checkpoints and what proves one complete: the job's marker (default "COMPLETE": a file inside
// a directory, or NAME appended to a file), the framework's own commit file or pointer, a
// format that proves the file whole (torch.save zip, safetensors), DCP's renamed .metadata.
// Only where nothing proves it does the settle rule apply: a plain file whose size and mtime
// have not changed for `settle_seconds` while its writer was alive; one that was still
// changing when the job died is partial for good. Not thread-safe (owned by the supervisor).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "supervise/checkpoints_layout.h"

namespace fulcrum::supervise {

// kAuto: the layout's rule (above). kMarker / kDcp: only the marker / only DCP .metadata.
// kStable: only the settle rule, files and directories alike. kRename: the job writes each
// checkpoint under a temp name (hidden, or *.tmp/.partial) and renames it: every visible entry
// of the layout is complete at once.
enum class CompletionRule { kAuto, kMarker, kDcp, kStable, kRename };

Result<CompletionRule> ParseCompletionRule(const std::string& text);

// Refuses a checkpoint directory that is, after resolving symlinks, "/" or a system directory
// (/bin, /boot, /dev, /etc, /lib*, /proc, /sbin, /sys, /usr, /var, ... or one inside /proc,
// /sys, /dev, /boot): its files would be taken for checkpoints and pruned (a dir linked to "/"
// resumed from /pyenv-installer). InvalidInput "--checkpoint-dir DIR: expected a directory of
// the job's own, found the system directory /usr (DIR -> /usr)".
Status CheckCheckpointDir(const std::string& dir);

struct CheckpointScanOptions {
  std::string dir;
  std::string pattern = "*";  // fnmatch glob on entry names; hidden entries are skipped
  CompletionRule rule = CompletionRule::kAuto;
  CheckpointLayout layout = CheckpointLayout::kAuto;
  std::string marker = "COMPLETE";
  double settle_seconds = 30;  // the settle rule (files no format or marker proves)
  int keep = 0;                // keep the newest K complete checkpoints; 0 = keep all
};

struct Checkpoint {
  std::string path;
  std::string name;
  double mtime_unix = 0;        // newest mtime inside the entry
  std::optional<int64_t> step;  // from the name, where the layout numbers checkpoints
  CheckpointLayout layout = CheckpointLayout::kPlain;
  std::string evidence;    // what proved it complete
  bool protect = false;    // never pruned
  bool recognised = true;  // a checkpoint of its layout, not only a quiet file
};

// A candidate newer than the newest complete checkpoint that is not complete, and why.
struct SkippedCheckpoint {
  std::string name;
  std::string reason;
};

class CheckpointScanner {
 public:
  explicit CheckpointScanner(CheckpointScanOptions options) : options_(std::move(options)) {}

  // Re-reads the directory at monotonic time `now`. Returns the complete checkpoints, oldest
  // first (by step where the layout numbers them, else by mtime, then name). A missing
  // directory is not an error (no checkpoints yet); a system directory is (CheckCheckpointDir).
  // A checkpoint whose files (its marker too) are all 0 bytes, or one that shrank by more than
  // 90 % against the complete one before it, is not complete whatever proved it (a warning note
  // names it, once).
  Result<std::vector<Checkpoint>> Scan(double now);
  // The job died at `now`: entries that only the settle rule could complete, and that are not
  // complete yet, are partial from now on.
  void OnWriterDied(double now);
  // Removes complete checkpoints beyond the newest `keep`: only those of the newest one's layout
  // that the layout recognises as checkpoints (never a quiet file of unknown format matched by
  // the default pattern, never the newest, never a protected one). Returns removed paths.
  std::vector<std::string> Prune(const std::vector<Checkpoint>& complete);

  // The last scan's incomplete candidates newer than its newest complete checkpoint.
  const std::vector<SkippedCheckpoint>& skipped() const { return skipped_; }
  // Log lines, each returned once: the skips of the first scan and of the first scan after
  // OnWriterDied (where a resume is decided; "skipped checkpoint X: reason", a reason already
  // logged for X is not repeated), and each change of the detected layout.
  std::vector<std::string> TakeNotes();
  CheckpointLayout layout() const { return layout_; }
  const CheckpointScanOptions& options() const { return options_; }

 private:
  struct Observed {
    double size = -1;
    double mtime = -1;
    double changed_at = 0;  // monotonic time of the last observed change
    bool tainted = false;
    std::string judged_for;  // the layout fingerprint the cached judgement holds for
    EntryJudgement judgement;
    bool settled_complete = false;
  };
  bool Complete(const std::string& name, Observed& obs, double now, bool is_dir,
                std::string& evidence);

  std::map<std::string, Observed> seen_;
  std::map<std::string, std::string> reported_;  // name -> reason already logged
  std::vector<SkippedCheckpoint> skipped_;
  std::vector<std::string> notes_;
  CheckpointScanOptions options_;
  CheckpointLayout layout_ = CheckpointLayout::kPlain;
  bool layout_known_ = false;
  bool first_scan_ = true;
  bool report_skips_ = true;  // the next scan decides a resume: log its skips
};

}  // namespace fulcrum::supervise
