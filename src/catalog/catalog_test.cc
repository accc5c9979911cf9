#include "catalog/catalog.h"

#include <gtest/gtest.h>

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>

namespace fulcrum::catalog {
namespace {

const char* kGpusHeader =
    "name,vendor,architecture,aliases,memory_gib,memory_bandwidth_gbps,fp32_tflops,tf32_tflops,"
    "bf16_tflops,fp16_tflops,fp8_tflops,nvlink_gbps,pcie_gen,tdp_watts,source\n";
const char* kGpuH100 =
    "H100-SXM5-80GB,NVIDIA,Hopper,H100;H100-80GB,80,3350,67,494.5,989,989,1979,900,,700,src-a\n";
const char* kGpuT4 = "T4,NVIDIA,Turing,,16,320,8.1,,,65,,,3,70,src-b\n";
const char* kOffersHeader =
    "provider,instance_type,region,gpu,gpu_count,vcpus,memory_gib,currency,on_demand_per_hour,"
    "spot_per_hour,interconnect,network_gbps,source\n";
const char* kOfferP5 =
    "aws,p5.48xlarge,us-east-1,H100-SXM5-80GB,8,192,2048,USD,55.04,14.246,nvlink,3200,s1\n";
const char* kOfferG4 = "aws,g4dn.xlarge,us-east-1,t4,1,4,16,USD,0.526,,pcie,,s2\n";
const char* kProviders =
    "provider,display_name,billing_granularity_seconds,support_24x7,source\n"
    "aws,AWS,1,,src-p\n"
    "verda,Verda (ex-DataCrunch),,yes,src-q\n";
const char* kCurrency =
    "currency,usd_per_unit,date,source\nUSD,1,,identity\nEUR,1.1,2026-11-01,ecb\n";

CatalogFiles ValidFiles() {
  CatalogFiles files;
  files.gpus = {"gpus.csv", std::string(kGpusHeader) + kGpuH100 + kGpuT4};
  files.offers = {"offers.csv", std::string(kOffersHeader) + kOfferP5 + kOfferG4};
  files.providers = {"providers.csv", kProviders};
  files.currency = {"currency.csv", kCurrency};
  return files;
}

std::string LoadError(const CatalogFiles& files) {
  auto catalog = Catalog::FromFiles(files);
  if (catalog.ok()) return "(loaded)";
  EXPECT_EQ(catalog.status().ExitCode(), 2);
  return catalog.status().message();
}

TEST(CatalogTest, LoadsValidFiles) {
  auto catalog = Catalog::FromFiles(ValidFiles());
  ASSERT_TRUE(catalog.ok()) << catalog.status().message();
  ASSERT_EQ(catalog->gpus().size(), 2u);
  ASSERT_EQ(catalog->offers().size(), 2u);
  const Offer& p5 = catalog->offers()[0];
  EXPECT_EQ(p5.gpu, "H100-SXM5-80GB");
  EXPECT_EQ(p5.gpu_count, 8);
  EXPECT_DOUBLE_EQ(*p5.on_demand_usd_per_hour, 55.04);
  EXPECT_DOUBLE_EQ(*p5.spot_usd_per_hour, 14.246);
  EXPECT_EQ(p5.interconnect, Interconnect::kNvlink);
  EXPECT_DOUBLE_EQ(*p5.network_gbps, 3200);
  EXPECT_EQ(p5.origin, "offers.csv");
  EXPECT_EQ(p5.line, 2);
  const Offer& g4 = catalog->offers()[1];
  EXPECT_EQ(g4.gpu, "T4");  // "t4" resolved to the canonical name
  EXPECT_FALSE(g4.spot_usd_per_hour.has_value());
  EXPECT_FALSE(g4.network_gbps.has_value());
  const Gpu* t4 = catalog->FindGpu("T4");
  ASSERT_NE(t4, nullptr);
  EXPECT_FALSE(t4->bf16_tflops.has_value());  // unknown stays unknown, not 0
  EXPECT_EQ(*t4->pcie_gen, 3);
}

TEST(CatalogTest, FindGpuMatchesAliasesCaseInsensitively) {
  auto catalog = Catalog::FromFiles(ValidFiles());
  ASSERT_TRUE(catalog.ok());
  for (const char* name : {"H100", "h100", "H100-80GB", "h100_80gb", "h100-sxm5-80gb"}) {
    const Gpu* gpu = catalog->FindGpu(name);
    ASSERT_NE(gpu, nullptr) << name;
    EXPECT_EQ(gpu->name, "H100-SXM5-80GB");
  }
  EXPECT_EQ(catalog->FindGpu("H200"), nullptr);
  EXPECT_EQ(catalog->FindGpu(""), nullptr);
}

TEST(CatalogTest, ResolveGpuSuggestsCloseNames) {
  auto catalog = Catalog::FromFiles(ValidFiles());
  ASSERT_TRUE(catalog.ok());
  auto found = catalog->ResolveGpu("h100");
  ASSERT_TRUE(found.ok());
  EXPECT_EQ((*found)->name, "H100-SXM5-80GB");
  auto missing = catalog->ResolveGpu("H10");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("nearest: H100"), std::string::npos)
      << missing.status().message();
  ASSERT_NE(missing.status().detail(), nullptr);
  EXPECT_EQ(missing.status().detail()->nearest.front(), "H100");
}

TEST(CatalogTest, FamilyOfSeveralVariantsResolvesToAllOrRefusesOne) {
  CatalogFiles files = ValidFiles();
  files.gpus.text =
      "name,vendor,architecture,aliases,memory_gib,memory_bandwidth_gbps,fp32_tflops,tf32_tflops,"
      "bf16_tflops,fp16_tflops,fp8_tflops,nvlink_gbps,pcie_gen,tdp_watts,source,family\n"
      "H100-SXM5-80GB,NVIDIA,Hopper,H100-SXM,80,3350,67,494.5,989,989,1979,900,,700,s,H100\n"
      "H100-PCIe-80GB,NVIDIA,Hopper,H100-PCIE,80,2000,51,378,756,756,1513,,,,s,H100\n"
      "T4,NVIDIA,Turing,,16,320,8.1,,,65,,,3,70,s,\n";
  files.offers.text = std::string(kOffersHeader) + kOfferG4;
  auto catalog = Catalog::FromFiles(files);
  ASSERT_TRUE(catalog.ok()) << catalog.status().message();
  EXPECT_EQ(catalog->FindGpus("h100").size(), 2u);
  EXPECT_EQ(catalog->FindGpu("H100"), nullptr);     // one GPU wanted: a family is not one
  EXPECT_EQ(catalog->FindGpu("T4")->family, "T4");  // no family column value: the name
  auto one = catalog->ResolveGpu("H100");
  ASSERT_FALSE(one.ok());
  EXPECT_EQ(one.status().ExitCode(), 2);
  EXPECT_EQ(one.status().message(),
            "gpu: expected one GPU model, found the family \"H100\" of 2 variants: "
            "H100-SXM5-80GB, H100-PCIe-80GB; name one of them");
  EXPECT_EQ(one.status().detail()->nearest,
            (std::vector<std::string>{"H100-SXM5-80GB", "H100-PCIe-80GB"}));
  EXPECT_EQ((*catalog->ResolveGpu("h100-pcie"))->name, "H100-PCIe-80GB");
}

TEST(CatalogTest, FamilyNameUsedAsOneGpusAliasIsRefused) {
  CatalogFiles files = ValidFiles();
  files.gpus.text =
      "name,vendor,architecture,aliases,memory_gib,memory_bandwidth_gbps,fp32_tflops,tf32_tflops,"
      "bf16_tflops,fp16_tflops,fp8_tflops,nvlink_gbps,pcie_gen,tdp_watts,source,family\n"
      "H100-SXM5-80GB,NVIDIA,Hopper,H100,80,3350,67,494.5,989,989,1979,900,,700,s,H100\n"
      "H100-PCIe-80GB,NVIDIA,Hopper,,80,2000,51,378,756,756,1513,,,,s,H100\n"
      "T4,NVIDIA,Turing,,16,320,8.1,,,65,,,3,70,s,\n";
  auto catalog = Catalog::FromFiles(files);
  ASSERT_FALSE(catalog.ok());
  EXPECT_NE(catalog.status().message().find("family: expected a family name that no single GPU"),
            std::string::npos)
      << catalog.status().message();
}

TEST(CatalogTest, CaveatColumnsAreRead) {
  CatalogFiles files = ValidFiles();
  files.gpus.text =
      std::string(kGpusHeader).insert(std::string(kGpusHeader).size() - 1, ",caveat") +
      "H100-SXM5-80GB,NVIDIA,Hopper,H100,80,3350,67,494.5,989,989,1979,900,,700,s,\n"
      "T4,NVIDIA,Turing,,16,320,8.1,,,65,,,3,70,s,spec-conflict: two sources disagree\n";
  files.offers.text =
      std::string(kOffersHeader).insert(std::string(kOffersHeader).size() - 1, ",caveat") +
      "aws,p5.48xlarge,us-east-1,H100,8,192,2048,USD,55.04,14.246,,3200,s1,price-anomaly: x\n";
  auto catalog = Catalog::FromFiles(files);
  ASSERT_TRUE(catalog.ok()) << catalog.status().message();
  EXPECT_EQ(catalog->FindGpu("T4")->caveat, "spec-conflict: two sources disagree");
  EXPECT_EQ(catalog->FindGpu("H100")->caveat, "");
  EXPECT_EQ(catalog->offers()[0].caveat, "price-anomaly: x");
  EXPECT_EQ(catalog->offers()[0].interconnect, Interconnect::kUnknown);  // blank = unknown
  EXPECT_STREQ(InterconnectLabel(catalog->offers()[0].interconnect), "unknown");
  files.offers.text.replace(files.offers.text.find("price-anomaly: x"), 16, "Verify this");
  auto bad = Catalog::FromFiles(files);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "offers.csv:2: caveat: expected empty or \"<kind>: <what>\" (kind such as "
            "spec-conflict), found \"Verify this\"");
}

// offers.csv `use`: empty (any workload) or serving (the provider documents the machine type for
// inference only), with the document in use_source; anything else is refused with the row.
TEST(CatalogTest, TheUseColumnMarksServingOnlyMachineTypesWithTheirSource) {
  CatalogFiles files = ValidFiles();
  const std::string header =
      std::string(kOffersHeader).insert(std::string(kOffersHeader).size() - 1, ",use,use_source");
  files.offers.text = header +
                      "aws,edge-only,us-east-1,H100,8,208,1872,USD,43.07,,,,s,serving,"
                      "https://cloud.google.com/compute/docs/accelerator-optimized-machines\n"
                      "aws,p5.48xlarge,us-east-1,H100,8,192,2048,USD,55.04,14.246,,3200,s1,,\n";
  auto catalog = Catalog::FromFiles(files);
  ASSERT_TRUE(catalog.ok()) << catalog.status().message();
  EXPECT_TRUE(catalog->offers()[0].serving_only);
  EXPECT_EQ(catalog->offers()[0].use_source,
            "https://cloud.google.com/compute/docs/accelerator-optimized-machines");
  EXPECT_FALSE(catalog->offers()[1].serving_only);

  files.offers.text = header + "aws,p5.48xlarge,us-east-1,H100,8,192,2048,USD,55.04,,,,s1,train,\n";
  auto bad = Catalog::FromFiles(files);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("offers.csv:2: use: expected empty (any workload) or "
                                        "serving"),
            std::string::npos)
      << bad.status().message();
  files.offers.text =
      header + "aws,p5.48xlarge,us-east-1,H100,8,192,2048,USD,55.04,,,,s1,serving,\n";
  auto unsourced = Catalog::FromFiles(files);
  ASSERT_FALSE(unsourced.ok());
  EXPECT_NE(unsourced.status().message().find("offers.csv:2: use_source"), std::string::npos)
      << unsourced.status().message();
}

TEST(CatalogTest, FindProviderByIdOrDisplayName) {
  auto catalog = Catalog::FromFiles(ValidFiles());
  ASSERT_TRUE(catalog.ok());
  EXPECT_NE(catalog->FindProvider("AWS"), nullptr);
  ASSERT_NE(catalog->FindProvider("verda (ex-datacrunch)"), nullptr);
  EXPECT_EQ(catalog->FindProvider("Verda (ex-DataCrunch)")->name, "verda");
  EXPECT_EQ(*catalog->FindProvider("verda")->support_24x7, true);
  EXPECT_FALSE(catalog->FindProvider("aws")->support_24x7.has_value());
  EXPECT_EQ(catalog->FindProvider("gcp"), nullptr);
}

TEST(CatalogTest, ConvertsOtherCurrenciesWithTheStatedRate) {
  CatalogFiles files = ValidFiles();
  files.offers.text += "verda,1H100.80S.30V,FIN-01,H100,1,30,120,EUR,2.0,1.0,,,s3\n";
  auto catalog = Catalog::FromFiles(files);
  ASSERT_TRUE(catalog.ok()) << catalog.status().message();
  const Offer& offer = catalog->offers().back();
  EXPECT_EQ(offer.currency, "EUR");
  EXPECT_DOUBLE_EQ(*offer.on_demand_usd_per_hour, 2.2);
  EXPECT_DOUBLE_EQ(*offer.spot_usd_per_hour, 1.1);
}

TEST(CatalogTest, WithoutCurrencyFileOnlyUsdIsAccepted) {
  CatalogFiles files = ValidFiles();
  files.currency = {};
  ASSERT_TRUE(Catalog::FromFiles(files).ok());
  files.offers.text += "aws,x1,us-east-1,H100,1,,,EUR,2.0,,,,s3\n";
  EXPECT_EQ(LoadError(files),
            "offers.csv:4: currency: expected a currency of currency.csv (USD), found \"EUR\"");
}

// --- each kind of error -------------------------------------------------------------------

TEST(CatalogErrorTest, MissingHeaderColumn) {
  CatalogFiles files = ValidFiles();
  files.offers.text = "provider,instance_type,region,gpu,gpu_count,source\n";
  EXPECT_EQ(LoadError(files),
            "offers.csv:1: header: expected columns provider,instance_type,region,gpu,gpu_count,"
            "on_demand_per_hour,source, found no column \"on_demand_per_hour\"");
}

TEST(CatalogErrorTest, UnknownHeaderColumn) {
  CatalogFiles files = ValidFiles();
  files.gpus.text = std::string(kGpusHeader).insert(4, "X") + kGpuT4;  // "nameX"
  std::string message = LoadError(files);
  EXPECT_EQ(message.rfind("gpus.csv:1: header: expected columns name,vendor,", 0), 0u) << message;
  EXPECT_NE(message.find("found unknown column \"nameX\""), std::string::npos) << message;
}

TEST(CatalogErrorTest, EmptyFile) {
  CatalogFiles files = ValidFiles();
  files.providers.text = "";
  EXPECT_EQ(LoadError(files),
            "providers.csv:1: header: expected columns provider,source, found an empty file");
}

TEST(CatalogErrorTest, NotANumber) {
  CatalogFiles files = ValidFiles();
  files.offers.text += "aws,x1,us-east-1,H100,1,,,USD,cheap,,,,s\n";
  EXPECT_EQ(LoadError(files),
            "offers.csv:4: on_demand_per_hour: expected a number from 0 to 100000, found "
            "\"cheap\"");
}

TEST(CatalogErrorTest, NegativePrice) {
  CatalogFiles files = ValidFiles();
  files.offers.text += "aws,x1,us-east-1,H100,1,,,USD,1.0,-0.5,,,s\n";
  EXPECT_EQ(LoadError(files),
            "offers.csv:4: spot_per_hour: expected a number from 0 to 100000, found \"-0.5\"");
}

TEST(CatalogErrorTest, GpuCountBelowOne) {
  CatalogFiles files = ValidFiles();
  files.offers.text += "aws,x1,us-east-1,H100,0,,,USD,1.0,,,,s\n";
  EXPECT_EQ(LoadError(files),
            "offers.csv:4: gpu_count: expected a whole number from 1 to 1024, found \"0\"");
}

TEST(CatalogErrorTest, FractionalGpuCount) {
  CatalogFiles files = ValidFiles();
  files.offers.text += "aws,x1,us-east-1,H100,0.5,,,USD,1.0,,,,s\n";
  EXPECT_NE(LoadError(files).find("gpu_count: expected a whole number"), std::string::npos);
}

TEST(CatalogErrorTest, UnknownGpuInOffer) {
  CatalogFiles files = ValidFiles();
  files.offers.text += "aws,x1,us-east-1,H900,1,,,USD,1.0,,,,s\n";
  EXPECT_EQ(LoadError(files),
            "offers.csv:4: gpu: expected a GPU name or alias of gpus.csv, found \"H900\"; did you "
            "mean H100?");
}

TEST(CatalogErrorTest, MisspelledGpuNamesTheNearest) {
  CatalogFiles files = ValidFiles();
  files.offers.text += "aws,x1,us-east-1,H10,1,,,USD,1.0,,,,s\n";
  Result<Catalog> catalog = Catalog::FromFiles(files);
  ASSERT_FALSE(catalog.ok());
  EXPECT_NE(catalog.status().message().find("found \"H10\"; did you mean H100"), std::string::npos)
      << catalog.status().message();
  ASSERT_NE(catalog.status().detail(), nullptr);
  EXPECT_EQ(catalog.status().detail()->field, "gpu");
  EXPECT_EQ(catalog.status().detail()->line, 4);
}

TEST(CatalogErrorTest, UnknownProviderInShippedOffers) {
  CatalogFiles files = ValidFiles();
  files.offers.text += "acme,x1,us-east-1,H100,1,,,USD,1.0,,,,s\n";
  EXPECT_EQ(LoadError(files),
            "offers.csv:4: provider: expected a provider of providers.csv (aws, verda), found "
            "\"acme\"");
}

TEST(CatalogErrorTest, DuplicateOfferKey) {
  CatalogFiles files = ValidFiles();
  files.offers.text += "AWS,p5.48xlarge,us-east-1,H100,8,,,USD,50,,,,s\n";
  EXPECT_EQ(LoadError(files),
            "offers.csv:4: instance_type: expected a unique provider + instance_type + region, "
            "found \"p5.48xlarge\" in \"us-east-1\" again (first on offers.csv:2)");
}

TEST(CatalogErrorTest, SameInstanceInAnotherRegionIsNoDuplicate) {
  CatalogFiles files = ValidFiles();
  files.offers.text += "aws,p5.48xlarge,us-west-2,H100,8,,,USD,50,,,,s\n";
  EXPECT_EQ(LoadError(files), "(loaded)");
}

TEST(CatalogErrorTest, DuplicateGpuAlias) {
  CatalogFiles files = ValidFiles();
  files.gpus.text += "H100-PCIe-80GB,NVIDIA,Hopper,H100,80,2000,,,,,,,,,src\n";
  EXPECT_EQ(LoadError(files),
            "gpus.csv:4: aliases: expected a GPU name or alias used once, found \"H100\" already "
            "used on gpus.csv:2 (H100-SXM5-80GB)");
}

TEST(CatalogErrorTest, DuplicateProvider) {
  CatalogFiles files = ValidFiles();
  files.providers.text += "AWS,,,,src\n";
  EXPECT_EQ(LoadError(files),
            "providers.csv:4: provider: expected a provider listed once, found \"AWS\"");
}

TEST(CatalogErrorTest, MissingSource) {
  CatalogFiles files = ValidFiles();
  files.offers.text += "aws,x1,us-east-1,H100,1,,,USD,1.0,,,,\n";
  EXPECT_EQ(LoadError(files), "offers.csv:4: source: expected a value, found \"\"");
}

TEST(CatalogErrorTest, NoPriceAtAll) {
  CatalogFiles files = ValidFiles();
  files.offers.text += "aws,x1,us-east-1,H100,1,,,USD,,,,,s\n";
  EXPECT_EQ(LoadError(files),
            "offers.csv:4: on_demand_per_hour: expected a price (or at least a spot_per_hour), "
            "or the caveat \"price-unknown: <why>\" when no list is citable, found \"\"");
}

// A row without any citable price list loads with null prices (listed, never costed) and keeps
// the currency it is billed in.
TEST(CatalogTest, PriceUnknownRowLoadsWithNullPrices) {
  CatalogFiles files = ValidFiles();
  files.currency = {"currency.csv",
                    "currency,usd_per_unit,date,source\nUSD,1,,identity\nCNY,0.1374873,2025-02,"
                    "s\n"};
  files.offers.text =
      "provider,instance_type,region,gpu,gpu_count,vcpus,memory_gib,currency,on_demand_per_hour,"
      "spot_per_hour,interconnect,network_gbps,source,note,caveat\n"
      "aws,x1,us-east-1,H100,8,,,CNY,,,,,s,,price-unknown: no public list\n"
      "aws,x2,us-east-1,H100,8,,,CNY,100,,,,s,,\n";
  auto catalog = Catalog::FromFiles(files);
  ASSERT_TRUE(catalog.ok()) << catalog.status().ToString();
  ASSERT_EQ(catalog->offers().size(), 2u);
  const Offer& unknown = catalog->offers()[0];
  EXPECT_FALSE(unknown.on_demand_usd_per_hour.has_value());
  EXPECT_FALSE(unknown.spot_usd_per_hour.has_value());
  EXPECT_EQ(unknown.currency, "CNY");
  const Offer& priced = catalog->offers()[1];
  EXPECT_NEAR(*priced.on_demand_usd_per_hour, 13.74873, 1e-9);
  EXPECT_DOUBLE_EQ(*priced.on_demand_billed_per_hour, 100);
}

TEST(CatalogErrorTest, BadInterconnect) {
  CatalogFiles files = ValidFiles();
  files.offers.text += "aws,x1,us-east-1,H100,1,,,USD,1,,infiniband,,s\n";
  EXPECT_EQ(
      LoadError(files),
      "offers.csv:4: interconnect: expected nvlink, pcie, unknown or empty, found \"infiniband\"");
}

TEST(CatalogErrorTest, BadBoolean) {
  CatalogFiles files = ValidFiles();
  files.providers.text += "gcp,GCP,,maybe,src\n";
  EXPECT_EQ(LoadError(files),
            "providers.csv:4: support_24x7: expected yes, no or empty (unknown), found \"maybe\"");
}

TEST(CatalogErrorTest, PercentOutOfRange) {
  CatalogFiles files = ValidFiles();
  files.providers.text =
      "provider,spot_max_discount_pct,source\n"
      "aws,120,src\n";
  EXPECT_EQ(LoadError(files),
            "providers.csv:2: spot_max_discount_pct: expected a number from 0 to 100, found "
            "\"120\"");
}

TEST(CatalogErrorTest, GpuWithoutMemory) {
  CatalogFiles files = ValidFiles();
  files.gpus.text += "X1,NVIDIA,,,,300,,,,,,,,,src\n";
  EXPECT_EQ(LoadError(files),
            "gpus.csv:4: memory_gib: expected a number from 0.001 to 100000, found \"\"");
}

TEST(CatalogErrorTest, BadCurrencyCode) {
  CatalogFiles files = ValidFiles();
  files.currency.text += "euro,1.1,,ecb\n";
  EXPECT_EQ(LoadError(files),
            "currency.csv:4: currency: expected a three-letter upper-case code such as EUR, found "
            "\"euro\"");
}

TEST(CatalogErrorTest, WrongFieldCountIsReportedWithLine) {
  CatalogFiles files = ValidFiles();
  files.offers.text += "aws,x1,us-east-1\n";
  EXPECT_EQ(LoadError(files), "offers.csv:4: expected 13 fields as in the header, found 3");
}

// --- user offers overlay ------------------------------------------------------------------

TEST(CatalogUserOffersTest, UserOfferReplacesShippedAndAddsNew) {
  CatalogFiles files = ValidFiles();
  files.user_offers.push_back(
      {"my.csv",
       "provider,instance_type,region,gpu,gpu_count,on_demand_per_hour,source\n"
       "aws,p5.48xlarge,us-east-1,H100,8,31.5,negotiated 2026-11\n"
       "mycloud,box-8,home,H100,8,12,own hardware\n"});
  auto catalog = Catalog::FromFiles(files);
  ASSERT_TRUE(catalog.ok()) << catalog.status().message();
  ASSERT_EQ(catalog->offers().size(), 3u);
  EXPECT_DOUBLE_EQ(*catalog->offers()[0].on_demand_usd_per_hour, 31.5);
  EXPECT_EQ(catalog->offers()[0].origin, "my.csv");
  EXPECT_FALSE(catalog->offers()[0].spot_usd_per_hour.has_value());
  EXPECT_EQ(catalog->offers()[2].provider, "mycloud");  // unknown providers allowed here
}

TEST(CatalogUserOffersTest, DuplicateAcrossUserFilesIsRefused) {
  CatalogFiles files = ValidFiles();
  const char* text =
      "provider,instance_type,region,gpu,gpu_count,on_demand_per_hour,source\n"
      "mycloud,box-8,home,H100,8,12,own\n";
  files.user_offers.push_back({"a.csv", text});
  files.user_offers.push_back({"b.csv", text});
  EXPECT_EQ(LoadError(files),
            "b.csv:2: instance_type: expected a unique provider + instance_type + region, found "
            "\"box-8\" in \"home\" again (first on a.csv:2)");
}

// --- Load from a directory ----------------------------------------------------------------

std::string TempDir(const std::string& name) {
  std::string dir = std::string(FULCRUM_BUILD_DIR) + "/Testing/tmp/catalog_test_" + name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

TEST(CatalogLoadTest, LoadsDirectoryAndUserOffersDir) {
  std::string dir = TempDir("load");
  CatalogFiles files = ValidFiles();
  WriteFile(dir + "/gpus.csv", files.gpus.text);
  WriteFile(dir + "/offers.csv", files.offers.text);
  WriteFile(dir + "/providers.csv", files.providers.text);
  std::filesystem::create_directories(dir + "/user");
  WriteFile(dir + "/user/extra.csv",
            "provider,instance_type,region,gpu,gpu_count,on_demand_per_hour,source\n"
            "mycloud,box-1,home,T4,1,0.1,own\n");
  WriteFile(dir + "/user/ignored.txt", "not csv");
  LoadOptions options;
  options.user_offers_dir = dir + "/user";
  auto catalog = Catalog::Load(dir, options);
  ASSERT_TRUE(catalog.ok()) << catalog.status().message();
  EXPECT_EQ(catalog->offers().size(), 3u);
  EXPECT_EQ(catalog->offers().back().origin, dir + "/user/extra.csv");
  options.include_user_offers = false;
  EXPECT_EQ(Catalog::Load(dir, options)->offers().size(), 2u);
  std::filesystem::remove_all(dir);
}

TEST(CatalogLoadTest, MissingFileIsNotFoundWithPath) {
  std::string dir = TempDir("missing");
  auto catalog = Catalog::Load(dir, {false, ""});
  ASSERT_FALSE(catalog.ok());
  EXPECT_EQ(catalog.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(catalog.status().message(), dir + "/gpus.csv: expected a catalog file, found none");
  std::filesystem::remove_all(dir);
}

// --- the shipped catalog ------------------------------------------------------------------

class ShippedCatalogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto loaded = Catalog::Load(std::string(FULCRUM_SOURCE_DIR) + "/catalog", {false, ""});
    ASSERT_TRUE(loaded.ok()) << loaded.status().message();
    catalog_ = std::move(loaded).value();
  }
  std::optional<Catalog> catalog_;
};

TEST_F(ShippedCatalogTest, MeetsTheCountsWithSources) {
  EXPECT_GE(catalog_->gpus().size(), 20u);
  EXPECT_GE(catalog_->offers().size(), 100u);
  std::set<std::string> providers;
  for (const Offer& offer : catalog_->offers()) {
    providers.insert(offer.provider);
    EXPECT_FALSE(offer.source.empty()) << offer.instance_type;
    // Priced offers are quoted in USD; the Chinese clouds' rows bill in CNY and have no price.
    if (offer.currency != "USD") {
      EXPECT_EQ(offer.currency, "CNY") << offer.instance_type;
      EXPECT_EQ(offer.caveat.rfind(kPriceUnknownCaveat, 0), 0u) << offer.instance_type;
      EXPECT_FALSE(offer.on_demand_usd_per_hour || offer.spot_usd_per_hour) << offer.instance_type;
    }
  }
  EXPECT_GE(providers.size(), 8u);
  for (const Gpu& gpu : catalog_->gpus()) EXPECT_FALSE(gpu.source.empty()) << gpu.name;
  for (const Provider& p : catalog_->providers()) EXPECT_FALSE(p.source.empty()) << p.name;
}

TEST_F(ShippedCatalogTest, ResolvesTheRequiredAliases) {
  const std::vector<std::pair<std::string, std::string>> expected = {
      {"A100-40GB", "A100-SXM4-40GB"},
      {"A100-80GB", "A100-SXM4-80GB"},
      {"H100-80GB", "H100-SXM5-80GB"},
      {"H100-SXM", "H100-SXM5-80GB"},
      {"H100-PCIE", "H100-PCIe-80GB"},
      {"H100-NVL", "H100-NVL-94GB"},
      {"H200", "H200-SXM-141GB"},
      {"V100-16GB", "V100-SXM2-16GB"},
      {"V100-32GB", "V100-SXM2-32GB"},
      {"L4", "L4"},
      {"l40s", "L40S"},
      {"T4", "T4"},
      {"a10g", "A10G"},
      {"RTX-4090", "RTX-4090"},
      {"mi300x", "MI300X"}};
  for (const auto& [alias, name] : expected) {
    const Gpu* gpu = catalog_->FindGpu(alias);
    ASSERT_NE(gpu, nullptr) << alias;
    EXPECT_EQ(gpu->name, name) << alias;
  }
}

TEST_F(ShippedCatalogTest, FamilyNamesMeanEveryVariant) {
  auto names = [&](const char* name) {
    std::set<std::string> out;
    for (const Gpu* gpu : catalog_->FindGpus(name)) out.insert(gpu->name);
    return out;
  };
  EXPECT_EQ(names("A100"), (std::set<std::string>{"A100-SXM4-40GB", "A100-SXM4-80GB",
                                                  "A100-PCIe-40GB", "A100-PCIe-80GB"}));
  EXPECT_EQ(names("H100"),
            (std::set<std::string>{"H100-SXM5-80GB", "H100-PCIe-80GB", "H100-NVL-94GB"}));
  EXPECT_EQ(names("V100").size(), 3u);
  EXPECT_EQ(names("A100-80GB"), (std::set<std::string>{"A100-SXM4-80GB"}));
  auto one = catalog_->ResolveGpu("A100");
  ASSERT_FALSE(one.ok());
  EXPECT_EQ(one.status().ExitCode(), 2);
  EXPECT_EQ(one.status().detail()->nearest.size(), 4u);
}

// The serving rates (issue 17): INT8 on T4/A100/H100, FP4 on Blackwell only, none on V100; every
// row that states one names its datasheet in tensor_rate_source.
TEST_F(ShippedCatalogTest, ServingTensorRatesAreSourced) {
  const Gpu* t4 = catalog_->FindGpu("T4");
  ASSERT_NE(t4, nullptr);
  EXPECT_DOUBLE_EQ(*t4->int8_tops, 130);
  EXPECT_FALSE(t4->bf16_tflops.has_value());
  EXPECT_DOUBLE_EQ(*catalog_->FindGpu("A100-80GB")->int8_tops, 624);
  EXPECT_DOUBLE_EQ(*catalog_->FindGpu("H100-SXM")->int8_tops, 1979);
  EXPECT_DOUBLE_EQ(*catalog_->FindGpu("B200")->fp4_tflops, 9000);
  EXPECT_FALSE(catalog_->FindGpu("V100-SXM2-16GB")->int8_tops.has_value());
  EXPECT_FALSE(catalog_->FindGpu("H100-SXM")->fp4_tflops.has_value());
  for (const Gpu& gpu : catalog_->gpus()) {
    if (gpu.int8_tops || gpu.fp4_tflops) {
      EXPECT_FALSE(gpu.tensor_rate_source.empty()) << gpu.name;
    }
  }
}

TEST(CatalogTest, ServingRateColumnsAreOptionalAndValidated) {
  CatalogFiles files = ValidFiles();  // header without int8_tops / fp4_tflops
  Result<Catalog> plain = Catalog::FromFiles(files);
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  EXPECT_FALSE(plain->FindGpu("T4")->int8_tops.has_value());
  files.gpus.text =
      "name,vendor,architecture,aliases,memory_gib,memory_bandwidth_gbps,fp32_tflops,tf32_tflops,"
      "bf16_tflops,fp16_tflops,fp8_tflops,nvlink_gbps,pcie_gen,tdp_watts,source,int8_tops,"
      "fp4_tflops,tensor_rate_source\n"
      "T4,NVIDIA,Turing,,16,320,8.1,,,65,,,3,70,src-b,fast,,ds\n";
  EXPECT_NE(LoadError(files).find("gpus.csv:2: int8_tops"), std::string::npos) << LoadError(files);
}

// Datasheet dense tensor rates with FP32 accumulate (the mode mixed-precision training uses).
TEST_F(ShippedCatalogTest, DenseTensorRatesAreTheDatasheetFigures) {
  const Gpu* a40 = catalog_->FindGpu("A40");
  ASSERT_NE(a40, nullptr);
  EXPECT_DOUBLE_EQ(*a40->bf16_tflops, 149.7);  // was 37.4, the non-tensor FP32 rate
  EXPECT_DOUBLE_EQ(*a40->fp16_tflops, 149.7);
  const Gpu* nvl = catalog_->FindGpu("H100-NVL");
  ASSERT_NE(nvl, nullptr);
  ASSERT_TRUE(nvl->bf16_tflops.has_value());  // was not sourced at all
  EXPECT_DOUBLE_EQ(*nvl->bf16_tflops, 835);
  EXPECT_DOUBLE_EQ(*nvl->fp8_tflops, 1670);
  // A tensor-core rate never equals the plain FP32 rate, not even on GeForce cards, whose FP32
  // accumulate runs at half the FP16-accumulate rate: still 2x the FP32 rate (RTX 3090: 71 vs
  // 35.6, GA102 whitepaper; RTX 4090: 165.2 vs 82.6, Ada whitepaper; both were the FP32 rate).
  for (const Gpu& gpu : catalog_->gpus()) {
    if (!gpu.bf16_tflops || !gpu.fp32_tflops) continue;
    EXPECT_GT(*gpu.bf16_tflops, 1.5 * *gpu.fp32_tflops) << gpu.name;
  }
}

TEST_F(ShippedCatalogTest, NotesThatSayVerifyOrAnomalyHaveACaveat) {
  auto flagged = [](const std::string& note) {
    std::string lower = note;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return lower.find("verify") != std::string::npos || lower.find("anomal") != std::string::npos;
  };
  int caveats = 0;
  for (const Gpu& gpu : catalog_->gpus()) {
    if (flagged(gpu.note)) {
      EXPECT_FALSE(gpu.caveat.empty()) << gpu.name;
    }
    caveats += !gpu.caveat.empty();
  }
  for (const Offer& offer : catalog_->offers()) {
    if (flagged(offer.note)) {
      EXPECT_FALSE(offer.caveat.empty()) << offer.instance_type;
    }
    caveats += !offer.caveat.empty();
  }
  EXPECT_GT(caveats, 0);
}

TEST_F(ShippedCatalogTest, ProviderTermsCarryTheirSources) {
  int billing = 0;
  for (const Provider& p : catalog_->providers()) {
    if (p.billing_granularity_seconds) {
      ++billing;
      EXPECT_FALSE(p.billing_source.empty()) << p.name;
    }
    if (p.reserved_1y_discount_pct || p.reserved_3y_discount_pct || !p.reserved_terms.empty()) {
      EXPECT_FALSE(p.reserved_source.empty()) << p.name;
    }
    if (p.sla_uptime_pct) {
      EXPECT_FALSE(p.sla_source.empty()) << p.name;
    }
    if (p.support_response_minutes) {
      EXPECT_FALSE(p.support_source.empty()) << p.name;
    }
    EXPECT_EQ(p.source.find(std::string("/wo") + "rk/"), std::string::npos)
        << p.name;  // public sources only
  }
  EXPECT_GE(billing, 7);
  EXPECT_DOUBLE_EQ(*catalog_->FindProvider("gcp")->billing_granularity_seconds, 1);
  EXPECT_DOUBLE_EQ(*catalog_->FindProvider("lambda")->billing_granularity_seconds, 60);
}

}  // namespace
}  // namespace fulcrum::catalog
