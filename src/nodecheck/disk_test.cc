#include "nodecheck/disk.h"

#include <gtest/gtest.h>

#include <filesystem>

namespace fulcrum::nodecheck {
namespace {

TEST(DiskBenchTest, WritesAndMeasuresAndCleansUp) {
  auto dir = std::filesystem::temp_directory_path() / "fulcrum-disk-bench-test";
  std::filesystem::create_directories(dir);
  DiskBenchOptions options;
  options.directory = dir.string();
  options.total_bytes = 8 << 20;
  options.block_bytes = 1 << 20;
  options.checkpoint_bytes = 98e9;
  int calls = 0;
  double last = 0;
  auto r = RunDiskBench(options, [&](double f) {
    ++calls;
    EXPECT_GE(f, last);
    last = f;
  });
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_DOUBLE_EQ(r->written_bytes, 8 << 20);
  EXPECT_GT(r->write_bytes_per_second, 0);
  EXPECT_EQ(calls, 8);
  EXPECT_DOUBLE_EQ(last, 1.0);
  ASSERT_TRUE(r->checkpoint_seconds.has_value());
  EXPECT_NEAR(*r->checkpoint_seconds, 98e9 / r->write_bytes_per_second, 1e-6);
  ASSERT_TRUE(r->free_bytes.has_value());
  EXPECT_TRUE(std::filesystem::is_empty(dir)) << "the test file must be removed";
  std::filesystem::remove_all(dir);
}

TEST(DiskBenchTest, MissingDirectoryIsInputError) {
  DiskBenchOptions options;
  options.directory = "/nonexistent/fulcrum/dir";
  auto r = RunDiskBench(options);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidInput);
  EXPECT_NE(r.status().message().find("/nonexistent/fulcrum/dir"), std::string::npos);
}

TEST(DiskBenchTest, UnwritableDirectoryIsIoError) {
  // Nobody, root included, can create a regular file in /proc.
  DiskBenchOptions options;
  options.directory = "/proc";
  auto r = RunDiskBench(options);
  EXPECT_FALSE(r.ok());
}

}  // namespace
}  // namespace fulcrum::nodecheck
