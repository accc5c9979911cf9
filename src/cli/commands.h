// The command table (defined in commands.cc): every subcommand once, in the order and groups
// `fulcrum --help` lists them. Adding a command = one cmd_<name>.cc file with its Register
// function + one row here; help, completion, man pages and the CLI tests follow from the row.
#pragma once

#include <vector>

#include "cli/command.h"

namespace fulcrum::cli {

const std::vector<CommandEntry>& CommandTable();

}  // namespace fulcrum::cli
