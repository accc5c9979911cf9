// Man pages in roff (man(7) macros), generated from the command tree: fulcrum(1) lists the
// commands by group; fulcrum-<command>(1) has NAME, SYNOPSIS, DESCRIPTION, OPTIONS, the nested
// subcommands with their options, EXAMPLES (the footer of --help) and SEE ALSO. The build
// writes them into build/man/ through `fulcrum __man DIR`. Pure functions.
#pragma once

#include <string>
#include <vector>

#include "cli/command_tree.h"
#include "core/status.h"

namespace fulcrum::cli {

struct ManPage {
  std::string file_name;  // "fulcrum.1", "fulcrum-plan.1"
  std::string roff;
};

// fulcrum.1 first, then one page per command of the table. `version` goes into the footer.
std::vector<ManPage> ManPages(const CliInfo& cli, const std::string& version);

// Writes ManPages() into `dir` (created if missing).
Status WriteManPages(const CliInfo& cli, const std::string& version, const std::string& dir);

}  // namespace fulcrum::cli
