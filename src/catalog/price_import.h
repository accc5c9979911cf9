// The formats `fulcrum catalog import` reads, and one parser for each saved provider price
// response: the JSON a user saves from Alibaba Cloud's DescribePrice / DescribeSpotPriceHistory
// or Tencent Cloud's InquiryPriceRunInstances (their documented response shapes). Those responses
// do not say which instance type was priced (DescribeSpotPriceHistory names it per entry), so the
// caller names a catalog instance type of the provider and the region; the offer takes its GPUs,
// vCPUs and memory from that catalog row and its prices from the file, in the currency billed
// (converted by currency.csv, or by ImportOptions::usd_per_cny). Never a live lookup.
// Bad input is InvalidInput (exit 2) "file[:line]: field: expected ..., found ..." with the
// nearest names. Pure functions, thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "catalog/catalog.h"
#include "catalog/skypilot_import.h"
#include "core/status.h"

namespace fulcrum::catalog {

enum class ImportFormat { kSkypilot, kAlibaba, kTencent };

// "skypilot", "alibaba", "tencent".
const std::vector<std::string>& ImportFormatNames();
// Case-insensitive; InvalidInput naming --format and the nearest format otherwise.
Result<ImportFormat> ParseImportFormat(std::string_view text);

// Alibaba Cloud ECS (AlibabaCloudDocs/ecs@322eaab82e866a494eeaddb0de02bab1978692d1,
// intl.en-US/API Reference/Pricing/DescribePrice.md and
// intl.en-US/API Reference/Instances/DescribeSpotPriceHistory.md, "Sample success responses",
// JSON): DescribePrice {"PriceInfo": {"Price": {"Currency", "TradePrice", ...}}} gives the
// on-demand price (PriceUnit=Hour, the API's default; the response does not state the unit);
// DescribeSpotPriceHistory {"SpotPrices": {"SpotPriceType": [{"InstanceType", "ZoneId",
// "Timestamp", "SpotPrice", "OriginPrice"}]}, "Currency"} gives the spot price (lowest over the
// zones at the latest timestamp) and the pay-as-you-go OriginPrice, dated by that timestamp.
Result<ImportResult> ImportAlibabaPriceResponse(std::string_view text, const std::string& file_name,
                                                const Catalog& catalog,
                                                const ImportOptions& options);

// Tencent Cloud CVM (TencentCloud/tencentcloud-cli@30417c981050af064acece5acc9b8eb2abfdf727,
// tccli/examples/cvm/v20170312/InquiryPriceRunInstances.md, example 3, POSTPAID_BY_HOUR):
// {"Response": {"Price": {"InstancePrice": {"UnitPriceDiscount", "ChargeUnit": "HOUR", ...}}}}
// gives the on-demand price per hour. A prepaid inquiry (example 2: DiscountPrice, no
// ChargeUnit) is refused. The response names no currency: ImportOptions::currency, else CNY.
Result<ImportResult> ImportTencentPriceResponse(std::string_view text, const std::string& file_name,
                                                const Catalog& catalog,
                                                const ImportOptions& options);

// The parser of `format` (SkyPilot CSV or a saved price response).
Result<ImportResult> ImportPriceList(ImportFormat format, std::string_view text,
                                     const std::string& file_name, const Catalog& catalog,
                                     const ImportOptions& options);

}  // namespace fulcrum::catalog
