// The list of subcommands (defined in commands.cc). Adding a command = one cmd_<name>.cc file
// with its Register function + one line in the table.
#pragma once

#include <vector>

#include "cli/command.h"

namespace fulcrum::cli {

const std::vector<CommandEntry>& CommandTable();

}  // namespace fulcrum::cli
