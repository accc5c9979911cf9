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

// The README's example as a renter reads it: storage was 0 on every row (the spec names none) and
// 0 without a word for providers with no storage price (Hyperstack, Nebius). Now the checkpoint is
// priced where a source gives the rate, and the providers without one are named.
TEST(SearchTest, TheQuotePricesTheCheckpointOrSaysWhereItCannot) {
  const Fixture& f = Shipped();
  auto r = RunPlan(f.catalog, f.model, Spec(), f.assumptions, 2);
  ASSERT_TRUE(r.ok()) << r.status().message();
  std::set<std::string> priced;
  for (const Candidate& c : r->candidates) {
    if (c.run.breakdown.storage_usd > 0) priced.insert(f.catalog.offers()[c.offer].provider);
  }
  EXPECT_TRUE(priced.count("hyperstack"));
  EXPECT_TRUE(priced.count("nebius"));
  std::string storage_note, unpriced_note;
  for (const std::string& n : r->notes) {
    if (n.rfind("storage: one checkpoint (94 GB", 0) == 0) storage_note = n;
    if (n.rfind("storage not priced for ", 0) == 0) unpriced_note = n;
  }
  EXPECT_FALSE(storage_note.empty());
  // Vast.ai sets storage prices per host: no one rate to price, so it is named.
  EXPECT_NE(unpriced_note.find("vast (checkpoint storage)"), std::string::npos) << unpriced_note;
  EXPECT_EQ(unpriced_note.find("hyperstack"), std::string::npos) << unpriced_note;
}

// A catalog/storage.csv row for a provider's instances replaces the default write speed for them
// only: their checkpoint pause shrinks, other providers' rows are unchanged, and the note says
// which rows use which.
TEST(SearchTest, AProvidersOwnStorageRowSetsItsCheckpointPause) {
  const Fixture& f = Shipped();
  PlanSpec spec = Spec();
  spec.constraints.providers = {"hyperstack", "nebius"};
  spec.constraints.pricing = {PricingModel::kOnDemand};
  // The note names the rows shown: show them all, so that the SXM row is among them wherever its
  // price ranks it (its price-unverified tier puts it below Nebius's rows).
  spec.top = 1000;
  auto before = RunPlan(f.catalog, f.model, spec, f.assumptions, 2);
  CostAssumptions faster = f.assumptions;
  spot::StorageKind nvme;
  nvme.kind = "test-nvme";
  nvme.write_bytes_per_second = 4e9;
  nvme.provider = "hyperstack";
  nvme.instance_prefix = "n3-H100-SXM5";
  nvme.source = "test";
  faster.storage_kinds.push_back(nvme);
  auto after = RunPlan(f.catalog, f.model, spec, faster, 2);
  ASSERT_TRUE(before.ok() && after.ok());
  const auto find = [&](const PlanResult& r, const std::string& instance) -> const Candidate* {
    for (const Candidate& c : r.candidates) {
      if (f.catalog.offers()[c.offer].instance_type == instance && c.nodes == 1) return &c;
    }
    return nullptr;
  };
  const Candidate* sxm_before = find(*before, "n3-H100-SXM5x8");
  const Candidate* sxm_after = find(*after, "n3-H100-SXM5x8");
  ASSERT_NE(sxm_before, nullptr);
  ASSERT_NE(sxm_after, nullptr);
  EXPECT_NEAR(sxm_before->run.checkpoint_write_seconds,
              f.assumptions.checkpoint_write_bytes_per_second_per_node > 0
                  ? 6.74e9 * 14 / f.assumptions.checkpoint_write_bytes_per_second_per_node
                  : 0,
              0.05 * sxm_before->run.checkpoint_write_seconds);
  EXPECT_NEAR(sxm_after->run.checkpoint_write_seconds, 6.74e9 * 14 / 4e9,
              0.05 * sxm_after->run.checkpoint_write_seconds);
  EXPECT_LT(sxm_after->run.breakdown.checkpoint_usd, sxm_before->run.breakdown.checkpoint_usd);
  const Candidate* pcie_before = find(*before, "n3-H100x8");
  const Candidate* pcie_after = find(*after, "n3-H100x8");
  ASSERT_NE(pcie_before, nullptr);
  ASSERT_NE(pcie_after, nullptr);
  EXPECT_DOUBLE_EQ(pcie_after->run.checkpoint_write_seconds,
                   pcie_before->run.checkpoint_write_seconds);
  std::string note;
  for (const std::string& n : after->notes) {
    if (n.rfind("checkpoint writes costed ", 0) == 0) note = n;
  }
  EXPECT_NE(note.find("hyperstack n3-H100-SXM5x8 (test-nvme, 4000 MB/s)"), std::string::npos)
      << note;
  EXPECT_NE(note.find("ebs-gp3's 131 MB/s per node on hyperstack, nebius"), std::string::npos)
      << note;
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

// A Megatron-LM command with Megatron-Core's expert-parallel all-to-all overlap
// (--overlap-moe-expert-parallel-comm) runs only where Megatron-Core accepts it
// (transformer_config.py@d98e8a64dd: ep > 1, pp 1 or interleaved, no full recompute): every
// layout the plan offers is one of those, estimated with the overlap.
TEST(SearchTest, TheCommandsAllToAllOverlapIsSearchedWhereMegatronRunsIt) {
  const Fixture& f = Shipped();
  auto mixtral = workload::LoadModelPreset(kCatalogDir, "mixtral-8x7b");
  ASSERT_TRUE(mixtral.ok()) << mixtral.status().message();
  PlanSpec spec = Spec();
  spec.model_preset = "mixtral-8x7b";
  spec.command = "torchrun --nproc-per-node 8 pretrain_gpt.py --overlap-moe-expert-parallel-comm";
  auto r = RunPlan(f.catalog, *mixtral, spec, f.assumptions, 2);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_FALSE(r->candidates.empty());
  for (const Candidate& c : r->candidates) {
    const workload::Training& t = c.layout.training;
    EXPECT_TRUE(t.moe_a2a_overlap);
    EXPECT_GT(t.ep, 1);
    EXPECT_TRUE(t.pp == 1 || t.vpp > 1) << t.pp << " " << t.vpp;
    EXPECT_NE(t.recompute, workload::Recompute::kFull);
    EXPECT_TRUE(workload::Validate(*mixtral, t, workload::GpuCount(t)).ok())
        << workload::Validate(*mixtral, t, workload::GpuCount(t)).message();
  }
}

// A Megatron-LM command with whole experts (--expert-tensor-parallel-size 1) is estimated with
// them: every layout the plan offers holds experts / ep whole experts and is one Megatron-Core
// accepts.
TEST(SearchTest, TheCommandsWholeExpertsAreEstimated) {
  const Fixture& f = Shipped();
  auto mixtral = workload::LoadModelPreset(kCatalogDir, "mixtral-8x7b");
  ASSERT_TRUE(mixtral.ok()) << mixtral.status().message();
  PlanSpec spec = Spec();
  spec.model_preset = "mixtral-8x7b";
  spec.command = "torchrun --nproc-per-node 8 pretrain_gpt.py --expert-tensor-parallel-size 1";
  auto r = RunPlan(f.catalog, *mixtral, spec, f.assumptions, 2);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_FALSE(r->candidates.empty());
  for (const Candidate& c : r->candidates) {
    const workload::Training& t = c.layout.training;
    EXPECT_EQ(workload::ExpertTp(t), 1);
    EXPECT_TRUE(workload::Validate(*mixtral, t, workload::GpuCount(t)).ok())
        << workload::Validate(*mixtral, t, workload::GpuCount(t)).message();
  }
}

// A Megatron-LM command's precision-aware optimizer (bf16 moments) is what the plan estimates:
// every layout at ZeRO stage 1 where there is something to shard, with the smaller optimizer
// states of bf16 moments, so the same layout's peak is lower than with fp32 moments.
TEST(SearchTest, TheCommandsOwnOptimizerMomentsAreEstimated) {
  const Fixture& f = Shipped();
  PlanSpec spec = Spec();
  spec.command = "torchrun --nproc-per-node 8 pretrain_gpt.py --use-distributed-optimizer";
  auto fp32 = RunPlan(f.catalog, f.model, spec, f.assumptions, 2);
  spec.command += " --use-precision-aware-optimizer --exp-avg-dtype bf16 --exp-avg-sq-dtype bf16";
  auto bf16 = RunPlan(f.catalog, f.model, spec, f.assumptions, 2);
  ASSERT_TRUE(fp32.ok() && bf16.ok());
  ASSERT_FALSE(bf16->candidates.empty());
  int compared = 0;
  for (const Candidate& c : bf16->candidates) {
    const workload::Training& t = c.layout.training;
    EXPECT_EQ(t.zero_stage, t.dp * t.cp > 1 ? 1 : 0);
    EXPECT_EQ(t.exp_avg_dtype, workload::MomentDtype::kBf16);
    for (const Candidate& o : fp32->candidates) {
      const workload::Training& u = o.layout.training;
      if (o.offer != c.offer || o.nodes != c.nodes || u.tp != t.tp || u.pp != t.pp ||
          u.dp != t.dp || u.zero_stage != t.zero_stage || u.micro_batch != t.micro_batch ||
          u.recompute != t.recompute) {
        continue;
      }
      EXPECT_LT(c.layout.memory.optimizer_bytes, o.layout.memory.optimizer_bytes);
      ++compared;
      break;
    }
  }
  EXPECT_GT(compared, 0);
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
