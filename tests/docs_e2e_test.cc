// The documents that tell a newcomer where things are stay true: every repository path that
// docs/ARCHITECTURE.md names in backticks exists in the source tree.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "support/run_binary.h"

namespace {

using fulcrum::testing::SourcePath;

// Backticked spans that look like repository paths: start with a top-level folder of the tree.
std::vector<std::string> NamedPaths(const std::string& text) {
  static const std::vector<std::string> kRoots = {
      "src/",  "tests/", "catalog/", "examples/", "scripts/", "packaging/",    "web/",
      "docs/", "bench/", "data/",    "tools/",    ".ci/",     "CMakeLists.txt"};
  std::vector<std::string> paths;
  size_t pos = 0;
  while ((pos = text.find('`', pos)) != std::string::npos) {
    size_t end = text.find('`', pos + 1);
    if (end == std::string::npos) break;
    std::string span = text.substr(pos + 1, end - pos - 1);
    pos = end + 1;
    for (const auto& root : kRoots) {
      if (span.rfind(root, 0) == 0 && span.find(' ') == std::string::npos) {
        paths.push_back(span);
        break;
      }
    }
  }
  return paths;
}

// "src/plan/search.{h,cc}" names two files.
std::vector<std::string> ExpandBraces(const std::string& path) {
  size_t open = path.find('{');
  size_t close = path.find('}', open);
  if (open == std::string::npos || close == std::string::npos) return {path};
  std::vector<std::string> out;
  std::string inner = path.substr(open + 1, close - open - 1);
  std::stringstream parts(inner);
  std::string part;
  while (std::getline(parts, part, ','))
    out.push_back(path.substr(0, open) + part + path.substr(close + 1));
  return out;
}

// "src/cli/cmd_<name>.cc" style placeholders name a pattern, not a file: check the folder.
std::string ExistingPart(const std::string& path) {
  size_t placeholder = path.find_first_of("<*");
  if (placeholder == std::string::npos) return path;
  size_t slash = path.rfind('/', placeholder);
  return slash == std::string::npos ? "" : path.substr(0, slash);
}

TEST(DocsTest, ArchitectureNamesOnlyFilesThatExist) {
  std::ifstream in(SourcePath("docs/ARCHITECTURE.md"));
  ASSERT_TRUE(in) << "docs/ARCHITECTURE.md is missing";
  std::stringstream text;
  text << in.rdbuf();
  auto paths = NamedPaths(text.str());
  EXPECT_GE(paths.size(), 20u) << "the recipes should name the files they touch";
  for (const auto& named : paths) {
    for (const auto& path : ExpandBraces(named)) {
      std::string part = ExistingPart(path);
      if (part.empty()) continue;
      EXPECT_TRUE(std::filesystem::exists(SourcePath(part)))
          << "docs/ARCHITECTURE.md names `" << named << "`: " << part << " does not exist";
    }
  }
}

TEST(DocsTest, PlaceholderPathsKeepTheirFolder) {
  EXPECT_EQ(ExistingPart("src/cli/cmd_<name>.cc"), "src/cli");
  EXPECT_EQ(ExistingPart("src/core/status.h"), "src/core/status.h");
  EXPECT_EQ(NamedPaths("see `src/core/status.h` and `fulcrum plan`").size(), 1u);
  EXPECT_EQ(ExpandBraces("src/plan/search.{h,cc}"),
            (std::vector<std::string>{"src/plan/search.h", "src/plan/search.cc"}));
}

}  // namespace
