// The saved-price-response importers against fixtures built from the providers' documented
// response examples (tests/fixtures/prices/README.md names each source), on the shipped catalog.
#include "catalog/price_import.h"

#include <gtest/gtest.h>

#include <string>

#include "core/text_file.h"

namespace fulcrum::catalog {
namespace {

const std::string kFixtures = std::string(FULCRUM_SOURCE_DIR) + "/tests/fixtures/prices/";

const Catalog& Shipped() {
  static const Catalog catalog = [] {
    auto loaded = Catalog::Load(std::string(FULCRUM_SOURCE_DIR) + "/catalog", {false, ""});
    EXPECT_TRUE(loaded.ok()) << loaded.status().ToString();
    return *loaded;
  }();
  return catalog;
}

double UsdPerCny() {
  for (const CurrencyRate& rate : Shipped().currencies()) {
    if (rate.currency == "CNY") return rate.usd_per_unit;
  }
  ADD_FAILURE() << "catalog/currency.csv has no CNY rate";
  return 0;
}

std::string Fixture(const std::string& name) {
  auto text = ReadTextFile(kFixtures + name, "a fixture");
  EXPECT_TRUE(text.ok()) << text.status().ToString();
  return text.ok() ? *text : "";
}

ImportOptions Options(const std::string& instance_type, const std::string& region) {
  ImportOptions options;
  options.instance_type = instance_type;
  options.region = region;
  options.date = "2026-12-02";
  return options;
}

Result<ImportResult> Import(ImportFormat format, const std::string& fixture,
                            const ImportOptions& options) {
  return ImportPriceList(format, Fixture(fixture), kFixtures + fixture, Shipped(), options);
}

TEST(PriceImportTest, FormatsAreParsedWithTheNearestNameOnATypo) {
  EXPECT_EQ(*ParseImportFormat("Alibaba"), ImportFormat::kAlibaba);
  EXPECT_EQ(*ParseImportFormat("tencent"), ImportFormat::kTencent);
  auto typo = ParseImportFormat("alibabba");
  ASSERT_FALSE(typo.ok());
  EXPECT_EQ(typo.status().ExitCode(), 2);
  EXPECT_NE(typo.status().message().find("did you mean alibaba"), std::string::npos)
      << typo.status().message();
}

// DescribePrice names neither the instance type nor the region: they come from the options,
// the GPUs, vCPUs and memory from the catalog row, the price and currency from the response.
TEST(PriceImportTest, AlibabaDescribePriceTakesTheCatalogRowAndTheBilledCurrency) {
  auto result = Import(ImportFormat::kAlibaba, "alibaba_describe_price_hourly.json",
                       Options("ecs.gn7-c13g1.26xlarge", "cn-hangzhou"));
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  ASSERT_EQ(result->offers.size(), 1u);
  const Offer& offer = result->offers[0];
  EXPECT_EQ(offer.provider, "alibaba");
  EXPECT_EQ(offer.instance_type, "ecs.gn7-c13g1.26xlarge");
  EXPECT_EQ(offer.region, "cn-hangzhou");
  EXPECT_EQ(offer.gpu, "A100-SXM4-40GB");
  EXPECT_EQ(offer.gpu_count, 8);
  EXPECT_EQ(offer.vcpus, 104);
  EXPECT_EQ(offer.currency, "CNY");
  EXPECT_DOUBLE_EQ(*offer.on_demand_billed_per_hour, 100);  // PriceInfo.Price.TradePrice
  EXPECT_DOUBLE_EQ(*offer.on_demand_usd_per_hour, 100 * UsdPerCny());
  EXPECT_FALSE(offer.spot_usd_per_hour.has_value());
  EXPECT_TRUE(offer.caveat.empty()) << "a priced offer is no longer price-unknown";
  EXPECT_NE(offer.source.find("imported 2026-12-02"), std::string::npos) << offer.source;

  // The CSV written for offers.d loads back over the shipped catalog with the same prices.
  CatalogFiles files;
  for (auto [name, file] : {std::pair{"gpus.csv", &files.gpus},
                            {"offers.csv", &files.offers},
                            {"providers.csv", &files.providers},
                            {"currency.csv", &files.currency}}) {
    file->name = name;
    file->text = *ReadTextFile(std::string(FULCRUM_SOURCE_DIR) + "/catalog/" + name, "catalog");
  }
  files.user_offers.push_back({"offers.d/alibaba.csv", OffersToCsv(result->offers)});
  auto loaded = Catalog::FromFiles(files);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  const Offer& back = loaded->offers().back();
  EXPECT_EQ(back.region, "cn-hangzhou");
  EXPECT_EQ(back.currency, "CNY");
  EXPECT_NEAR(*back.on_demand_usd_per_hour, 100 * UsdPerCny(), 1e-6);
}

// Seen: the documented DescribePrice sample is a 1-year subscription quote (its rule says so);
// imported as CNY per instance-hour it made an 8x A100 node cost ~$510/h. It is refused.
TEST(PriceImportTest, AnAlibabaSubscriptionQuoteIsRefusedWithItsRule) {
  auto result = Import(ImportFormat::kAlibaba, "alibaba_describe_price.json",
                       Options("ecs.gn7-c13g1.26xlarge", "cn-hangzhou"));
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().ExitCode(), 2);
  const std::string message = result.status().message();
  EXPECT_NE(message.find("alibaba_describe_price.json:10: PriceInfo.Rules"), std::string::npos)
      << message;
  EXPECT_NE(message.find("PriceUnit=Hour"), std::string::npos) << message;
  EXPECT_NE(message.find("1-year subscription"), std::string::npos) << message;
}

TEST(PriceImportTest, AlibabaSpotHistoryTakesTheLatestLowestSpotPriceAndItsDate) {
  auto result = Import(ImportFormat::kAlibaba, "alibaba_spot_price_history.json",
                       Options("ecs.gn7-c13g1.26xlarge", "cn-hangzhou"));
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  const Offer& offer = result->offers.at(0);
  EXPECT_EQ(result->rows_read, 2);
  EXPECT_DOUBLE_EQ(*offer.spot_billed_per_hour, 0.036);       // SpotPrice at 07:00
  EXPECT_DOUBLE_EQ(*offer.on_demand_billed_per_hour, 0.354);  // its OriginPrice
  EXPECT_NE(offer.note.find("2019-11-19T07:00:00Z"), std::string::npos) << offer.note;
  EXPECT_NE(offer.source.find("imported 2019-11-19"), std::string::npos) << offer.source;
}

TEST(PriceImportTest, AlibabaSpotHistoryOfAnotherInstanceTypeNamesItsLine) {
  auto result = Import(ImportFormat::kAlibaba, "alibaba_spot_price_history_g5.json",
                       Options("ecs.gn7-c13g1.26xlarge", "cn-hangzhou"));
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().ExitCode(), 2);
  EXPECT_EQ(result.status().message(),
            kFixtures +
                "alibaba_spot_price_history_g5.json:12: SpotPrices.SpotPriceType.InstanceType: "
                "expected the prices of --instance-type ecs.gn7-c13g1.26xlarge, found "
                "\"ecs.g5.large\"");
  auto zone = Import(ImportFormat::kAlibaba, "alibaba_spot_price_history.json",
                     Options("ecs.gn7-c13g1.26xlarge", "cn-beijing"));
  ASSERT_FALSE(zone.ok());
  EXPECT_NE(zone.status().message().find("ZoneId: expected a zone of --region cn-beijing, found "
                                         "\"cn-hangzhou-g\""),
            std::string::npos)
      << zone.status().message();
}

TEST(PriceImportTest, TencentHourlyInquiryIsImportedInCny) {
  auto result = Import(ImportFormat::kTencent, "tencent_inquiry_price_hourly.json",
                       Options("GT4.41XLARGE948", "ap-guangzhou"));
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  const Offer& offer = result->offers.at(0);
  EXPECT_EQ(offer.provider, "tencent");
  EXPECT_EQ(offer.gpu_count, 8);
  EXPECT_EQ(offer.currency, "CNY");
  EXPECT_DOUBLE_EQ(*offer.on_demand_billed_per_hour, 3.33);  // UnitPriceDiscount, ChargeUnit HOUR
  EXPECT_NE(offer.note.find("CNY assumed"), std::string::npos) << offer.note;
}

TEST(PriceImportTest, UsdPerCnyOverridesTheCatalogRateAndWritesUsd) {
  ImportOptions options = Options("GT4.41XLARGE948", "ap-guangzhou");
  options.usd_per_cny = 0.125;
  auto result = Import(ImportFormat::kTencent, "tencent_inquiry_price_hourly.json", options);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  const Offer& offer = result->offers.at(0);
  EXPECT_EQ(offer.currency, "USD");
  EXPECT_DOUBLE_EQ(*offer.on_demand_usd_per_hour, 3.33 * 0.125);
  EXPECT_DOUBLE_EQ(*offer.on_demand_billed_per_hour, 3.33 * 0.125);
  EXPECT_NE(OffersToCsv(result->offers).find(",USD,0.41625,"), std::string::npos);
}

TEST(PriceImportTest, BadInputExitsTwoNamingFileLineExpectedAndFound) {
  const ImportOptions ali = Options("ecs.gn7-c13g1.26xlarge", "cn-hangzhou");
  // A price file of another format.
  auto tencent_as_alibaba =
      Import(ImportFormat::kAlibaba, "tencent_inquiry_price_hourly.json", ali);
  ASSERT_FALSE(tencent_as_alibaba.ok());
  EXPECT_EQ(tencent_as_alibaba.status().ExitCode(), 2);
  EXPECT_EQ(tencent_as_alibaba.status().message(),
            kFixtures +
                "tencent_inquiry_price_hourly.json:2: expected an Alibaba Cloud DescribePrice "
                "(PriceInfo.Price) or DescribeSpotPriceHistory (SpotPrices.SpotPriceType) "
                "response, found a Tencent Cloud API response (Response.Price); import it with "
                "--format tencent");
  auto alibaba_as_tencent = Import(ImportFormat::kTencent, "alibaba_describe_price.json",
                                   Options("GT4.41XLARGE948", "ap-guangzhou"));
  ASSERT_FALSE(alibaba_as_tencent.ok());
  EXPECT_NE(alibaba_as_tencent.status().message().find("--format alibaba"), std::string::npos);
  auto csv = ImportPriceList(ImportFormat::kAlibaba, "InstanceType,Price\nx,1\n", "vms.csv",
                             Shipped(), ali);
  ASSERT_FALSE(csv.ok());
  EXPECT_EQ(csv.status().message(),
            "vms.csv:1: expected the JSON of a price response saved from the provider's API, "
            "found text that is not JSON");
  // An instance family the catalog does not know: the nearest names.
  auto unknown = Import(ImportFormat::kAlibaba, "alibaba_describe_price.json",
                        Options("ecs.gn9-c13g1.26xlarge", "cn-hangzhou"));
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().ExitCode(), 2);
  EXPECT_NE(unknown.status().message().find(
                "--instance-type: expected an instance type of alibaba in the catalog"),
            std::string::npos)
      << unknown.status().message();
  EXPECT_NE(unknown.status().message().find("did you mean ecs.gn7-c13g1.26xlarge"),
            std::string::npos)
      << unknown.status().message();
  // A currency mismatch: --usd-per-cny on a USD price.
  ImportOptions rate = ali;
  rate.usd_per_cny = 0.14;
  auto usd = Import(ImportFormat::kAlibaba, "alibaba_describe_price_usd.json", rate);
  ASSERT_FALSE(usd.ok());
  EXPECT_EQ(usd.status().message(),
            kFixtures +
                "alibaba_describe_price_usd.json:5: Currency: expected a price billed in CNY "
                "(--usd-per-cny converts CNY), found \"USD\"");
  // A prepaid (monthly) inquiry is not an hourly price.
  auto prepaid = Import(ImportFormat::kTencent, "tencent_inquiry_price_prepaid.json",
                        Options("GT4.41XLARGE948", "ap-guangzhou"));
  ASSERT_FALSE(prepaid.ok());
  EXPECT_NE(prepaid.status().message().find(
                "tencent_inquiry_price_prepaid.json:4: Response.Price.InstancePrice.ChargeUnit: "
                "expected \"HOUR\""),
            std::string::npos)
      << prepaid.status().message();
  // The options the responses cannot supply.
  auto no_region = Import(ImportFormat::kAlibaba, "alibaba_describe_price.json",
                          Options("ecs.gn7-c13g1.26xlarge", ""));
  ASSERT_FALSE(no_region.ok());
  EXPECT_NE(no_region.status().message().find("--region: expected"), std::string::npos);
}

}  // namespace
}  // namespace fulcrum::catalog
