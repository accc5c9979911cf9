#include "supervise/checkpoints_format.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "supervise/checkpoints_test_fixtures.h"

namespace fulcrum::supervise {
namespace {
namespace fs = std::filesystem;
using testing::SafetensorsBytes;
using testing::TorchSaveBytes;
using testing::WriteBytes;
using testing::ZipBytes;

class CheckpointFormatTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(FULCRUM_BUILD_DIR) / "Testing" / "tmp" /
           ("ckpt-format-" +
            std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string Read(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
  }
  // Every prefix of `bytes` cut at `cuts` is not whole.
  void ExpectEveryCutIsShort(const std::string& bytes, const std::vector<size_t>& cuts) {
    for (size_t cut : cuts) {
      WriteBytes(dir_ / "cut", bytes.substr(0, cut));
      EXPECT_EQ(VerifyCheckpointFile((dir_ / "cut").string()).proof, FileProof::kCutShort)
          << "cut at " << cut << " of " << bytes.size();
    }
  }
  fs::path dir_;
};

// The real thing: Debian's python3-torch (1.13) writes the zip format (default since torch 1.6).
TEST_F(CheckpointFormatTest, TorchSaveFromRealTorchIsWholeAndEveryTruncationIsNot) {
  const fs::path saved = dir_ / "model.pt";
  const std::string command =
      "/usr/bin/python3 -c 'import sys, torch; torch.manual_seed(0); "
      "torch.save({\"w\": torch.randn(64, 64), \"step\": 7}, sys.argv[1])' " +
      saved.string() + " 2>/dev/null";
  if (std::system("/usr/bin/python3 -c 'import torch' 2>/dev/null") != 0) {
    GTEST_SKIP() << "python3-torch is not installed";
  }
  ASSERT_EQ(std::system(command.c_str()), 0);
  const FileVerdict whole = VerifyCheckpointFile(saved.string());
  EXPECT_EQ(whole.proof, FileProof::kWhole) << whole.detail;
  EXPECT_EQ(whole.format, "torch.save zip");
  const std::string bytes = Read(saved);
  ASSERT_GT(bytes.size(), 16000u);
  ExpectEveryCutIsShort(
      bytes, {100, bytes.size() / 2, bytes.size() - 23, bytes.size() - 22, bytes.size() - 1});
}

TEST_F(CheckpointFormatTest, Zip64EndRecordsAreFollowed) {
  const std::string bytes = ZipBytes({{"archive/data.pkl", "abc"}}, /*zip64=*/true);
  WriteBytes(dir_ / "big.pt", bytes);
  const FileVerdict v = VerifyCheckpointFile((dir_ / "big.pt").string());
  EXPECT_EQ(v.proof, FileProof::kWhole) << v.detail;
  // Cut inside the zip64 record, inside the locator, and one byte short.
  ExpectEveryCutIsShort(bytes, {bytes.size() - 60, bytes.size() - 30, bytes.size() - 1});
}

TEST_F(CheckpointFormatTest, AZipWhoseCentralDirectoryIsNotWhereTheEndSaysIsCutShort) {
  std::string bytes = TorchSaveBytes();
  // Drop one byte of the first entry's data: every offset in the end record is now off by one.
  bytes.erase(40, 1);
  WriteBytes(dir_ / "shifted.pt", bytes);
  EXPECT_EQ(VerifyCheckpointFile((dir_ / "shifted.pt").string()).proof, FileProof::kCutShort);
}

// Found by checkpoints_format_fuzz: a zip's first bytes alone (shorter than an end record) read
// before the start of the buffer.
TEST_F(CheckpointFormatTest, AZipShorterThanItsEndRecordIsCutShort) {
  const std::string bytes = TorchSaveBytes();
  for (size_t cut : {9, 12, 21}) {
    EXPECT_EQ(VerifyCheckpointBytes(bytes.substr(0, cut)).proof, FileProof::kCutShort) << cut;
  }
  EXPECT_EQ(VerifyCheckpointBytes(bytes).proof, FileProof::kWhole);
}

TEST_F(CheckpointFormatTest, SafetensorsMustHoldEveryByteItsHeaderLists) {
  const std::string bytes = SafetensorsBytes(16);
  WriteBytes(dir_ / "model.safetensors", bytes);
  const FileVerdict v = VerifyCheckpointFile((dir_ / "model.safetensors").string());
  EXPECT_EQ(v.proof, FileProof::kWhole) << v.detail;
  EXPECT_EQ(v.format, "safetensors");
  ExpectEveryCutIsShort(bytes, {bytes.size() - 1, bytes.size() - 64});
}

TEST_F(CheckpointFormatTest, OtherFilesProveNothing) {
  WriteBytes(dir_ / "weights.bin", std::string(4096, 'x'));
  WriteBytes(dir_ / "tiny", "ab");
  EXPECT_EQ(VerifyCheckpointFile((dir_ / "weights.bin").string()).proof, FileProof::kUnknown);
  EXPECT_EQ(VerifyCheckpointFile((dir_ / "tiny").string()).proof, FileProof::kUnknown);
  EXPECT_EQ(VerifyCheckpointFile((dir_ / "absent").string()).proof, FileProof::kUnknown);
}

}  // namespace
}  // namespace fulcrum::supervise
