// The command table: every subcommand, once, in the order `fulcrum --help` lists them.
#include "cli/commands.h"

namespace fulcrum::cli {

// Each Register* is defined in cmd_<name>.cc.
void RegisterVersion(CLI::App& root, CliContext& ctx);
void RegisterBench(CLI::App& root, CliContext& ctx);
void RegisterDoctor(CLI::App& root, CliContext& ctx);

const std::vector<CommandEntry>& CommandTable() {
  static const std::vector<CommandEntry> kCommands = {
      {"bench", RegisterBench},
      {"doctor", RegisterDoctor},
      {"version", RegisterVersion},
  };
  return kCommands;
}

}  // namespace fulcrum::cli
