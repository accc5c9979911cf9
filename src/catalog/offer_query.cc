#include "catalog/offer_query.h"

#include <algorithm>

#include "core/parse.h"

namespace fulcrum::catalog {
namespace {

struct ResolvedQuery {
  std::vector<std::string> gpu_names;
  std::vector<std::string> provider_names;
};

Result<ResolvedQuery> Resolve(const Catalog& catalog, const OfferQuery& query) {
  ResolvedQuery resolved;
  for (const auto& name : query.gpus) {
    FULCRUM_ASSIGN_OR_RETURN(const Gpu* gpu, catalog.ResolveGpu(name));
    resolved.gpu_names.push_back(gpu->name);
  }
  for (const auto& name : query.providers) {
    if (const Provider* provider = catalog.FindProvider(name)) {
      resolved.provider_names.push_back(provider->name);
      continue;
    }
    // A provider that only a user's offers.d file names is still a valid filter.
    bool in_offers =
        std::any_of(catalog.offers().begin(), catalog.offers().end(),
                    [&](const Offer& o) { return EqualsIgnoreCase(o.provider, name); });
    if (!in_offers) {
      std::string known;
      for (const auto& p : catalog.providers()) known += (known.empty() ? "" : ", ") + p.name;
      return Status::InvalidInput("--provider: expected one of " + known + ", found \"" + name +
                                  "\"");
    }
    resolved.provider_names.push_back(name);
  }
  return resolved;
}

bool Matches(const Offer& offer, const OfferQuery& query, const ResolvedQuery& resolved) {
  auto contains = [](const std::vector<std::string>& names, const std::string& value) {
    return names.empty() || std::any_of(names.begin(), names.end(), [&](const std::string& n) {
             return EqualsIgnoreCase(n, value);
           });
  };
  if (!contains(resolved.gpu_names, offer.gpu)) return false;
  if (!contains(resolved.provider_names, offer.provider)) return false;
  if (offer.gpu_count < query.min_gpus) return false;
  if (!query.region.empty() &&
      ToLower(offer.region).find(ToLower(query.region)) == std::string::npos) {
    return false;
  }
  std::optional<double> price = query.spot ? offer.spot_usd_per_hour : offer.on_demand_usd_per_hour;
  if (!price) return false;
  if (query.max_usd_per_hour && *price > *query.max_usd_per_hour) return false;
  return true;
}

RankedOffer Rank(const Catalog& catalog, const Offer& offer, bool spot) {
  RankedOffer ranked;
  ranked.offer = &offer;
  ranked.gpu = catalog.FindGpu(offer.gpu);
  ranked.usd_per_hour = spot ? offer.spot_usd_per_hour : offer.on_demand_usd_per_hour;
  if (ranked.usd_per_hour) {
    ranked.usd_per_gpu_hour = *ranked.usd_per_hour / offer.gpu_count;
    if (ranked.gpu && ranked.gpu->bf16_tflops && *ranked.usd_per_hour > 0) {
      ranked.bf16_tflops_per_usd =
          *ranked.gpu->bf16_tflops * offer.gpu_count / *ranked.usd_per_hour;
    }
  }
  return ranked;
}

// Sort value where smaller is better; nullopt = unknown (sorted last).
std::optional<double> SortValue(const RankedOffer& ranked, OfferSort sort) {
  switch (sort) {
    case OfferSort::kPrice:
      return ranked.usd_per_hour;
    case OfferSort::kPricePerGpu:
      return ranked.usd_per_gpu_hour;
    case OfferSort::kBf16TflopsPerUsd:
      if (!ranked.bf16_tflops_per_usd) return std::nullopt;
      return -*ranked.bf16_tflops_per_usd;
  }
  return std::nullopt;
}

}  // namespace

Result<OfferSort> ParseOfferSort(const std::string& text) {
  std::string key = ToLower(Trim(text));
  if (key == "price") return OfferSort::kPrice;
  if (key == "price-per-gpu") return OfferSort::kPricePerGpu;
  if (key == "bf16-tflops-per-usd") return OfferSort::kBf16TflopsPerUsd;
  return Status::InvalidInput(
      "--sort: expected price, price-per-gpu or bf16-tflops-per-usd, found \"" + text + "\"");
}

Result<std::vector<RankedOffer>> QueryOffers(const Catalog& catalog, const OfferQuery& query) {
  FULCRUM_ASSIGN_OR_RETURN(ResolvedQuery resolved, Resolve(catalog, query));
  std::vector<RankedOffer> result;
  for (const Offer& offer : catalog.offers()) {
    if (Matches(offer, query, resolved)) result.push_back(Rank(catalog, offer, query.spot));
  }
  std::stable_sort(result.begin(), result.end(), [&](const RankedOffer& a, const RankedOffer& b) {
    std::optional<double> va = SortValue(a, query.sort), vb = SortValue(b, query.sort);
    if (va.has_value() != vb.has_value()) return va.has_value();
    if (va && *va != *vb) return *va < *vb;
    return a.usd_per_hour.value_or(0) < b.usd_per_hour.value_or(0);
  });
  if (query.limit && result.size() > *query.limit) result.resize(*query.limit);
  return result;
}

}  // namespace fulcrum::catalog
