#include "cluster/nccl_hang_drain.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>

#include <algorithm>
#include <cstdlib>

#include "cluster/slurm.h"
#include "core/parse.h"

namespace fulcrum::cluster {
namespace {

bool RankIsLocal(const telemetry::NcclRasRank& rank, const HangDrainOptions& o) {
  if (o.single_node) return true;
  return std::find(o.local_addresses.begin(), o.local_addresses.end(), rank.host) !=
         o.local_addresses.end();
}

}  // namespace

std::optional<HangXid> FindHangXid(const std::vector<telemetry::NcclLaggingRank>& stalled,
                                   const std::vector<supervise::AgentGpuHealth>& gpus,
                                   const std::vector<supervise::AgentGpuHealth>& baseline,
                                   const HangDrainOptions& options) {
  for (const telemetry::NcclLaggingRank& l : stalled) {
    const int gpu = l.rank.nvml_dev >= 0 ? l.rank.nvml_dev : l.rank.cuda_dev;
    if (gpu < 0 || !RankIsLocal(l.rank, options)) continue;
    for (const supervise::AgentGpuHealth& g : gpus) {
      if (g.index != gpu || !g.last_xid || *g.last_xid == 0) continue;
      const bool old = std::any_of(baseline.begin(), baseline.end(), [&](const auto& b) {
        return b.index == gpu && b.last_xid == g.last_xid;
      });
      if (old) continue;  // there before the run started: history, not this hang
      return HangXid{l.rank.rank, gpu, *g.last_xid};
    }
  }
  return std::nullopt;
}

std::string HangDrainReason(const HangXid& found) {
  std::string reason = "fulcrum: NCCL hang ";
  reason += found.rank >= 0 ? "rank " + std::to_string(found.rank) : std::string("process");
  reason.append(", XID ").append(std::to_string(found.xid));
  return reason;
}

HangEvidence MakeHangDrain(HangDrainOptions options) {
  if (!options.drain) options.drain = DrainNode;
  auto first = supervise::GpuHealthFromAgent(options.agent_url, options.timeout_seconds);
  std::vector<supervise::AgentGpuHealth> baseline = first.ok() ? *first : decltype(baseline){};
  return [options = std::move(options), baseline = std::move(baseline)](
             const std::vector<telemetry::NcclLaggingRank>& stalled) -> std::optional<std::string> {
    auto gpus = supervise::GpuHealthFromAgent(options.agent_url, options.timeout_seconds);
    if (!gpus.ok()) return std::nullopt;
    const std::optional<HangXid> found = FindHangXid(stalled, *gpus, baseline, options);
    if (!found) return std::nullopt;
    const std::string reason = HangDrainReason(*found);
    Status drained = options.drain(options.node, reason);
    std::string out = "node ";
    out.append(options.node).append(drained.ok() ? " drained (" : " not drained (");
    out.append(reason.substr(std::string_view("fulcrum: ").size()));
    out.append(" on GPU ").append(std::to_string(found->gpu)).append(")");
    if (!drained.ok()) out.append(": ").append(drained.message());
    return out;
  };
}

HangEvidence SlurmHangEvidence(const supervise::ResolvedRun& run) {
  const char* node = std::getenv("SLURMD_NODENAME");
  if (node == nullptr || *node == '\0' || run.agent_url.empty() || run.agent_url == "none")
    return {};
  HangDrainOptions o;
  o.agent_url = run.agent_url;
  o.node = node;
  const char* nodes_text = std::getenv("SLURM_JOB_NUM_NODES");
  const auto nodes = ParseInt(nodes_text != nullptr ? nodes_text : "1");
  o.single_node = !nodes.ok() || *nodes <= 1;
  if (!o.single_node) o.local_addresses = LocalAddresses();
  return MakeHangDrain(std::move(o));
}

std::vector<std::string> LocalAddresses() {
  std::vector<std::string> out;
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return out;
  for (ifaddrs* a = list; a != nullptr; a = a->ifa_next) {
    if (a->ifa_addr == nullptr) continue;
    char text[INET6_ADDRSTRLEN] = {};
    if (a->ifa_addr->sa_family == AF_INET) {
      ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(a->ifa_addr)->sin_addr, text,
                  sizeof text);
    } else if (a->ifa_addr->sa_family == AF_INET6) {
      ::inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(a->ifa_addr)->sin6_addr, text,
                  sizeof text);
    } else {
      continue;
    }
    out.emplace_back(text);
  }
  ::freeifaddrs(list);
  return out;
}

}  // namespace fulcrum::cluster
