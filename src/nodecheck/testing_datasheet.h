// For nodecheck's tests: the datasheet of an H100 SXM5 80 GB as the shipped catalog gives it
// (catalog/gpus.csv: 989 bf16/fp16, 494 tf32, 67 fp32 TFLOP/s, 3350 GB/s, NVLink 900 GB/s both
// directions) and the planner's PCIe figure (gen 4 x16, the catalog gives no generation).
#pragma once

#include "nodecheck/gpu_bench.h"

namespace fulcrum::nodecheck {

inline Datasheet TestH100Datasheet() {
  Datasheet d;
  d.name = "H100-SXM5-80GB";
  d.memory_gib = 80;
  d.bf16_tflops = 989;
  d.fp16_tflops = 989;
  d.tf32_tflops = 494;
  d.fp32_tflops = 67;
  d.memory_bandwidth_bytes_per_second = 3.35e12;
  d.nvlink_bytes_per_second = 900e9;
  d.pcie_bytes_per_second = 31.5e9;
  return d;
}

}  // namespace fulcrum::nodecheck
