// `fulcrum serve-estimate` end to end: the JSON contract of issue 17 and the exit-2 refusals.
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "support/run_binary.h"

namespace fulcrum::testing {
namespace {

TEST(ServeEstimateE2eTest, JsonHasTheContractFields) {
  RunOutput r = RunFulcrum({"serve-estimate", "--model", "llama-3-8b", "--gpu", "L4", "--batch",
                            "8", "--input-len", "512", "--output-len", "256", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json doc = nlohmann::json::parse(r.out);
  for (const char* key :
       {"weights_bytes", "kv_cache_bytes_per_token", "kv_cache_bytes", "peak_bytes_per_gpu"}) {
    EXPECT_GT(doc["memory"][key].get<double>(), 0) << key;
  }
  EXPECT_EQ(doc["memory"]["kv_cache_bytes_per_token"].get<double>(), 131072.0);
  EXPECT_EQ(doc["memory"]["kv_cache_bytes"].get<double>(), 8 * 768 * 131072.0);
  EXPECT_GT(doc["latency"]["ttft_seconds"].get<double>(), 0);
  EXPECT_GT(doc["latency"]["tpot_seconds"].get<double>(), 0);
  EXPECT_GT(doc["throughput"]["output_tokens_per_second"].get<double>(), 0);
  EXPECT_GT(doc["throughput"]["prefill_tokens_per_second"].get<double>(), 0);
}

TEST(ServeEstimateE2eTest, UnsupportedPrecisionExitsTwoNamingTheGpuAndItsPrecisions) {
  RunOutput r = RunFulcrum(
      {"serve-estimate", "--model", "llama-3-8b", "--gpu", "A100-80GB", "--precision", "fp8"});
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.err.find("GPU A100-SXM4-80GB has no fp8 tensor cores"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("it supports: bf16, fp16, int8"), std::string::npos) << r.err;

  RunOutput json = RunFulcrum(
      {"serve-estimate", "--model", "llama-3-8b", "--gpu", "T4", "--precision", "bf16", "--json"});
  EXPECT_EQ(json.exit_code, 2);
  const nlohmann::json err = nlohmann::json::parse(json.err, nullptr, false);
  ASSERT_FALSE(err.is_discarded()) << json.err;
  EXPECT_EQ(err["error"]["field"], "precision");
  EXPECT_EQ(err["error"]["found"], "bf16");
  EXPECT_EQ(err["error"]["nearest"][0], "fp16");
}

TEST(ServeEstimateE2eTest, BadValuesExitTwo) {
  const std::vector<std::vector<std::string>> cases = {
      {"--precision", "fp9"}, {"--kv-precision", "int4"}, {"--tp", "3"}, {"--batch", "0"}};
  for (const auto& extra : cases) {
    std::vector<std::string> args = {"serve-estimate", "--model", "llama-3-8b", "--gpu",
                                     "H100-SXM"};
    args.insert(args.end(), extra.begin(), extra.end());
    RunOutput r = RunFulcrum(args);
    EXPECT_EQ(r.exit_code, 2) << extra[0] << ": " << r.err;
    EXPECT_NE(r.err.find(extra[0].substr(2)), std::string::npos) << r.err;
  }
}

TEST(ServePlanE2eTest, JsonCandidatesHaveTheContractShape) {
  RunOutput r = RunFulcrum({"serve-plan", "--model", "llama-3-8b", "--gpus", "L4,H100-SXM",
                            "--requests-per-second", "3", "--tpot-p90", "0.08", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json doc = nlohmann::json::parse(r.out);
  ASSERT_FALSE(doc["candidates"].empty());
  for (const auto& c : doc["candidates"]) {
    for (const char* key : {"provider", "instance_type", "gpu", "gpu_count", "tp", "region",
                            "replicas", "max_concurrency", "utilization", "pareto", "memory",
                            "latency", "throughput", "cost", "warnings"}) {
      EXPECT_TRUE(c.contains(key)) << key;
    }
    EXPECT_LE(c["latency"]["tpot_seconds"].get<double>(), 0.08);
    EXPECT_GT(c["cost"]["usd_per_million_output_tokens"].get<double>(), 0);
    EXPECT_GT(c["cost"]["usd_per_million_input_tokens"].get<double>(), 0);
    EXPECT_GT(c["throughput"]["output_tokens_per_second"].get<double>(), 0);
    EXPECT_TRUE(c["gpu"] == "L4" || c["gpu"] == "H100-SXM5-80GB") << c["gpu"];
  }
}

TEST(ServePlanE2eTest, UnknownGpuAndUnsupportedPrecisionExitTwo) {
  RunOutput unknown = RunFulcrum({"serve-plan", "--model", "llama-3-8b", "--gpus", "H1000"});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("--gpus"), std::string::npos) << unknown.err;
  RunOutput fp8 =
      RunFulcrum({"serve-plan", "--model", "llama-3-8b", "--gpus", "T4", "--precision", "fp8"});
  EXPECT_EQ(fp8.exit_code, 2);
  EXPECT_NE(fp8.err.find("lack tensor cores for --precision fp8"), std::string::npos) << fp8.err;
}

}  // namespace
}  // namespace fulcrum::testing
