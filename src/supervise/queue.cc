#include "supervise/queue.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <set>

#include "core/parse.h"

namespace fulcrum::supervise {

std::vector<Placement> PlaceQueuedJobs(const std::vector<store::JobRecord>& jobs, int node_gpus,
                                       double now_unix) {
  std::set<int> busy;
  for (const auto& job : jobs) {
    // A lost job (its supervisor vanished) holds no GPUs.
    if (job.queue == "slurm" || job.state == store::JobState::kQueued ||
        !store::IsActiveState(store::EffectiveState(job)))
      continue;
    busy.insert(job.gpus.begin(), job.gpus.end());
  }
  std::vector<const store::JobRecord*> queued;
  for (const auto& job : jobs) {
    if (job.state == store::JobState::kQueued && job.queue == "local") queued.push_back(&job);
  }
  std::stable_sort(queued.begin(), queued.end(), [](const auto* a, const auto* b) {
    return a->created_at.value_or(0) < b->created_at.value_or(0);
  });
  std::vector<Placement> placements;
  for (const auto* job : queued) {
    if (job->not_before && *job->not_before > now_unix) continue;
    std::vector<int> free;
    for (int g = 0; g < node_gpus && static_cast<int>(free.size()) < job->gpus_requested; ++g) {
      if (!busy.count(g)) free.push_back(g);
    }
    if (static_cast<int>(free.size()) < job->gpus_requested) continue;
    busy.insert(free.begin(), free.end());
    placements.push_back({job->id, free});
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

int DetectNodeGpuCount() {
  if (const char* env = std::getenv("FULCRUM_NODE_GPUS"); env != nullptr && *env != '\0') {
    auto n = ParseInt(env);
    if (n.ok() && *n >= 0) return static_cast<int>(*n);
  }
  int count = 0;
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator("/dev", ec);
       !ec && it != std::filesystem::end(it); it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() > 6 && name.rfind("nvidia", 0) == 0 &&
        std::all_of(name.begin() + 6, name.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      ++count;
    }
  }
  return count;
}

}  // namespace fulcrum::supervise
