// NCCL RAS client: the text and JSON reports as NCCL prints them (format strings of
// src/ras/client_support.cc, tags named per test), and the socket against a loopback fake.
#include "telemetry/nccl_ras.h"

#include <gtest/gtest.h>

#include <chrono>
#include <random>

#include "support/fake_http_server.h"
#include "support/fake_nccl_ras.h"

namespace fulcrum::telemetry {
namespace {

constexpr unsigned long long kHash = 0x00c0ffee12345678ULL;

void ExpectRankFive(const std::vector<NcclLaggingRank>& lagging) {
  ASSERT_EQ(lagging.size(), 1u);
  const NcclLaggingRank& l = lagging[0];
  EXPECT_EQ(l.comm_hash, "0xc0ffee12345678");
  EXPECT_EQ(l.rank.rank, 5);
  EXPECT_EQ(l.rank.host, "10.0.0.2");
  EXPECT_EQ(l.rank.pid, 4005);
  EXPECT_EQ(l.rank.cuda_dev, 1);
  EXPECT_EQ(l.reason, "AllReduce op 41 of 42");
  EXPECT_EQ(DescribeLaggingRank(l),
            "rank 5 (pid 4005 on 10.0.0.2, GPU 1): AllReduce op 41 of 42 in comm 0xc0ffee12345678");
}

TEST(NcclRasTest, TextReportNamesTheRankBehind) {
  auto report = ParseNcclRasText(testing::StalledText(8, 5, 42, kHash));
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->format, "text");
  EXPECT_EQ(report->nccl_version, "2.29.2+cuda12.9");
  ASSERT_EQ(report->comms.size(), 1u);
  EXPECT_EQ(report->comms[0].highest_op.at("AllReduce"), 42u);  // from the group line
  ExpectRankFive(FindLaggingRanks(*report));
}

TEST(NcclRasTest, JsonReportNamesTheRankBehind) {
  auto report = ParseNcclRasJson(testing::StalledJson(8, 5, 42, kHash));
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->format, "json");
  EXPECT_EQ(report->nccl_version, "2.29.2");
  ASSERT_EQ(report->comms.size(), 1u);
  EXPECT_EQ(report->comms[0].size, 8);
  EXPECT_EQ(report->comms[0].ranks.size(), 8u);
  ExpectRankFive(FindLaggingRanks(*report));
}

TEST(NcclRasTest, ConsistentCountsNameNoRank) {
  auto json = ParseNcclRasJson(testing::StalledJson(4, -1, 42, kHash));
  ASSERT_TRUE(json.ok());
  EXPECT_TRUE(FindLaggingRanks(*json).empty());
}

// v2.28.7-1's jsonWriteMissingRank: no comma after "nvml_dev" (fixed in v2.29.2-1).
TEST(NcclRasTest, JsonMissingRanksOfV2287Parse) {
  const std::string text = R"({
  "nccl_version": "2.28.7",
  "communicators_count": 1,
  "communicators": [
    {
      "hash": "0xabc",
      "size": 2,
      "ranks_count": 1,
      "missing_ranks_count": 1,
      "ranks": [
        {
          "rank": 0, "host": "10.0.0.1", "pid": 11, "cuda_dev": 0, "nvml_dev": 0,
          "collective_counts": {"AllReduce": 7}
        }
      ],
      "missing_ranks": [
        {
          "rank": 1,
          "host": "10.0.0.9",
          "pid": 99,
          "cuda_dev": 3,
          "nvml_dev": 5
          "status": {
            "unresponsive": true,
            "considered_dead": true
          }
        }
      ]
    }
  ],
  "ras": {"collection_time_sec": 5.001, "timeouts_count": 1}
})";
  auto report = ParseNcclRasJson(text);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->timeouts, 1);
  auto lagging = FindLaggingRanks(*report);
  ASSERT_EQ(lagging.size(), 1u);
  EXPECT_EQ(DescribeLaggingRank(lagging[0]),
            "rank 1 (pid 99 on 10.0.0.9, GPU 3 (NVML 5)): process dead in comm 0xabc");
}

// v2.24.3-1: "The missing ranks: 2,5" (no per-rank lines yet), DEAD processes, and
// "different collective operation counts" with a single outlier.
TEST(NcclRasTest, TextReportOfV2243) {
  const std::string text =
      "NCCL version 2.24.3+cuda12.6 compiled with CUDA 12.6\n"
      "CUDA runtime version 12060, driver version 12060\n\n"
      "Errors\n======\n\n"
      "DEAD\n  1 job process is considered dead (unreachable via the RAS network)\n"
      "  Process 777 on node 10.1.0.3 managing GPU 2\n\n"
      "#0-0 (00000000000000ff) INCOMPLETE\n  Missing communicator data from 2 ranks\n"
      "  The missing ranks: 2,5\n\n"
      "Warnings\n========\n\n"
      "TIMEOUT\n  Encountered 2 communication timeouts while gathering communicator data\n\n"
      "#1-0 (0000000000000abc) MISMATCH\n"
      "  Communicator ranks have different collective operation counts\n"
      "  3 ranks have launched up to operation 10\n"
      "  Rank 1 has launched up to operation 9 -- GPU 1 (NVML 4) managed by process 501 on node "
      "10.1.0.1\n\n";
  auto report = ParseNcclRasText(text);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->timeouts, 2);
  ASSERT_EQ(report->missing_processes.size(), 1u);
  EXPECT_TRUE(report->missing_processes[0].dead);
  EXPECT_EQ(report->missing_processes[0].pid, 777);
  EXPECT_EQ(report->missing_processes[0].cuda_dev, 2);
  auto lagging = FindLaggingRanks(*report);
  ASSERT_EQ(lagging.size(), 4u);
  // Sorted by communicator hash (as text), then rank; the dead process has neither.
  EXPECT_EQ(DescribeLaggingRank(lagging[0]),
            "a process (pid 777 on 10.1.0.3, GPU 2): process dead");
  EXPECT_EQ(DescribeLaggingRank(lagging[1]),
            "rank 1 (pid 501 on 10.1.0.1, GPU 1 (NVML 4)): collective op 9 of 10 in comm 0xabc");
  EXPECT_EQ(DescribeLaggingRank(lagging[2]), "rank 2: not responding in comm 0xff");
  EXPECT_EQ(DescribeLaggingRank(lagging[3]), "rank 5: not responding in comm 0xff");
}

TEST(NcclRasTest, GarbageIsAnErrorOrAnEmptyReportNeverACrash) {
  EXPECT_FALSE(ParseNcclRasText("").ok());
  EXPECT_FALSE(ParseNcclRasText("HTTP/1.1 400 Bad Request\r\n\r\n").ok());
  EXPECT_FALSE(ParseNcclRasJson("{\"communicators\": 3}").ok());
  EXPECT_FALSE(ParseNcclRasJson("[1,2]").ok());
  auto odd = ParseNcclRasJson(R"({"communicators": [1, {"ranks": [null, {"rank": "x"}]},
      {"hash": 5, "missing_ranks": [{"status": 1}]}]})");
  ASSERT_TRUE(odd.ok());
  EXPECT_TRUE(FindLaggingRanks(*odd).empty());
  std::mt19937 rng(29);
  std::string base = testing::StalledText(8, 5, 42, kHash);
  for (int i = 0; i < 300; ++i) {
    std::string s = base;
    for (int k = 0; k < 8; ++k) s[rng() % s.size()] = static_cast<char>(rng());
    s.resize(rng() % (s.size() + 1));
    auto t = ParseNcclRasText(s);
    if (t.ok()) (void)FindLaggingRanks(*t);
    auto j = ParseNcclRasJson(s);
    if (j.ok()) (void)FindLaggingRanks(*j);
  }
}

TEST(NcclRasQueryTest, JsonWhenTheServerHasItTextOtherwise) {
  testing::FakeNcclRas fake;
  ASSERT_GT(fake.Start(), 0);
  fake.SetReports(testing::StalledText(8, 5, 42, kHash), testing::StalledJson(8, 5, 42, kHash));
  NcclRasQueryOptions o;
  o.address = fake.address();
  auto json = QueryNcclRas(o);
  ASSERT_TRUE(json.ok()) << json.status().ToString();
  EXPECT_EQ(json->format, "json");
  ExpectRankFive(FindLaggingRanks(*json));
  fake.SetJson(false);  // a server before v2.28.7-1: "ERROR: Unknown command set format json"
  auto text = QueryNcclRas(o);
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  EXPECT_EQ(text->format, "text");
  ExpectRankFive(FindLaggingRanks(*text));
  EXPECT_EQ(fake.statuses(), 2);
}

TEST(NcclRasQueryTest, AbsentServerIsUnavailableAtOnce) {
  NcclRasQueryOptions o;
  o.address = "127.0.0.1:" + std::to_string(testing::FreeLoopbackPort());
  auto start = std::chrono::steady_clock::now();
  auto r = QueryNcclRas(o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable) << r.status().ToString();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));  // safety net
  o.address = "nccl.example:28028";
  EXPECT_EQ(QueryNcclRas(o).status().code(), StatusCode::kInvalidInput);
}

TEST(NcclRasQueryTest, ForeignServiceIsRefusedNotTrusted) {
  testing::FakeNcclRas fake;
  ASSERT_GT(fake.Start(), 0);
  fake.SetGarbage("SSH-2.0-OpenSSH_9.2\r\n");
  NcclRasQueryOptions o;
  o.address = fake.address();
  auto r = QueryNcclRas(o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidInput);
  EXPECT_NE(r.status().message().find("expected \"SERVER PROTOCOL n\""), std::string::npos)
      << r.status().message();
  fake.SetGarbage(std::string(5000, 'x'));  // no newline at all
  EXPECT_FALSE(QueryNcclRas(o).ok());
}

}  // namespace
}  // namespace fulcrum::telemetry
