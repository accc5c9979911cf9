#include "supervise/agent_health.h"

#include <httplib.h>

#include <algorithm>

#include <nlohmann/json.hpp>

namespace fulcrum::supervise {

namespace {

// The "gpus" array of GET <agent_url>/v1/gpus.
Result<nlohmann::json> AgentGpusJson(const std::string& agent_url, double timeout_seconds) {
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
  return body["gpus"];
}

}  // namespace

Result<std::vector<AgentGpuHealth>> GpuHealthFromAgent(const std::string& agent_url,
                                                       double timeout_seconds) {
  FULCRUM_ASSIGN_OR_RETURN(nlohmann::json body, AgentGpusJson(agent_url, timeout_seconds));
  std::vector<AgentGpuHealth> gpus;
  for (const auto& gpu : body) {
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

Result<std::vector<telemetry::GpuSample>> GpuSamplesFromAgent(const std::string& agent_url,
                                                              double timeout_seconds) {
  FULCRUM_ASSIGN_OR_RETURN(nlohmann::json body, AgentGpusJson(agent_url, timeout_seconds));
  std::vector<telemetry::GpuSample> out;
  for (const auto& gpu : body) {
    auto sample = telemetry::SampleFromJson(gpu);
    if (sample.ok()) out.push_back(std::move(*sample));
  }
  return out;
}

JobGpuFigures JobFiguresFromSamples(const std::vector<telemetry::GpuSample>& gpus,
                                    const std::vector<int64_t>& pids) {
  JobGpuFigures out;
  const auto ours = [&](int64_t pid) {
    return std::find(pids.begin(), pids.end(), pid) != pids.end();
  };
  std::vector<std::string> why;
  bool any_unknown = false, shared = false;
  int used = 0;
  double util_sum = 0, power_sum = 0;
  bool util_known = true, power_known = true;
  for (const telemetry::GpuSample& g : gpus) {
    if (!g.processes) {
      any_unknown = true;
      continue;
    }
    double bytes = 0;
    bool bytes_known = true, uses = false, others = false;
    for (const telemetry::GpuProcess& p : *g.processes) {
      if (!ours(p.pid)) {
        others = true;
        continue;
      }
      uses = true;
      if (p.used_memory_bytes) {
        bytes += *p.used_memory_bytes;
      } else {
        bytes_known = false;
      }
    }
    if (!uses) continue;
    ++used;
    if (bytes_known) out.peak_bytes_per_gpu = std::max(out.peak_bytes_per_gpu.value_or(0), bytes);
    if (others && !shared) {
      shared = true;
      why.push_back("GPU " + std::to_string(g.index) +
                    " also runs another process: utilisation and power are not the job's alone");
    }
    util_known = util_known && g.utilization_gpu_pct.has_value();
    power_known = power_known && g.power_watts.has_value();
    util_sum += g.utilization_gpu_pct.value_or(0);
    power_sum += g.power_watts.value_or(0);
  }
  if (used == 0) {
    why.insert(why.begin(), any_unknown ? "the agent has no per-process data (NVML processes "
                                          "unsupported on this source)"
                                        : "no GPU process of the agent is the job's (a pid of "
                                          "another PID namespace, or no GPU work yet)");
  } else {
    if (!shared && util_known) out.gpu_utilization_pct = util_sum / used;
    if (!shared && power_known) out.power_watts = power_sum;
    if (!shared && (!util_known || !power_known)) {
      why.push_back("the agent reads no utilisation or power for the job's GPUs");
    }
    if (!out.peak_bytes_per_gpu) why.push_back("the agent reads no memory for the job's pids");
  }
  for (const std::string& w : why) out.reason += (out.reason.empty() ? "" : "; ") + w;
  return out;
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
