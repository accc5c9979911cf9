#include "spot/spot_catalog.h"

#include <cmath>

#include "core/parse.h"
#include "core/row_reader.h"

namespace fulcrum::spot {

namespace {

const TableSchema kStoragePriceSchema = {
    {"provider", "disk_usd_per_gb_month", "checkpoint_usd_per_gb_month", "egress_usd_per_gb",
     "source"},
    {"note"}};
// Plausibility limit for a storage or egress price (catches typos, not an outside fact).
constexpr double kMaxUsdPerGb = 100;

const TableSchema kStorageSchema = {{"kind", "write_bytes_per_second", "default", "source"},
                                    {"note", "provider", "instance_prefix"}};
const TableSchema kSpotBandSchema = {{"band", "label", "min_pct_per_month", "max_pct_per_month",
                                      "assumed_pct_per_month", "default", "source"},
                                     {"note"}};

// Plausibility limits (not outside facts: they only catch typos).
constexpr double kMaxWriteBytesPerSecond = 1e12;

template <typename Row>
Result<Row> FindByName(const std::vector<Row>& rows, std::string_view name, std::string Row::*key,
                       const char* what) {
  std::string known;
  for (const Row& row : rows) {
    if (name.empty() ? row.is_default : EqualsIgnoreCase(row.*key, name)) return row;
    known += (known.empty() ? "" : ", ") + row.*key;
  }
  if (name.empty()) return Status::NotFound(std::string("no default ") + what + " in the catalog");
  return Status::NotFound(std::string("no ") + what + " '" + std::string(name) +
                          "'; known: " + known);
}

}  // namespace

Result<std::vector<StorageKind>> LoadStorageKinds(const std::string& catalog_dir) {
  FULCRUM_ASSIGN_OR_RETURN(CsvTable table,
                           LoadTableFile(catalog_dir + "/storage.csv", kStorageSchema));
  std::vector<StorageKind> kinds;
  for (size_t i = 0; i < table.size(); ++i) {
    RowReader row = table.Row(i);
    StorageKind kind;
    FULCRUM_ASSIGN_OR_RETURN(kind.kind, row.RequiredText("kind"));
    FULCRUM_ASSIGN_OR_RETURN(kind.write_bytes_per_second,
                             row.Number("write_bytes_per_second", 1, kMaxWriteBytesPerSecond));
    FULCRUM_ASSIGN_OR_RETURN(kind.is_default, row.Bool("default"));
    kind.provider = row.Text("provider");
    kind.instance_prefix = row.Text("instance_prefix");
    if (kind.provider.empty() && !kind.instance_prefix.empty()) {
      return row.Error("provider", "a provider for the instance_prefix");
    }
    // The default is the fallback for every provider without a row of its own.
    if (kind.is_default && !kind.provider.empty()) {
      return row.Error("default", "no on a provider's row (the default applies to every provider)");
    }
    FULCRUM_ASSIGN_OR_RETURN(kind.source, row.RequiredText("source"));
    kinds.push_back(std::move(kind));
  }
  return kinds;
}

Result<std::vector<StoragePrice>> LoadStoragePrices(const std::string& catalog_dir) {
  FULCRUM_ASSIGN_OR_RETURN(CsvTable table,
                           LoadTableFile(catalog_dir + "/storage_prices.csv", kStoragePriceSchema));
  std::vector<StoragePrice> prices;
  for (size_t i = 0; i < table.size(); ++i) {
    RowReader row = table.Row(i);
    StoragePrice price;
    FULCRUM_ASSIGN_OR_RETURN(price.provider, row.RequiredText("provider"));
    FULCRUM_ASSIGN_OR_RETURN(price.disk_usd_per_gb_month,
                             row.OptionalNumber("disk_usd_per_gb_month", 0, kMaxUsdPerGb));
    FULCRUM_ASSIGN_OR_RETURN(price.checkpoint_usd_per_gb_month,
                             row.OptionalNumber("checkpoint_usd_per_gb_month", 0, kMaxUsdPerGb));
    FULCRUM_ASSIGN_OR_RETURN(price.egress_usd_per_gb,
                             row.OptionalNumber("egress_usd_per_gb", 0, kMaxUsdPerGb));
    FULCRUM_ASSIGN_OR_RETURN(price.source, row.RequiredText("source"));
    prices.push_back(std::move(price));
  }
  return prices;
}

Result<std::vector<SpotBand>> LoadSpotBands(const std::string& catalog_dir) {
  FULCRUM_ASSIGN_OR_RETURN(CsvTable table,
                           LoadTableFile(catalog_dir + "/spot_bands.csv", kSpotBandSchema));
  std::vector<SpotBand> bands;
  for (size_t i = 0; i < table.size(); ++i) {
    RowReader row = table.Row(i);
    SpotBand band;
    FULCRUM_ASSIGN_OR_RETURN(band.band, row.RequiredText("band"));
    band.label = row.Text("label");
    FULCRUM_ASSIGN_OR_RETURN(band.min_pct_per_month, row.Number("min_pct_per_month", 0, 100));
    FULCRUM_ASSIGN_OR_RETURN(band.max_pct_per_month, row.Number("max_pct_per_month", 0, 100));
    FULCRUM_ASSIGN_OR_RETURN(band.assumed_pct_per_month,
                             row.Number("assumed_pct_per_month", 0, 100));
    if (band.assumed_pct_per_month <= 0 || band.assumed_pct_per_month >= 100) {
      // MttiSecondsFromMonthlyPct needs 0 < p < 100.
      return row.Error("assumed_pct_per_month", "a number > 0 and < 100");
    }
    FULCRUM_ASSIGN_OR_RETURN(band.is_default, row.Bool("default"));
    FULCRUM_ASSIGN_OR_RETURN(band.source, row.RequiredText("source"));
    bands.push_back(std::move(band));
  }
  return bands;
}

Result<StorageKind> FindStorageKind(const std::vector<StorageKind>& kinds, std::string_view name) {
  return FindByName(kinds, name, &StorageKind::kind, "storage kind");
}

const StorageKind* StorageKindForInstance(const std::vector<StorageKind>& kinds,
                                          std::string_view provider,
                                          std::string_view instance_type) {
  const StorageKind* best = nullptr;
  for (const StorageKind& k : kinds) {
    if (k.provider.empty() || !EqualsIgnoreCase(k.provider, provider)) continue;
    if (instance_type.substr(0, k.instance_prefix.size()) != k.instance_prefix) continue;
    if (best == nullptr || k.instance_prefix.size() > best->instance_prefix.size()) best = &k;
  }
  return best;
}

Result<SpotBand> FindSpotBand(const std::vector<SpotBand>& bands, std::string_view name) {
  return FindByName(bands, name, &SpotBand::band, "spot interruption band");
}

double MttiSecondsFromMonthlyPct(double pct_per_month) {
  constexpr double kMonthSeconds = 730.0 * 3600.0;  // AWS pricing: 730 hours per month
  return kMonthSeconds / -std::log1p(-pct_per_month / 100.0);
}

}  // namespace fulcrum::spot
