#include "catalog/skypilot_import.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "catalog/testing_catalog.h"

namespace fulcrum::catalog {
namespace {

std::string Fixture(const std::string& name) {
  std::ifstream in(std::string(FULCRUM_SOURCE_DIR) + "/tests/fixtures/catalog/" + name);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

class SkyPilotImportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto loaded = Catalog::FromFiles(testing::SmallCatalogFiles());
    ASSERT_TRUE(loaded.ok()) << loaded.status().message();
    catalog_ = std::move(loaded).value();
  }
  Result<ImportResult> Import(const std::string& fixture, const std::string& provider) {
    ImportOptions options;
    options.provider = provider;
    return ImportSkyPilotCsv(Fixture(fixture), fixture, *catalog_, options);
  }
  std::optional<Catalog> catalog_;
};

TEST_F(SkyPilotImportTest, AwsOneOfferPerTypeAndRegionWithLowestSpot) {
  auto result = Import("skypilot_aws.csv", "aws");
  ASSERT_TRUE(result.ok()) << result.status().message();
  EXPECT_EQ(result->rows_read, 7);
  ASSERT_EQ(result->offers.size(), 3u);
  const Offer& g5 = result->offers[0];
  EXPECT_EQ(g5.instance_type, "g5.xlarge");
  EXPECT_EQ(g5.gpu, "A10G");
  EXPECT_DOUBLE_EQ(*g5.on_demand_usd_per_hour, 1.006);
  EXPECT_DOUBLE_EQ(*g5.spot_usd_per_hour, 0.4591);  // the cheaper of the two zones
  EXPECT_EQ(*g5.vcpus, 4);
  EXPECT_EQ(g5.provider, "aws");
  const Offer& p5_east = result->offers[1];
  EXPECT_EQ(p5_east.gpu, "H100-SXM5-80GB");
  EXPECT_EQ(p5_east.gpu_count, 8);
  EXPECT_DOUBLE_EQ(*p5_east.spot_usd_per_hour, 14.246);
  EXPECT_EQ(p5_east.interconnect, Interconnect::kNvlink);
  const Offer& p5_west = result->offers[2];
  EXPECT_EQ(p5_west.region, "us-west-2");
  EXPECT_FALSE(p5_west.spot_usd_per_hour.has_value());
  EXPECT_EQ(result->skipped.at("no GPU"), 1);
  EXPECT_EQ(result->skipped.at("accelerator not in the catalog: Inferentia2"), 1);
}

TEST_F(SkyPilotImportTest, GcpAddsHostAndGpuRows) {
  auto result = Import("skypilot_gcp.csv", "gcp");
  ASSERT_TRUE(result.ok()) << result.status().message();
  ASSERT_EQ(result->offers.size(), 2u);
  const Offer& a2 = result->offers[0];
  EXPECT_EQ(a2.instance_type, "a2-highgpu-1g");
  EXPECT_EQ(a2.gpu, "A100-SXM4-40GB");
  EXPECT_EQ(a2.gpu_count, 1);
  // host 0.73948 + GPU 2.93391; SkyPilot-derived total in the sources: 3.67339 / 1.80385.
  EXPECT_NEAR(*a2.on_demand_usd_per_hour, 3.67339, 1e-9);
  EXPECT_NEAR(*a2.spot_usd_per_hour, 1.80385, 1e-9);
  const Offer& g2 = result->offers[1];
  EXPECT_EQ(g2.instance_type, "g2-standard-24");
  EXPECT_EQ(g2.gpu, "L4");
  EXPECT_EQ(g2.gpu_count, 2);
  EXPECT_NEAR(*g2.on_demand_usd_per_hour, 2.00083, 1e-9);
  EXPECT_EQ(result->skipped.at("no GPU"), 1);                                  // n1-highmem-8
  EXPECT_EQ(result->skipped.at("GCP host VM without a matching GPU row"), 1);  // a3-highgpu-8g
  EXPECT_EQ(result->skipped.at("GCP GPU row without its host VM row"), 2);     // T4, TPU
}

TEST_F(SkyPilotImportTest, OutputLoadsBackAsUserOffers) {
  auto result = Import("skypilot_gcp.csv", "gcp");
  ASSERT_TRUE(result.ok());
  CatalogFiles files = testing::SmallCatalogFiles();
  files.user_offers.push_back({"imported.csv", OffersToCsv(result->offers)});
  auto catalog = Catalog::FromFiles(files);
  ASSERT_TRUE(catalog.ok()) << catalog.status().message();
  const Offer& last = catalog->offers().back();
  EXPECT_EQ(last.instance_type, "g2-standard-24");
  EXPECT_NEAR(*last.on_demand_usd_per_hour, 2.00083, 1e-9);
  EXPECT_EQ(last.source, "SkyPilot catalog skypilot_gcp.csv");
}

TEST_F(SkyPilotImportTest, MissingColumnAndBadNumberAreInputErrors) {
  ImportOptions aws;
  aws.provider = "aws";
  auto result = ImportSkyPilotCsv("InstanceType,Price\nx,1\n", "v.csv", *catalog_, aws);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().ExitCode(), 2);
  EXPECT_NE(result.status().message().find("v.csv:1: header: expected columns InstanceType,"),
            std::string::npos)
      << result.status().message();
  std::string text = Fixture("skypilot_aws.csv") + "g5.2xlarge,A10G,1,8,32,,abc,,us-east-1,z\n";
  result = ImportSkyPilotCsv(text, "v.csv", *catalog_, aws);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().message(),
            "v.csv:9: Price: expected a number from 0 to 10000000, found \"abc\"");
}

}  // namespace
}  // namespace fulcrum::catalog
