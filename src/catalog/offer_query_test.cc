#include "catalog/offer_query.h"

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
  query.region = "US-EAST";
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
            "--provider: expected one of aws, gcp, slowco, halfco, found \"nope\"");
}

TEST(OfferSortTest, ParsesNames) {
  EXPECT_EQ(*ParseOfferSort("price"), OfferSort::kPrice);
  EXPECT_EQ(*ParseOfferSort("price-per-gpu"), OfferSort::kPricePerGpu);
  EXPECT_EQ(*ParseOfferSort("BF16-TFLOPS-PER-USD"), OfferSort::kBf16TflopsPerUsd);
  EXPECT_FALSE(ParseOfferSort("cheap").ok());
}

}  // namespace
}  // namespace fulcrum::catalog
