// The compatibility tables of catalog/ that `fulcrum doctor`'s verdict reads, loaded through the
// one table loader (core/row_reader): the driver table (driver_table.h: CUDA -> minimum driver,
// minor-version compatibility), the forward-compatibility package rows (cuda_forward_compat.csv),
// GPU -> compute capability (cuda_gpu_arch.csv), PyTorch release -> wheel variants -> GPU code
// (torch_wheels.csv) and how far each table reaches (compat_as_of.csv). Plain data, pure
// functions; thread-compatible.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "nodecheck/driver_table.h"

namespace fulcrum::nodecheck {

struct ForwardCompatRow {
  int cuda_major = 0;
  int driver_branch = 0;         // 470
  std::string min_driver_linux;  // "470.57.02"
  std::string source;
};

struct GpuArchRow {
  std::string gpu;                 // "H100"
  std::vector<std::string> match;  // normalised ("rtx 3090"), see GpuWords()
  int cc_major = 0, cc_minor = 0;  // compute capability 9.0
  std::string segment;             // "data-center", "workstation", "geforce"
  std::string source;
};

struct TorchWheelRow {
  std::string torch;    // release "2.4"
  std::string variant;  // "cu121"
  std::string cuda;     // "12.1"
  bool pypi_default = false;
  std::vector<std::string> arch_list;  // "sm_90", "compute_120"
  std::string index_url;
  std::string source;
};

struct CompatTables {
  DriverTable driver;
  std::vector<ForwardCompatRow> forward_compat;
  std::vector<GpuArchRow> gpus;
  std::vector<TorchWheelRow> torch_wheels;  // file order: releases ascending
  std::string torch_as_of;                  // "2025-10-15 (torch 2.9)"
  std::string driver_as_of;                 // "2025-08 (CUDA 13.0 GA)"
};

// Reads the five CSV files of `catalog_dir`; errors "file:line: column: expected ..., found ...".
Result<CompatTables> LoadCompatTables(const std::string& catalog_dir);

// "NVIDIA GeForce RTX 3090" -> "nvidia geforce rtx 3090": lower case, '-' and '_' read as ' ',
// runs of spaces collapsed.
std::string GpuWords(const std::string& name);
// The row whose longest `match` occurs in `name` as whole words; nullptr when none does.
const GpuArchRow* FindGpu(const CompatTables& tables, const std::string& name);
// A torch version's release: "2.4.1+cu121" -> "2.4", "1.12.0a0" -> "1.12".
std::string TorchRelease(const std::string& version);

}  // namespace fulcrum::nodecheck
