#include "supervise/checkpoints.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace fulcrum::supervise {
namespace {
namespace fs = std::filesystem;

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
