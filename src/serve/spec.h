// A serve-plan request as a YAML spec (examples/*-serve.yaml), the serving counterpart of
// plan/spec.h: what to serve (model, precisions, lengths), the traffic, the latency targets
// and the offer filters. Every field is optional in the file; `fulcrum serve-plan` flags
// override it. Parsed with the one YAML helper (core/yaml.h): errors name file:line, the
// dotted field, what was expected and the nearest valid names. Plain values; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace fulcrum::serve {

// Latency targets, seconds; nullopt = none. Under continuous batching each is compared with the
// queueing model's percentile over requests at the offered load (serve/queueing.h) times the
// fitted median ratio of measured to predicted time; under static batching with the estimate
// times the fitted ratio of that percentile (ServeLatencyBand, P90 for P95/P99).
struct LatencyTargets {
  std::optional<double> ttft_p50_seconds, ttft_p90_seconds, ttft_p95_seconds, ttft_p99_seconds;
  std::optional<double> tpot_p50_seconds, tpot_p90_seconds, tpot_p95_seconds, tpot_p99_seconds;
  std::optional<double> e2e_p90_seconds, e2e_p99_seconds;  // end to end: TTFT + decode
};

// One latency target: its name as the YAML key and the flag (without "--"), which latency, which
// percentile (0.5 ... 0.99), and where it lives in LatencyTargets.
enum class LatencyMetric { kTtft, kTpot, kE2e };
struct LatencyTargetField {
  const char* name;  // "ttft_p90": YAML key; the flag is --ttft-p90
  LatencyMetric metric;
  double quantile;
  std::optional<double> LatencyTargets::*member;
};
// The ten targets in a fixed order (ttft, tpot, e2e; ascending percentile).
const std::vector<LatencyTargetField>& LatencyTargetFields();

struct ServeSpec {
  std::string origin;  // file name or "flags"
  // At most one of: a preset name, a HuggingFace config.json path, an inline model YAML text.
  std::string model_preset, hf_config_path, model_yaml;
  std::string precision,
      kv_precision;  // serve names (bf16, fp8, int4-weight-only, ...); "" = default
  std::optional<int64_t> input_len, output_len, concurrency;
  std::optional<double> requests_per_second;
  std::string engine;    // "vllm" | "sglang" | "trtllm" | "hf" | "llama.cpp"; "" = vllm
  std::string batching;  // "continuous" | "static"; "" = the engine's default
  std::optional<int64_t> prefill_chunk;  // tokens per continuous-batching step
  bool hf_fused_modules = false;         // hf + int4-weight-only: AWQ fused modules
  std::string arrival;                   // "poisson" | "constant"; "" = poisson
  // Output length as a distribution (traffic.output_len: {mean, p90}): its squared coefficient
  // of variation, from a log-normal through the mean and P90; nullopt = fixed.
  std::optional<double> output_scv;
  LatencyTargets targets;
  std::vector<int64_t> tp;
  std::vector<std::string> gpus, providers;
  std::optional<int64_t> top;
  // rank_unconfirmed: last (default: offers whose price or interconnect the catalog cannot confirm
  // rank after the others, as in plan) | mixed (by cost alone); nullopt = not given.
  std::optional<bool> unconfirmed_last;
};

// Fields:
//   model: <preset> | {inline model document}    hf_config: path/to/config.json
//   engine: vllm|sglang|trtllm|hf|llama.cpp
//   precision: fp8   kv_precision: fp8   input_len: 512   output_len: 256
//   batching: continuous|static   prefill_chunk: 8192   hf_fused_modules: true|false
//   traffic: {requests_per_second: 20, arrival: poisson|constant, concurrency: 64,
//             input_len: 1024 | {mean: 1024}, output_len: 512 | {mean: 512, p90: 1200}}
//   targets: {ttft_p50: 0.5, ttft_p90: 1s, ttft_p95, ttft_p99, tpot_p50: 40ms, tpot_p90: 0.05,
//   tpot_p95, tpot_p99, e2e_p90, e2e_p99}   (seconds or a duration)   tp: [1, 2]   gpus: [L4, A10G]
//   providers: [aws, gcp]   top: 10   rank_unconfirmed: last|mixed   name/description: text
// Relative hf_config paths are resolved against `base_dir` (the spec file's directory).
Result<ServeSpec> ParseServeYaml(std::string_view text, const std::string& origin,
                                 const std::string& base_dir = "");
Result<ServeSpec> LoadServeFile(const std::string& path);

}  // namespace fulcrum::serve
