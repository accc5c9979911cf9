#include "plan/classes.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "catalog/offer_query.h"
#include "estimate/estimate.h"

namespace fulcrum::plan {
namespace {

// Node counts tried (multi-node runs in steps that keep common data-parallel sizes).
constexpr int kNodeCounts[] = {1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256};

// Whether an offer is of a measured job's hardware class: same GPU model, GPUs per node and
// interconnect.
bool OfMeasuredClass(const MeasuredFactors& m, const catalog::Offer& o) {
  return m.gpu == o.gpu && m.gpus_per_node == o.gpu_count &&
         m.interconnect == catalog::InterconnectLabel(o.interconnect);
}

// The precision planned on `gpu`: the spec's, or fp16 where the GPU lacks it and the user allows
// the fallback; nullopt: the GPU is skipped.
std::optional<workload::Precision> PlannedPrecision(const catalog::Gpu& gpu,
                                                    workload::Precision wanted,
                                                    bool allow_fallback) {
  if (estimate::PrecisionSupported(gpu, wanted)) return wanted;
  if (allow_fallback && estimate::PrecisionSupported(gpu, workload::Precision::kFp16Mixed)) {
    return workload::Precision::kFp16Mixed;
  }
  return std::nullopt;
}

std::vector<int> NodeCounts(const Constraints& c, int gpus_per_node, double network_gbps,
                            int launcher_max_nodes) {
  std::vector<int> out;
  for (int n : kNodeCounts) {
    if (n * gpus_per_node > c.max_gpus) break;
    if (c.max_nodes && n > *c.max_nodes) break;
    if (launcher_max_nodes > 0 && n > launcher_max_nodes) break;
    if (n > 1 && network_gbps <= 0) break;  // multi-node needs a known (or assumed) network
    out.push_back(n);
  }
  return out;
}

// The class of offer `o` on `gpu` at `precision` with inter-node `network` Gbit/s per node
// (<= 0: unknown); nullopt where no sourced peak exists for the precision.
std::optional<HardwareClass> MakeClass(const catalog::Offer& o, const catalog::Gpu& gpu,
                                       workload::Precision precision, double network,
                                       const PlanSpec& spec, const ConservativeNetwork& low_net,
                                       int launcher_max_nodes) {
  const Constraints& c = spec.constraints;
  catalog::Offer shaped = o;
  shaped.network_gbps = network > 0 ? std::optional<double>(network) : std::nullopt;
  std::optional<estimate::Hardware> hw = estimate::HardwareFor(gpu, shaped, precision);
  if (!hw) return std::nullopt;
  HardwareClass hc;
  hc.gpu = &gpu;
  hc.hardware = *hw;
  hc.capacity_bytes = estimate::CapacityBytesFromGib(gpu.memory_gib);
  hc.network_known = o.network_gbps.has_value();
  hc.network_assumed = !o.network_gbps && c.assume_network_gbps.has_value();
  const double low = low_net.gbps_per_gpu * o.gpu_count;
  if (hc.network_assumed && low > 0 && low < network) {
    shaped.network_gbps = low;
    hc.conservative = estimate::HardwareFor(gpu, shaped, precision);
  }
  hc.precision = precision;
  if (spec.measured) {
    hc.memory_factor = std::max(1.0, spec.measured->memory_factor);
    if (OfMeasuredClass(*spec.measured, o)) hc.step_time_factor = spec.measured->step_time_factor;
  }
  hc.node_counts = NodeCounts(c, o.gpu_count, network, launcher_max_nodes);
  return hc;
}

// --launcher: only the offers and pricing models the launcher can start (a pricing model it
// cannot buy is dropped with a note; no offer left is InvalidInput naming the launcher).
Status KeepLaunchable(const LauncherFilter& launcher, PlanOffers& out) {
  std::erase_if(out.offers,
                [&](const catalog::Offer* o) { return !launcher.max_nodes(*o).has_value(); });
  std::vector<PricingModel>& pricing = out.constraints.pricing;
  for (PricingModel p : pricing) {
    if (std::find(launcher.pricing.begin(), launcher.pricing.end(), p) == launcher.pricing.end()) {
      out.notes.push_back(std::string(PricingModelName(p)) + ": " + launcher.name +
                          " cannot start this pricing model (--launcher); not planned");
    }
  }
  std::erase_if(pricing, [&](PricingModel p) {
    return std::find(launcher.pricing.begin(), launcher.pricing.end(), p) == launcher.pricing.end();
  });
  if (out.offers.empty() || pricing.empty()) {
    ErrorDetail detail;
    detail.field = "--launcher";
    detail.expected = "offers " + launcher.name + " can start";
    detail.found = launcher.name;
    return Status::InvalidInput("--launcher: " + launcher.name +
                                " can start none of the offers and pricing models the other "
                                "filters select")
        .WithDetail(detail);
  }
  return Status::Ok();
}

// Offers of no citable price list (catalog caveat price-unknown) are never costed: dropped with
// a note; when they were all that the filters left, InvalidInput saying how to give a price.
// The end of a drop step: `what` was dropped; when nothing is left the plan is refused (field
// "offers", `expected` vs `what`, the message `refusal` + what + `advice`), else `what` + `note`.
Status NoteOrRefuseDropped(PlanOffers& out, const std::string& what, const char* expected,
                           const char* refusal, const char* advice, const char* note) {
  if (out.offers.empty()) {
    ErrorDetail detail;
    detail.field = "offers";
    detail.expected = expected;
    detail.found = what;
    return Status::InvalidInput(refusal + what + advice).WithDetail(detail);
  }
  out.notes.push_back(what + note);
  return Status::Ok();
}

Status DropUnpriced(PlanOffers& out) {
  const size_t before = out.offers.size();
  std::erase_if(out.offers, [](const catalog::Offer* o) { return catalog::OfferPriceUnknown(*o); });
  const size_t dropped = before - out.offers.size();
  if (dropped == 0) return Status::Ok();
  return NoteOrRefuseDropped(
      out,
      std::to_string(dropped) + " offer" + (dropped == 1 ? "" : "s") +
          " without a citable price (catalog caveat price-unknown)",
      "an offer with a price", "no offer to cost: the filters leave only ",
      "; none has a citable price: save the provider's price response and run fulcrum catalog "
      "import (it writes offers.d)",
      ": not planned (fulcrum catalog import gives them a price)");
}

// Machine types their provider documents for serving only (catalog `use: serving`, e.g. GCP's
// A3 Edge) are no training candidates: dropped with a note naming them (serve-plan still uses
// them); when they were all that the filters left, InvalidInput.
Status DropServingOnly(PlanOffers& out) {
  std::set<std::string> names;
  for (const catalog::Offer* o : out.offers) {
    if (o->serving_only) names.insert(o->provider + " " + o->instance_type);
  }
  if (names.empty()) return Status::Ok();
  std::erase_if(out.offers, [](const catalog::Offer* o) { return o->serving_only; });
  std::string list;
  for (const std::string& name : names) list += (list.empty() ? "" : ", ") + name;
  return NoteOrRefuseDropped(out,
                             "machine types documented for serving (inference) only: " + list +
                                 " (catalog column use; its source in use_source)",
                             "an offer its provider allows for training",
                             "no offer to train on: the filters leave only ",
                             "; fulcrum serve-plan sizes serving on them",
                             ": not planned for training (fulcrum serve-plan uses them)");
}

}  // namespace

Result<PlanOffers> ResolvePlanOffers(const catalog::Catalog& catalog,
                                     const Constraints& constraints) {
  catalog::OfferFilter filter;
  filter.gpus = constraints.gpus;
  filter.providers = constraints.providers;
  filter.regions = constraints.regions;
  if (constraints.pricing != Constraints{}.pricing) {  // the default is never an error
    for (PricingModel p : constraints.pricing) {
      FULCRUM_ASSIGN_OR_RETURN(
          catalog::Pricing pricing,
          catalog::ParsePricing(PricingModelName(IsSpot(p) ? PricingModel::kSpot : p)));
      filter.pricing.push_back(pricing);
    }
  }
  const FilterOrigins& from = constraints.filter_origins;
  filter.gpus_flag = from.gpus;
  filter.providers_flag = from.providers;
  filter.regions_flag = from.regions;
  filter.pricing_flag = from.pricing;
  FULCRUM_ASSIGN_OR_RETURN(catalog::ResolvedFilter resolved,
                           catalog::ResolveOfferFilter(catalog, filter));
  PlanOffers out;
  out.constraints = constraints;
  out.constraints.gpus = resolved.gpus;
  out.constraints.providers = resolved.providers;
  out.constraints.regions = resolved.regions;
  out.offers = std::move(resolved.offers);
  FULCRUM_RETURN_IF_ERROR(DropUnpriced(out));
  FULCRUM_RETURN_IF_ERROR(DropServingOnly(out));
  if (constraints.launcher) FULCRUM_RETURN_IF_ERROR(KeepLaunchable(*constraints.launcher, out));
  for (catalog::Pricing p : resolved.unavailable_pricing) {
    out.notes.push_back(std::string(catalog::PricingName(p)) +
                        ": no offer of the catalog has this pricing model; not planned");
  }
  return out;
}

ConservativeNetwork ConservativeNetworkOf(const catalog::Catalog& catalog) {
  ConservativeNetwork out;
  for (const catalog::Offer& o : catalog.offers()) {
    if (!o.network_gbps || o.gpu_count < 1) continue;
    const double per_gpu = *o.network_gbps / o.gpu_count;
    if (out.from == nullptr || per_gpu < out.gbps_per_gpu) {
      out.gbps_per_gpu = per_gpu;
      out.from = &o;
    }
  }
  return out;
}

HardwareClasses ClassifyOffers(const catalog::Catalog& catalog,
                               const std::vector<const catalog::Offer*>& offers,
                               const PlanSpec& spec, const workload::Training& base) {
  const Constraints& c = spec.constraints;
  HardwareClasses out;
  out.class_of_offer.assign(catalog.offers().size(), -1);
  out.conservative = ConservativeNetworkOf(catalog);
  std::map<std::tuple<std::string, int, int, double, int>, int> class_of_key;
  std::set<std::string> skipped;
  for (const catalog::Offer* offer : offers) {
    const catalog::Offer& o = *offer;
    if (o.gpu_count > c.max_gpus) continue;
    const catalog::Gpu* gpu = catalog.FindGpu(o.gpu);
    if (gpu == nullptr) continue;
    const std::optional<workload::Precision> precision =
        PlannedPrecision(*gpu, base.precision, c.allow_precision_fallback);
    if (!precision) {
      skipped.insert(gpu->name);
      continue;
    }
    const double network = o.network_gbps.value_or(c.assume_network_gbps.value_or(-1));
    // --launcher: its node limit on this offer's provider (0: none) splits the class.
    const int cap = c.launcher ? c.launcher->max_nodes(o).value_or(std::nullopt).value_or(0) : 0;
    const auto key =
        std::make_tuple(gpu->name, o.gpu_count, static_cast<int>(o.interconnect), network, cap);
    auto it = class_of_key.find(key);
    if (it == class_of_key.end()) {
      std::optional<HardwareClass> hc =
          MakeClass(o, *gpu, *precision, network, spec, out.conservative, cap);
      if (!hc) continue;  // no sourced peak for this precision
      hc->precision_fallback = *precision != base.precision;
      out.any_conservative = out.any_conservative || hc->conservative.has_value();
      it = class_of_key.emplace(key, static_cast<int>(out.classes.size())).first;
      out.classes.push_back(std::move(*hc));
    }
    out.class_of_offer[static_cast<size_t>(offer - catalog.offers().data())] = it->second;
    ++out.offers_considered;
  }
  out.skipped_precision.assign(skipped.begin(), skipped.end());
  return out;
}

}  // namespace fulcrum::plan
