// The bench seam: where `fulcrum bench`, `doctor` (and `validate`) get the node's GPU figures
// and its driver/CUDA facts. Two implementations: SystemBenchSource (gpu_bench.h: the real
// fulcrum-gpubench program and nvidia-smi/nvcc) and SimBenchSource (sim_bench.h: a sim GPU of a
// catalog model at a chosen fraction of its datasheet). Both speak fulcrum-gpubench's JSON, so
// everything after the source (BuildGpuReport, the acceptance verdict) is one code path.
// Blocking; an instance is used from one thread.
#pragma once

#include <string>

#include "core/status.h"
#include "nodecheck/doctor_facts.h"
#include "nodecheck/gpu_bench.h"

namespace fulcrum::nodecheck {

class GpuBenchSource {
 public:
  virtual ~GpuBenchSource() = default;
  // "nvml" (the real GPUs) or "sim", as `--source` spells it.
  virtual std::string kind() const = 0;
  // Measures GPU `options.device`: ok with json_text in fulcrum-gpubench's format (device, gemm,
  // memory_bandwidth_bytes_per_second, h2d/d2h_bytes_per_second, p2p, stability with 1 s
  // intervals), or ok with skipped_reason when there is nothing to measure; non-ok only for a
  // failure worth an error exit.
  virtual Result<GpuBenchRun> RunGpuBench(const GpuBenchOptions& options) = 0;
  // The facts `doctor` checks. The sim reports its own GPU stack (driver, GPUs, persistence,
  // ECC, clocks, device files, CUDA toolkit) and probes the host parts (disk, /dev/shm,
  // environment) like the real source; it leaves the Python frameworks unprobed.
  virtual SystemFacts GatherFacts(const DoctorOptions& options) = 0;
};

// The real machine: RunGpuBench runs fulcrum-gpubench (gpu_bench.h), GatherFacts probes with
// nvidia-smi, nvcc and python3 (doctor_facts.h).
class SystemBenchSource final : public GpuBenchSource {
 public:
  std::string kind() const override { return "nvml"; }
  Result<GpuBenchRun> RunGpuBench(const GpuBenchOptions& options) override;
  SystemFacts GatherFacts(const DoctorOptions& options) override;
};

}  // namespace fulcrum::nodecheck
