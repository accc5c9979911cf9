#include "spot/spot_catalog.h"

#include <cmath>
#include <fstream>
#include <functional>

#include "core/parse.h"

namespace fulcrum::spot {

namespace {

// Splits one CSV record (RFC 4180 quoting, no embedded newlines). False on an unclosed quote.
bool SplitCsvLine(std::string_view line, std::vector<std::string>& cells) {
  cells.clear();
  std::string cell;
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        cell += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        cell += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      cells.push_back(std::move(cell));
      cell.clear();
    } else if (c != '\r') {
      cell += c;
    }
  }
  cells.push_back(std::move(cell));
  return !quoted;
}

using RowFn =
    std::function<Status(const std::vector<std::string>& cells, const std::string& where)>;

Status ReadCsv(const std::string& path, const std::string& expected_header, const RowFn& row) {
  std::ifstream in(path);
  if (!in) return Status::NotFound(path + ": cannot open (is the catalog directory right?)");
  std::string line;
  std::vector<std::string> cells;
  if (!std::getline(in, line) || Trim(line) != expected_header) {
    return Status::InvalidInput(path + ":1: header: expected '" + expected_header + "', found '" +
                                std::string(Trim(line)) + "'");
  }
  const size_t columns = Split(expected_header, ',').size();
  for (int number = 2; std::getline(in, line); ++number) {
    if (Trim(line).empty()) continue;
    const std::string where = path + ":" + std::to_string(number);
    if (!SplitCsvLine(line, cells)) return Status::InvalidInput(where + ": unclosed quote");
    if (cells.size() != columns) {
      return Status::InvalidInput(where + ": expected " + std::to_string(columns) +
                                  " fields, found " + std::to_string(cells.size()));
    }
    FULCRUM_RETURN_IF_ERROR(row(cells, where));
  }
  return Status::Ok();
}

Result<double> Number(const std::string& cell, const std::string& where, const char* field) {
  auto value = ParseDouble(Trim(cell));
  if (!value.ok() || *value < 0) {
    return Status::InvalidInput(where + ": " + field + ": expected a number >= 0, found '" + cell +
                                "'");
  }
  return *value;
}

Result<bool> YesNo(const std::string& cell, const std::string& where) {
  if (cell == "yes") return true;
  if (cell == "no") return false;
  return Status::InvalidInput(where + ": default: expected yes or no, found '" + cell + "'");
}

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
  std::vector<StorageKind> kinds;
  Status status =
      ReadCsv(catalog_dir + "/storage.csv", "kind,write_bytes_per_second,default,source,note",
              [&](const std::vector<std::string>& c, const std::string& where) -> Status {
                StorageKind kind;
                kind.kind = c[0];
                FULCRUM_ASSIGN_OR_RETURN(kind.write_bytes_per_second,
                                         Number(c[1], where, "write_bytes_per_second"));
                if (kind.write_bytes_per_second <= 0) {
                  return Status::InvalidInput(
                      where + ": write_bytes_per_second: expected > 0, found " + c[1]);
                }
                FULCRUM_ASSIGN_OR_RETURN(kind.is_default, YesNo(c[2], where));
                kind.source = c[3];
                kinds.push_back(std::move(kind));
                return Status::Ok();
              });
  if (!status.ok()) return status;
  return kinds;
}

Result<std::vector<StoragePrice>> LoadStoragePrices(const std::string& catalog_dir) {
  std::vector<StoragePrice> prices;
  auto optional_number = [](const std::string& cell, const std::string& where,
                            const char* field) -> Result<std::optional<double>> {
    if (Trim(cell).empty()) return std::optional<double>();
    FULCRUM_ASSIGN_OR_RETURN(double v, Number(cell, where, field));
    return std::optional<double>(v);
  };
  Status status = ReadCsv(
      catalog_dir + "/storage_prices.csv",
      "provider,disk_usd_per_gb_month,checkpoint_usd_per_gb_month,egress_usd_per_gb,source,note",
      [&](const std::vector<std::string>& c, const std::string& where) -> Status {
        StoragePrice price;
        price.provider = c[0];
        FULCRUM_ASSIGN_OR_RETURN(price.disk_usd_per_gb_month,
                                 optional_number(c[1], where, "disk_usd_per_gb_month"));
        FULCRUM_ASSIGN_OR_RETURN(price.checkpoint_usd_per_gb_month,
                                 optional_number(c[2], where, "checkpoint_usd_per_gb_month"));
        FULCRUM_ASSIGN_OR_RETURN(price.egress_usd_per_gb,
                                 optional_number(c[3], where, "egress_usd_per_gb"));
        price.source = c[4];
        prices.push_back(std::move(price));
        return Status::Ok();
      });
  if (!status.ok()) return status;
  return prices;
}

Result<std::vector<SpotBand>> LoadSpotBands(const std::string& catalog_dir) {
  std::vector<SpotBand> bands;
  Status status = ReadCsv(
      catalog_dir + "/spot_bands.csv",
      "band,label,min_pct_per_month,max_pct_per_month,assumed_pct_per_month,default,source,note",
      [&](const std::vector<std::string>& c, const std::string& where) -> Status {
        SpotBand band;
        band.band = c[0];
        band.label = c[1];
        FULCRUM_ASSIGN_OR_RETURN(band.min_pct_per_month, Number(c[2], where, "min_pct_per_month"));
        FULCRUM_ASSIGN_OR_RETURN(band.max_pct_per_month, Number(c[3], where, "max_pct_per_month"));
        FULCRUM_ASSIGN_OR_RETURN(band.assumed_pct_per_month,
                                 Number(c[4], where, "assumed_pct_per_month"));
        if (band.assumed_pct_per_month <= 0 || band.assumed_pct_per_month >= 100) {
          return Status::InvalidInput(where +
                                      ": assumed_pct_per_month: expected > 0 and < 100, "
                                      "found " +
                                      c[4]);
        }
        FULCRUM_ASSIGN_OR_RETURN(band.is_default, YesNo(c[5], where));
        band.source = c[6];
        bands.push_back(std::move(band));
        return Status::Ok();
      });
  if (!status.ok()) return status;
  return bands;
}

Result<StorageKind> FindStorageKind(const std::vector<StorageKind>& kinds, std::string_view name) {
  return FindByName(kinds, name, &StorageKind::kind, "storage kind");
}

Result<SpotBand> FindSpotBand(const std::vector<SpotBand>& bands, std::string_view name) {
  return FindByName(bands, name, &SpotBand::band, "spot interruption band");
}

double MttiSecondsFromMonthlyPct(double pct_per_month) {
  constexpr double kMonthSeconds = 730.0 * 3600.0;  // AWS pricing: 730 hours per month
  return kMonthSeconds / -std::log1p(-pct_per_month / 100.0);
}

}  // namespace fulcrum::spot
