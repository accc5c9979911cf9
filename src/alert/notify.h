// Notification payloads for alert transitions: generic JSON, Alertmanager webhook v4, Slack,
// Feishu, DingTalk, WeCom, PagerDuty Events v2, Microsoft Teams, Discord and Alertmanager's own
// API (/api/v2/alerts), for firing and resolved alike. A Receiver names where a format goes; its
// URL, token, signing secret and routing key are secrets (never logged, see RedactUrl; never in
// the stored body: alert/notify_send.h adds them when the request is sent). Bodies are returned
// as JSON text so this header stays light. Pure functions, thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "alert/evaluator.h"
#include "alert/outbox_memory.h"
#include "core/status.h"

namespace fulcrum::alert {

enum class ReceiverFormat {
  kGeneric,
  kAlertmanager,
  kSlack,
  kFeishu,
  kDingTalk,
  kWeCom,
  kPagerDuty,
  kTeams,
  kDiscord,
  kAlertmanagerApi,
};

// "generic", "alertmanager", "slack", "feishu", "dingtalk", "wecom", "pagerduty", "teams",
// "discord", "alertmanager-api".
std::string_view ToString(ReceiverFormat format);
const std::vector<ReceiverFormat>& AllReceiverFormats();
// Errors list the valid names and the nearest one.
Result<ReceiverFormat> ParseReceiverFormat(std::string_view text);

struct Receiver {
  std::string name;  // stable id used in the outbox ("default" for --receiver URL)
  std::string url;   // SECRET: may embed tokens (Slack path, DingTalk access_token)
  ReceiverFormat format = ReceiverFormat::kGeneric;
  std::string bearer_token;   // SECRET: sent as "Authorization: Bearer ..." when not empty
  std::string secret{};       // SECRET: Feishu/DingTalk signing secret ("" = unsigned bot)
  std::string routing_key{};  // SECRET: PagerDuty Events v2 integration key
};

// Context shared by all payloads of one agent.
struct NotifyContext {
  std::string hostname;
  std::string external_url;  // the agent's base URL, e.g. "http://127.0.0.1:9400"
};

// The request body for one transition in `format`. Generic: {"version": "1", "status",
// "alert": {name, status, severity, gpu, hostname, value, threshold, started_at, fired_at,
// resolved_at, labels, annotations, fingerprint}}. Alertmanager: the webhook v4 object with one
// alert (see the calibration README). Chat formats: their text-message objects with a one-line
// summary ("[FIRING] GpuTooHot on host gpu 0: ..."; Slack's with &, <, > escaped). PagerDuty:
// an Events v2 trigger or resolve (dedup_key = DedupKey) without its routing_key. Teams: a
// message with one Adaptive Card. Discord: {content, allowed_mentions: none}. Alertmanager API:
// the postable-alerts array of /api/v2/alerts with one alert.
std::string BuildPayload(ReceiverFormat format, const Transition& transition,
                         const NotifyContext& context, std::string_view receiver_name);

// Idempotency key of a transition's notification: "<fingerprint>-<started_at>-<status>" with
// started_at in whole milliseconds, so a re-emitted transition (after a restart) keeps its key.
std::string IdempotencyKey(const Transition& transition);
// The key shared by an alert's firing and resolved notifications ("<fingerprint>-<started_ms>"):
// PagerDuty's dedup_key, so a resolve closes the incident its trigger opened.
std::string DedupKey(const Transition& transition);

// Slack's control characters as its docs require (&amp;, &lt;, &gt;), nothing else.
std::string SlackEscape(std::string_view text);

// One outbox entry per receiver for a notifying transition (empty when !Notifies()). Entry id
// = IdempotencyKey + ":" + receiver name; order_key = the transition's fingerprint.
std::vector<Notification> MakeNotifications(const Transition& transition,
                                            const std::vector<Receiver>& receivers,
                                            const NotifyContext& context, double now_unix);

// "https://hooks.slack.com/<redacted>": scheme and host[:port] only, for logs.
std::string RedactUrl(std::string_view url);

}  // namespace fulcrum::alert
