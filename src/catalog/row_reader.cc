#include "catalog/row_reader.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "core/parse.h"

namespace fulcrum::catalog {
namespace {

std::string JoinColumns(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& name : names) out += (out.empty() ? "" : ",") + name;
  return out;
}

// "0", "1.5", "1e6" without trailing zeros noise, for range messages.
std::string Bound(double value) {
  std::string text = std::to_string(value);
  while (text.find('.') != std::string::npos && (text.back() == '0' || text.back() == '.')) {
    bool dot = text.back() == '.';
    text.pop_back();
    if (dot) break;
  }
  return text;
}

std::string RangeText(const char* what, double min, double max) {
  return std::string(what) + " from " + Bound(min) + " to " + Bound(max);
}

}  // namespace

Result<ColumnIndex> CheckHeader(const CsvDocument& doc, const std::string& file,
                                const TableSchema& schema) {
  std::string expected = "columns " + JoinColumns(schema.required);
  if (doc.header_line == 0) {
    return Status::InvalidInput(file + ":1: header: expected " + expected +
                                ", found an empty file");
  }
  std::string where = file + ":" + std::to_string(doc.header_line) + ": header: ";
  ColumnIndex index;
  for (size_t i = 0; i < doc.header.size(); ++i) {
    std::string name(Trim(doc.header[i]));
    bool known =
        std::find(schema.required.begin(), schema.required.end(), name) != schema.required.end() ||
        std::find(schema.optional.begin(), schema.optional.end(), name) != schema.optional.end();
    if (!known) {
      std::string optional_text =
          schema.optional.empty() ? "" : " (optional: " + JoinColumns(schema.optional) + ")";
      return Status::InvalidInput(where + "expected " + expected + optional_text +
                                  ", found unknown column \"" + name + "\"");
    }
    if (!index.emplace(name, i).second) {
      return Status::InvalidInput(where + "expected each column once, found \"" + name +
                                  "\" twice");
    }
  }
  for (const auto& name : schema.required) {
    if (!index.count(name)) {
      return Status::InvalidInput(where + "expected " + expected + ", found no column \"" + name +
                                  "\"");
    }
  }
  return index;
}

std::string RowReader::Where() const { return file_ + ":" + std::to_string(record_.line); }

Status RowReader::Error(const std::string& column, const std::string& expected) const {
  return Status::InvalidInput(Where() + ": " + column + ": expected " + expected + ", found \"" +
                              Text(column) + "\"");
}

std::string RowReader::Text(const std::string& column) const {
  auto it = columns_.find(column);
  if (it == columns_.end() || it->second >= record_.fields.size()) return "";
  return std::string(Trim(record_.fields[it->second]));
}

Result<std::string> RowReader::RequiredText(const std::string& column) const {
  std::string text = Text(column);
  if (text.empty()) return Error(column, "a value");
  return text;
}

Result<std::optional<double>> RowReader::OptionalNumber(const std::string& column, double min,
                                                        double max) const {
  std::string text = Text(column);
  if (text.empty()) return std::optional<double>();
  Result<double> value = ParseDouble(text);
  if (!value.ok() || *value < min || *value > max) {
    return Error(column, RangeText("a number", min, max));
  }
  return std::optional<double>(*value);
}

Result<double> RowReader::Number(const std::string& column, double min, double max) const {
  FULCRUM_ASSIGN_OR_RETURN(std::optional<double> value, OptionalNumber(column, min, max));
  if (!value) return Error(column, RangeText("a number", min, max));
  return *value;
}

Result<std::optional<int>> RowReader::OptionalInt(const std::string& column, int min,
                                                  int max) const {
  std::string text = Text(column);
  if (text.empty()) return std::optional<int>();
  Result<double> value = ParseDouble(text);
  if (!value.ok() || *value != std::floor(*value) || *value < min || *value > max) {
    return Error(column, RangeText("a whole number", min, max));
  }
  return std::optional<int>(static_cast<int>(*value));
}

Result<int> RowReader::Int(const std::string& column, int min, int max) const {
  FULCRUM_ASSIGN_OR_RETURN(std::optional<int> value, OptionalInt(column, min, max));
  if (!value) return Error(column, RangeText("a whole number", min, max));
  return *value;
}

Result<std::optional<bool>> RowReader::OptionalBool(const std::string& column) const {
  std::string text = ToLower(Text(column));
  if (text.empty()) return std::optional<bool>();
  if (text == "yes" || text == "true") return std::optional<bool>(true);
  if (text == "no" || text == "false") return std::optional<bool>(false);
  return Error(column, "yes, no or empty (unknown)");
}

}  // namespace fulcrum::catalog
