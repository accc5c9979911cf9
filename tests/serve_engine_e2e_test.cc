// serve-estimate / serve-plan --engine through the real binary: the engine named in the JSON,
// the support matrix refused with exit 2 naming what the engine runs.
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "support/run_binary.h"

namespace fulcrum::testing {
namespace {

nlohmann::json Json(const RunOutput& r) {
  const nlohmann::json doc = nlohmann::json::parse(r.out, nullptr, false);
  EXPECT_FALSE(doc.is_discarded()) << r.out << r.err;
  return doc;
}

TEST(ServeEngineE2eTest, EstimateNamesTheEngineAndItsScheduler) {
  RunOutput hf = RunFulcrum({"serve-estimate", "--model", "llama-3-8b", "--gpu", "RTX-4090",
                             "--engine", "hf", "--precision", "bnb-nf4", "--batch", "8", "--json"});
  ASSERT_EQ(hf.exit_code, 0) << hf.err;
  const nlohmann::json h = Json(hf);
  EXPECT_EQ(h["engine"], "hf");
  EXPECT_EQ(h["batching"], "static");  // generate's only mode, without --batching
  EXPECT_NE(h["scheduler"].get<std::string>().find("generate"), std::string::npos);

  RunOutput llama = RunFulcrum({"serve-estimate", "--model", "llama-3-8b", "--gpu", "RTX-4090",
                                "--engine", "llama.cpp", "--json"});
  ASSERT_EQ(llama.exit_code, 0) << llama.err;
  const nlohmann::json l = Json(llama);
  EXPECT_EQ(l["engine"], "llama.cpp");
  EXPECT_EQ(l["batching"], "continuous");
  // Its default precision is f16 (16 bits a weight, the embeddings included): more than bf16's
  // bytes would be only by the 0.0005 bits of metadata.
  RunOutput vllm =
      RunFulcrum({"serve-estimate", "--model", "llama-3-8b", "--gpu", "RTX-4090", "--json"});
  ASSERT_EQ(vllm.exit_code, 0) << vllm.err;
  const nlohmann::json v = Json(vllm);
  EXPECT_EQ(v["engine"], "vllm");
  EXPECT_NEAR(l["memory"]["weights_bytes"].get<double>(),
              v["memory"]["weights_bytes"].get<double>(),
              1e-3 * v["memory"]["weights_bytes"].get<double>());
}

TEST(ServeEngineE2eTest, SupportMatrixRefusalsExitTwoNamingWhatTheEngineRuns) {
  struct Case {
    std::vector<std::string> extra;
    std::string says;
  };
  const std::vector<Case> cases = {
      {{"--gpu", "H100-SXM", "--engine", "llama.cpp", "--precision", "fp8"}, "q4_k_m"},
      {{"--gpu", "B200", "--engine", "hf", "--precision", "fp4"}, "bnb-nf4"},
      {{"--gpu", "MI300X", "--engine", "trtllm"}, "NVIDIA"},
      {{"--gpu", "L4", "--engine", "hf", "--batching", "continuous"}, "static"},
      {{"--gpu", "L4", "--engine", "vlm"}, "vllm"},
      {{"--gpu", "A100-80GB", "--engine", "hf", "--tp", "2"}, "no tensor parallelism"},
      {{"--gpu", "RTX-4090", "--engine", "llama.cpp", "--tp", "2"}, "no tensor parallelism"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = {"serve-estimate", "--model", "llama-3-8b"};
    args.insert(args.end(), c.extra.begin(), c.extra.end());
    RunOutput r = RunFulcrum(args);
    EXPECT_EQ(r.exit_code, 2) << c.extra.back() << ": " << r.out;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << r.err;
  }
  RunOutput json = RunFulcrum({"serve-estimate", "--model", "llama-3-8b", "--gpu", "H100-SXM",
                               "--engine", "llama.cpp", "--precision", "fp8", "--json"});
  EXPECT_EQ(json.exit_code, 2);
  const nlohmann::json err = nlohmann::json::parse(json.err, nullptr, false);
  ASSERT_FALSE(err.is_discarded()) << json.err;
  EXPECT_EQ(err["error"]["field"], "precision");
  EXPECT_EQ(err["error"]["found"], "fp8");
}

TEST(ServeEngineE2eTest, HfFusedModulesApplyToHfAwqOnlyAndExitTwoElsewhere) {
  const std::vector<std::string> base = {"serve-estimate", "--model",        "mistral-7b",
                                         "--gpu",          "A100-SXM4-80GB", "--hf-fused-modules",
                                         "--json"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = base;
    args.insert(args.end(), extra.begin(), extra.end());
    return RunFulcrum(args);
  };
  RunOutput ok = with({"--engine", "hf", "--precision", "int4-weight-only"});
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  RunOutput vllm = with({"--engine", "vllm", "--precision", "int4-weight-only"});
  EXPECT_EQ(vllm.exit_code, 2) << vllm.out;
  const nlohmann::json err = nlohmann::json::parse(vllm.err, nullptr, false);
  ASSERT_FALSE(err.is_discarded()) << vllm.err;
  EXPECT_EQ(err["error"]["field"], "hf-fused-modules");
  EXPECT_NE(err["error"]["expected"].get<std::string>().find("engine hf"), std::string::npos);
  RunOutput bf16 = with({"--engine", "hf", "--precision", "bf16"});
  EXPECT_EQ(bf16.exit_code, 2) << bf16.out;
  EXPECT_NE(bf16.err.find("int4-weight-only"), std::string::npos) << bf16.err;
  RunOutput plan = RunFulcrum({"serve-plan", "--model", "mistral-7b", "--engine", "llama.cpp",
                               "--hf-fused-modules", "--gpus", "L4"});
  EXPECT_EQ(plan.exit_code, 2) << plan.out;
  EXPECT_NE(plan.err.find("hf-fused-modules"), std::string::npos) << plan.err;
}

TEST(ServeEngineE2eTest, PlanNamesTheEngineAndRefusesWhatItCannotRun) {
  RunOutput r = RunFulcrum({"serve-plan", "--model", "llama-3-8b", "--engine", "hf", "--precision",
                            "bnb-int8", "--gpus", "L4,A10G", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json doc = Json(r);
  EXPECT_EQ(doc["engine"], "hf");
  EXPECT_EQ(doc["batching"], "static");
  EXPECT_FALSE(doc["candidates"].empty());

  RunOutput fp8 = RunFulcrum({"serve-plan", "--model", "llama-3-8b", "--engine", "llama.cpp",
                              "--precision", "fp8", "--gpus", "H100-SXM"});
  EXPECT_EQ(fp8.exit_code, 2) << fp8.out;
  // The engine's limit, with what it runs; not "N offers lack tensor cores" (H100 has fp8).
  EXPECT_NE(fp8.err.find("engine llama.cpp cannot run fp8"), std::string::npos) << fp8.err;
  EXPECT_NE(fp8.err.find("q4_k_m"), std::string::npos) << fp8.err;
  EXPECT_EQ(fp8.err.find("tensor cores"), std::string::npos) << fp8.err;
}

}  // namespace
}  // namespace fulcrum::testing
