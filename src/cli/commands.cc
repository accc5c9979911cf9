// The command table: every subcommand, once, in the order `fulcrum --help` lists them.
#include "cli/commands.h"

namespace fulcrum::cli {

// Each Register* is defined in cmd_<name>.cc.
void RegisterPlan(CLI::App& root, CliContext& ctx);
void RegisterFit(CLI::App& root, CliContext& ctx);
void RegisterEstimate(CLI::App& root, CliContext& ctx);
void RegisterOffers(CLI::App& root, CliContext& ctx);
void RegisterGpus(CLI::App& root, CliContext& ctx);
void RegisterProviders(CLI::App& root, CliContext& ctx);
void RegisterSpot(CLI::App& root, CliContext& ctx);
void RegisterCatalog(CLI::App& root, CliContext& ctx);
void RegisterAgent(CLI::App& root, CliContext& ctx);
void RegisterQuery(CLI::App& root, CliContext& ctx);
void RegisterRun(CLI::App& root, CliContext& ctx);
void RegisterSubmit(CLI::App& root, CliContext& ctx);
void RegisterStatus(CLI::App& root, CliContext& ctx);
void RegisterCost(CLI::App& root, CliContext& ctx);
void RegisterBench(CLI::App& root, CliContext& ctx);
void RegisterDoctor(CLI::App& root, CliContext& ctx);
void RegisterVersion(CLI::App& root, CliContext& ctx);

const std::vector<CommandEntry>& CommandTable() {
  static const std::vector<CommandEntry> kCommands = {
      // Choose
      {"plan", RegisterPlan},
      {"fit", RegisterFit},
      {"estimate", RegisterEstimate},
      {"offers", RegisterOffers},
      {"gpus", RegisterGpus},
      {"providers", RegisterProviders},
      {"spot", RegisterSpot},
      {"catalog", RegisterCatalog},
      // Watch
      {"agent", RegisterAgent},
      {"query", RegisterQuery},
      // Survive
      {"run", RegisterRun},
      {"submit", RegisterSubmit},
      {"status", RegisterStatus},
      {"cost", RegisterCost},
      // Validate
      {"bench", RegisterBench},
      {"doctor", RegisterDoctor},
      {"version", RegisterVersion},
  };
  return kCommands;
}

}  // namespace fulcrum::cli
