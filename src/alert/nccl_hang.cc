#include "alert/nccl_hang.h"

#include <string>

namespace fulcrum::alert {
namespace {

constexpr size_t kMaxListed = 8;  // a summary stays one readable line in chat receivers

void Name(Transition& t, std::span<const telemetry::NcclLaggingRank> stalled) {
  const std::string list = telemetry::DescribeLaggingRanks(stalled, kMaxListed);
  t.annotations["nccl_stalled_ranks"] = list;
  std::string& summary = t.annotations["summary"];
  summary += (summary.empty() ? "" : " - ") + std::string("NCCL: ") + list;
  const telemetry::NcclRasRank& first = stalled[0].rank;
  if (first.rank >= 0) t.labels["nccl_rank"] = std::to_string(first.rank);
  if (!first.host.empty()) t.labels["nccl_host"] = first.host;
  if (first.pid >= 0) t.labels["nccl_pid"] = std::to_string(first.pid);
  // NVML's index, the one fulcrum's `gpu` label counts in (the CUDA index depends on the
  // process's CUDA_VISIBLE_DEVICES); NCCL gives no PCI bus id.
  const int gpu = first.nvml_dev >= 0 ? first.nvml_dev : first.cuda_dev;
  if (gpu >= 0) t.labels["nccl_gpu"] = std::to_string(gpu);
}

}  // namespace

bool IsHangFiring(const Transition& t) {
  if (t.to != AlertStatus::kFiring) return false;
  auto label = t.labels.find("hang");
  return t.rule_name == kHangRuleName || (label != t.labels.end() && label->second == "true");
}

void NameStalledRanks(std::vector<Transition>& transitions,
                      std::span<const telemetry::NcclLaggingRank> stalled) {
  if (stalled.empty()) return;
  for (Transition& t : transitions) {
    if (IsHangFiring(t)) Name(t, stalled);
  }
}

}  // namespace fulcrum::alert
