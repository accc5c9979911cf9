#include "cli/cmd_serve_options.h"

#include <CLI/CLI.hpp>

#include "serve/engine.h"

namespace fulcrum::cli {

void AddServeModelOptions(CLI::App* cmd, ServeModelOptions& o) {
  cmd->option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  cmd->add_option("--model", o.model.model,
                  "Model preset from the catalog (catalog/models/NAME.yaml), e.g. llama-3-8b")
      ->type_name("NAME");
  cmd->add_option("--hf-config", o.model.hf_config,
                  "A HuggingFace config.json (Llama, Mistral, Qwen2, Mixtral, ...)")
      ->type_name("FILE");
  cmd->add_option("--input-len", o.input_len, "Prompt tokens per sequence (default: 512)")
      ->type_name("N");
  cmd->add_option("--output-len", o.output_len, "Generated tokens per sequence (default: 128)")
      ->type_name("N");
  cmd->add_option("--engine", o.engine,
                  "Serving engine: vllm (default) | sglang (continuous batching, chunked prefill) "
                  "| trtllm (in-flight batching; --batching static = gptSessionBenchmark) | hf "
                  "(transformers model.generate on a padded batch: static, SDPA attention) | "
                  "llama.cpp (llama-server: --batch = its -np slots sharing one continuous batch). "
                  "Each has its own fitted kernel efficiency and what it can run "
                  "(catalog/serving_engines.csv)")
      ->type_name("NAME");
  cmd->add_option("--precision", o.precision,
                  "Weights/matmuls: bf16|fp16|fp8|fp4 (FP4 tensor cores)|int8 (W8A8)|"
                  "int8-weight-only|int4-weight-only (AWQ/GPTQ); hf: bnb-int8 (LLM.int8)|bnb-nf4|"
                  "bnb-fp4 (bitsandbytes 4-bit, dequantised per matmul); llama.cpp GGUF: f16|q8_0|"
                  "q5_k_m|q4_k_m (default: bf16; llama.cpp: f16)");
  cmd->add_option("--kv-precision", o.kv_precision,
                  "KV cache: bf16|fp16|fp8 (default: bf16, fp16 where the GPU has no bf16)");
  cmd->add_option(
         "--batching", o.batching,
         "continuous (default except hf: each step decodes every running sequence and fills its "
         "token budget with prompt chunks, as vLLM, SGLang and TensorRT-LLM's in-flight "
         "batching do) | static (a batch starts and ends together: TensorRT-LLM "
         "gptSessionBenchmark, a padded HF generate batch; hf's only mode)")
      ->type_name("MODE");
  cmd->add_option("--prefill-chunk", o.prefill_chunk,
                  "Continuous batching: tokens per step shared by the decodes and prompt chunks "
                  "(vLLM max_num_batched_tokens; default: the engine's: 8192 vllm/sglang/trtllm, "
                  "2048 llama.cpp --batch-size)")
      ->type_name("N");
  cmd->add_flag("--hf-fused-modules", o.hf_fused_modules,
                "hf with int4-weight-only (AWQ) only: the layers run AutoAWQ's fused modules "
                "(transformers AwqConfig(do_fuse=True), AutoAWQ fuse_layers=True; Llama, Mistral, "
                "Mixtral, LLaVA or a modules_to_fuse mapping, GEMM/GEMV kernels): far fewer "
                "operations dispatched per layer than transformers' own modules (default: off)");
}

Result<serve::Precision> ResolvePrecision(const std::string& text,
                                          const serve::EngineProfile& engine) {
  if (!text.empty()) return serve::ParsePrecision(text);
  return engine.precisions.empty() ? serve::Precision::kBf16 : engine.precisions.front();
}

Result<ResolvedServeModel> ResolveServeModel(const ServeModelOptions& o,
                                             const std::string& catalog_dir,
                                             const serve::EngineProfile& engine) {
  ResolvedServeModel r;
  FULCRUM_ASSIGN_OR_RETURN(r.model, estimate::ResolveModel(o.model, catalog_dir));
  FULCRUM_ASSIGN_OR_RETURN(r.precision, ResolvePrecision(o.precision, engine));
  if (!o.kv_precision.empty()) {
    FULCRUM_ASSIGN_OR_RETURN(r.kv_precision, serve::ParseKvPrecision(o.kv_precision));
  }
  return r;
}

Result<ResolvedServeEngine> ResolveServeEngine(const std::string& engine,
                                               const std::string& batching, int64_t prefill_chunk,
                                               const std::string& catalog_dir) {
  ResolvedServeEngine r;
  FULCRUM_ASSIGN_OR_RETURN(r.profile,
                           serve::LoadEngine(catalog_dir, engine.empty() ? "vllm" : engine));
  if (batching.empty()) {
    if (!r.profile.batching.empty()) r.batching = r.profile.batching.front();
  } else {
    FULCRUM_ASSIGN_OR_RETURN(r.batching, serve::ParseBatching(batching));
    FULCRUM_RETURN_IF_ERROR(serve::CheckBatching(r.profile, r.batching));
  }
  if (prefill_chunk < 0) {
    return Status::InvalidInput("--prefill-chunk: expected at least 1 token, found " +
                                std::to_string(prefill_chunk));
  }
  r.prefill_chunk = prefill_chunk > 0 ? prefill_chunk : r.profile.prefill_chunk;
  return r;
}

nlohmann::json ServeMemoryJson(const serve::ServeMemory& m) {
  return {{"weights_bytes", m.weights_bytes},
          {"kv_cache_bytes_per_token", m.kv_cache_bytes_per_token},
          {"kv_cache_bytes", m.kv_cache_bytes},
          {"peak_bytes_per_gpu", m.peak_bytes_per_gpu},
          {"activation_bytes_per_gpu", m.activation_bytes_per_gpu},
          {"overhead_bytes_per_gpu", m.overhead_bytes_per_gpu},
          {"budget_bytes_per_gpu", m.budget_bytes_per_gpu},
          {"kv_cache_capacity_tokens", m.kv_cache_capacity_tokens},
          {"max_concurrency", m.max_concurrency},
          {"fits", m.fits}};
}

}  // namespace fulcrum::cli
