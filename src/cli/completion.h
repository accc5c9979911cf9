// Shell completion scripts for bash, zsh and fish, generated from the command tree (the command
// table and each command's options): command names, nested subcommands (`spot interval`,
// `catalog import`) and options; values and positionals fall back to file names. Pure functions.
#pragma once

#include <string>

#include "cli/command_tree.h"

namespace fulcrum::cli {

// The script for `shell` ("bash", "zsh" or "fish"); "" for any other name.
std::string CompletionScript(const CliInfo& cli, const std::string& shell);

}  // namespace fulcrum::cli
