// `fulcrum estimate`: evaluates exactly one configuration (model x GPU x training setup) and
// prints the per-GPU memory breakdown. Its JSON is the contract the planner and the accuracy
// script use: {"model": {...}, "memory": {...}, "setup": {...}}.
#include <memory>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "catalog/catalog.h"
#include "cli/command.h"
#include "cli/workload_options.h"
#include "core/paths.h"
#include "estimate/estimate.h"

namespace fulcrum::cli {
namespace {

constexpr const char* kFooter = R"(Examples:
  fulcrum estimate --model llama-2-7b --gpu A100-80GB --gpus 8 --zero 3 --micro-batch 2 --global-batch 64 --seq-len 4096
  fulcrum estimate --hf-config ./config.json --gpu H100 --gpus 16 --tp 2 --framework megatron --json
  fulcrum estimate --layers 24 --hidden 2048 --heads 16 --gpu L4 --method lora --json

JSON: {"model": {"name", "parameters", ...}, "memory": {"weights_bytes", "gradients_bytes",
"optimizer_bytes", "activations_bytes", "other_bytes", "peak_bytes_per_gpu", "capacity_bytes",
"headroom_fraction", "fits", ...}, "setup": {...}}. Bytes are per GPU. peak = what nvidia-smi
would show (allocated tensors + allocator reserve + CUDA context); "allocated_bytes" and
"reserved_bytes" match torch.cuda.max_memory_allocated / max_memory_reserved.)";

struct EstimateOptions {
  estimate::EstimateRequest request;
  bool json = false;
};

Result<estimate::EstimateResult> RunEstimate(const EstimateOptions& o,
                                             const std::string& catalog_flag) {
  const std::string dir = DefaultCatalogDir(catalog_flag);
  catalog::LoadOptions load;
  load.include_user_offers = false;
  FULCRUM_ASSIGN_OR_RETURN(catalog::Catalog cat, catalog::Catalog::Load(dir, load));
  FULCRUM_ASSIGN_OR_RETURN(estimate::EstimateInput input,
                           estimate::ResolveEstimateInput(o.request, cat, dir));
  return estimate::Evaluate(input);
}

}  // namespace

void RegisterEstimate(CLI::App& root, CliContext& ctx) {
  auto* cmd = root.add_subcommand("estimate",
                                  "Evaluate one training configuration: per-GPU memory breakdown");
  cmd->footer(kFooter);
  auto options = std::make_shared<EstimateOptions>();
  AddWorkloadOptions(cmd, options->request);
  cmd->add_flag("--json", options->json, "Print the result as JSON (see the contract below)");
  cmd->callback([&ctx, options] {
    Result<estimate::EstimateResult> result = RunEstimate(*options, ctx.catalog_dir);
    if (!result.ok()) {
      ReportError(ctx, result.status());
      return;
    }
    if (options->json) {
      nlohmann::json doc = nlohmann::json::object();
      estimate::AppendEstimateJson(*result, doc);
      PrintJson(ctx, doc);
    } else {
      ctx.out << estimate::RenderMemoryTable(*result);
    }
  });
}

}  // namespace fulcrum::cli
