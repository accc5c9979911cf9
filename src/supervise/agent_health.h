// Asks a local fulcrum agent (GET <url>/v1/gpus, docs/API.md) about its GPUs' health: which are
// unfit for a restart (those whose last XID is 79, "GPU has fallen off the bus"), and each GPU's
// last XID and uncorrected ECC count for a watcher that looks for a lost GPU while the job runs.
// XIDs from the NVIDIA Xid catalog
// (https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html). No agent, or an answer
// that cannot be read, means "no opinion" (an empty list): the supervisor works without an agent.
// Thread-compatible.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "telemetry/gpu_sample.h"

namespace fulcrum::supervise {

inline constexpr int kXidFallenOffTheBus = 79;
inline constexpr int kXidDoubleBitEcc = 48;    // "DBE (Double Bit Error) ECC Error"
inline constexpr int kXidUncontainedEcc = 95;  // "Uncontained ECC error"

struct AgentGpuHealth {
  int index = 0;
  std::optional<int> last_xid;            // 0 = none since the agent started
  std::optional<double> ecc_uncorrected;  // count as the agent reads it; nullopt = unknown
};

// kUnavailable when the agent does not answer or the answer is not {"gpus": [...]}.
Result<std::vector<AgentGpuHealth>> GpuHealthFromAgent(const std::string& agent_url,
                                                       double timeout_seconds);

std::vector<int> UnhealthyGpusFromAgent(const std::string& agent_url, double timeout_seconds);

// The agent's latest sample of every GPU (GET /v1/gpus, telemetry::SampleToJson objects).
// kUnavailable as GpuHealthFromAgent.
Result<std::vector<telemetry::GpuSample>> GpuSamplesFromAgent(const std::string& agent_url,
                                                              double timeout_seconds);

// What the agent says of the job's own processes (`pids`: its process group). NVML reports
// memory per process, utilisation and power per GPU only: the memory is the most any one GPU
// holds for the job's pids; utilisation (mean) and power (sum) are reported only where every
// GPU the job uses runs nothing else. A figure that cannot be attributed is unknown, and
// `reason` says why (no per-process data, a GPU shared with another pid, none of the pids seen).
struct JobGpuFigures {
  std::optional<double> peak_bytes_per_gpu;
  std::optional<double> gpu_utilization_pct;
  std::optional<double> power_watts;
  std::string reason;  // "" when all three are known
};
JobGpuFigures JobFiguresFromSamples(const std::vector<telemetry::GpuSample>& gpus,
                                    const std::vector<int64_t>& pids);

}  // namespace fulcrum::supervise
