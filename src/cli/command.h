// The contract between the CLI's command table (commands.cc) and each subcommand: the table
// creates the subcommand from its row (name, one-line help) and hands it to the row's register
// function, defined in cmd_<name>.cc, which adds the options, a longer description, an
// "Examples:" footer and a callback. The callback stores the process exit code in ctx.exit_code
// (0 ok, 2 usage/input error, 1 runtime failure). Output goes to ctx.out / ctx.err, never to
// std::cout directly, so end-to-end tests and embedding see the same bytes.
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
  // --json was on the command line (before any `--`): errors are printed as JSON on ctx.err.
  bool json_errors = false;
};

using RegisterFn = void (*)(CLI::App* cmd, CliContext& ctx);

// One row of the command table.
struct CommandEntry {
  const char* name;   // the subcommand as typed: `fulcrum <name>`
  const char* group;  // heading in `fulcrum --help`: Choose, Watch, Survive, Validate, Shell
  const char* help;   // one line: `fulcrum --help`, shell completion, the man page's NAME
  RegisterFn add;     // fills the subcommand the table created
};

// Prints the error to ctx.err and sets ctx.exit_code from the status: "fulcrum: error: <message>",
// or with --json {"error": {"message", "file", "line", "field", "expected", "found", "nearest"}}
// filled from status.detail() (null / [] where not known).
void ReportError(CliContext& ctx, const Status& status);

// The version of the --json contracts, docs/schemas/COMMAND.json: every object a command prints
// with --json (and every JSON error) carries it as "schema_version". Adding a field keeps it;
// renaming, removing or retyping one raises it.
inline constexpr int kJsonSchemaVersion = 1;

// `value` with "schema_version" added when it is an object (what PrintJson and files written for
// other commands to read, such as bench --output, carry).
nlohmann::json WithSchemaVersion(nlohmann::json value);

// Writes WithSchemaVersion(value) pretty-printed (2-space indent) and a newline to ctx.out.
void PrintJson(CliContext& ctx, const nlohmann::json& value);

}  // namespace fulcrum::cli
