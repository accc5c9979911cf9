#include "supervise/queue.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>

#include "core/parse.h"

namespace fulcrum::supervise {

namespace {

bool HoldsGpus(const store::JobRecord& job) {
  // A lost job (its supervisor vanished) holds no GPUs.
  return job.queue != "slurm" && job.state != store::JobState::kQueued &&
         store::IsActiveState(store::EffectiveState(job));
}

std::vector<const store::JobRecord*> ReadyJobs(const std::vector<store::JobRecord>& jobs,
                                               double now_unix) {
  std::vector<const store::JobRecord*> queued;
  for (const auto& job : jobs) {
    if (job.state != store::JobState::kQueued || job.queue != "local") continue;
    if (job.not_before && *job.not_before > now_unix) continue;
    queued.push_back(&job);
  }
  std::stable_sort(queued.begin(), queued.end(), [](const auto* a, const auto* b) {
    return a->created_at.value_or(0) < b->created_at.value_or(0);
  });
  return queued;
}

// The size that orders shared jobs (decreasing): the request's bytes on the largest GPU.
double SortBytes(const ShareRequest& request, const std::vector<NodeGpu>& gpus) {
  double largest = 0;
  for (const NodeGpu& g : gpus) largest = std::max(largest, ReservationOn(request, g).value_or(0));
  return largest;
}

}  // namespace

ShareRequest ShareRequestOf(const store::GpuShareRecord& share) {
  ShareRequest r;
  r.memory_bytes = share.memory_bytes;
  r.fraction = share.fraction;
  r.reserve_fraction = share.reserve_fraction;
  r.reserve_bytes = share.reserve_bytes;
  r.share = share.share;
  r.enforce = share.enforce;
  return r;
}

std::vector<Placement> PlaceQueuedJobs(const std::vector<store::JobRecord>& jobs, int node_gpus,
                                       double now_unix) {
  std::vector<NodeGpu> gpus;
  for (int g = 0; g < node_gpus; ++g) gpus.push_back({g, std::nullopt, {}});
  return PlaceQueuedJobs(jobs, {}, gpus, false, now_unix);
}

std::vector<Placement> PlaceQueuedJobs(const std::vector<store::JobRecord>& jobs,
                                       const std::map<std::string, store::GpuShareRecord>& shares,
                                       const std::vector<NodeGpu>& gpus, bool mps_running,
                                       double now_unix) {
  std::vector<GpuLoad> loads(gpus.size());
  const auto load_of = [&](int index) -> GpuLoad* {
    for (size_t i = 0; i < gpus.size(); ++i) {
      if (gpus[i].index == index) return &loads[i];
    }
    return nullptr;
  };
  for (const auto& job : jobs) {
    if (!HoldsGpus(job)) continue;
    auto share = shares.find(job.id);
    if (share != shares.end() && share->second.gpu) {
      if (GpuLoad* load = load_of(*share->second.gpu)) {
        load->reserved_bytes += share->second.reservation_bytes.value_or(0);
        ++load->shares;
        if (!share->second.mig_uuid.empty()) load->mig_in_use.insert(share->second.mig_uuid);
      }
      continue;
    }
    for (int g : job.gpus) {
      if (GpuLoad* load = load_of(g)) load->whole = true;
    }
  }
  std::vector<Placement> placements;
  std::vector<std::pair<const store::JobRecord*, ShareRequest>> shared;
  for (const auto* job : ReadyJobs(jobs, now_unix)) {
    if (auto share = shares.find(job->id); share != shares.end()) {
      shared.emplace_back(job, ShareRequestOf(share->second));
      continue;
    }
    std::vector<int> free;
    for (size_t i = 0; i < gpus.size() && static_cast<int>(free.size()) < job->gpus_requested;
         ++i) {
      if (!loads[i].whole && loads[i].shares == 0) free.push_back(gpus[i].index);
    }
    if (static_cast<int>(free.size()) < job->gpus_requested) continue;
    for (int g : free) load_of(g)->whole = true;
    placements.push_back({job->id, free, std::nullopt});
  }
  std::stable_sort(shared.begin(), shared.end(), [&](const auto& a, const auto& b) {
    return SortBytes(a.second, gpus) > SortBytes(b.second, gpus);
  });
  for (const auto& [job, request] : shared) {
    const bool mps = request.share == "mps" || mps_running;
    auto fit = FitShare(request, gpus, loads, mps);
    if (!fit) continue;
    placements.push_back({job->id, {fit->gpu}, fit});
  }
  return placements;
}

Result<double> ParseNotBefore(const std::string& text, double now_unix) {
  if (!text.empty() && text[0] == '+') {
    auto d = ParseDurationSeconds(text.substr(1));
    if (!d.ok()) return d.status().WithContext("--not-before");
    return now_unix + *d;
  }
  std::time_t now = static_cast<std::time_t>(std::floor(now_unix));
  std::tm tm{};
  localtime_r(&now, &tm);
  int hour = 0, minute = 0, year = 0, month = 0, day = 0, used = 0;
  if (std::sscanf(text.c_str(), "%2d:%2d%n", &hour, &minute, &used) == 2 &&
      used == static_cast<int>(text.size())) {
    if (hour > 23 || minute > 59 || hour < 0 || minute < 0) {
      return Status::InvalidInput("--not-before: expected HH:MM (00:00-23:59), found '" + text +
                                  "'");
    }
    tm.tm_hour = hour;
    tm.tm_min = minute;
    tm.tm_sec = 0;
    tm.tm_isdst = -1;
    double at = static_cast<double>(std::mktime(&tm));
    if (at <= now_unix) {
      tm.tm_mday += 1;
      tm.tm_isdst = -1;
      at = static_cast<double>(std::mktime(&tm));
    }
    return at;
  }
  std::string normalised = text;
  std::replace(normalised.begin(), normalised.end(), 'T', ' ');
  used = 0;
  if (std::sscanf(normalised.c_str(), "%4d-%2d-%2d %2d:%2d%n", &year, &month, &day, &hour, &minute,
                  &used) == 5 &&
      used == static_cast<int>(text.size())) {
    std::tm t{};
    t.tm_year = year - 1900;
    t.tm_mon = month - 1;
    t.tm_mday = day;
    t.tm_hour = hour;
    t.tm_min = minute;
    t.tm_isdst = -1;
    return static_cast<double>(std::mktime(&t));
  }
  return Status::InvalidInput(
      "--not-before: expected HH:MM, +DURATION or YYYY-MM-DDTHH:MM, found '" + text + "'");
}

int DetectNodeGpuCount() { return static_cast<int>(DetectNodeGpus().size()); }

}  // namespace fulcrum::supervise
