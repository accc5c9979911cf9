// Entry point of the command-line interface: parses argv against the command table
// (commands.cc) and runs the chosen subcommand. Returns the process exit code. main() only
// forwards here.
#pragma once

#include <iosfwd>

namespace fulcrum::cli {

int RunCli(int argc, char** argv);
int RunCli(int argc, char** argv, std::ostream& out, std::ostream& err);

}  // namespace fulcrum::cli
