// The notice sources against fake metadata servers on 127.0.0.1 (ephemeral ports).
#include "supervise/notice.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include "core/mutex.h"
#include "support/fake_http_server.h"

#include "supervise/agent_health.h"
#include "supervise/run_flags.h"

namespace fulcrum::supervise {
namespace {

using fulcrum::testing::FakeHttpServer;

TEST(NoticeTest, AwsUsesAnImdsV2TokenAndRenewsItOn401) {
  // The fake's state is shared with the server's thread (sockets carry no happens-before that
  // ThreadSanitizer can see): one mutex guards it.
  fulcrum::Mutex mutex;
  int tokens = 0;
  std::string status = "none";
  auto set_status = [&](const char* s) {
    fulcrum::MutexLock lock(mutex);
    status = s;
  };
  FakeHttpServer fake;
  fake.server().Put("/latest/api/token", [&](const httplib::Request& req, httplib::Response& res) {
    EXPECT_EQ(req.get_header_value("X-aws-ec2-metadata-token-ttl-seconds"), "21600");
    fulcrum::MutexLock lock(mutex);
    res.set_content("token-" + std::to_string(++tokens), "text/plain");
  });
  fake.server().Get("/latest/meta-data/spot/instance-action", [&](const httplib::Request& req,
                                                                  httplib::Response& res) {
    fulcrum::MutexLock lock(mutex);
    if (req.get_header_value("X-aws-ec2-metadata-token") != "token-" + std::to_string(tokens) ||
        status == "expire") {
      res.status = 401;
      status = "none";
      return;
    }
    if (status == "none") {
      res.status = 404;
      return;
    }
    res.set_content(R"({"action":"stop","time":"2026-11-30T06:02:00Z"})", "application/json");
  });
  ASSERT_GT(fake.Start(), 0);
  auto aws = MakeAwsNoticeSource(fake.url(), 1);
  auto r = aws->Check();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_FALSE(r->has_value());
  set_status("expire");
  EXPECT_FALSE(aws->Check()->has_value());
  set_status("notice");
  r = aws->Check();
  ASSERT_TRUE(r.ok() && r->has_value());
  EXPECT_NE((*r)->find("\"action\":\"stop\""), std::string::npos);
  fulcrum::MutexLock lock(mutex);
  EXPECT_EQ(tokens, 2) << "a new token after the 401";
}

TEST(NoticeTest, GcpAndAzure) {
  // Declared before the server, so they outlive its thread (destroyed after it is joined).
  fulcrum::Mutex mutex;  // guards preempted and events, shared with the server's thread
  bool preempted = false;
  std::string events = R"({"DocumentIncarnation":1,"Events":[{"EventType":"Freeze"}]})";
  FakeHttpServer fake;
  fake.server().Get("/computeMetadata/v1/instance/preempted",
                    [&](const httplib::Request& req, httplib::Response& res) {
                      res.status = req.get_header_value("Metadata-Flavor") == "Google" ? 200 : 403;
                      fulcrum::MutexLock lock(mutex);
                      res.set_content(preempted ? "TRUE" : "FALSE", "text/plain");
                    });
  fake.server().Get("/metadata/scheduledevents",
                    [&](const httplib::Request& req, httplib::Response& res) {
                      EXPECT_EQ(req.get_param_value("api-version"), "2020-07-01");
                      res.status = req.get_header_value("Metadata") == "true" ? 200 : 400;
                      fulcrum::MutexLock lock(mutex);
                      res.set_content(events, "application/json");
                    });
  ASSERT_GT(fake.Start(), 0);
  auto gcp = MakeGcpNoticeSource(fake.url(), 1);
  EXPECT_FALSE(gcp->Check()->has_value());
  {
    fulcrum::MutexLock lock(mutex);
    preempted = true;
  }
  EXPECT_TRUE(gcp->Check()->has_value());
  auto azure = MakeAzureNoticeSource(fake.url(), 1);
  EXPECT_FALSE(azure->Check()->has_value()) << "a Freeze is a pause, not a stop";
  {
    fulcrum::MutexLock lock(mutex);
    events =
        R"({"DocumentIncarnation":2,"Events":[{"EventType":"Preempt","NotBefore":"Mon, 30 Nov 2026 06:00:30 GMT"}]})";
  }
  auto notice = azure->Check();
  ASSERT_TRUE(notice.ok() && notice->has_value());
  EXPECT_NE((*notice)->find("Preempt"), std::string::npos);
  {
    fulcrum::MutexLock lock(mutex);
    events = "not json";
  }
  EXPECT_FALSE(azure->Check().ok());
}

// Alibaba ECS metadata in security hardening mode: a token from PUT /latest/api/token (TTL
// header), sent as X-aliyun-ecs-metadata-token; 404 = no notice, a time = the release time.
TEST(NoticeTest, AlibabaSendsTheHardenedModeTokenAndReadsTheTerminationTime) {
  fulcrum::Mutex mutex;  // guards tokens and release_time, shared with the server's thread
  int tokens = 0;
  std::string release_time;
  FakeHttpServer fake;
  fake.server().Put("/latest/api/token", [&](const httplib::Request& req, httplib::Response& res) {
    EXPECT_EQ(req.get_header_value("X-aliyun-ecs-metadata-token-ttl-seconds"), "21600");
    fulcrum::MutexLock lock(mutex);
    res.set_content("ali-" + std::to_string(++tokens), "text/plain");
  });
  fake.server().Get("/latest/meta-data/instance/spot/termination-time",
                    [&](const httplib::Request& req, httplib::Response& res) {
                      fulcrum::MutexLock lock(mutex);
                      if (req.get_header_value("X-aliyun-ecs-metadata-token") !=
                          "ali-" + std::to_string(tokens)) {
                        res.status = 403;
                        return;
                      }
                      if (release_time.empty()) {
                        res.status = 404;
                        return;
                      }
                      res.set_content(release_time, "text/plain");
                    });
  ASSERT_GT(fake.Start(), 0);
  auto alibaba = MakeAlibabaNoticeSource(fake.url(), 1);
  EXPECT_EQ(alibaba->name(), "alibaba");
  auto r = alibaba->Check();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_FALSE(r->has_value());
  {
    fulcrum::MutexLock lock(mutex);
    release_time = "2026-11-30T06:05:00Z";
  }
  r = alibaba->Check();
  ASSERT_TRUE(r.ok() && r->has_value());
  EXPECT_EQ(**r, "alibaba spot termination-time 2026-11-30T06:05:00Z");
  fulcrum::MutexLock lock(mutex);
  EXPECT_EQ(tokens, 1) << "the token is reused until it is refused";
}

// Normal mode: the metadata server issues no token; the notice is read without one.
TEST(NoticeTest, AlibabaWithoutHardenedModeReadsWithoutAToken) {
  std::atomic<bool> notice{false};
  FakeHttpServer fake;
  fake.server().Put("/latest/api/token",
                    [](const httplib::Request&, httplib::Response& res) { res.status = 403; });
  fake.server().Get("/latest/meta-data/instance/spot/termination-time",
                    [&](const httplib::Request& req, httplib::Response& res) {
                      EXPECT_FALSE(req.has_header("X-aliyun-ecs-metadata-token"));
                      if (!notice) {
                        res.status = 404;
                        return;
                      }
                      res.set_content("2026-11-30T06:05:00Z", "text/plain");
                    });
  ASSERT_GT(fake.Start(), 0);
  auto alibaba = MakeAlibabaNoticeSource(fake.url(), 1);
  EXPECT_FALSE(alibaba->Check()->has_value());
  notice = true;
  auto r = alibaba->Check();
  ASSERT_TRUE(r.ok() && r->has_value());
  EXPECT_NE((*r)->find("2026-11-30T06:05:00Z"), std::string::npos);
  EXPECT_FALSE(MakeAlibabaNoticeSource("http://127.0.0.1:1", 0.2)->Check().ok());
}

TEST(NoticeTest, UnreachableEndpointIsAnErrorNotANotice) {
  auto aws = MakeAwsNoticeSource("http://127.0.0.1:1", 0.2);
  auto r = aws->Check();
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
}

// `--preemption auto` adds Alibaba only on an ECS instance (its DMI product name), so that a
// machine elsewhere never sends requests to 100.100.100.200 (shared address space, not
// link-local). Before, auto never watched Alibaba at all (docs/CHINA.md said to name it).
TEST(NoticeTest, AutoWatchesAlibabaOnlyOnAnEcsInstance) {
  const std::string dir = ::testing::TempDir() + "/dmi-" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  const auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir + "/" + name) << text;
    return dir + "/" + name;
  };
  const std::string ecs = write("ecs", "Alibaba Cloud ECS\n");
  const std::string ec2 = write("ec2", "c5.large\n");
  EXPECT_TRUE(OnAlibabaEcs(ecs));
  EXPECT_FALSE(OnAlibabaEcs(ec2));
  EXPECT_FALSE(OnAlibabaEcs(dir + "/missing"));
  for (const auto& [path, alibaba] : {std::pair{ecs, true}, std::pair{ec2, false}}) {
    RunFlags flags;
    flags.dmi_product_name_path = path;
    auto r = ResolveRunFlags(flags, dir, "job");
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_TRUE(r->preemption_auto);
    const auto& s = r->preemption_sources;
    EXPECT_EQ(std::count(s.begin(), s.end(), "alibaba"), alibaba ? 1 : 0) << path;
    EXPECT_EQ(std::count(s.begin(), s.end(), "aws"), 1);
  }
  RunFlags none;
  none.preemption = {"none"};
  none.dmi_product_name_path = ecs;
  auto r = ResolveRunFlags(none, dir, "job");
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->preemption_sources.empty()) << "--preemption none watches nothing, even on ECS";
  std::filesystem::remove_all(dir);
}

class ScriptedSource final : public NoticeSource {
 public:
  explicit ScriptedSource(std::atomic<bool>& fire) : fire_(fire) {}
  std::string name() const override { return "scripted"; }
  Result<std::optional<std::string>> Check() override {
    if (fire_) return std::optional<std::string>("scripted notice");
    return std::optional<std::string>();
  }

 private:
  std::atomic<bool>& fire_;
};

TEST(NoticeWatcherTest, PollsOnItsThreadAndTheFirstNoticeSticks) {
  std::atomic<bool> fire{false};
  std::vector<std::unique_ptr<NoticeSource>> sources;
  sources.push_back(std::make_unique<ScriptedSource>(fire));
  NoticeWatcher watcher(std::move(sources), 0.01);
  watcher.Start();
  EXPECT_FALSE(watcher.Notice());
  fire = true;
  for (int i = 0; i < 500 && !watcher.Notice(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  EXPECT_EQ(watcher.Notice(), "scripted notice");
  fire = false;
  EXPECT_EQ(watcher.Notice(), "scripted notice");
  watcher.Stop();
}

TEST(AgentHealthTest, LeavesOutGpusThatFellOffTheBus) {
  FakeHttpServer fake;
  fake.server().Get("/v1/gpus", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(
        R"({"gpus":[{"index":0,"last_xid":null},{"index":1,"last_xid":79},{"index":2,"last_xid":13}]})",
        "application/json");
  });
  ASSERT_GT(fake.Start(), 0);
  EXPECT_EQ(UnhealthyGpusFromAgent(fake.url(), 1), (std::vector<int>{1}));
  EXPECT_TRUE(UnhealthyGpusFromAgent("http://127.0.0.1:1", 0.2).empty()) << "no agent: no opinion";
  EXPECT_TRUE(UnhealthyGpusFromAgent("none", 0.2).empty());
}

}  // namespace
}  // namespace fulcrum::supervise
