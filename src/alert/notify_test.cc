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
  for (const char* name : {"generic", "alertmanager", "slack", "feishu", "dingtalk", "wecom",
                           "pagerduty", "teams", "discord", "alertmanager-api"}) {
    auto format = ParseReceiverFormat(name);
    ASSERT_TRUE(format.ok()) << name;
    EXPECT_EQ(ToString(*format), name);
  }
  EXPECT_EQ(AllReceiverFormats().size(), 10u);
  auto bad = ParseReceiverFormat("matrix");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("found \"matrix\""));
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

// Slack's formatting reference, "Escaping text" (api.slack.com/reference/surfaces/formatting
// #escaping): &, < and > are control characters and must be sent as &amp;, &lt;, &gt; (and
// nothing else entity-encoded). An annotation "<!channel> a & b" must not ping the channel.
TEST(NotifyTest, SlackTextEscapesItsThreeControlCharactersOnly) {
  Transition t = Firing();
  t.annotations["summary"] = "<!channel> temp > 90 & rising, it's \"hot\"";
  json p = Build(ReceiverFormat::kSlack, t);
  const std::string text = p["text"];
  EXPECT_THAT(text, HasSubstr("&lt;!channel&gt; temp &gt; 90 &amp; rising, it's \"hot\""));
  EXPECT_EQ(text.find('<'), std::string::npos);
  EXPECT_EQ(SlackEscape("a&b<c>d"), "a&amp;b&lt;c&gt;d");
  EXPECT_EQ(SlackEscape("&amp;"), "&amp;amp;");
}

// PagerDuty Events API v2 (developer.pagerduty.com/docs/events-API-v2/trigger-events and
// .../resolve-events): trigger with payload {summary, source, severity}; resolve with the same
// dedup_key; severity one of critical, error, warning, info.
TEST(NotifyTest, PagerDutyTriggerAndResolveShareTheDedupKey) {
  json trigger = Build(ReceiverFormat::kPagerDuty, Firing());
  json resolve = Build(ReceiverFormat::kPagerDuty, Resolved());
  EXPECT_EQ(trigger["event_action"], "trigger");
  EXPECT_EQ(resolve["event_action"], "resolve");
  ASSERT_TRUE(trigger["dedup_key"].is_string());
  EXPECT_EQ(trigger["dedup_key"], resolve["dedup_key"]);
  EXPECT_LE(trigger["dedup_key"].get<std::string>().size(), 255u);
  EXPECT_FALSE(trigger.contains("routing_key"));  // a secret: added at send time
  const json& payload = trigger["payload"];
  EXPECT_THAT(payload["summary"].get<std::string>(), HasSubstr("GpuTooHot"));
  EXPECT_EQ(payload["source"], "gpu-host-1");
  EXPECT_EQ(payload["severity"], "critical");
  EXPECT_EQ(payload["component"], "gpu 2");
  EXPECT_EQ(payload["timestamp"], "2026-11-30T05:45:00.250Z");
  EXPECT_FALSE(resolve.contains("payload"));
  // A later episode of the same alert opens a new incident.
  Transition again = Firing();
  again.started_at += 3600;
  EXPECT_NE(Build(ReceiverFormat::kPagerDuty, again)["dedup_key"], trigger["dedup_key"]);
  // A severity PagerDuty does not know becomes "error".
  Transition odd = Firing();
  odd.severity = "page";
  EXPECT_EQ(Build(ReceiverFormat::kPagerDuty, odd)["payload"]["severity"], "error");
}

// Teams incoming webhooks take a message with an Adaptive Card attachment
// (learn.microsoft.com/microsoftteams/platform/webhooks-and-connectors/how-to/connectors-using).
TEST(NotifyTest, TeamsIsAMessageWithOneAdaptiveCard) {
  json p = Build(ReceiverFormat::kTeams, Firing());
  EXPECT_EQ(p["type"], "message");
  ASSERT_EQ(p["attachments"].size(), 1u);
  EXPECT_EQ(p["attachments"][0]["contentType"], "application/vnd.microsoft.card.adaptive");
  const json& card = p["attachments"][0]["content"];
  EXPECT_EQ(card["type"], "AdaptiveCard");
  EXPECT_THAT(card["body"][0]["text"].get<std::string>(), HasSubstr("[FIRING] GpuTooHot"));
}

// Discord "Execute Webhook" (discord.com/developers/docs/resources/webhook#execute-webhook):
// content of at most 2000 characters; allowed_mentions.parse [] suppresses @everyone.
TEST(NotifyTest, DiscordContentIsBoundedAndMentionsNobody) {
  Transition t = Firing();
  t.annotations["summary"] = "@everyone " + std::string(3000, 'x');
  json p = Build(ReceiverFormat::kDiscord, t);
  EXPECT_LE(p["content"].get<std::string>().size(), 2000u);
  EXPECT_EQ(p["allowed_mentions"]["parse"], json::array());
}

// Alertmanager's API v2 (api/v2/openapi.yaml, postableAlerts): an array of {labels,
// annotations, startsAt, endsAt, generatorURL}.
TEST(NotifyTest, AlertmanagerApiIsAPostableAlertsArray) {
  json firing = Build(ReceiverFormat::kAlertmanagerApi, Firing());
  ASSERT_TRUE(firing.is_array());
  ASSERT_EQ(firing.size(), 1u);
  EXPECT_EQ(firing[0]["labels"]["alertname"], "GpuTooHot");
  EXPECT_EQ(firing[0]["labels"]["hostname"], "gpu-host-1");
  EXPECT_EQ(firing[0]["startsAt"], "2026-11-30T05:45:00.250Z");
  EXPECT_GT(firing[0]["endsAt"].get<std::string>(), firing[0]["startsAt"].get<std::string>());
  EXPECT_EQ(firing[0]["generatorURL"], "http://127.0.0.1:9400/v1/alerts");
  json resolved = Build(ReceiverFormat::kAlertmanagerApi, Resolved());
  EXPECT_EQ(resolved[0]["endsAt"], "2026-11-30T05:50:00.000Z");
}

TEST(NotifyTest, UnknownFormatNamesTheNearestValidOne) {
  auto parsed = ParseReceiverFormat("pagerdty");
  ASSERT_FALSE(parsed.ok());
  EXPECT_THAT(parsed.status().message(), HasSubstr("pagerduty"));
  EXPECT_THAT(parsed.status().message(), HasSubstr("alertmanager-api"));
  ASSERT_NE(parsed.status().detail(), nullptr);
  EXPECT_EQ(parsed.status().detail()->nearest.front(), "pagerduty");
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
