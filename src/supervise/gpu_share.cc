#include "supervise/gpu_share.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/parse.h"
#include "supervise/agent_health.h"

namespace fulcrum::supervise {
namespace {

int CountDevNvidia() {
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

std::string Gib(double bytes) { return FormatBytes(bytes); }

}  // namespace

Result<std::vector<NodeGpu>> ParseNodeGpus(std::string_view text) {
  const std::string t(Trim(text));
  const size_t x = t.find_first_of("xX");
  const std::string count_text = t.substr(0, x);
  auto count = ParseInt(count_text);
  if (!count.ok() || *count < 0 || *count > 1024) {
    return Status::InvalidInput("--node-gpus: expected N or NxSIZE (e.g. 8 or 2x80GiB), found '" +
                                t + "'")
        .WithDetail({"", std::nullopt, "--node-gpus", "N or NxSIZE", t, {"8", "2x80GiB"}});
  }
  std::optional<double> memory;
  if (x != std::string::npos) {
    auto bytes = ParseBytes(t.substr(x + 1));
    if (!bytes.ok() || *bytes <= 0) {
      return Status::InvalidInput(
                 "--node-gpus: expected NxSIZE with a size, such as 2x80GiB, found '" + t + "'")
          .WithDetail({"", std::nullopt, "--node-gpus", "NxSIZE", t, {"2x80GiB", "8x141GB"}});
    }
    memory = *bytes;
  }
  std::vector<NodeGpu> gpus;
  for (int i = 0; i < *count; ++i) gpus.push_back({i, memory, {}});
  return gpus;
}

std::string FormatNodeGpus(const std::vector<NodeGpu>& gpus) {
  if (gpus.empty()) return "";
  std::string out = std::to_string(gpus.size());
  const auto& first = gpus.front().memory_bytes;
  const bool same = std::all_of(gpus.begin(), gpus.end(),
                                [&](const NodeGpu& g) { return g.memory_bytes == first; });
  if (first && same) {
    const double gib = *first / (1024.0 * 1024 * 1024);
    if (gib == std::floor(gib))
      return out + "x" + std::to_string(static_cast<int64_t>(gib)) + "GiB";
    return out + "x" + std::to_string(static_cast<int64_t>(*first)) + "B";
  }
  return out;
}

std::vector<NodeGpu> NodeGpusFromSamples(const std::vector<telemetry::GpuSample>& samples) {
  std::vector<NodeGpu> gpus;
  for (const telemetry::GpuSample& s : samples) gpus.push_back({s.index, s.memory_total_bytes, {}});
  std::sort(gpus.begin(), gpus.end(),
            [](const NodeGpu& a, const NodeGpu& b) { return a.index < b.index; });
  return gpus;
}

std::vector<NodeGpu> DetectNodeGpus(const std::string& agent_url) {
  if (const char* env = std::getenv("FULCRUM_NODE_GPUS"); env != nullptr && *env != '\0') {
    if (auto gpus = ParseNodeGpus(env); gpus.ok()) return *gpus;
  }
  if (!agent_url.empty() && agent_url != "none") {
    auto samples = GpuSamplesFromAgent(agent_url, 0.5);
    if (samples.ok() && !samples->empty()) return NodeGpusFromSamples(*samples);
  }
  std::vector<NodeGpu> gpus;
  const int n = CountDevNvidia();
  for (int i = 0; i < n; ++i) gpus.push_back({i, std::nullopt, {}});
  return gpus;
}

Status ParseReserve(std::string_view text, ShareRequest& request) {
  const std::string t(Trim(text));
  if (!t.empty() && t.back() == '%') {
    auto pct = ParseDouble(t.substr(0, t.size() - 1));
    if (pct.ok() && *pct >= 0 && *pct < 100) {
      request.reserve_fraction = *pct / 100;
      request.reserve_bytes.reset();
      return Status::Ok();
    }
  } else if (auto bytes = ParseBytes(t); bytes.ok()) {
    request.reserve_bytes = *bytes;
    request.reserve_fraction.reset();
    return Status::Ok();
  }
  return Status::InvalidInput(
             "--reserve: expected a percentage in [0, 100) such as 10% or a size such as 8GiB, "
             "found '" +
             t + "'")
      .WithDetail({"", std::nullopt, "--reserve", "P% or SIZE", t, {"10%", "8GiB"}});
}

Status CheckGpuFraction(double fraction) {
  if (fraction > 0 && fraction <= 1) return Status::Ok();
  std::ostringstream found;
  found << fraction;
  return Status::InvalidInput("--gpu-fraction: expected a fraction in (0, 1] such as 0.25, found " +
                              found.str())
      .WithDetail(
          {"", std::nullopt, "--gpu-fraction", "(0, 1]", found.str(), {"0.25", "0.5", "1"}});
}

Status CheckShareMode(const std::string& share) {
  if (share == "auto" || share == "mps") return Status::Ok();
  return Status::InvalidInput("--share: expected auto or mps, found '" + share + "'")
      .WithDetail({"", std::nullopt, "--share", "auto | mps", share, {"auto", "mps"}});
}

std::optional<double> ReservationOn(const ShareRequest& request, const NodeGpu& gpu) {
  if (request.memory_bytes) return *request.memory_bytes;
  if (request.fraction && gpu.memory_bytes) return *request.fraction * *gpu.memory_bytes;
  return std::nullopt;
}

std::optional<double> ReservableOn(const ShareRequest& request, const NodeGpu& gpu) {
  if (!gpu.memory_bytes) return std::nullopt;
  const double reserve =
      request.reserve_bytes
          ? *request.reserve_bytes
          : request.reserve_fraction.value_or(kDefaultReserveFraction) * *gpu.memory_bytes;
  return *gpu.memory_bytes - reserve;
}

Status CheckShareFits(const ShareRequest& request, const std::vector<NodeGpu>& gpus) {
  if (request.fraction) FULCRUM_RETURN_IF_ERROR(CheckGpuFraction(*request.fraction));
  if (request.memory_bytes && *request.memory_bytes <= 0) {
    return Status::InvalidInput("--gpu-memory: expected a size above 0 such as 30GiB");
  }
  if (gpus.empty()) {
    return Status::InvalidInput(
        "--gpu-memory/--gpu-fraction: this node has no GPUs (set --node-gpus NxSIZE or "
        "FULCRUM_NODE_GPUS, e.g. 2x80GiB)");
  }
  double largest = 0;
  std::vector<std::string> choices;
  for (const NodeGpu& gpu : gpus) {
    if (!gpu.mig.empty()) {
      for (const MigInstance& m : gpu.mig) {
        largest = std::max(largest, m.memory_bytes);
        choices.push_back(m.profile + " (" + Gib(m.memory_bytes) + ")");
      }
      continue;
    }
    const auto reservable = ReservableOn(request, gpu);
    if (!reservable) {
      return Status::InvalidInput(
          "--gpu-memory/--gpu-fraction: GPU " + std::to_string(gpu.index) +
          " has no known memory size; give the node's GPUs as --node-gpus NxSIZE (or "
          "FULCRUM_NODE_GPUS), e.g. " +
          std::to_string(gpus.size()) + "x80GiB");
    }
    largest = std::max(largest, *reservable);
  }
  std::sort(choices.begin(), choices.end());
  choices.erase(std::unique(choices.begin(), choices.end()), choices.end());
  for (const NodeGpu& gpu : gpus) {
    if (!gpu.mig.empty()) {
      for (const MigInstance& m : gpu.mig) {
        if (ReservationOn(request, gpu).value_or(0) <= m.memory_bytes) return Status::Ok();
      }
      continue;
    }
    const auto want = ReservationOn(request, gpu);
    if (want && *want <= *ReservableOn(request, gpu)) return Status::Ok();
  }
  const std::string found = request.memory_bytes ? Gib(*request.memory_bytes)
                                                 : std::to_string(*request.fraction) + " of a GPU";
  std::string message = "--gpu-memory " + found + ": larger than any GPU of this node can hold";
  if (!choices.empty()) {
    std::string names;
    for (const auto& c : choices) names += (names.empty() ? "" : ", ") + c;
    message += "; its MIG instances are " + names;
  } else {
    message += "; expected at most " + Gib(largest) + " (the GPU's memory less --reserve)";
  }
  return Status::InvalidInput(message).WithDetail(
      {"", std::nullopt, "--gpu-memory", "<= " + Gib(largest), found, choices});
}

std::optional<SharePlacement> FitShare(const ShareRequest& request,
                                       const std::vector<NodeGpu>& gpus,
                                       std::vector<GpuLoad>& loads, bool mps) {
  for (size_t i = 0; i < gpus.size() && i < loads.size(); ++i) {
    const NodeGpu& gpu = gpus[i];
    GpuLoad& load = loads[i];
    if (load.whole) continue;
    if (!gpu.mig.empty()) {
      const MigInstance* best = nullptr;
      for (const MigInstance& m : gpu.mig) {
        if (load.mig_in_use.count(m.uuid)) continue;
        const double want = request.memory_bytes
                                ? *request.memory_bytes
                                : request.fraction.value_or(1) * gpu.memory_bytes.value_or(0);
        if (want > m.memory_bytes) continue;
        if (best == nullptr || m.memory_bytes < best->memory_bytes) best = &m;
      }
      if (best == nullptr) continue;
      load.mig_in_use.insert(best->uuid);
      ++load.shares;
      return SharePlacement{gpu.index, best->memory_bytes, "mig", best->uuid, best->profile};
    }
    const auto want = ReservationOn(request, gpu);
    const auto reservable = ReservableOn(request, gpu);
    if (!want || !reservable || load.reserved_bytes + *want > *reservable) continue;
    load.reserved_bytes += *want;
    ++load.shares;
    return SharePlacement{gpu.index, *want, mps ? "mps" : "time", "", ""};
  }
  return std::nullopt;
}

std::map<std::string, std::string> ShareEnv(const SharePlacement& placement,
                                            const ShareRequest& request, const NodeGpu& gpu) {
  std::map<std::string, std::string> env;
  env["CUDA_VISIBLE_DEVICES"] =
      placement.mode == "mig" ? placement.mig_uuid : std::to_string(placement.gpu);
  if (placement.mode != "mps") return env;
  // NVIDIA's MPS documentation (https://docs.nvidia.com/deploy/mps/index.html, "Per-client
  // pinned device memory limit" and "Per-client active thread percentage"): a comma-separated
  // list of <device ordinal>=<limit> such as "0=1G,1=512MB" (the ordinal counts the client's
  // visible devices: the job sees one, 0), and a percentage of the GPU's threads. The limit is
  // written in whole MB of 2^20 bytes, rounded down, so that it never passes the reservation.
  const auto mb = static_cast<int64_t>(std::floor(placement.reservation_bytes / (1024.0 * 1024)));
  env["CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"] = "0=" + std::to_string(mb) + "MB";
  double share = request.fraction.value_or(0);
  if (!request.fraction && gpu.memory_bytes && *gpu.memory_bytes > 0) {
    share = placement.reservation_bytes / *gpu.memory_bytes;
  }
  const int pct = std::clamp(static_cast<int>(std::ceil(share * 100 - 1e-9)), 1, 100);
  env["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] = std::to_string(pct);
  return env;
}

bool MpsControlRunning(const std::string& proc_root) {
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator(proc_root, ec);
       !ec && it != std::filesystem::end(it); it.increment(ec)) {
    const std::string pid = it->path().filename().string();
    if (pid.empty() ||
        !std::all_of(pid.begin(), pid.end(), [](char c) { return c >= '0' && c <= '9'; }))
      continue;
    std::ifstream comm(it->path() / "comm");
    std::string name;
    std::getline(comm, name);
    // /proc/PID/comm holds the first 15 characters of the executable's name.
    if (name == std::string("nvidia-cuda-mps-control").substr(0, 15)) return true;
  }
  return false;
}

}  // namespace fulcrum::supervise
