// The `--source nvml|sim` flags shared by `fulcrum bench`, `doctor` (and `validate`): registers
// them on a CLI11 subcommand with the agent's sim flag names (--sim-gpus, --sim-scenario) plus
// the bench sim's own (--sim-gpu, --sim-fraction, --sim-swing), and builds the bench source
// (nodecheck/bench_source.h) they name, resolving the sim GPU in the catalog.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "catalog/catalog.h"
#include "core/status.h"
#include "nodecheck/bench_source.h"

namespace CLI {
class App;
}

namespace fulcrum::cli {

struct BenchSourceFlags {
  std::string source = "nvml";             // nvml | sim
  std::string sim_gpu = "H100-SXM5-80GB";  // catalog name or alias
  int sim_gpus = 1;
  double sim_fraction = 1.0;
  double sim_swing = 0;
  std::string sim_scenario;  // fault scenario YAML (the agent's --sim-scenario format)
};

void AddBenchSourceOptions(CLI::App* cmd, BenchSourceFlags& flags);

// The datasheet of a catalog GPU as nodecheck needs it (PCIe: the planner's figure, gen 4 where
// the catalog does not say).
nodecheck::Datasheet DatasheetOf(const catalog::Gpu& gpu);
std::vector<nodecheck::Datasheet> Datasheets(const catalog::Catalog& cat);

// The source the flags name: the real machine, or a sim of --sim-gpu. Errors name the flag.
Result<std::unique_ptr<nodecheck::GpuBenchSource>> MakeBenchSource(const BenchSourceFlags& flags,
                                                                   const catalog::Catalog& cat);

}  // namespace fulcrum::cli
