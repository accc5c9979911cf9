// Fuzz target for the catalog CSV path: the first input byte picks which catalog file the rest
// replaces (gpus, offers, providers, currency, a user offers.d file, or a SkyPilot CSV to import);
// the other files are small valid ones. Whatever the input, loading must either fail with an
// input error or yield a catalog whose invariants hold, and the CSV reader must round-trip.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "catalog/catalog.h"
#include "catalog/skypilot_import.h"
#include "catalog/testing_catalog.h"
#include "core/csv.h"

namespace {

using fulcrum::catalog::Catalog;
using fulcrum::catalog::CatalogFiles;

void Check(bool condition) {
  if (!condition) std::abort();
}

void CheckInvariants(const Catalog& catalog) {
  for (const auto& offer : catalog.offers()) {
    Check(offer.gpu_count >= 1);
    Check(catalog.FindGpu(offer.gpu) != nullptr);
    Check(offer.on_demand_usd_per_hour || offer.spot_usd_per_hour);
    Check(!offer.on_demand_usd_per_hour || *offer.on_demand_usd_per_hour >= 0);
    Check(!offer.spot_usd_per_hour || *offer.spot_usd_per_hour >= 0);
    Check(!offer.source.empty());
  }
  for (const auto& gpu : catalog.gpus()) Check(gpu.memory_gib > 0);
}

// A parsed document written back with CsvLine must parse to the same fields.
void CheckRoundTrip(const std::string& text) {
  auto doc = fulcrum::ParseCsv(text, "fuzz.csv");
  if (!doc.ok() || doc->header.size() < 2) return;
  std::string written = fulcrum::CsvLine(doc->header);
  for (const auto& record : doc->records) written += fulcrum::CsvLine(record.fields);
  auto again = fulcrum::ParseCsv(written, "again.csv");
  Check(again.ok());
  Check(again->header == doc->header);
  Check(again->records.size() == doc->records.size());
  for (size_t i = 0; i < doc->records.size(); ++i) {
    Check(again->records[i].fields == doc->records[i].fields);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string body(reinterpret_cast<const char*>(data) + 1, size - 1);
  CheckRoundTrip(body);
  CatalogFiles files = fulcrum::catalog::testing::SmallCatalogFiles();
  files.currency = {"currency.csv", "currency,usd_per_unit,source\nUSD,1,id\nEUR,1.1,test\n"};
  switch (data[0] % 6) {
    case 0:
      files.gpus.text = body;
      break;
    case 1:
      files.offers.text = body;
      break;
    case 2:
      files.providers.text = body;
      break;
    case 3:
      files.currency.text = body;
      break;
    case 4:
      files.user_offers.push_back({"user.csv", body});
      break;
    case 5: {
      auto base = Catalog::FromFiles(files);
      Check(base.ok());
      auto imported = fulcrum::catalog::ImportSkyPilotCsv(body, "vms.csv", *base, {"aws", ""});
      if (imported.ok()) {
        files.user_offers.push_back({"imported.csv", OffersToCsv(imported->offers)});
        Check(Catalog::FromFiles(files).ok());  // the importer's output always loads
      }
      return 0;
    }
  }
  auto catalog = Catalog::FromFiles(files);
  if (catalog.ok()) {
    CheckInvariants(*catalog);
  } else {
    Check(catalog.status().ExitCode() == 2);
  }
  return 0;
}
