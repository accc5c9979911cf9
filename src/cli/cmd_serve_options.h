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
  std::string precision;     // "" = the engine's first (bf16; llama.cpp f16)
  std::string kv_precision;  // "" = bf16, fp16 where the GPU has no bf16
  std::string engine = "vllm";
  std::string batching;           // "" = the engine's default
  int64_t prefill_chunk = 0;      // 0 = the engine's default
  bool hf_fused_modules = false;  // hf + int4-weight-only: AWQ fused modules (do_fuse)
};

void AddServeModelOptions(CLI::App* cmd, ServeModelOptions& o);

struct ResolvedServeModel {
  workload::Model model;
  serve::Precision precision = serve::Precision::kBf16;
  std::optional<serve::KvPrecision> kv_precision;
};

// `engine`: whose first precision is the default.
Result<ResolvedServeModel> ResolveServeModel(const ServeModelOptions& o,
                                             const std::string& catalog_dir,
                                             const serve::EngineProfile& engine);
// `text`, or the engine's default precision when it is empty.
Result<serve::Precision> ResolvePrecision(const std::string& text,
                                          const serve::EngineProfile& engine);

// The engine (catalog/serving_engines.csv), its batching ("" = its default; one it runs) and the
// step's token budget (0 = its default; hf: ServeRequest's default, used for memory only).
struct ResolvedServeEngine {
  serve::EngineProfile profile;
  serve::Batching batching = serve::Batching::kContinuous;
  int64_t prefill_chunk = 0;  // 0 = ServeRequest::max_batched_tokens' default
};
Result<ResolvedServeEngine> ResolveServeEngine(const std::string& engine,
                                               const std::string& batching, int64_t prefill_chunk,
                                               const std::string& catalog_dir);

// The "memory" object of serve-estimate and of each serve-plan candidate.
nlohmann::json ServeMemoryJson(const serve::ServeMemory& memory);

}  // namespace fulcrum::cli
