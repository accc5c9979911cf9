// The planner: every offer that passes the filters x node counts x parallel layouts that fit in
// GPU memory with the required headroom, costed per pricing model, scored and ranked, with the
// Pareto front of (total time, expected cost). RunPlan composes the stages, each in its own file:
//   classes (plan/classes.h)  the offers resolved against the catalog, grouped by hardware
//   layouts (plan/layouts.h)  the fastest fitting layout per hardware class and node count
//   costing (plan/costing.h)  time, cost, spot simulation (with provable pruning), pitfalls
//   ranking (plan/ranking.h)  score reference, objective order, misses, Pareto front
//   notes   (plan/notes.h)    the assumptions worth telling the user
// The layout search and the costing run on the one parallel-for (core/parallel.h); the result
// does not depend on the thread count. RunPlan is thread-safe (no shared mutable state).
#pragma once

#include "catalog/catalog.h"
#include "core/status.h"
#include "plan/candidate.h"
#include "plan/cost.h"
#include "plan/layouts.h"
#include "plan/ranking.h"
#include "plan/spec.h"
#include "workload/model.h"

namespace fulcrum::plan {

// Runs the whole plan. `threads` <= 0: the hardware's concurrency. `assumptions`:
// LoadCostAssumptions(catalog_dir) (sourced checkpoint bandwidth and spot MTTI). The spec's
// offer filters are resolved here (ResolvePlanOffers: an unknown name or a filter that leaves no
// offer is InvalidInput), and result.spec carries them resolved.
Result<PlanResult> RunPlan(const catalog::Catalog& catalog, const workload::Model& model,
                           const PlanSpec& spec, const CostAssumptions& assumptions,
                           int threads = 0);

}  // namespace fulcrum::plan
