// A plain text table for terminal output: a header row, aligned columns (numbers right-aligned),
// optional title and footnotes. Every command's table view renders through this so the look is
// uniform and fits an 80-column terminal when the columns allow. Not thread-safe (a value).
#pragma once

#include <string>
#include <vector>

namespace fulcrum {

enum class Align { kLeft, kRight };

class Table {
 public:
  // One column per header; `align` defaults to left for every column.
  explicit Table(std::vector<std::string> headers, std::vector<Align> align = {});

  void AddRow(std::vector<std::string> cells);
  size_t rows() const { return rows_.size(); }

  // Renders header, a rule line and the rows, columns separated by two spaces, trailing spaces
  // trimmed, each line ended with '\n'.
  std::string Render() const;

 private:
  std::vector<std::string> headers_;
  std::vector<Align> align_;
  std::vector<std::vector<std::string>> rows_;
};

// "12.3" with `decimals` digits; "-" for NaN (unknown).
std::string FormatNumber(double value, int decimals);

}  // namespace fulcrum
