// `fulcrum providers`: the provider evaluation matrix and the providers' terms.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "catalog/catalog.h"
#include "catalog/catalog_json.h"
#include "catalog/provider_eval.h"
#include "cli/command.h"
#include "core/paths.h"
#include "core/table.h"

namespace fulcrum::cli {
namespace {

std::string MatrixCell(const catalog::CriterionResult& c) {
  if (c.verdict == catalog::Verdict::kUnknown && c.detail == "not sourced") return "unknown";
  if (c.verdict == catalog::Verdict::kUnknown) return c.detail + (c.context.empty() ? "" : "*");
  return std::string(catalog::VerdictName(c.verdict)) + " (" + c.detail + ")";
}

nlohmann::json CriterionJson(const catalog::CriterionResult& c) {
  return {{"verdict", catalog::VerdictName(c.verdict)},
          {"threshold", c.threshold},
          {"value", c.value ? nlohmann::json(*c.value) : nlohmann::json(nullptr)},
          {"unit", c.unit},
          {"detail", c.detail},
          {"source", c.source.empty() ? nlohmann::json(nullptr) : nlohmann::json(c.source)},
          {"context", c.context.empty() ? nlohmann::json(nullptr) : nlohmann::json(c.context)}};
}

void PrintProviders(CliContext& ctx, const catalog::Catalog& catalog, bool json) {
  std::vector<catalog::ProviderEvaluation> evaluations;
  for (const auto& provider : catalog.providers()) {
    evaluations.push_back(catalog::EvaluateProvider(catalog, provider));
  }
  if (json) {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& e : evaluations) {
      nlohmann::json item = catalog::ProviderToJson(*e.provider);
      nlohmann::json criteria = nlohmann::json::object();
      for (const auto& c : e.criteria) criteria[c.id] = CriterionJson(c);
      item["evaluation"] = criteria;
      list.push_back(std::move(item));
    }
    PrintJson(ctx, {{"providers", list}});
    return;
  }
  Table table({"PROVIDER", "GPU FAILURES", "NETWORK", "BILLING", "SUPPORT"});
  for (const auto& e : evaluations) {
    std::vector<std::string> row = {e.provider->name};
    for (const auto& c : e.criteria) row.push_back(MatrixCell(c));
    table.AddRow(std::move(row));
  }
  ctx.out << table.Render();
  std::string context;  // the footnote of the * cells (the same text for every provider)
  for (const auto& e : evaluations) {
    for (const auto& c : e.criteria) {
      if (c.verdict == catalog::Verdict::kUnknown && !c.context.empty()) context = c.context;
    }
  }
  if (!context.empty()) {
    ctx.out << "\n* No provider publishes a GPU failure rate; " << context
            << "\n  (source: fulcrum providers --json).\n";
  }
  ctx.out << "\nGPU FAILURES < 0.5 %/year; NETWORK >= 25 Gbit/s between nodes (best offer);\n"
             "BILLING granularity <= 1 minute; SUPPORT 24x7 with < 15 min response.\n"
             "unknown = no sourced figure. Terms and sources: fulcrum providers --json.\n";
}

}  // namespace

void RegisterProviders(CLI::App* cmd, CliContext& ctx) {
  cmd->footer(
      "Judges each provider on four criteria of the GPU-cloud selection guides: GPU failure rate\n"
      "below 0.5 %/year, inter-node network of at least 25 Gbit/s (the best figure among the\n"
      "provider's offers), billing granularity of at most 1 minute, and 24x7 support answering\n"
      "in under 15 minutes. Each is met, not met or unknown (no sourced figure), with the figure\n"
      "behind it. --json adds the provider terms: billing minimum, spot notice, discounts,\n"
      "disk billing when stopped, SLA, support notes and sources.\n\n"
      "Examples:\n  fulcrum providers\n  fulcrum providers --json");
  auto json = std::make_shared<bool>(false);
  cmd->add_flag("--json", *json,
                "Print {\"providers\": [...]}: the terms (billing_granularity_seconds, "
                "spot_notice_seconds, ... null = unknown) and \"evaluation\" per criterion "
                "(verdict, threshold, value, unit)");
  cmd->callback([&ctx, json] {
    auto loaded = catalog::Catalog::Load(DefaultCatalogDir(ctx.catalog_dir));
    if (!loaded.ok()) return ReportError(ctx, loaded.status());
    PrintProviders(ctx, *loaded, *json);
  });
}

}  // namespace fulcrum::cli
