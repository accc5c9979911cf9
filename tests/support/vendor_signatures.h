// How Feishu/Lark and DingTalk bots verify a signed request, re-implemented from the vendors'
// documentation with OpenSSL directly (never through the code under test), for the tests that
// check fulcrum's signatures the way the vendor does:
// - Feishu custom bot, "Signature verification" (open.feishu.cn/document/client-docs/bot-v3/
//   add-custom-bot): sign = base64(HmacSHA256(key = timestamp + "\n" + secret, message = "")),
//   timestamp in seconds within 1 h of now; both in the JSON body.
// - DingTalk custom robot security settings, "加签" (open.dingtalk.com/document/robots/
//   customize-robot-security-settings): sign = urlEncode(base64(HmacSHA256(key = secret,
//   message = timestamp + "\n" + secret))), timestamp in milliseconds within 1 h; both on the URL.
// Pure functions, thread-safe.
#pragma once

#include <string>

namespace fulcrum::testing {

std::string VendorHmacSha256Base64(const std::string& key, const std::string& message);

// Feishu's check of a request body (JSON text) at unix time `now`.
bool FeishuAccepts(const std::string& body, const std::string& secret, double now);

// DingTalk's check of the `timestamp` and (URL-decoded) `sign` query values at unix time `now`.
bool DingTalkAccepts(const std::string& timestamp, const std::string& sign,
                     const std::string& secret, double now);

}  // namespace fulcrum::testing
