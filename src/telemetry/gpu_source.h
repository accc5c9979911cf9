// The GPU source seam: one interface, three implementations (nvml: the real driver loaded with
// dlopen; sim: synthetic GPUs with scripted faults; replay: a recorded file). The agent's sampler
// thread owns a source and calls Sample() once per interval; implementations need not be
// thread-safe. Sample() returns every GPU; a field the device cannot report is nullopt.
#pragma once

#include <memory>
#include <string>

#include "core/status.h"
#include "telemetry/gpu_sample.h"

namespace fulcrum::telemetry {

class GpuSource {
 public:
  virtual ~GpuSource() = default;
  // "nvml", "sim" or "replay".
  virtual std::string kind() const = 0;
  virtual int gpu_count() const = 0;
  // Reads all GPUs now. A failure of one field of one GPU makes that field nullopt; a non-ok
  // Result means the whole source failed (driver gone).
  virtual Result<GpuSnapshot> Sample() = 0;
};

}  // namespace fulcrum::telemetry
