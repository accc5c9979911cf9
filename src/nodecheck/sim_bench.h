// SimBenchSource: the bench seam's sim (bench_source.h). N GPUs of one catalog model that deliver
// `fraction` of their datasheet (GEMM TFLOP/s, memory bandwidth, NVLink or PCIe), with an
// optional throughput swing and the agent sim's fault scenario (telemetry::SimSource: one sim
// concept): the stability run's 1 s intervals read that source's clocks, temperature, power and
// throttle reasons at each second, and a clock-cutting fault (thermal-slowdown, power-cap)
// slows the GEMM by the same cut from its `at` on; xid:79 stops it. Its doctor facts are the
// sim's GPU stack and this host's disk, /dev/shm and environment (not its Python frameworks).
// Deterministic and instant: a stability run of S seconds yields S intervals without waiting. Not
// thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "nodecheck/bench_source.h"
#include "telemetry/sim_source.h"

namespace fulcrum::nodecheck {

struct SimGpuSpec {
  Datasheet datasheet;  // the catalog GPU simulated (name, memory, TFLOP/s, bandwidths)
  int gpu_count = 1;    // GPUs on the node (1..64)
  double fraction = 1;  // of the datasheet delivered, in (0, 2]
  // Peak-to-peak swing of the sustained GEMM as a fraction of its mean, in [0, 1]: 0.4 makes the
  // stability run swing 40 % (a 4 s wave, so even a 5 s run sees both ends).
  double swing_fraction = 0;
  std::vector<telemetry::Fault> faults;  // `--sim-scenario`, times from the bench's start
};

// One second of the sim's sustained bf16 GEMM, as fulcrum-gpubench reports an interval.
struct SimInterval {
  double tflops = 0;
  std::optional<double> sm_clock_mhz, temperature_celsius, power_watts;
  std::optional<uint64_t> clock_event_reasons;
};

class SimBenchSource final : public GpuBenchSource {
 public:
  // InvalidInput (naming the field) for a count, fraction or swing out of range, a datasheet
  // without a 16-bit or fp32 TFLOP/s figure, or a fault on a GPU the node does not have.
  static Result<std::unique_ptr<SimBenchSource>> Create(SimGpuSpec spec);

  std::string kind() const override { return "sim"; }
  Result<GpuBenchRun> RunGpuBench(const GpuBenchOptions& options) override;
  SystemFacts GatherFacts(const DoctorOptions& options) override;

  // The interval of GPU `gpu` at `seconds` since the start (what the stability run reports for
  // that second): for validate's stress phase, which samples it at its own pace.
  SimInterval IntervalAt(int gpu, double seconds) const;
  const SimGpuSpec& spec() const { return spec_; }
  // The driver and CUDA versions the sim reports (the agent sim's driver and its CUDA release).
  static std::string DriverVersion();
  static std::string CudaVersion();

 private:
  explicit SimBenchSource(SimGpuSpec spec);
  double PeakTflops() const;  // the stability GEMM's datasheet figure (bf16, else fp16, fp32)

  SimGpuSpec spec_;
  double healthy_sm_clock_mhz_ = 0;
};

}  // namespace fulcrum::nodecheck
