// Which GPU architectures the step-time model's calibration data covers: the architectures of
// the GPUs named in the measured rows (the `gpu` column of measured.csv, resolved through the
// catalog). The one place that reads the coverage, so the data can move (re-point
// DefaultMeasuredCsvPath). Plain values; thread-compatible.
#pragma once

#include <string>
#include <vector>

#include "catalog/catalog.h"
#include "core/status.h"

namespace fulcrum::estimate {

// Where the measured calibration rows live relative to the catalog directory
// (<catalog>/../data/calibration/measured.csv).
std::string DefaultMeasuredCsvPath(const std::string& catalog_dir);

// Sorted, unique architecture names (catalog::Gpu::architecture) of the GPUs in the measured
// rows; GPU names the catalog does not know are left out. NotFound when the file is missing,
// InvalidInput when it has no `gpu` column.
Result<std::vector<std::string>> CalibratedArchitectures(const std::string& measured_csv_path,
                                                         const catalog::Catalog& catalog);

}  // namespace fulcrum::estimate
