// The hardware-fault half of Slurm migration: a preemption-notice source for a job that runs
// under Slurm. It polls the node's fulcrum agent (GET /v1/gpus) and, on the first lost GPU (XID
// 79 "fallen off the bus", XID 48 / 95 ECC errors, or an uncorrected ECC count above what it
// read at its first answer, and ECC XIDs that are new since then), drains this node in Slurm
// (`scontrol update nodename=N state=drain reason=...`) and answers a notice: `fulcrum run` then
// checkpoints if the job still can and stops (exit 75), and the sbatch script requeues the job,
// which Slurm places on a healthy node. Any GPU of the node counts: a node that lost one needs
// attention whatever job holds it. Used from the notice watcher's thread only.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "supervise/agent_health.h"
#include "supervise/notice.h"
#include "supervise/run_flags.h"

namespace fulcrum::cluster {

struct GpuFaultWatchOptions {
  std::string agent_url;  // http://127.0.0.1:9400 on the node
  std::string node;       // $SLURMD_NODENAME
  double timeout_seconds = 0.5;
  // Drains `node`; cluster::DrainNode when empty (tests pass a fake).
  std::function<Status(const std::string& node, const std::string& reason)> drain;
};

std::unique_ptr<supervise::NoticeSource> MakeSlurmGpuFaultSource(GpuFaultWatchOptions options);

// The extra notice sources of a `fulcrum run` inside a Slurm job (RunJobHooks::notice_sources):
// the GPU fault watch of this node ($SLURMD_NODENAME) through the run's --agent; none outside a
// Slurm job or with --agent none.
std::vector<std::unique_ptr<supervise::NoticeSource>> SlurmJobNoticeSources(
    const supervise::ResolvedRun& run);

// The first lost GPU in `gpus` as text ("GPU 1 XID 79 (fallen off the bus)"), nullopt when none.
// `baseline` is the agent's first answer to this watch: an ECC XID (48, 95) or uncorrected count
// that was already there is history (the agent keeps the last XID since it started), not a fault
// of now; XID 79 always is (the GPU is gone until the node is reset).
std::optional<std::string> FindLostGpu(const std::vector<supervise::AgentGpuHealth>& gpus,
                                       const std::vector<supervise::AgentGpuHealth>& baseline);

}  // namespace fulcrum::cluster
