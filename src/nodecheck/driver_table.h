// The minimum Linux NVIDIA driver per CUDA toolkit version (catalog/cuda_driver.csv, from the
// CUDA release notes) and per major version under minor-version compatibility
// (catalog/cuda_minor_compat.csv), loaded through the one table loader (core/row_reader), and
// the numeric comparison of dotted driver versions. Plain data and pure functions.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "core/status.h"

namespace fulcrum::nodecheck {

struct DriverTable {
  std::map<std::string, std::string> min_driver_by_cuda;  // "12.4" -> "550.54.14"
  std::map<int, std::string> min_driver_minor_compat;     // 12 -> "525.60.13"
  std::map<int, std::string> minor_compat_excludes;       // 12 -> "PTX JIT of PTX newer ..."
};

// Reads both CSV files of `catalog_dir`; errors "file:line: column: expected ..., found ...".
Result<DriverTable> LoadDriverTable(const std::string& catalog_dir);

// Compares dotted versions numerically ("550.54.14" vs "525.60.13"): <0, 0, >0.
int CompareVersions(const std::string& a, const std::string& b);
// The minimum driver for a toolkit version: exact "major.minor" row, else nullopt.
std::optional<std::string> MinDriverFor(const DriverTable& table, const std::string& cuda_version);
// "12.4.131" -> "12.4"; a version without a dot stays as it is.
std::string MajorMinor(const std::string& version);

}  // namespace fulcrum::nodecheck
