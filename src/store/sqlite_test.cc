#include "store/sqlite.h"

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <thread>
#include <vector>

namespace fulcrum::store {
namespace {

const char* const kMigrations[] = {
    "CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT NOT NULL, value REAL)",
    "ALTER TABLE t ADD COLUMN note TEXT",
};

TEST(SqliteTest, MigratesInsertsAndReads) {
  auto db = Database::Open(":memory:");
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  ASSERT_TRUE(db->Migrate(2, kMigrations).ok());
  EXPECT_EQ(*db->UserVersion(), 2);
  auto insert = db->Prepare("INSERT INTO t (name, value) VALUES (?, ?)");
  ASSERT_TRUE(insert.ok());
  ASSERT_TRUE(insert->Bind(1, std::string_view("a")).Bind(2, 1.5).Run().ok());
  ASSERT_TRUE(insert->Bind(1, std::string_view("b")).Bind(2, std::optional<double>()).Run().ok());
  auto select = db->Prepare("SELECT name, value FROM t ORDER BY id");
  ASSERT_TRUE(select.ok());
  ASSERT_TRUE(select->Step());
  EXPECT_EQ(select->ColumnText(0), "a");
  EXPECT_DOUBLE_EQ(select->ColumnDouble(1), 1.5);
  ASSERT_TRUE(select->Step());
  EXPECT_FALSE(select->ColumnOptionalDouble(1).has_value());
  EXPECT_FALSE(select->Step());
  EXPECT_TRUE(select->status().ok());
}

TEST(SqliteTest, RefusesNewerSchema) {
  auto path = std::filesystem::temp_directory_path() / "fulcrum_sqlite_test_newer.db";
  std::filesystem::remove(path);
  {
    auto db = Database::Open(path.string());
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE(db->Migrate(2, kMigrations).ok());
  }
  auto db = Database::Open(path.string());
  ASSERT_TRUE(db.ok());
  Status status = db->Migrate(1, kMigrations);
  EXPECT_EQ(status.code(), StatusCode::kInvalidInput);
  EXPECT_NE(status.message().find("newer"), std::string::npos);
  std::filesystem::remove(path);
}

// The reported race: first users of a new file each read user_version 0 and ran migration 1
// ("table t already exists") or 2 ("duplicate column name"). Each thread has its own connection,
// as each process has; SQLite's locks hold between connections of one process too.
TEST(SqliteTest, ConcurrentFirstUsersOfANewFileAllMigrateIt) {
  auto dir = std::filesystem::temp_directory_path() / "fulcrum_sqlite_test_race";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "race.db").string();
  constexpr int kUsers = 24;
  std::atomic<bool> go{false};
  std::vector<Status> results(kUsers);
  std::vector<std::thread> users;
  for (int i = 0; i < kUsers; ++i) {
    users.emplace_back([&, i] {
      while (!go.load()) std::this_thread::yield();
      auto db = Database::Open(path);
      results[static_cast<size_t>(i)] = db.ok() ? db->Migrate(2, kMigrations) : db.status();
    });
  }
  go = true;
  for (auto& user : users) user.join();
  for (int i = 0; i < kUsers; ++i) {
    EXPECT_TRUE(results[static_cast<size_t>(i)].ok())
        << "user " << i << ": " << results[static_cast<size_t>(i)].ToString();
  }
  auto db = Database::Open(path);
  ASSERT_TRUE(db.ok());
  EXPECT_EQ(*db->UserVersion(), 2);
  EXPECT_TRUE(db->Exec("INSERT INTO t (name, note) VALUES ('x', 'y')").ok());
  std::filesystem::remove_all(dir);
}

TEST(SqliteTest, BadSqlNamesTheStatement) {
  auto db = Database::Open(":memory:");
  ASSERT_TRUE(db.ok());
  auto stmt = db->Prepare("SELEKT 1");
  ASSERT_FALSE(stmt.ok());
  EXPECT_NE(stmt.status().message().find("SELEKT"), std::string::npos);
}

}  // namespace
}  // namespace fulcrum::store
