// End-to-end tests of the receivers (issue 15): the real agent delivering to a real
// Alertmanager's API (Debian's prometheus-alertmanager on loopback, started as
// bench/perf/alert_latency.sh starts it), and every kind of receiver secret kept out of the
// logs, /metrics, the /v1 API and agent.db while the vendors' fakes prove the secrets were used.
// Issue 29: an alert goes out within 2 s while the data disk is full (a real full tmpfs).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "core/mutex.h"
#include "support/agent_process.h"
#include "support/fake_http_server.h"
#include "support/run_binary.h"
#include "support/sanitizer.h"

namespace fulcrum::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kRules = R"(rules:
  - name: GpuTooHot
    metric: gpu_temperature_celsius
    op: ">"
    threshold: 85
    for: 0s
    keep_firing_for: 0s
    severity: critical
    annotations: {summary: "GPU {{ $labels.gpu }} at {{ $value }} C"}
)";

class ReceiversE2E : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = MakeTempDir("receivers-e2e");
    WriteFile(dir_ + "/rules.yaml", kRules);
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(dir_);
  }
  // The agent on the sim source with `scenario`, the rules above and `config` (YAML).
  std::vector<std::string> Args(const std::string& scenario, const std::string& config) {
    WriteFile(dir_ + "/scenario.yaml", scenario);
    WriteFile(dir_ + "/agent.yaml", config);
    return {"--source",       "sim",
            "--sim-gpus",     "2",
            "--sim-scenario", dir_ + "/scenario.yaml",
            "--listen",       "127.0.0.1:0",
            "--data-dir",     dir_ + "/data",
            "--rules",        dir_ + "/rules.yaml",
            "--interval",     "200ms",
            "--config",       dir_ + "/agent.yaml"};
  }
  std::string dir_;
};

// Alertmanager's GET /api/v2/alerts (api/v2/openapi.yaml: gettableAlerts) lists the alerts it
// holds that have not ended.
json AlertmanagerAlerts(int port) {
  httplib::Client client("127.0.0.1", port);
  client.set_connection_timeout(1);
  client.set_read_timeout(2);
  auto res = client.Get("/api/v2/alerts");
  if (!res || res->status != 200) return json();
  return json::parse(res->body, nullptr, false);
}

json FindAlert(const json& alerts, const std::string& name, const std::string& gpu) {
  if (!alerts.is_array()) return json();
  for (const json& a : alerts) {
    if (a["labels"].value("alertname", "") == name && a["labels"].value("gpu", "") == gpu) {
      return a;
    }
  }
  return json();
}

TEST_F(ReceiversE2E, AlertmanagerApiReceiverAlertIsListedByARealAlertmanagerThenResolved) {
  const int am_port = FreeLoopbackPort();
  fs::create_directories(dir_ + "/am-data");
  WriteFile(dir_ + "/alertmanager.yml",
            "route: {receiver: blackhole}\nreceivers:\n  - name: blackhole\n");
  PeerProcess alertmanager(
      "prometheus-alertmanager",
      {"--config.file=" + dir_ + "/alertmanager.yml", "--storage.path=" + dir_ + "/am-data",
       "--web.listen-address=127.0.0.1:" + std::to_string(am_port),
       "--cluster.listen-address=", "--log.level=warn"},
      dir_ + "/alertmanager.log");
  ASSERT_TRUE(WaitFor([&] { return AlertmanagerAlerts(am_port).is_array(); }, 30))
      << alertmanager.log();

  // GPU 1 overheats from 1 s for 3 s: one firing, then one resolved notification.
  AgentProcess agent(dir_, Args("- {at: 1s, gpu: 1, fault: overheat, for: 3s}\n",
                                "receivers:\n  - {name: am, url: \"http://127.0.0.1:" +
                                    std::to_string(am_port) + "\", format: alertmanager-api}\n"));
  ASSERT_GT(agent.port(), 0) << agent.err();
  json alert;
  ASSERT_TRUE(WaitFor(
      [&] {
        alert = FindAlert(AlertmanagerAlerts(am_port), "GpuTooHot", "1");
        return !alert.is_null();
      },
      20))
      << agent.err() << alertmanager.log();
  EXPECT_EQ(alert["status"]["state"], "active") << alert;
  EXPECT_EQ(alert["labels"]["severity"], "critical");
  EXPECT_FALSE(alert["labels"].value("hostname", "").empty()) << alert;
  EXPECT_EQ(alert["annotations"]["summary"], "GPU 1 at 95 C");
  EXPECT_EQ(alert["generatorURL"],
            "http://127.0.0.1:" + std::to_string(agent.port()) + "/v1/alerts");
  // The resolve sets endsAt: Alertmanager stops listing it.
  EXPECT_TRUE(WaitFor(
      [&] { return FindAlert(AlertmanagerAlerts(am_port), "GpuTooHot", "1").is_null(); }, 20))
      << AlertmanagerAlerts(am_port) << agent.err();
  EXPECT_EQ(agent.Stop(SIGTERM), 0) << agent.err();
}

// Fakes of the vendors' endpoints on one loopback server: each records what it got and answers
// the way its vendor does (Feishu refuses the first message with its HTTP 200 error code, Slack
// answers 500 once), so that error and retry paths are logged too.
class VendorFakes {
 public:
  VendorFakes() {
    auto record = [this](const std::string& kind, const httplib::Request& req) {
      MutexLock lock(mutex_);
      requests_[kind].push_back(req.target + "\n" + req.get_header_value("Authorization") + "\n" +
                                req.body);
      return requests_[kind].size();
    };
    http_.server().Post(R"(/open-apis/bot/v2/hook/.*)",
                        [record](const httplib::Request& req, httplib::Response& res) {
                          bool first = record("feishu", req) == 1;
                          res.set_content(first ? R"({"code":9499,"msg":"Bad Request"})"
                                                : R"({"code":0,"msg":"success"})",
                                          "application/json");
                        });
    http_.server().Post("/robot/send",
                        [record](const httplib::Request& req, httplib::Response& res) {
                          record("dingtalk", req);
                          res.set_content(R"({"errcode":0,"errmsg":"ok"})", "application/json");
                        });
    http_.server().Post("/v2/enqueue", [record](const httplib::Request& req,
                                                httplib::Response& res) {
      record("pagerduty", req);
      res.status = 202;
      res.set_content(R"({"status":"success","message":"Event processed"})", "application/json");
    });
    http_.server().Post(R"(/services/.*)",
                        [record](const httplib::Request& req, httplib::Response& res) {
                          res.status = record("slack", req) == 1 ? 500 : 200;
                          res.set_content("ok", "text/plain");
                        });
    http_.server().Post("/generic", [record](const httplib::Request& req, httplib::Response& res) {
      record("generic", req);
      res.set_content("{}", "application/json");
    });
    http_.Start();
  }
  std::string url() const { return http_.url(); }
  std::vector<std::string> Requests(const std::string& kind) {
    MutexLock lock(mutex_);
    return requests_[kind];
  }

 private:
  Mutex mutex_;
  std::map<std::string, std::vector<std::string>> requests_ GUARDED_BY(mutex_);
  FakeHttpServer http_;  // last: stopped before the state its handlers touch
};

std::string Everything(const std::vector<std::string>& parts) {
  std::string all;
  for (const std::string& p : parts) all += p + "\n";
  return all;
}

TEST_F(ReceiversE2E, SecretsNeverAppearInLogsMetricsApiOrTheStore) {
  VendorFakes vendors;
  const int closed_port = FreeLoopbackPort();  // nothing listens: transport errors get logged
  const std::string config =
      "receivers:\n"
      "  - {name: lark, format: feishu, secret: FEISHUSIGNSECRET,\n"
      "     url: \"" +
      vendors.url() +
      "/open-apis/bot/v2/hook/FEISHUPATHSECRET\"}\n"
      "  - {name: ding, format: dingtalk, secret: SECDINGSIGNSECRET,\n"
      "     url: \"" +
      vendors.url() +
      "/robot/send?access_token=DINGTOKENSECRET\"}\n"
      "  - {name: pd, format: pagerduty, routing_key: PDROUTINGKEYSECRET,\n"
      "     url: \"" +
      vendors.url() +
      "/v2/enqueue\"}\n"
      "  - {name: slack, format: slack, url: \"" +
      vendors.url() +
      "/services/T0/B0/SLACKPATHSECRET\"}\n"
      "  - {name: ops, url: \"" +
      vendors.url() +
      "/generic\", token: BEARERTOKENSECRET}\n"
      "  - {name: down, url: \"http://user:USERPASSSECRET@127.0.0.1:" +
      std::to_string(closed_port) +
      "/DOWNPATHSECRET\"}\n"
      "token: AGENTTOKENSECRET\n";
  AgentProcess agent(dir_, Args("- {at: 0s, gpu: 0, fault: overheat, for: 2s}\n", config));
  ASSERT_GT(agent.port(), 0) << agent.err();

  // Every vendor got the firing and the resolved notification, with its secret on the wire.
  ASSERT_TRUE(WaitFor(
      [&] {
        return vendors.Requests("feishu").size() >= 3 && vendors.Requests("dingtalk").size() >= 2 &&
               vendors.Requests("pagerduty").size() >= 2 && vendors.Requests("slack").size() >= 3 &&
               vendors.Requests("generic").size() >= 2;
      },
      30))
      << agent.err();
  EXPECT_THAT(Everything(vendors.Requests("feishu")), ::testing::HasSubstr("\"sign\":"));
  EXPECT_THAT(Everything(vendors.Requests("dingtalk")),
              ::testing::HasSubstr("access_token=DINGTOKENSECRET&timestamp="));
  EXPECT_THAT(Everything(vendors.Requests("pagerduty")),
              ::testing::HasSubstr("\"routing_key\":\"PDROUTINGKEYSECRET\""));
  EXPECT_THAT(Everything(vendors.Requests("generic")),
              ::testing::HasSubstr("Bearer BEARERTOKENSECRET"));
  // The vendor's refusal was logged with its message.
  EXPECT_TRUE(WaitFor(
      [&] { return agent.err().find("feishu code 9499: Bad Request") != std::string::npos; }, 5))
      << agent.err();

  std::vector<std::string> seen = {agent.err(), agent.out()};
  for (const char* path :
       {"/metrics", "/v1/health", "/v1/gpus", "/v1/alerts", "/v1/host", "/v1/jobs", "/v1/idle",
        "/v1/series?metric=gpu_temperature_celsius", "/"}) {
    auto res = agent.Client().Get(path);
    ASSERT_TRUE(res) << path;
    seen.push_back(std::string(path) + ": " + res->body);
  }
  ASSERT_EQ(agent.Stop(SIGTERM), 0) << agent.err();
  seen.push_back(agent.err());
  for (const auto& entry : fs::recursive_directory_iterator(dir_ + "/data")) {
    if (entry.is_regular_file()) seen.push_back(ReadFile(entry.path()));
  }
  const std::string all = Everything(seen);
  ASSERT_THAT(all, ::testing::HasSubstr("GpuTooHot"));  // the places searched hold the alert
  for (const char* secret :
       {"FEISHUSIGNSECRET", "FEISHUPATHSECRET", "SECDINGSIGNSECRET", "DINGTOKENSECRET",
        "PDROUTINGKEYSECRET", "SLACKPATHSECRET", "BEARERTOKENSECRET", "USERPASSSECRET",
        "DOWNPATHSECRET", "AGENTTOKENSECRET"}) {
    EXPECT_EQ(all.find(secret), std::string::npos) << secret;
  }
}

// Issue 29 item 3: with the data disk full, notifications were written to the store before they
// were sent, so none went out until space returned. The agent's data dir is a 2 MiB tmpfs filled
// to the last byte before GPU 0 overheats: the firing still reaches the receiver within 2 s of
// the alert firing, and the store's refusals are not logged ten times a second.
TEST_F(ReceiversE2E, AFullDataDiskStillDeliversTheAlertWithinTwoSeconds) {
  if (geteuid() != 0) GTEST_SKIP() << "mounting a tmpfs needs root";
  const std::string data = dir_ + "/data";
  fs::create_directories(data);
  if (std::system(("mount -t tmpfs -o size=2M tmpfs " + data + " 2>/dev/null").c_str()) != 0) {
    GTEST_SKIP() << "mount -t tmpfs failed (no CAP_SYS_ADMIN here)";
  }
  struct Unmount {
    std::string path;
    ~Unmount() { (void)std::system(("umount -l " + path).c_str()); }
  } unmount{data};

  Mutex mutex;
  std::vector<std::pair<double, std::string>> posts;  // (unix time received, body)
  FakeHttpServer receiver;
  receiver.server().Post("/hook", [&](const httplib::Request& req, httplib::Response& res) {
    const double now =
        std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    MutexLock lock(mutex);
    posts.emplace_back(now, req.body);
    res.set_content("{}", "application/json");
  });
  ASSERT_GT(receiver.Start(), 0);
  AgentProcess agent(dir_,
                     Args("- {at: 5s, gpu: 0, fault: overheat, for: 30s}\n",
                          "receivers:\n  - {name: ops, url: \"" + receiver.url() + "/hook\"}\n"));
  ASSERT_GT(agent.port(), 0) << agent.err();
  // Fill the disk to the last byte.
  FILE* filler = std::fopen((data + "/filler").c_str(), "wb");
  ASSERT_NE(filler, nullptr);
  std::vector<char> block(4096, 'x');
  while (std::fwrite(block.data(), 1, block.size(), filler) == block.size()) {
  }
  std::fclose(filler);
  ASSERT_TRUE(
      WaitFor([&] { return agent.err().find("store write failed") != std::string::npos; }, 10))
      << "the store never refused a write: the disk is not full\n"
      << agent.err();

  json firing;
  double received_at = 0;
  ASSERT_TRUE(WaitFor(
      [&] {
        MutexLock lock(mutex);
        for (const auto& [at, body] : posts) {
          json doc = json::parse(body, nullptr, false);
          if (doc.is_object() && doc["alert"].value("name", "") == "GpuTooHot" &&
              doc.value("status", "") == "firing") {
            firing = doc;
            received_at = at;
            return true;
          }
        }
        return false;
      },
      20))
      << agent.err();
  ASSERT_TRUE(firing["alert"]["fired_at"].is_number()) << firing;
  const double latency = received_at - firing["alert"]["fired_at"].get<double>();
  RecordProperty("firing_delivered_after_ms", std::to_string(static_cast<int>(latency * 1000)));
  EXPECT_LE(latency, 2.0) << firing;
  const std::string log = agent.err();
  EXPECT_NE(log.find("delivered from memory"), std::string::npos) << log;  // the fallback ran
  // /v1/health says the agent runs degraded, and why.
  const json health = agent.Get("/v1/health");
  EXPECT_EQ(health.value("status", ""), "degraded") << health;
  EXPECT_TRUE(health["reason"].is_string()) << health;
  EXPECT_EQ(agent.Stop(SIGTERM), 0) << agent.err();
  // Refusals logged once a minute, not per write (the sampler writes 5 times a second here).
  size_t lines = 0;
  for (size_t at = log.find("store write failed"); at != std::string::npos;
       at = log.find("store write failed", at + 1)) {
    ++lines;
  }
  EXPECT_LE(lines, 2u) << log;
}

// Issue 29 item 4: the outbox's retries were wall-clock: stepping the clock forward 8 days
// dead-lettered a seconds-old notification, back 1 h held it. The agent runs under Debian's
// libfaketime with FAKETIME_DONT_FAKE_MONOTONIC=1 (only CLOCK_REALTIME is faked; README of
// libfaketime 0.9.10, "FAKETIME_DONT_FAKE_MONOTONIC") and FAKETIME_TIMESTAMP_FILE re-read on every
// call (FAKETIME_NO_CACHE=1), so the test steps the agent's wall clock +8 days, then -1 h, while
// the receiver refuses the firing; once it accepts, the firing arrives, neither lost nor held.
TEST_F(ReceiversE2E, WallClockStepsOfEightDaysNeitherLoseNorHoldANotification) {
  const std::string preload = FaketimePreload();
  if (preload.empty()) GTEST_SKIP() << "libfaketime is not installed (apt-get install faketime)";
  const std::string rc = dir_ + "/faketime.rc";
  WriteFile(rc, "+0\n");
  WebhookRecorder receiver;
  receiver.SetStatus(503);
  AgentProcess agent(dir_,
                     Args("- {at: 1s, gpu: 0, fault: overheat, for: 120s}\n",
                          "receivers:\n  - {name: ops, url: \"" + receiver.url() + "\"}\n"),
                     {{"LD_PRELOAD", preload},
                      {"FAKETIME_TIMESTAMP_FILE", rc},
                      {"FAKETIME_NO_CACHE", "1"},
                      {"FAKETIME_DONT_FAKE_MONOTONIC", "1"}});
  ASSERT_GT(agent.port(), 0) << agent.err();
  ASSERT_TRUE(WaitFor([&] { return receiver.Attempts() >= 1; }, 20)) << agent.err();
  WriteFile(rc, "+8d\n");  // forward 8 days: past max_age (7 days) by the wall clock
  ASSERT_TRUE(WaitFor([&] { return receiver.Attempts() >= 2; }, 20)) << agent.err();
  WriteFile(rc, "-1h\n");  // back: 1 h before the real time, 8 days before the last reading
  const int refused = receiver.Attempts();
  ASSERT_TRUE(WaitFor([&] { return receiver.Attempts() > refused; }, 40)) << agent.err();
  receiver.SetStatus(200);
  ASSERT_TRUE(WaitFor([&] { return !receiver.Find("\"firing\"").is_null(); }, 40))
      << "the firing was lost or held\n"
      << agent.err();
  const std::string log = agent.err();
  EXPECT_EQ(log.find("max_age"), std::string::npos) << log;
  EXPECT_NE(log.find("wall clock stepped by +"), std::string::npos) << log;
  EXPECT_NE(log.find("wall clock stepped by -"), std::string::npos) << log;
  EXPECT_EQ(agent.Stop(SIGTERM), 0) << agent.err();
}

}  // namespace
}  // namespace fulcrum::testing
