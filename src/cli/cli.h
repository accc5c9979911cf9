// Entry point of the command-line interface: builds the commands from the command table
// (commands.cc), parses argv and runs the chosen subcommand, writing to stdout / stderr.
// Returns the process exit code. main() only forwards here.
#pragma once

namespace fulcrum::cli {

int RunCli(int argc, char** argv);

}  // namespace fulcrum::cli
