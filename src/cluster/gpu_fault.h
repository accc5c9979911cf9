// The hardware-fault half of Slurm migration: a preemption-notice source for a job that runs
// under Slurm. It polls the node's fulcrum agent (GET /v1/gpus) and, on the first lost GPU (XID
// 79 "fallen off the bus", XID 48 / 95 ECC errors, or an uncorrected ECC count above what it
// read at its first answer, and ECC XIDs that are new since then), drains this node in Slurm
// (`scontrol update nodename=N state=drain reason=...`) and answers a notice: `fulcrum run` then
// checkpoints if the job still can and stops (exit 75), and the sbatch script requeues the job,
// which Slurm places on a healthy node. Any GPU of the node counts: a node that lost one needs
// attention whatever job holds it. A job on more than one node watches every node: its
// supervisor starts one watcher per node with srun (`fulcrum submit --gpu-fault-watch`, which
// asks that node's own agent, drains that node and prints the notice) and reads their lines.
// Used from the notice watcher's thread only.
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

// The watch of one node, on that node: checks `options` every `poll_seconds` (through `sleep`)
// until a GPU is lost, and returns the notice (the node drained). Agent errors are retried.
std::string WatchNodeUntilGpuFault(GpuFaultWatchOptions options, double poll_seconds,
                                   const std::function<void(double seconds)>& sleep);

// How a node's watcher reports its notice on stdout: kNodeFaultLinePrefix + notice.
inline constexpr const char* kNodeFaultLinePrefix = "fulcrum gpu-fault: ";

// The one watcher per node of a multi-node job: `fulcrum_binary submit --gpu-fault-watch --agent
// URL --notice-poll Ns` on each of `nodes` nodes, one task each, through `srun --overlap` (a step
// beside the job's own, no GRES of its own).
std::vector<std::string> NodeWatchArgv(const std::string& fulcrum_binary,
                                       const std::string& agent_url, int nodes,
                                       double poll_seconds);

// A notice source that runs `argv` (NodeWatchArgv) as a child and answers the first
// kNodeFaultLinePrefix line a node prints. The child starts at the first Check, starts again
// (at most every `restart_seconds`) when it ends without a notice, and is stopped (SIGTERM, then
// SIGKILL) with the source.
std::unique_ptr<supervise::NoticeSource> MakeNodeWatchFanOutSource(std::vector<std::string> argv,
                                                                   double restart_seconds = 10);

// The extra notice sources of a `fulcrum run` inside a Slurm job (RunJobHooks::notice_sources):
// one node ($SLURM_JOB_NUM_NODES 1): the GPU fault watch of this node ($SLURMD_NODENAME) through
// the run's --agent; more: the fan-out watch of every node of the job, each through its own
// agent at the same --agent URL. None outside a Slurm job or with --agent none.
std::vector<std::unique_ptr<supervise::NoticeSource>> SlurmJobNoticeSources(
    const supervise::ResolvedRun& run);

// The first lost GPU in `gpus` as text ("GPU 1 XID 79 (fallen off the bus)"), nullopt when none.
// `baseline` is the agent's first answer to this watch: an ECC XID (48, 95) or uncorrected count
// that was already there is history (the agent keeps the last XID since it started), not a fault
// of now; XID 79 always is (the GPU is gone until the node is reset).
std::optional<std::string> FindLostGpu(const std::vector<supervise::AgentGpuHealth>& gpus,
                                       const std::vector<supervise::AgentGpuHealth>& baseline);

}  // namespace fulcrum::cluster
