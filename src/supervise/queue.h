// The local queue's decisions: which queued jobs start now and on which GPUs (first come, first
// served, smaller later jobs may fill GPUs a bigger earlier job cannot use yet), when a
// --not-before time falls, and how many GPUs this node has. Pure functions except
// DetectNodeGpuCount (reads the environment and /dev). Thread-safe.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "store/jobs.h"

namespace fulcrum::supervise {

struct Placement {
  std::string job_id;
  std::vector<int> gpus;
};

// GPUs held by active, non-queued jobs are busy; queued jobs whose not_before has passed are
// placed in creation order on the lowest free indices when enough are free.
std::vector<Placement> PlaceQueuedJobs(const std::vector<store::JobRecord>& jobs, int node_gpus,
                                       double now_unix);

// "22:00" -> the next 22:00 local time after `now_unix` (today or tomorrow);
// "+90s" / "+2h" -> now plus the duration; "2026-12-01T22:00" -> that local time.
Result<double> ParseNotBefore(const std::string& text, double now_unix);

// $FULCRUM_NODE_GPUS when set, else the number of /dev/nvidiaN devices (0 when none).
int DetectNodeGpuCount();

}  // namespace fulcrum::supervise
