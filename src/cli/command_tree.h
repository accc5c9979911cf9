// A plain description of the command tree that the command table builds (names, help, options,
// nested subcommands), read back from the CLI11 apps after registration. Shell completion, the
// man pages and `fulcrum __table` (what the CLI tests read) are all generated from it, so a
// command's options are declared once, in its Register function. Pure values; thread-compatible.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace CLI {
class App;
}

namespace fulcrum::cli {

struct OptionInfo {
  std::vector<std::string> names;  // as typed, long first: "--output", "-o"
  std::string value_name;          // "FILE", "N", ...; "" for a flag
  std::string help;
  bool positional = false;  // then names[0] is the positional's name, without dashes
};

struct CommandInfo {
  std::string name;         // "plan", or "interval" for `spot interval`
  std::string group;        // the table's group ("" below the top level)
  std::string help;         // one line (the table's help for a top-level command)
  std::string description;  // the longer text of `--help` ("" when only `help` exists)
  std::string footer;       // the "Examples:" part of `--help`, and anything after the options
  std::vector<OptionInfo> options;  // --help included, in declaration order
  std::vector<CommandInfo> subcommands;
};

struct CliInfo {
  std::vector<OptionInfo> global_options;  // --catalog, --verbose, --version, --help
  std::vector<CommandInfo> commands;       // the command table's rows, in order
};

// Reads `root` (the app RunCli builds): one CommandInfo per row of CommandTable().
CliInfo DescribeCli(const CLI::App& root);

// {"global_options": [...], "commands": [{name, group, help, description, footer, options:
// [{names, value_name, help, positional}], subcommands: [...]}]}.
nlohmann::json CliInfoToJson(const CliInfo& info);

}  // namespace fulcrum::cli
