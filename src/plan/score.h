// The five-criteria score of a candidate (stability, performance, cost, usability, support),
// each in [0, 1], and the weighted total. Offer-level criteria come from provider terms; unknown
// attributes score neutral (0.5) and are flagged (a bit per unknown attribute). Performance and
// cost are relative to the best candidate of the plan (best / own). Pure, thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "catalog/catalog.h"
#include "plan/spec.h"

namespace fulcrum::plan {

struct Scores {
  double total = 0;
  double stability = 0;
  double performance = 0;
  double cost = 0;
  double usability = 0;
  double support = 0;
  uint32_t unknown = 0;  // UnknownAttribute bits: which inputs were unknown (scored neutral)
};

enum UnknownAttribute : uint32_t {
  kUnknownSla = 1u << 0,
  kUnknownFailureRate = 1u << 1,
  kUnknownBareMetal = 1u << 2,
  kUnknownGranularity = 1u << 3,
  kUnknownSupportHours = 1u << 4,
  kUnknownSupportResponse = 1u << 5,
  kUnknownProvider = 1u << 6,
  kUnknownImages = 1u << 7,
};
inline constexpr int kUnknownAttributeCount = 8;

// "stability.sla_uptime" and similar.
std::vector<std::string> UnknownAttributeNames(uint32_t mask);

// Neutral score of an unknown attribute.
inline constexpr double kNeutralScore = 0.5;

// Stability, usability and support of an offer on a pricing model with `nodes` nodes (the
// offer-level criteria). Performance and cost are filled by FinishScores.
Scores OfferScores(const catalog::Provider* provider, PricingModel pricing, int nodes);

// Fills performance = best_seconds / seconds, cost = best_usd / usd and the weighted total.
void FinishScores(Scores& scores, double seconds, double best_seconds, double usd, double best_usd,
                  const Weights& weights);

}  // namespace fulcrum::plan
