#include "support/json_contract.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "support/sanitizer.h"

namespace fulcrum::testing {
namespace {

namespace fs = std::filesystem;

constexpr const char* kPython = "/usr/bin/python3";  // Debian's, with python3-jsonschema

bool HasJsonSchemaModule() {
  static const bool has = [] {
    RunOptions options;
    options.timeout_seconds = 30;
    return RunProgram(kPython, {"-c", "import jsonschema"}, options).exit_code == 0;
  }();
  return has;
}

void SaveSample(const std::string& name, const std::string& text) {
  const char* dir = std::getenv("FULCRUM_JSON_SAMPLES");
  if (dir == nullptr || *dir == '\0') return;
  static std::atomic<int> counter{0};
  std::ofstream(std::string(dir) + "/" + name + "-" + std::to_string(getpid()) + "-" +
                std::to_string(counter++) + ".json")
      << text;
}

void Check(const std::string& name, const std::string& text, const std::vector<std::string>& args) {
  SaveSample(name, text);
  if (kSanitized || !HasJsonSchemaModule()) return;
  RunOptions options;
  options.stdin_text = text;
  options.timeout_seconds = 60;
  RunOutput check = RunProgram(kPython,
                               {SourcePath("scripts/check-json-schema.py"), "--schemas",
                                SourcePath("docs/schemas"), "--command", name},
                               options);
  if (check.exit_code == 0) return;
  std::string line = "fulcrum";
  for (const std::string& a : args) line += " " + a;
  ADD_FAILURE() << "the output of `" << line << "` breaks its contract docs/schemas/" << name
                << ".json:\n"
                << check.err << check.out << "\n(output: " << text.substr(0, 2000) << ")";
}

}  // namespace

std::string JsonContractName(const std::vector<std::string>& args) {
  bool json = false;
  for (const std::string& a : args) {
    if (a == "--") break;
    if (a == "--json") json = true;
  }
  auto is_word = [](const std::string& a) {
    return !a.empty() && a[0] != '-' &&
           a.find_first_not_of("abcdefghijklmnopqrstuvwxyz-") == std::string::npos;
  };
  // The global options come before the command: --catalog DIR, --verbose.
  size_t at = 0;
  while (at < args.size() && (args[at] == "--catalog" || args[at].rfind("--catalog=", 0) == 0 ||
                              args[at] == "--verbose" || args[at] == "-v")) {
    at += args[at] == "--catalog" ? 2 : 1;
  }
  if (!json || at >= args.size() || !is_word(args[at])) return "";
  const std::string& command = args[at];
  if (at + 1 < args.size() && is_word(args[at + 1]) &&
      fs::exists(SourcePath("docs/schemas/" + command + "-" + args[at + 1] + ".json")))
    return command + "-" + args[at + 1];
  return command;
}

void CheckJsonContract(const std::vector<std::string>& args, const RunOutput& output) {
  const std::string name = JsonContractName(args);
  if (name.empty() || output.timed_out) return;
  if (nlohmann::json::accept(output.out) && !output.out.empty()) Check(name, output.out, args);
  const size_t end = output.err.find_last_not_of('\n');
  if (end == std::string::npos) return;
  const size_t begin = output.err.rfind('\n', end);
  const std::string last =
      output.err.substr(begin == std::string::npos ? 0 : begin + 1,
                        end + 1 - (begin == std::string::npos ? 0 : begin + 1));
  if (last.rfind("{\"error\"", 0) == 0 && nlohmann::json::accept(last)) Check("error", last, args);
}

}  // namespace fulcrum::testing
