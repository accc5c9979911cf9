#include "supervise/queue.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <ctime>
#include <map>

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

constexpr double kGiB = 1024.0 * 1024 * 1024;

store::GpuShareRecord Share(const std::string& id, double gib) {
  store::GpuShareRecord s;
  s.job_id = id;
  s.memory_bytes = gib * kGiB;
  return s;
}

TEST(QueueTest, PacksSharedJobsFirstFitDecreasingWithoutOverCommit) {
  std::vector<store::JobRecord> jobs;
  std::map<std::string, store::GpuShareRecord> shares;
  // Created smallest first: the queue still places the largest first.
  const std::vector<std::pair<std::string, double>> asks = {
      {"s10", 10}, {"s20", 20}, {"s40", 40}, {"s50", 50}, {"s30", 30}};
  for (size_t i = 0; i < asks.size(); ++i) {
    jobs.push_back(Job(asks[i].first, "queued", 1, {}, static_cast<double>(i)));
    shares[asks[i].first] = Share(asks[i].first, asks[i].second);
  }
  const auto gpus = *ParseNodeGpus("2x80GiB");
  auto placements = PlaceQueuedJobs(jobs, shares, gpus, false, 100);
  std::map<std::string, int> on;
  std::vector<double> reserved(2, 0);
  for (const auto& p : placements) {
    ASSERT_TRUE(p.share.has_value());
    on[p.job_id] = p.share->gpu;
    reserved[p.share->gpu] += p.share->reservation_bytes;
  }
  // 72 GiB usable per GPU: 50 -> 0, 40 -> 1, 30 -> 1 (0 has 22 left), 20 -> 0, 10 -> none
  // (0 at 70, 1 at 70).
  EXPECT_EQ(placements.front().job_id, "s50");
  EXPECT_EQ(on, (std::map<std::string, int>{{"s50", 0}, {"s40", 1}, {"s30", 1}, {"s20", 0}}));
  EXPECT_LE(reserved[0], 72 * kGiB);
  EXPECT_LE(reserved[1], 72 * kGiB);
}

TEST(QueueTest, RunningSharesHoldTheirReservationAndKeepWholeJobsOff) {
  std::vector<store::JobRecord> jobs = {Job("a", "running", 1, {0}, 1),
                                        Job("b", "queued", 1, {}, 2),
                                        Job("whole", "queued", 2, {}, 3)};
  jobs[0].supervisor_pid = getpid();
  std::map<std::string, store::GpuShareRecord> shares = {{"a", Share("a", 60)},
                                                         {"b", Share("b", 30)}};
  shares["a"].gpu = 0;
  shares["a"].reservation_bytes = 60 * kGiB;
  const auto gpus = *ParseNodeGpus("2x80GiB");
  auto placements = PlaceQueuedJobs(jobs, shares, gpus, false, 100);
  ASSERT_EQ(placements.size(), 1u) << "the 2-GPU job waits: GPU 0 holds a share";
  EXPECT_EQ(placements[0].job_id, "b");
  EXPECT_EQ(placements[0].gpus, (std::vector<int>{1})) << "GPU 0 has only 12 GiB left";
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
