// What `fulcrum run` does when NCCL says a collective of its job has stalled (--on-hang): the
// action, which stalled ranks are the job's own (NCCL's RAS socket on a node reports the
// communicators of whichever job serves it), and the text a reason or an alert names them by.
// The stall verdict itself is telemetry::NcclRasPoller's (the same ranks behind at the same
// operation counts on consecutive reports). Pure functions except ProcessOfJob (reads /proc).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "telemetry/nccl_ras.h"

namespace fulcrum::supervise {

enum class HangAction {
  kRequeue,  // stop the hung job (SIGTERM, SIGKILL after --kill-after) and restart it from its
             // last checkpoint within the restart budget; under Slurm with XID evidence, drain
             // the node and exit 75 so that the batch script requeues the job elsewhere
  kStop,     // stop it and end the run (state stopped, exit 1: not requeued by the script)
  kIgnore,   // alert only
};

// "requeue", "stop", "ignore"; kInvalidInput naming --on-hang otherwise.
Result<HangAction> ParseHangAction(const std::string& text);
const char* HangActionName(HangAction action);

// Whether process `pid` of this host belongs to the job: a member of its process group `pgid`,
// or a process whose environment carries FULCRUM_JOB_UID=`job_uid` (what the supervisor exports
// to the job; srun passes it on to the tasks it starts, which are not in the group).
bool ProcessOfJob(int64_t pid, int64_t pgid, const std::string& job_uid);

// The stalled ranks whose communicator lists a process for which `of_job(pid)` holds (the
// rank's own pid included), in their order.
std::vector<telemetry::NcclLaggingRank> JobStalledRanks(
    std::span<const telemetry::NcclLaggingRank> stalled, const std::function<bool(int)>& of_job);

// "NCCL hang: rank 5 (pid 4005 on 10.0.0.2, GPU 1): AllReduce op 41 of 42 in comm 0x..",
// at most 8 ranks; "" for none.
std::string DescribeHang(std::span<const telemetry::NcclLaggingRank> stalled);

}  // namespace fulcrum::supervise
