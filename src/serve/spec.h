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

// Latency targets, seconds; nullopt = none. P90 targets are compared with the estimate times
// the fitted P90 ratio (ServeLatencyBand), P50 with the P50 ratio.
struct LatencyTargets {
  std::optional<double> ttft_p50_seconds, ttft_p90_seconds;
  std::optional<double> tpot_p50_seconds, tpot_p90_seconds;
};

struct ServeSpec {
  std::string origin;  // file name or "flags"
  // At most one of: a preset name, a HuggingFace config.json path, an inline model YAML text.
  std::string model_preset, hf_config_path, model_yaml;
  std::string precision,
      kv_precision;  // serve names (bf16, fp8, int4-weight-only, ...); "" = default
  std::optional<int64_t> input_len, output_len, concurrency;
  std::optional<double> requests_per_second;
  LatencyTargets targets;
  std::vector<int64_t> tp;
  std::vector<std::string> gpus, providers;
  std::optional<int64_t> top;
};

// Fields:
//   model: <preset> | {inline model document}    hf_config: path/to/config.json
//   precision: fp8   kv_precision: fp8   input_len: 512   output_len: 256
//   traffic: {requests_per_second: 20, concurrency: 64}
//   targets: {ttft_p50: 0.5, ttft_p90: 1s, tpot_p50: 40ms, tpot_p90: 0.05}   (seconds or a
//   duration) tp: [1, 2]   gpus: [L4, A10G]   providers: [aws, gcp]   top: 10   name/description:
//   text
// Relative hf_config paths are resolved against `base_dir` (the spec file's directory).
Result<ServeSpec> ParseServeYaml(std::string_view text, const std::string& origin,
                                 const std::string& base_dir = "");
Result<ServeSpec> LoadServeFile(const std::string& path);

}  // namespace fulcrum::serve
