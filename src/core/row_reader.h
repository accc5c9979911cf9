// The one loader of CSV tables (every catalog/*.csv, user offers.d files, imported SkyPilot
// CSVs): core/csv splits the text, a TableSchema lists the columns a file must have (and may
// have), CheckHeader maps them to positions, a RowReader reads one record's cells by column
// name. Every problem reads "file:line: column: expected ..., found \"...\"" (InvalidInput,
// with an ErrorDetail; an unknown or missing column names the nearest valid ones). Values are
// trimmed; an empty cell is "unknown" (std::nullopt) for optional columns; numbers must be
// finite (nan, inf, 1e400 are refused). Plain values, not thread-safe to share while mutated.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/csv.h"
#include "core/status.h"

namespace fulcrum {

struct TableSchema {
  std::vector<std::string> required;  // must all be present, in any order
  std::vector<std::string> optional;  // may be present; any other column is refused
};

using ColumnIndex = std::map<std::string, size_t>;

// Positions of the schema's columns in `doc`'s header; refuses an empty file, a missing
// required column, an unknown or repeated column.
Result<ColumnIndex> CheckHeader(const CsvDocument& doc, const std::string& file,
                                const TableSchema& schema);

class RowReader {
 public:
  RowReader(const std::string& file, const CsvRecord& record, const ColumnIndex& columns)
      : file_(file), record_(record), columns_(columns) {}

  int line() const { return record_.line; }
  // "file:line" for messages.
  std::string Where() const;
  // An InvalidInput status "file:line: column: expected <expected>, found \"<cell>\"".
  // `nearest`: the closest valid names (e.g. NearestNames(cell, known)), shown as "did you mean".
  Status Error(const std::string& column, const std::string& expected,
               std::vector<std::string> nearest = {}) const;

  // The trimmed cell; "" for an optional column that the file does not have.
  std::string Text(const std::string& column) const;
  // A non-empty cell.
  Result<std::string> RequiredText(const std::string& column) const;
  // A finite number in [min, max]; empty = nullopt.
  Result<std::optional<double>> OptionalNumber(const std::string& column, double min,
                                               double max) const;
  Result<double> Number(const std::string& column, double min, double max) const;
  // A whole number in [min, max] ("8" or "8.0"); empty = nullopt.
  Result<std::optional<int>> OptionalInt(const std::string& column, int min, int max) const;
  Result<int> Int(const std::string& column, int min, int max) const;
  // yes/no/true/false (any case); empty = nullopt.
  Result<std::optional<bool>> OptionalBool(const std::string& column) const;
  Result<bool> Bool(const std::string& column) const;

 private:
  const std::string& file_;
  const CsvRecord& record_;
  const ColumnIndex& columns_;
};

// A parsed table whose header has been checked against its schema. Rows(i) reads record i; the
// RowReader refers into the CsvTable, which must outlive it.
struct CsvTable {
  std::string file;
  CsvDocument doc;
  ColumnIndex columns;

  size_t size() const { return doc.records.size(); }
  RowReader Row(size_t i) const { return RowReader(file, doc.records[i], columns); }
};

// ParseCsv + CheckHeader. `file` names the source in messages.
Result<CsvTable> ParseTable(std::string_view text, const std::string& file,
                            const TableSchema& schema);
// Reads `path` whole (NotFound when it is missing) and parses it as ParseTable does.
Result<CsvTable> LoadTableFile(const std::string& path, const TableSchema& schema);

}  // namespace fulcrum
