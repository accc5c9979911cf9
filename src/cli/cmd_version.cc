#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "cli/command.h"

namespace fulcrum::cli {

void RegisterVersion(CLI::App* cmd, CliContext& ctx) {
  cmd->footer("Examples:\n  fulcrum version\n  fulcrum version --json");
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
