#include "support/vendor_signatures.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <cmath>
#include <nlohmann/json.hpp>

namespace fulcrum::testing {

std::string VendorHmacSha256Base64(const std::string& key, const std::string& message) {
  unsigned char digest[32];
  unsigned int length = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(message.data()), message.size(), digest, &length);
  unsigned char encoded[64];
  int n = EVP_EncodeBlock(encoded, digest, static_cast<int>(length));
  return std::string(reinterpret_cast<char*>(encoded), static_cast<size_t>(n));
}

bool FeishuAccepts(const std::string& body, const std::string& secret, double now) {
  nlohmann::json doc = nlohmann::json::parse(body, nullptr, false);
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("timestamp") ||
      !doc.contains("sign") || !doc["timestamp"].is_string() || !doc["sign"].is_string()) {
    return false;
  }
  const std::string timestamp = doc["timestamp"].get<std::string>();
  if (timestamp.empty() || std::fabs(std::stod(timestamp) - now) > 3600) return false;
  return doc["sign"] == VendorHmacSha256Base64(timestamp + "\n" + secret, "");
}

bool DingTalkAccepts(const std::string& timestamp, const std::string& sign,
                     const std::string& secret, double now) {
  if (timestamp.empty() || std::fabs(std::stod(timestamp) / 1000 - now) > 3600) return false;
  return sign == VendorHmacSha256Base64(secret, timestamp + "\n" + secret);
}

}  // namespace fulcrum::testing
