// Fuzz target for the one table loader (core/csv + core/row_reader) and the catalog on it: the
// first input byte picks which catalog file the rest replaces (gpus, offers, providers, currency,
// a user offers.d file, a SkyPilot CSV to import) or a bare table read cell by cell with every
// typed accessor (the path of storage.csv, spot_bands.csv and the CUDA driver tables); the other
// files are small valid ones. Whatever the input, loading must either fail with an input error
// carrying a detail, or yield values whose invariants hold, and the CSV reader must round-trip.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "catalog/catalog.h"
#include "catalog/skypilot_import.h"
#include "catalog/testing_catalog.h"
#include "core/csv.h"
#include "core/row_reader.h"

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
    Check(offer.on_demand_usd_per_hour || offer.spot_usd_per_hour ||
          offer.caveat.rfind(fulcrum::catalog::kPriceUnknownCaveat, 0) == 0);
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

// Every typed accessor on every cell: a value is finite and in range, an error is an input
// error with file, line and column.
void CheckTableCells(const std::string& text) {
  const fulcrum::TableSchema schema = {{"a"}, {"b", "c", "d"}};
  auto table = fulcrum::ParseTable(text, "t.csv", schema);
  if (!table.ok()) {
    Check(table.status().ExitCode() == 2 && table.status().detail() != nullptr);
    return;
  }
  for (size_t i = 0; i < table->size(); ++i) {
    fulcrum::RowReader row = table->Row(i);
    for (const char* column : {"a", "b", "c", "d"}) {
      auto number = row.OptionalNumber(column, -1e9, 1e9);
      if (number.ok() && *number) Check(std::isfinite(**number) && std::fabs(**number) <= 1e9);
      if (!number.ok()) {
        const fulcrum::ErrorDetail* detail = number.status().detail();
        Check(detail != nullptr && detail->line == row.line() && detail->field == column);
      }
      auto whole = row.OptionalInt(column, -1000, 1000);
      if (whole.ok() && *whole) Check(**whole >= -1000 && **whole <= 1000);
      (void)row.OptionalBool(column);
      (void)row.RequiredText(column);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string body(reinterpret_cast<const char*>(data) + 1, size - 1);
  CheckRoundTrip(body);
  CatalogFiles files = fulcrum::catalog::testing::SmallCatalogFiles();
  files.currency = {"currency.csv", "currency,usd_per_unit,source\nUSD,1,id\nEUR,1.1,test\n"};
  if (data[0] % 7 == 6) {
    CheckTableCells(body);
    return 0;
  }
  switch (data[0] % 7) {
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
      fulcrum::catalog::ImportOptions aws;
      aws.provider = "aws";
      auto imported = fulcrum::catalog::ImportSkyPilotCsv(body, "vms.csv", *base, aws);
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
