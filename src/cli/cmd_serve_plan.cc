// `fulcrum serve-plan`: every offer x tensor-parallel layout that serves a model within the
// latency targets, with replicas for the traffic, $ per hour and $ per million tokens
// (serve/plan.h). JSON: {"candidates": [...]}, the shape of issue 17.
#include <algorithm>
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
#include "core/text_file.h"
#include "plan/ranking.h"
#include "plan/spec.h"
#include "serve/plan.h"
#include "serve/report.h"
#include "serve/spec.h"
#include "workload/model_io.h"

namespace fulcrum::cli {
namespace {

constexpr const char* kFooter = R"(Examples:
  fulcrum serve-plan examples/llama-70b-serve.yaml --ttft-p90 1s --tpot-p90 40ms
  fulcrum serve-plan examples/llama-8b-chatbot-serve.yaml --html serve.html
  fulcrum serve-plan --model llama-3-8b --requests-per-second 5 --output-len 256 --ttft-p99 2s --tpot-p90 50ms
  fulcrum serve-plan --model llama-2-70b --precision fp8 --gpus H100-SXM,H200 --batching static --concurrency 64 --json
  fulcrum serve-plan --model llama-3-8b --engine hf --precision bnb-nf4 --requests-per-second 1 --tpot-p90 100ms

Engines: --engine vllm (default) | sglang | trtllm | hf | llama.cpp (spec key engine:), each with
its scheduler, default --prefill-chunk, precisions and GPU vendors from
catalog/serving_engines.csv and its own fitted kernel efficiency; offers whose GPU the engine
cannot run on, or whose tensor cores lack the precision, are left out. hf is static batching
only (model.generate on a padded batch).

Scheduling: --batching continuous (default; vLLM, SGLang, TensorRT-LLM in-flight batching) sizes
each replica with a queueing model of the engine at the offered load: requests arrive (Poisson,
or --arrival constant), at most "max_concurrency" run, each step decodes every running sequence
and fills its --prefill-chunk token budget with prompt chunks; a request's TTFT is the rest of
the step under way, the prompts ahead of it and its own step(s), plus the wait for a free slot.
"replicas" is the fewest whose share of the traffic meets every target; the model agrees with a
discrete-event simulation of the engine within 10 % (src/serve/queueing_test.cc). --batching
static keeps the batch-at-once model of TensorRT-LLM's gptSessionBenchmark.

Targets: --ttft-p50|p90|p95|p99, --tpot-p50|p90|p95|p99, --e2e-p90|p99 take a duration (1s,
80ms; a bare number is seconds), as the spec's targets do. Continuous: each is compared with
the queueing model's percentile over requests x the median measured/predicted ratio fitted on
published benchmarks (docs/ACCURACY.md, Inference); static: with the estimate x the fitted
ratio of that percentile (P90 for P95/P99). A target that no layout meets even unloaded is
named in the error with how far the closest layout misses it.

JSON: {"candidates": [{"provider", "instance_type", "gpu", "gpu_count" (GPUs per instance),
"tp", "region", "replicas", "instances", "total_gpus" (instances x gpu_count: rented),
"max_concurrency" (sequences per replica), "utilization" (traffic / capacity), "pareto",
"memory": {...}, "latency": {"ttft_seconds", "tpot_seconds" (the estimate at max_concurrency),
"ttft_p50_seconds" ... "ttft_p99_seconds", "tpot_p50_seconds" ... "tpot_p99_seconds",
"e2e_p90_seconds", "e2e_p99_seconds", "queue_wait_p90_seconds"}, "throughput":
{"output_tokens_per_second"}, "cost": {"usd_per_hour", "usd_per_million_output_tokens",
"usd_per_million_input_tokens"}, "unconfirmed", "warnings"}], "latency_band": {...}, "engine",
"scheduler", "batching"}, cheapest per output token first; offers whose price or interconnect
the catalog cannot confirm ("unconfirmed": ["price", "interconnect"], "?" after the rank) come
after the confirmed ones and are left off the Pareto front, as in `fulcrum plan`
(docs/RANKING.md; --rank-unconfirmed mixed: by cost alone); an instance of several GPUs whose
links the catalog does not state is planned over PCIe. On-demand prices; without --requests-per-second each offer is one instance whose
replicas run at the highest load meeting the targets. Each $ per million figure charges the
whole bill to that token kind. A YAML spec (first argument) gives the same fields (model,
engine, precision, kv_precision, batching, prefill_chunk, hf_fused_modules, input_len,
output_len, traffic: {requests_per_second, arrival, input_len, output_len: N | {mean, p90},
concurrency}, targets, tp, gpus, providers, top, rank_unconfirmed); flags override it.)";

struct ServePlanOptions {
  std::string spec_file;
  ServeModelOptions model;
  double requests_per_second = 0;
  std::string arrival = "poisson";
  int64_t concurrency = 0;  // 0 = most that fit
  // Per serve::LatencyTargetFields() entry: the flag's text, a duration ("1s", "80ms", "0.5").
  std::vector<std::string> targets = std::vector<std::string>(serve::LatencyTargetFields().size());
  std::string gpus, providers;
  std::vector<int64_t> tp;
  int64_t top = 20;
  std::string rank_unconfirmed;  // last | mixed; "" = the spec's, else last
  bool json = false;
  std::string html;
};

struct PlanOutcome {
  catalog::Catalog catalog;
  serve::ServeSpec spec;
  serve::ServePlanRequest request;
  std::vector<serve::ServeCandidate> candidates;
};

// "--ttft-p90" for the field "ttft_p90".
std::string TargetFlag(const serve::LatencyTargetField& field) {
  std::string flag = std::string("--") + field.name;
  std::replace(flag.begin(), flag.end(), '_', '-');
  return flag;
}

std::vector<std::string> ListFlag(const std::string& text) {
  std::vector<std::string> out;
  for (const std::string& item : Split(text, ',')) {
    if (!Trim(item).empty()) out.emplace_back(Trim(item));
  }
  return out;
}

// The spec file (if any) with every flag the user gave laid over it.
Result<serve::ServeSpec> MergedSpec(const ServePlanOptions& o, const CLI::App& cmd) {
  serve::ServeSpec spec;
  if (!o.spec_file.empty()) {
    FULCRUM_ASSIGN_OR_RETURN(spec, serve::LoadServeFile(o.spec_file));
  } else {
    spec.origin = "flags";
  }
  auto given = [&](const char* flag) { return cmd.count(flag) > 0; };
  if (given("--model") || given("--hf-config")) {
    spec.model_preset = o.model.model.model;
    spec.hf_config_path = o.model.model.hf_config;
    spec.model_yaml.clear();
  }
  if (given("--precision")) spec.precision = o.model.precision;
  if (given("--kv-precision")) spec.kv_precision = o.model.kv_precision;
  if (given("--engine")) spec.engine = o.model.engine;
  if (given("--batching")) spec.batching = o.model.batching;
  if (given("--prefill-chunk")) spec.prefill_chunk = o.model.prefill_chunk;
  if (given("--hf-fused-modules")) spec.hf_fused_modules = o.model.hf_fused_modules;
  if (given("--arrival")) spec.arrival = o.arrival;
  if (given("--input-len")) spec.input_len = o.model.input_len;
  if (given("--output-len")) spec.output_len = o.model.output_len;
  if (given("--requests-per-second")) spec.requests_per_second = o.requests_per_second;
  if (given("--concurrency")) spec.concurrency = o.concurrency;
  const std::vector<serve::LatencyTargetField>& fields = serve::LatencyTargetFields();
  for (size_t i = 0; i < fields.size(); ++i) {
    const std::string flag = TargetFlag(fields[i]);
    if (!given(flag.c_str())) continue;
    Result<double> seconds = ParseDurationSeconds(o.targets[i]);
    if (!seconds.ok() || !(*seconds > 0)) {
      return Status::InvalidInput(flag +
                                  ": expected a positive time such as 1s, 80ms or 0.5 "
                                  "(seconds), found '" +
                                  o.targets[i] + "'");
    }
    spec.targets.*fields[i].member = *seconds;
  }
  if (given("--tp")) spec.tp = o.tp;
  if (given("--gpus")) spec.gpus = ListFlag(o.gpus);
  if (given("--providers")) spec.providers = ListFlag(o.providers);
  if (given("--top")) spec.top = o.top;
  if (given("--rank-unconfirmed")) {
    FULCRUM_ASSIGN_OR_RETURN(spec.unconfirmed_last, plan::RankUnconfirmedFlag(o.rank_unconfirmed));
  }
  return spec;
}

Status CheckPositive(const std::optional<double>& v, const std::string& field) {
  if (v && !(*v > 0)) {
    return Status::InvalidInput(field + ": expected a positive number of seconds, found " +
                                FormatNumber(*v, 3));
  }
  return Status::Ok();
}

Result<serve::ServePlanRequest> RequestFor(const serve::ServeSpec& spec,
                                           const std::string& catalog_dir) {
  serve::ServePlanRequest r;
  FULCRUM_ASSIGN_OR_RETURN(
      ResolvedServeEngine engine,
      ResolveServeEngine(spec.engine, spec.batching, spec.prefill_chunk.value_or(0), catalog_dir));
  r.engine = engine.profile;
  r.batching = engine.batching;
  r.prefill_chunk = engine.prefill_chunk;
  ServeModelOptions m;
  m.model.model = spec.model_preset;
  m.model.hf_config = spec.hf_config_path;
  m.precision = spec.precision;
  m.kv_precision = spec.kv_precision;
  if (!spec.model_yaml.empty()) {
    FULCRUM_ASSIGN_OR_RETURN(r.model, workload::ParseModelYaml(spec.model_yaml, spec.origin));
    FULCRUM_ASSIGN_OR_RETURN(r.precision, ResolvePrecision(m.precision, engine.profile));
    if (!m.kv_precision.empty()) {
      FULCRUM_ASSIGN_OR_RETURN(r.kv_precision, serve::ParseKvPrecision(m.kv_precision));
    }
  } else if (spec.model_preset.empty() && spec.hf_config_path.empty()) {
    return Status::InvalidInput(
        spec.origin +
        ": model: expected a model (a spec's model or hf_config, or --model / --hf-config), "
        "found none");
  } else {
    FULCRUM_ASSIGN_OR_RETURN(ResolvedServeModel resolved,
                             ResolveServeModel(m, catalog_dir, engine.profile));
    r.model = resolved.model;
    r.precision = resolved.precision;
    r.kv_precision = resolved.kv_precision;
  }
  r.hf_fused_modules = spec.hf_fused_modules;
  r.input_len = spec.input_len.value_or(r.input_len);
  r.output_len = spec.output_len.value_or(r.output_len);
  if (r.input_len < 1 || r.output_len < 1) {
    return Status::InvalidInput("input-len/output-len: expected at least 1 token");
  }
  if (spec.concurrency) {
    if (*spec.concurrency < 1) {
      return Status::InvalidInput("--concurrency: expected at least 1 sequence, found " +
                                  std::to_string(*spec.concurrency));
    }
    r.concurrency = spec.concurrency;
  }
  if (!spec.arrival.empty() && spec.arrival != "poisson" && spec.arrival != "constant") {
    return Status::InvalidInput("--arrival: expected poisson or constant, found '" + spec.arrival +
                                "'");
  }
  r.arrival_scv = spec.arrival == "constant" ? 0 : 1;
  r.output_scv = spec.output_scv.value_or(0);
  r.requests_per_second = spec.requests_per_second.value_or(0);
  if (r.requests_per_second < 0) {
    return Status::InvalidInput("--requests-per-second: expected a rate >= 0");
  }
  const serve::LatencyTargets& t = spec.targets;
  for (const serve::LatencyTargetField& f : serve::LatencyTargetFields()) {
    FULCRUM_RETURN_IF_ERROR(CheckPositive(t.*f.member, TargetFlag(f)));
  }
  r.targets = t;
  r.tp = spec.tp;
  r.unconfirmed_last = spec.unconfirmed_last.value_or(true);
  return r;
}

Result<std::unique_ptr<PlanOutcome>> Run(const ServePlanOptions& o, const CLI::App& cmd,
                                         const std::string& flag) {
  const std::string dir = DefaultCatalogDir(flag);
  FULCRUM_ASSIGN_OR_RETURN(catalog::Catalog cat, catalog::Catalog::Load(dir));
  auto outcome = std::make_unique<PlanOutcome>(PlanOutcome{std::move(cat), {}, {}, {}});
  FULCRUM_ASSIGN_OR_RETURN(outcome->spec, MergedSpec(o, cmd));
  catalog::OfferFilter filter;
  filter.gpus = outcome->spec.gpus;
  filter.providers = outcome->spec.providers;
  filter.pricing = {catalog::Pricing::kOnDemand};
  filter.gpus_flag = "--gpus";
  filter.providers_flag = "--providers";
  FULCRUM_ASSIGN_OR_RETURN(catalog::ResolvedFilter offers,
                           catalog::ResolveOfferFilter(outcome->catalog, filter));
  FULCRUM_ASSIGN_OR_RETURN(outcome->request, RequestFor(outcome->spec, dir));
  FULCRUM_ASSIGN_OR_RETURN(outcome->candidates,
                           serve::PlanServing(outcome->catalog, offers, outcome->request));
  return outcome;
}

// ttft_seconds/tpot_seconds: the estimate at the concurrency; <target>_seconds: each percentile
// the targets are compared with; queue_wait_p90_seconds.
nlohmann::json LatencyJson(const serve::ServeCandidate& c) {
  nlohmann::json out = {{"ttft_seconds", c.estimate.speed.prefill_seconds},
                        {"tpot_seconds", c.estimate.speed.tpot_seconds},
                        {"queue_wait_p90_seconds", c.queue_wait_p90_seconds}};
  for (const serve::LatencyTargetField& f : serve::LatencyTargetFields()) {
    out[std::string(f.name) + "_seconds"] = (c.latency.*f.member).value_or(0);
  }
  return out;
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
          {"total_gpus", c.total_gpus},
          {"max_concurrency", c.concurrency},
          {"utilization", c.utilization},
          {"pareto", c.pareto},
          {"unconfirmed", plan::UnconfirmedNames(c.unconfirmed)},
          {"memory", ServeMemoryJson(c.estimate.memory)},
          {"latency", LatencyJson(c)},
          {"throughput", {{"output_tokens_per_second", c.estimate.speed.output_tokens_per_second}}},
          {"cost",
           {{"usd_per_hour", c.usd_per_hour},
            {"usd_per_million_output_tokens", c.usd_per_million_output_tokens},
            {"usd_per_million_input_tokens", c.usd_per_million_input_tokens}}},
          {"warnings", c.warnings}};
}

std::string Render(const std::vector<serve::ServeCandidate>& candidates, size_t top,
                   bool unconfirmed_last) {
  Table table({"#", "provider", "instance", "gpu", "tp", "replicas", "gpus", "conc", "ttft p90",
               "tpot p90", "$/h", "$/M out", "util", "pareto"},
              {Align::kRight, Align::kLeft, Align::kLeft, Align::kLeft, Align::kRight,
               Align::kRight, Align::kRight, Align::kRight, Align::kRight, Align::kRight,
               Align::kRight, Align::kRight, Align::kRight, Align::kLeft});
  bool any_unconfirmed = false;
  for (size_t i = 0; i < candidates.size() && i < top; ++i) {
    const serve::ServeCandidate& c = candidates[i];
    any_unconfirmed = any_unconfirmed || c.unconfirmed != 0;
    table.AddRow({std::to_string(i + 1) + (c.unconfirmed ? "?" : ""), c.offer->provider,
                  c.offer->instance_type, std::to_string(c.offer->gpu_count) + "x" + c.gpu->name,
                  std::to_string(c.tp), std::to_string(c.replicas), std::to_string(c.total_gpus),
                  std::to_string(c.concurrency), FormatNumber(c.ttft_p90_seconds * 1000, 0) + " ms",
                  FormatNumber(c.tpot_p90_seconds * 1000, 1) + " ms",
                  FormatNumber(c.usd_per_hour, 2), FormatNumber(c.usd_per_million_output_tokens, 3),
                  FormatNumber(100 * c.utilization, 0) + "%", c.pareto ? "*" : ""});
  }
  std::string out = table.Render() + std::to_string(candidates.size()) + " candidates (" +
                    std::to_string(std::min(top, candidates.size())) +
                    " shown); * = Pareto front of $ per output token vs time per output token\n";
  if (any_unconfirmed) {
    out += plan::UnconfirmedFootnote(unconfirmed_last, "offers", "cost");
  }
  return out;
}

}  // namespace

void RegisterServePlan(CLI::App* cmd, CliContext& ctx) {
  cmd->footer(kFooter);
  auto o = std::make_shared<ServePlanOptions>();
  cmd->add_option("spec", o->spec_file, "YAML serve spec (see examples/*-serve.yaml)")
      ->type_name("FILE");
  AddServeModelOptions(cmd, o->model);
  cmd->add_option("--requests-per-second", o->requests_per_second,
                  "Traffic to serve (default: none, one instance per offer)")
      ->type_name("X");
  cmd->add_option("--arrival", o->arrival,
                  "poisson (default: independent arrivals) | constant (evenly spaced)")
      ->type_name("KIND");
  cmd->add_option("--concurrency", o->concurrency,
                  "Concurrent sequences per replica (default: the most that fit, at most 256)")
      ->type_name("N");
  const std::vector<serve::LatencyTargetField>& fields = serve::LatencyTargetFields();
  for (size_t i = 0; i < fields.size(); ++i) {
    const serve::LatencyTargetField& f = fields[i];
    const char* what = f.metric == serve::LatencyMetric::kTtft   ? "time to first token"
                       : f.metric == serve::LatencyMetric::kTpot ? "time per output token"
                                                                 : "end-to-end request time";
    cmd->add_option(TargetFlag(f), o->targets[i],
                    "P" + std::to_string(static_cast<int>(f.quantile * 100 + 0.5)) + " " + what +
                        " target over requests: a duration (1s, 80ms; a bare number is seconds)")
        ->type_name("TIME");
  }
  cmd->add_option("--tp", o->tp,
                  "Tensor-parallel degrees to try (default: every power of two "
                  "the instance allows)")
      ->delimiter(',')
      ->type_name("LIST");
  cmd->add_option("--gpus", o->gpus, "Only these GPU models (names or aliases, comma-separated)")
      ->type_name("LIST");
  cmd->add_option("--providers", o->providers, "Only these providers (comma-separated)")
      ->type_name("LIST");
  cmd->add_option("--top", o->top, "Rows of the table and the HTML report (default: 20)")
      ->type_name("N");
  cmd->add_option("--rank-unconfirmed", o->rank_unconfirmed,
                  "last (default): offers whose price or interconnect the catalog cannot confirm "
                  "rank after the others | mixed: by cost alone")
      ->type_name("HOW");
  cmd->add_flag("--json", o->json, "Print every candidate as JSON (see the contract below)");
  cmd->add_option("--html", o->html, "Also write a self-contained HTML report to FILE")
      ->type_name("FILE");
  cmd->callback([&ctx, o, cmd] {
    Result<std::unique_ptr<PlanOutcome>> outcome = Run(*o, *cmd, ctx.catalog_dir);
    if (!outcome.ok()) {
      ReportError(ctx, outcome.status());
      return;
    }
    const PlanOutcome& p = **outcome;
    const std::vector<serve::ServeCandidate>& cs = p.candidates;
    const size_t top = static_cast<size_t>(std::max<int64_t>(p.spec.top.value_or(20), 1));
    if (!o->html.empty()) {
      serve::ServePlanSummary summary;
      summary.model_name = p.request.model.name;
      summary.parameters = workload::ParameterCount(p.request.model);
      summary.engine = p.request.engine.engine;
      summary.precision = p.request.precision;
      summary.input_len = p.request.input_len;
      summary.output_len = p.request.output_len;
      summary.requests_per_second = p.request.requests_per_second;
      summary.top = top;
      const Status written = WriteTextFile(o->html, serve::ServePlanHtml(cs, summary));
      if (!written.ok()) {
        ReportError(ctx, written);
        return;
      }
    }
    if (o->json) {
      nlohmann::json list = nlohmann::json::array();
      for (const serve::ServeCandidate& c : cs) list.push_back(CandidateJson(c));
      const serve::ServeLatencyBand& b = p.request.band;
      PrintJson(ctx, {{"candidates", list},
                      {"engine", serve::EngineName(p.request.engine.engine)},
                      {"scheduler", p.request.engine.scheduler},
                      {"batching", serve::BatchingName(p.request.batching)},
                      {"latency_band",
                       {{"ttft_p50_ratio", b.ttft_p50_ratio},
                        {"ttft_p90_ratio", b.ttft_p90_ratio},
                        {"tpot_p50_ratio", b.tpot_p50_ratio},
                        {"tpot_p90_ratio", b.tpot_p90_ratio}}}});
    } else {
      ctx.out << Render(cs, top, p.request.unconfirmed_last);
      if (!o->html.empty()) ctx.out << "wrote " << o->html << "\n";
    }
  });
}

}  // namespace fulcrum::cli
