// The supervisor's alerts as transitions and the agent's cursor over jobs.db's alert rows.
#include "alert/job_alert.h"

#include <gtest/gtest.h>

#include "alert/notify.h"

namespace fulcrum::alert {
namespace {

constexpr double kNow = 1796017200.0;

store::AlertRecord Row(const std::string& job, const std::string& name, double at) {
  return {0, job, name, "critical", "spent $10.00 of $10.00", at};
}

TEST(JobAlertTest, ARowIsAFiringTransitionWithItsOwnKey) {
  Transition t = JobAlertTransition(Row("llama", "budget_exhausted", kNow));
  EXPECT_TRUE(Notifies(t));
  EXPECT_EQ(t.rule_name, "budget_exhausted");
  EXPECT_EQ(t.labels.at("job"), "llama");
  EXPECT_EQ(t.labels.at("source"), "supervisor");
  EXPECT_EQ(t.annotations.at("summary"), "job llama: spent $10.00 of $10.00");
  EXPECT_EQ(IdempotencyKey(t),
            IdempotencyKey(JobAlertTransition(Row("llama", "budget_exhausted", kNow))))
      << "the agent and `fulcrum run --receiver` derive the same key from one row";
  EXPECT_NE(IdempotencyKey(t),
            IdempotencyKey(JobAlertTransition(Row("other", "budget_exhausted", kNow))));
  EXPECT_NE(IdempotencyKey(t),
            IdempotencyKey(JobAlertTransition(Row("llama", "budget_exhausted", kNow + 1))));
}

TEST(JobAlertTest, TheFeedReturnsEachNewRowOnceAndARecentWindowAtFirst) {
  auto db = store::JobsDb::Open(":memory:");
  ASSERT_TRUE(db.ok());
  ASSERT_TRUE(db->AddAlert(Row("old", "crash_loop", kNow - 7200)).ok());
  ASSERT_TRUE(db->AddAlert(Row("recent", "stall", kNow - 60)).ok());
  JobAlertFeed feed(3600);
  auto first = feed.Poll(*db, kNow);
  ASSERT_TRUE(first.ok()) << first.status().message();
  ASSERT_EQ(first->size(), 1u) << "raised in the last hour, while no agent ran";
  EXPECT_EQ((*first)[0].labels.at("job"), "recent");
  auto none = feed.Poll(*db, kNow + 1);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
  ASSERT_TRUE(db->AddAlert(Row("a", "crash_loop", kNow + 2)).ok());
  ASSERT_TRUE(db->AddAlert(Row("b", "budget_warning", kNow + 2)).ok());
  auto next = feed.Poll(*db, kNow + 3);
  ASSERT_TRUE(next.ok());
  ASSERT_EQ(next->size(), 2u);
  EXPECT_EQ((*next)[0].labels.at("job"), "a");
  EXPECT_EQ((*next)[1].rule_name, "budget_warning");
}

}  // namespace
}  // namespace fulcrum::alert
