#include "core/csv.h"

#include "core/input_error.h"

namespace fulcrum {
namespace {

// Cursor over the text that tracks the current line number.
class CsvScanner {
 public:
  CsvScanner(std::string_view text, const std::string& file_name)
      : text_(text), file_name_(file_name) {
    if (text_.substr(0, 3) == "\xEF\xBB\xBF") pos_ = line_start_ = 3;
  }

  bool AtEnd() const { return pos_ >= text_.size(); }
  int line() const { return line_; }

  // Skips blank lines and '#' comment lines that start at the current position.
  void SkipBlankAndComments() {
    while (!AtEnd()) {
      char c = text_[pos_];
      if (c == '\n' || c == '\r') {
        ConsumeNewline();
      } else if (c == '#') {
        while (!AtEnd() && text_[pos_] != '\n' && text_[pos_] != '\r') ++pos_;
      } else {
        return;
      }
    }
  }

  // Reads one record (its fields) up to and including its line ending.
  Result<std::vector<std::string>> ReadRecord() {
    std::vector<std::string> fields;
    while (true) {
      std::string field;
      FULCRUM_RETURN_IF_ERROR(ReadField(field));
      fields.push_back(std::move(field));
      if (AtEnd()) return fields;
      char c = text_[pos_];
      if (c == ',') {
        ++pos_;
        continue;
      }
      ConsumeNewline();  // ReadField stops only at ',', a line ending or the end
      return fields;
    }
  }

 private:
  Status ReadField(std::string& out) {
    if (!AtEnd() && text_[pos_] == '"') return ReadQuoted(out);
    while (!AtEnd()) {
      char c = text_[pos_];
      if (c == ',' || c == '\n' || c == '\r') break;
      if (c == '\0') return NulError();
      out.push_back(c);
      ++pos_;
    }
    return Status::Ok();
  }

  Status ReadQuoted(std::string& out) {
    int start_line = line_;
    ++pos_;  // opening quote
    while (true) {
      if (AtEnd()) {
        return InputError({file_name_,
                           start_line,
                           "",
                           "a closing '\"' for the quoted field opened on this line",
                           "the end of the file",
                           {}},
                          FoundIs::kDescription);
      }
      char c = text_[pos_];
      if (c == '"') {
        if (pos_ + 1 < text_.size() && text_[pos_ + 1] == '"') {
          out.push_back('"');
          pos_ += 2;
          continue;
        }
        ++pos_;
        break;
      }
      if (c == '\0') return NulError();
      const bool newline =
          c == '\n' || (c == '\r' && (pos_ + 1 >= text_.size() || text_[pos_ + 1] != '\n'));
      out.push_back(c);
      ++pos_;
      if (newline) {
        ++line_;
        line_start_ = pos_;
      }
    }
    if (!AtEnd() && text_[pos_] != ',' && text_[pos_] != '\n' && text_[pos_] != '\r') {
      return InputError({file_name_,
                         line_,
                         "",
                         "',' or the end of the line after a closing '\"'",
                         std::string(1, text_[pos_]),
                         {}});
    }
    return Status::Ok();
  }

  void ConsumeNewline() {
    if (AtEnd()) return;
    if (text_[pos_] == '\r') {
      ++pos_;
      if (!AtEnd() && text_[pos_] == '\n') ++pos_;
    } else {
      ++pos_;
    }
    ++line_;
    line_start_ = pos_;
  }

  // A NUL byte in a cell (offers.d/x.csv:3:9): no name, price or region holds one, and C strings
  // downstream (SQLite text, the HTTP API's JSON) would cut the cell there.
  Status NulError() const {
    const size_t column = pos_ - line_start_ + 1;
    ErrorDetail detail{
        file_name_,         line_, "column " + std::to_string(column), "a cell without NUL bytes",
        "a NUL byte (\\0)", {}};
    return Status::InvalidInput(file_name_ + ":" + std::to_string(line_) + ":" +
                                std::to_string(column) +
                                ": expected a cell without NUL bytes, found a NUL byte (\\0)")
        .WithDetail(detail);
  }

  std::string_view text_;
  const std::string& file_name_;
  size_t pos_ = 0;
  size_t line_start_ = 0;  // offset of the current line's first byte
  int line_ = 1;
};

}  // namespace

Result<CsvDocument> ParseCsv(std::string_view text, const std::string& file_name) {
  CsvDocument doc;
  CsvScanner scanner(text, file_name);
  scanner.SkipBlankAndComments();
  if (scanner.AtEnd()) return doc;
  doc.header_line = scanner.line();
  FULCRUM_ASSIGN_OR_RETURN(doc.header, scanner.ReadRecord());
  while (true) {
    scanner.SkipBlankAndComments();
    if (scanner.AtEnd()) break;
    CsvRecord record;
    record.line = scanner.line();
    FULCRUM_ASSIGN_OR_RETURN(record.fields, scanner.ReadRecord());
    if (record.fields.size() != doc.header.size()) {
      return InputError({file_name,
                         record.line,
                         "",
                         std::to_string(doc.header.size()) + " fields as in the header",
                         std::to_string(record.fields.size()),
                         {}},
                        FoundIs::kDescription);
    }
    doc.records.push_back(std::move(record));
  }
  return doc;
}

std::string CsvEscape(std::string_view field) {
  bool quote =
      field.find_first_of(",\"\n\r") != std::string_view::npos ||
      (!field.empty() && (field.front() == ' ' || field.back() == ' ' || field.front() == '#'));
  if (!quote) return std::string(field);
  std::string out = "\"";
  for (char c : field) {
    if (c == '"') out.push_back('"');
    out.push_back(c);
  }
  out.push_back('"');
  return out;
}

std::string CsvLine(const std::vector<std::string>& fields) {
  std::string line;
  for (size_t i = 0; i < fields.size(); ++i) {
    if (i > 0) line.push_back(',');
    line += CsvEscape(fields[i]);
  }
  line.push_back('\n');
  return line;
}

}  // namespace fulcrum
