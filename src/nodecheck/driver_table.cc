#include "nodecheck/driver_table.h"

#include <algorithm>

#include "core/parse.h"
#include "core/row_reader.h"

namespace fulcrum::nodecheck {
namespace {

const TableSchema kCudaDriverSchema = {{"cuda_version", "min_driver_linux", "source"}, {"note"}};
const TableSchema kMinorCompatSchema = {{"cuda_major", "min_driver_linux", "source"},
                                        {"note", "excludes"}};

// A dotted version of whole numbers ("550.54.14", "580").
Result<std::string> DriverVersion(const RowReader& row, const std::string& column) {
  FULCRUM_ASSIGN_OR_RETURN(std::string text, row.RequiredText(column));
  for (const std::string& part : Split(text, '.')) {
    if (!ParseInt(part).ok() || *ParseInt(part) < 0) {
      return row.Error(column, "a driver version such as 550.54.14");
    }
  }
  return text;
}

}  // namespace

int CompareVersions(const std::string& a, const std::string& b) {
  auto pa = Split(a, '.');
  auto pb = Split(b, '.');
  for (size_t i = 0; i < std::max(pa.size(), pb.size()); ++i) {
    int64_t x = i < pa.size() ? ParseInt(pa[i]).ok() ? *ParseInt(pa[i]) : 0 : 0;
    int64_t y = i < pb.size() ? ParseInt(pb[i]).ok() ? *ParseInt(pb[i]) : 0 : 0;
    if (x != y) return x < y ? -1 : 1;
  }
  return 0;
}

std::string MajorMinor(const std::string& version) {
  auto parts = Split(version, '.');
  if (parts.size() < 2) return version;
  return parts[0] + "." + parts[1];
}

Result<DriverTable> LoadDriverTable(const std::string& catalog_dir) {
  DriverTable driver_table;
  FULCRUM_ASSIGN_OR_RETURN(CsvTable by_cuda,
                           LoadTableFile(catalog_dir + "/cuda_driver.csv", kCudaDriverSchema));
  for (size_t i = 0; i < by_cuda.size(); ++i) {
    RowReader row = by_cuda.Row(i);
    std::string cuda = row.Text("cuda_version");
    auto parts = Split(cuda, '.');
    if (parts.size() != 2 || !ParseInt(parts[0]).ok() || !ParseInt(parts[1]).ok()) {
      return row.Error("cuda_version", "MAJOR.MINOR such as 12.4");
    }
    FULCRUM_ASSIGN_OR_RETURN(driver_table.min_driver_by_cuda[cuda],
                             DriverVersion(row, "min_driver_linux"));
  }
  FULCRUM_ASSIGN_OR_RETURN(
      CsvTable by_major, LoadTableFile(catalog_dir + "/cuda_minor_compat.csv", kMinorCompatSchema));
  for (size_t i = 0; i < by_major.size(); ++i) {
    RowReader row = by_major.Row(i);
    FULCRUM_ASSIGN_OR_RETURN(int major, row.Int("cuda_major", 1, 1000));
    FULCRUM_ASSIGN_OR_RETURN(driver_table.min_driver_minor_compat[major],
                             DriverVersion(row, "min_driver_linux"));
    driver_table.minor_compat_excludes[major] = row.Text("excludes");
  }
  return driver_table;
}

std::optional<std::string> MinDriverFor(const DriverTable& table, const std::string& cuda_version) {
  auto it = table.min_driver_by_cuda.find(MajorMinor(cuda_version));
  if (it == table.min_driver_by_cuda.end()) return std::nullopt;
  return it->second;
}

}  // namespace fulcrum::nodecheck
