#include <memory>

#include <CLI/CLI.hpp>

#include "cli/command.h"
#include "cli/command_tree.h"
#include "cli/completion.h"

namespace fulcrum::cli {

void RegisterCompletion(CLI::App* cmd, CliContext& ctx) {
  cmd->description(
      "Print a completion script for bash, zsh or fish: the commands, their subcommands and "
      "options, generated from the command table (file names elsewhere).");
  cmd->footer(
      "Examples:\n"
      "  fulcrum completion bash > ~/.local/share/bash-completion/completions/fulcrum\n"
      "  fulcrum completion zsh > \"${fpath[1]}/_fulcrum\"\n"
      "  fulcrum completion fish > ~/.config/fish/completions/fulcrum.fish");
  auto shell = std::make_shared<std::string>();
  cmd->add_option("shell", *shell, "bash, zsh or fish")
      ->required()
      ->check(CLI::IsMember({"bash", "zsh", "fish"}));
  CLI::App* root = cmd->get_parent();
  cmd->callback([&ctx, shell, root] { ctx.out << CompletionScript(DescribeCli(*root), *shell); });
}

}  // namespace fulcrum::cli
