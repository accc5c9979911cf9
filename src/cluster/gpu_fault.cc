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
    if (!baseline_) baseline_ = gpus;
    auto lost = FindLostGpu(gpus, *baseline_);
    if (!lost) return std::optional<std::string>();
    std::string notice = "GPU fault on node " + options_.node + ": " + *lost;
    Status drained = options_.drain(options_.node, "fulcrum: " + *lost);
    notice += drained.ok() ? "; node drained" : "; drain failed: " + drained.message();
    return std::optional<std::string>(notice);
  }

 private:
  GpuFaultWatchOptions options_;
  std::optional<std::vector<supervise::AgentGpuHealth>> baseline_;  // the first answer
};

}  // namespace

std::optional<std::string> FindLostGpu(const std::vector<supervise::AgentGpuHealth>& gpus,
                                       const std::vector<supervise::AgentGpuHealth>& baseline) {
  for (const auto& gpu : gpus) {
    const supervise::AgentGpuHealth* before = nullptr;
    for (const auto& b : baseline) {
      if (b.index == gpu.index) before = &b;
    }
    const std::string id = "GPU " + std::to_string(gpu.index);
    if (gpu.last_xid == supervise::kXidFallenOffTheBus) return id + " XID 79 (fallen off the bus)";
    const bool new_xid = before == nullptr || before->last_xid != gpu.last_xid;
    if (new_xid && gpu.last_xid == supervise::kXidDoubleBitEcc)
      return id + " XID 48 (double-bit ECC error)";
    if (new_xid && gpu.last_xid == supervise::kXidUncontainedEcc)
      return id + " XID 95 (uncontained ECC error)";
    if (gpu.ecc_uncorrected) {
      const double old_count =
          before != nullptr && before->ecc_uncorrected ? *before->ecc_uncorrected : 0;
      if (*gpu.ecc_uncorrected > old_count) {
        return id + " uncorrectable ECC error (" + std::to_string(static_cast<int64_t>(old_count)) +
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
