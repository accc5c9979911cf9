#include "supervise/nccl_hang.h"

#include <algorithm>
#include <fstream>
#include <iterator>

#include "supervise/process.h"

namespace fulcrum::supervise {

Result<HangAction> ParseHangAction(const std::string& text) {
  if (text == "requeue") return HangAction::kRequeue;
  if (text == "stop") return HangAction::kStop;
  if (text == "ignore") return HangAction::kIgnore;
  return Status::InvalidInput("--on-hang: expected requeue, stop or ignore, found '" + text + "'");
}

const char* HangActionName(HangAction action) {
  switch (action) {
    case HangAction::kRequeue:
      return "requeue";
    case HangAction::kStop:
      return "stop";
    case HangAction::kIgnore:
      return "ignore";
  }
  return "requeue";
}

bool ProcessOfJob(int64_t pid, int64_t pgid, const std::string& job_uid) {
  if (pid <= 0) return false;
  if (pgid > 0) {
    const std::vector<int64_t> group = ProcessGroupPids(pgid);
    if (std::find(group.begin(), group.end(), pid) != group.end()) return true;
  }
  if (job_uid.empty()) return false;
  // /proc/PID/environ: NUL-separated NAME=value entries (proc(5)); readable for our own user.
  std::ifstream in("/proc/" + std::to_string(pid) + "/environ", std::ios::binary);
  if (!in) return false;
  const std::string environ{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  const std::string want = "FULCRUM_JOB_UID=" + job_uid;
  size_t start = 0;
  while (start < environ.size()) {
    size_t end = environ.find('\0', start);
    if (end == std::string::npos) end = environ.size();
    if (environ.compare(start, end - start, want) == 0) return true;
    start = end + 1;
  }
  return false;
}

std::vector<telemetry::NcclLaggingRank> JobStalledRanks(
    std::span<const telemetry::NcclLaggingRank> stalled, const std::function<bool(int)>& of_job) {
  std::vector<telemetry::NcclLaggingRank> out;
  for (const telemetry::NcclLaggingRank& l : stalled) {
    bool ours = l.rank.pid >= 0 && of_job(l.rank.pid);
    for (size_t i = 0; !ours && i < l.comm_pids.size(); ++i) ours = of_job(l.comm_pids[i]);
    if (ours) out.push_back(l);
  }
  return out;
}

std::string DescribeHang(std::span<const telemetry::NcclLaggingRank> stalled) {
  if (stalled.empty()) return "";
  return "NCCL hang: " + telemetry::DescribeLaggingRanks(stalled);
}

}  // namespace fulcrum::supervise
