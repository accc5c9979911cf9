#include "supervise/agent_health.h"

#include <httplib.h>

#include <nlohmann/json.hpp>

namespace fulcrum::supervise {

std::vector<int> UnhealthyGpusFromAgent(const std::string& agent_url, double timeout_seconds) {
  std::vector<int> bad;
  if (agent_url.empty() || agent_url == "none") return bad;
  httplib::Client client(agent_url);
  const auto usec = static_cast<time_t>(timeout_seconds * 1e6);
  client.set_connection_timeout(usec / 1000000, usec % 1000000);
  client.set_read_timeout(usec / 1000000, usec % 1000000);
  auto res = client.Get("/v1/gpus");
  if (!res || res->status != 200) return bad;
  auto body = nlohmann::json::parse(res->body, nullptr, false);
  if (!body.is_object() || !body.contains("gpus") || !body["gpus"].is_array()) return bad;
  constexpr int kXidFallenOffTheBus = 79;
  for (const auto& gpu : body["gpus"]) {
    if (!gpu.is_object() || !gpu.contains("index") || !gpu["index"].is_number_integer()) continue;
    const auto& xid = gpu.contains("last_xid") ? gpu["last_xid"] : nlohmann::json();
    if (xid.is_number_integer() && xid.get<int>() == kXidFallenOffTheBus) {
      bad.push_back(gpu["index"].get<int>());
    }
  }
  return bad;
}

}  // namespace fulcrum::supervise
