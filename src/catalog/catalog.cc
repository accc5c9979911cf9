#include "catalog/catalog.h"

#include <algorithm>
#include <filesystem>
#include <map>

#include "core/input_error.h"
#include "core/parse.h"
#include "core/paths.h"
#include "core/row_reader.h"
#include "core/text_file.h"

namespace fulcrum::catalog {

// Fills a Catalog's private members; only this file constructs catalogs from files.
class CatalogBuilder {
 public:
  static Result<Catalog> Build(const CatalogFiles& files);

 private:
  static Status ParseGpus(const CatalogFile& file, Catalog& catalog);
  static Status ParseProviders(const CatalogFile& file, Catalog& catalog);
  static Status ParseCurrencies(const CatalogFile& file, Catalog& catalog);
  static Result<std::vector<Offer>> ParseOffers(const CatalogFile& file, const Catalog& catalog,
                                                bool user_file);
  static Result<Offer> ParseOffer(const RowReader& row, const Catalog& catalog, bool user_file);
};

namespace {

const TableSchema kGpuSchema = {
    {"name", "vendor", "architecture", "aliases", "memory_gib", "memory_bandwidth_gbps",
     "fp32_tflops", "tf32_tflops", "bf16_tflops", "fp16_tflops", "fp8_tflops", "nvlink_gbps",
     "pcie_gen", "tdp_watts", "source"},
    {"note", "family", "caveat", "int8_tops", "fp4_tflops", "tensor_rate_source"}};

const TableSchema kProviderSchema = {{"provider", "source"},
                                     {"display_name",
                                      "billing_granularity_seconds",
                                      "minimum_billed_seconds",
                                      "spot_notice_seconds",
                                      "spot_max_discount_pct",
                                      "reserved_1y_discount_pct",
                                      "reserved_3y_discount_pct",
                                      "stopped_instance_bills_disk",
                                      "sla_uptime_pct",
                                      "gpu_failure_rate_pct_per_year",
                                      "support_24x7",
                                      "support_response_minutes",
                                      "bare_metal",
                                      "support_notes",
                                      "note",
                                      "billing_source",
                                      "reserved_source",
                                      "sla_source",
                                      "support_source",
                                      "reserved_terms",
                                      "caveat"}};

const TableSchema kCurrencySchema = {{"currency", "usd_per_unit", "source"}, {"date", "note"}};

const TableSchema kOfferSchema = {
    {"provider", "instance_type", "region", "gpu", "gpu_count", "on_demand_per_hour", "source"},
    {"vcpus", "memory_gib", "currency", "spot_per_hour", "interconnect", "network_gbps", "note",
     "caveat", "use", "use_source"}};

// Limits of plausibility for catalog values (not outside facts: they only catch typos).
constexpr double kMaxUsdPerHour = 100000;
constexpr int kMaxGpusPerInstance = 1024;
constexpr double kMaxSeconds = 31 * 86400.0;

// Case-insensitive, with ' ' and '_' read as '-': "h100 sxm" matches "H100-SXM".
std::string NameKey(std::string_view name) {
  std::string key = ToLower(Trim(name));
  for (char& c : key) {
    if (c == ' ' || c == '_') c = '-';
  }
  return key;
}

// A `caveat` cell: "" or "<kind>: <what>" with kind in lower-case letters and '-', so that
// programs can dispatch on the kind.
Result<std::string> Caveat(const RowReader& row) {
  std::string text = row.Text("caveat");
  if (text.empty()) return text;
  size_t colon = text.find(": ");
  bool kind_ok = colon != std::string::npos && colon > 0 && colon + 2 < text.size() &&
                 std::all_of(text.begin(), text.begin() + static_cast<long>(colon),
                             [](char c) { return (c >= 'a' && c <= 'z') || c == '-'; });
  if (!kind_ok)
    return row.Error("caveat", "empty or \"<kind>: <what>\" (kind such as spec-conflict)");
  return text;
}

Result<std::optional<double>> Tflops(const RowReader& row, const std::string& column) {
  return row.OptionalNumber(column, 0.001, 1e6);
}

Result<Gpu> ParseGpu(const RowReader& row) {
  Gpu gpu;
  FULCRUM_ASSIGN_OR_RETURN(gpu.name, row.RequiredText("name"));
  FULCRUM_ASSIGN_OR_RETURN(gpu.vendor, row.RequiredText("vendor"));
  gpu.architecture = row.Text("architecture");
  for (const auto& alias : Split(row.Text("aliases"), ';')) {
    if (!Trim(alias).empty()) gpu.aliases.emplace_back(Trim(alias));
  }
  FULCRUM_ASSIGN_OR_RETURN(gpu.memory_gib, row.Number("memory_gib", 0.001, 1e5));
  FULCRUM_ASSIGN_OR_RETURN(gpu.memory_bandwidth_gbps,
                           row.Number("memory_bandwidth_gbps", 0.001, 1e6));
  FULCRUM_ASSIGN_OR_RETURN(gpu.fp32_tflops, Tflops(row, "fp32_tflops"));
  FULCRUM_ASSIGN_OR_RETURN(gpu.tf32_tflops, Tflops(row, "tf32_tflops"));
  FULCRUM_ASSIGN_OR_RETURN(gpu.bf16_tflops, Tflops(row, "bf16_tflops"));
  FULCRUM_ASSIGN_OR_RETURN(gpu.fp16_tflops, Tflops(row, "fp16_tflops"));
  FULCRUM_ASSIGN_OR_RETURN(gpu.fp8_tflops, Tflops(row, "fp8_tflops"));
  FULCRUM_ASSIGN_OR_RETURN(gpu.int8_tops, Tflops(row, "int8_tops"));
  FULCRUM_ASSIGN_OR_RETURN(gpu.fp4_tflops, Tflops(row, "fp4_tflops"));
  gpu.tensor_rate_source = row.Text("tensor_rate_source");
  FULCRUM_ASSIGN_OR_RETURN(gpu.nvlink_gbps, row.OptionalNumber("nvlink_gbps", 0.001, 1e6));
  FULCRUM_ASSIGN_OR_RETURN(gpu.pcie_gen, row.OptionalInt("pcie_gen", 1, 9));
  FULCRUM_ASSIGN_OR_RETURN(gpu.tdp_watts, row.OptionalNumber("tdp_watts", 1, 1e5));
  FULCRUM_ASSIGN_OR_RETURN(gpu.source, row.RequiredText("source"));
  gpu.note = row.Text("note");
  gpu.family = row.Text("family");
  if (gpu.family.empty()) gpu.family = gpu.name;
  FULCRUM_ASSIGN_OR_RETURN(gpu.caveat, Caveat(row));
  return gpu;
}

Result<Provider> ParseProvider(const RowReader& row) {
  Provider p;
  FULCRUM_ASSIGN_OR_RETURN(p.name, row.RequiredText("provider"));
  p.display_name = row.Text("display_name");
  if (p.display_name.empty()) p.display_name = p.name;
  FULCRUM_ASSIGN_OR_RETURN(p.billing_granularity_seconds,
                           row.OptionalNumber("billing_granularity_seconds", 0, kMaxSeconds));
  FULCRUM_ASSIGN_OR_RETURN(p.minimum_billed_seconds,
                           row.OptionalNumber("minimum_billed_seconds", 0, kMaxSeconds));
  FULCRUM_ASSIGN_OR_RETURN(p.spot_notice_seconds,
                           row.OptionalNumber("spot_notice_seconds", 0, kMaxSeconds));
  FULCRUM_ASSIGN_OR_RETURN(p.spot_max_discount_pct,
                           row.OptionalNumber("spot_max_discount_pct", 0, 100));
  FULCRUM_ASSIGN_OR_RETURN(p.reserved_1y_discount_pct,
                           row.OptionalNumber("reserved_1y_discount_pct", 0, 100));
  FULCRUM_ASSIGN_OR_RETURN(p.reserved_3y_discount_pct,
                           row.OptionalNumber("reserved_3y_discount_pct", 0, 100));
  FULCRUM_ASSIGN_OR_RETURN(p.stopped_instance_bills_disk,
                           row.OptionalBool("stopped_instance_bills_disk"));
  FULCRUM_ASSIGN_OR_RETURN(p.sla_uptime_pct, row.OptionalNumber("sla_uptime_pct", 0, 100));
  FULCRUM_ASSIGN_OR_RETURN(p.gpu_failure_rate_pct_per_year,
                           row.OptionalNumber("gpu_failure_rate_pct_per_year", 0, 100));
  FULCRUM_ASSIGN_OR_RETURN(p.support_24x7, row.OptionalBool("support_24x7"));
  FULCRUM_ASSIGN_OR_RETURN(p.support_response_minutes,
                           row.OptionalNumber("support_response_minutes", 0, kMaxSeconds / 60));
  FULCRUM_ASSIGN_OR_RETURN(p.bare_metal, row.OptionalBool("bare_metal"));
  p.support_notes = row.Text("support_notes");
  FULCRUM_ASSIGN_OR_RETURN(p.source, row.RequiredText("source"));
  p.note = row.Text("note");
  p.billing_source = row.Text("billing_source");
  p.reserved_source = row.Text("reserved_source");
  p.sla_source = row.Text("sla_source");
  p.support_source = row.Text("support_source");
  p.reserved_terms = row.Text("reserved_terms");
  FULCRUM_ASSIGN_OR_RETURN(p.caveat, Caveat(row));
  return p;
}

Result<CurrencyRate> ParseCurrency(const RowReader& row) {
  CurrencyRate rate;
  rate.currency = row.Text("currency");
  bool code_ok =
      rate.currency.size() == 3 && std::all_of(rate.currency.begin(), rate.currency.end(),
                                               [](char c) { return c >= 'A' && c <= 'Z'; });
  if (!code_ok) return row.Error("currency", "a three-letter upper-case code such as EUR");
  FULCRUM_ASSIGN_OR_RETURN(rate.usd_per_unit, row.Number("usd_per_unit", 1e-9, 1e9));
  rate.date = row.Text("date");
  FULCRUM_ASSIGN_OR_RETURN(rate.source, row.RequiredText("source"));
  return rate;
}

std::string OfferKey(const Offer& offer) {
  return NameKey(offer.provider) + "\n" + offer.instance_type + "\n" + offer.region;
}

std::string OfferWhere(const Offer& offer) {
  return offer.origin + ":" + std::to_string(offer.line);
}

Status DuplicateOffer(const Offer& offer, const Offer& first) {
  return InputError({offer.origin,
                     offer.line,
                     "instance_type",
                     "a unique provider + instance_type + region",
                     "\"" + offer.instance_type + "\" in \"" + offer.region +
                         "\" again (first on " + OfferWhere(first) + ")",
                     {}},
                    FoundIs::kDescription);
}

Result<std::vector<CatalogFile>> ReadUserOffers(const std::string& dir) {
  namespace fs = std::filesystem;
  std::vector<CatalogFile> files;
  std::error_code ec;
  if (dir.empty() || !fs::is_directory(dir, ec)) return files;
  std::vector<std::string> paths;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.path().extension() == ".csv") paths.push_back(entry.path().string());
  }
  if (ec) return Status::IoError(dir + ": cannot list the directory: " + ec.message());
  std::sort(paths.begin(), paths.end());
  for (const auto& path : paths) {
    FULCRUM_ASSIGN_OR_RETURN(std::string text, ReadTextFile(path, "a catalog file"));
    files.push_back({path, std::move(text)});
  }
  return files;
}

}  // namespace

const char* InterconnectLabel(Interconnect interconnect) {
  return interconnect == Interconnect::kUnknown ? "unknown" : InterconnectName(interconnect);
}

const char* InterconnectName(Interconnect interconnect) {
  switch (interconnect) {
    case Interconnect::kNvlink:
      return "nvlink";
    case Interconnect::kPcie:
      return "pcie";
    case Interconnect::kUnknown:
      break;
  }
  return "";
}

std::string DefaultUserOffersDir() {
  if (const char* env = std::getenv("FULCRUM_OFFERS_DIR"); env && *env) return env;
  return UserConfigDir() + "/offers.d";
}

Status CatalogBuilder::ParseGpus(const CatalogFile& file, Catalog& catalog) {
  FULCRUM_ASSIGN_OR_RETURN(CsvTable table, ParseTable(file.text, file.name, kGpuSchema));
  std::map<std::string, std::string> seen;  // name key -> "file:line (name)"
  for (size_t i = 0; i < table.size(); ++i) {
    RowReader row = table.Row(i);
    FULCRUM_ASSIGN_OR_RETURN(Gpu gpu, ParseGpu(row));
    std::vector<std::pair<std::string, std::string>> names = {{"name", gpu.name}};
    for (const auto& alias : gpu.aliases) names.emplace_back("aliases", alias);
    for (const auto& [column, name] : names) {
      auto [it, inserted] = seen.emplace(NameKey(name), row.Where() + " (" + gpu.name + ")");
      if (!inserted && it->second != row.Where() + " (" + gpu.name + ")") {
        return InputError({file.name,
                           row.line(),
                           column,
                           "a GPU name or alias used once",
                           "\"" + name + "\" already used on " + it->second,
                           {}},
                          FoundIs::kDescription);
      }
    }
    catalog.gpus_.push_back(std::move(gpu));
  }
  // A family name of several variants cannot also be one GPU's name or alias.
  for (const Gpu& gpu : catalog.gpus_) {
    auto named = seen.find(NameKey(gpu.family));
    if (named == seen.end()) continue;
    for (const Gpu& other : catalog.gpus_) {
      if (&other != &gpu && NameKey(other.family) == NameKey(gpu.family)) {
        return Status::InvalidInput(file.name +
                                    ": family: expected a family name that no single "
                                    "GPU uses as name or alias, found \"" +
                                    gpu.family + "\" (variants " + gpu.name + ", " + other.name +
                                    ") also on " + named->second);
      }
    }
  }
  return Status::Ok();
}

Status CatalogBuilder::ParseProviders(const CatalogFile& file, Catalog& catalog) {
  FULCRUM_ASSIGN_OR_RETURN(CsvTable table, ParseTable(file.text, file.name, kProviderSchema));
  for (size_t i = 0; i < table.size(); ++i) {
    RowReader row = table.Row(i);
    FULCRUM_ASSIGN_OR_RETURN(Provider provider, ParseProvider(row));
    if (catalog.FindProvider(provider.name) != nullptr) {
      return row.Error("provider", "a provider listed once");
    }
    catalog.providers_.push_back(std::move(provider));
  }
  return Status::Ok();
}

Status CatalogBuilder::ParseCurrencies(const CatalogFile& file, Catalog& catalog) {
  if (file.name.empty()) {
    catalog.currencies_.push_back({"USD", 1.0, "", "identity (no currency.csv)"});
    return Status::Ok();
  }
  FULCRUM_ASSIGN_OR_RETURN(CsvTable table, ParseTable(file.text, file.name, kCurrencySchema));
  for (size_t i = 0; i < table.size(); ++i) {
    RowReader row = table.Row(i);
    FULCRUM_ASSIGN_OR_RETURN(CurrencyRate rate, ParseCurrency(row));
    for (const auto& other : catalog.currencies_) {
      if (other.currency == rate.currency) return row.Error("currency", "each currency once");
    }
    catalog.currencies_.push_back(std::move(rate));
  }
  return Status::Ok();
}

Result<Offer> CatalogBuilder::ParseOffer(const RowReader& row, const Catalog& catalog,
                                         bool user_file) {
  Offer offer;
  FULCRUM_ASSIGN_OR_RETURN(offer.provider, row.RequiredText("provider"));
  if (const Provider* provider = catalog.FindProvider(offer.provider)) {
    offer.provider = provider->name;
  } else if (!user_file) {
    std::vector<std::string> names;
    for (const auto& p : catalog.providers_) names.push_back(p.name);
    return row.Error("provider", "a provider of providers.csv (" + JoinNames(names) + ")",
                     NearestNames(offer.provider, names));
  }
  FULCRUM_ASSIGN_OR_RETURN(offer.instance_type, row.RequiredText("instance_type"));
  FULCRUM_ASSIGN_OR_RETURN(offer.region, row.RequiredText("region"));
  const Gpu* gpu = catalog.FindGpu(row.Text("gpu"));
  if (gpu == nullptr) {
    std::vector<std::string> variants;
    for (const Gpu* g : catalog.FindGpus(row.Text("gpu"))) variants.push_back(g->name);
    if (!variants.empty()) {
      return row.Error(
          "gpu", "one GPU model of gpus.csv, not a family (" + JoinNames(variants) + ")", variants);
    }
    std::vector<std::string> names;
    for (const auto& g : catalog.gpus_) {
      names.push_back(g.name);
      names.insert(names.end(), g.aliases.begin(), g.aliases.end());
    }
    return row.Error("gpu", "a GPU name or alias of gpus.csv",
                     NearestNames(row.Text("gpu"), names));
  }
  offer.gpu = gpu->name;
  FULCRUM_ASSIGN_OR_RETURN(offer.gpu_count, row.Int("gpu_count", 1, kMaxGpusPerInstance));
  FULCRUM_ASSIGN_OR_RETURN(offer.vcpus, row.OptionalInt("vcpus", 1, 1 << 20));
  FULCRUM_ASSIGN_OR_RETURN(offer.memory_gib, row.OptionalNumber("memory_gib", 0.001, 1e7));
  offer.currency = row.Text("currency");
  if (offer.currency.empty()) offer.currency = "USD";
  const CurrencyRate* rate = nullptr;
  std::vector<std::string> codes;
  for (const auto& r : catalog.currencies_) {
    codes.push_back(r.currency);
    if (r.currency == offer.currency) rate = &r;
  }
  if (rate == nullptr) {
    return row.Error("currency", "a currency of currency.csv (" + JoinNames(codes) + ")");
  }
  FULCRUM_ASSIGN_OR_RETURN(offer.on_demand_usd_per_hour,
                           row.OptionalNumber("on_demand_per_hour", 0, kMaxUsdPerHour));
  FULCRUM_ASSIGN_OR_RETURN(offer.spot_usd_per_hour,
                           row.OptionalNumber("spot_per_hour", 0, kMaxUsdPerHour));
  offer.on_demand_billed_per_hour = offer.on_demand_usd_per_hour;
  offer.spot_billed_per_hour = offer.spot_usd_per_hour;
  if (offer.on_demand_usd_per_hour) *offer.on_demand_usd_per_hour *= rate->usd_per_unit;
  if (offer.spot_usd_per_hour) *offer.spot_usd_per_hour *= rate->usd_per_unit;
  std::string interconnect = ToLower(row.Text("interconnect"));
  if (interconnect == "nvlink")
    offer.interconnect = Interconnect::kNvlink;
  else if (interconnect == "pcie")
    offer.interconnect = Interconnect::kPcie;
  else if (!interconnect.empty() && interconnect != "unknown")
    return row.Error("interconnect", "nvlink, pcie, unknown or empty");
  FULCRUM_ASSIGN_OR_RETURN(offer.network_gbps, row.OptionalNumber("network_gbps", 0.001, 1e6));
  FULCRUM_ASSIGN_OR_RETURN(offer.source, row.RequiredText("source"));
  offer.note = row.Text("note");
  FULCRUM_ASSIGN_OR_RETURN(offer.caveat, Caveat(row));
  const std::string use = ToLower(row.Text("use"));
  if (use == "serving") {
    offer.serving_only = true;
  } else if (!use.empty()) {
    return row.Error("use", "empty (any workload) or serving (documented for inference only)");
  }
  offer.use_source = row.Text("use_source");
  if (offer.serving_only && offer.use_source.empty()) {
    return row.Error("use_source", "the document that restricts the machine type to serving");
  }
  // Both prices empty = no citable price list: the row says so with a price-unknown caveat, so
  // that a price left out by mistake is still an error.
  if (!offer.on_demand_usd_per_hour && !offer.spot_usd_per_hour &&
      offer.caveat.rfind(kPriceUnknownCaveat, 0) != 0) {
    return row.Error("on_demand_per_hour",
                     "a price (or at least a spot_per_hour), or the caveat \"" +
                         std::string(kPriceUnknownCaveat) + " <why>\" when no list is citable");
  }
  return offer;
}

Result<std::vector<Offer>> CatalogBuilder::ParseOffers(const CatalogFile& file,
                                                       const Catalog& catalog, bool user_file) {
  FULCRUM_ASSIGN_OR_RETURN(CsvTable table, ParseTable(file.text, file.name, kOfferSchema));
  std::vector<Offer> offers;
  for (size_t i = 0; i < table.size(); ++i) {
    RowReader row = table.Row(i);
    FULCRUM_ASSIGN_OR_RETURN(Offer offer, ParseOffer(row, catalog, user_file));
    offer.origin = file.name;
    offer.line = row.line();
    offers.push_back(std::move(offer));
  }
  return offers;
}

Result<Catalog> CatalogBuilder::Build(const CatalogFiles& files) {
  Catalog catalog;
  FULCRUM_RETURN_IF_ERROR(ParseGpus(files.gpus, catalog));
  FULCRUM_RETURN_IF_ERROR(ParseProviders(files.providers, catalog));
  FULCRUM_RETURN_IF_ERROR(ParseCurrencies(files.currency, catalog));
  FULCRUM_ASSIGN_OR_RETURN(catalog.offers_, ParseOffers(files.offers, catalog, false));
  std::map<std::string, size_t> by_key;  // offer key -> index in offers_
  for (size_t i = 0; i < catalog.offers_.size(); ++i) {
    auto [it, inserted] = by_key.emplace(OfferKey(catalog.offers_[i]), i);
    if (!inserted) return DuplicateOffer(catalog.offers_[i], catalog.offers_[it->second]);
  }
  std::map<std::string, Offer> user_seen;  // key -> first user offer with it
  for (const CatalogFile& file : files.user_offers) {
    FULCRUM_ASSIGN_OR_RETURN(std::vector<Offer> user_offers, ParseOffers(file, catalog, true));
    for (Offer& offer : user_offers) {
      std::string key = OfferKey(offer);
      auto [seen, first_time] = user_seen.emplace(key, offer);
      if (!first_time) return DuplicateOffer(offer, seen->second);
      auto shipped = by_key.find(key);
      if (shipped != by_key.end()) {
        catalog.offers_[shipped->second] = std::move(offer);
      } else {
        by_key.emplace(key, catalog.offers_.size());
        catalog.offers_.push_back(std::move(offer));
      }
    }
  }
  return catalog;
}

Result<Catalog> Catalog::FromFiles(const CatalogFiles& files) {
  return CatalogBuilder::Build(files);
}

Result<Catalog> Catalog::Load(const std::string& dir, const LoadOptions& options) {
  CatalogFiles files;
  auto read = [&dir](const char* base, CatalogFile& file) -> Status {
    file.name = dir + "/" + base;
    FULCRUM_ASSIGN_OR_RETURN(file.text, ReadTextFile(file.name, "a catalog file"));
    return Status::Ok();
  };
  FULCRUM_RETURN_IF_ERROR(read("gpus.csv", files.gpus));
  FULCRUM_RETURN_IF_ERROR(read("offers.csv", files.offers));
  FULCRUM_RETURN_IF_ERROR(read("providers.csv", files.providers));
  std::error_code ec;
  if (std::filesystem::exists(dir + "/currency.csv", ec)) {
    FULCRUM_RETURN_IF_ERROR(read("currency.csv", files.currency));
  }
  if (options.include_user_offers) {
    std::string user_dir =
        options.user_offers_dir.empty() ? DefaultUserOffersDir() : options.user_offers_dir;
    FULCRUM_ASSIGN_OR_RETURN(files.user_offers, ReadUserOffers(user_dir));
  }
  return FromFiles(files);
}

const Gpu* Catalog::FindGpu(std::string_view name_or_alias) const {
  std::vector<const Gpu*> gpus = FindGpus(name_or_alias);
  return gpus.size() == 1 ? gpus.front() : nullptr;
}

std::vector<const Gpu*> Catalog::FindGpus(std::string_view name) const {
  std::string key = NameKey(name);
  if (key.empty()) return {};
  for (const Gpu& gpu : gpus_) {
    if (NameKey(gpu.name) == key) return {&gpu};
    for (const auto& alias : gpu.aliases) {
      if (NameKey(alias) == key) return {&gpu};
    }
  }
  std::vector<const Gpu*> family;
  for (const Gpu& gpu : gpus_) {
    if (NameKey(gpu.family) == key) family.push_back(&gpu);
  }
  return family;
}

Result<std::vector<const Gpu*>> Catalog::ResolveGpus(std::string_view name) const {
  std::vector<const Gpu*> gpus = FindGpus(name);
  if (!gpus.empty()) return gpus;
  std::vector<std::string> known;
  for (const Gpu& gpu : gpus_) {
    known.push_back(gpu.family);
    known.push_back(gpu.name);
    known.insert(known.end(), gpu.aliases.begin(), gpu.aliases.end());
  }
  std::vector<std::string> close = NearestNames(name, known);
  std::string hint = close.empty() ? "" : "; nearest: " + JoinNames(close);
  ErrorDetail detail;
  detail.field = "gpu";
  detail.expected = "a GPU name, alias or family of the catalog (see fulcrum gpus)";
  detail.found = std::string(name);
  detail.nearest = close;
  return Status::NotFound("gpu: expected " + detail.expected + ", found \"" + detail.found + "\"" +
                          hint)
      .WithDetail(detail);
}

Result<const Gpu*> Catalog::ResolveGpu(std::string_view name_or_alias) const {
  FULCRUM_ASSIGN_OR_RETURN(std::vector<const Gpu*> gpus, ResolveGpus(name_or_alias));
  if (gpus.size() == 1) return gpus.front();
  ErrorDetail detail;
  detail.field = "gpu";
  detail.expected = "one GPU model";
  detail.found = std::string(name_or_alias);
  for (const Gpu* gpu : gpus) detail.nearest.push_back(gpu->name);
  return Status::InvalidInput("gpu: expected one GPU model, found the family \"" + detail.found +
                              "\" of " + std::to_string(gpus.size()) +
                              " variants: " + JoinNames(detail.nearest) + "; name one of them")
      .WithDetail(detail);
}

const Provider* Catalog::FindProvider(std::string_view name) const {
  for (const Provider& provider : providers_) {
    if (EqualsIgnoreCase(provider.name, Trim(name)) ||
        EqualsIgnoreCase(provider.display_name, Trim(name))) {
      return &provider;
    }
  }
  return nullptr;
}

}  // namespace fulcrum::catalog
