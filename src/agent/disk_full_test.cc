#include "agent/disk_full.h"

#include <gtest/gtest.h>

namespace fulcrum::agent {
namespace {

// SQLite's SQLITE_FULL message as the store reports it (store/sqlite.cc adds the file).
constexpr const char* kSqliteFull = "/data/agent.db: sqlite step: database or disk is full";

TEST(DiskFullTest, RecognisesSqliteFullAndEnospcOnly) {
  EXPECT_TRUE(IsDiskFull(kSqliteFull));
  EXPECT_TRUE(IsDiskFull("write /data/agent.db-wal: No space left on device"));
  EXPECT_FALSE(IsDiskFull("/data/agent.db: database is locked"));
  EXPECT_FALSE(IsDiskFull("/data/agent.db: disk I/O error"));
  EXPECT_FALSE(IsDiskFull(""));
}

TEST(DiskFullTest, FiresOnceOnAFullDiskAndResolvesOnTheNextWrite) {
  DiskFullAlert alert("node-1", "/data");
  EXPECT_FALSE(alert.Stored(100)) << "nothing to resolve before it fired";
  EXPECT_FALSE(alert.Refused("/data/agent.db: database is locked", 101)) << "not a full disk";
  auto firing = alert.Refused(kSqliteFull, 102);
  ASSERT_TRUE(firing);
  EXPECT_TRUE(alert.firing());
  EXPECT_EQ(alert.reason(), firing->annotations.at("summary"));
  EXPECT_EQ(firing->rule_name, "disk_full");
  EXPECT_EQ(firing->to, alert::AlertStatus::kFiring);
  EXPECT_TRUE(alert::Notifies(*firing));
  EXPECT_EQ(firing->gpu, -1);
  EXPECT_EQ(firing->severity, "critical");
  EXPECT_EQ(firing->fired_at, 102);
  EXPECT_EQ(firing->labels.at("alertname"), "disk_full");
  EXPECT_EQ(firing->labels.at("hostname"), "node-1");
  EXPECT_EQ(firing->labels.at("data_dir"), "/data");
  EXPECT_NE(firing->annotations.at("summary").find("database or disk is full"), std::string::npos);
  // Every later refusal while it fires is the same alert.
  EXPECT_FALSE(alert.Refused(kSqliteFull, 103));
  auto resolved = alert.Stored(110);
  ASSERT_TRUE(resolved);
  EXPECT_FALSE(alert.firing());
  EXPECT_EQ(alert.reason(), "");
  EXPECT_EQ(resolved->from, alert::AlertStatus::kFiring);
  EXPECT_EQ(resolved->to, alert::AlertStatus::kResolved);
  EXPECT_EQ(resolved->fired_at, 102);
  EXPECT_EQ(resolved->resolved_at, 110);
  EXPECT_EQ(resolved->fingerprint, firing->fingerprint);
  EXPECT_FALSE(alert.Stored(111));
  // A second episode is a new alert of the same series (a new started_at, a new key).
  auto again = alert.Refused(kSqliteFull, 200);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->started_at, 200);
  EXPECT_EQ(again->fingerprint, firing->fingerprint);
}

}  // namespace
}  // namespace fulcrum::agent
