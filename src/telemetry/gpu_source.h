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
  // Reads only the cheap fields, for the agent's fast (100 ms) alerting ticks between full
  // samples: utilization, temperature, power, and XID events (index, uuid and timestamp set;
  // every other field nullopt). Sources where a full read is cheap return Sample().
  virtual Result<GpuSnapshot> SampleFast() { return Sample(); }
};

// The fields SampleFast() reads, copied from `fast` over `full` (the last full sample of the
// same GPU): what the agent evaluates and shows between full samples. The XID events, counts and
// last code follow `fast`.
void MergeFastFields(const GpuSample& fast, GpuSample& full);

// Per-GPU mean of the fast fields over the fast samples of one storage interval, and the XID
// events they carried: the stored row holds 1 s aggregates (and every XID) while alerts saw every
// 100 ms reading. Not thread-safe.
class FastFieldAggregate {
 public:
  void Add(const GpuSnapshot& fast);
  // Replaces the fast fields of `full` by their means over the readings added since the last
  // Apply (a GPU or field with no reading keeps `full`'s value) and its XID events by all those
  // readings carried, in order, then starts over. Add `full` itself first when it is a reading.
  void Apply(GpuSnapshot& full);

 private:
  struct Sums {
    double util = 0, util_mem = 0, temperature = 0, power = 0;
    int util_n = 0, util_mem_n = 0, temperature_n = 0, power_n = 0;
    std::vector<int> xids;
  };
  std::vector<Sums> sums_;
};

}  // namespace fulcrum::telemetry
