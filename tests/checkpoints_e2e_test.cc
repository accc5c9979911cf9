// End-to-end tests of checkpoint detection through the real binary: `fulcrum run` over a
// checkpoint dir laid out as a framework writes it, with a job (sh, or Debian's python3-torch)
// that reports $FULCRUM_RESUME_FROM. Loopback-free: no servers, files only.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "supervise/checkpoints_test_fixtures.h"
#include "support/run_binary.h"

namespace fulcrum::testing {
namespace {
namespace fs = std::filesystem;
using supervise::testing::TorchSaveBytes;
using supervise::testing::WriteBytes;

class CheckpointsE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = MakeTempDir("checkpoints");
    data_ = dir_ + "/data";
    ckpt_ = dir_ + "/ckpt";
    fs::create_directories(ckpt_);
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(dir_);
  }
  // `fulcrum run` of `sh -c script` over the checkpoint dir, no cadence requests.
  RunOutput Run(const std::string& name, const std::string& script,
                std::vector<std::string> extra = {}, bool requests = false) {
    std::vector<std::string> args = {
        "run",  "--name",    name,    "--data-dir",       data_, "--preemption",
        "none", "--backoff", "0.05s", "--checkpoint-dir", ckpt_, "--no-checkpoint-requests"};
    if (requests) args.pop_back();
    args.insert(args.end(), extra.begin(), extra.end());
    args.insert(args.end(), {"--", "/bin/sh", "-c", script});
    RunOptions options;
    options.timeout_seconds = 120;
    return RunFulcrum(args, options);
  }
  void Age(const std::string& rel, int seconds) {
    const auto when = fs::file_time_type::clock::now() - std::chrono::seconds(seconds);
    const fs::path root = ckpt_ + "/" + rel;
    if (fs::is_directory(root)) {
      for (const auto& e : fs::recursive_directory_iterator(root)) fs::last_write_time(e, when);
    }
    fs::last_write_time(root, when);
  }
  std::string dir_, data_, ckpt_;
};

// Issue 14: a DeepSpeed save dir resumed from zero_to_fp32.py and never read `latest`.
// Layout from microsoft/DeepSpeed@38327e07 deepspeed/runtime/engine.py save_checkpoint().
TEST_F(CheckpointsE2eTest, DeepSpeedSaveDirResumesFromTheTagInLatest) {
  for (const char* tag : {"global_step10", "global_step20", "global_step30"}) {
    WriteBytes(ckpt_ + "/" + tag + "/mp_rank_00_model_states.pt", TorchSaveBytes());
    Age(tag, 600);
  }
  std::ofstream(ckpt_ + "/latest") << "global_step20";
  std::ofstream(ckpt_ + "/zero_to_fp32.py") << "#!/usr/bin/env python\n";
  Age("latest", 600);
  Age("zero_to_fp32.py", 120);
  RunOutput r = Run("ds", "echo \"resume=$FULCRUM_RESUME_FROM\"");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("resume=" + ckpt_ + "/global_step20\n"), std::string::npos) << r.out;
  const std::string all = r.out + r.err;
  EXPECT_NE(all.find("checkpoint layout: deepspeed (detected)"), std::string::npos) << all;
  EXPECT_NE(all.find("skipped checkpoint " + ckpt_ + "/global_step30: newer than `latest`"),
            std::string::npos)
      << all;
}

// Issue 19: a whole torch.save file written 2 s before a crash waited for the 30 s settle time,
// and the job restarted fresh. Real torch.save (Debian's python3-torch), then the job dies.
TEST_F(CheckpointsE2eTest, ATorchSaveFileWrittenJustBeforeACrashIsResumedFrom) {
  if (std::system("/usr/bin/python3 -c 'import torch' 2>/dev/null") != 0) {
    GTEST_SKIP() << "python3-torch is not installed";
  }
  const std::string script =
      "if [ -n \"$FULCRUM_RESUME_FROM\" ]; then echo \"resume=$FULCRUM_RESUME_FROM\"; exit 0; fi\n"
      "/usr/bin/python3 -c 'import os, torch; torch.save({\"w\": torch.ones(256, 256)}, "
      "os.path.join(os.environ[\"FULCRUM_CHECKPOINT_DIR\"], \"model-73.pt\"))' 2>/dev/null\n"
      "exit 3\n";
  RunOutput r = Run("crash", script, {"--checkpoint-settle", "30s", "--max-restarts", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("resume=" + ckpt_ + "/model-73.pt\n"), std::string::npos) << r.out << r.err;
}

size_t CountOf(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

// Lightning's last.ckpt is saved again under the same name (ModelCheckpoint save_last, a copy):
// each save is a new checkpoint, although the newest path stays the same.
TEST_F(CheckpointsE2eTest, ACheckpointSavedAgainUnderTheSameNameCountsEachTime) {
  WriteBytes(dir_ + "/state.ckpt", TorchSaveBytes());
  const std::string script =
      "i=0; while [ $i -lt 80 ]; do\n"
      "  if [ -e \"$FULCRUM_CHECKPOINT_REQUEST_FILE\" ]; then\n"
      "    cp " +
      dir_ +
      "/state.ckpt \"$FULCRUM_CHECKPOINT_DIR/last.ckpt.tmp\"\n"
      "    mv \"$FULCRUM_CHECKPOINT_DIR/last.ckpt.tmp\" \"$FULCRUM_CHECKPOINT_DIR/last.ckpt\"\n"
      "    rm -f \"$FULCRUM_CHECKPOINT_REQUEST_FILE\"\n"
      "  fi\n"
      "  sleep 0.05; i=$((i+1))\n"
      "done\n";
  RunOutput r = Run("last", script, {"--checkpoint-every", "1s"}, /*requests=*/true);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_GE(CountOf(r.err, "checkpoint complete: " + ckpt_ + "/last.ckpt"), 2u) << r.err;
}

TEST_F(CheckpointsE2eTest, AnUnknownLayoutIsAUsageErrorNamingTheNearest) {
  RunOutput r = Run("bad", "true", {"--checkpoint-layout", "deepsped"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--checkpoint-layout"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("did you mean deepspeed"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace fulcrum::testing
