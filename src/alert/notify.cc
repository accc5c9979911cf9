#include "alert/notify.h"

#include <cmath>
#include <cstdio>
#include <ctime>
#include <nlohmann/json.hpp>

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

}  // namespace

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
  }
  return "?";
}

Result<ReceiverFormat> ParseReceiverFormat(std::string_view text) {
  for (ReceiverFormat format :
       {ReceiverFormat::kGeneric, ReceiverFormat::kAlertmanager, ReceiverFormat::kSlack,
        ReceiverFormat::kFeishu, ReceiverFormat::kDingTalk, ReceiverFormat::kWeCom}) {
    if (ToString(format) == text) return format;
  }
  return Status::InvalidInput(
      "receiver format: expected one of generic, alertmanager, slack, feishu, dingtalk, wecom, "
      "found '" +
      std::string(text) + "'");
}

std::string BuildPayload(ReceiverFormat format, const Transition& transition,
                         const NotifyContext& context, std::string_view receiver_name) {
  switch (format) {
    case ReceiverFormat::kGeneric:
      return GenericPayload(transition, context, receiver_name).dump();
    case ReceiverFormat::kAlertmanager:
      return AlertmanagerPayload(transition, context, receiver_name).dump();
    case ReceiverFormat::kSlack:  // Slack incoming webhook: {"text": ...}
      return json{{"text", SummaryLine(transition, context)}}.dump();
    case ReceiverFormat::kFeishu:  // Feishu custom bot text message
      return json{{"msg_type", "text"}, {"content", {{"text", SummaryLine(transition, context)}}}}
          .dump();
    case ReceiverFormat::kDingTalk:  // DingTalk custom robot and WeCom group robot: same shape
    case ReceiverFormat::kWeCom:
      return json{{"msgtype", "text"}, {"text", {{"content", SummaryLine(transition, context)}}}}
          .dump();
  }
  return "{}";
}

std::string IdempotencyKey(const Transition& transition) {
  long long started_ms = std::llround(transition.started_at * 1000);
  return transition.fingerprint + "-" + std::to_string(started_ms) + "-" + StatusWord(transition);
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
