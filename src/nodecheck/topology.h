// How the GPUs of a node are wired, from `nvidia-smi topo -m`: the link between each pair of
// GPUs (NVLink with its bonded link count, or the PCIe path: PIX, PXB, PHB, NODE, SYS as the
// tool's legend defines them), each GPU's CPU and NUMA affinity, and the NICs the tool lists.
// TopologyChecks() turns that into doctor checks with the NCCL hints (NCCL_P2P_DISABLE,
// NCCL_P2P_LEVEL, NCCL_IB_DISABLE; NVIDIA's NCCL environment-variable documentation).
// Parsing and checks are pure; ProbeTopologyChecks() runs nvidia-smi. Thread-compatible.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "nodecheck/doctor_checks.h"

namespace fulcrum::nodecheck {

// The legend of `nvidia-smi topo -m`, nearest first. SOC (older drivers) reads as SYS.
enum class LinkKind { kNvlink, kPix, kPxb, kPhb, kNode, kSys };
const char* LinkKindName(LinkKind kind);  // "NV", "PIX", "PXB", "PHB", "NODE", "SYS"

struct GpuLink {
  int a = 0;  // GPU index, a < b
  int b = 0;
  LinkKind kind = LinkKind::kSys;
  int nvlinks = 0;  // bonded NVLinks (NV12 -> 12); 0 for a PCIe path
};

struct GpuAffinity {
  int index = 0;
  std::string cpu_affinity;   // "0-55,112-167"; "" when the tool printed none
  std::string numa_affinity;  // "0", "6-7"; "" when the tool printed none or N/A
};

struct Topology {
  int gpu_count = 0;              // GPUs in the header
  std::vector<GpuAffinity> gpus;  // the GPU rows present, in order
  std::vector<GpuLink> links;     // one per pair seen in the rows present
  std::vector<std::string> nics;  // NIC columns ("NIC0", "mlx5_0"), in order
};

// Parses the matrix; lines before the header and from "Legend:" on are ignored. A row may be
// missing (a truncated capture): its pairs are then only those other rows give. InvalidInput
// "<source>:<line>: GPU1 column GPU3: expected X, NV#, PIX, PXB, PHB, NODE or SYS, found ..."
// on a cell it cannot read, or "expected a header line GPU0 GPU1 ..." without one.
Result<Topology> ParseTopoMatrix(const std::string& text, const std::string& source);

// Three checks: "gpu-interconnect" (NVLink vs PCIe between the GPUs), "numa-affinity" (which
// GPUs sit on which NUMA node) and "nccl-topology" (the NCCL_P2P_* / NCCL_IB_DISABLE hints for
// this wiring; warn when `env` sets one that works against it).
std::vector<DoctorCheck> TopologyChecks(const Topology& topology,
                                        const std::map<std::string, std::string>& env);

// The topology checks of `doctor`: from `topo_file` (a saved `nvidia-smi topo -m`; bad content is
// InvalidInput naming file:line) when given; else one skipped check for a sim source (`kind`
// "sim"); else from `nvidia-smi topo -m` (10 s limit), a skipped check saying why when it cannot
// be run or read.
Result<std::vector<DoctorCheck>> ProbeTopologyChecks(const std::string& topo_file,
                                                     const std::string& kind,
                                                     const std::map<std::string, std::string>& env);

}  // namespace fulcrum::nodecheck
