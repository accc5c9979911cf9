// The model and precision flags shared by `fulcrum serve-estimate` and `fulcrum serve-plan`:
// registers them on a CLI11 subcommand and resolves them (model preset or HF config, precision
// names) into serve:: values. Help texts state units and defaults.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "estimate/estimate.h"
#include "serve/serve.h"

namespace CLI {
class App;
}

namespace fulcrum::cli {

struct ServeModelOptions {
  estimate::EstimateRequest model;  // only the model fields are used
  int64_t input_len = 512, output_len = 128;
  std::string precision = "bf16";
  std::string kv_precision;  // "" = bf16, fp16 where the GPU has no bf16
  std::string batching = "continuous";
  int64_t prefill_chunk = 0;  // 0 = the engine's default
};

void AddServeModelOptions(CLI::App* cmd, ServeModelOptions& o);

struct ResolvedServeModel {
  workload::Model model;
  serve::Precision precision = serve::Precision::kBf16;
  std::optional<serve::KvPrecision> kv_precision;
  serve::Batching batching = serve::Batching::kContinuous;
};

Result<ResolvedServeModel> ResolveServeModel(const ServeModelOptions& o,
                                             const std::string& catalog_dir);

// The "memory" object of serve-estimate and of each serve-plan candidate.
nlohmann::json ServeMemoryJson(const serve::ServeMemory& memory);

}  // namespace fulcrum::cli
