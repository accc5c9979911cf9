// `fulcrum gpus`: the GPU models of the catalog with their datasheet figures.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "catalog/catalog.h"
#include "catalog/catalog_json.h"
#include "cli/command.h"
#include "core/paths.h"
#include "core/table.h"

namespace fulcrum::cli {
namespace {

std::string Cell(const std::optional<double>& value, int decimals = 0) {
  return value ? FormatNumber(*value, decimals) : "-";
}

// The aliases that fit in `width` characters (the table stays within 80 columns); "+N" counts
// the rest, which --json lists.
std::string AliasList(const catalog::Gpu& gpu, size_t width) {
  std::string out;
  for (size_t i = 0; i < gpu.aliases.size(); ++i) {
    std::string more = "+" + std::to_string(gpu.aliases.size() - i);
    std::string next = (out.empty() ? "" : ",") + gpu.aliases[i];
    size_t reserve = i + 1 < gpu.aliases.size() ? more.size() + 1 : 0;
    if (out.size() + next.size() + reserve > width) return out + (out.empty() ? "" : ",") + more;
    out += next;
  }
  return out;
}

constexpr size_t kAliasWidth = 20;  // 80 columns less the other columns of the table

void PrintGpus(CliContext& ctx, const catalog::Catalog& catalog, bool json) {
  if (json) {
    nlohmann::json gpus = nlohmann::json::array();
    for (const auto& gpu : catalog.gpus()) gpus.push_back(catalog::GpuToJson(gpu));
    PrintJson(ctx, {{"gpus", gpus}});
    return;
  }
  Table table({"GPU", "MEM GiB", "GB/s", "BF16", "FP8", "NVLINK", "TDP W", "ALIASES"},
              {Align::kLeft, Align::kRight, Align::kRight, Align::kRight, Align::kRight,
               Align::kRight, Align::kRight, Align::kLeft});
  for (const auto& gpu : catalog.gpus()) {
    table.AddRow({gpu.name + (gpu.caveat.empty() ? "" : " !"), FormatNumber(gpu.memory_gib, 0),
                  FormatNumber(gpu.memory_bandwidth_gbps, 0), Cell(gpu.bf16_tflops),
                  Cell(gpu.fp8_tflops), Cell(gpu.nvlink_gbps), Cell(gpu.tdp_watts),
                  AliasList(gpu, kAliasWidth)});
  }
  ctx.out << table.Render();
  ctx.out << "\nBF16/FP8: dense peak TFLOP/s; GB/s: memory bandwidth; NVLINK: GB/s per GPU;\n"
             "'-' = not sourced; ! = the catalog has a caveat on the row. Names, aliases and\n"
             "families (A100 = every A100) match case-insensitively; all aliases, sources and\n"
             "caveats: fulcrum gpus --json.\n";
}

}  // namespace

void RegisterGpus(CLI::App* cmd, CliContext& ctx) {
  cmd->footer(
      "Columns: memory (GiB), memory bandwidth (GB/s), dense BF16 and FP8 peak (TFLOP/s, no\n"
      "sparsity), NVLink bandwidth per GPU (GB/s), TDP (W) and the aliases accepted wherever a "
      "GPU\n"
      "is named (--gpu H100-SXM = H100-SXM5-80GB). A family name (A100, H100, V100) names every\n"
      "variant: offers and plan take them all, estimate and fit ask for one. '-' marks a figure\n"
      "not found in a source; --json gives every field with its source and caveat.\n\n"
      "Examples:\n  fulcrum gpus\n  fulcrum --catalog ./my-catalog gpus --json");
  auto json = std::make_shared<bool>(false);
  cmd->add_flag("--json", *json,
                "Print {\"gpus\": [...]}: name, aliases, memory_gib, "
                "memory_bandwidth_gb_per_second, fp32/tf32/bf16/fp16/fp8_tflops, "
                "nvlink_gb_per_second, pcie_gen, tdp_watts, source, note, family, caveat (null = "
                "not sourced / none)");
  cmd->callback([&ctx, json] {
    auto loaded = catalog::Catalog::Load(DefaultCatalogDir(ctx.catalog_dir));
    if (!loaded.ok()) return ReportError(ctx, loaded.status());
    PrintGpus(ctx, *loaded, *json);
  });
}

}  // namespace fulcrum::cli
