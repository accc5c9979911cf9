// The product catalog: GPU models, instance offers and provider terms, loaded from the sourced
// CSV files in a catalog directory (gpus.csv, offers.csv, providers.csv) plus the user's extra
// offers (~/.config/fulcrum/offers.d/*.csv or $FULCRUM_OFFERS_DIR). Every row is validated on
// load; a bad file is refused with "file:line: field: expected ..., found ...". A loaded Catalog
// is immutable and safe to share between threads. Units are in the field names; unknown values
// are std::nullopt, never 0.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace fulcrum::catalog {

struct Gpu {
  std::string name;                  // canonical, e.g. "H100-SXM5-80GB"
  std::string vendor;                // "NVIDIA", "AMD"
  std::string architecture;          // "Hopper"
  std::vector<std::string> aliases;  // also accepted, case-insensitively ("H100-SXM", "H100-80GB")
  // The product family ("A100", "H100"); a family name names every variant of it. Defaults to
  // `name` when the catalog gives none.
  std::string family;
  double memory_gib = 0;
  double memory_bandwidth_gbps = 0;  // GB/s
  // Dense peak TFLOP/s per precision; nullopt = the GPU has no such mode or it is not sourced.
  std::optional<double> fp32_tflops, tf32_tflops, bf16_tflops, fp16_tflops, fp8_tflops;
  // Serving precisions: dense INT8 tensor TOPS (W8A8) and dense FP4 tensor TFLOP/s; nullopt = no
  // such tensor mode or not sourced. tensor_rate_source names their datasheet.
  std::optional<double> int8_tops, fp4_tflops;
  std::string tensor_rate_source;
  std::optional<double> nvlink_gbps;  // GB/s per GPU (bidirectional total as in the sources)
  std::optional<int> pcie_gen;
  std::optional<double> tdp_watts;
  std::string source;
  std::string note;  // caveats from the sources (conflicts, assumptions)
  // Machine-readable warning on a figure of this row, "<kind>: <what>" (kind: spec-conflict,
  // spec-unverified, ...); "" = none. The planner warns `catalog-caveat` on rows using it.
  std::string caveat;
};

enum class Interconnect { kUnknown, kPcie, kNvlink };  // kNvlink covers NVLink/NVSwitch (SXM)

struct Offer {
  std::string provider;  // matches Provider::name
  std::string instance_type;
  std::string region;
  std::string gpu;  // canonical Gpu::name
  int gpu_count = 1;
  std::optional<int> vcpus;
  std::optional<double> memory_gib;
  // Converted to USD (see currency rates). Both nullopt = no citable price list: the offer is
  // listed (price unknown) but costed only once the user saves a price for it (offers.d).
  std::optional<double> on_demand_usd_per_hour;
  std::optional<double> spot_usd_per_hour;  // nullopt = spot not offered (or its price unknown)
  // The same prices in `currency`, as billed (before conversion).
  std::optional<double> on_demand_billed_per_hour, spot_billed_per_hour;
  Interconnect interconnect = Interconnect::kUnknown;
  std::optional<double> network_gbps;  // inter-node network, Gbit/s
  std::string source;
  std::string origin;            // file the row came from (shipped catalog or a user offers.d file)
  std::string currency = "USD";  // currency the prices were quoted in before conversion
  std::string note;
  // Machine-readable warning on a figure of this row, "<kind>: <what>" (kind: price-anomaly,
  // price-unverified, shape-assumed, ...); "" = none.
  std::string caveat;
  // The provider documents the machine type for serving (inference) only, not for training
  // (offers.csv `use: serving`, its document in `use_source`): `plan` leaves it out, `serve-plan`
  // may use it. false: any workload.
  bool serving_only = false;
  std::string use_source;
  int line = 0;  // line of the row in `origin`
};

// The caveat kind of an offer row whose price is not confirmed on the provider's own pages.
inline constexpr const char* kPriceUnverifiedCaveat = "price-unverified:";

// The caveat kind of an offer row without any price (no citable price list): "price-unknown: ...".
inline constexpr const char* kPriceUnknownCaveat = "price-unknown:";

// "nvlink", "pcie" or "" (unknown): the spelling used in offers.csv and in JSON.
const char* InterconnectName(Interconnect interconnect);
// "nvlink", "pcie" or "unknown": the spelling of tables and messages.
const char* InterconnectLabel(Interconnect interconnect);

struct Provider {
  std::string name;  // short id used in offers.csv and on the command line ("aws")
  std::optional<double> billing_granularity_seconds;
  std::optional<double> minimum_billed_seconds;
  std::optional<double> spot_notice_seconds;
  std::optional<double> spot_max_discount_pct;
  std::optional<double> reserved_1y_discount_pct;
  std::optional<double> reserved_3y_discount_pct;
  std::optional<bool> stopped_instance_bills_disk;
  std::optional<double> sla_uptime_pct;
  std::optional<double> gpu_failure_rate_pct_per_year;
  std::optional<bool> support_24x7;
  std::optional<double> support_response_minutes;
  std::optional<bool> bare_metal;
  std::string support_notes;
  std::string source;
  std::string note;
  std::string display_name;  // "AWS", "Verda (ex-DataCrunch)"
  // The public source of each group of terms ("" = `source` covers it or the term is unknown).
  std::string billing_source;   // billing_granularity_seconds, minimum_billed_seconds
  std::string reserved_source;  // reserved_*_discount_pct and reserved_terms
  std::string sla_source;       // sla_uptime_pct
  std::string support_source;   // support_24x7, support_response_minutes
  // Commitment terms the 1y/3y columns cannot hold ("3 or 6 month savings plan", "contract").
  std::string reserved_terms;
  std::string caveat;  // as Gpu::caveat, for the provider's terms
};

// A currency's rate to USD, from currency.csv (the one place rates are stated).
struct CurrencyRate {
  std::string currency;  // ISO 4217 code, e.g. "EUR"
  double usd_per_unit = 0;
  std::string date;
  std::string source;
};

// The text of each catalog file and the name it is reported under ("catalog/offers.csv").
struct CatalogFile {
  std::string name;
  std::string text;
};

// Everything Catalog::FromFiles parses. An empty `currency.name` means no currency.csv (USD only).
struct CatalogFiles {
  CatalogFile gpus, offers, providers, currency;
  std::vector<CatalogFile> user_offers;  // applied in order over `offers`
};

struct LoadOptions {
  bool include_user_offers = true;  // read offers.d (FULCRUM_OFFERS_DIR or the user config dir)
  // Directory of the user's *.csv offer files; "" = $FULCRUM_OFFERS_DIR, else
  // UserConfigDir()/offers.d. A missing directory is not an error.
  std::string user_offers_dir;
};

// The offers.d directory that LoadOptions{} would read.
std::string DefaultUserOffersDir();

class Catalog {
 public:
  // Loads dir/gpus.csv, dir/offers.csv, dir/providers.csv (and user offers per `options`).
  // Also dir/currency.csv when present. A user offer with the key (provider, instance_type,
  // region) of a shipped offer replaces it; a user offer may name a provider not in
  // providers.csv. Missing files: NotFound; bad content: InvalidInput naming file:line: field.
  static Result<Catalog> Load(const std::string& dir, const LoadOptions& options = {});
  // The same validation over texts already in memory (tests, fuzzing, import).
  static Result<Catalog> FromFiles(const CatalogFiles& files);

  const std::vector<Gpu>& gpus() const { return gpus_; }
  const std::vector<Offer>& offers() const { return offers_; }
  const std::vector<Provider>& providers() const { return providers_; }
  const std::vector<CurrencyRate>& currencies() const { return currencies_; }

  // By canonical name, alias or a family with one variant, case-insensitive; nullptr if none
  // or if the name is a family of several variants.
  const Gpu* FindGpu(std::string_view name_or_alias) const;
  // Every GPU a name means: the one named by canonical name or alias, else every variant of
  // the family named ("A100" = all A100s); empty if none.
  std::vector<const Gpu*> FindGpus(std::string_view name) const;
  // FindGpus, or NotFound naming the closest names (detail: field "gpu", nearest).
  Result<std::vector<const Gpu*>> ResolveGpus(std::string_view name) const;
  // Exactly one GPU: a family of several variants is InvalidInput listing them (the variants
  // are the detail's `nearest`); no match is NotFound with the closest names.
  Result<const Gpu*> ResolveGpu(std::string_view name_or_alias) const;
  const Provider* FindProvider(std::string_view name) const;

 private:
  std::vector<Gpu> gpus_;
  std::vector<Offer> offers_;
  std::vector<Provider> providers_;
  std::vector<CurrencyRate> currencies_;
  friend class CatalogBuilder;
};

}  // namespace fulcrum::catalog
