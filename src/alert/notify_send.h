// What a receiver's vendor needs at send time, and how its answer is read. The stored body
// holds no secret (agent.db may be read by the team); PrepareSend adds, per format:
//   feishu + secret     "timestamp" (unix s) and "sign" in the JSON body: base64(HMAC-SHA256,
//                       key = timestamp + "\n" + secret, message empty) (open.feishu.cn,
//                       custom bot guide, "Signature verification");
//   dingtalk + secret   "&timestamp=<unix ms>&sign=<urlencode(base64(HMAC-SHA256, key = secret,
//                       message = timestamp + "\n" + secret))>" on the URL (open.dingtalk.com,
//                       custom robot security settings, "加签");
//   pagerduty           "routing_key" in the JSON body;
//   alertmanager-api    the path /api/v2/alerts when the URL names the Alertmanager only.
// VendorError reads the body-level error codes of the bots that answer HTTP 200 on failure:
// Feishu {"code": N, "msg"} (older: {"StatusCode": N, "StatusMessage"}), DingTalk and WeCom
// {"errcode": N, "errmsg"}; 0 is success. Pure functions, thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "alert/notify.h"

namespace fulcrum::alert {

struct PreparedSend {
  std::string url;   // SECRET (may now also carry a signature)
  std::string body;  // SECRET when it carries a routing key or signature
};

// `body` is the stored notification body; `now_unix` the send time (signatures expire: both
// vendors refuse a timestamp more than an hour off).
Result<PreparedSend> PrepareSend(const Receiver& receiver, std::string_view body, double now_unix);

// The vendor's message when a 2xx answer `body` reports a failure ("feishu code 19021: sign
// match fail or timestamp is not within one hour from current time"), nullopt when it reports
// success or the format has no body-level codes. The message is cut to 300 bytes.
std::optional<std::string> VendorError(ReceiverFormat format, std::string_view body);

// HMAC-SHA256 of `message` with `key`, base64 (RFC 4648, padded).
std::string HmacSha256Base64(std::string_view key, std::string_view message);

// Feishu's and DingTalk's signatures of `timestamp` (as sent) with `secret`.
std::string FeishuSign(const std::string& timestamp, const std::string& secret);
std::string DingTalkSign(const std::string& timestamp,
                         const std::string& secret);  // not URL-encoded

}  // namespace fulcrum::alert
