// One `fulcrum bench` run as a library call (for bench and validate): the GPU part through a
// bench source (bench_source.h), compared with the matching catalog datasheet, and the disk part
// (disk.h), composed into the result object `bench --json` prints. Blocking; one thread.
#pragma once

#include <functional>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "nodecheck/bench_source.h"
#include "nodecheck/disk.h"
#include "nodecheck/gpu_bench.h"

namespace fulcrum::nodecheck {

struct NodeBenchOptions {
  bool skip_gpu = false;
  GpuBenchOptions gpu;
  bool skip_disk = false;
  DiskBenchOptions disk;
};

// {"source", "gpu": null | BuildGpuReport(...), "gpu_skipped_reason": null | why, "disk": null |
// {"path", "written_bytes", "seconds", "write_bytes_per_second", "checkpoint_bytes",
// "checkpoint_seconds", "free_bytes"}}. `disk_progress` (may be empty) gets the fraction written.
Result<nlohmann::json> RunNodeBench(GpuBenchSource& source,
                                    const std::vector<Datasheet>& datasheets,
                                    const NodeBenchOptions& options,
                                    const std::function<void(double)>& disk_progress = {});

}  // namespace fulcrum::nodecheck
