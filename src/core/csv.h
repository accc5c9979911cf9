// A small RFC 4180 CSV reader and writer helper. ParseCsv splits a whole text into a header and
// records, each record tagged with the line it starts on so that callers can report
// "file:line: field: expected ..., found ...". Quoted fields may hold commas, doubled quotes and
// newlines; CRLF and LF both end a record; a UTF-8 byte-order mark is skipped; blank lines and
// lines starting with '#' (outside a quoted field) are comments. Pure functions, thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace fulcrum {

struct CsvRecord {
  int line = 0;  // 1-based line on which the record starts
  std::vector<std::string> fields;
};

struct CsvDocument {
  int header_line = 0;  // 0 when the text holds no header at all
  std::vector<std::string> header;
  std::vector<CsvRecord> records;
};

// Parses `text`; `file_name` only names the source in error messages. Every record must have as
// many fields as the header. Errors: an unterminated quote, text after a closing quote, a record
// with the wrong number of fields (InvalidInput, message "file:line: ..."), a NUL byte in any cell
// ("file:line:column: ...").
Result<CsvDocument> ParseCsv(std::string_view text, const std::string& file_name);

// `field` quoted for a CSV file when it holds a comma, quote, newline or surrounding spaces.
std::string CsvEscape(std::string_view field);

// The fields joined by commas (each escaped), ended with '\n'.
std::string CsvLine(const std::vector<std::string>& fields);

}  // namespace fulcrum
