// Pitfall warnings for a planned run: each is a bit in a mask (cheap in the search's inner
// loop) with a code and a message for the reports. Detection is a pure function of plain facts
// about the candidate; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fulcrum::plan {

enum Pitfall : uint32_t {
  kPitfallLargeModelSmallGpu = 1u << 0,    // unsharded model states > 3/4 of the GPU's memory
  kPitfallPcieMultiGpu = 1u << 1,          // several GPUs talking over PCIe only
  kPitfallSlowInterNode = 1u << 2,         // multi-node over < 25 Gbit/s
  kPitfallSpotNoCheckpoint = 1u << 3,      // spot capacity but the job does not checkpoint
  kPitfallLowHeadroom = 1u << 4,           // < 10 % of GPU memory free at the peak
  kPitfallDeadlineMissedP90 = 1u << 5,     // P90 time beyond the deadline
  kPitfallBudgetExceeded = 1u << 6,        // expected cost beyond the budget
  kPitfallSpotNotRiskAdjusted = 1u << 7,   // spot cost is list price x time (no simulator)
  kPitfallNetworkAssumed = 1u << 8,        // multi-node on an assumed network bandwidth
  kPitfallGlobalBatchChanged = 1u << 9,    // no layout keeps the spec's global batch
  kPitfallPrecisionFallback = 1u << 10,    // the GPU lacks the precision: planned in fp16
  kPitfallReservedCommitment = 1u << 11,   // reserved term far longer than the job
  kPitfallBillingTermsUnknown = 1u << 12,  // billing granularity assumed (per minute)
  kPitfallSpotCapacityRisk = 1u << 13,     // multi-node spot: every node must be held at once
  kPitfallUncalibratedGpu = 1u << 14,      // no calibration rows for the GPU's architecture
  kPitfallCatalogCaveat = 1u << 15,        // the GPU, offer or provider row carries a caveat
  kPitfallInterconnectUnknown = 1u << 16,  // several GPUs, intra-node interconnect unknown
  kPitfallBudgetAtRiskP90 = 1u << 17,      // expected cost within the budget, P90 cost beyond it
  kPitfallHostRamShort = 1u << 18,         // a node's host RAM below the job's (plan/host.h)
  kPitfallHostCpuShort = 1u << 19,         // a node's vCPUs below the job's (plan/host.h)
};
inline constexpr int kPitfallCount = 20;

struct PitfallFacts {
  // Weights + gradients + optimizer states on one GPU for the run's method (the estimator's
  // memory breakdown: a frozen LoRA base holds weights only, QLoRA's in 4 bits) and the GPU's
  // memory, in bytes.
  double model_state_bytes = 0;
  double capacity_bytes = 0;
  bool sharded = false;  // tp > 1, pp > 1 or ZeRO >= 1 with dp > 1
  int gpus = 1;
  int nodes = 1;
  bool pcie_only = false;              // intra-node interconnect is PCIe (known)
  bool interconnect_unknown = false;   // the offer does not say (planned as PCIe)
  bool catalog_caveat = false;         // the offer's, GPU's or provider's row has a `caveat`
  std::optional<double> network_gbps;  // nullopt = unknown
  bool network_assumed = false;
  bool spot = false;
  bool spot_risk_adjusted = true;
  bool checkpointing = true;
  double headroom_fraction = 1;
  std::optional<double> deadline_seconds;
  double p90_seconds = 0;
  std::optional<double> budget_usd;
  double expected_usd = 0;
  double p90_usd = 0;  // the one P90's cost
  bool global_batch_changed = false;
  bool precision_fallback = false;
  double reserved_term_seconds = 0;  // 0: not reserved, or already owned
  double total_seconds = 0;
  bool billing_terms_unknown = false;
  bool uncalibrated_gpu = false;
  // plan/host.h HostNeeds: the node's host RAM / vCPUs are known and below the job's needs.
  bool host_ram_short = false;
  bool host_cpu_short = false;
};

// Unsharded model states above this share of the GPU's memory leave little room for
// activations (large-model-small-gpu-unsharded). The share of issue 4's rule at its boundary: a
// 2 B-parameter full fine-tune at 16 bytes per parameter (mixed-precision AdamW, ZeRO paper arXiv
// 1910.02054 Sec. 3.1: 2 + 2 + 12) is 32 GB of states on a 40 GiB card, 0.75 of it; measured on
// the method's real states, a LoRA 7B (13.5 GB frozen bf16 base, a third of 40 GB) no longer fires.
inline constexpr double kLargeModelStateShare = 0.75;

// A reserved term counts as much longer than the job when the job uses less than this share.
inline constexpr double kReservedCommitmentShare = 0.5;

uint32_t DetectPitfalls(const PitfallFacts& facts);

// "pcie-multi-gpu" and similar (stable codes for JSON and tests).
std::string_view PitfallCode(Pitfall p);
// One sentence for humans.
std::string PitfallMessage(Pitfall p);
// The codes of every bit set, in bit order.
std::vector<std::string> PitfallCodes(uint32_t mask);

}  // namespace fulcrum::plan
