// The spot module's sourced catalog tables: catalog/storage.csv (checkpoint write bandwidth per
// storage kind, and per provider or instance where a source says what the instance writes to) and
// catalog/spot_bands.csv (AWS Spot Advisor interruption-frequency bands and the default band used
// when an offer has none). Both load through core/row_reader (the one table loader): header and
// every cell checked, errors "file:line: field: expected ..., found
// ...". Returned values are plain data.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace fulcrum::spot {

struct StorageKind {
  std::string kind;  // "ebs-gp3"
  double write_bytes_per_second = 0;
  bool is_default = false;
  // Where the kind is what an instance writes its checkpoints to: the provider (empty = a kind
  // any job may name, not tied to a provider) and the instance types it covers, by prefix
  // (empty = every instance of the provider).
  std::string provider;
  std::string instance_prefix;
  std::string source;
};

struct SpotBand {
  std::string band;   // "over-20"
  std::string label;  // ">20%"
  double min_pct_per_month = 0, max_pct_per_month = 0;
  double assumed_pct_per_month = 0;  // the figure the simulator uses for the band
  bool is_default = false;
  std::string source;
};

// Per-provider storage and egress list prices (catalog/storage_prices.csv); nullopt = not
// sourced. USD per GB-month (disk: persistent block disk; checkpoint: object/network storage)
// and USD per GB leaving the region.
struct StoragePrice {
  std::string provider;
  std::optional<double> disk_usd_per_gb_month;
  std::optional<double> checkpoint_usd_per_gb_month;
  std::optional<double> egress_usd_per_gb;
  std::string source;
};

Result<std::vector<StorageKind>> LoadStorageKinds(const std::string& catalog_dir);
Result<std::vector<StoragePrice>> LoadStoragePrices(const std::string& catalog_dir);
Result<std::vector<SpotBand>> LoadSpotBands(const std::string& catalog_dir);

// By name, case-insensitive; "" = the row marked default. NotFound lists the known names.
Result<StorageKind> FindStorageKind(const std::vector<StorageKind>& kinds, std::string_view name);
// The kind an instance of `provider` named `instance_type` writes its checkpoints to: the row of
// that provider (case-insensitive) whose instance_prefix is the longest prefix of instance_type;
// nullptr when no row covers it (callers then use the default kind).
const StorageKind* StorageKindForInstance(const std::vector<StorageKind>& kinds,
                                          std::string_view provider,
                                          std::string_view instance_type);
Result<SpotBand> FindSpotBand(const std::vector<SpotBand>& bands, std::string_view name);

// Mean time to interruption for a monthly interruption frequency p (percent), reading the band
// as the chance that an instance kept for a month is interrupted, with exponential
// interruptions: MTTI = month / -ln(1 - p/100). Month = 730 h (the hours per month that AWS
// pricing uses). p must be in (0, 100).
double MttiSecondsFromMonthlyPct(double pct_per_month);

}  // namespace fulcrum::spot
