// Filtering and ranking of a Catalog's offers. One offer filter for every command that selects
// offers (`fulcrum offers`, `fulcrum plan`): GPUs (names, aliases or families), providers,
// regions and pricing models are resolved against the catalog, an unknown name is an error naming
// the nearest known names, and a filter that leaves no offer says which one emptied the set.
// QueryOffers adds GPU count, price and spot filters and sorts by the hourly price, the price per
// GPU-hour or the bf16 TFLOP/s bought per dollar. Prices are USD per hour of the whole instance.
// Pure functions over an immutable Catalog, thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "catalog/catalog.h"
#include "core/status.h"

namespace fulcrum::catalog {

enum class OfferSort { kPrice, kPricePerGpu, kBf16TflopsPerUsd };

// How an offer is paid for. Reserved prices are the on-demand price less the provider's sourced
// reserved discount for the term.
enum class Pricing { kOnDemand, kSpot, kReserved1y, kReserved3y };

// "on_demand", "spot", "reserved_1y", "reserved_3y".
std::string_view PricingName(Pricing pricing);
// The names above, also with '-' for '_' and case-insensitive; InvalidInput naming `flag`.
Result<Pricing> ParsePricing(std::string_view text, std::string_view flag = "--pricing");
// True for an offer of no citable price list (both prices null, caveat price-unknown): listed by
// QueryOffers (last), never costed until the user saves a price for it in offers.d.
bool OfferPriceUnknown(const Offer& offer);
// USD per instance-hour under `pricing`; nullopt = the offer has no such price.
std::optional<double> OfferUsdPerHour(const Offer& offer, const Provider* provider,
                                      Pricing pricing);

// The name filters shared by every command; an empty list means "any". The *_flag strings name
// the filter in messages ("--gpus", "constraints.gpus").
struct OfferFilter {
  std::vector<std::string> gpus;       // names, aliases or families ("A100" = every A100)
  std::vector<std::string> providers;  // provider ids or display names
  std::vector<std::string> regions;    // a region's name or part of it, case-insensitive
  std::vector<Pricing> pricing;        // an offer passes when it has one of these prices
  std::string gpus_flag = "--gpu";
  std::string providers_flag = "--provider";
  std::string regions_flag = "--region";
  std::string pricing_flag = "--pricing";
};

// A filter resolved against a catalog: canonical names, exact region names.
struct ResolvedFilter {
  std::vector<std::string> gpus;       // canonical Gpu::name (families expanded); empty = any
  std::vector<std::string> providers;  // Provider::name (or a user offers.d provider); empty = any
  std::vector<std::string> regions;    // exact regions of the offers matched; empty = any
  std::vector<Pricing> pricing;        // those some matching offer has; empty = any
  std::vector<Pricing> unavailable_pricing;  // asked for, but no offer of the catalog has it
  std::vector<const Offer*> offers;          // the offers passing every filter, catalog order
};

// Resolves `filter` against `catalog`. Errors (exit code 2, with an ErrorDetail whose `nearest`
// lists the closest known names): a GPU, provider or region the catalog does not know; pricing
// models none of which any offer has (when only some are missing they are listed in
// unavailable_pricing); a filter that leaves no offer ("--region eu-west leaves none of the 12
// offers that pass --provider aws"), applied in the order gpus, providers, regions, pricing.
Result<ResolvedFilter> ResolveOfferFilter(const Catalog& catalog, const OfferFilter& filter);

struct OfferQuery {
  std::vector<std::string> gpus;           // names, aliases or families; empty = any GPU
  int min_gpus = 1;                        // instance GPU count >= this
  std::optional<double> max_usd_per_hour;  // on the price used (spot with `spot`)
  std::vector<std::string> providers;      // provider ids or display names; empty = any
  std::vector<std::string> regions;        // a region's name or part of it; empty = any
  bool spot = false;                       // rank by spot price; offers without spot are left out
  OfferSort sort = OfferSort::kPrice;
  std::optional<size_t> limit;
};

struct RankedOffer {
  const Offer* offer = nullptr;  // points into the Catalog
  const Gpu* gpu = nullptr;
  std::optional<double> usd_per_hour;  // the price used (on-demand or spot)
  std::optional<double> usd_per_gpu_hour;
  std::optional<double> bf16_tflops_per_usd;  // GPU count x dense bf16 / usd_per_hour
};

// Parses "price", "price-per-gpu", "bf16-tflops-per-usd".
Result<OfferSort> ParseOfferSort(const std::string& text);

// The matching offers, best first; offers whose sort value is unknown come last. The name
// filters go through ResolveOfferFilter (same errors, flags --gpu, --provider, --region).
Result<std::vector<RankedOffer>> QueryOffers(const Catalog& catalog, const OfferQuery& query);

}  // namespace fulcrum::catalog
