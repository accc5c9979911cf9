// The five-criteria score of a candidate (stability, performance, cost, usability, support),
// each in [0, 1], and the weighted total (the `balanced` objective). Offer-level criteria come
// from provider terms; unknown attributes score neutral (0.5) and are flagged (a bit per unknown
// attribute). Run-level criteria: performance saturates once the run finishes within the
// saturation time (half the deadline: met with a 2x margin), cost is relative to the cheapest
// feasible candidate, stability counts this run's expected interruptions and the capacity risk
// of many nodes. Pure, thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "catalog/catalog.h"
#include "plan/spec.h"

namespace fulcrum::plan {

struct Scores {
  double total = 0;
  double provider_stability = 0;  // the provider part of stability (SLA, bare metal)
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

// Provider stability, usability and support of an offer with `nodes` nodes (the offer-level
// criteria). Stability, performance and cost are completed by FinishScores.
Scores OfferScores(const catalog::Provider* provider, PricingModel pricing, int nodes);

// What the run-level criteria need of one candidate.
struct RunFacts {
  double p90_seconds = 0;
  double expected_usd = 0;
  double expected_interruptions = 0;  // hardware failures + spot preemptions over the run
  int nodes = 1;
  double p90_usd = 0;  // the one P90's cost (never below expected_usd; 0 = expected_usd)
};

// What the run-level criteria are relative to (the same for every candidate of a plan).
struct ScoreReference {
  double saturation_seconds = 0;  // P90 times at or below this score full performance
  double cheapest_usd = 0;        // expected cost of the cheapest feasible candidate
  double cheapest_p90_usd = 0;    // lowest P90 cost of a feasible candidate (0 = cheapest_usd)
};

// Without a deadline, runs finishing within this time count as fast enough (fulcrum's
// assumption: a run that finishes within a day leaves nothing to wait for overnight).
inline constexpr double kSaturationWithoutDeadlineSeconds = 24 * 3600.0;

// The saturation time: half the deadline (met with a 2x margin at P90) or, without a deadline,
// max(fastest feasible P90, kSaturationWithoutDeadlineSeconds).
double SaturationSeconds(std::optional<double> deadline_seconds, double fastest_p90_seconds);

// Score of the capacity risk of `nodes` nodes (1 for one node, falling with log2(nodes)):
// every node must be obtained at once and any one lost stops the run.
double NodeCountScore(int nodes);

// Completes stability (provider part, 1 / (1 + expected interruptions), node capacity),
// performance = min(1, saturation / P90), cost = exp(1 - own P90 cost / cheapest feasible P90
// cost) (1 at the cheapest, 0.37 at twice it, never 0: dearer rows never tie), and the weighted
// total. Cost is judged at P90,
// what the user must be ready to pay: a row whose time is uncertain (an architecture without
// calibration rows, spot risk extrapolated from other GPUs' traces, a gang of spot nodes) has a
// wider P90 and pays for it here, with no penalty per name.
// Idempotent (may be called again with other references).
void FinishScores(Scores& scores, const RunFacts& run, const ScoreReference& reference,
                  const Weights& weights);

}  // namespace fulcrum::plan
