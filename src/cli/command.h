// The contract between the CLI's command table and each subcommand: a subcommand file
// (cmd_<name>.cc) defines one Register<Name>(CLI::App& root, CliContext& ctx) that adds its
// subcommand, its options and a callback; the callback stores the process exit code in
// ctx.exit_code (0 ok, 2 usage/input error, 1 runtime failure). Output goes to ctx.out / ctx.err,
// never to std::cout directly, so end-to-end tests and embedding see the same bytes.
#pragma once

#include <iosfwd>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "core/status.h"

namespace CLI {
class App;
}

namespace fulcrum::cli {

struct CliContext {
  std::ostream& out;
  std::ostream& err;
  std::string catalog_dir;  // global --catalog DIR ("" = default resolution, see core/paths.h)
  int exit_code = 0;
};

using RegisterFn = void (*)(CLI::App& root, CliContext& ctx);

struct CommandEntry {
  const char* name;
  RegisterFn add;
};

// Prints "fulcrum: error: <message>" to ctx.err and sets ctx.exit_code from the status.
void ReportError(CliContext& ctx, const Status& status);

// Writes `value` pretty-printed (2-space indent) and a newline to ctx.out.
void PrintJson(CliContext& ctx, const nlohmann::json& value);

}  // namespace fulcrum::cli
