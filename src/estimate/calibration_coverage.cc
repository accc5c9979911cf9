#include "estimate/calibration_coverage.h"

#include <algorithm>

#include "core/csv.h"
#include "core/parse.h"
#include "core/text_file.h"

namespace fulcrum::estimate {

std::string DefaultMeasuredCsvPath(const std::string& catalog_dir) {
  return catalog_dir + "/../data/calibration/measured.csv";
}

Result<std::vector<std::string>> CalibratedArchitectures(const std::string& path,
                                                         const catalog::Catalog& catalog) {
  FULCRUM_ASSIGN_OR_RETURN(std::string text, ReadTextFile(path, "calibration data (CSV)"));
  FULCRUM_ASSIGN_OR_RETURN(CsvDocument doc, ParseCsv(text, path));
  if (doc.header_line == 0) return Status::InvalidInput(path + ": empty");
  const auto column = std::find(doc.header.begin(), doc.header.end(), "gpu");
  if (column == doc.header.end()) {
    return Status::InvalidInput(path + ":" + std::to_string(doc.header_line) + ": no gpu column");
  }
  const size_t index = static_cast<size_t>(column - doc.header.begin());
  std::vector<std::string> out;
  for (const CsvRecord& record : doc.records) {
    const catalog::Gpu* gpu = catalog.FindGpu(Trim(record.fields[index]));
    if (gpu != nullptr) out.push_back(gpu->architecture);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace fulcrum::estimate
