#include "supervise/lock.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

#include "store/jobs.h"
#include "support/run_binary.h"

namespace fulcrum::supervise {
namespace {
namespace fs = std::filesystem;

class JobLockTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = testing::MakeTempDir("job-lock"); }
  void TearDown() override { fs::remove_all(dir_); }
  // 0 when a forked child takes job `job`'s lock, 1 when it is refused as already supervised.
  int AcquireFromChild(const std::string& job) {
    const pid_t child = ::fork();
    if (child == 0) {
      auto lock = JobLock::Acquire(dir_, job);
      ::_exit(lock.ok() ? 0 : lock.status().code() == StatusCode::kUnavailable ? 1 : 2);
    }
    int status = 0;
    ::waitpid(child, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 3;
  }
  std::string dir_;
};

TEST_F(JobLockTest, ASecondLockOnTheSameJobFailsUntilTheFirstIsReleased) {
  auto first = JobLock::Acquire(dir_, "job-a");
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  auto second = JobLock::Acquire(dir_, "job-a");
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.status().message().find("already supervised by pid " + std::to_string(getpid())),
            std::string::npos)
      << second.status().message();
  EXPECT_EQ(AcquireFromChild("job-a"), 1);
  EXPECT_TRUE(JobLock::Acquire(dir_, "job-b").ok());
  { JobLock released = std::move(*first); }
  EXPECT_TRUE(JobLock::Acquire(dir_, "job-a").ok());
  EXPECT_EQ(AcquireFromChild("job-a"), 0);
  EXPECT_FALSE(ValidateJobName("../etc").ok());
  EXPECT_FALSE(ValidateJobName("a b").ok());
}

// issue 29 item 7: after `rm -r <data-dir>/locks` a second supervisor of the job started.
TEST_F(JobLockTest, RemovingTheLocksFolderDoesNotLetASecondSupervisorIn) {
  auto first = JobLock::Acquire(dir_, "job-a");
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  ASSERT_TRUE(fs::exists(dir_ + "/locks/job-a.pid"));
  fs::remove_all(dir_ + "/locks");
  EXPECT_EQ(AcquireFromChild("job-a"), 1);
  auto second = JobLock::Acquire(dir_, "job-a");
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.status().message().find("already supervised by pid ?"), std::string::npos)
      << second.status().message();
}

// The lock's record lives in jobs.db beside SQLite's own locks: the database keeps working for
// this process and others while jobs are locked, and closing a connection keeps the lock.
TEST_F(JobLockTest, JobsDbWorksWhileJobsAreLockedAndClosingItKeepsTheLock) {
  auto lock = JobLock::Acquire(dir_, "job-a");
  ASSERT_TRUE(lock.ok()) << lock.status().ToString();
  {
    auto db = store::JobsDb::OpenInDataDir(dir_);
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    ASSERT_TRUE(db->ListJobs().ok());
  }  // the connection's descriptor closes here
  EXPECT_EQ(AcquireFromChild("job-a"), 1);
  const pid_t child = ::fork();
  if (child == 0) {
    auto db = store::JobsDb::OpenInDataDir(dir_);
    ::_exit(db.ok() && db->ListJobs().ok() ? 0 : 1);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "another process uses jobs.db";
}

TEST(JobLockOffsetTest, LiesAboveSqlitesLockBytesAndDiffersPerName) {
  constexpr off_t kSqliteLockEnd = 0x40000000 + 2 + 510;  // PENDING_BYTE + 2 + SHARED_SIZE
  for (const char* name : {"a", "job-a", "job-b", ".queue-worker"}) {
    EXPECT_GT(JobLockOffset(name), kSqliteLockEnd) << name;
    EXPECT_LT(JobLockOffset(name), off_t{3} << 40) << name;
  }
  EXPECT_NE(JobLockOffset("job-a"), JobLockOffset("job-b"));
  EXPECT_EQ(JobLockOffset("job-a"), JobLockOffset("job-a"));
}

}  // namespace
}  // namespace fulcrum::supervise
