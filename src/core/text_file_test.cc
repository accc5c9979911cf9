#include "core/text_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace fulcrum {
namespace {

namespace fs = std::filesystem;

class TextFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/text-file-" + std::to_string(::getpid());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string dir_;
};

// Issue 29: a 200 MB input loaded (up to 1.48 GB of memory); over 16 MiB is refused with its
// size before it is read. A sparse file takes no disk.
TEST_F(TextFileTest, AnInputOver16MiBIsRefusedWithItsSize) {
  const std::string path = dir_ + "/big.csv";
  std::ofstream(path) << "a,b\n";
  fs::resize_file(path, 200u << 20);
  auto text = ReadTextFile(path, "a catalog file");
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.status().code(), StatusCode::kInvalidInput);
  EXPECT_EQ(text.status().message(), path +
                                         ": expected a catalog file of at most 16 MiB, found 200 "
                                         "MiB (209715200 bytes)");
  fs::resize_file(path, kMaxInputFileBytes + 1);
  EXPECT_FALSE(ReadTextFile(path, "a catalog file").ok());
  fs::resize_file(path, kMaxInputFileBytes);
  auto at_cap = ReadTextFile(path, "a catalog file");
  ASSERT_TRUE(at_cap.ok()) << at_cap.status().message();
  EXPECT_EQ(at_cap->size(), kMaxInputFileBytes);
  EXPECT_EQ(at_cap->substr(0, 4), "a,b\n");
}

TEST_F(TextFileTest, AFileOfUnknownSizeIsCutAtTheCapAndRefused) {
  // A /proc file is a regular file of size 0: the read itself stops one byte past the cap.
  auto maps = ReadTextFile("/proc/self/maps", "a spec", 16);
  ASSERT_FALSE(maps.ok());
  EXPECT_NE(
      maps.status().message().find("expected a spec of at most 16 bytes, found more than 16 bytes"),
      std::string::npos)
      << maps.status().message();
  EXPECT_EQ(ReadTextFile("/dev/zero", "a spec").status().code(), StatusCode::kNotFound);
  const std::string path = dir_ + "/small.yaml";
  std::ofstream(path) << "a: 1\nb: 2\n";
  EXPECT_FALSE(ReadTextFile(path, "a spec", 4).ok());
  EXPECT_EQ(*ReadTextFile(path, "a spec"), "a: 1\nb: 2\n");
}

}  // namespace
}  // namespace fulcrum
