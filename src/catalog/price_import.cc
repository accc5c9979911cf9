#include "catalog/price_import.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <optional>

#include <nlohmann/json.hpp>

#include "core/input_error.h"
#include "core/parse.h"

namespace fulcrum::catalog {
namespace {

using nlohmann::json;

// 1-based line of the first "<key>" (a JSON key or string value) in `text`; nullopt if absent.
std::optional<int> LineOf(std::string_view text, std::string_view key) {
  std::string needle(1, '"');
  needle.append(key.data(), key.size());
  needle.push_back('"');
  const size_t at = text.find(needle);
  if (at == std::string_view::npos) return std::nullopt;
  return 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<long>(at), '\n'));
}

Status FileError(const std::string& file, std::optional<int> line, const std::string& field,
                 const std::string& expected, const std::string& found,
                 FoundIs found_is = FoundIs::kDescription, std::vector<std::string> nearest = {}) {
  return InputError({file, line, field, expected, found, std::move(nearest)}, found_is);
}

Result<json> ParseResponse(std::string_view text, const std::string& file) {
  try {
    return json::parse(text);
  } catch (const json::parse_error& e) {
    const size_t byte = std::min<size_t>(e.byte > 0 ? e.byte - 1 : 0, text.size());
    const int line = 1 + static_cast<int>(std::count(text.begin(),
                                                     text.begin() + static_cast<long>(byte), '\n'));
    return FileError(file, line, "", "the JSON of a price response saved from the provider's API",
                     "text that is not JSON");
  }
}

// What a response of another shape is, for the message ("found a Tencent Cloud response ...").
std::string ShapeOf(const json& doc) {
  if (!doc.is_object()) return std::string("a JSON ") + doc.type_name();
  if (doc.contains("Response"))
    return "a Tencent Cloud API response (Response.Price); import it with --format tencent";
  if (doc.contains("PriceInfo") || doc.contains("SpotPrices"))
    return "an Alibaba Cloud response (PriceInfo / SpotPrices); import it with --format alibaba";
  std::vector<std::string> keys;
  for (const auto& [key, value] : doc.items()) keys.push_back(key);
  return "an object with the keys " + JoinNames(keys);
}

Status WrongShape(const json& doc, std::string_view text, const std::string& file,
                  const std::string& expected) {
  std::optional<int> line = 1;
  if (doc.is_object() && !doc.empty()) line = LineOf(text, doc.begin().key()).value_or(1);
  return FileError(file, line, "", expected, ShapeOf(doc));
}

// obj[key] as a price (a number >= 0); errors name `path` and the key's line.
Result<double> PriceAt(const json& obj, const char* key, const std::string& path,
                       std::string_view text, const std::string& file) {
  auto it = obj.find(key);
  if (it == obj.end()) return FileError(file, std::nullopt, path, "a price (a number)", "none");
  if (!it->is_number() || it->get<double>() < 0 || !std::isfinite(it->get<double>())) {
    return FileError(file, LineOf(text, key), path, "a price (a number >= 0)",
                     it->dump(-1, ' ', false, json::error_handler_t::replace), FoundIs::kText);
  }
  return it->get<double>();
}

// obj[key] as an object; errors name `path`.
Result<const json*> ObjectAt(const json& obj, const char* key, const std::string& path,
                             std::string_view text, const std::string& file) {
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_object()) {
    return FileError(file, LineOf(text, key), path, "an object",
                     it == obj.end() ? "none" : std::string("a JSON ") + it->type_name());
  }
  return &*it;
}

std::string Text(const json& obj, const char* key) {
  auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : "";
}

// The catalog offer of options.provider whose instance type the response prices.
Result<const Offer*> CatalogInstance(const Catalog& catalog, const ImportOptions& options) {
  if (Trim(options.instance_type).empty()) {
    return FileError("", std::nullopt, "--instance-type",
                     "the catalog instance type the saved response prices (the response does not "
                     "name it)",
                     "none");
  }
  if (Trim(options.region).empty()) {
    return FileError("", std::nullopt, "--region",
                     "the region the price was asked for (the response does not name it)", "none");
  }
  std::vector<std::string> names;
  for (const Offer& offer : catalog.offers()) {
    if (!EqualsIgnoreCase(offer.provider, options.provider)) continue;
    if (EqualsIgnoreCase(offer.instance_type, Trim(options.instance_type))) return &offer;
    if (std::find(names.begin(), names.end(), offer.instance_type) == names.end())
      names.push_back(offer.instance_type);
  }
  return FileError("", std::nullopt, "--instance-type",
                   "an instance type of " + options.provider +
                       " in the catalog (fulcrum offers --provider " + options.provider + ")",
                   options.instance_type, FoundIs::kText,
                   NearestNames(Trim(options.instance_type), names));
}

// The offer of `base` in options.region, priced by the response (prices set by SetPrices).
Offer PricedOffer(const Offer& base, const ImportOptions& options, const std::string& file,
                  const std::string& api, const std::string& note) {
  Offer offer = base;
  offer.region = std::string(Trim(options.region));
  offer.source = options.source.empty() ? options.provider + " " + api + " response " +
                                              std::filesystem::path(file).filename().string() +
                                              " saved by the user, imported " + options.date
                                        : options.source;
  offer.note = note;
  offer.caveat.clear();
  offer.origin.clear();
  offer.line = 0;
  return offer;
}

std::string Rate(double value) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", value);
  return buf;
}

// Sets the billed and USD prices of `offer` from prices in `currency`: --usd-per-cny converts a
// CNY price (and writes USD), else the currency must be one of currency.csv.
Status SetPrices(Offer& offer, const std::string& currency, std::optional<double> on_demand,
                 std::optional<double> spot, const Catalog& catalog, const ImportOptions& options,
                 const std::string& file, std::optional<int> currency_line) {
  double usd_per_unit = 0;
  std::string billed = currency;
  if (options.usd_per_cny) {
    if (currency != "CNY") {
      return FileError(file, currency_line, "Currency",
                       "a price billed in CNY (--usd-per-cny converts CNY)", currency,
                       FoundIs::kText);
    }
    usd_per_unit = *options.usd_per_cny;
    offer.note +=
        "; billed in CNY, converted at " + Rate(usd_per_unit) + " USD per CNY (--usd-per-cny)";
    billed = "USD";
  } else {
    std::vector<std::string> codes;
    for (const CurrencyRate& rate : catalog.currencies()) {
      codes.push_back(rate.currency);
      if (rate.currency == currency) usd_per_unit = rate.usd_per_unit;
    }
    if (usd_per_unit <= 0) {
      return FileError(file, currency_line, "Currency",
                       "a currency of currency.csv (" + JoinNames(codes) + ")", currency,
                       FoundIs::kText, NearestNames(currency, codes));
    }
  }
  auto scale = [](std::optional<double> v, double k) -> std::optional<double> {
    if (!v) return std::nullopt;
    return *v * k;
  };
  const double billed_scale = options.usd_per_cny ? usd_per_unit : 1.0;
  offer.currency = billed;
  offer.on_demand_billed_per_hour = scale(on_demand, billed_scale);
  offer.spot_billed_per_hour = scale(spot, billed_scale);
  offer.on_demand_usd_per_hour = scale(on_demand, usd_per_unit);
  offer.spot_usd_per_hour = scale(spot, usd_per_unit);
  return Status::Ok();
}

// DescribePrice quotes whatever PriceUnit the request asked for (Hour, Week, Month, Year) and the
// response does not repeat it; a subscription quote shows itself by its discount rules (the
// documented sample: "Receive a 15% discount on a 1-year subscription", AlibabaCloudDocs/ecs
// intl.en-US/API Reference/Pricing/DescribePrice.md). Read as per hour it would be a year's price.
Status RefuseSubscriptionQuote(const json& info, std::string_view text, const std::string& file) {
  const auto rules = info.find("Rules");
  if (rules == info.end() || !rules->is_object() || !rules->contains("Rule") ||
      !(*rules)["Rule"].is_array()) {
    return Status::Ok();
  }
  for (const json& rule : (*rules)["Rule"]) {
    if (!rule.is_object()) continue;
    const std::string description = Text(rule, "Description");
    const std::string lower = ToLower(description + " " + Text(rule, "RuleId"));
    for (const char* word : {"subscription", "year", "month", "week"}) {
      if (lower.find(word) == std::string::npos) continue;
      return FileError(file, LineOf(text, "Rules"), "PriceInfo.Rules",
                       "an hourly pay-as-you-go quote (DescribePrice with PriceUnit=Hour)",
                       "a subscription rule \"" + description + "\"");
    }
  }
  return Status::Ok();
}

Result<ImportResult> AlibabaDescribePrice(const json& doc, std::string_view text,
                                          const std::string& file, const Offer& base,
                                          const Catalog& catalog, const ImportOptions& options) {
  FULCRUM_ASSIGN_OR_RETURN(const json* info, ObjectAt(doc, "PriceInfo", "PriceInfo", text, file));
  FULCRUM_ASSIGN_OR_RETURN(const json* price,
                           ObjectAt(*info, "Price", "PriceInfo.Price", text, file));
  FULCRUM_ASSIGN_OR_RETURN(double trade,
                           PriceAt(*price, "TradePrice", "PriceInfo.Price.TradePrice", text, file));
  FULCRUM_RETURN_IF_ERROR(RefuseSubscriptionQuote(*info, text, file));
  std::string currency = Text(*price, "Currency");
  if (currency.empty()) {
    return FileError(file, LineOf(text, "Price"), "PriceInfo.Price.Currency", "a currency code",
                     "none");
  }
  Offer offer = PricedOffer(base, options, file, "DescribePrice",
                            "DescribePrice TradePrice per instance-hour (PriceUnit=Hour, the API "
                            "default; the response does not state the unit)");
  FULCRUM_RETURN_IF_ERROR(SetPrices(offer, currency, trade, std::nullopt, catalog, options, file,
                                    LineOf(text, "Currency")));
  ImportResult result;
  result.rows_read = 1;
  result.offers.push_back(std::move(offer));
  return result;
}

// One DescribeSpotPriceHistory entry, checked against the instance type and region asked for.
struct SpotEntry {
  std::string timestamp;
  double spot = 0, origin = 0;
};

Result<SpotEntry> ReadSpotEntry(const json& entry, std::string_view text, const std::string& file,
                                const Offer& base, const ImportOptions& options) {
  const std::string path = "SpotPrices.SpotPriceType";
  if (!entry.is_object()) {
    return FileError(file, LineOf(text, "SpotPriceType"), path, "a list of price objects",
                     std::string("a JSON ") + entry.type_name() + " in the list");
  }
  const std::string type = Text(entry, "InstanceType");
  if (!type.empty() && !EqualsIgnoreCase(type, base.instance_type)) {
    return FileError(file, LineOf(text, type), path + ".InstanceType",
                     "the prices of --instance-type " + base.instance_type, type, FoundIs::kText);
  }
  const std::string zone = Text(entry, "ZoneId");
  const std::string region(Trim(options.region));
  if (!zone.empty() && zone.rfind(region, 0) != 0) {
    return FileError(file, LineOf(text, zone), path + ".ZoneId", "a zone of --region " + region,
                     zone, FoundIs::kText);
  }
  SpotEntry out;
  out.timestamp = Text(entry, "Timestamp");
  if (out.timestamp.size() < 10) {
    return FileError(file, LineOf(text, "Timestamp"), path + ".Timestamp",
                     "a time yyyy-MM-ddTHH:mm:ssZ", out.timestamp, FoundIs::kText);
  }
  FULCRUM_ASSIGN_OR_RETURN(out.spot, PriceAt(entry, "SpotPrice", path + ".SpotPrice", text, file));
  FULCRUM_ASSIGN_OR_RETURN(out.origin,
                           PriceAt(entry, "OriginPrice", path + ".OriginPrice", text, file));
  return out;
}

Result<ImportResult> AlibabaSpotHistory(const json& doc, std::string_view text,
                                        const std::string& file, const Offer& base,
                                        const Catalog& catalog, const ImportOptions& options) {
  FULCRUM_ASSIGN_OR_RETURN(const json* prices,
                           ObjectAt(doc, "SpotPrices", "SpotPrices", text, file));
  auto list = prices->find("SpotPriceType");
  if (list == prices->end() || !list->is_array() || list->empty()) {
    return FileError(file, LineOf(text, "SpotPrices"), "SpotPrices.SpotPriceType",
                     "a non-empty list of spot prices", "none");
  }
  std::optional<SpotEntry> best;  // lowest spot price at the latest timestamp
  for (const json& item : *list) {
    FULCRUM_ASSIGN_OR_RETURN(SpotEntry entry, ReadSpotEntry(item, text, file, base, options));
    if (!best || entry.timestamp > best->timestamp ||
        (entry.timestamp == best->timestamp && entry.spot < best->spot)) {
      best = entry;
    }
  }
  std::string currency = Text(doc, "Currency");
  if (currency.empty()) {
    return FileError(file, std::nullopt, "Currency", "the response's currency code", "none");
  }
  ImportOptions dated = options;
  dated.date = best->timestamp.substr(0, 10);
  Offer offer = PricedOffer(base, dated, file, "DescribeSpotPriceHistory",
                            "spot: lowest SpotPrice over the zones at " + best->timestamp +
                                "; on-demand: its OriginPrice (pay-as-you-go)");
  FULCRUM_RETURN_IF_ERROR(SetPrices(offer, currency, best->origin, best->spot, catalog, options,
                                    file, LineOf(text, "Currency")));
  ImportResult result;
  result.rows_read = static_cast<int>(list->size());
  result.offers.push_back(std::move(offer));
  return result;
}

}  // namespace

const std::vector<std::string>& ImportFormatNames() {
  static const std::vector<std::string> names = {"skypilot", "alibaba", "tencent"};
  return names;
}

Result<ImportFormat> ParseImportFormat(std::string_view text) {
  const std::string key = ToLower(Trim(text));
  if (key == "skypilot") return ImportFormat::kSkypilot;
  if (key == "alibaba") return ImportFormat::kAlibaba;
  if (key == "tencent") return ImportFormat::kTencent;
  return FileError("", std::nullopt, "--format", JoinNames(ImportFormatNames()), std::string(text),
                   FoundIs::kText, NearestNames(key, ImportFormatNames()));
}

Result<ImportResult> ImportAlibabaPriceResponse(std::string_view text, const std::string& file_name,
                                                const Catalog& catalog,
                                                const ImportOptions& options) {
  ImportOptions o = options;
  if (o.provider.empty()) o.provider = "alibaba";
  FULCRUM_ASSIGN_OR_RETURN(const Offer* base, CatalogInstance(catalog, o));
  FULCRUM_ASSIGN_OR_RETURN(json doc, ParseResponse(text, file_name));
  if (doc.is_object() && doc.contains("PriceInfo"))
    return AlibabaDescribePrice(doc, text, file_name, *base, catalog, o);
  if (doc.is_object() && doc.contains("SpotPrices"))
    return AlibabaSpotHistory(doc, text, file_name, *base, catalog, o);
  return WrongShape(doc, text, file_name,
                    "an Alibaba Cloud DescribePrice (PriceInfo.Price) or DescribeSpotPriceHistory "
                    "(SpotPrices.SpotPriceType) response");
}

Result<ImportResult> ImportTencentPriceResponse(std::string_view text, const std::string& file_name,
                                                const Catalog& catalog,
                                                const ImportOptions& options) {
  ImportOptions o = options;
  if (o.provider.empty()) o.provider = "tencent";
  FULCRUM_ASSIGN_OR_RETURN(const Offer* base, CatalogInstance(catalog, o));
  FULCRUM_ASSIGN_OR_RETURN(json doc, ParseResponse(text, file_name));
  const std::string expected =
      "a Tencent Cloud InquiryPriceRunInstances response (Response.Price.InstancePrice)";
  if (!doc.is_object() || !doc.contains("Response"))
    return WrongShape(doc, text, file_name, expected);
  FULCRUM_ASSIGN_OR_RETURN(const json* response,
                           ObjectAt(doc, "Response", "Response", text, file_name));
  if (auto error = response->find("Error"); error != response->end() && error->is_object()) {
    return FileError(file_name, LineOf(text, "Error"), "Response.Error", "a price",
                     "the API error " + Text(*error, "Code") + ": " + Text(*error, "Message"));
  }
  FULCRUM_ASSIGN_OR_RETURN(const json* price,
                           ObjectAt(*response, "Price", "Response.Price", text, file_name));
  FULCRUM_ASSIGN_OR_RETURN(
      const json* instance,
      ObjectAt(*price, "InstancePrice", "Response.Price.InstancePrice", text, file_name));
  const std::string unit = Text(*instance, "ChargeUnit");
  if (unit != "HOUR") {
    return FileError(file_name, LineOf(text, unit.empty() ? "InstancePrice" : "ChargeUnit"),
                     "Response.Price.InstancePrice.ChargeUnit",
                     "\"HOUR\" (an inquiry with InstanceChargeType POSTPAID_BY_HOUR)",
                     unit.empty() ? std::string("none: a prepaid total (DiscountPrice)")
                                  : std::string("ChargeUnit ") + unit);
  }
  FULCRUM_ASSIGN_OR_RETURN(
      double hourly, PriceAt(*instance, "UnitPriceDiscount",
                             "Response.Price.InstancePrice.UnitPriceDiscount", text, file_name));
  std::string currency = o.currency.empty() ? "CNY" : std::string(Trim(o.currency));
  for (char& c : currency) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  Offer offer = PricedOffer(
      *base, o, file_name, "InquiryPriceRunInstances",
      "UnitPriceDiscount per instance-hour (ChargeUnit HOUR); the response names no currency: " +
          currency +
          (o.currency.empty() ? " assumed (give --currency otherwise)" : " (--currency)"));
  FULCRUM_RETURN_IF_ERROR(
      SetPrices(offer, currency, hourly, std::nullopt, catalog, o, file_name, std::nullopt));
  ImportResult result;
  result.rows_read = 1;
  result.offers.push_back(std::move(offer));
  return result;
}

Result<ImportResult> ImportPriceList(ImportFormat format, std::string_view text,
                                     const std::string& file_name, const Catalog& catalog,
                                     const ImportOptions& options) {
  switch (format) {
    case ImportFormat::kSkypilot:
      return ImportSkyPilotCsv(text, file_name, catalog, options);
    case ImportFormat::kAlibaba:
      return ImportAlibabaPriceResponse(text, file_name, catalog, options);
    case ImportFormat::kTencent:
      return ImportTencentPriceResponse(text, file_name, catalog, options);
  }
  return Status::InvalidInput("--format: unknown format");
}

}  // namespace fulcrum::catalog
