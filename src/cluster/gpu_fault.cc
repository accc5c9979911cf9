#include "cluster/gpu_fault.h"

#include <cstdlib>

#include "cluster/slurm.h"

namespace fulcrum::cluster {
namespace {

class SlurmGpuFaultSource final : public supervise::NoticeSource {
 public:
  explicit SlurmGpuFaultSource(GpuFaultWatchOptions options) : options_(std::move(options)) {
    if (!options_.drain) options_.drain = DrainNode;
  }
  std::string name() const override { return "gpu-fault"; }

  Result<std::optional<std::string>> Check() override {
    FULCRUM_ASSIGN_OR_RETURN(
        auto gpus, supervise::GpuHealthFromAgent(options_.agent_url, options_.timeout_seconds));
    if (!baseline_taken_) {
      for (const auto& gpu : gpus) {
        if (gpu.ecc_uncorrected) ecc_baseline_[gpu.index] = *gpu.ecc_uncorrected;
      }
      baseline_taken_ = true;
    }
    auto lost = FindLostGpu(gpus, ecc_baseline_);
    if (!lost) return std::optional<std::string>();
    std::string notice = "GPU fault on node " + options_.node + ": " + *lost;
    Status drained = options_.drain(options_.node, "fulcrum: " + *lost);
    notice += drained.ok() ? "; node drained" : "; drain failed: " + drained.message();
    return std::optional<std::string>(notice);
  }

 private:
  GpuFaultWatchOptions options_;
  bool baseline_taken_ = false;
  std::map<int, double> ecc_baseline_;
};

}  // namespace

std::optional<std::string> FindLostGpu(const std::vector<supervise::AgentGpuHealth>& gpus,
                                       const std::map<int, double>& ecc_baseline) {
  for (const auto& gpu : gpus) {
    const std::string id = "GPU " + std::to_string(gpu.index);
    if (gpu.last_xid == supervise::kXidFallenOffTheBus) return id + " XID 79 (fallen off the bus)";
    if (gpu.last_xid == supervise::kXidDoubleBitEcc) return id + " XID 48 (double-bit ECC error)";
    if (gpu.last_xid == supervise::kXidUncontainedEcc)
      return id + " XID 95 (uncontained ECC error)";
    if (gpu.ecc_uncorrected) {
      auto base = ecc_baseline.find(gpu.index);
      const double before = base == ecc_baseline.end() ? 0 : base->second;
      if (*gpu.ecc_uncorrected > before) {
        return id + " uncorrectable ECC error (" + std::to_string(static_cast<int64_t>(before)) +
               " -> " + std::to_string(static_cast<int64_t>(*gpu.ecc_uncorrected)) + ")";
      }
    }
  }
  return std::nullopt;
}

std::unique_ptr<supervise::NoticeSource> MakeSlurmGpuFaultSource(GpuFaultWatchOptions options) {
  return std::make_unique<SlurmGpuFaultSource>(std::move(options));
}

std::vector<std::unique_ptr<supervise::NoticeSource>> SlurmJobNoticeSources(
    const supervise::ResolvedRun& run) {
  std::vector<std::unique_ptr<supervise::NoticeSource>> sources;
  const char* node = std::getenv("SLURMD_NODENAME");
  if (node == nullptr || *node == '\0' || run.agent_url.empty() || run.agent_url == "none")
    return sources;
  GpuFaultWatchOptions watch;
  watch.agent_url = run.agent_url;
  watch.node = node;
  sources.push_back(MakeSlurmGpuFaultSource(std::move(watch)));
  return sources;
}

}  // namespace fulcrum::cluster
