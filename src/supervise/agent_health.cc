#include "supervise/agent_health.h"

#include <httplib.h>

#include <nlohmann/json.hpp>

namespace fulcrum::supervise {

Result<std::vector<AgentGpuHealth>> GpuHealthFromAgent(const std::string& agent_url,
                                                       double timeout_seconds) {
  if (agent_url.empty() || agent_url == "none") return Status::Unavailable("no agent");
  httplib::Client client(agent_url);
  const auto usec = static_cast<time_t>(timeout_seconds * 1e6);
  client.set_connection_timeout(usec / 1000000, usec % 1000000);
  client.set_read_timeout(usec / 1000000, usec % 1000000);
  auto res = client.Get("/v1/gpus");
  if (!res) return Status::Unavailable(agent_url + "/v1/gpus: no answer");
  if (res->status != 200)
    return Status::Unavailable(agent_url + "/v1/gpus: HTTP " + std::to_string(res->status));
  auto body = nlohmann::json::parse(res->body, nullptr, false);
  if (!body.is_object() || !body.contains("gpus") || !body["gpus"].is_array())
    return Status::Unavailable(agent_url + "/v1/gpus: expected {\"gpus\": [...]}");
  std::vector<AgentGpuHealth> gpus;
  for (const auto& gpu : body["gpus"]) {
    if (!gpu.is_object() || !gpu.contains("index") || !gpu["index"].is_number_integer()) continue;
    AgentGpuHealth health;
    health.index = gpu["index"].get<int>();
    if (gpu.contains("last_xid") && gpu["last_xid"].is_number_integer())
      health.last_xid = gpu["last_xid"].get<int>();
    if (gpu.contains("ecc_uncorrected") && gpu["ecc_uncorrected"].is_number())
      health.ecc_uncorrected = gpu["ecc_uncorrected"].get<double>();
    gpus.push_back(health);
  }
  return gpus;
}

std::vector<int> UnhealthyGpusFromAgent(const std::string& agent_url, double timeout_seconds) {
  std::vector<int> bad;
  auto gpus = GpuHealthFromAgent(agent_url, timeout_seconds);
  if (!gpus.ok()) return bad;
  for (const auto& gpu : *gpus) {
    if (gpu.last_xid == kXidFallenOffTheBus) bad.push_back(gpu.index);
  }
  return bad;
}

}  // namespace fulcrum::supervise
