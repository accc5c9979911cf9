// `fulcrum serve-estimate`: inference sizing of one configuration (model x GPU x tp x batch x
// lengths x precisions): memory, maximum concurrency, time to first token, time per output token
// and throughput (serve/serve.h). JSON: {"memory": {...}, "latency": {...}, "throughput": {...}}.
#include <memory>
#include <string>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "catalog/catalog.h"
#include "cli/cmd_serve_options.h"
#include "cli/command.h"
#include "core/paths.h"
#include "core/table.h"
#include "serve/serve.h"

namespace fulcrum::cli {
namespace {

constexpr const char* kFooter = R"(Examples:
  fulcrum serve-estimate --model llama-3-8b --gpu L4 --batch 16 --input-len 512 --output-len 256
  fulcrum serve-estimate --model llama-2-70b --gpu H100-SXM --tp 4 --batch 64 --precision fp8 --json
  fulcrum serve-estimate --hf-config ./config.json --gpu T4 --precision int4-weight-only --kv-precision fp16
  fulcrum serve-estimate --model llama-2-7b --gpu RTX-4090 --engine llama.cpp --precision q4_k_m
  fulcrum serve-estimate --model llama-3-8b --gpu L4 --engine hf --precision bnb-nf4 --batch 8

JSON: {"memory": {"weights_bytes", "kv_cache_bytes_per_token", "kv_cache_bytes",
"peak_bytes_per_gpu", "activation_bytes_per_gpu", "overhead_bytes_per_gpu",
"budget_bytes_per_gpu", "kv_cache_capacity_tokens", "max_concurrency", "fits"}, "latency": {"ttft_seconds",
"tpot_seconds"}, "throughput": {"output_tokens_per_second", "prefill_tokens_per_second"},
"batching", "engine", "scheduler"}.
weights_bytes, kv_cache_bytes_per_token and kv_cache_bytes are the whole model's (all tp GPUs);
peak_bytes_per_gpu is one GPU's. budget = vLLM's default gpu_memory_utilization 0.9 x capacity;
kv_cache_capacity_tokens = the tokens of KV cache that fit in it beside the weights, the
activations of the engine's largest forward pass (8192 tokens) and the CUDA context (vLLM's
"GPU KV cache size"); max_concurrency = sequences of input+output tokens whose KV cache fits.
--batching continuous (default; vLLM, SGLang, TensorRT-LLM in-flight batching): --batch C is
one new request joining C-1 running decodes with no queue; ttft_seconds = its prompt in chunks
of --prefill-chunk tokens (less the C-1 decodes) beside those decodes; tpot_seconds = the step
of C decodes with the batch's prompts interleaved (C x input-len / output-len tokens per step);
output_tokens_per_second = C / tpot. --batching static (TensorRT-LLM gptSessionBenchmark):
ttft_seconds = the whole batch's prefill (the last sequence's first token); tpot_seconds = one
decode step at the mean context; output_tokens_per_second = batch x output-len over prefill +
decode wall time. Queue waits under a request rate: fulcrum serve-plan.
--engine: each engine's scheduler, default token budget, the precisions it can run and the GPU
vendors it runs on are in catalog/serving_engines.csv (sourced); its kernels' efficiency is
fitted per engine on data/calibration/serving.csv (docs/ACCURACY.md, Inference). hf runs static
batching only (model.generate on a padded batch); llama.cpp's --batch is its -np slots, and its
precisions are GGUF types (bits per weight from llama.cpp's quantize table). An engine that
cannot run the precision, or a GPU vendor it does not support, is an error (exit 2) naming what
it can run.)";

struct ServeEstimateOptions {
  ServeModelOptions model;
  std::string gpu;
  int64_t tp = 1, batch = 1;
  bool json = false;
};

struct Estimated {
  serve::ServeEstimate estimate;
  serve::EngineProfile engine;
  serve::Batching batching = serve::Batching::kContinuous;
};

Result<Estimated> Run(const ServeEstimateOptions& o, const std::string& catalog_flag) {
  const std::string dir = DefaultCatalogDir(catalog_flag);
  catalog::LoadOptions load;
  load.include_user_offers = false;
  FULCRUM_ASSIGN_OR_RETURN(catalog::Catalog cat, catalog::Catalog::Load(dir, load));
  if (o.gpu.empty()) {
    return Status::InvalidInput("--gpu: expected a GPU name from the catalog (fulcrum gpus)");
  }
  FULCRUM_ASSIGN_OR_RETURN(const catalog::Gpu* gpu, cat.ResolveGpu(o.gpu));
  FULCRUM_ASSIGN_OR_RETURN(
      ResolvedServeEngine engine,
      ResolveServeEngine(o.model.engine, o.model.batching, o.model.prefill_chunk, dir));
  FULCRUM_ASSIGN_OR_RETURN(ResolvedServeModel m, ResolveServeModel(o.model, dir, engine.profile));
  serve::ServeRequest r;
  r.engine = engine.profile;
  r.model = m.model;
  r.gpu = *gpu;
  r.interconnect = gpu->nvlink_gbps ? catalog::Interconnect::kNvlink : catalog::Interconnect::kPcie;
  r.tp = o.tp;
  r.batch = o.batch;
  r.input_len = o.model.input_len;
  r.output_len = o.model.output_len;
  r.precision = m.precision;
  r.kv_precision = m.kv_precision.value_or(gpu->bf16_tflops ? serve::KvPrecision::kBf16
                                                            : serve::KvPrecision::kFp16);
  r.batching = engine.batching;
  if (engine.prefill_chunk > 0) r.max_batched_tokens = engine.prefill_chunk;
  r.hf_fused_modules = o.model.hf_fused_modules;
  FULCRUM_ASSIGN_OR_RETURN(serve::ServeEstimate e, serve::EstimateServing(r));
  return Estimated{e, std::move(r.engine), r.batching};
}

nlohmann::json ToJson(const Estimated& x) {
  const serve::ServeEstimate& e = x.estimate;
  return {{"batching", serve::BatchingName(x.batching)},
          {"engine", serve::EngineName(x.engine.engine)},
          {"scheduler", x.engine.scheduler},
          {"memory", ServeMemoryJson(e.memory)},
          {"latency",
           {{"ttft_seconds", e.speed.prefill_seconds}, {"tpot_seconds", e.speed.tpot_seconds}}},
          {"throughput",
           {{"output_tokens_per_second", e.speed.output_tokens_per_second},
            {"prefill_tokens_per_second", e.speed.prefill_tokens_per_second}}}};
}

std::string GiB(double bytes) { return FormatNumber(bytes / (1024.0 * 1024 * 1024), 2) + " GiB"; }

std::string Render(const Estimated& x) {
  const serve::ServeEstimate& e = x.estimate;
  const serve::ServeMemory& m = e.memory;
  Table table({"", "value"}, {Align::kLeft, Align::kRight});
  table.AddRow({"weights (all GPUs)", GiB(m.weights_bytes)});
  table.AddRow({"KV cache per token (all GPUs)",
                FormatNumber(m.kv_cache_bytes_per_token / 1024, 1) + " KiB"});
  table.AddRow({"KV cache of the batch (all GPUs)", GiB(m.kv_cache_bytes)});
  table.AddRow({"activation workspace per GPU", GiB(m.activation_bytes_per_gpu)});
  table.AddRow({"CUDA context + graphs per GPU", GiB(m.overhead_bytes_per_gpu)});
  table.AddRow({"peak per GPU", GiB(m.peak_bytes_per_gpu)});
  table.AddRow({"budget per GPU (0.9 x capacity)", GiB(m.budget_bytes_per_gpu)});
  table.AddRow({"KV cache capacity (tokens)", std::to_string(m.kv_cache_capacity_tokens)});
  table.AddRow({"max concurrent sequences", std::to_string(m.max_concurrency)});
  table.AddRow({"time to first token", FormatNumber(e.speed.prefill_seconds * 1000, 1) + " ms"});
  table.AddRow({"time per output token", FormatNumber(e.speed.tpot_seconds * 1000, 2) + " ms"});
  table.AddRow({"output tokens/s", FormatNumber(e.speed.output_tokens_per_second, 0)});
  table.AddRow({"prefill tokens/s", FormatNumber(e.speed.prefill_tokens_per_second, 0)});
  std::string out = "engine " + std::string(serve::EngineName(x.engine.engine)) + ": " +
                    x.engine.scheduler + " (" + std::string(serve::BatchingName(x.batching)) +
                    " batching modelled)\n" + table.Render();
  if (!m.fits) {
    out += "does not fit: the batch needs " + GiB(m.peak_bytes_per_gpu) + " per GPU of " +
           GiB(m.budget_bytes_per_gpu) + "; at most " + std::to_string(m.max_concurrency) +
           " concurrent sequences (lower --batch, raise --tp, or quantise)\n";
  }
  return out;
}

}  // namespace

void RegisterServeEstimate(CLI::App* cmd, CliContext& ctx) {
  cmd->footer(kFooter);
  auto o = std::make_shared<ServeEstimateOptions>();
  AddServeModelOptions(cmd, o->model);
  cmd->add_option("--gpu", o->gpu, "GPU name or alias from the catalog (see fulcrum gpus)")
      ->type_name("NAME");
  cmd->add_option("--tp", o->tp, "Tensor-parallel degree (default: 1)")->type_name("N");
  cmd->add_option("--batch", o->batch, "Concurrent sequences (default: 1)")->type_name("N");
  cmd->add_flag("--json", o->json, "Print the result as JSON (see the contract below)");
  cmd->callback([&ctx, o] {
    Result<Estimated> result = Run(*o, ctx.catalog_dir);
    if (!result.ok()) {
      ReportError(ctx, result.status());
      return;
    }
    if (o->json) {
      PrintJson(ctx, ToJson(*result));
    } else {
      ctx.out << Render(*result);
    }
  });
}

}  // namespace fulcrum::cli
