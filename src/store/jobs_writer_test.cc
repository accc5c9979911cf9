#include "store/jobs_writer.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "store/sqlite.h"

namespace fulcrum::store {
namespace {
namespace fs = std::filesystem;

bool WaitUntil(const std::function<bool()>& done, double seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

bool AnyNoteHas(const std::vector<std::string>& notes, const std::string& text) {
  for (const auto& n : notes) {
    if (n.find(text) != std::string::npos) return true;
  }
  return false;
}

class JobsWriterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("fulcrum_jobs_writer_test_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    path_ = (dir_ / "jobs.db").string();
    auto db = JobsDb::Open(path_);
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    db_.emplace(std::move(*db));
  }
  void TearDown() override { fs::remove_all(dir_); }
  static JobsWriter::Write Upsert(const std::string& id) {
    return [id](JobsDb& db) {
      JobRecord job;
      job.id = job.name = id;
      return db.UpsertJob(job);
    };
  }
  size_t JobsInFile() {
    auto reader = JobsDb::Open(path_, /*read_only=*/true);
    return reader.ok() && reader->ListJobs().ok() ? reader->ListJobs()->size() : 0;
  }
  fs::path dir_;
  std::string path_;
  std::optional<JobsDb> db_;
};

TEST_F(JobsWriterTest, WritesInOrder) {
  JobsWriter writer(*db_);
  writer.Post("update the job", Upsert("a"));
  writer.Post("delete the job", [](JobsDb& db) { return db.DeleteJob("a"); });
  writer.Post("update the job", Upsert("b"));
  ASSERT_TRUE(writer.Flush(10));
  EXPECT_EQ(writer.Pending(), 0u);
  auto jobs = db_->ListJobs();
  ASSERT_TRUE(jobs.ok());
  ASSERT_EQ(jobs->size(), 1u);
  EXPECT_EQ((*jobs)[0].id, "b");
  EXPECT_TRUE(writer.TakeNotes().empty());
}

// Another process's BEGIN EXCLUSIVE: Post does not wait, the write is kept (not dropped) and
// retried, the stall is noted, and the write lands once the lock is gone.
TEST_F(JobsWriterTest, ALockedFileKeepsTheWriteAndRetriesIt) {
  auto holder = Database::Open(path_, Database::Options{false, 100, "NORMAL"});
  ASSERT_TRUE(holder.ok());
  ASSERT_TRUE(holder->Exec("BEGIN EXCLUSIVE").ok());
  JobsWriter writer(*db_, JobsWriter::Options{0.01, 10});
  writer.Post("update the job", Upsert("locked"));
  EXPECT_EQ(writer.Pending(), 1u) << "queued, not written: the lock is held";
  std::vector<std::string> notes;
  ASSERT_TRUE(WaitUntil(
      [&] {
        for (auto& n : writer.TakeNotes()) notes.push_back(n);
        return AnyNoteHas(notes, "is locked by another process");
      },
      30));
  EXPECT_TRUE(AnyNoteHas(notes, "cannot update the job")) << notes[0];
  EXPECT_TRUE(AnyNoteHas(notes, path_)) << notes[0];
  EXPECT_EQ(writer.Pending(), 1u) << "kept for a retry";
  EXPECT_EQ(JobsInFile(), 0u);
  ASSERT_TRUE(holder->Exec("COMMIT").ok());
  ASSERT_TRUE(writer.Flush(30));
  EXPECT_EQ(JobsInFile(), 1u);
  EXPECT_TRUE(AnyNoteHas(writer.TakeNotes(), "writable again"));
}

TEST_F(JobsWriterTest, AFailedWriteIsNotedAndDropped) {
  JobsWriter writer(*db_);
  writer.Post("break", [](JobsDb& db) { return db.db().Exec("INSERT INTO nowhere VALUES (1)"); });
  writer.Post("update the job", Upsert("after"));
  ASSERT_TRUE(writer.Flush(10));
  const auto notes = writer.TakeNotes();
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("cannot break in jobs.db"), std::string::npos) << notes[0];
  EXPECT_EQ(JobsInFile(), 1u);
}

}  // namespace
}  // namespace fulcrum::store
