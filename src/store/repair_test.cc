#include "store/repair.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "store/jobs.h"
#include "store/sqlite.h"

namespace fulcrum::store {
namespace {
namespace fs = std::filesystem;

class RepairTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("fulcrum_repair_test_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A jobs.db with `n` jobs, closed (checkpointed) on return.
  std::string MakeJobsDb(int n) {
    const std::string path = (dir_ / "jobs.db").string();
    auto db = JobsDb::Open(path);
    EXPECT_TRUE(db.ok()) << db.status().ToString();
    for (int i = 0; i < n; ++i) {
      JobRecord job;
      job.id = job.name = "job-" + std::to_string(i);
      job.state = JobState::kSucceeded;
      EXPECT_TRUE(db->UpsertJob(job).ok());
    }
    return path;
  }
  static void Overwrite(const std::string& path, size_t offset, const std::string& bytes) {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(offset));
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  fs::path dir_;
};

TEST_F(RepairTest, ADamagedHeaderIsReportedWithThePathAndTheRepairCommand) {
  const std::string path = MakeJobsDb(2);
  Overwrite(path, 0, std::string(100, 'X'));
  auto db = JobsDb::Open(path);
  ASSERT_FALSE(db.ok());
  EXPECT_TRUE(IsDamagedDatabase(db.status())) << db.status().ToString();
  EXPECT_EQ(db.status().detail()->file, path);
  EXPECT_NE(db.status().message().find("fulcrum doctor --repair-db " + path), std::string::npos);
  EXPECT_FALSE(IsDamagedDatabase(Status::InvalidInput("x")));
}

TEST_F(RepairTest, RepairRebuildsTheHeaderAndKeepsTheRows) {
  const std::string path = MakeJobsDb(50);
  Overwrite(path, 0, std::string(100, 'X'));
  auto report = RepairDatabase(path, 0);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_FALSE(report->healthy);
  EXPECT_TRUE(report->header_rebuilt);
  EXPECT_EQ(report->kind, "jobs.db");
  EXPECT_EQ(report->backup_path, path + ".damaged-19700101T000000Z");
  ASSERT_FALSE(report->rows.empty());
  EXPECT_EQ(report->rows[0], (std::pair<std::string, int64_t>("jobs", 50)));
  EXPECT_TRUE(report->incomplete.empty());
  auto db = JobsDb::Open(path);
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  EXPECT_EQ(db->ListJobs()->size(), 50u);
  EXPECT_FALSE(HeaderLooksValid(std::string(100, 'X')));
}

TEST_F(RepairTest, AHealthyFileIsLeftAlone) {
  const std::string path = MakeJobsDb(1);
  auto report = RepairDatabase(path, 0);
  ASSERT_TRUE(report.ok());
  EXPECT_TRUE(report->healthy);
  EXPECT_TRUE(report->backup_path.empty());
  EXPECT_FALSE(fs::exists(path + ".damaged-19700101T000000Z"));
}

TEST_F(RepairTest, ADamagedPageLosesItsRowsOnlyAndTheTableIsNamed) {
  const std::string path = MakeJobsDb(400);  // many pages of the jobs table
  int64_t page = 0;  // a leaf page of the jobs table in the middle (SQLite's dbstat table)
  {
    auto db = Database::Open(path);
    ASSERT_TRUE(db.ok());
    auto leaves = db->Prepare(
        "SELECT pageno FROM dbstat WHERE name = 'jobs' AND pagetype = 'leaf' ORDER BY pageno");
    ASSERT_TRUE(leaves.ok()) << leaves.status().ToString();
    std::vector<int64_t> pages;
    while (leaves->Step()) pages.push_back(leaves->ColumnInt(0));
    ASSERT_GE(pages.size(), 3u);
    page = pages[pages.size() / 2];
  }
  // Its b-tree page header becomes junk.
  Overwrite(path, static_cast<size_t>(page - 1) * 4096, std::string(64, '\xff'));
  auto report = RepairDatabase(path, 0);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_FALSE(report->healthy);
  EXPECT_FALSE(report->header_rebuilt);
  ASSERT_FALSE(report->rows.empty());
  EXPECT_GT(report->rows[0].second, 300) << "the rows on the other pages are kept";
  EXPECT_LT(report->rows[0].second, 400);
  EXPECT_EQ(report->incomplete, std::vector<std::string>{"jobs"});
}

TEST_F(RepairTest, AFileOfNoKnownKindIsRefusedAndLeftAsItIs) {
  const std::string path = (dir_ / "other.db").string();
  { std::ofstream(path) << std::string(8192, 'Z'); }
  auto report = RepairDatabase(path, 0);
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(report.status().code(), StatusCode::kInvalidInput);
  EXPECT_EQ(fs::file_size(path), 8192u);
  EXPECT_EQ(RepairDatabase((dir_ / "none.db").string(), 0).status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace fulcrum::store
