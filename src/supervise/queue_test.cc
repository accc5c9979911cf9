#include "supervise/queue.h"

#include <gtest/gtest.h>

#include <ctime>

namespace fulcrum::supervise {
namespace {

store::JobRecord Job(const std::string& id, const std::string& state, int want,
                     std::vector<int> gpus, double created) {
  store::JobRecord j;
  j.id = id;
  j.state = *store::ParseJobState(state);
  j.queue = "local";
  j.gpus_requested = want;
  j.gpus = std::move(gpus);
  j.created_at = created;
  return j;
}

TEST(QueueTest, PlacesInOrderOnFreeGpusAndLetsSmallJobsFill) {
  std::vector<store::JobRecord> jobs = {
      Job("running", "running", 2, {0, 1}, 1), Job("big", "queued", 4, {}, 2),
      Job("small", "queued", 1, {}, 3),        Job("small2", "queued", 1, {}, 4),
      Job("small3", "queued", 1, {}, 5),       Job("done", "succeeded", 4, {2, 3}, 0),
  };
  auto placements = PlaceQueuedJobs(jobs, 4, 100);
  ASSERT_EQ(placements.size(), 2u);
  EXPECT_EQ(placements[0].job_id, "small");
  EXPECT_EQ(placements[0].gpus, (std::vector<int>{2}));
  EXPECT_EQ(placements[1].job_id, "small2");
  EXPECT_EQ(placements[1].gpus, (std::vector<int>{3}));
}

TEST(QueueTest, HonoursNotBefore) {
  std::vector<store::JobRecord> jobs = {Job("night", "queued", 1, {}, 1)};
  jobs[0].not_before = 200;
  EXPECT_TRUE(PlaceQueuedJobs(jobs, 1, 199).empty());
  EXPECT_EQ(PlaceQueuedJobs(jobs, 1, 200).size(), 1u);
}

TEST(QueueTest, ParsesNotBeforeTimes) {
  // 2026-11-30 12:00 local time.
  std::tm tm{};
  tm.tm_year = 126;
  tm.tm_mon = 10;
  tm.tm_mday = 30;
  tm.tm_hour = 12;
  tm.tm_isdst = -1;
  const double noon = static_cast<double>(std::mktime(&tm));
  EXPECT_EQ(*ParseNotBefore("22:00", noon), noon + 10 * 3600);
  EXPECT_EQ(*ParseNotBefore("06:30", noon), noon + 18.5 * 3600) << "tomorrow morning";
  EXPECT_EQ(*ParseNotBefore("+90s", noon), noon + 90);
  EXPECT_EQ(*ParseNotBefore("2026-11-30T13:00", noon), noon + 3600);
  EXPECT_FALSE(ParseNotBefore("25:00", noon).ok());
  EXPECT_FALSE(ParseNotBefore("tonight", noon).ok());
}

}  // namespace
}  // namespace fulcrum::supervise
