#include "core/file_lock.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>

#include "support/run_binary.h"

namespace fulcrum {
namespace {
namespace fs = std::filesystem;

// 0 when a forked child could take the lock that `take` tries, 1 when it was refused as busy,
// 2 on any other failure: the lock as another process sees it.
int LockFromChild(const std::function<Result<FileLock>()>& take) {
  const pid_t child = ::fork();
  if (child == 0) {
    auto lock = take();
    ::_exit(lock.ok() ? 0 : lock.status().code() == StatusCode::kUnavailable ? 1 : 2);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 3;
}

class FileLockTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = testing::MakeTempDir("file-lock"); }
  void TearDown() override { fs::remove_all(dir_); }
  std::string dir_;
};

TEST_F(FileLockTest, ADirectoryLockRefusesASecondHolderEvenWhenItsPidFileIsRemoved) {
  const std::string data = dir_ + "/data", holder = data + "/agent.pid";
  fs::create_directories(data);
  auto take = [&] { return FileLock::LockDirectory(data, holder, "in use:"); };
  auto first = take();
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(testing::FileContents(holder), std::to_string(::getpid()) + "\n");

  auto second = take();  // another open file description, in this process
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(second.status().message(),
            "in use: pid " + std::to_string(::getpid()) + " (lock " + data + ")");
  EXPECT_EQ(LockFromChild(take), 1) << "another process is refused too";

  // Every file in the directory removed: the lock is on the directory, it still holds.
  for (const auto& entry : fs::directory_iterator(data)) fs::remove_all(entry.path());
  auto after_rm = take();
  ASSERT_FALSE(after_rm.ok());
  EXPECT_EQ(after_rm.status().message(), "in use: pid ? (lock " + data + ")");
  EXPECT_EQ(LockFromChild(take), 1);

  { FileLock released = std::move(*first); }
  EXPECT_EQ(LockFromChild(take), 0) << "released with its descriptor";
  EXPECT_TRUE(take().ok());
}

TEST_F(FileLockTest, RecordLocksOnOneFileAreIndependentPerByte) {
  const std::string file = dir_ + "/jobs.db";
  std::ofstream(file) << "";
  auto lock_at = [&](off_t offset) {
    return FileLock::LockRecord(file, offset, dir_ + "/" + std::to_string(offset) + ".pid",
                                "job busy:");
  };
  const off_t far = off_t{1} << 41;  // beyond the end of the (empty) file
  auto a = lock_at(far);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  auto b = lock_at(far + 1);
  ASSERT_TRUE(b.ok()) << "another byte is another record";
  auto again = lock_at(far);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().message(), "job busy: pid " + std::to_string(::getpid()) + " (lock " +
                                          file + " byte " + std::to_string(far) + ")");
  EXPECT_EQ(LockFromChild([&] { return lock_at(far); }), 1);
  EXPECT_EQ(LockFromChild([&] { return lock_at(far + 2); }), 0);

  // Closing another descriptor of the file does not release an open file description lock
  // (a traditional fcntl lock would be gone now).
  { std::ifstream(file).get(); }
  fs::remove(dir_ + "/" + std::to_string(far) + ".pid");
  EXPECT_EQ(LockFromChild([&] { return lock_at(far); }), 1);

  { FileLock released = std::move(*a); }
  EXPECT_EQ(LockFromChild([&] { return lock_at(far); }), 0);
}

TEST_F(FileLockTest, AMissingDirectoryOrFileIsAnIoError) {
  auto dir = FileLock::LockDirectory(dir_ + "/none", dir_ + "/none.pid", "busy:");
  ASSERT_FALSE(dir.ok());
  EXPECT_EQ(dir.status().code(), StatusCode::kIoError);
  EXPECT_NE(dir.status().message().find(dir_ + "/none"), std::string::npos);
  auto record = FileLock::LockRecord(dir_ + "/none.db", 1, dir_ + "/none.pid", "busy:");
  ASSERT_FALSE(record.ok());
  EXPECT_EQ(record.status().code(), StatusCode::kIoError);
}

TEST(Fnv1a64Test, MatchesTheReferenceVectors) {
  // Test vectors of the FNV reference code (draft-eastlake-fnv, test_fnv.c: FNV-1a 64).
  EXPECT_EQ(Fnv1a64(""), 0xcbf29ce484222325ull);
  EXPECT_EQ(Fnv1a64("a"), 0xaf63dc4c8601ec8cull);
  EXPECT_EQ(Fnv1a64("foobar"), 0x85944171f73967e8ull);
}

}  // namespace
}  // namespace fulcrum
