#include "alert/notify.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace fulcrum::alert {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

// 2026-11-30T05:40:00Z = 1796017200 (date -u -d 2026-11-30T05:40:00Z +%s).
constexpr double kStart = 1796017200.0;

Transition Firing() {
  Transition t;
  t.rule_name = "GpuTooHot";
  t.gpu = 2;
  t.from = AlertStatus::kPending;
  t.to = AlertStatus::kFiring;
  t.value = 95;
  t.threshold = 85;
  t.started_at = kStart;
  t.fired_at = kStart + 300.25;
  t.at = t.fired_at;
  t.severity = "critical";
  t.labels = {{"alertname", "GpuTooHot"}, {"gpu", "2"}, {"severity", "critical"}};
  t.annotations = {{"summary", "GPU 2 at 95 C"}};
  t.fingerprint = Evaluator::Fingerprint("GpuTooHot", 2);
  return t;
}

Transition Resolved() {
  Transition t = Firing();
  t.from = AlertStatus::kFiring;
  t.to = AlertStatus::kResolved;
  t.value = 70;
  t.at = kStart + 600;
  t.resolved_at = kStart + 600;
  return t;
}

const NotifyContext kContext{"gpu-host-1", "http://127.0.0.1:9400"};

json Build(ReceiverFormat format, const Transition& t) {
  return json::parse(BuildPayload(format, t, kContext, "team"));
}

TEST(NotifyTest, AlertmanagerV4FiringHasEveryField) {
  json p = Build(ReceiverFormat::kAlertmanager, Firing());
  for (const char* key :
       {"version", "groupKey", "truncatedAlerts", "status", "receiver", "groupLabels",
        "commonLabels", "commonAnnotations", "externalURL", "alerts"}) {
    EXPECT_TRUE(p.contains(key)) << key;
  }
  EXPECT_EQ(p["version"], "4");
  EXPECT_EQ(p["status"], "firing");
  EXPECT_EQ(p["receiver"], "team");
  EXPECT_EQ(p["truncatedAlerts"], 0);
  EXPECT_EQ(p["groupLabels"], json({{"alertname", "GpuTooHot"}}));
  EXPECT_EQ(p["commonLabels"]["hostname"], "gpu-host-1");
  EXPECT_EQ(p["externalURL"], "http://127.0.0.1:9400");
  ASSERT_EQ(p["alerts"].size(), 1u);
  const json& a = p["alerts"][0];
  for (const char* key :
       {"status", "labels", "annotations", "startsAt", "endsAt", "generatorURL", "fingerprint"}) {
    EXPECT_TRUE(a.contains(key)) << key;
  }
  EXPECT_EQ(a["status"], "firing");
  EXPECT_EQ(a["labels"]["alertname"], "GpuTooHot");
  EXPECT_EQ(a["labels"]["gpu"], "2");
  EXPECT_EQ(a["labels"]["severity"], "critical");
  EXPECT_EQ(a["annotations"]["summary"], "GPU 2 at 95 C");
  EXPECT_EQ(a["startsAt"], "2026-11-30T05:45:00.250Z");  // fired_at
  EXPECT_EQ(a["endsAt"], "0001-01-01T00:00:00Z");
  EXPECT_EQ(a["generatorURL"], "http://127.0.0.1:9400/v1/alerts");
  EXPECT_EQ(a["fingerprint"], Evaluator::Fingerprint("GpuTooHot", 2));
}

TEST(NotifyTest, AlertmanagerV4Resolved) {
  json p = Build(ReceiverFormat::kAlertmanager, Resolved());
  EXPECT_EQ(p["status"], "resolved");
  EXPECT_EQ(p["alerts"][0]["status"], "resolved");
  EXPECT_EQ(p["alerts"][0]["endsAt"], "2026-11-30T05:50:00.000Z");
  EXPECT_EQ(p["alerts"][0]["startsAt"], "2026-11-30T05:45:00.250Z");
}

TEST(NotifyTest, GenericFiringAndResolved) {
  json p = Build(ReceiverFormat::kGeneric, Firing());
  EXPECT_EQ(p["version"], "1");
  EXPECT_EQ(p["status"], "firing");
  const json& a = p["alert"];
  EXPECT_EQ(a["name"], "GpuTooHot");
  EXPECT_EQ(a["gpu"], 2);
  EXPECT_EQ(a["hostname"], "gpu-host-1");
  EXPECT_EQ(a["value"], 95);
  EXPECT_EQ(a["threshold"], 85);
  EXPECT_EQ(a["started_at"], kStart);
  EXPECT_EQ(a["fired_at"], kStart + 300.25);
  EXPECT_TRUE(a["resolved_at"].is_null());
  EXPECT_EQ(a["severity"], "critical");
  EXPECT_EQ(a["fingerprint"], Firing().fingerprint);

  json r = Build(ReceiverFormat::kGeneric, Resolved());
  EXPECT_EQ(r["status"], "resolved");
  EXPECT_EQ(r["alert"]["status"], "resolved");
  EXPECT_EQ(r["alert"]["resolved_at"], kStart + 600);
  EXPECT_EQ(r["alert"]["value"], 70);
}

TEST(NotifyTest, HostWideAlertHasNullGpu) {
  Transition t = Firing();
  t.gpu = -1;
  json p = Build(ReceiverFormat::kGeneric, t);
  EXPECT_TRUE(p["alert"]["gpu"].is_null());
}

TEST(NotifyTest, SlackShape) {
  json p = Build(ReceiverFormat::kSlack, Firing());
  ASSERT_TRUE(p.is_object());
  ASSERT_TRUE(p["text"].is_string());
  EXPECT_EQ(p.size(), 1u);
  EXPECT_EQ(p["text"], "[FIRING] GpuTooHot on gpu-host-1 gpu 2 (critical): GPU 2 at 95 C");
  json r = Build(ReceiverFormat::kSlack, Resolved());
  EXPECT_THAT(r["text"].get<std::string>(), HasSubstr("[RESOLVED] GpuTooHot"));
  EXPECT_THAT(r["text"].get<std::string>(), HasSubstr("now value 70"));
}

TEST(NotifyTest, FeishuShape) {
  for (const Transition& t : {Firing(), Resolved()}) {
    json p = Build(ReceiverFormat::kFeishu, t);
    EXPECT_EQ(p["msg_type"], "text");
    ASSERT_TRUE(p["content"]["text"].is_string());
    EXPECT_THAT(p["content"]["text"].get<std::string>(), HasSubstr("GpuTooHot"));
  }
}

TEST(NotifyTest, DingTalkAndWeComShape) {
  for (ReceiverFormat format : {ReceiverFormat::kDingTalk, ReceiverFormat::kWeCom}) {
    for (const Transition& t : {Firing(), Resolved()}) {
      json p = Build(format, t);
      EXPECT_EQ(p["msgtype"], "text");
      ASSERT_TRUE(p["text"]["content"].is_string());
      EXPECT_THAT(p["text"]["content"].get<std::string>(),
                  HasSubstr(t.to == AlertStatus::kFiring ? "[FIRING]" : "[RESOLVED]"));
    }
  }
}

TEST(NotifyTest, FormatNamesRoundTrip) {
  for (const char* name : {"generic", "alertmanager", "slack", "feishu", "dingtalk", "wecom"}) {
    auto format = ParseReceiverFormat(name);
    ASSERT_TRUE(format.ok()) << name;
    EXPECT_EQ(ToString(*format), name);
  }
  auto bad = ParseReceiverFormat("teams");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("found 'teams'"));
}

TEST(NotifyTest, IdempotencyKeysDifferByStatusAndEpisodeOnly) {
  EXPECT_NE(IdempotencyKey(Firing()), IdempotencyKey(Resolved()));
  Transition again = Firing();
  again.at += 5;  // re-emitted after a restart: same episode, same key
  again.value = 99;
  EXPECT_EQ(IdempotencyKey(Firing()), IdempotencyKey(again));
  Transition next_episode = Firing();
  next_episode.started_at += 3600;
  EXPECT_NE(IdempotencyKey(Firing()), IdempotencyKey(next_episode));
}

TEST(NotifyTest, MakeNotificationsOnePerReceiverOnlyWhenNotifying) {
  std::vector<Receiver> receivers = {
      {"slack", "https://hooks.slack.com/services/T0/B0/SECRET", ReceiverFormat::kSlack, ""},
      {"am", "http://127.0.0.1:9093/api/v2/alerts", ReceiverFormat::kAlertmanager, ""}};
  auto notes = MakeNotifications(Firing(), receivers, kContext, kStart + 301);
  ASSERT_EQ(notes.size(), 2u);
  EXPECT_EQ(notes[0].id, IdempotencyKey(Firing()) + ":slack");
  EXPECT_EQ(notes[0].receiver, "slack");
  EXPECT_EQ(notes[0].format, "slack");
  EXPECT_EQ(notes[1].format, "alertmanager");
  EXPECT_EQ(json::parse(notes[1].body)["version"], "4");
  EXPECT_DOUBLE_EQ(notes[0].created_at, kStart + 301);
  EXPECT_DOUBLE_EQ(notes[0].next_attempt_at, kStart + 301);
  EXPECT_EQ(notes[0].body.find("SECRET"), std::string::npos);

  Transition pending = Firing();
  pending.from = AlertStatus::kInactive;
  pending.to = AlertStatus::kPending;
  EXPECT_TRUE(MakeNotifications(pending, receivers, kContext, kStart).empty());
}

TEST(NotifyTest, RedactUrlKeepsSchemeAndHostOnly) {
  EXPECT_EQ(RedactUrl("https://hooks.slack.com/services/T0/B0/XYZ"),
            "https://hooks.slack.com/<redacted>");
  EXPECT_EQ(RedactUrl("https://oapi.dingtalk.com/robot/send?access_token=abc"),
            "https://oapi.dingtalk.com/<redacted>");
  EXPECT_EQ(RedactUrl("http://user:pw@127.0.0.1:8080/x"), "http://127.0.0.1:8080/<redacted>");
  EXPECT_EQ(RedactUrl("http://127.0.0.1:8080?key=1"), "http://127.0.0.1:8080/<redacted>");
  EXPECT_EQ(RedactUrl("not a url with secret"), "<redacted>");
}

}  // namespace
}  // namespace fulcrum::alert
