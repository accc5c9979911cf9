#include "core/row_reader.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/input_error.h"
#include "core/parse.h"
#include "core/text_file.h"

namespace fulcrum {
namespace {

std::string JoinColumns(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& name : names) out += (out.empty() ? "" : ",") + name;
  return out;
}

// "0", "1.5", "1000000", "1e+15": shortest exact-looking form, for range messages.
std::string Bound(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.15g", value);
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
    return InputError({file, 1, "header", expected, "an empty file", {}}, FoundIs::kDescription);
  }
  std::vector<std::string> all = schema.required;
  all.insert(all.end(), schema.optional.begin(), schema.optional.end());
  ColumnIndex index;
  for (size_t i = 0; i < doc.header.size(); ++i) {
    std::string name(Trim(doc.header[i]));
    if (std::find(all.begin(), all.end(), name) == all.end()) {
      std::string optional_text =
          schema.optional.empty() ? "" : " (optional: " + JoinColumns(schema.optional) + ")";
      return InputError({file, doc.header_line, "header", expected + optional_text,
                         "unknown column \"" + name + "\"", NearestNames(name, all)},
                        FoundIs::kDescription);
    }
    if (!index.emplace(name, i).second) {
      return InputError(
          {file, doc.header_line, "header", "each column once", "\"" + name + "\" twice", {}},
          FoundIs::kDescription);
    }
  }
  std::vector<std::string> present;
  for (const auto& name : doc.header) present.emplace_back(Trim(name));
  for (const auto& name : schema.required) {
    if (!index.count(name)) {
      return InputError({file, doc.header_line, "header", expected, "no column \"" + name + "\"",
                         NearestNames(name, present)},
                        FoundIs::kDescription);
    }
  }
  return index;
}

std::string RowReader::Where() const { return file_ + ":" + std::to_string(record_.line); }

Status RowReader::Error(const std::string& column, const std::string& expected,
                        std::vector<std::string> nearest) const {
  return InputError({file_, record_.line, column, expected, Text(column), std::move(nearest)});
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
  Result<double> value = ParseDouble(text);  // refuses nan, inf and overflow (1e400)
  if (!value.ok() || !std::isfinite(*value) || *value < min || *value > max) {
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
  if (!value.ok() || !std::isfinite(*value) || *value != std::floor(*value) || *value < min ||
      *value > max) {
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

Result<bool> RowReader::Bool(const std::string& column) const {
  std::string text = ToLower(Text(column));
  if (text == "yes" || text == "true") return true;
  if (text == "no" || text == "false") return false;
  return Error(column, "yes or no");
}

Result<CsvTable> ParseTable(std::string_view text, const std::string& file,
                            const TableSchema& schema) {
  CsvTable table;
  table.file = file;
  FULCRUM_ASSIGN_OR_RETURN(table.doc, ParseCsv(text, file));
  FULCRUM_ASSIGN_OR_RETURN(table.columns, CheckHeader(table.doc, file, schema));
  return table;
}

Result<CsvTable> LoadTableFile(const std::string& path, const TableSchema& schema) {
  FULCRUM_ASSIGN_OR_RETURN(std::string text, ReadTextFile(path, "a catalog file"));
  return ParseTable(text, path, schema);
}

}  // namespace fulcrum
