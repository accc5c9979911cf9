// The planner's first stage: the offer filter resolved once (for library callers as for the CLI)
// and the grouping of offers into hardware classes.
#include "plan/classes.h"

#include <algorithm>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "catalog/testing_catalog.h"

namespace fulcrum::plan {
namespace {

class ClassesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto loaded = catalog::Catalog::FromFiles(catalog::testing::SmallCatalogFiles());
    ASSERT_TRUE(loaded.ok()) << loaded.status().message();
    catalog_ = std::move(*loaded);
  }
  std::vector<const catalog::Offer*> AllOffers() const {
    std::vector<const catalog::Offer*> out;
    for (const catalog::Offer& o : catalog_.offers()) out.push_back(&o);
    return out;
  }
  const catalog::Offer& OfferNamed(const std::string& instance) const {
    for (const catalog::Offer& o : catalog_.offers()) {
      if (o.instance_type == instance) return o;
    }
    throw std::runtime_error("no offer " + instance);
  }
  int ClassOf(const HardwareClasses& c, const std::string& instance) const {
    return c.class_of_offer[&OfferNamed(instance) - catalog_.offers().data()];
  }
  catalog::Catalog catalog_;
};

TEST_F(ClassesTest, AGpuFamilyAndARegionPartResolveAsTheCliResolvesThem) {
  Constraints c;
  c.gpus = {"H100"};
  c.regions = {"us-"};
  auto resolved = ResolvePlanOffers(catalog_, c);
  ASSERT_TRUE(resolved.ok()) << resolved.status().message();
  EXPECT_EQ(resolved->constraints.gpus, std::vector<std::string>{"H100-SXM5-80GB"});
  EXPECT_EQ(std::set<std::string>(resolved->constraints.regions.begin(),
                                  resolved->constraints.regions.end()),
            (std::set<std::string>{"us-east-1", "us-central1"}));
  ASSERT_EQ(resolved->offers.size(), 3u);  // p5.48xlarge, a3-highgpu-8g, a3-highgpu-1g
  for (const catalog::Offer* o : resolved->offers) EXPECT_EQ(o->gpu, "H100-SXM5-80GB");
}

TEST_F(ClassesTest, AnUnknownNameIsAnErrorNamingWhereItCameFromAndTheNearestNames) {
  Constraints c;
  c.gpus = {"H10"};
  auto from_spec = ResolvePlanOffers(catalog_, c);
  ASSERT_FALSE(from_spec.ok());
  EXPECT_NE(from_spec.status().message().find("constraints.gpus"), std::string::npos)
      << from_spec.status().message();
  EXPECT_NE(from_spec.status().message().find("H100"), std::string::npos);
  c.filter_origins.gpus = "--gpus";
  auto from_flag = ResolvePlanOffers(catalog_, c);
  ASSERT_FALSE(from_flag.ok());
  EXPECT_NE(from_flag.status().message().find("--gpus"), std::string::npos);
}

TEST_F(ClassesTest, APricingModelNoOfferHasIsANoteNotAnErrorWhenAnotherOneIs) {
  Constraints c;
  c.pricing = {PricingModel::kOnDemand, PricingModel::kReserved3y};
  auto resolved = ResolvePlanOffers(catalog_, c);
  ASSERT_TRUE(resolved.ok()) << resolved.status().message();
  EXPECT_FALSE(resolved->offers.empty());
  // The small catalog's providers publish no reserved discount.
  ASSERT_EQ(resolved->notes.size(), 1u);
  EXPECT_NE(resolved->notes[0].find("reserved_3y"), std::string::npos);
}

TEST_F(ClassesTest, OffersOfTheSameHardwareShareAClassOthersDoNot) {
  PlanSpec spec;
  spec.constraints.assume_network_gbps = 100;
  workload::Training base;
  const HardwareClasses c = ClassifyOffers(catalog_, AllOffers(), spec, base);
  // Both 8x H100 offers publish different networks (3200 vs 800 Gbit/s): two classes.
  EXPECT_NE(ClassOf(c, "p5.48xlarge"), ClassOf(c, "a3-highgpu-8g"));
  EXPECT_NE(ClassOf(c, "a3-highgpu-8g"), ClassOf(c, "a3-highgpu-1g"));
  const HardwareClass& p5 = c.classes[ClassOf(c, "p5.48xlarge")];
  EXPECT_TRUE(p5.network_known);
  EXPECT_EQ(p5.hardware.gpus_per_node, 8);
  // 512 GPUs at most (the default max_gpus): 1 .. 64 nodes of 8.
  EXPECT_EQ(p5.node_counts.front(), 1);
  EXPECT_EQ(p5.node_counts.back(), 64);
  // The 1-GPU H100 publishes no network: planned multi-node only on the assumed one.
  const HardwareClass& one = c.classes[ClassOf(c, "a3-highgpu-1g")];
  EXPECT_TRUE(one.network_assumed);
  EXPECT_GT(one.node_counts.size(), 1u);
  EXPECT_EQ(c.offers_considered, static_cast<int64_t>(catalog_.offers().size()) -
                                     static_cast<int64_t>(c.skipped_precision.size()));
}

TEST_F(ClassesTest, WithoutANetworkFigureAnOfferIsPlannedOnOneNodeOnly) {
  PlanSpec spec;
  const HardwareClasses c = ClassifyOffers(catalog_, AllOffers(), spec, workload::Training{});
  EXPECT_EQ(c.classes[ClassOf(c, "a3-highgpu-1g")].node_counts, std::vector<int>{1});
  EXPECT_FALSE(c.any_conservative);
}

TEST_F(ClassesTest, AGpuWithoutTheTensorModeIsSkippedOrPlannedInFp16WhereAllowed) {
  PlanSpec spec;
  workload::Training base;
  base.precision = workload::Precision::kBf16Mixed;
  HardwareClasses c = ClassifyOffers(catalog_, AllOffers(), spec, base);
  // T4 (Turing) and A10G (no bf16 figure in the small catalog) have no bf16 tensor mode.
  EXPECT_EQ(ClassOf(c, "t4x1"), -1);
  EXPECT_TRUE(std::find(c.skipped_precision.begin(), c.skipped_precision.end(), "T4") !=
              c.skipped_precision.end());
  spec.constraints.allow_precision_fallback = true;
  c = ClassifyOffers(catalog_, AllOffers(), spec, base);
  ASSERT_GE(ClassOf(c, "t4x1"), 0);
  const HardwareClass& t4 = c.classes[ClassOf(c, "t4x1")];
  EXPECT_EQ(t4.precision, workload::Precision::kFp16Mixed);
  EXPECT_TRUE(t4.precision_fallback);
  EXPECT_FALSE(c.classes[ClassOf(c, "p5.48xlarge")].precision_fallback);
}

TEST_F(ClassesTest, MaxGpusAndMaxNodesBoundTheOffersAndNodeCounts) {
  PlanSpec spec;
  spec.constraints.max_gpus = 4;
  HardwareClasses c = ClassifyOffers(catalog_, AllOffers(), spec, workload::Training{});
  EXPECT_EQ(ClassOf(c, "p5.48xlarge"), -1);
  spec.constraints.max_gpus = 512;
  spec.constraints.max_nodes = 3;
  c = ClassifyOffers(catalog_, AllOffers(), spec, workload::Training{});
  EXPECT_EQ(c.classes[ClassOf(c, "p5.48xlarge")].node_counts, (std::vector<int>{1, 2, 3}));
}

// A machine type its provider documents for serving only (offers.csv use: serving, e.g. GCP's
// A3 Edge) is never a training candidate: left out with a note naming it; a filter that leaves
// nothing else is an error that says why.
TEST(ServingOnlyTest, ServingOnlyMachineTypesAreNoTrainingCandidates) {
  catalog::CatalogFiles files = catalog::testing::SmallCatalogFiles();
  std::string& offers = files.offers.text;
  offers.replace(offers.find('\n'), 1, ",use,use_source\n");
  std::string rows;
  for (size_t start = offers.find('\n') + 1; start < offers.size();) {
    const size_t end = offers.find('\n', start);
    rows += offers.substr(start, end - start) + ",,\n";
    start = end + 1;
  }
  offers = offers.substr(0, offers.find('\n') + 1) + rows +
           "gcp,a3-edgegpu-8g,us-central1,H100,8,43.06615,,,s,serving,https://doc\n";
  auto catalog = catalog::Catalog::FromFiles(files);
  ASSERT_TRUE(catalog.ok()) << catalog.status().message();
  Constraints c;
  c.gpus = {"H100"};
  auto resolved = ResolvePlanOffers(*catalog, c);
  ASSERT_TRUE(resolved.ok()) << resolved.status().message();
  for (const catalog::Offer* o : resolved->offers) EXPECT_NE(o->instance_type, "a3-edgegpu-8g");
  EXPECT_EQ(resolved->offers.size(), 3u);
  ASSERT_EQ(resolved->notes.size(), 1u);
  EXPECT_NE(resolved->notes[0].find("gcp a3-edgegpu-8g"), std::string::npos);
  EXPECT_NE(resolved->notes[0].find("serving"), std::string::npos);

  c.regions = {"us-central1"};
  c.providers = {"gcp"};
  auto edge_and_a3 = ResolvePlanOffers(*catalog, c);  // a3-highgpu-8g/1g remain: fine
  ASSERT_TRUE(edge_and_a3.ok());
  EXPECT_EQ(edge_and_a3->offers.size(), 2u);
  // Only the serving-only type left by the filters: InvalidInput naming it.
  offers = offers.substr(0, offers.find('\n') + 1) +
           "gcp,a3-edgegpu-8g,us-central1,H100,8,43.06615,,,s,serving,https://doc\n"
           "aws,g5.xlarge,us-east-1,A10G,1,1.006,0.4591,,s,,\n";
  auto small = catalog::Catalog::FromFiles(files);
  ASSERT_TRUE(small.ok()) << small.status().message();
  Constraints h100;
  h100.gpus = {"H100"};
  auto none = ResolvePlanOffers(*small, h100);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), StatusCode::kInvalidInput);
  EXPECT_NE(none.status().message().find("a3-edgegpu-8g"), std::string::npos)
      << none.status().message();
  EXPECT_NE(none.status().message().find("serve-plan"), std::string::npos);
}

}  // namespace
}  // namespace fulcrum::plan
