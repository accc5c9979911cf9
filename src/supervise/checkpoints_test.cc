#include "supervise/checkpoints.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "supervise/checkpoints_test_fixtures.h"

namespace fulcrum::supervise {
namespace {
namespace fs = std::filesystem;
using testing::SafetensorsBytes;
using testing::TorchSaveBytes;
using testing::WriteBytes;

class CheckpointsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (fs::path(FULCRUM_BUILD_DIR) / "Testing" / "tmp" /
            ("checkpoints-" +
             std::string(::testing::UnitTest::GetInstance()->current_test_info()->name())))
               .string();
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void Write(const std::string& rel, const std::string& text = "x") {
    fs::create_directories(fs::path(dir_ + "/" + rel).parent_path());
    std::ofstream(dir_ + "/" + rel) << text;
  }
  void Age(const std::string& rel, int seconds) {
    fs::last_write_time(dir_ + "/" + rel,
                        fs::file_time_type::clock::now() - std::chrono::seconds(seconds));
  }
  void Bytes(const std::string& rel, const std::string& bytes) {
    WriteBytes(dir_ + "/" + rel, bytes);
  }
  // Ages an entry and everything under it: written long ago, quiet since.
  void AgeTree(const std::string& rel, int seconds) {
    const auto when = fs::file_time_type::clock::now() - std::chrono::seconds(seconds);
    const fs::path root = dir_ + "/" + rel;
    if (fs::is_directory(root)) {
      for (const auto& e : fs::recursive_directory_iterator(root)) {
        if (!e.is_symlink()) fs::last_write_time(e.path(), when);
      }
    }
    if (!fs::is_symlink(root)) fs::last_write_time(root, when);
  }
  std::vector<std::string> SkippedNames(const CheckpointScanner& scanner) {
    std::vector<std::string> names;
    for (const auto& s : scanner.skipped()) names.push_back(s.name);
    return names;
  }
  std::string SkipReason(const CheckpointScanner& scanner, const std::string& name) {
    for (const auto& s : scanner.skipped()) {
      if (s.name == name) return s.reason;
    }
    return "";
  }
  std::vector<std::string> Names(CheckpointScanner& scanner, double now) {
    auto found = scanner.Scan(now);
    EXPECT_TRUE(found.ok());
    std::vector<std::string> names;
    for (const auto& c : *found) names.push_back(c.name);
    return names;
  }
  CheckpointScanOptions Options() {
    CheckpointScanOptions o;
    o.dir = dir_;
    o.settle_seconds = 10;
    return o;
  }
  std::string dir_;
};

TEST_F(CheckpointsTest, DirectoriesNeedTheMarkerOrDcpMetadata) {
  Write("step-1/weights", "w");
  Write("step-1/COMPLETE");
  Write("step-2/weights", "w");  // no marker: partial
  Write("dcp-3/__0_0.distcp", "d");
  Write("dcp-3/.metadata", "m");
  Write(".tmp-4/COMPLETE");  // hidden: never a checkpoint
  Age("step-1/weights", 100);
  CheckpointScanner scanner(Options());
  auto names = Names(scanner, 0);
  ASSERT_EQ(names.size(), 2u);
  EXPECT_NE(std::find(names.begin(), names.end(), "step-1"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "dcp-3"), names.end());
  // Even after a long wait a directory without a marker stays partial.
  EXPECT_EQ(Names(scanner, 1000).size(), 2u);
}

TEST_F(CheckpointsTest, RulesCanBeNarrowedAndThePatternFilters) {
  Write("step-1/COMPLETE");
  Write("dcp-2/.metadata");
  CheckpointScanOptions o = Options();
  o.rule = CompletionRule::kDcp;
  CheckpointScanner dcp(o);
  EXPECT_EQ(Names(dcp, 0), (std::vector<std::string>{"dcp-2"}));
  o.rule = CompletionRule::kAuto;
  o.pattern = "step-*";
  CheckpointScanner pattern(o);
  EXPECT_EQ(Names(pattern, 0), (std::vector<std::string>{"step-1"}));
}

TEST_F(CheckpointsTest, PlainFilesCompleteWhenTheirSizeSettles) {
  Write("model-1.pt", "abc");
  CheckpointScanner scanner(Options());
  EXPECT_TRUE(Names(scanner, 0).empty()) << "fresh file: still being written";
  Write("model-1.pt", "abcdef");  // grows
  EXPECT_TRUE(Names(scanner, 5).empty());
  EXPECT_TRUE(Names(scanner, 14).empty()) << "9 s since the last change";
  EXPECT_EQ(Names(scanner, 15.5), (std::vector<std::string>{"model-1.pt"}));
}

TEST_F(CheckpointsTest, SiblingMarkerCompletesAFileAtOnce) {
  Write("model-1.pt", "abc");
  Write("model-1.pt.COMPLETE");
  CheckpointScanner scanner(Options());
  EXPECT_EQ(Names(scanner, 0), (std::vector<std::string>{"model-1.pt"}));
}

TEST_F(CheckpointsTest, AFileCutShortByTheWritersDeathStaysPartial) {
  Write("model-1.pt", "abc");
  CheckpointScanner scanner(Options());
  EXPECT_TRUE(Names(scanner, 0).empty());
  scanner.OnWriterDied(1);
  EXPECT_TRUE(Names(scanner, 100).empty()) << "stable, but its writer died while writing it";
  // A new writer rewrites it: it can complete again.
  Write("model-1.pt", "abcdefgh");
  EXPECT_TRUE(Names(scanner, 101).empty());
  EXPECT_EQ(Names(scanner, 112), (std::vector<std::string>{"model-1.pt"}));
}

TEST_F(CheckpointsTest, OldQuietFilesFoundAtStartAreComplete) {
  Write("model-1.pt", "abc");
  Age("model-1.pt", 3600);
  CheckpointScanner scanner(Options());
  EXPECT_EQ(Names(scanner, 0), (std::vector<std::string>{"model-1.pt"}));
}

TEST_F(CheckpointsTest, NewestLastAndPruneKeepsK) {
  for (int i = 1; i <= 4; ++i) {
    Write("step-" + std::to_string(i) + "/COMPLETE");
    Age("step-" + std::to_string(i) + "/COMPLETE", 100 - i);
    Age("step-" + std::to_string(i), 100 - i);
  }
  Write("step-5/partial");
  CheckpointScanOptions o = Options();
  o.keep = 2;
  CheckpointScanner scanner(o);
  auto found = scanner.Scan(0);
  ASSERT_TRUE(found.ok());
  ASSERT_EQ(found->size(), 4u);
  EXPECT_EQ(found->back().name, "step-4");
  auto removed = scanner.Prune(*found);
  EXPECT_EQ(removed.size(), 2u);
  EXPECT_FALSE(fs::exists(dir_ + "/step-1"));
  EXPECT_FALSE(fs::exists(dir_ + "/step-2"));
  EXPECT_TRUE(fs::exists(dir_ + "/step-3"));
  EXPECT_TRUE(fs::exists(dir_ + "/step-5")) << "partial ones are not pruned";
}

TEST_F(CheckpointsTest, MissingDirectoryMeansNoCheckpointsYet) {
  CheckpointScanOptions o = Options();
  o.dir = dir_ + "/absent";
  CheckpointScanner scanner(o);
  auto found = scanner.Scan(0);
  ASSERT_TRUE(found.ok());
  EXPECT_TRUE(found->empty());
  EXPECT_FALSE(ParseCompletionRule("sometimes").ok());
}

}  // namespace
}  // namespace fulcrum::supervise

namespace fulcrum::supervise {
namespace {

// Fixture from microsoft/DeepSpeed@38327e07 deepspeed/runtime/engine.py: save_checkpoint()
// writes save_dir/<tag>/mp_rank_00_model_states.pt (_get_ckpt_name) and
// zero_pp_rank_<r>_mp_rank_00_optim_states.pt (_get_zero_ckpt_name), then rank 0 writes the tag
// to save_dir/latest; _save_zero_checkpoint() copies zero_to_fp32.py into save_dir.
TEST_F(CheckpointsTest, DeepSpeedResumesFromTheTagLatestNamesNeverFromZeroToFp32) {
  for (const char* tag : {"global_step10", "global_step20"}) {
    Bytes(std::string(tag) + "/mp_rank_00_model_states.pt", TorchSaveBytes());
    Bytes(std::string(tag) + "/zero_pp_rank_0_mp_rank_00_optim_states.pt", TorchSaveBytes());
  }
  Write("latest", "global_step20");
  // The save of step 30 is under way: its files are there, `latest` not updated yet.
  Bytes("global_step30/mp_rank_00_model_states.pt", TorchSaveBytes());
  Write("zero_to_fp32.py", "#!/usr/bin/env python\n");
  for (const char* rel : {"global_step10", "global_step20", "global_step30", "latest"}) {
    AgeTree(rel, 300);
  }
  AgeTree("zero_to_fp32.py", 100);  // the newest quiet file: what the old rule resumed from
  CheckpointScanner scanner(Options());
  EXPECT_EQ(Names(scanner, 0), (std::vector<std::string>{"global_step10", "global_step20"}));
  EXPECT_EQ(scanner.layout(), CheckpointLayout::kDeepSpeed);
  EXPECT_EQ(SkippedNames(scanner), (std::vector<std::string>{"global_step30"}));
  EXPECT_NE(SkipReason(scanner, "global_step30").find("newer than `latest`"), std::string::npos);
  // Once DeepSpeed points `latest` at it, step 30 is the newest.
  Write("latest", "global_step30");
  EXPECT_EQ(Names(scanner, 1).back(), "global_step30");
}

// Fixture from huggingface/transformers@000945a9 src/transformers/trainer.py _save_checkpoint():
// output_dir/checkpoint-<global_step>/ gets the model (model.safetensors), optimizer.pt,
// scheduler.pt, rng_state.pth and, last, trainer_state.json (TrainerState.save_to_json).
TEST_F(CheckpointsTest, HfTrainerResumesFromCheckpointNNeverFromAStrayFile) {
  const auto save = [&](int step, bool finished) {
    const std::string d = "checkpoint-" + std::to_string(step);
    Bytes(d + "/model.safetensors", SafetensorsBytes());
    Bytes(d + "/optimizer.pt", TorchSaveBytes());
    Bytes(d + "/scheduler.pt", TorchSaveBytes());
    Bytes(d + "/rng_state.pth", TorchSaveBytes());
    if (finished)
      Write(d + "/trainer_state.json", "{\"global_step\": " + std::to_string(step) + "}\n");
    AgeTree(d, 1000 - step / 10);
  };
  save(500, true);
  save(1000, true);
  save(1500, false);  // killed before trainer_state.json
  Write("runs/Dec01_13-00-00/events.out.tfevents.1", "tb");
  Write("runs.txt", "run ids");
  Write("model.bin.json", "{}");
  AgeTree("runs", 500);
  AgeTree("runs.txt", 100);
  CheckpointScanner scanner(Options());
  EXPECT_EQ(Names(scanner, 0), (std::vector<std::string>{"checkpoint-500", "checkpoint-1000"}));
  EXPECT_EQ(scanner.layout(), CheckpointLayout::kHfTrainer);
  EXPECT_NE(SkipReason(scanner, "checkpoint-1500").find("no trainer_state.json"),
            std::string::npos);
  // A trainer_state.json cut short does not complete it either.
  Write("checkpoint-1500/trainer_state.json", "{\"global_step\": 15");
  EXPECT_EQ(Names(scanner, 1).back(), "checkpoint-1000");
  EXPECT_NE(SkipReason(scanner, "checkpoint-1500").find("cut short"), std::string::npos);
  Write("checkpoint-1500/trainer_state.json", "{\"global_step\": 1500}\n");
  EXPECT_EQ(Names(scanner, 2).back(), "checkpoint-1500");
}

// Fixture from NVIDIA/Megatron-LM@d98e8a64 megatron/training/checkpointing.py:
// get_checkpoint_name() gives save/iter_{:07d}/mp_rank_00/model_optim_rng.pt (legacy format) and
// iter_finalize_fn() writes the iteration to latest_checkpointed_iteration.txt after the save.
TEST_F(CheckpointsTest, MegatronFollowsItsTrackerFile) {
  for (const char* iter : {"iter_0000100", "iter_0000200", "iter_0000300"}) {
    Bytes(std::string(iter) + "/mp_rank_00/model_optim_rng.pt", TorchSaveBytes());
    AgeTree(iter, 300);
  }
  Write("latest_checkpointed_iteration.txt", "200");
  CheckpointScanner scanner(Options());
  EXPECT_EQ(Names(scanner, 0), (std::vector<std::string>{"iter_0000100", "iter_0000200"}));
  EXPECT_EQ(scanner.layout(), CheckpointLayout::kMegatron);
  EXPECT_EQ(SkippedNames(scanner), (std::vector<std::string>{"iter_0000300"}));
  Write("latest_checkpointed_iteration.txt", "300");
  EXPECT_EQ(Names(scanner, 1).back(), "iter_0000300");
}

// Fixture from Lightning-AI/pytorch-lightning@7f0c3436 src/lightning/pytorch/callbacks/
// model_checkpoint.py: "{epoch}-{step}" names with auto_insert_metric_name ("epoch=0-step=100"),
// FILE_EXTENSION ".ckpt", last.ckpt as a symlink with save_last="link" (_link_checkpoint);
// each file is torch.save output (fabric/utilities/cloud_io.py _atomic_save).
TEST_F(CheckpointsTest, LightningCkptFilesAndLastCkpt) {
  Bytes("epoch=0-step=100.ckpt", TorchSaveBytes("a"));
  Bytes("epoch=1-step=200.ckpt", TorchSaveBytes("b"));
  AgeTree("epoch=0-step=100.ckpt", 300);
  AgeTree("epoch=1-step=200.ckpt", 200);
  fs::create_symlink("epoch=1-step=200.ckpt", dir_ + "/last.ckpt");
  const std::string writing = TorchSaveBytes("c");
  Bytes("epoch=2-step=300.ckpt", writing.substr(0, writing.size() / 2));  // being written
  Write("hparams.yaml", "lr: 0.1\n");
  CheckpointScanOptions o = Options();
  o.keep = 1;
  CheckpointScanner scanner(o);
  auto found = scanner.Scan(0);
  ASSERT_TRUE(found.ok());
  EXPECT_EQ(scanner.layout(), CheckpointLayout::kLightning);
  ASSERT_EQ(found->size(), 3u);
  EXPECT_EQ(found->back().name, "last.ckpt");
  EXPECT_EQ(SkippedNames(scanner), (std::vector<std::string>{"epoch=2-step=300.ckpt"}));
  // --keep 1 removes the old one, never last.ckpt nor the file it links to.
  EXPECT_EQ(scanner.Prune(*found), (std::vector<std::string>{dir_ + "/epoch=0-step=100.ckpt"}));
  EXPECT_TRUE(fs::exists(dir_ + "/epoch=1-step=200.ckpt"));
  EXPECT_TRUE(fs::exists(dir_ + "/last.ckpt"));
  EXPECT_TRUE(fs::exists(dir_ + "/hparams.yaml"));
}

// Fixture from huggingface/accelerate@16cb6eb8: accelerator.py save_state() with
// automatic_checkpoint_naming writes project_dir/checkpoints/checkpoint_<iteration>/;
// checkpointing.py save_accelerator_state() writes model.safetensors, optimizer.bin,
// scheduler.bin, then random_states_<process_index>.pkl (torch.save) last.
TEST_F(CheckpointsTest, AccelerateCheckpointNNeedsItsRandomStates) {
  for (int i = 0; i < 2; ++i) {
    const std::string d = "checkpoint_" + std::to_string(i);
    Bytes(d + "/model.safetensors", SafetensorsBytes());
    Bytes(d + "/optimizer.bin", TorchSaveBytes());
    Bytes(d + "/scheduler.bin", TorchSaveBytes());
  }
  Bytes("checkpoint_0/random_states_0.pkl", TorchSaveBytes());
  const std::string rng = TorchSaveBytes();
  Bytes("checkpoint_1/random_states_0.pkl", rng.substr(0, rng.size() - 5));  // cut short
  CheckpointScanner scanner(Options());
  EXPECT_EQ(Names(scanner, 0), (std::vector<std::string>{"checkpoint_0"}));
  EXPECT_EQ(scanner.layout(), CheckpointLayout::kAccelerate);
  EXPECT_NE(SkipReason(scanner, "checkpoint_1").find("random_states_0.pkl"), std::string::npos);
  Bytes("checkpoint_1/random_states_0.pkl", rng);
  EXPECT_EQ(Names(scanner, 1).back(), "checkpoint_1");
}

// Fixture from google/orbax@3ff7b24a checkpoint/orbax/checkpoint/_src/path/atomicity.py:
// a step is written to "<step>.orbax-checkpoint-tmp" and renamed to "<step>"
// (AtomicRenameTemporaryPath), or written in place and finalized with commit_success.txt
// (CommitFileTemporaryPath); _CHECKPOINT_METADATA gets commit_timestamp_nsecs at commit
// (_src/metadata/checkpoint.py). Older orbax renamed without writing commit_success.txt.
TEST_F(CheckpointsTest, OrbaxStepsCompleteByCommitFileOrRename) {
  Write("100/default/array.zarr", "z");
  Write("100/_CHECKPOINT_METADATA", "{\"init_timestamp_nsecs\": 1, \"commit_timestamp_nsecs\": 2}");
  Write("100/commit_success.txt", "Checkpoint commit was successful to 100");
  Write("150/default/array.zarr", "z");
  Write("150/_CHECKPOINT_METADATA", "{\"init_timestamp_nsecs\": 1, \"commit_timestamp_nsecs\": 3}");
  Write("200.orbax-checkpoint-tmp/default/array.zarr", "z");
  Write("300/_CHECKPOINT_METADATA", "{\"init_timestamp_nsecs\": 4}");  // commit-file mode, writing
  CheckpointScanner scanner(Options());
  EXPECT_EQ(Names(scanner, 0), (std::vector<std::string>{"100", "150"}));
  EXPECT_EQ(scanner.layout(), CheckpointLayout::kOrbax);
  EXPECT_EQ(SkippedNames(scanner), (std::vector<std::string>{"200.orbax-checkpoint-tmp", "300"}));
  // The rename lands: 200 is complete.
  fs::rename(dir_ + "/200.orbax-checkpoint-tmp", dir_ + "/200");
  Write("200/commit_success.txt", "ok");
  EXPECT_EQ(Names(scanner, 1), (std::vector<std::string>{"100", "150", "200"}));
}

// Fixture from pytorch/torchtitan@b5bcd76c torchtitan/components/checkpointer/dcp.py:
// _create_checkpoint_id() "step-<N>", saved by dcp.save (rank files __<r>_<n>.distcp, then
// .metadata by rename: pytorch/pytorch@0140b62d torch/distributed/checkpoint/filesystem.py
// FileSystemWriter.finish); _find_load_step() takes only a step-N holding .metadata.
TEST_F(CheckpointsTest, TorchtitanStepNNeedsDcpMetadata) {
  Write("step-10/__0_0.distcp", "d");
  Write("step-10/.metadata", "m");
  Write("step-20/__0_0.distcp", "d");
  Write("step-20/.metadata.tmp", "m");  // finish() not done renaming
  CheckpointScanner scanner(Options());
  EXPECT_EQ(Names(scanner, 0), (std::vector<std::string>{"step-10"}));
  EXPECT_EQ(scanner.layout(), CheckpointLayout::kTorchtitan);
  EXPECT_EQ(SkippedNames(scanner), (std::vector<std::string>{"step-20"}));
  fs::rename(dir_ + "/step-20/.metadata.tmp", dir_ + "/step-20/.metadata");
  EXPECT_EQ(Names(scanner, 1).back(), "step-20");
}

// The real thing: torch 1.13's torch.distributed._shard.checkpoint (Debian's python3-torch)
// writes the DCP layout that torch.distributed.checkpoint took over. On Python 3.11 that module
// fails to import (a dataclass with a mutable default: "ValueError: mutable default ...
// TensorProperties"); the shim makes dataclasses hashable before torch is imported.
constexpr const char* kDcpSave113 = R"(import dataclasses, sys
_dataclass = dataclasses.dataclass
def _hashable(cls=None, /, **kwargs):
    def wrap(c):
        c = _dataclass(c, **kwargs)
        if c.__hash__ is None:
            c.__hash__ = object.__hash__
        return c
    return wrap if cls is None else wrap(cls)
dataclasses.dataclass = _hashable
import torch
import torch.distributed._shard.checkpoint as dcp
dcp.save_state_dict({"w": torch.ones(8, 8)}, dcp.FileSystemWriter(sys.argv[1]), no_dist=True)
)";

TEST_F(CheckpointsTest, DcpDirectoryFromRealTorch113IsComplete) {
  if (std::system("/usr/bin/python3 -c 'import torch' 2>/dev/null") != 0) {
    GTEST_SKIP() << "python3-torch is not installed";
  }
  const fs::path script = fs::path(dir_).parent_path() / "dcp_save_113.py";
  std::ofstream(script) << kDcpSave113;
  const std::string command = "/usr/bin/python3 " + script.string() + " " + dir_ + "/dcp-7";
  ASSERT_EQ(std::system(command.c_str()), 0);
  fs::remove(script);
  ASSERT_TRUE(fs::exists(dir_ + "/dcp-7/.metadata"));
  ASSERT_TRUE(fs::exists(dir_ + "/dcp-7/__0_0.distcp"));
  CheckpointScanner scanner(Options());
  EXPECT_EQ(Names(scanner, 0), (std::vector<std::string>{"dcp-7"}));
  fs::remove(dir_ + "/dcp-7/.metadata");  // as if killed before finish() renamed it
  CheckpointScanner again(Options());
  EXPECT_TRUE(Names(again, 0).empty());
  EXPECT_EQ(SkippedNames(again), (std::vector<std::string>{"dcp-7"}));
}

// Issue 19: a complete file checkpoint written 2 s before a crash was ignored (30 s settle)
// and the job restarted fresh. torch.save's zip end record proves it whole at once.
TEST_F(CheckpointsTest, ACompleteTorchSaveFileWrittenJustBeforeACrashIsResumedFrom) {
  const std::string bytes = TorchSaveBytes(std::string(4000, 'w'));
  Bytes("model-73.pt", bytes.substr(0, 1000));
  CheckpointScanOptions o = Options();
  o.settle_seconds = 30;
  CheckpointScanner scanner(o);
  EXPECT_TRUE(Names(scanner, 0).empty()) << "half written";
  Bytes("model-73.pt", bytes);
  scanner.OnWriterDied(2);
  EXPECT_EQ(Names(scanner, 2), (std::vector<std::string>{"model-73.pt"}));
}

TEST_F(CheckpointsTest, AFileWithoutProofThatTheCrashCutIsSkippedWithTheReason) {
  Write("model.bin", std::string(100, 'x'));
  CheckpointScanner scanner(Options());
  EXPECT_TRUE(Names(scanner, 0).empty());
  scanner.OnWriterDied(2);
  EXPECT_TRUE(Names(scanner, 100).empty());
  EXPECT_NE(SkipReason(scanner, "model.bin").find("writer died"), std::string::npos);
  auto notes = scanner.TakeNotes();
  ASSERT_FALSE(notes.empty());
  EXPECT_NE(notes.back().find("skipped checkpoint " + dir_ + "/model.bin"), std::string::npos);
}

TEST_F(CheckpointsTest, SkipReasonsAreLoggedOnceEachAndTheLayoutWhenDetected) {
  Write("checkpoint-1/trainer_state.json", "{}");
  Write("checkpoint-2/model.safetensors", "partial");
  CheckpointScanner scanner(Options());
  Names(scanner, 0);
  auto notes = scanner.TakeNotes();
  ASSERT_EQ(notes.size(), 2u);
  EXPECT_EQ(notes[0], "checkpoint layout: hf-trainer (detected)");
  EXPECT_EQ(notes[1], "skipped checkpoint " + dir_ +
                          "/checkpoint-2: no trainer_state.json (the Trainer writes it last)");
  Names(scanner, 1);
  EXPECT_TRUE(scanner.TakeNotes().empty()) << "the same reason is not logged again";
}

TEST_F(CheckpointsTest, ASaveInProgressIsNotLoggedAsSkippedUntilTheWriterDies) {
  Write("checkpoint-1/trainer_state.json", "{}");
  CheckpointScanner scanner(Options());
  Names(scanner, 0);
  scanner.TakeNotes();
  Write("checkpoint-2/model.safetensors", "being written");
  EXPECT_EQ(Names(scanner, 1).back(), "checkpoint-1");
  EXPECT_EQ(SkippedNames(scanner), (std::vector<std::string>{"checkpoint-2"}));
  EXPECT_TRUE(scanner.TakeNotes().empty()) << "the job is still writing it";
  scanner.OnWriterDied(2);
  Names(scanner, 2);
  auto notes = scanner.TakeNotes();
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("checkpoint-2: no trainer_state.json"), std::string::npos) << notes[0];
}

// Issue 14: `--keep` with the default pattern deleted whatever had settled (logs, data files).
TEST_F(CheckpointsTest, KeepDeletesOnlyCheckpointsTheLayoutRecognises) {
  for (int i = 1; i <= 3; ++i) {
    const std::string name = "model-" + std::to_string(i) + ".pt";
    Bytes(name, TorchSaveBytes());
    AgeTree(name, 1000 - i);
  }
  Write("vocab.bin", std::string(64, 'v'));
  Write("train.log", "loss 1.0\n");
  Write("notes", "remember");
  for (const char* rel : {"vocab.bin", "train.log", "notes"}) AgeTree(rel, 5000);
  CheckpointScanOptions o = Options();
  o.keep = 1;
  CheckpointScanner scanner(o);
  auto found = scanner.Scan(0);
  ASSERT_TRUE(found.ok());
  EXPECT_EQ(found->back().name, "model-3.pt");
  auto removed = scanner.Prune(*found);
  EXPECT_EQ(removed, (std::vector<std::string>{dir_ + "/model-1.pt", dir_ + "/model-2.pt"}));
  for (const char* kept : {"model-3.pt", "vocab.bin", "train.log", "notes"}) {
    EXPECT_TRUE(fs::exists(dir_ + "/" + kept)) << kept;
  }
}

TEST_F(CheckpointsTest, RenameRuleTrustsEveryVisibleEntryAndIgnoresTempNames) {
  Write("weights-1.bin", "w");
  Write("weights-2.bin.tmp", "w");
  Write(".weights-3.bin", "w");
  CheckpointScanOptions o = Options();
  o.rule = CompletionRule::kRename;
  CheckpointScanner scanner(o);
  EXPECT_EQ(Names(scanner, 0), (std::vector<std::string>{"weights-1.bin"}));
}

TEST_F(CheckpointsTest, AnExplicitLayoutOverridesDetection) {
  Write("checkpoint-5/trainer_state.json", "{}");
  Write("step-9/.metadata", "m");
  CheckpointScanOptions o = Options();
  o.layout = CheckpointLayout::kTorchtitan;
  CheckpointScanner scanner(o);
  EXPECT_EQ(Names(scanner, 0), (std::vector<std::string>{"step-9"}));
}

TEST(CheckpointNamesTest, LayoutsAndRulesNameTheValidValues) {
  ASSERT_TRUE(ParseCheckpointLayout("deepspeed").ok());
  EXPECT_EQ(*ParseCheckpointLayout("hf-trainer"), CheckpointLayout::kHfTrainer);
  auto bad = ParseCheckpointLayout("deepsped");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("did you mean deepspeed"), std::string::npos)
      << bad.status().message();
  for (int i = 0; i <= static_cast<int>(CheckpointLayout::kTorchtitan); ++i) {
    const auto layout = static_cast<CheckpointLayout>(i);
    EXPECT_EQ(*ParseCheckpointLayout(CheckpointLayoutName(layout)), layout);
  }
  EXPECT_EQ(*ParseCompletionRule("rename"), CompletionRule::kRename);
  EXPECT_FALSE(ParseCompletionRule("sometimes").ok());
}

}  // namespace
}  // namespace fulcrum::supervise
