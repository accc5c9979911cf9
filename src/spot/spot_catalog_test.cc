#include "spot/spot_catalog.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string_view>

namespace fulcrum::spot {
namespace {

const std::string kCatalog = std::string(FULCRUM_SOURCE_DIR) + "/catalog";

TEST(SpotCatalogTest, ShippedStorageKindsLoad) {
  auto kinds = LoadStorageKinds(kCatalog);
  ASSERT_TRUE(kinds.ok()) << kinds.status().ToString();
  auto def = FindStorageKind(*kinds, "");
  ASSERT_TRUE(def.ok());
  EXPECT_EQ(def->kind, "ebs-gp3");
  EXPECT_DOUBLE_EQ(def->write_bytes_per_second, 125.0 * 1024 * 1024);  // 125 MiB/s
  for (const auto& k : *kinds) EXPECT_FALSE(k.source.empty()) << k.kind;
  auto missing = FindStorageKind(*kinds, "floppy");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("ebs-gp3"), std::string::npos);
}

TEST(SpotCatalogTest, ShippedBandsLoadWithOneDefault) {
  auto bands = LoadSpotBands(kCatalog);
  ASSERT_TRUE(bands.ok()) << bands.status().ToString();
  EXPECT_EQ(bands->size(), 5u);
  int defaults = 0;
  for (const auto& b : *bands) {
    defaults += b.is_default;
    EXPECT_GE(b.assumed_pct_per_month, b.min_pct_per_month) << b.band;
    EXPECT_LE(b.assumed_pct_per_month, b.max_pct_per_month) << b.band;
  }
  EXPECT_EQ(defaults, 1);
  auto def = FindSpotBand(*bands, "");
  ASSERT_TRUE(def.ok());
  EXPECT_EQ(def->label, ">20%");
}

TEST(SpotCatalogTest, MttiFromMonthlyFrequency) {
  // 50 % a month: half-life of one month = 730 h / ln 2.
  EXPECT_NEAR(MttiSecondsFromMonthlyPct(50) / 3600, 730 / std::log(2.0), 1e-9);
}

TEST(SpotCatalogTest, BadRowNamesFileLineAndField) {
  const std::string dir = std::string(FULCRUM_BUILD_DIR) + "/Testing/spot_catalog_bad";
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/storage.csv") << "kind,write_bytes_per_second,default,source,note\n"
                                      << "ebs,fast,yes,somewhere,\n";
  auto kinds = LoadStorageKinds(dir);
  ASSERT_FALSE(kinds.ok());
  EXPECT_EQ(
      kinds.status().message(),
      dir +
          "/storage.csv:2: write_bytes_per_second: expected a number from 1 to 1000000000000, "
          "found \"fast\"");
  ASSERT_NE(kinds.status().detail(), nullptr);
  EXPECT_EQ(kinds.status().detail()->line, 2);
  EXPECT_EQ(kinds.status().detail()->field, "write_bytes_per_second");
  std::ofstream(dir + "/spot_bands.csv") << "band,label\n";
  auto bands = LoadSpotBands(dir);
  ASSERT_FALSE(bands.ok());
  EXPECT_NE(bands.status().message().find("spot_bands.csv:1: header"), std::string::npos);
  std::filesystem::remove_all(dir);
}

// What an instance writes its checkpoints to: a provider's row covers its instances by prefix
// (the longest prefix wins); other providers have no row (the default kind applies to them).
TEST(SpotCatalogTest, ProviderRowsCoverTheirInstancesByLongestPrefix) {
  const std::string dir = std::string(FULCRUM_BUILD_DIR) + "/Testing/spot_catalog_provider";
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/storage.csv")
      << "kind,write_bytes_per_second,default,provider,instance_prefix,source\n"
      << "slow,1e8,yes,,,s\n"
      << "net,5e8,no,acme,,s\n"
      << "nvme,4e9,no,acme,big-,s\n"
      << "nvme8,8e9,no,acme,big-8,s\n";
  auto kinds = LoadStorageKinds(dir);
  ASSERT_TRUE(kinds.ok()) << kinds.status().ToString();
  const auto kind_of = [&](std::string_view provider, std::string_view instance) {
    const StorageKind* k = StorageKindForInstance(*kinds, provider, instance);
    return k == nullptr ? std::string("-") : k->kind;
  };
  EXPECT_EQ(kind_of("acme", "small-1"), "net");
  EXPECT_EQ(kind_of("ACME", "big-4"), "nvme");
  EXPECT_EQ(kind_of("acme", "big-8x"), "nvme8");
  EXPECT_EQ(kind_of("other", "big-8x"), "-");  // no row: the caller uses the default
  // The default is every provider's fallback: a provider's row cannot be it.
  std::ofstream(dir + "/storage.csv")
      << "kind,write_bytes_per_second,default,provider,instance_prefix,source\n"
      << "net,5e8,yes,acme,,s\n";
  auto bad = LoadStorageKinds(dir);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("storage.csv:2: default:"), std::string::npos)
      << bad.status().message();
  std::filesystem::remove_all(dir);
}

// The same RFC 4180 reader as the other catalog tables: quoted commas, comments, CRLF.
TEST(SpotCatalogTest, QuotedCellsAndCommentsLikeEveryTable) {
  const std::string dir = std::string(FULCRUM_BUILD_DIR) + "/Testing/spot_catalog_quoted";
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/storage.csv") << "# a comment line\r\n"
                                      << "kind,write_bytes_per_second,default,source,note\r\n"
                                      << "nvme,2e9,yes,\"vendor, page\",\"multi\nline\"\r\n";
  auto kinds = LoadStorageKinds(dir);
  ASSERT_TRUE(kinds.ok()) << kinds.status().ToString();
  ASSERT_EQ(kinds->size(), 1u);
  EXPECT_EQ((*kinds)[0].source, "vendor, page");
  std::filesystem::remove_all(dir);
}

TEST(SpotCatalogTest, NonFiniteNumbersRefused) {
  const std::string dir = std::string(FULCRUM_BUILD_DIR) + "/Testing/spot_catalog_nonfinite";
  std::filesystem::create_directories(dir);
  for (const char* bad : {"nan", "inf", "1e400", "-inf"}) {
    std::ofstream(dir + "/spot_bands.csv")
        << "band,label,min_pct_per_month,max_pct_per_month,assumed_pct_per_month,default,source\n"
        << "b,x,0,5," << bad << ",yes,s\n";
    auto bands = LoadSpotBands(dir);
    ASSERT_FALSE(bands.ok()) << bad;
    EXPECT_NE(bands.status().message().find("spot_bands.csv:2: assumed_pct_per_month: expected"),
              std::string::npos)
        << bands.status().message();
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace fulcrum::spot
