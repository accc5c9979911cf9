#include "nodecheck/bench_source.h"

namespace fulcrum::nodecheck {

Result<GpuBenchRun> SystemBenchSource::RunGpuBench(const GpuBenchOptions& options) {
  return nodecheck::RunGpuBench(options);
}

SystemFacts SystemBenchSource::GatherFacts(const DoctorOptions& options) {
  return nodecheck::GatherFacts(options);
}

}  // namespace fulcrum::nodecheck
