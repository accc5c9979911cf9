// End-to-end checks of the CLI shell itself: version, help, usage errors and their exit codes;
// the conventions every row of the command table must keep (--json, an example in --help, a
// README section, a man page), errors as JSON, and the shell completion scripts.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "support/run_binary.h"

namespace fulcrum::testing {
namespace {

// The command tree as the binary builds it from the command table (`fulcrum __table`).
const nlohmann::json& Table() {
  static const nlohmann::json table = [] {
    RunOutput r = RunFulcrum({"__table"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return nlohmann::json::parse(r.out);
  }();
  return table;
}

std::set<std::string> OptionNames(const nlohmann::json& command) {
  std::set<std::string> names;
  for (const auto& option : command["options"]) {
    if (option["positional"].get<bool>()) continue;
    for (const auto& n : option["names"]) names.insert(n.get<std::string>());
  }
  return names;
}

bool HasProgram(const std::string& name) {
  return RunProgram("sh", {"-c", "command -v " + name}).exit_code == 0;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string WriteTempFile(const std::string& prefix, const std::string& name,
                          const std::string& text) {
  std::string path = MakeTempDir(prefix) + "/" + name;
  std::ofstream(path) << text;
  return path;
}

// The example command lines of a --help text: the lines under "Examples:" that start with
// "fulcrum", continuation lines joined, comments dropped, split at && and |.
std::vector<std::vector<std::string>> ExampleCommands(const std::string& help) {
  std::vector<std::vector<std::string>> commands;
  size_t at = help.find("Examples:");
  if (at == std::string::npos) return commands;
  std::istringstream in(help.substr(at));
  std::string line, joined;
  std::vector<std::string> lines;
  while (std::getline(in, line)) {
    if (!joined.empty()) {
      joined += " " + line;
    } else {
      joined = line;
    }
    if (!joined.empty() && joined.back() == '\\') {
      joined.pop_back();
      continue;
    }
    lines.push_back(joined);
    joined.clear();
  }
  for (std::string l : lines) {
    l = l.substr(0, l.find(" #"));
    std::istringstream words(l);
    std::vector<std::string> current;
    std::string w;
    bool first = true;
    while (words >> w) {
      if (first && w != "fulcrum") break;
      first = false;
      if (w == "&&" || w == "|") {
        if (!current.empty()) commands.push_back(current);
        current.clear();
        first = true;
        continue;
      }
      current.push_back(w);
    }
    if (!current.empty()) commands.push_back(current);
  }
  return commands;
}

TEST(CliTest, VersionFlagPrintsVersion) {
  RunOutput r = RunFulcrum({"--version"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, std::string("fulcrum ") + FULCRUM_VERSION + "\n");
}

TEST(CliTest, VersionJsonParses) {
  RunOutput r = RunFulcrum({"version", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["version"], FULCRUM_VERSION);
}

TEST(CliTest, NoCommandIsUsageError) {
  RunOutput r = RunFulcrum({});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("error"), std::string::npos);
}

TEST(CliTest, UnknownCommandIsUsageError) {
  RunOutput r = RunFulcrum({"no-such-command"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("no-such-command"), std::string::npos) << r.err;
}

TEST(CliTest, HelpListsCommands) {
  RunOutput r = RunFulcrum({"--help"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("version"), std::string::npos);
}

TEST(CliTest, HelpCommandExplainsOneCommand) {
  RunOutput r = RunFulcrum({"help", "version"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("--json"), std::string::npos) << r.out;
}

TEST(CliTest, HelpForUnknownCommandFails) {
  RunOutput r = RunFulcrum({"help", "bogus"});
  EXPECT_EQ(r.exit_code, 2);
}

// Issue 30: `fulcrum slurm x --help` printed the global help and exited 0 (before `slurm` was
// a command); an unknown command with --help is a usage error naming the nearest command, and a
// known one still gets its help.
TEST(CliTest, UnknownCommandWithHelpIsAUsageErrorNamingTheNearest) {
  RunOutput r = RunFulcrum({"slurmctl", "x", "--help"});
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.err.find("unknown command 'slurmctl'"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  RunOutput near = RunFulcrum({"--json", "plann", "--help"});
  EXPECT_EQ(near.exit_code, 2);
  EXPECT_NE(near.err.find("\"nearest\":[\"plan\""), std::string::npos) << near.err;
  RunOutput known = RunFulcrum({"plan", "--help"});
  EXPECT_EQ(known.exit_code, 0) << known.err;
  EXPECT_NE(known.out.find("--batch-tolerance"), std::string::npos);
  // The same one level down, now that slurm is a command: its unknown subcommand.
  RunOutput sub = RunFulcrum({"--json", "slurm", "confg", "--help"});
  EXPECT_EQ(sub.exit_code, 2) << sub.out;
  EXPECT_NE(sub.err.find("unknown command 'slurm confg'; did you mean conf?"), std::string::npos)
      << sub.err;
  EXPECT_NE(sub.err.find("\"nearest\":[\"conf\"]"), std::string::npos) << sub.err;
  // A word after a command's options is not taken for a subcommand; a known one gets its help.
  EXPECT_EQ(RunFulcrum({"spot", "--work", "48h", "--help"}).exit_code, 0);
  EXPECT_EQ(RunFulcrum({"slurm", "conf", "--help"}).exit_code, 0);
}

TEST(CliTest, TopLevelHelpListsTheCommandTableByGroup) {
  RunOutput r = RunFulcrum({"--help"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  size_t last = 0;
  for (const auto& c : Table()["commands"]) {
    std::string group = c["group"].get<std::string>() + ":\n";
    EXPECT_NE(r.out.find(group), std::string::npos) << group;
    std::string name = c["name"], help = c["help"];
    size_t at = r.out.find("  " + name + " ");
    ASSERT_NE(at, std::string::npos) << name;
    EXPECT_GT(at, last) << name << " is out of the table's order";
    last = at;
    size_t eol = r.out.find('\n', at);
    EXPECT_NE(r.out.substr(at, eol - at).find(help), std::string::npos) << name;
  }
}

TEST(CliTest, EveryCommandHasJsonExceptCompletion) {
  for (const auto& c : Table()["commands"]) {
    if (c["name"] == "completion") {
      EXPECT_EQ(OptionNames(c).count("--json"), 0u);
      continue;
    }
    if (OptionNames(c).count("--json") != 0) continue;
    // A command that only groups subcommands (catalog import / validate): each has --json.
    ASSERT_FALSE(c["subcommands"].empty()) << c["name"] << " has no --json";
    for (const auto& sub : c["subcommands"]) {
      EXPECT_EQ(OptionNames(sub).count("--json"), 1u) << c["name"] << " " << sub["name"];
    }
  }
}

TEST(CliTest, EveryCommandHasARealExampleInItsHelp) {
  std::set<std::string> global = OptionNames(
      Table()["global_options"].is_array() ? nlohmann::json{{"options", Table()["global_options"]}}
                                           : nlohmann::json());
  for (const auto& c : Table()["commands"]) {
    const std::string name = c["name"];
    RunOutput r = RunFulcrum({name, "--help"});
    ASSERT_EQ(r.exit_code, 0) << name << ": " << r.err;
    auto examples = ExampleCommands(r.out);
    ASSERT_FALSE(examples.empty()) << name << " --help has no Examples: fulcrum " << name;
    for (const auto& words : examples) {
      // fulcrum [--catalog DIR] NAME [SUBCOMMAND] options... [-- the supervised command]
      size_t i = 1;
      while (i < words.size() && global.count(words[i]) != 0) i += words[i] == "--catalog" ? 2 : 1;
      ASSERT_LT(i, words.size());
      EXPECT_EQ(words[i], name) << "an example in fulcrum " << name << " --help runs " << words[i];
      const nlohmann::json* command = &c;
      if (i + 1 < words.size()) {
        for (const auto& sub : c["subcommands"]) {
          if (sub["name"] == words[i + 1]) command = &sub;
        }
      }
      std::set<std::string> options = OptionNames(*command);
      for (size_t k = i + 1; k < words.size() && words[k] != "--"; ++k) {
        std::string w = words[k].substr(0, words[k].find('='));
        if (w.size() < 2 || w[0] != '-' || std::isdigit(static_cast<unsigned char>(w[1]))) continue;
        EXPECT_TRUE(options.count(w) != 0 || global.count(w) != 0)
            << "fulcrum " << name << " --help: the example uses " << w << ", not an option";
      }
    }
  }
}

// Every command has its section in docs/COMMANDS.md (whose options tables the ctest commands_doc
// checks against the table) and a row in the README's command table linking to it.
TEST(CliTest, EveryCommandHasACommandsSectionAndAReadmeRow) {
  const std::string commands = ReadFile(SourcePath("docs/COMMANDS.md"));
  const std::string readme = ReadFile(SourcePath("README.md"));
  for (const auto& c : Table()["commands"]) {
    const std::string name = c["name"];
    const std::string heading = "\n## fulcrum " + name + "\n";
    EXPECT_NE(commands.find(heading), std::string::npos)
        << "docs/COMMANDS.md has no section " << heading.substr(1);
    EXPECT_NE(readme.find("[`" + name + "`](docs/COMMANDS.md#fulcrum-" + name + ")"),
              std::string::npos)
        << "README's command table has no row for " << name;
  }
}

TEST(CliTest, ManPagePerCommandRenders) {
  const std::string dir = std::string(FULCRUM_BUILD_DIR) + "/man";
  ASSERT_TRUE(std::filesystem::exists(dir + "/fulcrum.1")) << "build the fulcrum_man target";
  bool groff = HasProgram("groff");
  for (const auto& c : Table()["commands"]) {
    const std::string name = c["name"];
    const std::string page = dir + "/fulcrum-" + name + ".1";
    std::string roff = ReadFile(page);
    ASSERT_FALSE(roff.empty()) << page;
    EXPECT_EQ(roff.rfind(".TH FULCRUM\\-", 0), 0u) << page;
    for (const char* section :
         {".SH NAME\n", ".SH SYNOPSIS\n", ".SH OPTIONS\n", ".SH EXAMPLES\n"}) {
      EXPECT_NE(roff.find(section), std::string::npos) << page << " lacks " << section;
    }
    for (char ch : roff) EXPECT_LT(static_cast<unsigned char>(ch), 0x80) << page << ": not ASCII";
    std::string roff_name;  // roff escapes every '-' (serve-estimate: serve\-estimate)
    for (char ch : name) roff_name += ch == '-' ? std::string("\\-") : std::string(1, ch);
    EXPECT_NE(ReadFile(dir + "/fulcrum.1").find("fulcrum\\-" + roff_name + " (1)"),
              std::string::npos);
    if (!groff) continue;
    RunOutput r = RunProgram("groff", {"-man", "-Tutf8", "-ww", "-P", "-cbou", page});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.err, "") << page;  // no roff warnings
    std::string rendered;          // whitespace collapsed: groff fills and justifies
    for (char ch : r.out) {
      bool space = std::isspace(static_cast<unsigned char>(ch)) != 0;
      if (!space || (!rendered.empty() && rendered.back() != ' ')) rendered += space ? ' ' : ch;
    }
    EXPECT_NE(rendered.find("NAME fulcrum-" + name + " - " + c["help"].get<std::string>()),
              std::string::npos)
        << rendered.substr(0, 400);
    for (const std::string& option : OptionNames(c)) {
      EXPECT_NE(rendered.find(option), std::string::npos) << page << " lacks " << option;
    }
  }
}

// --- errors as JSON ---------------------------------------------------------------------------

// The {"error": {...}} object of stderr, with every field of the contract present.
nlohmann::json ErrorOf(const RunOutput& r) {
  auto doc = nlohmann::json::parse(r.err, nullptr, false);
  EXPECT_FALSE(doc.is_discarded()) << "stderr is not JSON: " << r.err;
  if (doc.is_discarded()) return {};
  EXPECT_TRUE(doc.contains("error")) << r.err;
  const auto& e = doc["error"];
  for (const char* key : {"message", "file", "line", "field", "expected", "found", "nearest"}) {
    EXPECT_TRUE(e.contains(key)) << key << " missing in " << r.err;
  }
  EXPECT_TRUE(e["message"].is_string());
  EXPECT_TRUE(e["nearest"].is_array());
  return e;
}

TEST(CliJsonErrorTest, UnknownFlagIsJsonWithJson) {
  RunOutput r = RunFulcrum({"plan", "--no-such-flag", "--json"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  auto e = ErrorOf(r);
  EXPECT_NE(e["message"].get<std::string>().find("--no-such-flag"), std::string::npos);
  EXPECT_EQ(e["found"], "--no-such-flag");
}

TEST(CliJsonErrorTest, BadValueNamesTheOption) {
  RunOutput r = RunFulcrum({"offers", "--min-gpus", "0", "--json"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(ErrorOf(r)["field"], "--min-gpus");
}

TEST(CliJsonErrorTest, MissingArgument) {
  RunOutput missing_option = RunFulcrum({"query", "--json"});
  EXPECT_EQ(missing_option.exit_code, 2);
  EXPECT_EQ(ErrorOf(missing_option)["field"], "--metric");
  RunOutput missing_value = RunFulcrum({"plan", "--json", "--model"});
  EXPECT_EQ(missing_value.exit_code, 2);
  EXPECT_EQ(ErrorOf(missing_value)["field"], "--model");
}

TEST(CliJsonErrorTest, UnknownCommandNamesTheCommands) {
  RunOutput r = RunFulcrum({"--json", "plna"});
  EXPECT_EQ(r.exit_code, 2);
  auto e = ErrorOf(r);
  EXPECT_EQ(e["field"], "command");
  EXPECT_EQ(e["found"], "plna");
  for (const auto& c : Table()["commands"]) {
    EXPECT_NE(e["expected"].get<std::string>().find(c["name"].get<std::string>()),
              std::string::npos);
  }
}

TEST(CliJsonErrorTest, InputErrorOfACommandKeepsItsMessageAndExitCode) {
  std::string dir = MakeTempDir("cli_json_error");
  RunOutput text = RunFulcrum({"--catalog", dir, "gpus"});
  RunOutput json = RunFulcrum({"--catalog", dir, "gpus", "--json"});
  ASSERT_EQ(text.exit_code, 2) << text.err;
  EXPECT_EQ(json.exit_code, text.exit_code);
  EXPECT_EQ(json.out, "");
  auto e = ErrorOf(json);
  EXPECT_EQ("fulcrum: error: " + e["message"].get<std::string>() + "\n", text.err);
}

TEST(CliJsonErrorTest, RuntimeErrorKeepsExitCodeOne) {
  // agent.db under a path that cannot exist: the store refuses, a runtime (or input) failure.
  RunOutput text =
      RunFulcrum({"query", "--metric", "gpu_power_watts", "--data-dir", "/dev/null/x"});
  RunOutput json =
      RunFulcrum({"query", "--metric", "gpu_power_watts", "--data-dir", "/dev/null/x", "--json"});
  ASSERT_NE(text.exit_code, 0);
  EXPECT_EQ(json.exit_code, text.exit_code);
  ErrorOf(json);
}

TEST(CliJsonErrorTest, WithoutJsonErrorsStayText) {
  RunOutput r = RunFulcrum({"plan", "--no-such-flag"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err.rfind("fulcrum: error: ", 0), 0u) << r.err;
}

TEST(CliJsonErrorTest, JsonAfterDoubleDashBelongsToTheSupervisedCommand) {
  RunOutput r = RunFulcrum({"run", "--no-such-flag", "--", "echo", "--json"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err.rfind("fulcrum: error: ", 0), 0u) << r.err;
}

// --- shell completion -------------------------------------------------------------------------

// COMPREPLY of the generated bash completion for the words of a command line (the last word is
// the one being completed).
std::set<std::string> BashComplete(const std::string& script,
                                   const std::vector<std::string>& words) {
  std::string array;
  for (const std::string& w : words) array += " '" + w + "'";
  std::string program = "source '" + script + "'\nCOMP_WORDS=(" + array +
                        ")\nCOMP_CWORD=" + std::to_string(words.size() - 1) +
                        "\n_fulcrum\nprintf '%s\\n' \"${COMPREPLY[@]}\"\n";
  RunOutput r = RunProgram("bash", {"-c", program});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::set<std::string> out;
  std::istringstream in(r.out);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty()) out.insert(line);
  }
  return out;
}

const nlohmann::json& CommandNamed(const std::string& name) {
  for (const auto& c : Table()["commands"]) {
    if (c["name"] == name) return c;
  }
  static const nlohmann::json none;
  ADD_FAILURE() << "no command " << name;
  return none;
}

TEST(CliCompletionTest, BashScriptIsValidAndCompletesCommandsAndOptions) {
  RunOutput gen = RunFulcrum({"completion", "bash"});
  ASSERT_EQ(gen.exit_code, 0) << gen.err;
  std::string script = WriteTempFile("cli_completion", "fulcrum.bash", gen.out);
  RunOutput syntax = RunProgram("bash", {"-n", script});
  EXPECT_EQ(syntax.exit_code, 0) << syntax.err;

  EXPECT_EQ(BashComplete(script, {"fulcrum", "pl"}), std::set<std::string>{"plan"});
  EXPECT_EQ(BashComplete(script, {"fulcrum", "--catalog", "dir", "gp"}),
            std::set<std::string>{"gpus"});
  std::set<std::string> all;
  for (const auto& c : Table()["commands"]) all.insert(c["name"].get<std::string>());
  std::set<std::string> first = BashComplete(script, {"fulcrum", ""});
  for (const std::string& name : all) EXPECT_EQ(first.count(name), 1u) << name;

  // `fulcrum plan --de<TAB>`: exactly plan's options with that prefix.
  for (const std::string prefix : {"--de", "--m", "--j"}) {
    std::set<std::string> expected;
    for (const std::string& o : OptionNames(CommandNamed("plan"))) {
      if (o.rfind(prefix, 0) == 0) expected.insert(o);
    }
    ASSERT_FALSE(expected.empty()) << prefix;
    EXPECT_EQ(BashComplete(script, {"fulcrum", "plan", prefix}), expected) << prefix;
  }
  // Nested subcommands and their own options.
  EXPECT_EQ(BashComplete(script, {"fulcrum", "spot", "int"}), std::set<std::string>{"interval"});
  const nlohmann::json& spot = CommandNamed("spot");
  for (const auto& sub : spot["subcommands"]) {
    if (sub["name"] != "interval") continue;
    std::set<std::string> expected;
    for (const std::string& o : OptionNames(sub)) {
      if (o.rfind("--", 0) == 0) expected.insert(o);
    }
    EXPECT_EQ(BashComplete(script, {"fulcrum", "spot", "interval", "--"}), expected);
  }
}

TEST(CliCompletionTest, ZshAndFishScriptsNameEveryCommand) {
  for (const std::string shell : {"zsh", "fish"}) {
    RunOutput gen = RunFulcrum({"completion", shell});
    ASSERT_EQ(gen.exit_code, 0) << gen.err;
    for (const auto& c : Table()["commands"]) {
      EXPECT_NE(gen.out.find(c["name"].get<std::string>()), std::string::npos) << shell;
    }
    for (const std::string& o : OptionNames(CommandNamed("plan"))) {
      std::string spelled = shell == "fish" && o.rfind("--", 0) == 0 ? "-l " + o.substr(2) : o;
      EXPECT_NE(gen.out.find(spelled), std::string::npos) << shell << " lacks " << o;
    }
    if (!HasProgram(shell)) continue;  // syntax checked where the shell is installed
    std::string script = WriteTempFile("cli_completion", "fulcrum." + shell, gen.out);
    RunOutput syntax = RunProgram(shell, {"-n", script});
    EXPECT_EQ(syntax.exit_code, 0) << shell << ": " << syntax.err;
    if (shell != "fish") continue;
    // fish completes a command line on request: `complete -C LINE` prints "word<TAB>help".
    RunOutput done = RunProgram(
        "fish", {"-c", "source '" + script +
                           "'; complete -C 'fulcrum pl'; complete -C 'fulcrum plan --dead'"});
    EXPECT_EQ(done.exit_code, 0) << done.err;
    EXPECT_NE(done.out.find("plan\t"), std::string::npos) << done.out;
    EXPECT_NE(done.out.find("--deadline\t"), std::string::npos) << done.out;
  }
}

TEST(CliCompletionTest, UnknownShellIsUsageError) {
  RunOutput r = RunFulcrum({"completion", "tcsh"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("tcsh"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace fulcrum::testing
