// The checkpoint layouts of the common training stacks: which entries of a checkpoint directory
// are checkpoints, their step, and whether each is complete by the framework's own rule (its
// commit file, `latest` pointer or tracker, its temp-dir rename) or by its files' format. Each
// rule cites the framework source it follows in checkpoints_layout.cc; docs/CHECKPOINTS.md
// lists them. Pure functions over the file system, thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"

namespace fulcrum::supervise {

enum class CheckpointLayout {
  kAuto,        // detect from the directory's contents (each scan)
  kPlain,       // any file or directory; torch.save/safetensors files, DCP or marked dirs
  kHfTrainer,   // transformers Trainer: checkpoint-N/ with trainer_state.json
  kDeepSpeed,   // `latest` + global_stepN/
  kMegatron,    // latest_checkpointed_iteration.txt + iter_NNNNNNN/
  kLightning,   // *.ckpt files, last.ckpt
  kAccelerate,  // checkpoint_N/ (automatic_checkpoint_naming)
  kOrbax,       // N/ with commit_success.txt, N.orbax-checkpoint-tmp* while written
  kTorchtitan,  // step-N/ holding DCP .metadata
};

Result<CheckpointLayout> ParseCheckpointLayout(const std::string& text);
const char* CheckpointLayoutName(CheckpointLayout layout);

// One top-level entry of the checkpoint directory.
struct CheckpointEntry {
  std::string name;
  bool is_dir = false;
};

// Facts about the whole directory that the per-entry rules need.
struct LayoutContext {
  CheckpointLayout layout = CheckpointLayout::kPlain;
  std::string dir;
  std::string marker = "COMPLETE";     // the job's own marker, accepted in every layout
  bool default_pattern = true;         // the user named no --checkpoint-pattern
  std::optional<std::string> pointer;  // DeepSpeed `latest` tag / Megatron tracker text
  // Changes whenever a directory-wide fact (the pointer) changes: entries are judged again.
  std::string fingerprint() const { return pointer.value_or("") + "\n"; }
};

enum class EntryVerdict {
  kNotACheckpoint,  // not an entry of this layout (logs, scripts, tensorboard runs)
  kComplete,
  kIncomplete,   // a checkpoint of this layout that is not (yet) whole
  kNeedsSettle,  // nothing proves it either way: the settle rule decides
};

struct EntryJudgement {
  EntryVerdict verdict = EntryVerdict::kNotACheckpoint;
  std::string reason;           // the evidence, or why it is incomplete
  std::optional<int64_t> step;  // parsed from the name where the layout numbers them
  bool protect = false;         // never pruned (last.ckpt, the tag `latest` names)
  bool recognised = true;       // known to be a checkpoint (not only a quiet file): prunable
};

// The layout of `dir` from its entries: the first of DeepSpeed, Megatron, HF Trainer,
// Accelerate, torchtitan, Orbax, Lightning whose signature files are present, else plain.
CheckpointLayout DetectCheckpointLayout(const std::string& dir,
                                        const std::vector<CheckpointEntry>& entries);

// Fills the directory-wide facts of `context.layout` (reads `latest` or the Megatron tracker).
void ReadLayoutPointer(LayoutContext& context);

// Judges one entry by the layout's rule.
EntryJudgement JudgeCheckpointEntry(const LayoutContext& context, const CheckpointEntry& entry);

}  // namespace fulcrum::supervise
