#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "cli/command.h"

namespace fulcrum::cli {

void RegisterVersion(CLI::App& root, CliContext& ctx) {
  auto* cmd = root.add_subcommand("version", "Print fulcrum's version");
  auto json = std::make_shared<bool>(false);
  cmd->add_flag("--json", *json, "Print {\"version\": ...} as JSON");
  cmd->callback([&ctx, json] {
    if (*json) {
      PrintJson(ctx, {{"version", FULCRUM_VERSION}});
    } else {
      ctx.out << "fulcrum " << FULCRUM_VERSION << "\n";
    }
  });
}

}  // namespace fulcrum::cli
