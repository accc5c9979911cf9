// The planner's third stage: costing. Each planned offer x node count (with a layout found) x
// pricing model becomes a candidate whose run is costed (plan/cost.h: time with start-up,
// checkpoints and failures, billing, spot through the simulator), banded by the estimator's
// uncertainty, checked for pitfalls (plan/pitfalls.h) and given its offer scores. The spot
// simulator is the expensive part: spot candidates that provably cannot reach the top N or the
// Pareto front are not simulated (SpotCandidatesToSimulate). Runs on the one parallel-for; the
// result does not depend on the thread count. Pure and thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "plan/candidate.h"
#include "plan/classes.h"
#include "plan/cost.h"
#include "plan/layouts.h"

namespace fulcrum::plan {

// A candidate waiting to be costed.
struct Pending {
  Candidate cand;
  RunInput run;
  const HardwareClass* hc = nullptr;
};

// Every offer x node count x pricing model with a layout and a price, in catalog order, then by
// node count and the spec's pricing order (spot only where the spec allows interruptions).
// `extras`: per Catalog::offers() index.
std::vector<Pending> PendingCandidates(const PlanInputs& in, const HardwareClasses& classes,
                                       const LayoutTable& layouts,
                                       const std::vector<ExtraCosts>& extras);

// Costs one candidate: its uncertainty band, run cost, pitfall warnings, whether it meets the
// deadline (P90) and the budget (expected), and its offer scores (FinishScores comes in ranking).
void CostCandidate(const PlanInputs& in, Pending& p);

// Which spot candidates (indices into `pending`) need the simulator, given the costed exact
// ones (`exact`); the others provably rank below the spec's top N and off the Pareto front.
std::vector<size_t> SpotCandidatesToSimulate(const std::vector<Pending>& pending,
                                             const std::vector<size_t>& exact,
                                             const std::vector<size_t>& spot, const PlanSpec& spec,
                                             const CostAssumptions& a);

struct CostedCandidates {
  std::vector<Candidate> candidates;  // the exact ones, then the simulated spot ones
  int64_t spot_pruned = 0;            // spot candidates left out by SpotCandidatesToSimulate
  // Providers of planned offers whose storage or egress the catalog cannot price, each with the
  // parts it lacks ("checkpoint storage", "disk", "egress"); sorted.
  std::map<std::string, std::set<std::string>> unpriced_storage;
  // The checkpoint storage priced where the spec names none (PlannedStorageNeeds); 0 = none.
  double assumed_checkpoint_gb = 0;
};

// Costs every candidate of the planned offers (spot pruning where spec.prune_spot).
CostedCandidates CostCandidates(const PlanInputs& in, const HardwareClasses& classes,
                                const LayoutTable& layouts);

}  // namespace fulcrum::plan
