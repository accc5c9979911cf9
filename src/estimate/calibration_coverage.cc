#include "estimate/calibration_coverage.h"

#include <algorithm>
#include <fstream>

#include "core/parse.h"

namespace fulcrum::estimate {

std::string DefaultMeasuredCsvPath(const std::string& catalog_dir) {
  return catalog_dir + "/../data/calibration/measured.csv";
}

Result<std::vector<std::string>> CalibratedArchitectures(const std::string& path,
                                                         const catalog::Catalog& catalog) {
  std::ifstream in(path);
  if (!in) return Status::NotFound(path + ": no calibration data");
  std::string line;
  if (!std::getline(in, line)) return Status::InvalidInput(path + ": empty");
  const std::vector<std::string> header = Split(line, ',');
  const auto column = std::find(header.begin(), header.end(), "gpu");
  if (column == header.end()) return Status::InvalidInput(path + ":1: no gpu column");
  const size_t index = static_cast<size_t>(column - header.begin());
  std::vector<std::string> out;
  while (std::getline(in, line)) {
    // The gpu column comes before any quoted field (source, notes) in the measured rows.
    const std::vector<std::string> cells = Split(line, ',');
    if (cells.size() <= index) continue;
    const catalog::Gpu* gpu = catalog.FindGpu(Trim(cells[index]));
    if (gpu != nullptr) out.push_back(gpu->architecture);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace fulcrum::estimate
