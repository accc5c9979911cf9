#include "serve/spec.h"

#include <cmath>

#include <gtest/gtest.h>

namespace fulcrum::serve {
namespace {

TEST(ServeSpecTest, ReadsEveryField) {
  Result<ServeSpec> spec = ParseServeYaml(R"(name: chatbot
model: llama-3-8b
precision: int4-weight-only
kv_precision: fp8
input_len: 512
output_len: 256
traffic: {requests_per_second: 5, concurrency: 32}
targets: {ttft_p50: 0.5, ttft_p90: 2s, tpot_p50: 40ms, tpot_p90: 0.08}
tp: [1, 2]
gpus: [T4, L4]
providers: aws, gcp
top: 7
)",
                                          "chat.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->model_preset, "llama-3-8b");
  EXPECT_EQ(spec->precision, "int4-weight-only");
  EXPECT_EQ(spec->kv_precision, "fp8");
  EXPECT_EQ(spec->input_len, 512);
  EXPECT_EQ(spec->output_len, 256);
  EXPECT_EQ(spec->requests_per_second, 5);
  EXPECT_EQ(spec->concurrency, 32);
  EXPECT_DOUBLE_EQ(*spec->targets.ttft_p50_seconds, 0.5);
  EXPECT_DOUBLE_EQ(*spec->targets.ttft_p90_seconds, 2);
  EXPECT_DOUBLE_EQ(*spec->targets.tpot_p50_seconds, 0.04);
  EXPECT_DOUBLE_EQ(*spec->targets.tpot_p90_seconds, 0.08);
  EXPECT_EQ(spec->tp, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(spec->gpus, (std::vector<std::string>{"T4", "L4"}));
  EXPECT_EQ(spec->providers, (std::vector<std::string>{"aws", "gcp"}));
  EXPECT_EQ(spec->top, 7);
}

TEST(ServeSpecTest, RelativeHfConfigIsResolvedAgainstTheSpecDirectory) {
  Result<ServeSpec> spec = ParseServeYaml("hf_config: models/config.json\n", "s.yaml", "/srv/x");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->hf_config_path, "/srv/x/models/config.json");
  EXPECT_FALSE(ParseServeYaml("model: llama-3-8b\nhf_config: c.json\n", "s.yaml").ok());
}

TEST(ServeSpecTest, ErrorsNameFileLineFieldAndNearestName) {
  Result<ServeSpec> typo = ParseServeYaml("model: llama-3-8b\nouput_len: 9\n", "s.yaml");
  ASSERT_FALSE(typo.ok());
  EXPECT_EQ(typo.status().code(), StatusCode::kInvalidInput);
  EXPECT_NE(typo.status().message().find("s.yaml:2:"), std::string::npos)
      << typo.status().message();
  ASSERT_NE(typo.status().detail(), nullptr);
  EXPECT_EQ(typo.status().detail()->nearest.front(), "output_len");

  Result<ServeSpec> precision = ParseServeYaml("precision: fp9\n", "s.yaml");
  ASSERT_FALSE(precision.ok());
  ASSERT_NE(precision.status().detail(), nullptr);
  EXPECT_EQ(precision.status().detail()->line, 1);
  EXPECT_EQ(precision.status().detail()->field, "precision");
  EXPECT_EQ(precision.status().detail()->found, "fp9");
  EXPECT_FALSE(precision.status().detail()->nearest.empty());

  for (const char* bad : {"input_len: 0\n", "targets: {tpot_p90: -1}\n", "tp: [3.5]\n",
                          "traffic: {concurrency: many}\n", "targets: 0.05\n"}) {
    Result<ServeSpec> s = ParseServeYaml(bad, "s.yaml");
    EXPECT_FALSE(s.ok()) << bad;
    EXPECT_NE(s.status().message().find("s.yaml:1"), std::string::npos)
        << bad << s.status().message();
  }
}

// Issue 26: P95/P99 and end-to-end targets, the scheduler and the traffic's shape.
TEST(ServeSpecTest, ReadsTailTargetsBatchingAndTrafficShape) {
  Result<ServeSpec> spec = ParseServeYaml(R"(model: llama-3-8b
batching: static
prefill_chunk: 2048
hf_fused_modules: true
traffic:
  requests_per_second: 20
  arrival: constant
  input_len: {mean: 1000}
  output_len: {mean: 200, p90: 400}
targets: {ttft_p95: 1s, ttft_p99: 1500ms, tpot_p95: 50ms, tpot_p99: 0.06, e2e_p90: 10s, e2e_p99: 20}
)",
                                          "s.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->batching, "static");
  EXPECT_EQ(spec->prefill_chunk, 2048);
  EXPECT_TRUE(spec->hf_fused_modules);
  EXPECT_EQ(spec->arrival, "constant");
  EXPECT_EQ(spec->input_len, 1000);
  EXPECT_EQ(spec->output_len, 200);
  // Log-normal through mean 200 and P90 400: sigma = z - sqrt(z^2 - 2 ln 2), scv = e^sigma^2 - 1.
  const double z = 1.2815515655446004, sigma = z - std::sqrt(z * z - 2 * std::log(2.0));
  ASSERT_TRUE(spec->output_scv.has_value());
  EXPECT_NEAR(*spec->output_scv, std::exp(sigma * sigma) - 1, 1e-12);
  EXPECT_DOUBLE_EQ(*spec->targets.ttft_p95_seconds, 1);
  EXPECT_DOUBLE_EQ(*spec->targets.ttft_p99_seconds, 1.5);
  EXPECT_DOUBLE_EQ(*spec->targets.tpot_p95_seconds, 0.05);
  EXPECT_DOUBLE_EQ(*spec->targets.tpot_p99_seconds, 0.06);
  EXPECT_DOUBLE_EQ(*spec->targets.e2e_p90_seconds, 10);
  EXPECT_DOUBLE_EQ(*spec->targets.e2e_p99_seconds, 20);

  for (const char* bad :
       {"traffic: {arrival: bursty}\n", "batching: dynamic\n",
        "traffic: {output_len: {mean: 200, p90: 100}}\n", "targets: {ttft_p999: 1s}\n",
        "prefill_chunk: 0\n", "hf_fused_modules: maybe\n"}) {
    Result<ServeSpec> s = ParseServeYaml(bad, "s.yaml");
    EXPECT_FALSE(s.ok()) << bad;
    EXPECT_NE(s.status().message().find("s.yaml:1"), std::string::npos)
        << bad << s.status().message();
  }
}

TEST(ServeSpecTest, EngineKeyParsesAndABadEngineNamesTheLineAndTheNearestEngine) {
  Result<ServeSpec> spec = ParseServeYaml("model: llama-3-8b\nengine: llama.cpp\n", "s.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->engine, "llama.cpp");
  Result<ServeSpec> none = ParseServeYaml("model: llama-3-8b\n", "s.yaml");
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->engine, "");  // the caller's default: vllm

  Result<ServeSpec> bad = ParseServeYaml("model: llama-3-8b\nengine: vlm\n", "s.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidInput);
  EXPECT_NE(bad.status().message().find("s.yaml:2"), std::string::npos) << bad.status().message();
  ASSERT_TRUE(bad.status().detail() != nullptr);
  EXPECT_EQ(bad.status().detail()->field, "engine");
  ASSERT_FALSE(bad.status().detail()->nearest.empty());
  EXPECT_EQ(bad.status().detail()->nearest.front(), "vllm");
}

}  // namespace
}  // namespace fulcrum::serve
