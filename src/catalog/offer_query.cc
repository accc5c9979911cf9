#include "catalog/offer_query.h"

#include <algorithm>
#include <cctype>
#include <functional>

#include "core/input_error.h"
#include "core/parse.h"

namespace fulcrum::catalog {
namespace {

constexpr Pricing kAllPricing[] = {Pricing::kOnDemand, Pricing::kSpot, Pricing::kReserved1y,
                                   Pricing::kReserved3y};

bool Contains(const std::vector<std::string>& names, std::string_view value) {
  return std::any_of(names.begin(), names.end(),
                     [&](const std::string& n) { return EqualsIgnoreCase(n, value); });
}

void AddUnique(std::vector<std::string>& names, const std::string& value) {
  if (!Contains(names, value)) names.push_back(value);
}

std::string Join(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& name : names) out += (out.empty() ? "" : ", ") + name;
  return out;
}

// InvalidInput for a name the catalog does not know, with the nearest known names.
Status UnknownName(const std::string& flag, const std::string& what, const std::string& found,
                   const std::vector<std::string>& known) {
  ErrorDetail detail;
  detail.field = flag;
  detail.expected = what;
  detail.found = found;
  detail.nearest = NearestNames(found, known);
  std::string hint = detail.nearest.empty() ? "" : "; nearest: " + Join(detail.nearest);
  return Status::InvalidInput(flag + ": expected " + what + ", found \"" + found + "\"" + hint)
      .WithDetail(detail);
}

Status ResolveGpus(const Catalog& catalog, const OfferFilter& filter, ResolvedFilter& out) {
  for (const auto& name : filter.gpus) {
    auto gpus = catalog.ResolveGpus(name);
    if (!gpus.ok()) {
      const ErrorDetail* d = gpus.status().detail();
      ErrorDetail detail = d ? *d : ErrorDetail{};
      detail.field = filter.gpus_flag;
      return Status::InvalidInput(filter.gpus_flag + ": " + gpus.status().message())
          .WithDetail(detail);
    }
    for (const Gpu* gpu : *gpus) AddUnique(out.gpus, gpu->name);
  }
  return Status::Ok();
}

Status ResolveProviders(const Catalog& catalog, const OfferFilter& filter, ResolvedFilter& out) {
  std::vector<std::string> known;
  for (const auto& p : catalog.providers()) known.push_back(p.name);
  for (const auto& o : catalog.offers()) AddUnique(known, o.provider);  // offers.d providers
  for (const auto& name : filter.providers) {
    if (const Provider* provider = catalog.FindProvider(name)) {
      AddUnique(out.providers, provider->name);
    } else if (Contains(known, Trim(name))) {
      AddUnique(out.providers, std::string(Trim(name)));
    } else {
      return UnknownName(filter.providers_flag, "a provider of the catalog (" + Join(known) + ")",
                         name, known);
    }
  }
  return Status::Ok();
}

// A boundary between two characters of a region name: punctuation or a space on either side, or
// a change between letters and digits ("us-central|1").
bool IsBoundary(const std::string& text, size_t at) {
  if (at == 0 || at >= text.size()) return true;
  const auto alnum = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
  const auto digit = [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; };
  if (!alnum(text[at - 1]) || !alnum(text[at])) return true;
  return digit(text[at - 1]) != digit(text[at]);
}

// A pattern matches a region when it occurs in the name, case-insensitively, starting or ending
// at a boundary of its parts: "us" matches "us-east-1", "United States, US, NA" and Azure's
// "eastus", not the "us" inside "Australia, AU, OC"; "central" matches "us-central1".
bool RegionMatches(const std::string& region, const std::string& pattern) {
  const std::string text = ToLower(region);
  const std::string part = ToLower(Trim(pattern));
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) {
    if (IsBoundary(text, at) || IsBoundary(text, at + part.size())) return true;
  }
  return false;
}

Status ResolveRegions(const Catalog& catalog, const OfferFilter& filter, ResolvedFilter& out) {
  std::vector<std::string> known;
  for (const auto& o : catalog.offers()) AddUnique(known, o.region);
  for (const auto& pattern : filter.regions) {
    bool any = false;
    for (const auto& region : known) {
      if (RegionMatches(region, pattern)) {
        AddUnique(out.regions, region);
        any = true;
      }
    }
    if (!any) {
      return UnknownName(filter.regions_flag, "a region of the catalog's offers or part of one",
                         pattern, known);
    }
  }
  return Status::Ok();
}

bool AnyOfferHas(const Catalog& catalog, Pricing pricing) {
  return std::any_of(catalog.offers().begin(), catalog.offers().end(), [&](const Offer& o) {
    return OfferUsdPerHour(o, catalog.FindProvider(o.provider), pricing).has_value();
  });
}

// Pricing models no offer has are listed in `out`; when that is every model asked for, it is an
// error naming the models some offer has.
Status CheckPricingKnown(const Catalog& catalog, const OfferFilter& filter, ResolvedFilter& out) {
  std::vector<std::string> missing;
  for (Pricing pricing : filter.pricing) {
    if (!AnyOfferHas(catalog, pricing)) {
      out.unavailable_pricing.push_back(pricing);
      missing.emplace_back(PricingName(pricing));
    }
  }
  if (filter.pricing.empty() || missing.size() < filter.pricing.size()) return Status::Ok();
  std::vector<std::string> offered;
  for (Pricing other : kAllPricing) {
    if (AnyOfferHas(catalog, other)) offered.emplace_back(PricingName(other));
  }
  const bool reserved = std::any_of(missing.begin(), missing.end(), [](const std::string& m) {
    return m.rfind("reserved", 0) == 0;
  });
  ErrorDetail detail;
  detail.field = filter.pricing_flag;
  detail.expected = "a pricing model some offer has (" + Join(offered) + ")";
  detail.found = Join(missing);
  detail.nearest = offered;
  return Status::InvalidInput(
             filter.pricing_flag + ": no offer of the catalog has " + detail.found + " prices" +
             (reserved ? " (no provider has a sourced discount for that term)" : "") +
             "; offered: " + Join(offered))
      .WithDetail(detail);
}

struct Stage {
  std::string flag;
  std::function<bool(const Offer&)> keep;
};

}  // namespace

std::string_view PricingName(Pricing pricing) {
  switch (pricing) {
    case Pricing::kOnDemand:
      return "on_demand";
    case Pricing::kSpot:
      return "spot";
    case Pricing::kReserved1y:
      return "reserved_1y";
    case Pricing::kReserved3y:
      return "reserved_3y";
  }
  return "on_demand";
}

bool OfferPriceUnknown(const Offer& offer) {
  return !offer.on_demand_usd_per_hour && !offer.spot_usd_per_hour;
}

Result<Pricing> ParsePricing(std::string_view text, std::string_view flag) {
  std::string key = ToLower(Trim(text));
  std::replace(key.begin(), key.end(), '-', '_');
  std::vector<std::string> names;
  for (Pricing p : kAllPricing) {
    if (key == PricingName(p)) return p;
    names.emplace_back(PricingName(p));
  }
  ErrorDetail detail;
  detail.field = std::string(flag);
  detail.expected = "one of " + Join(names);
  detail.found = std::string(text);
  detail.nearest = NearestNames(key, names);
  return Status::InvalidInput(std::string(flag) + ": expected " + detail.expected + ", found \"" +
                              detail.found + "\"")
      .WithDetail(detail);
}

std::optional<double> OfferUsdPerHour(const Offer& offer, const Provider* provider,
                                      Pricing pricing) {
  switch (pricing) {
    case Pricing::kOnDemand:
      return offer.on_demand_usd_per_hour;
    case Pricing::kSpot:
      return offer.spot_usd_per_hour;
    case Pricing::kReserved1y:
    case Pricing::kReserved3y: {
      if (provider == nullptr || !offer.on_demand_usd_per_hour) return std::nullopt;
      const std::optional<double>& pct = pricing == Pricing::kReserved1y
                                             ? provider->reserved_1y_discount_pct
                                             : provider->reserved_3y_discount_pct;
      if (!pct) return std::nullopt;
      return *offer.on_demand_usd_per_hour * (1.0 - *pct / 100.0);
    }
  }
  return std::nullopt;
}

Result<ResolvedFilter> ResolveOfferFilter(const Catalog& catalog, const OfferFilter& filter) {
  ResolvedFilter out;
  FULCRUM_RETURN_IF_ERROR(ResolveGpus(catalog, filter, out));
  FULCRUM_RETURN_IF_ERROR(ResolveProviders(catalog, filter, out));
  FULCRUM_RETURN_IF_ERROR(ResolveRegions(catalog, filter, out));
  FULCRUM_RETURN_IF_ERROR(CheckPricingKnown(catalog, filter, out));
  std::vector<Stage> stages;
  if (!out.gpus.empty()) {
    stages.push_back({filter.gpus_flag + " " + Join(filter.gpus),
                      [&](const Offer& o) { return Contains(out.gpus, o.gpu); }});
  }
  if (!out.providers.empty()) {
    stages.push_back({filter.providers_flag + " " + Join(filter.providers),
                      [&](const Offer& o) { return Contains(out.providers, o.provider); }});
  }
  if (!out.regions.empty()) {
    stages.push_back({filter.regions_flag + " " + Join(filter.regions),
                      [&](const Offer& o) { return Contains(out.regions, o.region); }});
  }
  if (!filter.pricing.empty()) {
    std::vector<std::string> names;
    for (Pricing p : filter.pricing) names.emplace_back(PricingName(p));
    const std::string& flag = filter.pricing_flag;
    // "--spot" needs no value after it; "--pricing reserved_1y" does.
    const bool flag_says_it =
        names.size() == 1 && flag.size() >= names[0].size() &&
        flag.compare(flag.size() - names[0].size(), names[0].size(), names[0]) == 0;
    stages.push_back({flag_says_it ? flag : flag + " " + Join(names), [&](const Offer& o) {
                        const Provider* provider = catalog.FindProvider(o.provider);
                        return std::any_of(
                            filter.pricing.begin(), filter.pricing.end(),
                            [&](Pricing p) { return OfferUsdPerHour(o, provider, p).has_value(); });
                      }});
  }
  std::vector<const Offer*> offers;
  for (const Offer& o : catalog.offers()) offers.push_back(&o);
  std::string passed;  // the filters applied so far, for the message
  for (const Stage& stage : stages) {
    std::vector<const Offer*> kept;
    for (const Offer* o : offers) {
      if (stage.keep(*o)) kept.push_back(o);
    }
    if (kept.empty()) {
      const bool unpriced = std::all_of(offers.begin(), offers.end(),
                                        [](const Offer* o) { return OfferPriceUnknown(*o); });
      ErrorDetail detail;
      detail.field = stage.flag.substr(0, stage.flag.find(' '));
      detail.expected = "a filter that leaves at least one offer";
      detail.found = stage.flag.substr(stage.flag.find(' ') + 1);
      return Status::InvalidInput("no offer matches: " + stage.flag + " leaves none of the " +
                                  std::to_string(offers.size()) + " offers" +
                                  (passed.empty() ? " of the catalog" : " that pass " + passed) +
                                  (unpriced ? " (none has a citable price: save the provider's "
                                              "price response and run fulcrum catalog import)"
                                            : ""))
          .WithDetail(detail);
    }
    offers = std::move(kept);
    passed += (passed.empty() ? "" : " and ") + stage.flag;
  }
  for (Pricing p : filter.pricing) {
    bool any = std::any_of(offers.begin(), offers.end(), [&](const Offer* o) {
      return OfferUsdPerHour(*o, catalog.FindProvider(o->provider), p).has_value();
    });
    if (any) out.pricing.push_back(p);
  }
  out.offers = std::move(offers);
  return out;
}

namespace {

bool Matches(const Offer& offer, const OfferQuery& query) {
  if (offer.gpu_count < query.min_gpus) return false;
  std::optional<double> price = query.spot ? offer.spot_usd_per_hour : offer.on_demand_usd_per_hour;
  // An offer without any citable price is listed (ranked last, price unknown) unless a price
  // limit asks for a price it cannot show.
  if (!price) return !query.spot && !query.max_usd_per_hour && OfferPriceUnknown(offer);
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
  OfferFilter filter;
  filter.gpus = query.gpus;
  filter.providers = query.providers;
  filter.regions = query.regions;
  if (query.spot) filter.pricing = {Pricing::kSpot};
  filter.pricing_flag = "--spot";
  FULCRUM_ASSIGN_OR_RETURN(ResolvedFilter resolved, ResolveOfferFilter(catalog, filter));
  std::vector<RankedOffer> result;
  for (const Offer* offer : resolved.offers) {
    if (Matches(*offer, query)) result.push_back(Rank(catalog, *offer, query.spot));
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
