#include "cli/command_tree.h"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "cli/commands.h"

namespace fulcrum::cli {
namespace {

OptionInfo DescribeOption(const CLI::Option& opt) {
  OptionInfo info;
  info.help = opt.get_description();
  info.positional = opt.nonpositional() == false;
  if (info.positional) {
    info.names.push_back(opt.get_name());
  } else {
    for (const std::string& l : opt.get_lnames()) info.names.push_back("--" + l);
    for (const std::string& s : opt.get_snames()) info.names.push_back("-" + s);
  }
  if (opt.get_items_expected_max() > 0) {
    info.value_name = opt.get_type_name();
    if (info.value_name.empty()) info.value_name = "VALUE";
  }
  return info;
}

void AddOptions(const CLI::App& app, std::vector<OptionInfo>& out) {
  for (const CLI::Option* opt : app.get_options()) out.push_back(DescribeOption(*opt));
  // Option groups (`bench`'s --quick/--standard/--long) are nameless sub-apps.
  for (const CLI::App* sub : app.get_subcommands({})) {
    if (sub->get_name().empty()) AddOptions(*sub, out);
  }
}

CommandInfo DescribeCommand(const CLI::App& app) {
  CommandInfo info;
  info.name = app.get_name();
  info.help = app.get_description();
  info.footer = app.get_footer();
  AddOptions(app, info.options);
  for (const CLI::App* sub : app.get_subcommands({})) {
    if (sub->get_name().empty() || sub->get_group().empty()) continue;  // group or hidden
    info.subcommands.push_back(DescribeCommand(*sub));
  }
  return info;
}

nlohmann::json OptionsToJson(const std::vector<OptionInfo>& options) {
  nlohmann::json list = nlohmann::json::array();
  for (const OptionInfo& o : options) {
    list.push_back(nlohmann::json{
        {"names", o.names},
        {"value_name", o.value_name.empty() ? nlohmann::json() : nlohmann::json(o.value_name)},
        {"help", o.help},
        {"positional", o.positional}});
  }
  return list;
}

nlohmann::json CommandToJson(const CommandInfo& c) {
  nlohmann::json subs = nlohmann::json::array();
  for (const CommandInfo& s : c.subcommands) subs.push_back(CommandToJson(s));
  return {{"name", c.name},     {"group", c.group},
          {"help", c.help},     {"description", c.description},
          {"footer", c.footer}, {"options", OptionsToJson(c.options)},
          {"subcommands", subs}};
}

}  // namespace

CliInfo DescribeCli(const CLI::App& root) {
  CliInfo info;
  for (const CLI::Option* opt : root.get_options())
    info.global_options.push_back(DescribeOption(*opt));
  for (const CommandEntry& row : CommandTable()) {
    const CLI::App* app = root.get_subcommand(row.name);
    CommandInfo command = DescribeCommand(*app);
    command.group = row.group;
    command.description = command.help == row.help ? "" : command.help;
    command.help = row.help;
    info.commands.push_back(std::move(command));
  }
  return info;
}

nlohmann::json CliInfoToJson(const CliInfo& info) {
  nlohmann::json commands = nlohmann::json::array();
  for (const CommandInfo& c : info.commands) commands.push_back(CommandToJson(c));
  return {{"global_options", OptionsToJson(info.global_options)}, {"commands", commands}};
}

}  // namespace fulcrum::cli
