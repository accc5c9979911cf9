// SimSource: N synthetic GPUs (an H100-like device running a training workload curve) with a
// fault scenario, for demos, tests and benchmarks. A fault takes effect at its time (seconds
// since the source was created, on the given Clock) in the next sample: `overheat` reads 95 C at
// once; gradual faults are separate kinds (`heat-ramp`, `memory-leak`). Deterministic for a given
// clock. Not thread-safe: the sampler thread owns it.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/clock.h"
#include "telemetry/gpu_source.h"

namespace fulcrum::telemetry {

enum class FaultKind {
  kOverheat,             // temperature 95 C at once
  kHeatRamp,             // temperature climbs `rate` C/s (default 0.5) up to 100 C
  kThermalSlowdown,      // HW thermal slowdown reason set, SM clock cut by 40 %
  kPowerCap,             // SW power cap reason set, power at the limit
  kXid,                  // XID error `xid` (79 = fallen off the bus: every field unknown after)
  kEccUncorrectable,     // one more uncorrected ECC error
  kUtilizationCollapse,  // utilization drops to 2 %
  kMemoryLeak,           // used memory grows to full over `over` (default 60 s)
  kProcessExit,          // the training process exits: no process, utilization 0, memory freed
  kHang,                 // a job stuck in a collective: utilization 100 %, power at 25 % of
                         // the limit, tensor pipes idle (what NCCL hangs look like)
  kRecover,              // clears every fault of the GPU
};

struct Fault {
  double at_seconds = 0;
  int gpu = 0;
  FaultKind kind = FaultKind::kOverheat;
  int xid = 0;                        // for kXid
  double rate = 0.5;                  // for kHeatRamp, C per second
  double ramp_seconds = 60;           // for kMemoryLeak, time to reach full memory
  std::optional<double> for_seconds;  // fault ends after this long (nullopt = stays)
  std::string text;                   // as written ("xid:79"), for messages
};

// Parses a scenario file: a YAML list of `{at: 5s, gpu: 0, fault: overheat}` entries (optional
// `for: 30s`, `rate: 1` for heat-ramp, `over: 2m` for memory-leak). Errors name file:line.
Result<std::vector<Fault>> LoadScenario(const std::string& path);
Result<std::vector<Fault>> ParseScenario(const std::string& yaml_text, const std::string& origin);
// "overheat", "heat-ramp", "thermal-slowdown", "power-cap", "xid:79", "ecc-uncorrectable",
// "utilization-collapse", "memory-leak", "process-exit", "hang", "recover".
Result<Fault> ParseFaultName(const std::string& text);

class SimSource final : public GpuSource {
 public:
  SimSource(int gpu_count, std::vector<Fault> faults, const Clock& clock);
  std::string kind() const override { return "sim"; }
  int gpu_count() const override { return gpu_count_; }
  Result<GpuSnapshot> Sample() override;

 private:
  GpuSample Healthy(int gpu, double t) const;
  // Integrates the counters (energy, PCIe and NVLink bytes) over the time since the previous
  // sample by the samples' own timestamps (so that a counter's rate over stored rows is the rate
  // that was sampled), and hands out each XID fault due by scenario time `t` once, as an event.
  void Accumulate(GpuSample& s, double t, bool lost);
  struct Counters {
    double last_at = -1;  // timestamp of the previous sample
    double energy_joules = 0, pcie_tx = 0, pcie_rx = 0, nvlink_tx = 0, nvlink_rx = 0;
    std::map<int, double> xid_counts;
  };
  int gpu_count_;
  std::vector<Fault> faults_;
  std::vector<bool> xid_delivered_;  // per fault: its XID event has been handed out
  std::vector<Counters> counters_;   // per GPU
  const Clock& clock_;
  double start_;
};

}  // namespace fulcrum::telemetry
