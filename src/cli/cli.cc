#include "cli/cli.h"

#include <iostream>
#include <sstream>

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "cli/command_tree.h"
#include "cli/commands.h"
#include "cli/manpage.h"
#include "core/input_error.h"

namespace fulcrum::cli {
namespace {

nlohmann::json OrNull(const std::string& s) {
  return s.empty() ? nlohmann::json() : nlohmann::json(s);
}

// The detail of an error in the command word itself (`fulcrum bogus`, `fulcrum help bogus`),
// with the nearest command names.
ErrorDetail CommandDetail(const std::string& found) {
  ErrorDetail d;
  d.field = "command";
  std::string commands;
  std::vector<std::string> names;
  for (const CommandEntry& row : CommandTable()) {
    commands += std::string(", ") + row.name;
    names.emplace_back(row.name);
  }
  d.expected = "one of" + commands.substr(1);
  d.found = found;
  d.nearest = NearestNames(found, names);
  return d;
}

// "unknown command 'x'; did you mean plan?"
std::string UnknownCommandMessage(const std::string& word, const ErrorDetail& detail) {
  std::string message = "unknown command '" + word + "'";
  if (!detail.nearest.empty()) message += "; did you mean " + JoinNames(detail.nearest) + "?";
  return message;
}

// The first command word of argv that names no command of its level (`fulcrum slurmx`, or the
// subcommand of `fulcrum slurm x`), with that level's names; word "" when every word names one.
struct UnknownWord {
  std::string word;
  std::string parent;  // "" at the top level, else the command it follows ("slurm")
  std::vector<std::string> names;
};
UnknownWord UnknownCommandWord(CLI::App& app, int argc, char** argv) {
  int i = 1;
  while (i < argc && argv[i][0] == '-') i += std::string(argv[i]) == "--catalog" ? 2 : 1;
  CLI::App* level = &app;
  UnknownWord unknown;
  // The command word, then (for a command with subcommands) the word right after it: a later
  // word may be an option's value (`spot --work 48h`).
  for (; i < argc; ++i) {
    const std::string arg = argv[i];
    const std::vector<CLI::App*> subs = level->get_subcommands({});
    if (arg.empty() || arg[0] == '-' || (level != &app && subs.empty())) return {};
    CLI::App* next = nullptr;
    for (CLI::App* sub : subs) {
      if (level != &app) unknown.names.push_back(sub->get_name());
      if (sub->get_name() == arg) next = sub;
    }
    if (next == nullptr) {
      unknown.word = arg;
      return unknown;
    }
    unknown.parent += (unknown.parent.empty() ? "" : " ") + arg;
    unknown.names.clear();
    level = next;
  }
  return {};
}

// {"error": {...}} with every field of ErrorDetail: null / [] where `detail` does not know it.
nlohmann::json ErrorJson(const std::string& message, const ErrorDetail* detail) {
  ErrorDetail none;
  const ErrorDetail& d = detail != nullptr ? *detail : none;
  return WithSchemaVersion({{"error",
                             {{"message", message},
                              {"file", OrNull(d.file)},
                              {"line", d.line ? nlohmann::json(*d.line) : nlohmann::json()},
                              {"field", OrNull(d.field)},
                              {"expected", OrNull(d.expected)},
                              {"found", OrNull(d.found)},
                              {"nearest", d.nearest}}}});
}

// Prints an error found by the shell itself (parse errors, unknown commands): one JSON line with
// --json, else "fulcrum: error: <message>" and `hint` on its own line.
void PrintShellError(CliContext& ctx, const std::string& message, const ErrorDetail& detail,
                     const std::string& hint) {
  if (ctx.json_errors) {
    ctx.err << ErrorJson(message, &detail).dump() << "\n";
    return;
  }
  ctx.err << "fulcrum: error: " << message << "\n";
  if (!hint.empty()) ctx.err << hint << "\n";
}

// The top-level help text: what fulcrum is, then the command table by group.
std::string Description() {
  std::ostringstream s;
  s << "fulcrum — choose, watch and keep alive the GPU servers you rent.\n";
  size_t width = 0;
  for (const CommandEntry& row : CommandTable())
    width = std::max(width, std::string(row.name).size());
  std::string group;
  for (const CommandEntry& row : CommandTable()) {
    if (row.group != group) {
      group = row.group;
      s << "\n" << group << ":\n";
    }
    s << "  " << row.name << std::string(width + 2 - std::string(row.name).size(), ' ') << row.help
      << "\n";
  }
  s << "\nEvery command prints a table, or JSON with --json (errors too, on stderr). Exit codes: "
       "0 ok,\n2 bad usage or input, 1 runtime failure, 3 `doctor`'s compatibility verdict is "
       "fail.\n`fulcrum help COMMAND` (or COMMAND --help) explains one command; `man "
       "fulcrum-COMMAND` once\ninstalled.";
  return s.str();
}

// --json anywhere before a `--` (after it the words belong to a supervised command).
bool WantsJson(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--") return false;
    if (arg == "--json") return true;
  }
  return false;
}

// The deepest subcommand that was named on the command line.
CLI::App* DeepestSubcommand(CLI::App& app) {
  CLI::App* target = &app;
  while (true) {
    auto subs = target->get_subcommands();
    if (subs.empty()) return target;
    target = subs.front();
  }
}

void AddHelpCommand(CLI::App& app, CliContext& ctx, std::vector<std::string>& topic) {
  auto* help = app.add_subcommand("help", "Show the help of a command: fulcrum help COMMAND");
  help->add_option("command", topic, "Command (and subcommand) to explain");
  help->callback([&app, &ctx, &topic] {
    CLI::App* target = &app;
    for (const auto& name : topic) {
      CLI::App* sub = nullptr;
      try {
        sub = target->get_subcommand(name);
      } catch (const CLI::OptionNotFound&) {
        sub = nullptr;
      }
      if (sub == nullptr) {
        PrintShellError(ctx, "no command '" + name + "'; see fulcrum --help", CommandDetail(name),
                        "");
        ctx.exit_code = 2;
        return;
      }
      target = sub;
    }
    ctx.out << target->help();
  });
}

// Hidden commands of the build and the tests: `__table` prints the command tree as JSON,
// `__man DIR` writes the man pages.
void AddHiddenCommands(CLI::App& app, CliContext& ctx, std::string& man_dir) {
  auto* table = app.add_subcommand("__table", "Print the command tree as JSON")->group("");
  table->callback([&app, &ctx] { PrintJson(ctx, CliInfoToJson(DescribeCli(app))); });
  auto* man = app.add_subcommand("__man", "Write the man pages into DIR")->group("");
  man->add_option("dir", man_dir)->required();
  man->callback([&app, &ctx, &man_dir] {
    Status s = WriteManPages(DescribeCli(app), FULCRUM_VERSION, man_dir);
    if (!s.ok()) ReportError(ctx, s);
  });
}

// Reports an unknown command word (exit 2): the top level's commands, or the subcommands of the
// command it follows (`fulcrum slurm confg`: "unknown command 'slurm confg'; did you mean conf?").
int ReportUnknownCommand(CliContext& ctx, const UnknownWord& unknown) {
  ErrorDetail detail = CommandDetail(unknown.word);
  if (!unknown.parent.empty()) {
    detail.expected = "one of " + JoinNames(unknown.names);
    detail.nearest = NearestNames(unknown.word, unknown.names);
  }
  const std::string path = (unknown.parent.empty() ? "" : unknown.parent + " ") + unknown.word;
  const std::string where = unknown.parent.empty() ? "fulcrum" : "fulcrum " + unknown.parent;
  PrintShellError(ctx, UnknownCommandMessage(path, detail), detail,
                  "Run " + where + " --help for the commands.");
  return 2;
}

// Exit code 2 for a CLI11 parse error, naming an unknown command rather than CLI11's generic
// "A subcommand is required".
int ReportParseError(CliContext& ctx, CLI::App& app, const CLI::ParseError& e, int argc,
                     char** argv) {
  if (const UnknownWord unknown = UnknownCommandWord(app, argc, argv); !unknown.word.empty()) {
    return ReportUnknownCommand(ctx, unknown);
  }
  ErrorDetail detail;
  std::string message = e.what();
  if (dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr) {
    // "The following argument(s) was/were not expected: --bogus x"
    if (size_t colon = message.rfind(": "); colon != std::string::npos) {
      detail.found = message.substr(colon + 2);
    }
  } else if (!message.empty() && message[0] == '-') {
    // CLI11 names the option first: "--min-gpus: Value 0 not in range ...", "--metric is required".
    detail.field = message.substr(0, message.find_first_of(": "));
  }
  PrintShellError(ctx, message, detail, "Run with --help for usage.");
  return 2;
}

}  // namespace

void ReportError(CliContext& ctx, const Status& status) {
  if (ctx.json_errors) {
    ctx.err << ErrorJson(status.message(), status.detail()).dump() << "\n";
  } else {
    ctx.err << "fulcrum: error: " << status.message() << "\n";
  }
  ctx.exit_code = status.ExitCode();
}

nlohmann::json WithSchemaVersion(nlohmann::json value) {
  if (value.is_object()) value["schema_version"] = kJsonSchemaVersion;
  return value;
}

void PrintJson(CliContext& ctx, const nlohmann::json& value) {
  ctx.out << WithSchemaVersion(value).dump(2) << "\n";
}

int RunCli(int argc, char** argv) {
  CliContext ctx{std::cout, std::cerr, "", 0, WantsJson(argc, argv)};
  CLI::App app(Description(), "fulcrum");
  app.set_version_flag("--version", std::string("fulcrum ") + FULCRUM_VERSION);
  app.add_option("--catalog", ctx.catalog_dir,
                 "Read the catalog (gpus.csv, offers.csv, providers.csv, models/) from DIR "
                 "instead of the shipped one")
      ->type_name("DIR");
  app.add_flag_callback(
      "-v,--verbose", [] { spdlog::set_level(spdlog::level::debug); },
      "Log debug messages to stderr");
  app.require_subcommand(1);
  app.fallthrough();

  // The table creates each subcommand; `fulcrum --help` lists them from Description(), so
  // CLI11's own list is hidden (group "", set after registration: nested subcommands such as
  // `spot interval` copy their parent's group when they are created).
  for (const CommandEntry& row : CommandTable()) {
    CLI::App* cmd = app.add_subcommand(row.name, row.help);
    row.add(cmd, ctx);
    cmd->group("");
  }
  std::vector<std::string> help_topic;
  AddHelpCommand(app, ctx, help_topic);
  std::string man_dir;
  AddHiddenCommands(app, ctx, man_dir);

  spdlog::set_level(spdlog::level::warn);
  spdlog::default_logger()->sinks().clear();
  spdlog::default_logger()->sinks().push_back(std::make_shared<spdlog::sinks::stderr_sink_mt>());
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    // `fulcrum slurm x --help`: an unknown command is an error, not the global help.
    if (const UnknownWord unknown = UnknownCommandWord(app, argc, argv); !unknown.word.empty()) {
      return ReportUnknownCommand(ctx, unknown);
    }
    ctx.out << DeepestSubcommand(app)->help();
    return 0;
  } catch (const CLI::CallForAllHelp&) {
    ctx.out << app.help("", CLI::AppFormatMode::All);
    return 0;
  } catch (const CLI::CallForVersion& e) {
    ctx.out << e.what() << "\n";
    return 0;
  } catch (const CLI::ParseError& e) {
    return ReportParseError(ctx, app, e, argc, argv);
  } catch (const std::exception& e) {
    // The edge: a bug or an unexpected library failure; never crash without a message.
    PrintShellError(ctx, std::string("internal error: ") + e.what(), ErrorDetail(), "");
    return 1;
  }
  return ctx.exit_code;
}

}  // namespace fulcrum::cli
