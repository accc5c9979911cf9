#include "core/table.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace fulcrum {
namespace {

// Display width of a UTF-8 string (counts code points, not bytes).
size_t DisplayWidth(const std::string& text) {
  size_t width = 0;
  for (unsigned char c : text) {
    if ((c & 0xC0) != 0x80) ++width;
  }
  return width;
}

}  // namespace

Table::Table(std::vector<std::string> headers, std::vector<Align> align)
    : headers_(std::move(headers)), align_(std::move(align)) {
  align_.resize(headers_.size(), Align::kLeft);
}

void Table::AddRow(std::vector<std::string> cells) {
  cells.resize(headers_.size());
  rows_.push_back(std::move(cells));
}

std::string Table::Render() const {
  std::vector<size_t> widths(headers_.size(), 0);
  for (size_t c = 0; c < headers_.size(); ++c) widths[c] = DisplayWidth(headers_[c]);
  for (const auto& row : rows_) {
    for (size_t c = 0; c < row.size(); ++c) widths[c] = std::max(widths[c], DisplayWidth(row[c]));
  }
  auto render_line = [&](const std::vector<std::string>& cells) {
    std::string line;
    for (size_t c = 0; c < cells.size(); ++c) {
      size_t pad = widths[c] - DisplayWidth(cells[c]);
      if (c > 0) line += "  ";
      if (align_[c] == Align::kRight)
        line += std::string(pad, ' ') + cells[c];
      else
        line += cells[c] + std::string(pad, ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    return line + "\n";
  };
  std::string out = render_line(headers_);
  std::vector<std::string> rule(headers_.size());
  for (size_t c = 0; c < headers_.size(); ++c) rule[c] = std::string(widths[c], '-');
  out += render_line(rule);
  for (const auto& row : rows_) out += render_line(row);
  return out;
}

std::string FormatNumber(double value, int decimals) {
  if (!std::isfinite(value)) return "-";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, value);
  return buf;
}

}  // namespace fulcrum
