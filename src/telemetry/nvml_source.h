// NvmlSource: the real GPUs, read through NVML loaded at run time with dlopen (our own
// declarations in nvml_api.h; no nvml.h at build time). Capabilities are probed once per device
// at Open: a field whose getter answers NOT_SUPPORTED is never asked again and stays unknown.
// XID errors arrive through an NVML event set that Sample() drains without blocking. Profiling
// ratios come from GPM (Hopper and later) between consecutive full samples: none on the first.
// Not thread-safe: the sampler thread owns it.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "telemetry/gpu_source.h"

namespace fulcrum::telemetry {

// Per-device support flags found at Open (exposed for tests and `--json` diagnostics).
struct NvmlCapabilities {
  bool utilization = false, memory = false, power = false, power_limit = false, temperature = false,
       sm_clock = false, memory_clock = false, clock_events = false, ecc = false, pcie = false,
       processes = false, xid_events = false, memory_reserved = false, encoder = false,
       decoder = false, gpm = false;
  // Field IDs (nvml_api.h kField*) that nvmlDeviceGetFieldValues answered at Open: memory
  // temperature, energy, PCIe replays, NVLink data bytes, remapped rows.
  std::vector<unsigned int> fields;
};

class NvmlSource final : public GpuSource {
 public:
  // Loads `library` ("libnvidia-ml.so.1": found through the dynamic loader's search path),
  // initialises NVML and probes every device. Unavailable when the library or a GPU is missing.
  static Result<std::unique_ptr<NvmlSource>> Open(const std::string& library = "libnvidia-ml.so.1");
  ~NvmlSource() override;

  std::string kind() const override { return "nvml"; }
  int gpu_count() const override;
  Result<GpuSnapshot> Sample() override;
  // Utilization, temperature, power and the XID event set: three NVML calls per GPU.
  Result<GpuSnapshot> SampleFast() override;
  const NvmlCapabilities& capabilities(int index) const;

  struct Impl;

 private:
  explicit NvmlSource(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace fulcrum::telemetry
