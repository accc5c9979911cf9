#include "cli/cli.h"

#include <iostream>
#include <sstream>

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "cli/commands.h"

namespace fulcrum::cli {

void ReportError(CliContext& ctx, const Status& status) {
  ctx.err << "fulcrum: error: " << status.message() << "\n";
  ctx.exit_code = status.ExitCode();
}

void PrintJson(CliContext& ctx, const nlohmann::json& value) { ctx.out << value.dump(2) << "\n"; }

namespace {

constexpr const char* kDescription =
    "fulcrum — choose, watch and keep alive the GPU servers you rent.\n\n"
    "  Choose:   plan, fit, estimate, offers, gpus, providers, spot, catalog\n"
    "  Watch:    agent, query\n"
    "  Survive:  run, submit, status, cost\n"
    "  Validate: bench, doctor\n\n"
    "Every command prints a table, or JSON with --json. Exit codes: 0 ok, 2 bad usage or\n"
    "input, 1 runtime failure. `fulcrum help COMMAND` (or COMMAND --help) explains one command.";

}  // namespace

int RunCli(int argc, char** argv) { return RunCli(argc, argv, std::cout, std::cerr); }

int RunCli(int argc, char** argv, std::ostream& out, std::ostream& err) {
  CliContext ctx{out, err, "", 0};
  CLI::App app(kDescription, "fulcrum");
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

  for (const CommandEntry& entry : CommandTable()) entry.add(app, ctx);

  auto* help = app.add_subcommand("help", "Show the help of a command: fulcrum help COMMAND");
  std::vector<std::string> help_topic;
  help->add_option("command", help_topic, "Command (and subcommand) to explain");
  help->callback([&] {
    CLI::App* target = &app;
    for (const auto& name : help_topic) {
      CLI::App* sub = nullptr;
      try {
        sub = target->get_subcommand(name);
      } catch (const CLI::OptionNotFound&) {
        sub = nullptr;
      }
      if (sub == nullptr) {
        ctx.err << "fulcrum: error: no command '" << name << "'; see fulcrum --help\n";
        ctx.exit_code = 2;
        return;
      }
      target = sub;
    }
    ctx.out << target->help();
  });

  spdlog::set_level(spdlog::level::warn);
  spdlog::default_logger()->sinks().clear();
  spdlog::default_logger()->sinks().push_back(std::make_shared<spdlog::sinks::stderr_sink_mt>());
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    // Help of the deepest subcommand that was named.
    CLI::App* target = &app;
    while (true) {
      auto subs = target->get_subcommands();
      if (subs.empty()) break;
      target = subs.front();
    }
    out << target->help();
    return 0;
  } catch (const CLI::CallForAllHelp&) {
    out << app.help("", CLI::AppFormatMode::All);
    return 0;
  } catch (const CLI::CallForVersion& e) {
    out << e.what() << "\n";
    return 0;
  } catch (const CLI::ParseError& e) {
    // Name an unknown command rather than CLI11's generic "A subcommand is required".
    for (int i = 1; i < argc; ++i) {
      std::string arg = argv[i];
      if (arg == "--catalog") {
        ++i;
        continue;
      }
      if (arg.empty() || arg[0] == '-') continue;
      bool known = false;
      for (const CLI::App* sub : app.get_subcommands({})) known = known || sub->get_name() == arg;
      if (!known) {
        err << "fulcrum: error: unknown command '" << arg
            << "'\nRun fulcrum --help for the commands.\n";
        return 2;
      }
      break;
    }
    err << "fulcrum: error: " << e.what() << "\n";
    err << "Run with --help for usage.\n";
    return 2;
  } catch (const std::exception& e) {
    // The edge: a bug or an unexpected library failure; never crash without a message.
    err << "fulcrum: internal error: " << e.what() << "\n";
    return 1;
  }
  return ctx.exit_code;
}

}  // namespace fulcrum::cli
