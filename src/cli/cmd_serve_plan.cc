// `fulcrum serve-plan`: every offer x tensor-parallel layout that serves a model within the
// latency targets, with replicas for the traffic, $ per hour and $ per million tokens
// (serve/plan.h). JSON: {"candidates": [...]}, the shape of issue 17.
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "catalog/catalog.h"
#include "catalog/offer_query.h"
#include "cli/cmd_serve_options.h"
#include "cli/command.h"
#include "core/parse.h"
#include "core/paths.h"
#include "core/table.h"
#include "serve/plan.h"

namespace fulcrum::cli {
namespace {

constexpr const char* kFooter = R"(Examples:
  fulcrum serve-plan --model llama-3-8b --requests-per-second 5 --input-len 512 --output-len 256 --tpot-p90 0.05
  fulcrum serve-plan --model llama-2-70b --precision fp8 --gpus H100-SXM,H200 --concurrency 64 --json
  fulcrum serve-plan --model mistral-7b --precision int4-weight-only --gpus T4,L4 --providers aws

JSON: {"candidates": [{"provider", "instance_type", "gpu", "gpu_count", "tp", "region",
"replicas", "max_concurrency", "utilization", "pareto", "memory": {"weights_bytes",
"kv_cache_bytes_per_token", "kv_cache_bytes", "peak_bytes_per_gpu", ...}, "latency":
{"ttft_seconds", "tpot_seconds"}, "throughput": {"output_tokens_per_second"}, "cost":
{"usd_per_hour", "usd_per_million_output_tokens", "usd_per_million_input_tokens"},
"warnings"}]}, cheapest per output token first. On-demand prices; "replicas" serve
--requests-per-second (without it: one instance, its replicas at full load); "max_concurrency"
is the sequences each replica runs (--concurrency, else the most that fit, at most 256);
throughput is one replica's. The latency targets are compared with the model's estimate (no
distribution yet: P90 = the estimate). Each $ per million figure charges the whole bill to that
token kind.)";

struct ServePlanOptions {
  ServeModelOptions model;
  double requests_per_second = 0;
  int64_t concurrency = 0;  // 0 = most that fit
  double ttft_p90 = 0, tpot_p90 = 0;
  std::string gpus, providers;
  std::vector<int64_t> tp;
  int64_t top = 20;
  bool json = false;
};

struct PlanOutcome {
  catalog::Catalog catalog;
  std::vector<serve::ServeCandidate> candidates;
};

Result<std::unique_ptr<PlanOutcome>> Run(const ServePlanOptions& o, const std::string& flag) {
  const std::string dir = DefaultCatalogDir(flag);
  FULCRUM_ASSIGN_OR_RETURN(catalog::Catalog cat, catalog::Catalog::Load(dir));
  auto outcome = std::make_unique<PlanOutcome>(PlanOutcome{std::move(cat), {}});
  catalog::OfferFilter filter;
  for (const std::string& g : Split(o.gpus, ',')) {
    if (!Trim(g).empty()) filter.gpus.emplace_back(Trim(g));
  }
  for (const std::string& p : Split(o.providers, ',')) {
    if (!Trim(p).empty()) filter.providers.emplace_back(Trim(p));
  }
  filter.pricing = {catalog::Pricing::kOnDemand};
  filter.gpus_flag = "--gpus";
  filter.providers_flag = "--providers";
  FULCRUM_ASSIGN_OR_RETURN(catalog::ResolvedFilter offers,
                           catalog::ResolveOfferFilter(outcome->catalog, filter));
  FULCRUM_ASSIGN_OR_RETURN(ResolvedServeModel m, ResolveServeModel(o.model, dir));
  serve::ServePlanRequest r;
  r.model = m.model;
  r.precision = m.precision;
  r.kv_precision = m.kv_precision;
  r.input_len = o.model.input_len;
  r.output_len = o.model.output_len;
  if (o.concurrency > 0) r.concurrency = o.concurrency;
  r.requests_per_second = o.requests_per_second;
  if (o.ttft_p90 > 0) r.ttft_max_seconds = o.ttft_p90;
  if (o.tpot_p90 > 0) r.tpot_max_seconds = o.tpot_p90;
  r.tp = o.tp;
  FULCRUM_ASSIGN_OR_RETURN(outcome->candidates, serve::PlanServing(outcome->catalog, offers, r));
  return outcome;
}

nlohmann::json CandidateJson(const serve::ServeCandidate& c) {
  return {{"provider", c.offer->provider},
          {"instance_type", c.offer->instance_type},
          {"gpu", c.gpu->name},
          {"gpu_count", c.offer->gpu_count},
          {"tp", c.tp},
          {"region", c.offer->region},
          {"replicas", c.replicas},
          {"instances", c.instances},
          {"max_concurrency", c.concurrency},
          {"utilization", c.utilization},
          {"pareto", c.pareto},
          {"memory", ServeMemoryJson(c.estimate.memory)},
          {"latency",
           {{"ttft_seconds", c.estimate.speed.prefill_seconds},
            {"tpot_seconds", c.estimate.speed.tpot_seconds}}},
          {"throughput", {{"output_tokens_per_second", c.estimate.speed.output_tokens_per_second}}},
          {"cost",
           {{"usd_per_hour", c.usd_per_hour},
            {"usd_per_million_output_tokens", c.usd_per_million_output_tokens},
            {"usd_per_million_input_tokens", c.usd_per_million_input_tokens}}},
          {"warnings", c.warnings}};
}

std::string Render(const std::vector<serve::ServeCandidate>& candidates, size_t top) {
  Table table(
      {"provider", "instance", "gpu", "tp", "replicas", "conc", "ttft ms", "tpot ms", "$/h",
       "$/M out", "util", "pareto"},
      {Align::kLeft, Align::kLeft, Align::kLeft, Align::kRight, Align::kRight, Align::kRight,
       Align::kRight, Align::kRight, Align::kRight, Align::kRight, Align::kRight, Align::kLeft});
  for (size_t i = 0; i < candidates.size() && i < top; ++i) {
    const serve::ServeCandidate& c = candidates[i];
    table.AddRow({c.offer->provider, c.offer->instance_type,
                  std::to_string(c.offer->gpu_count) + "x" + c.gpu->name, std::to_string(c.tp),
                  std::to_string(c.replicas), std::to_string(c.concurrency),
                  FormatNumber(c.estimate.speed.prefill_seconds * 1000, 0),
                  FormatNumber(c.estimate.speed.tpot_seconds * 1000, 1),
                  FormatNumber(c.usd_per_hour, 2), FormatNumber(c.usd_per_million_output_tokens, 3),
                  FormatNumber(100 * c.utilization, 0) + "%", c.pareto ? "*" : ""});
  }
  return table.Render() + std::to_string(candidates.size()) + " candidates (" +
         std::to_string(std::min(top, candidates.size())) +
         " shown); * = Pareto front of $ per output token vs time per output token\n";
}

}  // namespace

void RegisterServePlan(CLI::App* cmd, CliContext& ctx) {
  cmd->footer(kFooter);
  auto o = std::make_shared<ServePlanOptions>();
  AddServeModelOptions(cmd, o->model);
  cmd->add_option("--requests-per-second", o->requests_per_second,
                  "Traffic to serve (default: none, one instance per offer)")
      ->type_name("X");
  cmd->add_option("--concurrency", o->concurrency,
                  "Concurrent sequences per replica (default: the most that fit, at most 256)")
      ->type_name("N");
  cmd->add_option("--ttft-p90", o->ttft_p90, "Time to first token target, seconds")
      ->type_name("SECONDS");
  cmd->add_option("--tpot-p90", o->tpot_p90, "Time per output token target, seconds")
      ->type_name("SECONDS");
  cmd->add_option("--tp", o->tp,
                  "Tensor-parallel degrees to try (default: every power of two "
                  "the instance allows)")
      ->delimiter(',')
      ->type_name("LIST");
  cmd->add_option("--gpus", o->gpus, "Only these GPU models (names or aliases, comma-separated)")
      ->type_name("LIST");
  cmd->add_option("--providers", o->providers, "Only these providers (comma-separated)")
      ->type_name("LIST");
  cmd->add_option("--top", o->top, "Rows of the table (default: 20)")->type_name("N");
  cmd->add_flag("--json", o->json, "Print every candidate as JSON (see the contract below)");
  cmd->callback([&ctx, o] {
    Result<std::unique_ptr<PlanOutcome>> outcome = Run(*o, ctx.catalog_dir);
    if (!outcome.ok()) {
      ReportError(ctx, outcome.status());
      return;
    }
    const std::vector<serve::ServeCandidate>& cs = (*outcome)->candidates;
    if (o->json) {
      nlohmann::json list = nlohmann::json::array();
      for (const serve::ServeCandidate& c : cs) list.push_back(CandidateJson(c));
      PrintJson(ctx, {{"candidates", list}});
    } else {
      ctx.out << Render(cs, static_cast<size_t>(std::max<int64_t>(o->top, 1)));
    }
  });
}

}  // namespace fulcrum::cli
