// Send-time signing and vendor answers, checked the way each vendor checks them
// (support/vendor_signatures.h has the Feishu and DingTalk recipes with their sources).
// Vendors' error answers: Feishu HTTP 200 {"code": 19021, "msg": "sign match fail or timestamp
// is not within one hour from current time"}; DingTalk HTTP 200 {"errcode": 310000, "errmsg":
// "sign not match"}; WeCom group robot (developer.work.weixin.qq.com/document/path/91770) HTTP
// 200 {"errcode": 93000, "errmsg": "invalid webhook url"}; errcode/code 0 on success.
#include "alert/notify_send.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <ctime>
#include <nlohmann/json.hpp>

#include "support/vendor_signatures.h"

namespace fulcrum::alert {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Optional;

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

using fulcrum::testing::DingTalkAccepts;
using fulcrum::testing::FeishuAccepts;

bool DingTalkUrlAccepted(const std::string& url, const std::string& secret, double now) {
  return DingTalkAccepts(QueryValue(url, "timestamp"), UrlDecode(QueryValue(url, "sign")), secret,
                         now);
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
  EXPECT_TRUE(FeishuAccepts(send->body, "feishu-secret", kNow)) << body;
  EXPECT_FALSE(FeishuAccepts(send->body, "another-secret", kNow));
  EXPECT_EQ(body["msg_type"], "text");
  EXPECT_EQ(body["content"]["text"], "[FIRING] x");
  EXPECT_EQ(send->url, "https://open.feishu.cn/open-apis/bot/v2/hook/T");
}

TEST(NotifySendTest, DingTalkUrlIsSignedAsDingTalkVerifiesIt) {
  const std::string url = "https://oapi.dingtalk.com/robot/send?access_token=TOKEN";
  auto send = PrepareSend(Bot(ReceiverFormat::kDingTalk, url, "SECabc+/="), "{}", kNow);
  ASSERT_TRUE(send.ok());
  EXPECT_EQ(send->url.rfind(url + "&timestamp=1796017200250&sign=", 0), 0u) << send->url;
  EXPECT_TRUE(DingTalkUrlAccepted(send->url, "SECabc+/=", kNow)) << send->url;
  EXPECT_FALSE(DingTalkUrlAccepted(send->url, "SECother", kNow));
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
