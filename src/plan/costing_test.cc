// The planner's costing stage over the shipped catalog: which candidates are made (offer x node
// count x pricing model with a layout and a price), what costing one sets, and which spot
// candidates the simulator may skip.
#include "plan/costing.h"

#include <algorithm>
#include <string>

#include <gtest/gtest.h>

#include "estimate/estimate.h"
#include "plan/notes.h"
#include "plan/pitfalls.h"
#include "workload/model_io.h"

namespace fulcrum::plan {
namespace {

const std::string kCatalogDir = std::string(FULCRUM_SOURCE_DIR) + "/catalog";

struct Stages {
  catalog::Catalog catalog;
  workload::Model model;
  CostAssumptions assumptions;
  PlanSpec spec;
  HardwareClasses classes;
  LayoutTable layouts;
  PlanInputs In() const {
    PlanInputs in{catalog, model, spec, assumptions, spec.training, 0, 0, 2, JobFrameworks{}};
    in.work_units = *spec.tokens;
    in.trained_parameters = estimate::TrainableParameterCount(model, spec.training);
    in.threads = 2;
    return in;
  }
};

// Llama 2 7B, 2 B tokens, batch 128, on the shipped H100 offers, through the first two stages.
Stages Through(PlanSpec spec) {
  Stages s;
  auto catalog = catalog::Catalog::Load(kCatalogDir);
  EXPECT_TRUE(catalog.ok());
  s.catalog = std::move(*catalog);
  auto model = workload::LoadModelPreset(kCatalogDir, "llama-2-7b");
  EXPECT_TRUE(model.ok());
  s.model = std::move(*model);
  std::string note;
  s.assumptions = LoadCostAssumptions(kCatalogDir, &note);
  s.spec = std::move(spec);
  auto offers = ResolvePlanOffers(s.catalog, s.spec.constraints);
  EXPECT_TRUE(offers.ok()) << offers.status().message();
  s.spec.constraints = offers->constraints;
  s.classes = ClassifyOffers(s.catalog, offers->offers, s.spec, s.spec.training);
  s.layouts =
      SearchClassLayouts(s.model, s.spec.training, s.classes.classes, s.spec, JobFrameworks{}, 2);
  return s;
}

PlanSpec H100Spec() {
  PlanSpec spec;
  spec.origin = "test";
  spec.tokens = 2e9;
  spec.training.seq_len = 4096;
  spec.training.global_batch = 128;
  spec.global_batch_given = true;
  spec.constraints.gpus = {"H100"};
  spec.constraints.max_gpus = 16;
  spec.top = 5;
  return spec;
}

TEST(CostingTest, ACandidatePerOfferNodeCountAndPricedModelSpotOnlyWhenInterruptible) {
  Stages s = Through(H100Spec());
  const std::vector<ExtraCosts> extras(s.catalog.offers().size());
  const std::vector<Pending> both = PendingCandidates(s.In(), s.classes, s.layouts, extras);
  ASSERT_FALSE(both.empty());
  for (const Pending& p : both) {
    const catalog::Offer& o = s.catalog.offers()[p.cand.offer];
    EXPECT_EQ(o.gpu.rfind("H100", 0), 0u);
    EXPECT_TRUE(p.cand.layout.found);
    EXPECT_EQ(p.run.gpus, p.cand.nodes * o.gpu_count);
    if (p.cand.pricing == PricingModel::kSpot) {
      EXPECT_TRUE(o.spot_usd_per_hour.has_value());
    }
  }
  EXPECT_TRUE(std::any_of(both.begin(), both.end(),
                          [](const Pending& p) { return p.cand.pricing == PricingModel::kSpot; }));
  s.spec.constraints.interruptible = false;
  const std::vector<Pending> no_spot = PendingCandidates(s.In(), s.classes, s.layouts, extras);
  EXPECT_TRUE(std::none_of(no_spot.begin(), no_spot.end(),
                           [](const Pending& p) { return p.cand.pricing == PricingModel::kSpot; }));
  EXPECT_LT(no_spot.size(), both.size());
}

TEST(CostingTest, ACandidateMeetsItsConstraintsExactlyWhenNoDeadlineOrBudgetWarningIsSet) {
  PlanSpec spec = H100Spec();
  spec.constraints.deadline_seconds = 10 * 3600.0;  // some 1-node rows miss it, larger ones not
  Stages s = Through(spec);
  const CostedCandidates costed = CostCandidates(s.In(), s.classes, s.layouts);
  ASSERT_FALSE(costed.candidates.empty());
  bool some_meet = false, some_miss = false;
  for (const Candidate& c : costed.candidates) {
    const bool missed = c.warnings & (kPitfallDeadlineMissedP90 | kPitfallBudgetExceeded);
    EXPECT_EQ(c.meets_constraints, !missed);
    EXPECT_EQ(missed, c.run.p90_seconds > 10 * 3600.0);
    EXPECT_GT(c.run.total_seconds, 0);
    EXPECT_GE(c.run.p90_usd, c.run.expected_usd * 0.999);
    some_meet |= c.meets_constraints;
    some_miss |= !c.meets_constraints;
  }
  EXPECT_TRUE(some_meet);
  EXPECT_TRUE(some_miss);
}

TEST(CostingTest, WithFewerFeasibleExactRowsThanTheTopNEverySpotRowIsSimulated) {
  PlanSpec spec = H100Spec();
  spec.constraints.deadline_seconds = 60.0;  // nothing finishes in a minute
  Stages s = Through(spec);
  std::vector<Pending> pending = PendingCandidates(
      s.In(), s.classes, s.layouts, std::vector<ExtraCosts>(s.catalog.offers().size()));
  std::vector<size_t> exact, spot;
  for (size_t i = 0; i < pending.size(); ++i) {
    if (pending[i].cand.pricing == PricingModel::kSpot) {
      spot.push_back(i);
    } else {
      CostCandidate(s.In(), pending[i]);
      exact.push_back(i);
    }
  }
  ASSERT_FALSE(spot.empty());
  EXPECT_EQ(SpotCandidatesToSimulate(pending, exact, spot, s.spec, s.assumptions), spot);
}

TEST(CostingTest, NotesSayWhatTheDefaultBatchAndTheSkippedGpusAre) {
  PlanSpec spec = H100Spec();
  spec.constraints.gpus = {};
  spec.global_batch_given = false;
  spec.training.precision = workload::Precision::kBf16Mixed;
  spec.training.global_batch = 256;  // 2^20 tokens of 4096
  Stages s = Through(spec);
  const CostedCandidates costed = CostCandidates(s.In(), s.classes, s.layouts);
  const std::vector<std::string> notes = PlanNotes(s.In(), s.classes, costed, costed.candidates);
  auto has = [&](const std::string& text) {
    return std::any_of(notes.begin(), notes.end(),
                       [&](const std::string& n) { return n.find(text) != std::string::npos; });
  };
  EXPECT_TRUE(has("global batch not given: using 256 sequences"));
  ASSERT_FALSE(s.classes.skipped_precision.empty());  // the shipped V100/T4 have no bf16
  EXPECT_TRUE(has("skipped, no bf16 tensor-core mode: " + s.classes.skipped_precision.front()));
}

}  // namespace
}  // namespace fulcrum::plan
