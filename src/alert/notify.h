// Notification payloads for alert transitions: generic JSON, Alertmanager webhook v4, Slack,
// Feishu, DingTalk and WeCom, for firing and resolved alike. A Receiver names where a format
// goes; its URL and token are secrets (never logged, see RedactUrl). Bodies are returned as
// JSON text so this header stays light. Pure functions, thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "alert/evaluator.h"
#include "alert/outbox.h"
#include "core/status.h"

namespace fulcrum::alert {

enum class ReceiverFormat { kGeneric, kAlertmanager, kSlack, kFeishu, kDingTalk, kWeCom };

std::string_view ToString(ReceiverFormat format);  // "generic", "alertmanager", "slack", ...
Result<ReceiverFormat> ParseReceiverFormat(std::string_view text);

struct Receiver {
  std::string name;  // stable id used in the outbox ("default" for --receiver URL)
  std::string url;   // SECRET: may embed tokens (Slack path, DingTalk access_token)
  ReceiverFormat format = ReceiverFormat::kGeneric;
  std::string bearer_token;  // SECRET: sent as "Authorization: Bearer ..." when not empty
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
// summary ("[FIRING] GpuTooHot on host gpu 0: ...").
std::string BuildPayload(ReceiverFormat format, const Transition& transition,
                         const NotifyContext& context, std::string_view receiver_name);

// Idempotency key of a transition's notification: "<fingerprint>-<started_at>-<status>" with
// started_at in whole milliseconds, so a re-emitted transition (after a restart) keeps its key.
std::string IdempotencyKey(const Transition& transition);

// One outbox entry per receiver for a notifying transition (empty when !Notifies()). Entry id
// = IdempotencyKey + ":" + receiver name.
std::vector<Notification> MakeNotifications(const Transition& transition,
                                            const std::vector<Receiver>& receivers,
                                            const NotifyContext& context, double now_unix);

// "https://hooks.slack.com/<redacted>": scheme and host[:port] only, for logs.
std::string RedactUrl(std::string_view url);

}  // namespace fulcrum::alert
