// The command table: every subcommand, once, in the order `fulcrum --help` lists them.
#include "cli/commands.h"

namespace fulcrum::cli {

// Each Register* is defined in cmd_<name>.cc.
void RegisterVersion(CLI::App& root, CliContext& ctx);
void RegisterGpus(CLI::App& root, CliContext& ctx);
void RegisterOffers(CLI::App& root, CliContext& ctx);
void RegisterProviders(CLI::App& root, CliContext& ctx);
void RegisterCatalog(CLI::App& root, CliContext& ctx);
void RegisterRun(CLI::App& root, CliContext& ctx);
void RegisterSubmit(CLI::App& root, CliContext& ctx);
void RegisterStatus(CLI::App& root, CliContext& ctx);
void RegisterCost(CLI::App& root, CliContext& ctx);

const std::vector<CommandEntry>& CommandTable() {
  static const std::vector<CommandEntry> kCommands = {
      {"version", RegisterVersion},
      {"offers", RegisterOffers},
      {"gpus", RegisterGpus},
      {"providers", RegisterProviders},
      {"catalog", RegisterCatalog},
      {"run", RegisterRun},
      {"submit", RegisterSubmit},
      {"status", RegisterStatus},
      {"cost", RegisterCost},
  };
  return kCommands;
}

}  // namespace fulcrum::cli
