#include "cli/bench_source_options.h"

#include <CLI/CLI.hpp>

#include "estimate/comm.h"
#include "nodecheck/sim_bench.h"
#include "telemetry/sim_source.h"

namespace fulcrum::cli {

void AddBenchSourceOptions(CLI::App* cmd, BenchSourceFlags& flags) {
  cmd->add_option("--source", flags.source,
                  "Where the GPU figures and driver facts come from: nvml (this machine's GPUs: "
                  "fulcrum-gpubench, nvidia-smi) or sim (a simulated node, see --sim-*)")
      ->check(CLI::IsMember({"nvml", "sim"}))
      ->capture_default_str()
      ->type_name("nvml|sim");
  cmd->add_option("--sim-gpu", flags.sim_gpu, "Sim source: the catalog GPU simulated")
      ->capture_default_str()
      ->type_name("NAME");
  cmd->add_option("--sim-gpus", flags.sim_gpus, "Sim source: GPUs on the node")
      ->capture_default_str()
      ->type_name("N");
  cmd->add_option("--sim-fraction", flags.sim_fraction,
                  "Sim source: fraction of the datasheet the GPUs deliver (GEMM, memory "
                  "bandwidth, NVLink/PCIe), e.g. 0.6")
      ->capture_default_str()
      ->type_name("FRACTION");
  cmd->add_option("--sim-swing", flags.sim_swing,
                  "Sim source: peak-to-peak swing of the sustained GEMM as a fraction of its "
                  "mean (0.4 = 40 %, as on a noisy shared host)")
      ->capture_default_str()
      ->type_name("FRACTION");
  cmd->add_option("--sim-scenario", flags.sim_scenario,
                  "Sim source: fault scenario YAML, as for `agent --source sim` (e.g. - {at: 60s, "
                  "gpu: 0, fault: thermal-slowdown} slows the GEMM by the clock cut from 60 s)")
      ->type_name("FILE");
}

nodecheck::Datasheet DatasheetOf(const catalog::Gpu& gpu) {
  nodecheck::Datasheet d;
  d.name = gpu.name;
  d.memory_gib = gpu.memory_gib;
  d.bf16_tflops = gpu.bf16_tflops;
  d.fp16_tflops = gpu.fp16_tflops;
  d.tf32_tflops = gpu.tf32_tflops;
  d.fp32_tflops = gpu.fp32_tflops;
  if (gpu.memory_bandwidth_gbps > 0)
    d.memory_bandwidth_bytes_per_second = gpu.memory_bandwidth_gbps * 1e9;
  if (gpu.nvlink_gbps) d.nvlink_bytes_per_second = *gpu.nvlink_gbps * 1e9;
  d.pcie_bytes_per_second = estimate::PcieGbytesPerSecond(gpu.pcie_gen) * 1e9;
  return d;
}

std::vector<nodecheck::Datasheet> Datasheets(const catalog::Catalog& cat) {
  std::vector<nodecheck::Datasheet> sheets;
  for (const auto& gpu : cat.gpus()) sheets.push_back(DatasheetOf(gpu));
  return sheets;
}

Result<std::unique_ptr<nodecheck::GpuBenchSource>> MakeBenchSource(const BenchSourceFlags& flags,
                                                                   const catalog::Catalog& cat) {
  if (flags.source != "sim") {
    return std::unique_ptr<nodecheck::GpuBenchSource>(
        std::make_unique<nodecheck::SystemBenchSource>());
  }
  auto gpu = cat.ResolveGpu(flags.sim_gpu);
  if (!gpu.ok()) return gpu.status().WithContext("--sim-gpu");
  nodecheck::SimGpuSpec spec;
  spec.datasheet = DatasheetOf(**gpu);
  spec.gpu_count = flags.sim_gpus;
  spec.fraction = flags.sim_fraction;
  spec.swing_fraction = flags.sim_swing;
  if (!flags.sim_scenario.empty()) {
    auto faults = telemetry::LoadScenario(flags.sim_scenario);
    if (!faults.ok()) return faults.status().WithContext("--sim-scenario");
    spec.faults = std::move(*faults);
  }
  FULCRUM_ASSIGN_OR_RETURN(std::unique_ptr<nodecheck::SimBenchSource> sim,
                           nodecheck::SimBenchSource::Create(std::move(spec)));
  return std::unique_ptr<nodecheck::GpuBenchSource>(std::move(sim));
}

}  // namespace fulcrum::cli
