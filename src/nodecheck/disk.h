// Disk bench: sequential write bandwidth to a directory (the checkpoint directory), with fsync,
// the way a training job writes a checkpoint: large blocks, one file, fsync at the end, then the
// file is removed. Also the time a checkpoint of a given size would take at that bandwidth.
// Blocking; call from one thread. Bytes and seconds in the names.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "core/status.h"

namespace fulcrum::nodecheck {

struct DiskBenchOptions {
  std::string directory;                   // where the test file is written (must exist)
  double total_bytes = 1 << 30;            // how much to write
  double block_bytes = 16 << 20;           // write() size
  std::optional<double> checkpoint_bytes;  // if set, checkpoint_seconds is reported for it
};

struct DiskBenchResult {
  std::string path;  // the directory measured
  double written_bytes = 0;
  double seconds = 0;  // from first write to fsync done
  double write_bytes_per_second = 0;
  std::optional<double> checkpoint_bytes;
  std::optional<double> checkpoint_seconds;  // checkpoint_bytes / write_bytes_per_second
  std::optional<double> free_bytes;          // free space in `directory` after the run
};

// `progress` (may be empty) is called with the fraction written so far.
Result<DiskBenchResult> RunDiskBench(const DiskBenchOptions& options,
                                     const std::function<void(double)>& progress = {});

}  // namespace fulcrum::nodecheck
