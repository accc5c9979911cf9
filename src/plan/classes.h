// The planner's first stage: the offers a plan may use, resolved once against the catalog (the
// one offer filter of catalog/offer_query, for the CLI and library callers alike), then grouped
// into hardware classes (same GPU, GPUs per node, interconnect and network) that share one layout
// search. A class knows its hardware model, the precision planned on it, the node counts tried
// and a measured job's correction. Pure functions over an immutable Catalog, thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "catalog/catalog.h"
#include "core/status.h"
#include "estimate/compute.h"
#include "plan/spec.h"
#include "workload/training.h"

namespace fulcrum::plan {

// The offers a plan's constraints select: `constraints` with the filter's names resolved
// (GPU families as their variants, region parts as the regions matched), the offers in catalog
// order, and a note per asked-for pricing model no offer has. Errors (InvalidInput naming the
// constraint's origin and the nearest names): an unknown GPU, provider or region, a filter that
// leaves no offer (catalog::ResolveOfferFilter), or only offers without a price or only machine
// types documented for serving (catalog::Offer::serving_only: never training candidates, left
// out with a note). The default pricing list is never an error.
// constraints.launcher (plan --launcher) keeps the offers and pricing models it can start.
struct PlanOffers {
  Constraints constraints;
  std::vector<const catalog::Offer*> offers;
  std::vector<std::string> notes;
};
Result<PlanOffers> ResolvePlanOffers(const catalog::Catalog& catalog,
                                     const Constraints& constraints);

// Offers that share hardware share one layout search.
struct HardwareClass {
  const catalog::Gpu* gpu = nullptr;
  estimate::Hardware hardware;
  double capacity_bytes = 0;
  bool network_known = false;
  bool network_assumed = false;
  // Network assumed (not published) and above the conservative figure: the same node at the
  // conservative figure, for which multi-node layouts are chosen and the P90 is planned
  // (ConservativeNetwork).
  std::optional<estimate::Hardware> conservative;
  workload::Precision precision = workload::Precision::kBf16Mixed;
  bool precision_fallback = false;
  std::vector<int> node_counts;  // increasing
  // A measured job's correction for this class (spec.measured): the step time on the measured
  // class only, the memory on every class.
  double step_time_factor = 1;
  double memory_factor = 1;
};

// The conservative inter-node network of an offer whose provider publishes none: the lowest
// per-GPU figure any multi-GPU offer of the catalog publishes (each row carries its source;
// today GCP's A2 machines, "up to 100 Gbps" over ordinary gVNIC Ethernet without RDMA, for 16
// GPUs in a2-megagpu-16g: cloud.google.com/compute/docs/gpus/gpu-network-bandwidth) times the
// offer's GPUs. A spec's `assume_network_gbps` plans the mean; the P90 uses this figure, so an
// optimistic assumption spread over many nodes is not credited in the deadline check or the
// balanced cost.
struct ConservativeNetwork {
  double gbps_per_gpu = 0;  // 0: no offer publishes a figure
  const catalog::Offer* from = nullptr;
};
ConservativeNetwork ConservativeNetworkOf(const catalog::Catalog& catalog);

struct HardwareClasses {
  std::vector<HardwareClass> classes;
  std::vector<int> class_of_offer;  // per Catalog::offers() index; -1: not planned
  // GPUs left out for want of a tensor-core mode of the planned precision (sorted, unique).
  std::vector<std::string> skipped_precision;
  ConservativeNetwork conservative;
  bool any_conservative = false;  // some class plans its P90 on the conservative network
  int64_t offers_considered = 0;  // offers given a class
};

// Groups `offers` (pointers into catalog.offers(), e.g. PlanOffers::offers) into hardware
// classes for `base` (the spec's training with its batch settled). An offer is left out when it
// has more GPUs than constraints.max_gpus, its GPU is unknown, its GPU has no tensor-core mode of
// the precision (unless constraints.allow_precision_fallback and fp16 runs: then fp16), or no
// sourced peak exists for the precision. Node counts: 1, 2, 3, 4, 6, 8, ... 256 within max_gpus
// and max_nodes; more than one only with a published or assumed network.
HardwareClasses ClassifyOffers(const catalog::Catalog& catalog,
                               const std::vector<const catalog::Offer*>& offers,
                               const PlanSpec& spec, const workload::Training& base);

}  // namespace fulcrum::plan
