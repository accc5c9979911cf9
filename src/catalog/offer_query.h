// Filtering and ranking of a Catalog's offers for `fulcrum offers` (and any caller that wants the
// same selection): by GPU, GPU count, price, provider, region, spot; sorted by the hourly price,
// the price per GPU-hour or the bf16 TFLOP/s bought per dollar. Prices are USD per hour of the
// whole instance. Pure functions over an immutable Catalog, thread-safe.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "catalog/catalog.h"
#include "core/status.h"

namespace fulcrum::catalog {

enum class OfferSort { kPrice, kPricePerGpu, kBf16TflopsPerUsd };

struct OfferQuery {
  std::vector<std::string> gpus;           // names or aliases; empty = any GPU
  int min_gpus = 1;                        // instance GPU count >= this
  std::optional<double> max_usd_per_hour;  // on the price used (spot with `spot`)
  std::vector<std::string> providers;      // provider ids or display names; empty = any
  std::string region;                      // case-insensitive substring of the region; "" = any
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

// The matching offers, best first; offers whose sort value is unknown come last. An unknown GPU
// or provider name is NotFound / InvalidInput naming the value.
Result<std::vector<RankedOffer>> QueryOffers(const Catalog& catalog, const OfferQuery& query);

}  // namespace fulcrum::catalog
