#include "plan/pitfalls.h"

namespace fulcrum::plan {

uint32_t DetectPitfalls(const PitfallFacts& f) {
  uint32_t mask = 0;
  // Thresholds from the issue (#4): 2 B parameters on 40 GB (as a share of the card, on the
  // method's real states: kLargeModelStateShare), 25 Gbit/s, 10 % headroom.
  if (!f.sharded && f.capacity_bytes > 0 &&
      f.model_state_bytes > kLargeModelStateShare * f.capacity_bytes) {
    mask |= kPitfallLargeModelSmallGpu;
  }
  if (f.gpus > 1 && f.pcie_only) mask |= kPitfallPcieMultiGpu;
  if (f.gpus > 1 && f.interconnect_unknown) mask |= kPitfallInterconnectUnknown;
  if (f.catalog_caveat) mask |= kPitfallCatalogCaveat;
  if (f.nodes > 1 && f.network_gbps && *f.network_gbps < 25.0) mask |= kPitfallSlowInterNode;
  if (f.nodes > 1 && f.network_assumed) mask |= kPitfallNetworkAssumed;
  if (f.spot && !f.checkpointing) mask |= kPitfallSpotNoCheckpoint;
  if (f.spot && !f.spot_risk_adjusted) mask |= kPitfallSpotNotRiskAdjusted;
  if (f.headroom_fraction < 0.10) mask |= kPitfallLowHeadroom;
  if (f.deadline_seconds && f.p90_seconds > *f.deadline_seconds) {
    mask |= kPitfallDeadlineMissedP90;
  }
  if (f.budget_usd && f.expected_usd > *f.budget_usd) mask |= kPitfallBudgetExceeded;
  // The budget is checked on the expected cost (the README's contract); the deadline on P90. A row
  // that meets the budget only on average says so: one run in ten costs more.
  if (f.budget_usd && f.expected_usd <= *f.budget_usd && f.p90_usd > *f.budget_usd) {
    mask |= kPitfallBudgetAtRiskP90;
  }
  if (f.global_batch_changed) mask |= kPitfallGlobalBatchChanged;
  if (f.precision_fallback) mask |= kPitfallPrecisionFallback;
  if (f.reserved_term_seconds > 0 &&
      f.total_seconds < kReservedCommitmentShare * f.reserved_term_seconds) {
    mask |= kPitfallReservedCommitment;
  }
  if (f.billing_terms_unknown) mask |= kPitfallBillingTermsUnknown;
  if (f.spot && f.nodes > 1) mask |= kPitfallSpotCapacityRisk;
  if (f.uncalibrated_gpu) mask |= kPitfallUncalibratedGpu;
  if (f.host_ram_short) mask |= kPitfallHostRamShort;
  if (f.host_cpu_short) mask |= kPitfallHostCpuShort;
  return mask;
}

std::string_view PitfallCode(Pitfall p) {
  switch (p) {
    case kPitfallLargeModelSmallGpu:
      return "large-model-small-gpu-unsharded";
    case kPitfallPcieMultiGpu:
      return "pcie-multi-gpu";
    case kPitfallSlowInterNode:
      return "slow-inter-node-network";
    case kPitfallSpotNoCheckpoint:
      return "spot-without-checkpointing";
    case kPitfallLowHeadroom:
      return "low-memory-headroom";
    case kPitfallDeadlineMissedP90:
      return "deadline-missed-p90";
    case kPitfallBudgetExceeded:
      return "budget-exceeded";
    case kPitfallSpotNotRiskAdjusted:
      return "spot-not-risk-adjusted";
    case kPitfallNetworkAssumed:
      return "network-bandwidth-assumed";
    case kPitfallCatalogCaveat:
      return "catalog-caveat";
    case kPitfallInterconnectUnknown:
      return "interconnect-unknown";
    case kPitfallGlobalBatchChanged:
      return "global-batch-changed";
    case kPitfallPrecisionFallback:
      return "precision-fallback";
    case kPitfallReservedCommitment:
      return "reserved-commitment";
    case kPitfallBillingTermsUnknown:
      return "billing-terms-unknown";
    case kPitfallSpotCapacityRisk:
      return "spot-capacity-risk";
    case kPitfallUncalibratedGpu:
      return "uncalibrated-gpu";
    case kPitfallBudgetAtRiskP90:
      return "budget-at-risk-p90";
    case kPitfallHostRamShort:
      return "host-ram-short";
    case kPitfallHostCpuShort:
      return "host-cpu-short";
  }
  return "unknown";
}

std::string PitfallMessage(Pitfall p) {
  switch (p) {
    case kPitfallLargeModelSmallGpu:
      return "unsharded, the model states (weights, gradients, optimizer states of this method) "
             "take more than three quarters of the GPU's memory: little room for activations; "
             "consider ZeRO/FSDP or a larger GPU";
    case kPitfallPcieMultiGpu:
      return "multi-GPU training over PCIe only: collectives are several times slower than over "
             "NVLink";
    case kPitfallSlowInterNode:
      return "multi-node training over less than 25 Gbit/s between nodes: gradient traffic "
             "will dominate";
    case kPitfallSpotNoCheckpoint:
      return "spot capacity without checkpointing: a preemption loses all progress";
    case kPitfallLowHeadroom:
      return "less than 10 % of GPU memory stays free at the peak: fragmentation or a longer "
             "batch can run out of memory";
    case kPitfallDeadlineMissedP90:
      return "the P90 run time misses the deadline";
    case kPitfallBudgetExceeded:
      return "the expected cost exceeds the budget";
    case kPitfallSpotNotRiskAdjusted:
      return "spot cost is list price x time, not risk-adjusted (no preemption simulation)";
    case kPitfallNetworkAssumed:
      return "the offer's network bandwidth is unknown; multi-node time uses the assumed figure";
    case kPitfallCatalogCaveat:
      return "the catalog marks a figure of this offer, its GPU or its provider's terms as "
             "doubtful "
             "(see the caveat in fulcrum offers / gpus / providers --json): verify before relying "
             "on it";
    case kPitfallInterconnectUnknown:
      return "the offer does not say how its GPUs are connected: planned conservatively as PCIe; "
             "NVLink would be faster";
    case kPitfallGlobalBatchChanged:
      return "the layout runs a global batch near the spec's, the nearest multiple of dp x "
             "micro-batch within --batch-tolerance (default 5 %; --strict-batch keeps it exactly)";
    case kPitfallPrecisionFallback:
      return "the GPU has no tensor-core mode for the requested precision: planned in fp16 "
             "(loss scaling needed)";
    case kPitfallReservedCommitment:
      return "a reservation commits to the whole term, far longer than this job: its cost is the "
             "term's full price (--reserved-owned if it is already paid for)";
    case kPitfallBillingTermsUnknown:
      return "the provider's billing granularity is unknown: billed per minute with a one-minute "
             "minimum (an assumption)";
    case kPitfallSpotCapacityRisk:
      return "multi-node spot needs every node at once: a preemption of any node stops the run "
             "and spare capacity for all of them may not be there";
    case kPitfallUncalibratedGpu:
      return "the step-time model has no measured rows for this GPU's architecture: its time "
             "(and cost) are less certain";
    case kPitfallBudgetAtRiskP90:
      return "the expected cost is within the budget but the P90 cost is not: about one run in "
             "ten costs more than the budget (interruptions, the step-time band)";
    case kPitfallHostRamShort:
      return "the node's host RAM is below what the job needs (the model as each local rank loads "
             "it, a full copy unless the framework says otherwise, plus pinned buffers): the "
             "processes may be killed while loading; load "
             "on rank 0 only (FSDP cpu_ram_efficient_loading / sync_module_states, ZeRO-3 "
             "zero.Init) or pick a node with more RAM (--strict-host drops such nodes)";
    case kPitfallHostCpuShort:
      return "the node has fewer vCPUs than the job needs (2 per GPU: the rank and a dataloader "
             "worker): input loading may stall the GPUs (--strict-host drops such nodes)";
  }
  return "";
}

std::vector<std::string> PitfallCodes(uint32_t mask) {
  std::vector<std::string> out;
  for (int bit = 0; bit < kPitfallCount; ++bit) {
    if (mask & (1u << bit)) out.emplace_back(PitfallCode(static_cast<Pitfall>(1u << bit)));
  }
  return out;
}

}  // namespace fulcrum::plan
