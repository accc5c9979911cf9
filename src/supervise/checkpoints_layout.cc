#include "supervise/checkpoints_layout.h"

#include <algorithm>
#include <array>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>
#include <string_view>

#include "core/input_error.h"
#include "core/text_file.h"
#include "supervise/checkpoints_format.h"

namespace fulcrum::supervise {
namespace fs = std::filesystem;
namespace {

constexpr int64_t kNewest = std::numeric_limits<int64_t>::max();

// Sources of the names below (each framework's save code):
// - DeepSpeed: microsoft/DeepSpeed@38327e07 deepspeed/runtime/engine.py save_checkpoint(): tag
//   "global_step{N}", every rank saves, then rank 0 writes the tag to save_dir/latest;
//   _copy_recovery_script() puts zero_to_fp32.py beside them.
// - Megatron-LM: NVIDIA/Megatron-LM@d98e8a64 megatron/training/checkpointing.py:
//   get_checkpoint_name() "iter_{:07d}" (or "release"), get_checkpoint_tracker_filename()
//   "latest_checkpointed_iteration.txt", written by iter_finalize_fn() after the save.
// - transformers Trainer: huggingface/transformers@000945a9 src/transformers/trainer.py
//   _save_checkpoint(): "checkpoint-{global_step}", model, optimizer, scheduler, rng state, and
//   trainer_state.json last (TrainerState.save_to_json).
// - Accelerate: huggingface/accelerate@16cb6eb8 src/accelerate/accelerator.py save_state():
//   project_dir/checkpoints/checkpoint_{iteration}; src/accelerate/checkpointing.py
//   save_accelerator_state(): models, optimizers, schedulers, samplers, scaler, then
//   random_states_{process_index}.pkl (torch.save).
// - Orbax: google/orbax@3ff7b24a checkpoint/orbax/checkpoint/_src/path/atomicity.py: a step is
//   written to "<step>.orbax-checkpoint-tmp" and renamed, or finalized by commit_success.txt
//   (atomicity_types.py); _CHECKPOINT_METADATA gets commit_timestamp_nsecs at commit
//   (_src/metadata/checkpoint.py).
// - torchtitan: pytorch/torchtitan@b5bcd76c torchtitan/components/checkpointer/dcp.py
//   _create_checkpoint_id() "step-{N}"; _find_load_step() takes a step-N only with .metadata or
//   model.safetensors.index.json.
// - Lightning: Lightning-AI/pytorch-lightning@7f0c3436 src/lightning/pytorch/callbacks/
//   model_checkpoint.py: FILE_EXTENSION ".ckpt", CHECKPOINT_NAME_LAST "last" (a copy, or a
//   symlink with save_last="link"); files written by torch.save (fabric/utilities/cloud_io.py).
// - DCP: pytorch/pytorch@0140b62d torch/distributed/checkpoint/filesystem.py
//   FileSystemWriter.finish() writes .metadata.tmp and renames it to .metadata after every
//   rank's __<rank>_<n>.distcp; torch 1.13's torch/distributed/_shard/checkpoint/filesystem.py
//   does the same.
constexpr const char* kDeepSpeedPointer = "latest";
constexpr const char* kMegatronTracker = "latest_checkpointed_iteration.txt";
constexpr const char* kHfTrainerState = "trainer_state.json";
constexpr const char* kOrbaxTmpSuffix = ".orbax-checkpoint-tmp";
constexpr const char* kOrbaxCommitFile = "commit_success.txt";
constexpr const char* kOrbaxStepMetadata = "_CHECKPOINT_METADATA";
constexpr const char* kDcpMetadata = ".metadata";
constexpr const char* kHfSafetensorsIndex = "model.safetensors.index.json";

// `digits` is a non-negative decimal number (at most 18 digits) and nothing else.
std::optional<int64_t> ParseDigits(std::string_view digits) {
  if (digits.empty() || digits.size() > 18) return std::nullopt;
  int64_t value = 0;
  for (char ch : digits) {
    if (ch < '0' || ch > '9') return std::nullopt;
    value = value * 10 + (ch - '0');
  }
  return value;
}

// `name` is `prefix` followed by digits only: the number.
std::optional<int64_t> NumberAfter(std::string_view name, std::string_view prefix) {
  if (name.size() <= prefix.size() || name.substr(0, prefix.size()) != prefix) {
    return std::nullopt;
  }
  return ParseDigits(name.substr(prefix.size()));
}

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool Exists(const fs::path& p) {
  std::error_code ec;
  return fs::exists(p, ec);
}

std::optional<std::string> ReadSmall(const fs::path& p) {
  auto text = ReadTextFile(p.string(), "a checkpoint's small file");
  if (!text.ok()) return std::nullopt;
  return *std::move(text);
}

std::string Trim(std::string s) {
  const auto not_space = [](unsigned char c) { return !std::isspace(c); };
  s.erase(s.begin(), std::find_if(s.begin(), s.end(), not_space));
  s.erase(std::find_if(s.rbegin(), s.rend(), not_space).base(), s.end());
  return s;
}

// A JSON file that parses: the writer got to its end.
bool JsonIsWhole(const fs::path& p) {
  auto text = ReadSmall(p);
  return text && !nlohmann::json::parse(*text, nullptr, false).is_discarded();
}

// Every torch.save/safetensors file under `dir` is whole; `required` counts those whose name
// contains `required_part` ("" = any).
struct TreeProof {
  bool whole = true;
  int required = 0;
  std::string problem;
};
TreeProof ProveFilesUnder(const fs::path& dir, const std::string& required_part) {
  TreeProof proof;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    std::error_code ec2;
    if (!it->is_regular_file(ec2)) continue;
    const FileVerdict v = VerifyCheckpointFile(it->path().string());
    if (v.proof == FileProof::kCutShort) {
      proof.whole = false;
      proof.problem = it->path().filename().string() + ": " + v.detail;
      return proof;
    }
    const std::string name = it->path().filename().string();
    if (v.proof == FileProof::kWhole &&
        (required_part.empty() || name.find(required_part) != std::string::npos)) {
      ++proof.required;
    }
  }
  return proof;
}

EntryJudgement Complete(std::string reason, std::optional<int64_t> step = std::nullopt) {
  return {EntryVerdict::kComplete, std::move(reason), step, false, true};
}
EntryJudgement Incomplete(std::string reason, std::optional<int64_t> step = std::nullopt) {
  return {EntryVerdict::kIncomplete, std::move(reason), step, false, true};
}

std::optional<EntryJudgement> MarkedByTheJob(const LayoutContext& c, const CheckpointEntry& e,
                                             std::optional<int64_t> step) {
  const fs::path path = fs::path(c.dir) / e.name;
  const bool marked = e.is_dir ? Exists(path / c.marker) : Exists(path.string() + "." + c.marker);
  if (!marked) return std::nullopt;
  return Complete("marker " + (e.is_dir ? e.name + "/" + c.marker : e.name + "." + c.marker), step);
}

// A file checkpoint: its format, else the settle rule.
EntryJudgement JudgeFile(const LayoutContext& c, const CheckpointEntry& e,
                         std::optional<int64_t> step) {
  if (auto marked = MarkedByTheJob(c, e, step)) return *marked;
  const FileVerdict v = VerifyCheckpointFile((fs::path(c.dir) / e.name).string());
  if (v.proof == FileProof::kWhole) return Complete(v.format + ": " + v.detail, step);
  if (v.proof == FileProof::kCutShort) return Incomplete(v.format + ": " + v.detail, step);
  EntryJudgement j{EntryVerdict::kNeedsSettle, "no format proof, no marker", step, false, true};
  return j;
}

// Names that never hold a checkpoint in a plain directory under the default pattern: logs,
// configs, scripts and temp names of an atomic rename in progress.
bool PlainIgnores(const std::string& name, bool is_dir) {
  static constexpr std::array<const char*, 6> kTempSuffixes = {
      ".tmp", ".temp", ".part", ".partial", ".incomplete", kOrbaxTmpSuffix};
  for (const char* suffix : kTempSuffixes) {
    if (EndsWith(name, suffix)) return true;
  }
  if (is_dir) return false;
  static constexpr std::array<const char*, 16> kNotCheckpoints = {
      ".txt", ".log", ".json", ".yaml", ".yml", ".md",  ".py",  ".sh",
      ".csv", ".out", ".err",  ".lock", ".pid", ".cfg", ".ini", ".toml"};
  for (const char* suffix : kNotCheckpoints) {
    if (EndsWith(name, suffix)) return true;
  }
  return false;
}

EntryJudgement JudgePlain(const LayoutContext& c, const CheckpointEntry& e) {
  if (EndsWith(e.name, "." + c.marker)) return {};  // a sibling marker
  if (c.default_pattern && PlainIgnores(e.name, e.is_dir)) return {};
  if (!e.is_dir) {
    EntryJudgement j = JudgeFile(c, e, std::nullopt);
    // A quiet file of unknown format matched only by the default "*": resumable, not prunable.
    if (j.verdict == EntryVerdict::kNeedsSettle) j.recognised = !c.default_pattern;
    return j;
  }
  if (auto marked = MarkedByTheJob(c, e, std::nullopt)) return *marked;
  const fs::path path = fs::path(c.dir) / e.name;
  if (Exists(path / kDcpMetadata)) return Complete("DCP .metadata");
  return Incomplete("a directory without " + c.marker + " or DCP .metadata");
}

EntryJudgement JudgeDeepSpeed(const LayoutContext& c, const CheckpointEntry& e) {
  if (!e.is_dir) return {};
  const bool named = c.pointer && *c.pointer == e.name;
  std::optional<int64_t> step = NumberAfter(e.name, "global_step");
  if (!step && !named) return {};
  if (named && !step) step = kNewest;  // a custom tag: the newest by definition
  EntryJudgement j;
  if (auto marked = MarkedByTheJob(c, e, step)) return *marked;
  if (named) {
    j = Complete("named by `latest`", step);
    j.protect = true;
    return j;
  }
  const std::optional<int64_t> latest_step =
      c.pointer ? NumberAfter(*c.pointer, "global_step") : std::nullopt;
  if (!c.pointer)
    return Incomplete("no `latest` file yet (DeepSpeed writes it after the save)", step);
  if (latest_step && *step > *latest_step) {
    return Incomplete("newer than `latest` (" + *c.pointer + "): its save has not finished", step);
  }
  // Older than the tag `latest` names: complete if its files are whole (a save that crashed
  // before a restart would have been overwritten as the newest, not left below it, unless the
  // restart resumed from further back).
  const TreeProof proof = ProveFilesUnder(fs::path(c.dir) / e.name, "model_states");
  if (!proof.whole) return Incomplete(proof.problem, step);
  if (proof.required == 0) return Incomplete("no whole *model_states.pt inside", step);
  return Complete("older than `latest`, its torch.save files whole", step);
}

EntryJudgement JudgeMegatron(const LayoutContext& c, const CheckpointEntry& e) {
  if (!e.is_dir) return {};
  std::optional<int64_t> step = NumberAfter(e.name, "iter_");
  const bool release = e.name == "release";
  if (!step && !release) return {};
  if (release) step = kNewest;
  if (auto marked = MarkedByTheJob(c, e, step)) return *marked;
  if (!c.pointer) {
    return Incomplete(std::string("no ") + kMegatronTracker + " yet (written after the save)",
                      step);
  }
  const std::string tracked = Trim(*c.pointer);
  EntryJudgement j;
  if ((release && tracked == "release") || (!release && ParseDigits(tracked) == step)) {
    j = Complete(std::string("named by ") + kMegatronTracker, step);
    j.protect = true;
    return j;
  }
  auto tracked_step = ParseDigits(tracked);
  if (release || !tracked_step || *step > *tracked_step) {
    return Incomplete(std::string("not yet in ") + kMegatronTracker + " (" + tracked + ")", step);
  }
  const fs::path path = fs::path(c.dir) / e.name;
  if (Exists(path / kDcpMetadata)) return Complete("older than the tracker, DCP .metadata", step);
  const TreeProof proof = ProveFilesUnder(path, "");
  if (!proof.whole) return Incomplete(proof.problem, step);
  if (proof.required == 0) return Incomplete("no whole torch.save file inside", step);
  return Complete("older than the tracker, its torch.save files whole", step);
}

EntryJudgement JudgeHfTrainer(const LayoutContext& c, const CheckpointEntry& e) {
  if (!e.is_dir) return {};
  auto step = NumberAfter(e.name, "checkpoint-");
  if (!step) return {};
  if (auto marked = MarkedByTheJob(c, e, step)) return *marked;
  const fs::path state = fs::path(c.dir) / e.name / kHfTrainerState;
  if (!Exists(state)) {
    return Incomplete(std::string("no ") + kHfTrainerState + " (the Trainer writes it last)", step);
  }
  if (!JsonIsWhole(state)) return Incomplete(std::string(kHfTrainerState) + " cut short", step);
  return Complete(kHfTrainerState, step);
}

EntryJudgement JudgeAccelerate(const LayoutContext& c, const CheckpointEntry& e) {
  if (!e.is_dir) return {};
  auto step = NumberAfter(e.name, "checkpoint_");
  if (!step) return {};
  if (auto marked = MarkedByTheJob(c, e, step)) return *marked;
  const TreeProof proof = ProveFilesUnder(fs::path(c.dir) / e.name, "random_states_");
  if (!proof.whole) return Incomplete(proof.problem, step);
  if (proof.required == 0) {
    return Incomplete("no whole random_states_*.pkl (save_state writes it last)", step);
  }
  return Complete("random_states_*.pkl and every torch.save file whole", step);
}

// Orbax step names: "<step>", "<prefix>_<step>", zero-padded or not (orbax _src/path/step.py).
std::optional<int64_t> OrbaxStep(const std::string& name) {
  const size_t underscore = name.rfind('_');
  return ParseDigits(
      std::string_view(name).substr(underscore == std::string::npos ? 0 : underscore + 1));
}

EntryJudgement JudgeOrbax(const LayoutContext& c, const CheckpointEntry& e) {
  if (!e.is_dir) return {};
  if (const size_t tmp = e.name.find(kOrbaxTmpSuffix); tmp != std::string::npos) {
    return Incomplete("Orbax temporary directory, not renamed yet",
                      OrbaxStep(e.name.substr(0, tmp)));
  }
  auto step = OrbaxStep(e.name);
  if (!step) return {};
  if (auto marked = MarkedByTheJob(c, e, step)) return *marked;
  const fs::path path = fs::path(c.dir) / e.name;
  if (Exists(path / kOrbaxCommitFile)) return Complete(kOrbaxCommitFile, step);
  // Before orbax wrote commit_success.txt in every mode, a renamed step had only its metadata's
  // commit timestamp (set just before the rename or the commit file).
  if (auto text = ReadSmall(path / kOrbaxStepMetadata)) {
    auto meta = nlohmann::json::parse(*text, nullptr, false);
    if (meta.is_object() && meta.contains("commit_timestamp_nsecs") &&
        meta["commit_timestamp_nsecs"].is_number()) {
      return Complete(std::string(kOrbaxStepMetadata) + " commit_timestamp_nsecs", step);
    }
  }
  return Incomplete(std::string("no ") + kOrbaxCommitFile + " and no commit timestamp", step);
}

EntryJudgement JudgeTorchtitan(const LayoutContext& c, const CheckpointEntry& e) {
  if (!e.is_dir) return {};
  auto step = NumberAfter(e.name, "step-");
  if (!step) return {};
  if (auto marked = MarkedByTheJob(c, e, step)) return *marked;
  const fs::path path = fs::path(c.dir) / e.name;
  if (Exists(path / kDcpMetadata)) return Complete("DCP .metadata", step);
  if (Exists(path / kHfSafetensorsIndex)) return Complete(kHfSafetensorsIndex, step);
  return Incomplete("no DCP .metadata yet (written last, by rename)", step);
}

EntryJudgement JudgeLightning(const LayoutContext& c, const CheckpointEntry& e) {
  if (e.is_dir || !EndsWith(e.name, ".ckpt")) return {};
  std::optional<int64_t> step;
  if (const size_t at = e.name.find("step="); at != std::string::npos) {
    size_t end = at + 5;
    while (end < e.name.size() && std::isdigit(static_cast<unsigned char>(e.name[end]))) ++end;
    step = ParseDigits(std::string_view(e.name).substr(at + 5, end - at - 5));
  }
  EntryJudgement j = JudgeFile(c, e, step);
  j.step.reset();  // Lightning names do not always carry the step: order by time
  j.protect = e.name.rfind("last", 0) == 0;
  return j;
}

bool HasDirWith(const std::string& dir, const std::vector<CheckpointEntry>& entries,
                const char* prefix, const char* inside) {
  return std::any_of(entries.begin(), entries.end(), [&](const CheckpointEntry& e) {
    return e.is_dir && NumberAfter(e.name, prefix) &&
           (inside == nullptr || Exists(fs::path(dir) / e.name / inside));
  });
}

// Indexed by CheckpointLayout.
const std::vector<std::string>& LayoutNames() {
  static const std::vector<std::string> kNames = {"auto",       "plain",    "hf-trainer",
                                                  "deepspeed",  "megatron", "lightning",
                                                  "accelerate", "orbax",    "torchtitan"};
  return kNames;
}

}  // namespace

Result<CheckpointLayout> ParseCheckpointLayout(const std::string& text) {
  const auto& names = LayoutNames();
  for (size_t i = 0; i < names.size(); ++i) {
    if (text == names[i]) return static_cast<CheckpointLayout>(i);
  }
  return InputError(
      {"", std::nullopt, "--checkpoint-layout", JoinNames(names), text, NearestNames(text, names)});
}

const char* CheckpointLayoutName(CheckpointLayout layout) {
  return LayoutNames().at(static_cast<size_t>(layout)).c_str();
}

CheckpointLayout DetectCheckpointLayout(const std::string& dir,
                                        const std::vector<CheckpointEntry>& entries) {
  const auto has_file = [&](const std::string& name) {
    return std::any_of(entries.begin(), entries.end(),
                       [&](const CheckpointEntry& e) { return !e.is_dir && e.name == name; });
  };
  if (has_file(kDeepSpeedPointer) || HasDirWith(dir, entries, "global_step", nullptr)) {
    return CheckpointLayout::kDeepSpeed;
  }
  if (has_file(kMegatronTracker) || HasDirWith(dir, entries, "iter_", nullptr)) {
    return CheckpointLayout::kMegatron;
  }
  if (HasDirWith(dir, entries, "checkpoint-", nullptr)) return CheckpointLayout::kHfTrainer;
  if (HasDirWith(dir, entries, "checkpoint_", nullptr)) return CheckpointLayout::kAccelerate;
  if (HasDirWith(dir, entries, "step-", kDcpMetadata) ||
      HasDirWith(dir, entries, "step-", kHfSafetensorsIndex)) {
    return CheckpointLayout::kTorchtitan;
  }
  const bool orbax = std::any_of(entries.begin(), entries.end(), [&](const CheckpointEntry& e) {
    return e.is_dir &&
           (e.name.find(kOrbaxTmpSuffix) != std::string::npos ||
            (OrbaxStep(e.name) && (Exists(fs::path(dir) / e.name / kOrbaxCommitFile) ||
                                   Exists(fs::path(dir) / e.name / kOrbaxStepMetadata))));
  });
  if (orbax) return CheckpointLayout::kOrbax;
  const bool lightning = std::any_of(entries.begin(), entries.end(), [](const CheckpointEntry& e) {
    return !e.is_dir && EndsWith(e.name, ".ckpt");
  });
  if (lightning) return CheckpointLayout::kLightning;
  return CheckpointLayout::kPlain;
}

void ReadLayoutPointer(LayoutContext& context) {
  context.pointer.reset();
  const char* name = context.layout == CheckpointLayout::kDeepSpeed  ? kDeepSpeedPointer
                     : context.layout == CheckpointLayout::kMegatron ? kMegatronTracker
                                                                     : nullptr;
  if (name == nullptr) return;
  if (auto text = ReadSmall(fs::path(context.dir) / name)) {
    std::string tag = Trim(*text);
    if (!tag.empty()) context.pointer = tag;
  }
}

EntryJudgement JudgeCheckpointEntry(const LayoutContext& context, const CheckpointEntry& entry) {
  switch (context.layout) {
    case CheckpointLayout::kAuto:
    case CheckpointLayout::kPlain:
      return JudgePlain(context, entry);
    case CheckpointLayout::kHfTrainer:
      return JudgeHfTrainer(context, entry);
    case CheckpointLayout::kDeepSpeed:
      return JudgeDeepSpeed(context, entry);
    case CheckpointLayout::kMegatron:
      return JudgeMegatron(context, entry);
    case CheckpointLayout::kLightning:
      return JudgeLightning(context, entry);
    case CheckpointLayout::kAccelerate:
      return JudgeAccelerate(context, entry);
    case CheckpointLayout::kOrbax:
      return JudgeOrbax(context, entry);
    case CheckpointLayout::kTorchtitan:
      return JudgeTorchtitan(context, entry);
  }
  return {};
}

}  // namespace fulcrum::supervise
