// Fuzz target for the saved-price-response importers (catalog/price_import): the first input byte
// picks the format (odd: alibaba, even: tencent), the rest is the saved file. Whatever the input,
// an import either fails with an input error (exit code 2) or yields one offer whose prices are
// non-negative and finite and whose CSV loads back over the catalog it was imported into.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "catalog/catalog.h"
#include "catalog/price_import.h"
#include "catalog/testing_catalog.h"

namespace {

void Check(bool condition) {
  if (!condition) std::abort();
}

bool PriceOk(const std::optional<double>& price) {
  return !price || (std::isfinite(*price) && *price >= 0);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  using fulcrum::catalog::Catalog;
  using fulcrum::catalog::ImportFormat;
  const std::string body(reinterpret_cast<const char*>(data) + 1, size - 1);
  fulcrum::catalog::CatalogFiles files = fulcrum::catalog::testing::SmallCatalogFiles();
  files.currency = {"currency.csv", "currency,usd_per_unit,source\nUSD,1,id\nCNY,0.14,test\n"};
  files.offers.text +=
      "alibaba,ecs.gn7-c13g1.26xlarge,unspecified,A100,8,,,,s\n"
      "tencent,GT4.41XLARGE948,ap-guangzhou,A100,8,,,,s\n";
  files.providers.text += "alibaba,Alibaba,,,,,s\ntencent,Tencent,,,,,s\n";
  files.offers.text.replace(files.offers.text.find("network_gbps,source\n"), 20,
                            "network_gbps,source,currency,caveat\n");
  // Every row needs the two new cells: shipped rows USD, the Chinese ones price-unknown in CNY.
  std::string text;
  size_t line_start = 0;
  bool header = true;
  while (line_start < files.offers.text.size()) {
    size_t end = files.offers.text.find('\n', line_start);
    std::string line = files.offers.text.substr(line_start, end - line_start);
    line_start = end + 1;
    if (!header) {
      const bool unpriced = line.rfind("alibaba", 0) == 0 || line.rfind("tencent", 0) == 0;
      line += unpriced ? ",CNY,price-unknown: test" : ",USD,";
    }
    header = false;
    text += line + "\n";
  }
  files.offers.text = text;
  auto catalog = Catalog::FromFiles(files);
  Check(catalog.ok());
  fulcrum::catalog::ImportOptions options;
  options.region = "cn-hangzhou";
  options.date = "2026-12-02";
  const bool alibaba = data[0] % 2 == 1;
  options.instance_type = alibaba ? "ecs.gn7-c13g1.26xlarge" : "GT4.41XLARGE948";
  auto imported =
      fulcrum::catalog::ImportPriceList(alibaba ? ImportFormat::kAlibaba : ImportFormat::kTencent,
                                        body, "price.json", *catalog, options);
  if (!imported.ok()) {
    Check(imported.status().ExitCode() == 2);
    return 0;
  }
  Check(imported->offers.size() == 1);
  const auto& offer = imported->offers.front();
  Check(PriceOk(offer.on_demand_usd_per_hour) && PriceOk(offer.spot_usd_per_hour));
  Check(offer.on_demand_usd_per_hour || offer.spot_usd_per_hour);
  files.user_offers.push_back({"imported.csv", OffersToCsv(imported->offers)});
  Check(Catalog::FromFiles(files).ok());  // the importer's output always loads
  return 0;
}
