// End-to-end: `fulcrum fit` — verdicts and ways out, each of which must itself fit when run
// through `fulcrum estimate` with the suggested flags.
#include <gtest/gtest.h>

#include <sstream>

#include <nlohmann/json.hpp>

#include "support/run_binary.h"

namespace fulcrum::testing {
namespace {

std::vector<std::string> SplitWords(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

TEST(FitE2eTest, DoesNotFitGivesCheckedWaysOut) {
  const std::vector<std::string> base = {"--model", "llama-2-13b", "--gpu", "A100-40GB"};
  std::vector<std::string> args = {"fit", "--json"};
  args.insert(args.end(), base.begin(), base.end());
  RunOutput r = RunFulcrum(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json fit = nlohmann::json::parse(r.out)["fit"];
  EXPECT_EQ(fit["verdict"], "does not fit");
  EXPECT_FALSE(fit["memory"]["fits"].get<bool>());
  ASSERT_GE(fit["ways_out"].size(), 2u);
  bool saw_gpu = false;
  for (const nlohmann::json& way : fit["ways_out"]) {
    EXPECT_NE(way["verdict"], "does not fit");
    saw_gpu = saw_gpu || way["kind"] == "gpu";
    // Re-check the suggestion independently: the same command with the suggested flags
    // (later flags override earlier ones) must fit.
    std::vector<std::string> check = {"estimate", "--json"};
    check.insert(check.end(), base.begin(), base.end());
    for (const std::string& w : SplitWords(way["flags"])) check.push_back(w);
    RunOutput e = RunFulcrum(check);
    ASSERT_EQ(e.exit_code, 0) << way["flags"] << ": " << e.err;
    EXPECT_TRUE(nlohmann::json::parse(e.out)["memory"]["fits"].get<bool>()) << way["flags"];
  }
  EXPECT_TRUE(saw_gpu);
}

// The setup a MoE run states (the all-to-all overlap, whole experts, a DualPipe schedule) comes
// back in `fit --json` and `estimate --json` within their contracts (docs/schemas/fit.json,
// estimate.json: one setup for both).
TEST(FitE2eTest, MoeSettingsKeepTheContract) {
  for (const char* command : {"fit", "estimate"}) {
    RunOutput r = RunFulcrum({command,
                              "--json",
                              "--model",
                              "qwen3-30b-a3b",
                              "--gpu",
                              "H100-SXM",
                              "--gpus",
                              "32",
                              "--pp",
                              "2",
                              "--ep",
                              "16",
                              "--framework",
                              "megatron",
                              "--zero",
                              "1",
                              "--expert-tp",
                              "1",
                              "--global-batch",
                              "64",
                              "--pipeline-schedule",
                              "dualpipev"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    nlohmann::json doc = nlohmann::json::parse(r.out);
    if (doc.contains("fit")) doc = doc["fit"];
    EXPECT_EQ(doc["setup"]["pipeline_schedule"], "dualpipev") << command;
    EXPECT_EQ(doc["parallel"]["expert_tp"], 1) << command;
    RunOutput overlap = RunFulcrum({command, "--json", "--model", "qwen3-30b-a3b", "--gpu",
                                    "H100-SXM", "--gpus", "16", "--ep", "16", "--framework",
                                    "megatron", "--zero", "1", "--moe-a2a-overlap"});
    ASSERT_EQ(overlap.exit_code, 0) << overlap.err;
    doc = nlohmann::json::parse(overlap.out);
    if (doc.contains("fit")) doc = doc["fit"];
    EXPECT_TRUE(doc["setup"]["moe_a2a_overlap"].get<bool>()) << command;
  }
}

TEST(FitE2eTest, SmallModelFitsWithoutWaysOut) {
  RunOutput r = RunFulcrum({"fit", "--model", "gpt2", "--gpu", "A100-80GB"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("verdict: fits"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("Ways out"), std::string::npos);
}

TEST(FitE2eTest, TextListsWaysOut) {
  RunOutput r = RunFulcrum(
      {"fit", "--model", "llama-2-7b", "--gpu", "L4", "--micro-batch", "8", "--global-batch", "8"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("does not fit"), std::string::npos);
  EXPECT_NE(r.out.find("Ways out"), std::string::npos) << r.out;
}

TEST(FitE2eTest, PrecisionTheGpuLacksIsRefused) {
  RunOutput r = RunFulcrum({"fit", "--model", "gpt2", "--gpu", "A100-80GB", "--precision", "fp8"});
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.err.find("A100-SXM4-80GB"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("no fp8"), std::string::npos) << r.err;
}

TEST(FitE2eTest, UnknownGpuIsAnInputError) {
  RunOutput r = RunFulcrum({"fit", "--model", "gpt2", "--gpu", "Z999"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("Z999"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace fulcrum::testing
