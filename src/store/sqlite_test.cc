#include "store/sqlite.h"

#include <gtest/gtest.h>

#include <filesystem>

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

TEST(SqliteTest, BadSqlNamesTheStatement) {
  auto db = Database::Open(":memory:");
  ASSERT_TRUE(db.ok());
  auto stmt = db->Prepare("SELEKT 1");
  ASSERT_FALSE(stmt.ok());
  EXPECT_NE(stmt.status().message().find("SELEKT"), std::string::npos);
}

}  // namespace
}  // namespace fulcrum::store
