#include "alert/notify.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <nlohmann/json.hpp>

#include "core/html.h"
#include "core/input_error.h"

namespace fulcrum::alert {
namespace {

using nlohmann::json;

// RFC 3339 UTC with milliseconds, as Alertmanager writes times ("2026-11-30T05:40:00.123Z").
std::string Rfc3339(double unix_seconds) {
  double whole = std::floor(unix_seconds);
  int millis = static_cast<int>(std::lround((unix_seconds - whole) * 1000));
  if (millis == 1000) {
    whole += 1;
    millis = 0;
  }
  std::time_t t = static_cast<std::time_t>(whole);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buffer[96];
  std::snprintf(buffer, sizeof(buffer), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, millis);
  return buffer;
}

// Alertmanager's zero time for "no end yet" (Go's time.Time{} in RFC 3339).
constexpr const char* kZeroTime = "0001-01-01T00:00:00Z";

std::string StatusWord(const Transition& t) {
  return t.to == AlertStatus::kResolved ? "resolved" : "firing";
}

json OptionalTime(double unix_seconds) {
  return unix_seconds > 0 ? json(unix_seconds) : json(nullptr);
}

std::map<std::string, std::string> LabelsWithHost(const Transition& t, const NotifyContext& c) {
  std::map<std::string, std::string> labels = t.labels;
  if (!c.hostname.empty() && labels.count("hostname") == 0) labels["hostname"] = c.hostname;
  return labels;
}

// "[FIRING] GpuTooHot on host-a gpu 0 (critical): GPU 0 at 95 C (> 85 C for 5m)".
std::string SummaryLine(const Transition& t, const NotifyContext& c) {
  std::string line = t.to == AlertStatus::kResolved ? "[RESOLVED] " : "[FIRING] ";
  line += t.rule_name;
  if (!c.hostname.empty()) line += " on " + c.hostname;
  if (t.gpu >= 0) line += " gpu " + std::to_string(t.gpu);
  line += " (" + t.severity + ")";
  auto summary = t.annotations.find("summary");
  char numbers[96];
  std::snprintf(numbers, sizeof(numbers), "value %g, threshold %g", t.value, t.threshold);
  if (summary != t.annotations.end()) {
    line += ": " + summary->second;
    if (t.to == AlertStatus::kResolved) line += std::string(" - resolved, now ") + numbers;
  } else {
    line += std::string(": ") + numbers;
  }
  return line;
}

json GenericPayload(const Transition& t, const NotifyContext& c, std::string_view receiver) {
  json alert = {
      {"name", t.rule_name},
      {"status", StatusWord(t)},
      {"severity", t.severity},
      {"gpu", t.gpu >= 0 ? json(t.gpu) : json(nullptr)},
      {"hostname", c.hostname},
      {"value", t.value},
      {"threshold", t.threshold},
      {"started_at", t.started_at},
      {"fired_at", OptionalTime(t.fired_at)},
      {"resolved_at", OptionalTime(t.resolved_at)},
      {"labels", LabelsWithHost(t, c)},
      {"annotations", t.annotations},
      {"fingerprint", t.fingerprint},
  };
  return {{"version", "1"},
          {"status", StatusWord(t)},
          {"receiver", std::string(receiver)},
          {"summary", SummaryLine(t, c)},
          {"alert", std::move(alert)}};
}

// Alertmanager webhook payload, version 4 (prometheus/alertmanager notify/webhook: Message).
json AlertmanagerPayload(const Transition& t, const NotifyContext& c, std::string_view receiver) {
  const auto labels = LabelsWithHost(t, c);
  const double starts_at = t.fired_at > 0 ? t.fired_at : t.started_at;
  json alert = {
      {"status", StatusWord(t)},
      {"labels", labels},
      {"annotations", t.annotations},
      {"startsAt", Rfc3339(starts_at)},
      {"endsAt", t.to == AlertStatus::kResolved ? Rfc3339(t.resolved_at) : kZeroTime},
      {"generatorURL", c.external_url.empty() ? "" : c.external_url + "/v1/alerts"},
      {"fingerprint", t.fingerprint},
  };
  json group_labels = {{"alertname", t.rule_name}};
  return {{"version", "4"},
          {"groupKey", "{}:{alertname=\"" + t.rule_name + "\"}"},
          {"truncatedAlerts", 0},
          {"status", StatusWord(t)},
          {"receiver", std::string(receiver)},
          {"groupLabels", group_labels},
          {"commonLabels", labels},
          {"commonAnnotations", t.annotations},
          {"externalURL", c.external_url},
          {"alerts", json::array({alert})}};
}

// PagerDuty Events API v2 (developer.pagerduty.com/docs/events-API-v2/trigger-events, and
// .../resolve-events): a trigger carries payload {summary <= 1024 chars, source, severity in
// critical|error|warning|info, timestamp, component, group, class, custom_details}; a resolve
// only routing_key, event_action and dedup_key. routing_key is added at send time.
std::string PagerDutySeverity(const std::string& severity) {
  for (const char* known : {"critical", "error", "warning", "info"}) {
    if (severity == known) return severity;
  }
  return "error";  // a rule's own severity name PagerDuty does not know
}

json PagerDutyPayload(const Transition& t, const NotifyContext& c) {
  json event = {{"event_action", t.to == AlertStatus::kResolved ? "resolve" : "trigger"},
                {"dedup_key", DedupKey(t)}};
  if (t.to == AlertStatus::kResolved) return event;
  std::string summary = SummaryLine(t, c);
  if (summary.size() > 1024) summary.resize(1024);
  json details = {{"value", t.value},
                  {"threshold", t.threshold},
                  {"labels", LabelsWithHost(t, c)},
                  {"annotations", t.annotations}};
  json payload = {{"summary", summary},
                  {"source", c.hostname.empty() ? std::string("fulcrum") : c.hostname},
                  {"severity", PagerDutySeverity(t.severity)},
                  {"timestamp", Rfc3339(t.fired_at > 0 ? t.fired_at : t.started_at)},
                  {"class", t.rule_name},
                  {"custom_details", std::move(details)}};
  if (t.gpu >= 0) payload["component"] = "gpu " + std::to_string(t.gpu);
  if (!c.hostname.empty()) payload["group"] = c.hostname;
  event["payload"] = std::move(payload);
  event["client"] = "fulcrum";
  if (!c.external_url.empty()) event["client_url"] = c.external_url + "/";
  return event;
}

// Microsoft Teams incoming webhook / Workflows: a message with one Adaptive Card attachment
// (learn.microsoft.com/microsoftteams/platform/webhooks-and-connectors/how-to/
// connectors-using, "Send Adaptive Cards using an Incoming Webhook").
json TeamsPayload(const Transition& t, const NotifyContext& c) {
  json facts = json::array();
  for (const auto& [name, value] : LabelsWithHost(t, c)) {
    facts.push_back({{"title", name}, {"value", value}});
  }
  json card = {
      {"$schema", "http://adaptivecards.io/schemas/adaptive-card.json"},
      {"type", "AdaptiveCard"},
      {"version", "1.2"},
      {"body",
       {{{"type", "TextBlock"}, {"text", SummaryLine(t, c)}, {"wrap", true}, {"weight", "Bolder"}},
        {{"type", "FactSet"}, {"facts", std::move(facts)}}}}};
  return {{"type", "message"},
          {"attachments",
           {{{"contentType", "application/vnd.microsoft.card.adaptive"},
             {"contentUrl", nullptr},
             {"content", std::move(card)}}}}};
}

// Discord "Execute Webhook" (discord.com/developers/docs/resources/webhook#execute-webhook):
// content up to 2000 characters; allowed_mentions {parse: []} so that an annotation holding
// "@everyone" pings nobody.
json DiscordPayload(const Transition& t, const NotifyContext& c) {
  std::string content = SummaryLine(t, c);
  if (content.size() > 2000) content.resize(2000);
  return {{"content", content}, {"allowed_mentions", {{"parse", json::array()}}}};
}

// Alertmanager API v2 POST /api/v2/alerts (prometheus/alertmanager api/v2/openapi.yaml,
// postableAlerts): [{labels, annotations, startsAt, endsAt, generatorURL}]. A firing alert ends
// kFiringHorizonSeconds ahead unless resolved before (Alertmanager would otherwise resolve it
// after its resolve_timeout, 5 min by default, as no re-send keeps it alive); a resolved alert
// ends at its resolution.
constexpr double kFiringHorizonSeconds = 24 * 3600.0;

json AlertmanagerApiPayload(const Transition& t, const NotifyContext& c) {
  auto labels = LabelsWithHost(t, c);
  if (labels.count("alertname") == 0) labels["alertname"] = t.rule_name;
  const double starts_at = t.fired_at > 0 ? t.fired_at : t.started_at;
  const double ends_at = t.to == AlertStatus::kResolved
                             ? t.resolved_at
                             : std::max(t.at, starts_at) + kFiringHorizonSeconds;
  json alert = {{"labels", labels},
                {"annotations", t.annotations},
                {"startsAt", Rfc3339(starts_at)},
                {"endsAt", Rfc3339(ends_at)}};
  if (!c.external_url.empty()) alert["generatorURL"] = c.external_url + "/v1/alerts";
  return json::array({alert});
}

}  // namespace

std::string SlackEscape(std::string_view text) { return HtmlEscapeText(text); }

const std::vector<ReceiverFormat>& AllReceiverFormats() {
  static const std::vector<ReceiverFormat> kAll = {
      ReceiverFormat::kGeneric,        ReceiverFormat::kAlertmanager, ReceiverFormat::kSlack,
      ReceiverFormat::kFeishu,         ReceiverFormat::kDingTalk,     ReceiverFormat::kWeCom,
      ReceiverFormat::kPagerDuty,      ReceiverFormat::kTeams,        ReceiverFormat::kDiscord,
      ReceiverFormat::kAlertmanagerApi};
  return kAll;
}

std::string_view ToString(ReceiverFormat format) {
  switch (format) {
    case ReceiverFormat::kGeneric:
      return "generic";
    case ReceiverFormat::kAlertmanager:
      return "alertmanager";
    case ReceiverFormat::kSlack:
      return "slack";
    case ReceiverFormat::kFeishu:
      return "feishu";
    case ReceiverFormat::kDingTalk:
      return "dingtalk";
    case ReceiverFormat::kWeCom:
      return "wecom";
    case ReceiverFormat::kPagerDuty:
      return "pagerduty";
    case ReceiverFormat::kTeams:
      return "teams";
    case ReceiverFormat::kDiscord:
      return "discord";
    case ReceiverFormat::kAlertmanagerApi:
      return "alertmanager-api";
  }
  return "?";
}

Result<ReceiverFormat> ParseReceiverFormat(std::string_view text) {
  std::vector<std::string> names;
  for (ReceiverFormat format : AllReceiverFormats()) {
    if (ToString(format) == text) return format;
    names.emplace_back(ToString(format));
  }
  ErrorDetail detail;
  detail.field = "format";
  detail.expected = "one of " + JoinNames(names);
  detail.found = std::string(text);
  detail.nearest = NearestNames(text, names);
  return InputError(std::move(detail));
}

std::string BuildPayload(ReceiverFormat format, const Transition& transition,
                         const NotifyContext& context, std::string_view receiver_name) {
  switch (format) {
    case ReceiverFormat::kGeneric:
      return GenericPayload(transition, context, receiver_name).dump();
    case ReceiverFormat::kAlertmanager:
      return AlertmanagerPayload(transition, context, receiver_name).dump();
    case ReceiverFormat::kSlack:  // Slack incoming webhook: {"text": ...}, escaped
      return json{{"text", SlackEscape(SummaryLine(transition, context))}}.dump();
    case ReceiverFormat::kFeishu:  // Feishu custom bot text message
      return json{{"msg_type", "text"}, {"content", {{"text", SummaryLine(transition, context)}}}}
          .dump();
    case ReceiverFormat::kDingTalk:  // DingTalk custom robot and WeCom group robot: same shape
    case ReceiverFormat::kWeCom:
      return json{{"msgtype", "text"}, {"text", {{"content", SummaryLine(transition, context)}}}}
          .dump();
    case ReceiverFormat::kPagerDuty:
      return PagerDutyPayload(transition, context).dump();
    case ReceiverFormat::kTeams:
      return TeamsPayload(transition, context).dump();
    case ReceiverFormat::kDiscord:
      return DiscordPayload(transition, context).dump();
    case ReceiverFormat::kAlertmanagerApi:
      return AlertmanagerApiPayload(transition, context).dump();
  }
  return "{}";
}

std::string DedupKey(const Transition& transition) {
  long long started_ms = std::llround(transition.started_at * 1000);
  return transition.fingerprint + "-" + std::to_string(started_ms);
}

std::string IdempotencyKey(const Transition& transition) {
  return DedupKey(transition) + "-" + StatusWord(transition);
}

std::vector<Notification> MakeNotifications(const Transition& transition,
                                            const std::vector<Receiver>& receivers,
                                            const NotifyContext& context, double now_unix) {
  std::vector<Notification> out;
  if (!Notifies(transition)) return out;
  const std::string key = IdempotencyKey(transition);
  for (const Receiver& receiver : receivers) {
    Notification n;
    n.id = key + ":" + receiver.name;
    n.receiver = receiver.name;
    n.format = std::string(ToString(receiver.format));
    n.body = BuildPayload(receiver.format, transition, context, receiver.name);
    // One alert series (rule and GPU) is delivered in order: a resolved never overtakes its
    // firing, nor a firing the previous resolved of the same series.
    n.order_key = transition.fingerprint;
    n.created_at = now_unix;
    n.next_attempt_at = now_unix;
    out.push_back(std::move(n));
  }
  return out;
}

std::string RedactUrl(std::string_view url) {
  size_t scheme_end = url.find("://");
  if (scheme_end == std::string_view::npos) return "<redacted>";
  size_t host_start = scheme_end + 3;
  size_t host_end = url.find_first_of("/?#", host_start);
  std::string_view authority =
      url.substr(host_start, host_end == std::string_view::npos ? url.npos : host_end - host_start);
  size_t at = authority.rfind('@');
  if (at != std::string_view::npos) authority.remove_prefix(at + 1);  // drop user:password@
  return std::string(url.substr(0, host_start)) + std::string(authority) + "/<redacted>";
}

}  // namespace fulcrum::alert
