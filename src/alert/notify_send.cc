#include "alert/notify_send.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <cctype>
#include <cmath>
#include <nlohmann/json.hpp>
#include <vector>

namespace fulcrum::alert {
namespace {

using nlohmann::json;

constexpr size_t kMaxVendorMessageBytes = 300;
// PagerDuty's endpoint path and Alertmanager's (api/v2/openapi.yaml: basePath /api/v2).
constexpr std::string_view kAlertmanagerAlertsPath = "/api/v2/alerts";

// Percent-encoding of everything but RFC 3986 unreserved characters.
std::string UrlEncode(std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (char ch : text) {
    auto c = static_cast<unsigned char>(ch);
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += ch;
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 0x0f];
    }
  }
  return out;
}

// `url` with `path` appended to its path unless the path already ends with it; the query and
// fragment stay after it ("http://am:9093" -> "http://am:9093/api/v2/alerts").
std::string WithPath(const std::string& url, std::string_view path) {
  size_t scheme = url.find("://");
  size_t authority_end = url.find_first_of("/?#", scheme == std::string::npos ? 0 : scheme + 3);
  if (authority_end == std::string::npos) authority_end = url.size();
  size_t path_end = url.find_first_of("?#", authority_end);
  if (path_end == std::string::npos) path_end = url.size();
  std::string head = url.substr(0, path_end);
  if (head.ends_with(path)) return url;
  while (head.size() > authority_end && head.back() == '/') head.pop_back();
  head.append(path);
  head.append(url, path_end, std::string::npos);
  return head;
}

Result<json> ParseBody(std::string_view body) {
  json doc = json::parse(body, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) {
    return Status::Internal("stored notification body is not a JSON object");
  }
  return doc;
}

std::string Cut(std::string text) {
  if (text.size() > kMaxVendorMessageBytes) text.resize(kMaxVendorMessageBytes);
  return text;
}

// `doc[code_key]` as a number when it is a non-zero integer code, else nullopt.
std::optional<long long> NonZeroCode(const json& doc, const char* code_key) {
  auto it = doc.find(code_key);
  if (it == doc.end() || !it->is_number_integer()) return std::nullopt;
  long long code = it->get<long long>();
  return code == 0 ? std::nullopt : std::optional<long long>(code);
}

std::string TextOf(const json& doc, const char* key) {
  auto it = doc.find(key);
  if (it == doc.end()) return "";
  return it->is_string() ? it->get<std::string>() : it->dump();
}

}  // namespace

std::string HmacSha256Base64(std::string_view key, std::string_view message) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(message.data()), message.size(), digest, &length);
  std::vector<unsigned char> encoded(4 * ((length + 2) / 3) + 1);
  int written = EVP_EncodeBlock(encoded.data(), digest, static_cast<int>(length));
  return std::string(reinterpret_cast<const char*>(encoded.data()), static_cast<size_t>(written));
}

std::string FeishuSign(const std::string& timestamp, const std::string& secret) {
  return HmacSha256Base64(timestamp + "\n" + secret, "");
}

std::string DingTalkSign(const std::string& timestamp, const std::string& secret) {
  return HmacSha256Base64(secret, timestamp + "\n" + secret);
}

Result<PreparedSend> PrepareSend(const Receiver& receiver, std::string_view body, double now_unix) {
  PreparedSend send{receiver.url, std::string(body)};
  switch (receiver.format) {
    case ReceiverFormat::kFeishu: {
      if (receiver.secret.empty()) break;
      FULCRUM_ASSIGN_OR_RETURN(json doc, ParseBody(body));
      const std::string timestamp = std::to_string(std::llround(std::floor(now_unix)));
      doc["timestamp"] = timestamp;
      doc["sign"] = FeishuSign(timestamp, receiver.secret);
      send.body = doc.dump();
      break;
    }
    case ReceiverFormat::kDingTalk: {
      if (receiver.secret.empty()) break;
      const std::string timestamp = std::to_string(std::llround(std::floor(now_unix * 1000)));
      size_t fragment = send.url.find('#');
      std::string base = send.url.substr(0, fragment);
      base += base.find('?') == std::string::npos ? '?' : '&';
      base +=
          "timestamp=" + timestamp + "&sign=" + UrlEncode(DingTalkSign(timestamp, receiver.secret));
      send.url = base;
      break;
    }
    case ReceiverFormat::kPagerDuty: {
      FULCRUM_ASSIGN_OR_RETURN(json doc, ParseBody(body));
      doc["routing_key"] = receiver.routing_key;
      send.body = doc.dump();
      break;
    }
    case ReceiverFormat::kAlertmanagerApi:
      send.url = WithPath(send.url, kAlertmanagerAlertsPath);
      break;
    default:
      break;
  }
  return send;
}

std::optional<std::string> VendorError(ReceiverFormat format, std::string_view body) {
  if (format != ReceiverFormat::kFeishu && format != ReceiverFormat::kDingTalk &&
      format != ReceiverFormat::kWeCom) {
    return std::nullopt;
  }
  json doc = json::parse(body, nullptr, false);
  const std::string vendor(ToString(format));
  if (doc.is_discarded() || !doc.is_object()) return std::nullopt;  // no code to read
  if (format == ReceiverFormat::kFeishu) {
    if (auto code = NonZeroCode(doc, "code")) {
      return Cut(vendor + " code " + std::to_string(*code) + ": " + TextOf(doc, "msg"));
    }
    if (auto code = NonZeroCode(doc, "StatusCode")) {
      return Cut(vendor + " StatusCode " + std::to_string(*code) + ": " +
                 TextOf(doc, "StatusMessage"));
    }
    return std::nullopt;
  }
  if (auto code = NonZeroCode(doc, "errcode")) {
    return Cut(vendor + " errcode " + std::to_string(*code) + ": " + TextOf(doc, "errmsg"));
  }
  return std::nullopt;
}

}  // namespace fulcrum::alert
