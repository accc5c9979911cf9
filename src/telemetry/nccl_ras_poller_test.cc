// The NCCL RAS poller against a loopback fake of NCCL's RAS socket (tests/support/
// fake_nccl_ras.h): a rank is stalled only when it stays behind at the same count, an absent
// socket is quiet, a foreign one is survived.
#include "telemetry/nccl_ras_poller.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "support/fake_http_server.h"
#include "support/fake_nccl_ras.h"

namespace fulcrum::telemetry {
namespace {

constexpr unsigned long long kHash = 0xfeedULL;

NcclRasPollerOptions Options(const std::string& address) {
  NcclRasPollerOptions o;
  o.query.address = address;
  o.interval_seconds = 1;
  return o;
}

TEST(NcclRasPollerTest, SameRankBehindOnTwoReportsIsStalled) {
  fulcrum::testing::FakeNcclRas fake;
  ASSERT_GT(fake.Start(), 0);
  fake.SetReports(fulcrum::testing::StalledText(8, 5, 42, kHash),
                  fulcrum::testing::StalledJson(8, 5, 42, kHash));
  NcclRasPoller poller(Options(fake.address()));
  poller.PollOnce();
  EXPECT_TRUE(poller.present());
  EXPECT_TRUE(poller.Stalled().empty());  // one report: could be launches in flight
  poller.PollOnce();
  auto stalled = poller.Stalled();
  ASSERT_EQ(stalled.size(), 1u);
  EXPECT_EQ(stalled[0].rank.rank, 5);
  EXPECT_EQ(stalled[0].rank.host, "10.0.0.2");
  EXPECT_EQ(stalled[0].rank.pid, 4005);
  EXPECT_EQ(stalled[0].rank.cuda_dev, 1);
  // The job moved on (rank 5 caught up, rank 2 briefly behind at a new count): not stalled.
  fake.SetReports(fulcrum::testing::StalledText(8, 2, 43, kHash),
                  fulcrum::testing::StalledJson(8, 2, 43, kHash));
  poller.PollOnce();
  EXPECT_TRUE(poller.Stalled().empty());
}

TEST(NcclRasPollerTest, AbsentSocketIsQuietAndNamesNothing) {
  NcclRasPoller poller(
      Options("127.0.0.1:" + std::to_string(fulcrum::testing::FreeLoopbackPort())));
  for (int i = 0; i < 3; ++i) poller.PollOnce();
  EXPECT_FALSE(poller.present());
  EXPECT_TRUE(poller.Stalled().empty());
}

TEST(NcclRasPollerTest, ForeignPeerAndGarbageAreSurvived) {
  fulcrum::testing::FakeNcclRas fake;
  ASSERT_GT(fake.Start(), 0);
  fake.SetGarbage("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\n");
  NcclRasPoller poller(Options(fake.address()));
  poller.PollOnce();
  EXPECT_FALSE(poller.present());
  fake.SetGarbage("");
  fake.SetReports("NCCL version 2.24.3\n#zz (notahash) MISMATCH\n  Rank -3 -- GPU x\n",
                  "{\"communicators\": [{\"ranks\": \"no\"}]}");
  poller.PollOnce();
  EXPECT_TRUE(poller.present());
  EXPECT_TRUE(poller.Stalled().empty());
}

TEST(NcclRasPollerTest, ThreadPollsAndStopsPromptly) {
  fulcrum::testing::FakeNcclRas fake;
  ASSERT_GT(fake.Start(), 0);
  fake.SetReports(fulcrum::testing::StalledText(4, 1, 9, kHash),
                  fulcrum::testing::StalledJson(4, 1, 9, kHash));
  NcclRasPoller poller(Options(fake.address()));
  poller.Start();
  for (int i = 0; i < 100 && poller.Stalled().empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // two polls: about 1 s
  }
  ASSERT_EQ(poller.Stalled().size(), 1u);
  EXPECT_EQ(poller.Stalled()[0].rank.rank, 1);
  poller.Stop();  // joins; the interval wait is woken, not slept out
  EXPECT_GE(fake.statuses(), 2);
}

}  // namespace
}  // namespace fulcrum::telemetry
