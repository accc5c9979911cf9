// Conversion of a SkyPilot catalog CSV (skypilot-org/skypilot-catalog, catalogs/v*/<cloud>/vms.csv:
// InstanceType, AcceleratorName, AcceleratorCount, vCPUs, MemoryGiB, GpuInfo, Price, SpotPrice,
// Region, AvailabilityZone) into fulcrum offers, so a user can refresh prices. One offer per
// (instance type, region): on-demand and spot are the lowest over the region's zones. GCP lists a
// host VM row (no accelerator) and a separate GPU row (no instance type) per zone; their prices
// are added. Rows without a GPU, with an accelerator the catalog does not know, or with a
// fractional GPU count are skipped and counted. Pure functions, thread-safe.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "catalog/catalog.h"
#include "core/status.h"

namespace fulcrum::catalog {

// What every importer (SkyPilot CSV here, saved provider price responses in price_import.h)
// needs beyond the file. Fields an importer does not use are ignored.
struct ImportOptions {
  std::string provider;  // provider id written into each offer, e.g. "aws"
  std::string source;    // text for the source column; "" = the importer's default
  // Saved price responses, which do not name what was priced: the catalog instance type it
  // prices and the region it was asked for (both required there).
  std::string instance_type;
  std::string region;
  std::string currency;               // the billed currency when the response omits it; "" = none
  std::optional<double> usd_per_cny;  // overrides currency.csv's CNY rate (prices written in USD)
  std::string date;                   // YYYY-MM-DD of the import, for responses without a date
};

struct ImportResult {
  std::vector<Offer> offers;           // sorted by instance type, then region
  std::map<std::string, int> skipped;  // reason -> number of rows
  int rows_read = 0;
};

// `file_name` names the input in messages. A missing required column or a malformed number is
// InvalidInput "file:line: column: expected ..., found ...".
Result<ImportResult> ImportSkyPilotCsv(std::string_view text, const std::string& file_name,
                                       const Catalog& catalog, const ImportOptions& options);

// The offers in catalog/offers.csv format (header first), prices in each offer's currency as
// billed (USD when no billed price is set): loadable as a user offers.d file or as a catalog's
// offers.csv (currency.csv converts).
std::string OffersToCsv(const std::vector<Offer>& offers);

}  // namespace fulcrum::catalog
