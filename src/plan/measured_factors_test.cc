// A measured job's factors (spec.h MeasuredFactors) in the search: the step time changes on the
// measured hardware class only, the memory on every offer, and a layout that the measured memory
// no longer fits is dropped.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <tuple>

#include "catalog/catalog.h"
#include "plan/search.h"
#include "workload/model_io.h"

namespace fulcrum::plan {
namespace {

const std::string kCatalogDir = std::string(FULCRUM_SOURCE_DIR) + "/catalog";

struct Fixture {
  catalog::Catalog catalog;
  workload::Model model;
  CostAssumptions assumptions;
};

Fixture Load() {
  auto catalog = catalog::Catalog::Load(kCatalogDir);
  EXPECT_TRUE(catalog.ok()) << catalog.status().message();
  auto model = workload::LoadModelPreset(kCatalogDir, "llama-3-8b");
  EXPECT_TRUE(model.ok()) << model.status().message();
  std::string note;
  return {std::move(*catalog), std::move(*model), LoadCostAssumptions(kCatalogDir, &note)};
}

PlanSpec Spec() {
  PlanSpec spec;
  spec.origin = "test";
  spec.model_preset = "llama-3-8b";
  spec.tokens = 2.048e7;
  spec.training.seq_len = 2048;
  spec.training.global_batch = 1;
  spec.global_batch_given = true;
  spec.training.method = workload::Method::kLora;
  spec.constraints.pricing = {PricingModel::kOnDemand};
  spec.top = 1000;
  return spec;
}

using Key = std::tuple<int, int, int>;  // offer, nodes, pricing

std::map<Key, const Candidate*> ByOffer(const PlanResult& r) {
  std::map<Key, const Candidate*> out;
  for (const Candidate& c : r.candidates) {
    out[{c.offer, c.nodes, static_cast<int>(c.pricing)}] = &c;
  }
  return out;
}

TEST(MeasuredFactorsTest, StepTimeOnTheMeasuredClassOnlyMemoryOnEveryOffer) {
  const Fixture f = Load();
  auto plain = RunPlan(f.catalog, f.model, Spec(), f.assumptions, 1);
  ASSERT_TRUE(plain.ok()) << plain.status().message();
  PlanSpec spec = Spec();
  spec.measured = MeasuredFactors{"A100-PCIe-80GB", 1, "pcie", 1.5, 1.2};
  auto measured = RunPlan(f.catalog, f.model, spec, f.assumptions, 1);
  ASSERT_TRUE(measured.ok()) << measured.status().message();
  const auto before = ByOffer(*plain), after = ByOffer(*measured);
  int same_class = 0, other_class = 0;
  for (const auto& [key, cand] : after) {
    auto it = before.find(key);
    if (it == before.end()) continue;
    const Candidate& was = *it->second;
    const catalog::Offer& o = f.catalog.offers()[cand->offer];
    // Same layout: the factors scale it; a layout change (memory) is checked below.
    if (was.layout.training.tp != cand->layout.training.tp ||
        was.layout.training.micro_batch != cand->layout.training.micro_batch ||
        was.layout.training.recompute != cand->layout.training.recompute ||
        was.layout.training.pp != cand->layout.training.pp) {
      continue;
    }
    EXPECT_NEAR(cand->layout.memory.peak_bytes_per_gpu, 1.2 * was.layout.memory.peak_bytes_per_gpu,
                1e-6 * was.layout.memory.peak_bytes_per_gpu)
        << o.instance_type;
    const bool measured_class = o.gpu == "A100-PCIe-80GB" && o.gpu_count == 1 &&
                                o.interconnect == catalog::Interconnect::kPcie;
    const double factor = measured_class ? 1.5 : 1.0;
    EXPECT_NEAR(cand->layout.step.step_seconds, factor * was.layout.step.step_seconds,
                1e-9 * was.layout.step.step_seconds)
        << o.provider << "/" << o.instance_type;
    EXPECT_NEAR(cand->layout.step.tokens_per_second_per_gpu,
                was.layout.step.tokens_per_second_per_gpu / factor,
                1e-9 * was.layout.step.tokens_per_second_per_gpu);
    ++(measured_class ? same_class : other_class);
  }
  EXPECT_GT(same_class, 0) << "the catalog has offers of the measured class";
  EXPECT_GT(other_class, 0);
}

TEST(MeasuredFactorsTest, MeasuredMemoryDropsLayoutsThatNoLongerFit) {
  const Fixture f = Load();
  auto plain = RunPlan(f.catalog, f.model, Spec(), f.assumptions, 1);
  ASSERT_TRUE(plain.ok());
  // 4 x the estimated memory: the weights and the framework alone (~24 GB estimated, any
  // recompute) then need ~96 GB, more than 90 % of one 80 GB GPU.
  PlanSpec spec = Spec();
  spec.measured = MeasuredFactors{"none", 1, "pcie", 1.0, 4.0};
  auto measured = RunPlan(f.catalog, f.model, spec, f.assumptions, 1);
  ASSERT_TRUE(measured.ok());
  for (const Candidate& c : measured->candidates) {
    EXPECT_LE(c.layout.memory.peak_bytes_per_gpu, c.capacity_bytes * (1 - 0.10) * (1 + 1e-12));
  }
  size_t single_80gb_before = 0, single_80gb_after = 0;
  for (const Candidate& c : plain->candidates) {
    single_80gb_before += c.nodes * f.catalog.offers()[c.offer].gpu_count == 1 &&
                          c.capacity_bytes < 90e9 && c.capacity_bytes > 80e9;
  }
  for (const Candidate& c : measured->candidates) {
    single_80gb_after += c.nodes * f.catalog.offers()[c.offer].gpu_count == 1 &&
                         c.capacity_bytes < 90e9 && c.capacity_bytes > 80e9;
  }
  EXPECT_GT(single_80gb_before, 0u);
  EXPECT_EQ(single_80gb_after, 0u) << "one 80 GB GPU no longer holds the measured peak";
}

TEST(MeasuredFactorsTest, PlannedStepTimeScalesEveryPart) {
  const Fixture f = Load();
  workload::Training t;
  t.seq_len = 2048;
  t.global_batch = 8;
  t.micro_batch = 1;
  const catalog::Offer* offer = nullptr;
  for (const catalog::Offer& o : f.catalog.offers()) {
    if (o.gpu == "H100-SXM5-80GB" && o.gpu_count == 8) offer = &o;
  }
  ASSERT_NE(offer, nullptr);
  auto hw = estimate::HardwareFor(*f.catalog.FindGpu(offer->gpu), *offer, t.precision);
  ASSERT_TRUE(hw.has_value());
  t.dp = 8;
  const estimate::StepTime a = PlannedStepTime(f.model, t, *hw, 1.0);
  const estimate::StepTime b = PlannedStepTime(f.model, t, *hw, 2.0);
  EXPECT_DOUBLE_EQ(b.step_seconds, 2 * a.step_seconds);
  EXPECT_DOUBLE_EQ(b.compute_seconds, 2 * a.compute_seconds);
  EXPECT_DOUBLE_EQ(b.mfu, a.mfu / 2);
  EXPECT_DOUBLE_EQ(b.tokens_per_second_per_gpu, a.tokens_per_second_per_gpu / 2);
}

}  // namespace
}  // namespace fulcrum::plan
