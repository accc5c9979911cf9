#include "catalog/offer_query.h"

#include <algorithm>

#include <gtest/gtest.h>

#include "catalog/testing_catalog.h"

namespace fulcrum::catalog {
namespace {

class OfferQueryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto loaded = Catalog::FromFiles(testing::SmallCatalogFiles());
    ASSERT_TRUE(loaded.ok()) << loaded.status().message();
    catalog_ = std::move(loaded).value();
  }
  std::vector<std::string> Types(const OfferQuery& query) {
    auto result = QueryOffers(*catalog_, query);
    EXPECT_TRUE(result.ok()) << result.status().message();
    std::vector<std::string> types;
    if (result.ok()) {
      for (const auto& ranked : *result) types.push_back(ranked.offer->instance_type);
    }
    return types;
  }
  std::optional<Catalog> catalog_;
};

TEST_F(OfferQueryTest, CheapestEightGpuH100First) {
  OfferQuery query;
  query.gpus = {"h100"};
  query.min_gpus = 8;
  EXPECT_EQ(Types(query), (std::vector<std::string>{"a3-highgpu-8g", "p5.48xlarge"}));
}

TEST_F(OfferQueryTest, SpotRanksBySpotAndDropsOffersWithoutSpot) {
  OfferQuery query;
  query.gpus = {"H100"};
  query.spot = true;
  EXPECT_EQ(Types(query),
            (std::vector<std::string>{"a3-highgpu-1g", "p5.48xlarge", "a3-highgpu-8g"}));
  auto result = QueryOffers(*catalog_, query);
  EXPECT_DOUBLE_EQ(*(*result)[1].usd_per_hour, 14.246);
}

TEST_F(OfferQueryTest, MaxPriceProviderAndRegionFilters) {
  OfferQuery query;
  query.max_usd_per_hour = 1.0;
  EXPECT_EQ(Types(query), (std::vector<std::string>{"t4x1", "g2-standard-4"}));
  query.providers = {"GCP"};
  EXPECT_EQ(Types(query), (std::vector<std::string>{"g2-standard-4"}));
  query = {};
  query.regions = {"US-EAST"};
  EXPECT_EQ(Types(query), (std::vector<std::string>{"g5.xlarge", "p5.48xlarge"}));
}

TEST_F(OfferQueryTest, SortByPricePerGpu) {
  OfferQuery query;
  query.sort = OfferSort::kPricePerGpu;
  query.limit = 3;
  // per GPU-hour: t4x1 0.3, g2 0.70683, g5 1.006, box8 1.25, ...
  EXPECT_EQ(Types(query), (std::vector<std::string>{"t4x1", "g2-standard-4", "g5.xlarge"}));
}

TEST_F(OfferQueryTest, SortByBf16TflopsPerUsdPutsUnknownLast) {
  OfferQuery query;
  query.sort = OfferSort::kBf16TflopsPerUsd;
  auto result = QueryOffers(*catalog_, query);
  ASSERT_TRUE(result.ok());
  ASSERT_EQ(result->size(), 7u);
  // box8: 8 x 312 / 10 = 249.6 TFLOP/s per USD-hour beats a3-highgpu-8g's 8 x 989 / 43.07.
  EXPECT_EQ((*result)[0].offer->instance_type, "box8");
  EXPECT_NEAR(*(*result)[0].bf16_tflops_per_usd, 249.6, 1e-9);
  EXPECT_EQ((*result)[1].offer->instance_type, "a3-highgpu-8g");
  // A10G and T4 have no sourced bf16 figure: unknown, ranked after every known one.
  EXPECT_FALSE((*result)[5].bf16_tflops_per_usd.has_value());
  EXPECT_FALSE((*result)[6].bf16_tflops_per_usd.has_value());
}

TEST_F(OfferQueryTest, UnknownGpuOrProviderIsAnError) {
  OfferQuery query;
  query.gpus = {"H900"};
  auto result = QueryOffers(*catalog_, query);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().ExitCode(), 2);
  query.gpus = {};
  query.providers = {"nope"};
  result = QueryOffers(*catalog_, query);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().message(),
            "--provider: expected a provider of the catalog (aws, gcp, slowco, halfco), found "
            "\"nope\"");
}

// --- the one offer filter (offers and plan) ------------------------------------------------

TEST_F(OfferQueryTest, UnknownProviderNamesTheNearest) {
  OfferFilter filter;
  filter.providers = {"awz"};
  filter.providers_flag = "--providers";
  auto result = ResolveOfferFilter(*catalog_, filter);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().ExitCode(), 2);
  EXPECT_EQ(result.status().message(),
            "--providers: expected a provider of the catalog (aws, gcp, slowco, halfco), found "
            "\"awz\"; nearest: aws");
  ASSERT_NE(result.status().detail(), nullptr);
  EXPECT_EQ(result.status().detail()->field, "--providers");
  EXPECT_EQ(result.status().detail()->found, "awz");
  EXPECT_EQ(result.status().detail()->nearest, (std::vector<std::string>{"aws"}));
}

TEST_F(OfferQueryTest, OneUnknownGpuInTheListFails) {
  OfferFilter filter;
  filter.gpus = {"H100", "L5"};
  filter.gpus_flag = "--gpus";
  auto result = ResolveOfferFilter(*catalog_, filter);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().ExitCode(), 2);
  EXPECT_NE(result.status().message().find("--gpus: gpu: expected"), std::string::npos)
      << result.status().message();
  EXPECT_NE(result.status().message().find("found \"L5\"; nearest: L4"), std::string::npos)
      << result.status().message();
  ASSERT_NE(result.status().detail(), nullptr);
  EXPECT_EQ(result.status().detail()->field, "--gpus");
  EXPECT_EQ(result.status().detail()->nearest.front(), "L4");
}

TEST_F(OfferQueryTest, UnknownRegionNamesTheNearest) {
  OfferFilter filter;
  filter.regions = {"us-esat-1"};
  auto result = ResolveOfferFilter(*catalog_, filter);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().ExitCode(), 2);
  EXPECT_NE(result.status().message().find("nearest: us-east-1"), std::string::npos)
      << result.status().message();
}

TEST_F(OfferQueryTest, PricingNoOfferHasIsAnError) {
  OfferFilter filter;
  filter.pricing = {Pricing::kOnDemand, Pricing::kReserved1y};
  auto some = ResolveOfferFilter(*catalog_, filter);  // on_demand exists: reserved_1y is listed
  ASSERT_TRUE(some.ok()) << some.status().message();
  EXPECT_EQ(some->unavailable_pricing, (std::vector<Pricing>{Pricing::kReserved1y}));
  EXPECT_EQ(some->pricing, (std::vector<Pricing>{Pricing::kOnDemand}));
  filter.pricing = {Pricing::kReserved1y};
  auto result = ResolveOfferFilter(*catalog_, filter);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().ExitCode(), 2);
  EXPECT_EQ(result.status().message(),
            "--pricing: no offer of the catalog has reserved_1y prices (no provider has a sourced "
            "discount for that term); offered: on_demand, spot");
  EXPECT_EQ(result.status().detail()->nearest, (std::vector<std::string>{"on_demand", "spot"}));
}

TEST_F(OfferQueryTest, TheFilterThatEmptiesTheSetIsNamed) {
  OfferFilter filter;
  filter.providers = {"slowco"};
  filter.regions = {"us-east"};
  auto result = ResolveOfferFilter(*catalog_, filter);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().ExitCode(), 2);
  EXPECT_EQ(result.status().message(),
            "no offer matches: --region us-east leaves none of the 1 offers that pass --provider "
            "slowco");
  EXPECT_EQ(result.status().detail()->field, "--region");
  OfferQuery query;
  query.providers = {"halfco"};
  query.spot = true;
  auto offers = QueryOffers(*catalog_, query);
  ASSERT_FALSE(offers.ok());
  EXPECT_EQ(offers.status().message(),
            "no offer matches: --spot leaves none of the 1 offers that pass --provider halfco");
}

// A region pattern starts or ends at a boundary of the name's parts: "us" is not the "us" inside
// "Australia" (a data-residency filter must not leak into another continent).
TEST(RegionMatchTest, PatternsMatchWholePartsOfTheName) {
  CatalogFiles files = testing::SmallCatalogFiles();
  int n = 0;
  for (const char* region : {"United States, US, NA", "Australia, AU, OC", "eu-north1",
                             "Russia, RU, EU", "FIN-01", "eastus"}) {
    files.offers.text += "aws,x" + std::to_string(n++) + ",\"" + region + "\",H100,1,1,,,s\n";
  }
  auto catalog = Catalog::FromFiles(files);
  ASSERT_TRUE(catalog.ok()) << catalog.status().message();
  auto regions = [&](const std::string& pattern) {
    OfferFilter filter;
    filter.regions = {pattern};
    auto r = ResolveOfferFilter(*catalog, filter);
    std::vector<std::string> out = r.ok() ? r->regions : std::vector<std::string>{};
    std::sort(out.begin(), out.end());
    return out;
  };
  EXPECT_EQ(regions("us"), (std::vector<std::string>{"United States, US, NA", "eastus",
                                                     "us-central1", "us-east-1"}));
  EXPECT_EQ(regions("EU"), (std::vector<std::string>{"Russia, RU, EU", "eu-north1", "eu-west"}));
  EXPECT_EQ(regions("central"), (std::vector<std::string>{"us-central1"}));
  EXPECT_EQ(regions("eu-north"), (std::vector<std::string>{"eu-north1"}));
  EXPECT_EQ(regions("fin"), (std::vector<std::string>{"FIN-01"}));
  EXPECT_TRUE(regions("stral").empty());  // inside "Australia": no boundary on either side
}

TEST_F(OfferQueryTest, ResolvedNamesAreCanonicalAndRegionsExact) {
  OfferFilter filter;
  filter.gpus = {"h100-mega"};
  filter.providers = {"GCP"};
  filter.regions = {"CENTRAL"};
  filter.pricing = {Pricing::kSpot};
  auto result = ResolveOfferFilter(*catalog_, filter);
  ASSERT_TRUE(result.ok()) << result.status().message();
  EXPECT_EQ(result->gpus, (std::vector<std::string>{"H100-SXM5-80GB"}));
  EXPECT_EQ(result->providers, (std::vector<std::string>{"gcp"}));
  EXPECT_EQ(result->regions, (std::vector<std::string>{"us-central1"}));
  ASSERT_EQ(result->offers.size(), 2u);
  EXPECT_EQ(result->offers[0]->instance_type, "a3-highgpu-8g");
}

TEST_F(OfferQueryTest, AFamilyNameMeansEveryVariant) {
  CatalogFiles files = testing::SmallCatalogFiles();
  // The same catalog with the A100 family spelled out: a second variant and an offer of it.
  files.gpus.text =
      "name,vendor,architecture,aliases,memory_gib,memory_bandwidth_gbps,fp32_tflops,tf32_tflops,"
      "bf16_tflops,fp16_tflops,fp8_tflops,nvlink_gbps,pcie_gen,tdp_watts,source,family\n"
      "A100-SXM4-40GB,NVIDIA,Ampere,A100-40GB,40,1555,19.5,156,312,312,,600,,400,s,A100\n"
      "A100-SXM4-80GB,NVIDIA,Ampere,A100-80GB,80,2039,19.5,156,312,312,,600,,400,s,A100\n"
      "H100-SXM5-80GB,NVIDIA,Hopper,H100,80,3350,67,494.5,989,989,1979,900,,700,s,\n"
      "A10G,NVIDIA,Ampere,,24,600,,,,70,,,,,s,\nL4,NVIDIA,Ada,,24,300,30.3,60,121,121,,,4,72,s,\n"
      "T4,NVIDIA,Turing,,16,320,8.1,,,65,,,3,70,s,\n";
  const std::string box8 = "slowco,box8,eu-west,A100,";
  files.offers.text.replace(files.offers.text.find(box8), box8.size(),
                            "slowco,box8,eu-west,A100-40GB,");
  files.offers.text += "gcp,a2-ultragpu-1g,us-central1,A100-80GB,1,2.9,,,s\n";
  auto catalog = Catalog::FromFiles(files);
  ASSERT_TRUE(catalog.ok()) << catalog.status().message();
  OfferQuery query;
  query.gpus = {"a100"};
  auto family = QueryOffers(*catalog, query);
  ASSERT_TRUE(family.ok()) << family.status().message();
  ASSERT_EQ(family->size(), 2u);
  EXPECT_EQ((*family)[0].offer->instance_type, "a2-ultragpu-1g");
  EXPECT_EQ((*family)[1].offer->instance_type, "box8");
  query.gpus = {"A100-80GB"};  // a size given: that variant only
  auto one = QueryOffers(*catalog, query);
  ASSERT_TRUE(one.ok());
  ASSERT_EQ(one->size(), 1u);
  EXPECT_EQ((*one)[0].offer->gpu, "A100-SXM4-80GB");
}

TEST(PricingTest, NamesRoundTripAndTyposNameTheNearest) {
  for (Pricing p :
       {Pricing::kOnDemand, Pricing::kSpot, Pricing::kReserved1y, Pricing::kReserved3y}) {
    EXPECT_EQ(*ParsePricing(PricingName(p)), p);
  }
  EXPECT_EQ(*ParsePricing("Reserved-3y"), Pricing::kReserved3y);
  auto bad = ParsePricing("reserved_2y");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().ExitCode(), 2);
  EXPECT_EQ(bad.status().detail()->nearest.front(), "reserved_1y");
}

TEST(OfferSortTest, ParsesNames) {
  EXPECT_EQ(*ParseOfferSort("price"), OfferSort::kPrice);
  EXPECT_EQ(*ParseOfferSort("price-per-gpu"), OfferSort::kPricePerGpu);
  EXPECT_EQ(*ParseOfferSort("BF16-TFLOPS-PER-USD"), OfferSort::kBf16TflopsPerUsd);
  EXPECT_FALSE(ParseOfferSort("cheap").ok());
}

}  // namespace
}  // namespace fulcrum::catalog
