// What the checkpoint scanner refuses whatever proves a checkpoint complete (issue 29, item 11):
// a checkpoint dir that is "/" or a system directory after resolving symlinks, a checkpoint of
// 0 bytes, and one that shrank by more than 90 % against the complete one before it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "supervise/checkpoints.h"

namespace fulcrum::supervise {
namespace {
namespace fs = std::filesystem;

class CheckpointGuardTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/checkpoint-guard-" + std::to_string(::getpid()) + "-" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(dir_);
    fs::create_directories(dir_ + "/ckpt");
  }
  void TearDown() override { fs::remove_all(dir_); }
  // A directory checkpoint step-N with a data file of `bytes` bytes and its COMPLETE marker.
  void Save(int step, size_t bytes) {
    const std::string path = dir_ + "/ckpt/step-" + std::to_string(step);
    fs::create_directories(path);
    std::ofstream(path + "/data.bin") << std::string(bytes, 'w');
    std::ofstream(path + "/COMPLETE");  // touched, as most jobs make their marker
  }
  std::vector<std::string> Names(const std::vector<Checkpoint>& complete) {
    std::vector<std::string> names;
    for (const auto& c : complete) names.push_back(c.name);
    return names;
  }
  CheckpointScanner Scanner() {
    CheckpointScanOptions o;
    o.dir = dir_ + "/ckpt";
    return CheckpointScanner(o);
  }
  std::string dir_;
};

TEST_F(CheckpointGuardTest, RootOrASystemDirectoryIsRefusedAfterResolvingSymlinks) {
  fs::create_directory_symlink("/", dir_ + "/root-link");
  fs::create_directory_symlink("/usr", dir_ + "/usr-link");
  for (const auto& [dir, system] :
       std::vector<std::pair<std::string, std::string>>{{"/", "/"},
                                                        {dir_ + "/root-link", "/"},
                                                        {dir_ + "/usr-link/", "/usr"},
                                                        {"/etc", "/etc"},
                                                        {"/proc/self", "/proc/"},
                                                        {"/var", "/var"},
                                                        {"/usr/../", "/"}}) {
    SCOPED_TRACE(dir);
    Status st = CheckCheckpointDir(dir);
    ASSERT_EQ(st.code(), StatusCode::kInvalidInput);
    EXPECT_NE(st.message().find("found the system directory " + system), std::string::npos)
        << st.message();
    EXPECT_EQ(st.message().rfind("--checkpoint-dir " + dir +
                                     ": expected a directory of the "
                                     "job's own",
                                 0),
              0u)
        << st.message();
  }
  EXPECT_NE(CheckCheckpointDir(dir_ + "/root-link").message().find(dir_ + "/root-link -> /)"),
            std::string::npos);
  // The scanner refuses it too: nothing in / is taken for a checkpoint and resumed from.
  CheckpointScanOptions o;
  o.dir = dir_ + "/root-link";
  CheckpointScanner scanner(o);
  EXPECT_EQ(scanner.Scan(1000).status().code(), StatusCode::kInvalidInput);
  // A job's own directory, also one inside /tmp or /var, is fine, as is one not made yet.
  EXPECT_TRUE(CheckCheckpointDir(dir_ + "/ckpt").ok());
  EXPECT_TRUE(CheckCheckpointDir(dir_ + "/not-yet/ckpt").ok());
  EXPECT_TRUE(CheckCheckpointDir("/var/tmp/job-7/ckpt").ok());
}

TEST_F(CheckpointGuardTest, AZeroByteCheckpointIsNotCompleteAndAWarningNamesIt) {
  Save(10, 4096);
  Save(20, 0);  // every file 0 bytes: nothing of the model was written
  auto scanner = Scanner();
  auto complete = scanner.Scan(1000);
  ASSERT_TRUE(complete.ok()) << complete.status().message();
  EXPECT_EQ(Names(*complete), std::vector<std::string>{"step-10"});
  const auto notes = scanner.TakeNotes();
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0], "warning: checkpoint " + dir_ +
                          "/ckpt/step-20 is not complete: its files "
                          "are 0 bytes");
  // Said once, not at every scan.
  ASSERT_TRUE(scanner.Scan(1001).ok());
  EXPECT_TRUE(scanner.TakeNotes().empty());
  // A 0-byte file with its sibling marker is no checkpoint either.
  std::ofstream(dir_ + "/ckpt/model-30.pt");
  std::ofstream(dir_ + "/ckpt/model-30.pt.COMPLETE");
  auto again = scanner.Scan(1002);
  ASSERT_TRUE(again.ok());
  for (const auto& c : *again) EXPECT_NE(c.name, "model-30.pt");
}

TEST_F(CheckpointGuardTest, ACheckpointThatShrankOverNinetyPercentIsNotComplete) {
  Save(10, 4000000);
  Save(20, 3800000);
  Save(30, 360000);   // 90.5 % smaller than step-20: truncated
  Save(40, 3600000);  // compared with step-20, the last one kept
  auto scanner = Scanner();
  auto complete = scanner.Scan(1000);
  ASSERT_TRUE(complete.ok());
  EXPECT_EQ(Names(*complete), (std::vector<std::string>{"step-10", "step-20", "step-40"}));
  const auto notes = scanner.TakeNotes();
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("checkpoint " + dir_ +
                          "/ckpt/step-30 is not complete: 360000 bytes, 90 % "
                          "smaller than step-20 (3800000 bytes)"),
            std::string::npos)
      << notes[0];
  // 10 % of the one before is still complete.
  Save(50, 360000);
  auto later = scanner.Scan(1001);
  ASSERT_TRUE(later.ok());
  EXPECT_EQ(later->back().name, "step-50");
}

TEST_F(CheckpointGuardTest, SmallCheckpointsAreNotComparedForShrinking) {
  Save(10, 900000);  // under 1 MiB: its metadata may outweigh the next one's data
  Save(20, 1000);
  auto scanner = Scanner();
  auto complete = scanner.Scan(1000);
  ASSERT_TRUE(complete.ok());
  EXPECT_EQ(Names(*complete), (std::vector<std::string>{"step-10", "step-20"}));
}

}  // namespace
}  // namespace fulcrum::supervise
