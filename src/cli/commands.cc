// The command table: every subcommand, once, in the order `fulcrum --help` lists them.
#include "cli/commands.h"

namespace fulcrum::cli {

// Each Register* is defined in cmd_<name>.cc.
void RegisterVersion(CLI::App& root, CliContext& ctx);
void RegisterAgent(CLI::App& root, CliContext& ctx);
void RegisterQuery(CLI::App& root, CliContext& ctx);

const std::vector<CommandEntry>& CommandTable() {
  static const std::vector<CommandEntry> kCommands = {
      {"version", RegisterVersion},
      {"agent", RegisterAgent},
      {"query", RegisterQuery},
  };
  return kCommands;
}

}  // namespace fulcrum::cli
