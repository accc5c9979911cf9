// The Slurm half of `fulcrum run --on-hang`: when NCCL reports a collective of the job stalled
// and the node's fulcrum agent saw an XID on the GPU of a hung rank of this node (one that was
// not there when the run started), the node is drained (`scontrol update NodeName=N
// State=DRAIN Reason="fulcrum: NCCL hang rank R, XID X"`, scontrol(1), Slurm 22.05:
// https://slurm.schedmd.com/scontrol.html, "State=DRAIN ... Reason=<reason>") and the evidence
// returned, so that the supervisor stops the job with exit 75 and the batch script requeues it
// on another node instead of restarting it here. A hang without XID evidence drains nothing
// (the supervisor restarts the job in place). XIDs from the NVIDIA Xid catalog
// (https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html). Thread-compatible.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "supervise/agent_health.h"
#include "supervise/run_flags.h"
#include "telemetry/nccl_ras.h"

namespace fulcrum::cluster {

using HangEvidence =
    std::function<std::optional<std::string>(const std::vector<telemetry::NcclLaggingRank>&)>;

struct HangDrainOptions {
  std::string agent_url;    // the node's agent, http://127.0.0.1:9400
  std::string node;         // $SLURMD_NODENAME
  bool single_node = true;  // $SLURM_JOB_NUM_NODES 1: every rank of the job runs on this node
  // This host's addresses as NCCL prints a rank's host (inet_ntop); a rank elsewhere is that
  // node's business (its own run's agent watch). Empty with single_node: every rank is local.
  std::vector<std::string> local_addresses;
  double timeout_seconds = 0.5;
  // Drains `node`; cluster::DrainNode when empty (tests pass a fake).
  std::function<Status(const std::string& node, const std::string& reason)> drain;
};

// A hung rank of this node whose GPU shows a new XID.
struct HangXid {
  int rank = -1;  // -1: a process NCCL gave no rank for
  int gpu = -1;   // NVML index
  int xid = 0;
};

// The first hung rank of this node whose GPU (NVML index; the CUDA index when NCCL gave none)
// shows an XID in `gpus` that `baseline` (the agent's answer when the run started) did not.
std::optional<HangXid> FindHangXid(const std::vector<telemetry::NcclLaggingRank>& stalled,
                                   const std::vector<supervise::AgentGpuHealth>& gpus,
                                   const std::vector<supervise::AgentGpuHealth>& baseline,
                                   const HangDrainOptions& options);

// The drain's reason: "fulcrum: NCCL hang rank 5, XID 74".
std::string HangDrainReason(const HangXid& found);

// The evidence check with its baseline read now (an agent that does not answer: an empty
// baseline). On evidence it drains options.node and answers "node N drained (NCCL hang rank R,
// XID X on GPU G)" ("not drained (...): why" when scontrol failed: the job still leaves the
// node); no agent answer at the hang: nullopt.
HangEvidence MakeHangDrain(HangDrainOptions options);

// RunJobHooks::hang_evidence of a `fulcrum run` inside a Slurm job ($SLURMD_NODENAME, the
// run's --agent); an empty function outside Slurm or with --agent none.
HangEvidence SlurmHangEvidence(const supervise::ResolvedRun& run);

// This host's IPv4 and IPv6 addresses (getifaddrs), as inet_ntop writes them.
std::vector<std::string> LocalAddresses();

}  // namespace fulcrum::cluster
