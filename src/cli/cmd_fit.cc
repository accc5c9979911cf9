// `fulcrum fit`: will this training fit on this GPU? The per-GPU memory breakdown, a verdict
// (fits / tight: under 10 % free / does not fit) and, when it does not fit comfortably, ways
// out, each checked with the same memory model.
#include <memory>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "catalog/catalog.h"
#include "cli/command.h"
#include "cli/workload_options.h"
#include "core/parse.h"
#include "core/paths.h"
#include "core/table.h"
#include "estimate/estimate.h"
#include "estimate/fit.h"

namespace fulcrum::cli {
namespace {

constexpr const char* kFooter = R"(Examples:
  fulcrum fit --model llama-2-13b --gpu A100-40GB
  fulcrum fit --model llama-2-13b --gpu A100-40GB --gpus 8 --zero 3 --micro-batch 4 --global-batch 64
  fulcrum fit --hf-config ./config.json --gpu L4 --method qlora --json

Verdict: "fits" (at least 10 % of the GPU's memory stays free), "tight" (fits with under 10 %
free: fragmentation or a longer batch can push it over) or "does not fit". Ways out are only
listed when they fit. JSON: {"fit": {"verdict", "model", "memory", "setup", "ways_out": [{"kind",
"change", "flags", "peak_bytes_per_gpu", "headroom_fraction", "verdict"}]}}.)";

struct FitOptions {
  estimate::EstimateRequest request;
  bool json = false;
};

void PrintText(CliContext& ctx, const estimate::EstimateResult& result,
               const std::vector<estimate::WayOut>& ways) {
  ctx.out << estimate::RenderMemoryTable(result);
  if (result.verdict == estimate::FitVerdict::kFits) return;
  if (ways.empty()) {
    ctx.out
        << "\nNo single change tried (micro-batch, recompute, ZeRO-3, tensor parallel, LoRA/QLoRA, "
           "a larger GPU) makes it fit.\n";
    return;
  }
  ctx.out << "\nWays out (each checked with the same memory model):\n";
  int n = 0;
  for (const estimate::WayOut& w : ways) {
    ctx.out << "  " << ++n << ". " << w.change << "\n     peak "
            << FormatBytes(w.result.memory.peak_bytes_per_gpu) << ", "
            << FormatNumber(w.result.headroom_fraction * 100, 1)
            << " % free: " << estimate::FitVerdictName(w.result.verdict)
            << "\n     add: " << w.flags << "\n";
  }
}

void PrintJsonResult(CliContext& ctx, const estimate::EstimateResult& result,
                     const std::vector<estimate::WayOut>& ways) {
  nlohmann::json fit = nlohmann::json::object();
  fit["verdict"] = estimate::FitVerdictName(result.verdict);
  estimate::AppendEstimateJson(result, fit);
  nlohmann::json list = nlohmann::json::array();
  for (const estimate::WayOut& w : ways) {
    list.push_back({{"kind", w.kind},
                    {"change", w.change},
                    {"flags", w.flags},
                    {"peak_bytes_per_gpu", w.result.memory.peak_bytes_per_gpu},
                    {"capacity_bytes", w.result.capacity_bytes},
                    {"headroom_fraction", w.result.headroom_fraction},
                    {"verdict", estimate::FitVerdictName(w.result.verdict)}});
  }
  fit["ways_out"] = list;
  PrintJson(ctx, {{"fit", fit}});
}

void RunFit(CliContext& ctx, const FitOptions& o) {
  const std::string dir = DefaultCatalogDir(ctx.catalog_dir);
  catalog::LoadOptions load;
  load.include_user_offers = false;
  Result<catalog::Catalog> cat = catalog::Catalog::Load(dir, load);
  if (!cat.ok()) return ReportError(ctx, cat.status());
  Result<estimate::EstimateInput> input = estimate::ResolveEstimateInput(o.request, *cat, dir);
  if (!input.ok()) return ReportError(ctx, input.status());
  const estimate::EstimateResult result = estimate::Evaluate(*input);
  std::vector<estimate::WayOut> ways;
  if (result.verdict != estimate::FitVerdict::kFits) ways = estimate::FindWaysOut(*input, *cat);
  if (o.json) {
    PrintJsonResult(ctx, result, ways);
  } else {
    PrintText(ctx, result, ways);
  }
}

}  // namespace

void RegisterFit(CLI::App* cmd, CliContext& ctx) {
  cmd->footer(kFooter);
  auto options = std::make_shared<FitOptions>();
  AddWorkloadOptions(cmd, options->request);
  cmd->add_flag("--json", options->json, "Print {\"fit\": {...}} as JSON");
  cmd->callback([&ctx, options] { RunFit(ctx, *options); });
}

}  // namespace fulcrum::cli
