// Issue 29: every user input file goes through core's one reader (ReadTextFile), so each command
// refuses an input over 16 MiB with exit 2 and its size, before reading it (a 200 MB input used to
// load at up to 1.48 GB of memory). One case per input kind, each through the real binary with a
// 17 MiB file (sparse: no disk used).
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <filesystem>
#include <fstream>

#include "core/text_file.h"
#include "support/run_binary.h"
#include "support/sanitizer.h"

namespace fulcrum::testing {
namespace {
namespace fs = std::filesystem;

constexpr uintmax_t kOversize = kMaxInputFileBytes + (1u << 20);  // 17 MiB

struct InputKind {
  const char* name;
  const char* file;  // the oversized file's name in the test's directory
  // The command line; "FILE" stands for the oversized file, "DIR" for the test's directory.
  std::vector<std::string> args;
};

std::ostream& operator<<(std::ostream& out, const InputKind& kind) { return out << kind.name; }

// The most a child of this process has held (ru_maxrss, KiB -> bytes).
uint64_t ChildrenMaxRss() {
  struct rusage usage {};
  ::getrusage(RUSAGE_CHILDREN, &usage);
  return static_cast<uint64_t>(usage.ru_maxrss) * 1024;
}

class InputCapE2e : public ::testing::TestWithParam<InputKind> {
 protected:
  void SetUp() override { dir_ = MakeTempDir("input-cap"); }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(dir_);
  }
  std::string dir_;
};

TEST_P(InputCapE2e, RefusesAnInputOver16MiBWithItsSizeBeforeReadingIt) {
  const InputKind& kind = GetParam();
  const std::string path = dir_ + "/" + kind.file;
  std::ofstream(path) << "# the start of an input that goes on for 17 MiB\n";
  fs::resize_file(path, kOversize);
  std::vector<std::string> args;
  for (const std::string& a : kind.args) {
    std::string arg = a;
    for (const auto& [token, value] : {std::pair<std::string, std::string>{"FILE", path},
                                       std::pair<std::string, std::string>{"DIR", dir_}}) {
      if (size_t at = arg.find(token); at != std::string::npos)
        arg.replace(at, token.size(), value);
    }
    args.push_back(arg);
  }
  RunOptions options;
  options.env["FULCRUM_OFFERS_DIR"] = dir_ + "/offers.d";  // no user offers
  options.timeout_seconds = 60;
  // What the binary itself holds: the same command would hold it with any small input too.
  ASSERT_EQ(RunFulcrum({"--version"}, options).exit_code, 0);
  const uint64_t baseline = ChildrenMaxRss();

  RunOutput r = RunFulcrum(args, options);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find(path + ": expected "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("of at most 16 MiB, found 17 MiB (" + std::to_string(kOversize) + " bytes)"),
            std::string::npos)
      << r.err;
  // Refused by its size, not read: the command held less than the file over what the binary
  // holds anyway (a reader that loads it would hold it once or more). Not under a sanitizer, whose
  // shadow memory and quarantine of freed blocks grow with everything the command allocates.
  if (!kSanitized) {
    EXPECT_LT(ChildrenMaxRss(), baseline + kOversize) << "max RSS of the command";
  }
}

INSTANTIATE_TEST_SUITE_P(
    EveryInputKind, InputCapE2e,
    ::testing::Values(
        InputKind{"PlanSpec", "spec.yaml", {"plan", "FILE"}},
        InputKind{"AlertRules",
                  "rules.yaml",
                  {"agent", "--source", "sim", "--rules", "FILE", "--data-dir", "DIR/agent",
                   "--listen", "127.0.0.1:0"}},
        InputKind{"AgentConfig", "agent.yaml", {"agent", "--config", "FILE"}},
        InputKind{"ServePlanSpec", "serve.yaml", {"serve-plan", "FILE"}},
        InputKind{"TelemetryReplay",
                  "replay.jsonl",
                  {"agent", "--source", "replay:FILE", "--data-dir", "DIR/agent", "--listen",
                   "127.0.0.1:0"}},
        InputKind{"SimScenario",
                  "scenario.yaml",
                  {"agent", "--source", "sim", "--sim-scenario", "FILE", "--data-dir", "DIR/agent",
                   "--listen", "127.0.0.1:0"}},
        InputKind{"SpotTrace",
                  "trace.json",
                  {"spot", "--work", "48h", "--deadline", "52h", "--on-demand-price", "3.06",
                   "--spot-price", "0.9731", "--changeover", "12m", "--trace", "FILE"}},
        InputKind{"HfModelConfig",
                  "config.json",
                  {"estimate", "--hf-config", "FILE", "--gpu", "H100-SXM"}},
        InputKind{"PlanFileForRun",
                  "plan.json",
                  {"run", "--plan", "FILE", "--data-dir", "DIR/data", "--agent", "none", "--",
                   "/bin/true"}},
        InputKind{"SkyPilotCatalog",
                  "skypilot.csv",
                  {"catalog", "import", "--format", "skypilot", "--provider", "gcp", "FILE"}},
        InputKind{"BenchCompare", "bench.json", {"bench", "--compare", "FILE", "--skip-disk"}}),
    [](const ::testing::TestParamInfo<InputKind>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace fulcrum::testing
