// End-to-end checks of the CLI shell itself: version, help, usage errors and their exit codes.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/run_binary.h"

namespace fulcrum::testing {
namespace {

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

}  // namespace
}  // namespace fulcrum::testing
