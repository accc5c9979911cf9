#include "telemetry/nccl_ras_poller.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <tuple>

namespace fulcrum::telemetry {

void NcclRasPoller::Start() {
  if (thread_.joinable()) return;
  thread_ = std::thread([this] { Loop(); });
}

void NcclRasPoller::Stop() {
  {
    MutexLock lock(mutex_);
    stop_ = true;
  }
  wake_.SignalAll();
  if (thread_.joinable()) thread_.join();
}

void NcclRasPoller::Loop() {
  const auto every =
      std::chrono::milliseconds(static_cast<int64_t>(options_.interval_seconds * 1e3));
  while (true) {
    {
      MutexLock lock(mutex_);
      if (stop_) return;
    }
    PollOnce();
    MutexLock lock(mutex_);
    const auto until = std::chrono::steady_clock::now() + every;
    while (!stop_ && std::chrono::steady_clock::now() < until) wake_.WaitUntil(mutex_, until);
    if (stop_) return;
  }
}

// Logs a change of state only: no socket stays silent, a foreign or broken peer is said once.
void NcclRasPoller::Note(const Status& error) {
  std::string line;
  bool warning = false;
  {
    MutexLock lock(mutex_);
    const bool was_present = present_;
    present_ = error.ok();
    const std::string now_error = error.ok() ? "" : error.message();
    if (error.ok() && !was_present) {
      line = "NCCL RAS at " + options_.query.address + ": answering; stalled ranks will be named";
    } else if (!error.ok() && was_present) {
      line = "NCCL RAS at " + options_.query.address + ": gone (" + now_error + ")";
    } else if (error.code() == StatusCode::kInvalidInput && now_error != last_error_) {
      line = now_error;
      warning = true;
    }
    last_error_ = now_error;
  }
  if (line.empty()) return;
  if (options_.note) {
    options_.note(line);
  } else if (warning) {
    spdlog::warn("{}", line);
  } else {
    spdlog::info("{}", line);
  }
}

void NcclRasPoller::PollOnce() {
  auto report = QueryNcclRas(options_.query);
  Note(report.status());
  std::map<std::string, std::pair<int, NcclLaggingRank>> next;
  if (report.ok()) {
    MutexLock lock(mutex_);
    for (NcclLaggingRank& l : FindLaggingRanks(*report)) {
      const std::string key = l.comm_hash + "/" + std::to_string(l.rank.rank) + "/" + l.reason;
      auto before = seen_.find(key);
      const int count = before == seen_.end() ? 1 : before->second.first + 1;
      next[key] = {count, std::move(l)};
    }
  }
  MutexLock lock(mutex_);
  seen_ = std::move(next);
}

std::vector<NcclLaggingRank> NcclRasPoller::Stalled() const {
  MutexLock lock(mutex_);
  std::vector<NcclLaggingRank> out;
  for (const auto& [key, entry] : seen_) {
    if (entry.first >= options_.stall_polls) out.push_back(entry.second);
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    return std::tie(a.comm_hash, a.rank.rank) < std::tie(b.comm_hash, b.rank.rank);
  });
  return out;
}

bool NcclRasPoller::present() const {
  MutexLock lock(mutex_);
  return present_;
}

}  // namespace fulcrum::telemetry
