#include "nodecheck/topology.h"

#include <algorithm>
#include <set>
#include <sstream>

#include "core/input_error.h"
#include "core/parse.h"
#include "core/subprocess.h"
#include "core/text_file.h"

namespace fulcrum::nodecheck {
namespace {

// NCCL's environment variables: NCCL_P2P_DISABLE (no peer-to-peer transport: NVLink or PCIe
// between GPUs), NCCL_P2P_LEVEL (the farthest path P2P is used over: PIX, PXB, PHB, SYS, NVL),
// NCCL_IB_DISABLE (no InfiniBand/RoCE: IP sockets between nodes), NCCL_SOCKET_IFNAME.
constexpr const char* kNcclEnvDoc =
    "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html";

std::vector<std::string> Tokens(const std::string& line) {
  std::vector<std::string> tokens;
  std::istringstream in(line);
  std::string token;
  while (in >> token) tokens.push_back(token);
  return tokens;
}

std::optional<int> GpuIndex(const std::string& name) {
  if (name.size() < 4 || name.rfind("GPU", 0) != 0) return std::nullopt;
  auto index = ParseInt(std::string_view(name).substr(3));
  if (!index.ok() || *index < 0) return std::nullopt;
  return static_cast<int>(*index);
}

struct Header {
  std::vector<std::string> devices;  // GPU and NIC columns, in order
  bool has_cpu_affinity = false;
  bool has_numa_affinity = false;
};

// The header is the first line naming GPU0 without an "X" cell (every matrix row has one).
std::optional<Header> ReadHeader(const std::vector<std::string>& tokens) {
  if (std::find(tokens.begin(), tokens.end(), "GPU0") == tokens.end() ||
      std::find(tokens.begin(), tokens.end(), "X") != tokens.end())
    return std::nullopt;
  Header header;
  size_t i = 0;
  for (; i < tokens.size() && tokens[i] != "CPU" && tokens[i] != "NUMA"; ++i)
    header.devices.push_back(tokens[i]);
  for (; i + 1 < tokens.size(); ++i) {
    if (tokens[i] == "CPU" && tokens[i + 1] == "Affinity") header.has_cpu_affinity = true;
    if (tokens[i] == "NUMA" && tokens[i + 1] == "Affinity") header.has_numa_affinity = true;
  }
  return header;
}

// One cell: NV# -> NVLink with # links; the PCIe path names; "X" (self) -> nullopt.
Result<std::optional<GpuLink>> ReadCell(const std::string& cell) {
  GpuLink link;
  if (cell == "X") return std::optional<GpuLink>();
  if (cell.rfind("NV", 0) == 0) {
    auto count = ParseInt(std::string_view(cell).substr(2));
    if (!count.ok() || *count < 1) return Status::InvalidInput(cell);
    link.kind = LinkKind::kNvlink;
    link.nvlinks = static_cast<int>(*count);
    return std::optional<GpuLink>(link);
  }
  static const std::pair<const char*, LinkKind> kNames[] = {
      {"PIX", LinkKind::kPix},   {"PXB", LinkKind::kPxb}, {"PHB", LinkKind::kPhb},
      {"NODE", LinkKind::kNode}, {"SYS", LinkKind::kSys}, {"SOC", LinkKind::kSys}};
  for (const auto& [name, kind] : kNames) {
    if (cell == name) {
      link.kind = kind;
      return std::optional<GpuLink>(link);
    }
  }
  return Status::InvalidInput(cell);
}

Status CellError(const std::string& source, int line, const std::string& field,
                 const std::string& found) {
  ErrorDetail detail;
  detail.file = source;
  detail.line = line;
  detail.field = field;
  detail.expected = "X, NV#, PIX, PXB, PHB, NODE or SYS";
  detail.found = found;
  return InputError(std::move(detail));
}

// Reads one GPU row into `topology`.
// `seen` holds the pairs already read (from earlier rows).
Status ReadGpuRow(const std::vector<std::string>& tokens, const Header& header, int row_gpu,
                  const std::string& source, int line, std::set<std::pair<int, int>>& seen,
                  Topology& topology) {
  const size_t cells = header.devices.size();
  if (tokens.size() < 1 + cells) {
    ErrorDetail detail{source,
                       line,
                       tokens[0],
                       std::to_string(cells) + " cells",
                       std::to_string(tokens.size() - 1) + " cells",
                       {}};
    return InputError(std::move(detail), FoundIs::kDescription);
  }
  for (size_t c = 0; c < cells; ++c) {
    auto column = GpuIndex(header.devices[c]);
    if (!column) continue;  // a NIC column
    auto link = ReadCell(tokens[1 + c]);
    if (!link.ok()) {
      return CellError(source, line, tokens[0] + " column " + header.devices[c], tokens[1 + c]);
    }
    if (!link->has_value() || *column == row_gpu) continue;
    GpuLink pair = **link;
    pair.a = std::min(row_gpu, *column);
    pair.b = std::max(row_gpu, *column);
    if (seen.insert({pair.a, pair.b}).second) topology.links.push_back(pair);
  }
  GpuAffinity affinity{row_gpu, "", ""};
  size_t next = 1 + cells;
  if (header.has_cpu_affinity && next < tokens.size()) affinity.cpu_affinity = tokens[next++];
  if (header.has_numa_affinity && next < tokens.size() && tokens[next] != "N/A")
    affinity.numa_affinity = tokens[next];
  topology.gpus.push_back(std::move(affinity));
  return Status::Ok();
}

std::string GpuList(const std::vector<int>& gpus) {
  std::string text;
  for (int gpu : gpus) text += (text.empty() ? "GPU" : ", GPU") + std::to_string(gpu);
  return text;
}

// "NV12 28" or "SYS 4, NODE 4, PHB 2": the kinds of `links`, most frequent first, ties farthest
// path first.
std::string LinkSummary(const std::vector<GpuLink>& links) {
  std::vector<std::pair<std::string, int>> counts;
  auto add = [&](const std::string& name) {
    for (auto& [seen, count] : counts) {
      if (seen == name) return void(++count);
    }
    counts.emplace_back(name, 1);
  };
  for (const GpuLink& link : links) {
    if (link.kind == LinkKind::kNvlink) add("NV" + std::to_string(link.nvlinks));
  }
  for (LinkKind kind :
       {LinkKind::kSys, LinkKind::kNode, LinkKind::kPhb, LinkKind::kPxb, LinkKind::kPix}) {
    for (const GpuLink& link : links) {
      if (link.kind == kind) add(LinkKindName(kind));
    }
  }
  std::stable_sort(counts.begin(), counts.end(),
                   [](const auto& x, const auto& y) { return x.second > y.second; });
  std::string text;
  for (const auto& [name, count] : counts)
    text += (text.empty() ? "" : ", ") + name + " " + std::to_string(count);
  return text;
}

DoctorCheck InterconnectCheck(const Topology& topology) {
  DoctorCheck check{"gpu-interconnect", CheckStatus::kOk, "", ""};
  if (topology.gpu_count <= 1) {
    check.finding = "one GPU: no GPU-to-GPU traffic inside the node";
    return check;
  }
  const int all_pairs = topology.gpu_count * (topology.gpu_count - 1) / 2;
  const int seen = static_cast<int>(topology.links.size());
  const int nvlink =
      static_cast<int>(std::count_if(topology.links.begin(), topology.links.end(),
                                     [](const GpuLink& l) { return l.kind == LinkKind::kNvlink; }));
  std::string pairs = seen == all_pairs
                          ? "all " + std::to_string(all_pairs) + " GPU pairs"
                          : std::to_string(seen) + " of " + std::to_string(all_pairs) +
                                " GPU pairs (the rows printed)";
  std::string counts = " (" + LinkSummary(topology.links) + ")";
  if (nvlink == seen) {
    check.finding = "NVLink between " + pairs + counts;
  } else if (nvlink == 0) {
    check.finding = "PCIe only between " + pairs + counts +
                    "; SYS crosses the CPUs' interconnect, NODE the host bridges of one CPU, "
                    "PHB/PXB/PIX stay under one host bridge";
  } else {
    check.status = CheckStatus::kWarn;
    check.finding =
        "NVLink on " + std::to_string(nvlink) + " of " + pairs + counts + ", PCIe on the rest";
    check.fix =
        "on a board whose GPUs are all NVLinked, a pair without NV# is a link down: "
        "nvidia-smi nvlink --status";
  }
  return check;
}

DoctorCheck NumaCheck(const Topology& topology) {
  DoctorCheck check{"numa-affinity", CheckStatus::kOk, "", ""};
  std::map<std::string, std::vector<int>> by_node;
  std::map<std::string, std::string> cpus;
  for (const GpuAffinity& gpu : topology.gpus) {
    if (gpu.numa_affinity.empty()) continue;
    by_node[gpu.numa_affinity].push_back(gpu.index);
    cpus[gpu.numa_affinity] = gpu.cpu_affinity;
  }
  if (by_node.empty()) {
    check.status = CheckStatus::kSkipped;
    check.finding = "nvidia-smi topo -m printed no NUMA affinity";
    return check;
  }
  for (const auto& [node, gpus] : by_node) {
    check.finding += (check.finding.empty() ? "" : "; ") + std::string("NUMA node ") + node + ": " +
                     GpuList(gpus) + (cpus[node].empty() ? "" : " (CPUs " + cpus[node] + ")");
  }
  if (by_node.size() > 1) {
    check.finding +=
        "; bind each rank's threads and memory to its GPU's node (numactl --cpunodebind=N "
        "--membind=N), data loader workers included";
  }
  return check;
}

DoctorCheck NcclTopologyCheck(const Topology& topology,
                              const std::map<std::string, std::string>& env) {
  DoctorCheck check{"nccl-topology", CheckStatus::kOk, "", ""};
  auto is_set = [&](const char* name) {
    auto it = env.find(name);
    return it != env.end() && it->second == "1";
  };
  std::vector<std::string> findings;
  std::vector<std::string> fixes;
  bool any_nvlink = std::any_of(topology.links.begin(), topology.links.end(),
                                [](const GpuLink& l) { return l.kind == LinkKind::kNvlink; });
  if (topology.gpu_count > 1 && any_nvlink) {
    findings.push_back(
        "NCCL moves GPU-to-GPU data over NVLink (P2P); leave NCCL_P2P_DISABLE unset");
    if (is_set("NCCL_P2P_DISABLE")) fixes.push_back("unset NCCL_P2P_DISABLE: it turns NVLink off");
  } else if (topology.gpu_count > 1) {
    findings.push_back(
        "GPU pairs over PCIe: NCCL uses P2P up to the distance NCCL_P2P_LEVEL allows (by default "
        "it decides from this topology); if collectives hang or return wrong results (consumer "
        "GPUs without P2P, IOMMU/ACS on), NCCL_P2P_DISABLE=1 routes through host memory");
  }
  if (!topology.nics.empty()) {
    std::string names;
    for (const std::string& nic : topology.nics) names += (names.empty() ? "" : ", ") + nic;
    findings.push_back("NICs listed by nvidia-smi (" + names +
                       "): NCCL uses InfiniBand/RoCE between nodes; leave NCCL_IB_DISABLE unset");
    if (is_set("NCCL_IB_DISABLE"))
      fixes.push_back("unset NCCL_IB_DISABLE: it sends multi-node traffic over TCP sockets");
  } else {
    findings.push_back(
        "no NIC in the topology: between nodes NCCL goes over TCP sockets (set "
        "NCCL_SOCKET_IFNAME to the fast interface); NCCL_IB_DISABLE changes nothing here");
  }
  for (const std::string& f : findings) check.finding += (check.finding.empty() ? "" : "; ") + f;
  if (!fixes.empty()) {
    check.status = CheckStatus::kWarn;
    for (const std::string& f : fixes) check.fix += (check.fix.empty() ? "" : "; ") + f;
    check.fix += std::string(" (") + kNcclEnvDoc + ")";
  }
  return check;
}

std::vector<DoctorCheck> Skipped(const std::string& why) {
  return {{"gpu-interconnect", CheckStatus::kSkipped, why, ""}};
}

}  // namespace

const char* LinkKindName(LinkKind kind) {
  switch (kind) {
    case LinkKind::kNvlink:
      return "NV";
    case LinkKind::kPix:
      return "PIX";
    case LinkKind::kPxb:
      return "PXB";
    case LinkKind::kPhb:
      return "PHB";
    case LinkKind::kNode:
      return "NODE";
    case LinkKind::kSys:
      return "SYS";
  }
  return "SYS";
}

Result<Topology> ParseTopoMatrix(const std::string& text, const std::string& source) {
  std::istringstream in(text);
  std::string line;
  std::optional<Header> header;
  Topology topology;
  std::set<int> rows;
  std::set<std::pair<int, int>> pairs;
  for (int number = 1; std::getline(in, line); ++number) {
    std::vector<std::string> tokens = Tokens(line);
    if (tokens.empty()) continue;
    if (tokens[0] == "Legend:") break;
    if (!header) {
      header = ReadHeader(tokens);
      if (!header) continue;
      for (const std::string& device : header->devices) {
        if (GpuIndex(device))
          ++topology.gpu_count;
        else
          topology.nics.push_back(device);
      }
      continue;
    }
    auto gpu = GpuIndex(tokens[0]);
    if (!gpu || !rows.insert(*gpu).second) continue;  // a NIC row, or a repeated row
    FULCRUM_RETURN_IF_ERROR(ReadGpuRow(tokens, *header, *gpu, source, number, pairs, topology));
  }
  if (!header) {
    ErrorDetail detail{
        source, std::nullopt, "", "a header line GPU0 GPU1 ... (nvidia-smi topo -m)", "none", {}};
    return InputError(std::move(detail), FoundIs::kDescription);
  }
  return topology;
}

std::vector<DoctorCheck> TopologyChecks(const Topology& topology,
                                        const std::map<std::string, std::string>& env) {
  return {InterconnectCheck(topology), NumaCheck(topology), NcclTopologyCheck(topology, env)};
}

Result<std::vector<DoctorCheck>> ProbeTopologyChecks(
    const std::string& topo_file, const std::string& kind,
    const std::map<std::string, std::string>& env) {
  if (!topo_file.empty()) {
    FULCRUM_ASSIGN_OR_RETURN(std::string text,
                             ReadTextFile(topo_file, "a saved `nvidia-smi topo -m` output"));
    FULCRUM_ASSIGN_OR_RETURN(Topology topology, ParseTopoMatrix(text, topo_file));
    return TopologyChecks(topology, env);
  }
  if (kind == "sim") return Skipped("not probed with --source sim (no wiring is simulated)");
  CaptureOptions options;
  options.timeout_seconds = 10;
  auto smi = RunCapture({"nvidia-smi", "topo", "-m"}, options);
  if (!smi.ok()) return Skipped("nvidia-smi not found on PATH");
  if (smi->timed_out || smi->exit_code != 0) {
    return Skipped("nvidia-smi topo -m failed: " +
                   std::string(Trim(smi->out + smi->err)).substr(0, 200));
  }
  auto topology = ParseTopoMatrix(smi->out, "nvidia-smi topo -m");
  if (!topology.ok()) return Skipped("could not read it: " + topology.status().message());
  return TopologyChecks(*topology, env);
}

}  // namespace fulcrum::nodecheck
