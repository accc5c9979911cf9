// The local queue's decisions: which queued jobs start now and on which GPUs (whole-GPU jobs first
// come, first served, smaller later jobs may fill GPUs a bigger earlier job cannot use yet; jobs
// that share a GPU by memory first-fit-decreasing, supervise/gpu_share.h), when a --not-before
// time falls, and how many GPUs this node has. Pure functions except DetectNodeGpuCount (reads
// the environment and /dev). Thread-safe.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "store/gpu_shares.h"
#include "store/jobs.h"
#include "supervise/gpu_share.h"

namespace fulcrum::supervise {

struct Placement {
  std::string job_id;
  std::vector<int> gpus;
  std::optional<SharePlacement> share;  // set for a job in `shares`
};

// GPUs held by active, non-queued jobs are busy; queued jobs whose not_before has passed are
// placed in creation order on the lowest free indices when enough are free.
std::vector<Placement> PlaceQueuedJobs(const std::vector<store::JobRecord>& jobs, int node_gpus,
                                       double now_unix);

// As above on `gpus`, with the jobs that have a row in `shares` (by job id) placed by memory:
// whole-GPU jobs first (only on GPUs without shares), then the ready shared jobs, largest
// reservation first (ties in creation order), each on the first GPU where it fits without
// over-commit (FitShare). Active shared jobs hold their reservation on their GPU. `mps_running`:
// an MPS control daemon runs, so time-sliced shares become MPS clients.
std::vector<Placement> PlaceQueuedJobs(const std::vector<store::JobRecord>& jobs,
                                       const std::map<std::string, store::GpuShareRecord>& shares,
                                       const std::vector<NodeGpu>& gpus, bool mps_running,
                                       double now_unix);

// The request a share row holds.
ShareRequest ShareRequestOf(const store::GpuShareRecord& share);

// "22:00" -> the next 22:00 local time after `now_unix` (today or tomorrow);
// "+90s" / "+2h" -> now plus the duration; "2026-12-01T22:00" -> that local time.
Result<double> ParseNotBefore(const std::string& text, double now_unix);

// $FULCRUM_NODE_GPUS when set, else the number of /dev/nvidiaN devices (0 when none).
int DetectNodeGpuCount();

}  // namespace fulcrum::supervise
