// RunPlan composes the stages: its result does not depend on the thread count, a library caller
// gets the CLI's filter semantics (one resolution, in the library), and spot pruning never
// changes the top N or the Pareto front.
#include "plan/search.h"

#include <array>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "catalog/catalog.h"
#include "workload/model_io.h"

namespace fulcrum::plan {
namespace {

const std::string kCatalogDir = std::string(FULCRUM_SOURCE_DIR) + "/catalog";

struct Fixture {
  catalog::Catalog catalog;
  workload::Model model;
  CostAssumptions assumptions;
};

const Fixture& Shipped() {
  static const Fixture* f = [] {
    auto catalog = catalog::Catalog::Load(kCatalogDir);
    EXPECT_TRUE(catalog.ok()) << catalog.status().message();
    auto model = workload::LoadModelPreset(kCatalogDir, "llama-2-7b");
    EXPECT_TRUE(model.ok()) << model.status().message();
    std::string note;
    return new Fixture{std::move(*catalog), std::move(*model),
                       LoadCostAssumptions(kCatalogDir, &note)};
  }();
  return *f;
}

PlanSpec Spec() {
  PlanSpec spec;
  spec.origin = "test";
  spec.model_preset = "llama-2-7b";
  spec.tokens = 2e9;
  spec.training.seq_len = 4096;
  spec.training.global_batch = 128;
  spec.global_batch_given = true;
  spec.constraints.deadline_seconds = 3 * 86400.0;
  spec.constraints.max_gpus = 64;
  spec.top = 10;
  return spec;
}

using Row =
    std::tuple<int, int, int, double, int, bool>;  // offer, nodes, pricing, usd, rank, pareto

std::vector<Row> Rows(const PlanResult& r, size_t n) {
  std::vector<Row> out;
  for (size_t i = 0; i < r.candidates.size() && i < n; ++i) {
    const Candidate& c = r.candidates[i];
    out.emplace_back(c.offer, c.nodes, static_cast<int>(c.pricing), c.run.expected_usd, c.rank,
                     c.pareto);
  }
  return out;
}

TEST(SearchTest, TheResultDoesNotDependOnTheThreadCount) {
  const Fixture& f = Shipped();
  auto one = RunPlan(f.catalog, f.model, Spec(), f.assumptions, 1);
  auto three = RunPlan(f.catalog, f.model, Spec(), f.assumptions, 3);
  ASSERT_TRUE(one.ok()) << one.status().message();
  ASSERT_TRUE(three.ok()) << three.status().message();
  ASSERT_FALSE(one->candidates.empty());
  EXPECT_EQ(one->threads, 1);
  EXPECT_EQ(three->threads, 3);
  EXPECT_EQ(Rows(*one, one->candidates.size()), Rows(*three, three->candidates.size()));
  EXPECT_EQ(one->pareto, three->pareto);
  EXPECT_EQ(one->configurations, three->configurations);
  EXPECT_EQ(one->spot_pruned, three->spot_pruned);
  EXPECT_EQ(one->notes, three->notes);
}

TEST(SearchTest, ALibraryCallerGetsTheCliFilterSemantics) {
  const Fixture& f = Shipped();
  PlanSpec spec = Spec();
  spec.constraints.gpus = {"a100"};    // a family, in lower case
  spec.constraints.regions = {"us-"};  // a part of a region's name
  auto r = RunPlan(f.catalog, f.model, spec, f.assumptions, 2);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_FALSE(r->candidates.empty());
  std::set<std::string> gpus, regions;
  for (const Candidate& c : r->candidates) {
    gpus.insert(f.catalog.offers()[c.offer].gpu);
    regions.insert(f.catalog.offers()[c.offer].region);
  }
  for (const std::string& g : gpus) EXPECT_EQ(g.rfind("A100", 0), 0u) << g;
  EXPECT_GT(gpus.size(), 1u);  // the family's variants, not one name
  for (const std::string& region : regions) EXPECT_EQ(region.rfind("us-", 0), 0u) << region;
  // result.spec carries the filter resolved: canonical names, exact regions.
  for (const std::string& g : r->spec.constraints.gpus) EXPECT_NE(f.catalog.FindGpu(g), nullptr);
  for (const std::string& region : r->spec.constraints.regions) {
    EXPECT_TRUE(regions.count(region) || region.rfind("us-", 0) == 0) << region;
  }
}

TEST(SearchTest, AnUnknownGpuIsInvalidInputNamingTheConstraint) {
  const Fixture& f = Shipped();
  PlanSpec spec = Spec();
  spec.constraints.gpus = {"H1000"};
  auto r = RunPlan(f.catalog, f.model, spec, f.assumptions, 1);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidInput);
  EXPECT_NE(r.status().message().find("constraints.gpus"), std::string::npos)
      << r.status().message();
}

// Under either order of unconfirmed rows (ranked last, or mixed by the objective alone): the
// pruning bound compares a spot row only with the exact rows that can rank before it.
TEST(SearchTest, SpotPruningNeverChangesTheTopNOrTheParetoFront) {
  const Fixture& f = Shipped();
  for (int k = 0; k < 6; ++k) {
    const Objective objective =
        std::array{Objective::kBalanced, Objective::kCheapest, Objective::kFastest}[k % 3];
    PlanSpec spec = Spec();
    spec.objective = objective;
    spec.unconfirmed_last = k < 3;
    spec.constraints.pricing = {PricingModel::kOnDemand, PricingModel::kSpot,
                                PricingModel::kSpotWithFallback};
    auto pruned = RunPlan(f.catalog, f.model, spec, f.assumptions, 2);
    spec.prune_spot = false;
    auto full = RunPlan(f.catalog, f.model, spec, f.assumptions, 2);
    ASSERT_TRUE(pruned.ok() && full.ok());
    EXPECT_GT(pruned->spot_pruned, 0) << ObjectiveName(objective);
    EXPECT_EQ(full->spot_pruned, 0);
    const size_t top = static_cast<size_t>(spec.top);
    EXPECT_EQ(Rows(*pruned, top), Rows(*full, top)) << ObjectiveName(objective);
    auto front = [](const PlanResult& r) {
      std::set<std::tuple<int, int, int>> out;
      for (int i : r.pareto) {
        const Candidate& c = r.candidates[i];
        out.emplace(c.offer, c.nodes, static_cast<int>(c.pricing));
      }
      return out;
    };
    EXPECT_EQ(front(*pruned), front(*full)) << ObjectiveName(objective);
  }
}

}  // namespace
}  // namespace fulcrum::plan
