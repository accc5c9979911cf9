// Send-time signing and vendor answers, checked the way each vendor checks them:
// - Feishu custom bot, "Signature verification" (open.feishu.cn/document/client-docs/bot-v3/
//   add-custom-bot): string_to_sign = timestamp + "\n" + secret; sign = base64(HmacSHA256 with
//   string_to_sign as the key over an empty message); timestamp in seconds, within 1 h; both in
//   the JSON body. Error answer: HTTP 200 {"code": 19021, "msg": "sign match fail or timestamp
//   is not within one hour from current time"}.
// - DingTalk custom robot security settings, "加签" (open.dingtalk.com/document/robots/
//   customize-robot-security-settings): string_to_sign = timestamp + "\n" + secret;
//   sign = urlEncode(base64(HmacSHA256 with the secret as the key over string_to_sign));
//   timestamp in milliseconds, within 1 h; both appended to the webhook URL. Error answer:
//   HTTP 200 {"errcode": 310000, "errmsg": "sign not match"}.
// - WeCom group robot (developer.work.weixin.qq.com/document/path/91770): HTTP 200
//   {"errcode": 93000, "errmsg": "invalid webhook url"} on failure, errcode 0 on success.
// The vendors' verification is re-implemented here with OpenSSL's HMAC directly, not through
// the code under test.
#include "alert/notify_send.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <cmath>
#include <ctime>
#include <nlohmann/json.hpp>

namespace fulcrum::alert {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Optional;

std::string VendorHmacBase64(const std::string& key, const std::string& message) {
  unsigned char digest[32];
  unsigned int length = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(message.data()), message.size(), digest, &length);
  unsigned char encoded[64];
  int n = EVP_EncodeBlock(encoded, digest, static_cast<int>(length));
  return std::string(reinterpret_cast<char*>(encoded), static_cast<size_t>(n));
}

std::string UrlDecode(const std::string& text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size()) {
      out += static_cast<char>(std::stoi(text.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else {
      out += text[i] == '+' ? ' ' : text[i];
    }
  }
  return out;
}

std::string QueryValue(const std::string& url, const std::string& key) {
  size_t at = url.find("&" + key + "=");
  if (at == std::string::npos) at = url.find("?" + key + "=");
  if (at == std::string::npos) return "";
  size_t start = at + key.size() + 2;
  return url.substr(start, url.find('&', start) - start);
}

// Feishu's check of a signed body: the sign it recomputes, and the timestamp within an hour.
bool FeishuAccepts(const json& body, const std::string& secret, double now) {
  if (!body.contains("timestamp") || !body.contains("sign")) return false;
  const std::string timestamp = body["timestamp"].get<std::string>();
  if (std::fabs(std::stod(timestamp) - now) > 3600) return false;
  return body["sign"] == VendorHmacBase64(timestamp + "\n" + secret, "");
}

// DingTalk's check of a signed URL (timestamp in ms).
bool DingTalkAccepts(const std::string& url, const std::string& secret, double now) {
  const std::string timestamp = QueryValue(url, "timestamp");
  const std::string sign = UrlDecode(QueryValue(url, "sign"));
  if (timestamp.empty() || std::fabs(std::stod(timestamp) / 1000 - now) > 3600) return false;
  return sign == VendorHmacBase64(secret, timestamp + "\n" + secret);
}

Receiver Bot(ReceiverFormat format, const std::string& url, const std::string& secret = "") {
  Receiver r;
  r.name = "bot";
  r.url = url;
  r.format = format;
  r.secret = secret;
  return r;
}

constexpr double kNow = 1796017200.25;  // 2026-11-30T05:40:00.25Z

// Known answers from the vendors' own Python samples, run with these inputs:
//   base64.b64encode(hmac.new(f'{ts}\n{secret}'.encode(), b'', sha256).digest())        Feishu
//   quote_plus(base64.b64encode(hmac.new(secret.encode(), f'{ts}\n{secret}'.encode(),
//                                        sha256).digest()))                          DingTalk
TEST(NotifySendTest, SignaturesMatchTheVendorsSampleCode) {
  EXPECT_EQ(FeishuSign("1599360473", "demo-secret"),
            "3/MaVZ8JLIy4TUG+7KSFJqvUkTKd+HWY8g+56DZWq8s=");
  EXPECT_EQ(DingTalkSign("1599360473000", "SECdemo"),
            UrlDecode("tGWkA5eQOQNCNPDgphtxIoNLO%2B%2FgD8Lcb705KQoRzeY%3D"));
}

TEST(NotifySendTest, FeishuBodyIsSignedAsFeishuVerifiesIt) {
  const std::string stored = R"({"msg_type":"text","content":{"text":"[FIRING] x"}})";
  auto send = PrepareSend(Bot(ReceiverFormat::kFeishu,
                              "https://open.feishu.cn/open-apis/bot/v2/hook/T", "feishu-secret"),
                          stored, kNow);
  ASSERT_TRUE(send.ok()) << send.status().ToString();
  json body = json::parse(send->body);
  EXPECT_EQ(body["timestamp"], "1796017200");  // seconds, as a string (Feishu's sample)
  EXPECT_TRUE(FeishuAccepts(body, "feishu-secret", kNow)) << body;
  EXPECT_FALSE(FeishuAccepts(body, "another-secret", kNow));
  EXPECT_EQ(body["msg_type"], "text");
  EXPECT_EQ(body["content"]["text"], "[FIRING] x");
  EXPECT_EQ(send->url, "https://open.feishu.cn/open-apis/bot/v2/hook/T");
}

TEST(NotifySendTest, DingTalkUrlIsSignedAsDingTalkVerifiesIt) {
  const std::string url = "https://oapi.dingtalk.com/robot/send?access_token=TOKEN";
  auto send = PrepareSend(Bot(ReceiverFormat::kDingTalk, url, "SECabc+/="), "{}", kNow);
  ASSERT_TRUE(send.ok());
  EXPECT_EQ(send->url.rfind(url + "&timestamp=1796017200250&sign=", 0), 0u) << send->url;
  EXPECT_TRUE(DingTalkAccepts(send->url, "SECabc+/=", kNow)) << send->url;
  EXPECT_FALSE(DingTalkAccepts(send->url, "SECother", kNow));
  // The signature is URL-encoded: no raw '+', '/' or '=' after "sign=".
  const std::string sign = QueryValue(send->url, "sign");
  EXPECT_EQ(sign.find_first_of("+/="), std::string::npos) << sign;
  EXPECT_EQ(send->body, "{}");
}

TEST(NotifySendTest, WithoutASecretNothingIsAdded) {
  auto feishu = PrepareSend(Bot(ReceiverFormat::kFeishu, "https://f/hook"), R"({"a":1})", kNow);
  auto ding =
      PrepareSend(Bot(ReceiverFormat::kDingTalk, "https://d/send?access_token=T"), "{}", kNow);
  ASSERT_TRUE(feishu.ok() && ding.ok());
  EXPECT_EQ(feishu->body, R"({"a":1})");
  EXPECT_EQ(ding->url, "https://d/send?access_token=T");
}

TEST(NotifySendTest, PagerDutyRoutingKeyIsAddedAtSendTimeOnly) {
  Receiver pd = Bot(ReceiverFormat::kPagerDuty, "https://events.pagerduty.com/v2/enqueue");
  pd.routing_key = "R0UTINGKEY";
  auto send = PrepareSend(pd, R"({"event_action":"trigger","dedup_key":"k"})", kNow);
  ASSERT_TRUE(send.ok());
  json body = json::parse(send->body);
  EXPECT_EQ(body["routing_key"], "R0UTINGKEY");
  EXPECT_EQ(body["event_action"], "trigger");
}

TEST(NotifySendTest, AlertmanagerApiPathIsAddedWhenTheUrlNamesTheServerOnly) {
  auto url_for = [](const std::string& url) {
    return PrepareSend(Bot(ReceiverFormat::kAlertmanagerApi, url), "[]", kNow)->url;
  };
  EXPECT_EQ(url_for("http://127.0.0.1:9093"), "http://127.0.0.1:9093/api/v2/alerts");
  EXPECT_EQ(url_for("http://127.0.0.1:9093/"), "http://127.0.0.1:9093/api/v2/alerts");
  EXPECT_EQ(url_for("http://am/prefix/"), "http://am/prefix/api/v2/alerts");
  EXPECT_EQ(url_for("http://am:9093/api/v2/alerts"), "http://am:9093/api/v2/alerts");
  EXPECT_EQ(url_for("http://am:9093?x=1"), "http://am:9093/api/v2/alerts?x=1");
}

TEST(NotifySendTest, VendorErrorCodesInA200BodyAreFailuresWithTheVendorsMessage) {
  EXPECT_THAT(
      VendorError(
          ReceiverFormat::kFeishu,
          R"({"code":19021,"data":{},"msg":"sign match fail or timestamp is not within one hour from current time"})"),
      Optional(HasSubstr("feishu code 19021: sign match fail")));
  EXPECT_THAT(VendorError(ReceiverFormat::kFeishu,
                          R"({"Extra":null,"StatusCode":19001,"StatusMessage":"param invalid"})"),
              Optional(HasSubstr("19001: param invalid")));
  EXPECT_THAT(
      VendorError(ReceiverFormat::kDingTalk, R"({"errcode":310000,"errmsg":"sign not match"})"),
      Optional(HasSubstr("dingtalk errcode 310000: sign not match")));
  EXPECT_THAT(
      VendorError(ReceiverFormat::kWeCom, R"({"errcode":93000,"errmsg":"invalid webhook url"})"),
      Optional(HasSubstr("wecom errcode 93000: invalid webhook url")));
  // Success answers, and formats without body-level codes.
  EXPECT_EQ(VendorError(ReceiverFormat::kFeishu, R"({"code":0,"data":{},"msg":"success"})"),
            std::nullopt);
  EXPECT_EQ(VendorError(ReceiverFormat::kFeishu, R"({"StatusCode":0,"StatusMessage":"success"})"),
            std::nullopt);
  EXPECT_EQ(VendorError(ReceiverFormat::kDingTalk, R"({"errcode":0,"errmsg":"ok"})"), std::nullopt);
  EXPECT_EQ(VendorError(ReceiverFormat::kSlack, R"({"errcode":5})"), std::nullopt);
  EXPECT_EQ(VendorError(ReceiverFormat::kWeCom, "ok"), std::nullopt);
  // A long message is cut.
  std::string long_message(5000, 'x');
  auto cut =
      VendorError(ReceiverFormat::kWeCom, R"({"errcode":1,"errmsg":")" + long_message + "\"}");
  ASSERT_TRUE(cut);
  EXPECT_LE(cut->size(), 300u);
}

}  // namespace
}  // namespace fulcrum::alert
