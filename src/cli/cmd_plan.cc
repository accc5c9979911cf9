// `fulcrum plan`: which GPU servers to rent for a training job, how to lay the job out on them,
// how long it takes and what it costs, ranked (src/plan/).
#include <chrono>
#include <cmath>
#include <fstream>
#include <memory>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "catalog/catalog.h"
#include "catalog/offer_query.h"
#include "cli/command.h"
#include "cli/plan_calibration.h"
#include "cluster/slurm.h"
#include "core/parse.h"
#include "core/paths.h"
#include "core/text_file.h"
#include "estimate/calibration_coverage.h"
#include "plan/export.h"
#include "plan/report.h"
#include "plan/search.h"
#include "plan/spec.h"
#include "workload/model_io.h"

namespace fulcrum::cli {
namespace {

struct PlanFlags {
  std::string spec_file;
  std::string model, hf_config, tokens, samples, epochs, seq_len, global_batch, precision, method,
      lora_rank, deadline, budget_usd, max_gpus, providers, regions, gpus, pricing, interruptible,
      weights, top, min_headroom, assume_network_gbps, command, objective, max_nodes, framework,
      disk_gb, egress_gb, checkpoint_every, rank_unconfirmed;
  bool no_checkpointing = false;
  std::string batch_tolerance;
  bool strict_batch = false;
  bool strict_host = false;
  bool allow_precision_fallback = false;
  bool reserved_owned = false;
  bool allow_long_context = false;
  bool simulate_all_spot = false;
  int threads = 0;
  bool json = false;
  std::string html;
  std::vector<std::string> export_args;
  std::string pick;  // "": the best candidate the --export tool can launch
  bool keep_command = false;
  std::string launcher;
  std::string fulcrum_install;
  std::string export_checkpoint_dir = "checkpoints";
  std::string calibrate_from;  // a job of data_dir's jobs.db
  std::string data_dir;
};

Status Need(Result<double> value, const std::string& flag, const std::string& expected,
            const std::string& text, double& out) {
  if (!value.ok()) {
    return Status::InvalidInput(flag + ": expected " + expected + ", found \"" + text + "\"");
  }
  out = *value;
  return Status::Ok();
}

Status ApplyModelAndWork(const PlanFlags& f, plan::PlanSpec& spec) {
  if (!f.model.empty() || !f.hf_config.empty()) {
    spec.model_preset = f.model;
    spec.hf_config_path = f.hf_config;
    spec.model_yaml.clear();
  }
  double v = 0;
  if (!f.tokens.empty()) {
    FULCRUM_RETURN_IF_ERROR(
        Need(ParseCount(f.tokens), "--tokens", "a count such as 20B", f.tokens, v));
    spec.tokens = v;
    spec.samples.reset();
  }
  if (!f.samples.empty()) {
    FULCRUM_RETURN_IF_ERROR(
        Need(ParseCount(f.samples), "--samples", "a count such as 1.28M", f.samples, v));
    spec.samples = v;
    spec.tokens.reset();
  }
  if (!f.epochs.empty()) {
    FULCRUM_RETURN_IF_ERROR(Need(ParseDouble(f.epochs), "--epochs", "a number", f.epochs, v));
    spec.epochs = v;
  }
  if (!f.seq_len.empty()) {
    FULCRUM_RETURN_IF_ERROR(
        Need(ParseCount(f.seq_len), "--seq-len", "a token count such as 4096", f.seq_len, v));
    spec.training.seq_len = static_cast<int64_t>(v);
  }
  if (!f.global_batch.empty()) {
    FULCRUM_RETURN_IF_ERROR(Need(ParseCount(f.global_batch), "--global-batch",
                                 "a number of sequences", f.global_batch, v));
    spec.training.global_batch = static_cast<int64_t>(v);
    spec.global_batch_given = true;
  }
  if (!f.precision.empty()) {
    FULCRUM_ASSIGN_OR_RETURN(spec.training.precision, workload::ParsePrecision(f.precision));
  }
  if (!f.method.empty()) {
    FULCRUM_ASSIGN_OR_RETURN(spec.training.method, workload::ParseMethod(f.method));
  }
  if (!f.lora_rank.empty()) {
    FULCRUM_RETURN_IF_ERROR(
        Need(ParseDouble(f.lora_rank), "--lora-rank", "an integer", f.lora_rank, v));
    spec.training.lora_rank = static_cast<int64_t>(v);
  }
  if (f.no_checkpointing) spec.checkpointing = false;
  if (!f.checkpoint_every.empty()) {
    FULCRUM_RETURN_IF_ERROR(Need(ParseDurationSeconds(f.checkpoint_every), "--checkpoint-every",
                                 "a positive duration such as 30m or 2h", f.checkpoint_every, v));
    if (!(v > 0)) {
      return Status::InvalidInput(
          "--checkpoint-every: expected a positive duration such as 30m "
          "or 2h, found \"" +
          f.checkpoint_every + "\"");
    }
    spec.checkpoint_every_seconds = v;
  }
  if (!f.command.empty()) spec.command = f.command;
  if (f.simulate_all_spot) spec.prune_spot = false;
  if (f.allow_long_context) spec.allow_long_context = true;
  return Status::Ok();
}

std::vector<std::string> Names(const std::string& text) {
  std::vector<std::string> out;
  for (const std::string& part : Split(text, ',')) {
    if (!Trim(part).empty()) out.emplace_back(Trim(part));
  }
  return out;
}

Status ApplyConstraints(const PlanFlags& f, plan::PlanSpec& spec) {
  plan::Constraints& c = spec.constraints;
  double v = 0;
  if (!f.deadline.empty()) {
    FULCRUM_RETURN_IF_ERROR(Need(ParseDurationSeconds(f.deadline), "--deadline",
                                 "a duration such as 7d or 36h", f.deadline, v));
    c.deadline_seconds = v;
  }
  if (!f.budget_usd.empty()) {
    FULCRUM_RETURN_IF_ERROR(
        Need(ParseDouble(f.budget_usd), "--budget-usd", "an amount in USD", f.budget_usd, v));
    if (!(v > 0)) {
      ErrorDetail detail;
      detail.field = "budget_usd";
      detail.expected = "a positive amount in USD";
      detail.found = f.budget_usd;
      return Status::InvalidInput("--budget-usd: expected a positive amount in USD, found \"" +
                                  f.budget_usd + "\"")
          .WithDetail(detail);
    }
    c.budget_usd = v;
  }
  if (!f.disk_gb.empty()) {
    FULCRUM_RETURN_IF_ERROR(Need(ParseDouble(f.disk_gb), "--disk-gb", "GB >= 0", f.disk_gb, v));
    if (!(v >= 0)) return Status::InvalidInput("--disk-gb: expected GB >= 0, found " + f.disk_gb);
    spec.storage.disk_gb = v;
  }
  if (!f.egress_gb.empty()) {
    FULCRUM_RETURN_IF_ERROR(
        Need(ParseDouble(f.egress_gb), "--egress-gb", "GB >= 0", f.egress_gb, v));
    if (!(v >= 0)) {
      return Status::InvalidInput("--egress-gb: expected GB >= 0, found " + f.egress_gb);
    }
    spec.storage.egress_gb = v;
  }
  if (!f.max_nodes.empty()) {
    FULCRUM_RETURN_IF_ERROR(
        Need(ParseDouble(f.max_nodes), "--max-nodes", "an integer >= 1", f.max_nodes, v));
    if (v < 1 || v != static_cast<int>(v)) {
      return Status::InvalidInput("--max-nodes: expected an integer >= 1, found \"" + f.max_nodes +
                                  "\"");
    }
    c.max_nodes = static_cast<int>(v);
  }
  if (!f.framework.empty()) {
    FULCRUM_ASSIGN_OR_RETURN(c.frameworks, workload::ParseFrameworkList(f.framework));
  }
  if (!f.batch_tolerance.empty()) {
    const std::optional<double> fraction = plan::BatchToleranceFraction(f.batch_tolerance);
    if (!fraction) {
      return Status::InvalidInput(
          "--batch-tolerance: expected a percentage from 0 to 50, found \"" + f.batch_tolerance +
          "\"");
    }
    c.batch_tolerance = *fraction;
  }
  if (f.strict_batch) c.strict_batch = true;
  if (f.strict_host) c.strict_host = true;
  if (f.allow_precision_fallback) c.allow_precision_fallback = true;
  if (f.reserved_owned) c.reserved_owned = true;
  if (!f.objective.empty()) {
    FULCRUM_ASSIGN_OR_RETURN(spec.objective, plan::ParseObjective(f.objective));
  }
  if (!f.rank_unconfirmed.empty()) {
    FULCRUM_ASSIGN_OR_RETURN(spec.unconfirmed_last, plan::RankUnconfirmedFlag(f.rank_unconfirmed));
  }
  if (!f.max_gpus.empty()) {
    FULCRUM_RETURN_IF_ERROR(
        Need(ParseDouble(f.max_gpus), "--max-gpus", "an integer", f.max_gpus, v));
    c.max_gpus = static_cast<int>(v);
  }
  if (!f.providers.empty()) c.providers = Names(f.providers);
  if (!f.regions.empty()) c.regions = Names(f.regions);
  if (!f.gpus.empty()) c.gpus = Names(f.gpus);
  if (!f.pricing.empty()) {
    c.pricing.clear();
    for (const std::string& name : Names(f.pricing)) {
      FULCRUM_ASSIGN_OR_RETURN(plan::PricingModel p, plan::ParsePricingModel(name));
      c.pricing.push_back(p);
    }
  }
  if (!f.interruptible.empty()) {
    const std::string t = ToLower(f.interruptible);
    if (t != "yes" && t != "no" && t != "true" && t != "false") {
      return Status::InvalidInput("--interruptible: expected yes or no, found \"" +
                                  f.interruptible + "\"");
    }
    c.interruptible = t == "yes" || t == "true";
  }
  if (!f.min_headroom.empty()) {
    FULCRUM_RETURN_IF_ERROR(Need(ParseDouble(f.min_headroom), "--min-headroom",
                                 "a fraction such as 0.1", f.min_headroom, v));
    if (v < 0 || v >= 1) {
      return Status::InvalidInput("--min-headroom: expected a fraction in [0, 1), found \"" +
                                  f.min_headroom + "\"");
    }
    c.min_headroom = v;
  }
  if (!f.assume_network_gbps.empty()) {
    FULCRUM_RETURN_IF_ERROR(Need(ParseDouble(f.assume_network_gbps), "--assume-network-gbps",
                                 "a bandwidth in Gbit/s", f.assume_network_gbps, v));
    c.assume_network_gbps = v;
  }
  if (!f.weights.empty()) {
    FULCRUM_ASSIGN_OR_RETURN(spec.weights, plan::ParseWeights(f.weights, spec.weights));
  }
  if (!f.top.empty()) {
    FULCRUM_RETURN_IF_ERROR(Need(ParseDouble(f.top), "--top", "an integer", f.top, v));
    spec.top = static_cast<int>(v);
  }
  return Status::Ok();
}

// Errors about the offer filters (resolved in plan::RunPlan) name the flag that set them.
void NameFilterFlags(const PlanFlags& f, plan::Constraints& c) {
  if (!f.gpus.empty()) c.filter_origins.gpus = "--gpus";
  if (!f.providers.empty()) c.filter_origins.providers = "--providers";
  if (!f.regions.empty()) c.filter_origins.regions = "--regions";
  if (!f.pricing.empty()) c.filter_origins.pricing = "--pricing";
}

Result<workload::Model> ResolveModel(const plan::PlanSpec& spec, const std::string& catalog_dir) {
  if (!spec.hf_config_path.empty()) return workload::LoadHfConfigFile(spec.hf_config_path);
  if (!spec.model_yaml.empty()) return workload::ParseModelYaml(spec.model_yaml, spec.origin);
  return workload::LoadModelPreset(catalog_dir, spec.model_preset);
}

Status WriteFile(const std::string& path, const std::string& text) {
  return WriteTextFile(path, text);
}

// --launcher skypilot|dstack|slurm: the tools whose launchable offers fulcrum knows
// (catalog/export_<tool>.csv; Slurm: plan/export.h LauncherFilterOf).
Result<plan::ExportFormat> ParseLauncherFlag(const std::string& text) {
  Result<plan::ExportFormat> format = plan::ParseExportFormat(text);
  if (format.ok()) return format;
  ErrorDetail detail;
  detail.field = "--launcher";
  detail.expected = "skypilot, dstack or slurm";
  detail.found = text;
  detail.nearest =
      format.status().detail() ? format.status().detail()->nearest : std::vector<std::string>{};
  return Status::InvalidInput("--launcher: expected skypilot, dstack or slurm, found \"" + text +
                              "\"")
      .WithDetail(detail);
}

// --export FORMAT FILE, --pick RANK|all, --fulcrum-install, --checkpoint-dir: checked before
// the plan runs. `picks` is empty for `--pick all`.
Result<plan::ExportFormat> ParseExportFlags(const PlanFlags& f, std::vector<int>& picks) {
  if (f.export_args.size() != 2) {
    return Status::InvalidInput(
        "--export: expected FORMAT FILE (skypilot|dstack|slurm and a path)");
  }
  FULCRUM_ASSIGN_OR_RETURN(plan::ExportFormat format, plan::ParseExportFormat(f.export_args[0]));
  if (!f.pick.empty() && ToLower(Trim(f.pick)) != "all") {
    Result<double> rank = ParseDouble(f.pick);
    if (!rank.ok() || *rank < 1 || *rank != std::floor(*rank) || *rank > 1e6) {
      ErrorDetail detail;
      detail.field = "--pick";
      detail.expected = "a rank (1, 2, ...) or all";
      detail.found = f.pick;
      return Status::InvalidInput("--pick: expected a rank (1, 2, ...) or all, found \"" + f.pick +
                                  "\"")
          .WithDetail(detail);
    }
    picks.push_back(static_cast<int>(*rank));
  }
  plan::ExportOptions options;
  options.fulcrum_install = f.fulcrum_install;
  options.checkpoint_dir = f.export_checkpoint_dir;
  FULCRUM_RETURN_IF_ERROR(plan::ValidateExportOptions(options));
  return format;
}

// A Slurm export through the one Slurm script writer: `fulcrum` from PATH (the setup installs it
// on the batch host), the partition's defaults.
std::string SlurmScript(const plan::SlurmTask& task) {
  cluster::SbatchSpec spec;
  spec.job_name = task.job_name;
  spec.nodes = task.nodes;
  spec.gpus_per_node = task.gpus_per_node;
  spec.comment = task.header;
  spec.fulcrum_binary = "fulcrum";
  spec.written_by = "fulcrum plan --export slurm";
  spec.setup = task.setup;
  spec.run_args = task.run_args;
  spec.node_command = task.node_command;
  return cluster::GenerateSbatch(spec);
}

// Writes the exports and lists the candidates the tool cannot launch on stderr. Returns the
// `export` JSON object.
Result<nlohmann::json> WriteExports(const PlanFlags& f, const plan::PlanResult& result,
                                    const catalog::Catalog& catalog, const std::string& catalog_dir,
                                    plan::ExportFormat format, const std::vector<int>& picks,
                                    CliContext& ctx, std::vector<std::string>& files) {
  FULCRUM_ASSIGN_OR_RETURN(plan::ExportTables tables, plan::LoadExportTables(catalog_dir, format));
  plan::ExportOptions options;
  options.fulcrum_install = f.fulcrum_install;
  options.checkpoint_dir = f.export_checkpoint_dir;
  options.best_launchable = f.pick.empty();
  options.keep_command = f.keep_command;
  FULCRUM_ASSIGN_OR_RETURN(plan::ExportResult exported,
                           plan::ExportCandidates(result, catalog, tables, options, picks));
  for (const plan::ExportedTask& task : exported.tasks) {
    files.push_back(
        plan::ExportFileName(f.export_args[1], task.rank, picks.empty() && !f.pick.empty()));
    FULCRUM_RETURN_IF_ERROR(
        WriteFile(files.back(), task.slurm ? SlurmScript(*task.slurm) : task.text));
  }
  for (const plan::SkippedCandidate& s : exported.skipped) {
    ctx.err << "not exported: rank " << s.rank << ": " << s.reason << "\n";
  }
  return plan::ExportJson(exported, files);
}

Status RunPlanCommand(const PlanFlags& f, CliContext& ctx) {
  plan::PlanSpec spec;
  spec.origin = "flags";
  if (!f.spec_file.empty()) {
    FULCRUM_ASSIGN_OR_RETURN(spec, plan::LoadPlanFile(f.spec_file));
  }
  FULCRUM_RETURN_IF_ERROR(ApplyModelAndWork(f, spec));
  FULCRUM_RETURN_IF_ERROR(ApplyConstraints(f, spec));
  FULCRUM_RETURN_IF_ERROR(plan::ValidateSpec(spec));
  std::optional<plan::ExportFormat> export_format;
  std::vector<int> picks;
  if (!f.export_args.empty()) {
    FULCRUM_ASSIGN_OR_RETURN(export_format, ParseExportFlags(f, picks));
  }
  const std::string catalog_dir = DefaultCatalogDir(ctx.catalog_dir);
  FULCRUM_ASSIGN_OR_RETURN(catalog::Catalog catalog, catalog::Catalog::Load(catalog_dir));
  NameFilterFlags(f, spec.constraints);
  if (!f.launcher.empty()) {
    FULCRUM_ASSIGN_OR_RETURN(plan::ExportFormat launcher, ParseLauncherFlag(f.launcher));
    FULCRUM_ASSIGN_OR_RETURN(plan::ExportTables tables,
                             plan::LoadExportTables(catalog_dir, launcher));
    spec.constraints.launcher = plan::LauncherFilterOf(tables);
  }
  FULCRUM_ASSIGN_OR_RETURN(workload::Model model, ResolveModel(spec, catalog_dir));
  FULCRUM_RETURN_IF_ERROR(workload::ValidateModel(model));
  std::string note;
  FULCRUM_ASSIGN_OR_RETURN(plan::CostAssumptions assumptions,
                           plan::LoadCheckedCostAssumptions(catalog_dir, &note));
  Result<std::vector<std::string>> covered =
      estimate::CalibratedArchitectures(estimate::DefaultMeasuredCsvPath(catalog_dir), catalog);
  if (covered.ok()) assumptions.calibrated_architectures = std::move(*covered);
  std::optional<Calibration> calibration;
  if (!f.calibrate_from.empty()) {
    FULCRUM_ASSIGN_OR_RETURN(
        calibration, ReadCalibration(store::ResolveDataDir(f.data_dir), f.calibrate_from, catalog));
    const double now =
        std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    ApplyCalibration(*calibration, now, spec);
    spec.measured = calibration->factors;
  }
  FULCRUM_ASSIGN_OR_RETURN(plan::PlanResult result,
                           plan::RunPlan(catalog, model, spec, assumptions, f.threads));
  if (!note.empty()) result.notes.push_back(note);
  if (!f.html.empty()) {
    FULCRUM_RETURN_IF_ERROR(WriteFile(f.html, plan::PlanHtml(result, catalog)));
  }
  std::optional<nlohmann::json> export_json;
  std::vector<std::string> export_files;
  if (export_format) {
    FULCRUM_ASSIGN_OR_RETURN(export_json, WriteExports(f, result, catalog, catalog_dir,
                                                       *export_format, picks, ctx, export_files));
  }
  if (f.json) {
    nlohmann::json j = plan::PlanJson(result, catalog);
    if (export_json) j["export"] = *export_json;
    if (calibration) j["calibrated_from"] = CalibrationJson(*calibration, result, catalog);
    PrintJson(ctx, j);
  } else {
    if (calibration) ctx.out << CalibrationText(*calibration, result, catalog);
    ctx.out << plan::PlanTable(result, catalog);
    if (!f.html.empty()) ctx.out << "wrote " << f.html << "\n";
    for (const std::string& file : export_files) ctx.out << "wrote " << file << "\n";
  }
  if (result.candidates.empty()) ctx.exit_code = 1;
  return Status::Ok();
}

constexpr const char* kFooter =
    "Examples:\n"
    "  fulcrum plan examples/llama-7b-finetune.yaml\n"
    "  fulcrum plan --model llama-2-7b --tokens 20B --seq-len 4096 --deadline 7d "
    "--budget-usd 20000\n"
    "  fulcrum plan examples/llama-70b-pretrain.yaml --json --html report.html\n"
    "  fulcrum plan examples/llama-8b-lora.yaml --export skypilot task.yaml --pick 2 \\\n"
    "      --fulcrum-install ./install-fulcrum.sh\n"
    "  fulcrum plan examples/llama-70b-pretrain.yaml --launcher slurm --export slurm job.sbatch "
    "\\\n"
    "      --fulcrum-install ./install-fulcrum.sh\n\n"
    "Flags override the spec file. The search covers every offer that passes the filters x node\n"
    "counts x (tp, pp, vpp, dp, cp from 16k tokens, ep for MoE, ZeRO stage, recompute,\n"
    "micro-batch) that fits in GPU memory with the required headroom; for each offer, node count\n"
    "and pricing model it keeps the fastest layout (a slower one can never be cheaper or score\n"
    "higher). Candidates that miss the deadline (at P90) or the budget are ranked after those\n"
    "that meet both, and flagged: first the near misses (a miss within 5 % of the nearest one,\n"
    "JSON near_miss) by P90 cost (--objective cheapest: expected cost), then the rest by how\n"
    "far they miss (miss_factor: the larger of P90 / deadline and expected cost / budget;\n"
    "--objective fastest orders every miss so).\n"
    "Score = weighted stability, performance, cost, usability, support (0.30/0.25/0.20/0.15/\n"
    "0.10); unknown provider attributes count as neutral (0.5) and are listed in JSON\n"
    "score.unknown. In the table, * marks the Pareto front of (total time, expected cost).\n"
    "Unconfirmed rows (? after the rank; JSON unconfirmed): the offer's price is not confirmed\n"
    "on the provider's pages (catalog caveat price-unverified) or it has several GPUs whose\n"
    "interconnect the catalog does not state. Among the rows that meet the constraints they\n"
    "rank after the confirmed ones (--rank-unconfirmed mixed: by the objective alone).\n"
    "Filters: machine types their provider documents for serving only (catalog column use,\n"
    "e.g. GCP A3 Edge) are never training candidates (serve-plan uses them); offers without a\n"
    "citable price are left out until `fulcrum catalog import` gives them one.";

// How the candidates are ranked and how many are shown (part of RegisterPlan).
void RegisterRankingOptions(CLI::App* cmd, PlanFlags& f) {
  cmd->add_option("--weights", f.weights,
                  "Score weights, e.g. cost=0.4,performance=0.3 (others keep their defaults)")
      ->type_name("LIST");
  cmd->add_option("--top", f.top, "Show the top N candidates (default 10)")->type_name("N");
  cmd->add_option("--objective", f.objective,
                  "Rank feasible candidates by: balanced (default: weighted score), cheapest "
                  "(expected cost) or fastest (P90 time)")
      ->type_name("balanced|cheapest|fastest");
  cmd->add_option("--rank-unconfirmed", f.rank_unconfirmed,
                  "Rows whose price or intra-node interconnect the catalog cannot confirm "
                  "(caveat price-unverified; several GPUs, interconnect unknown): last (default: "
                  "after every confirmed row that meets the constraints) or mixed (by the "
                  "objective alone); docs/RANKING.md")
      ->type_name("last|mixed");
}

}  // namespace

void RegisterPlan(CLI::App* cmd, CliContext& ctx) {
  auto f = std::make_shared<PlanFlags>();
  cmd->footer(kFooter);
  cmd->add_option("spec", f->spec_file, "YAML plan spec (see examples/*.yaml)")->type_name("FILE");
  cmd->add_option("--model", f->model, "Model preset (catalog/models, e.g. llama-2-7b)")
      ->type_name("NAME");
  cmd->add_option("--hf-config", f->hf_config, "HuggingFace config.json instead of a preset")
      ->type_name("FILE");
  cmd->add_option("--tokens", f->tokens, "Tokens to train on (e.g. 20B)")->type_name("COUNT");
  cmd->add_option("--samples", f->samples, "Samples per epoch instead of tokens (e.g. 1.28M)")
      ->type_name("COUNT");
  cmd->add_option("--epochs", f->epochs, "Epochs over --samples (default 1)")->type_name("N");
  cmd->add_option("--seq-len", f->seq_len, "Sequence length in tokens (default 2048)")
      ->type_name("TOKENS");
  cmd->add_option("--global-batch", f->global_batch,
                  "Sequences per optimizer step (default 2^20 tokens; 256 samples for generic "
                  "models)")
      ->type_name("SEQUENCES");
  cmd->add_option("--precision", f->precision, "bf16 (default), fp16, fp8, fp32, tf32, pure-bf16")
      ->type_name("PRECISION");
  cmd->add_option("--method", f->method, "full (default), lora or qlora")->type_name("METHOD");
  cmd->add_option("--lora-rank", f->lora_rank, "LoRA rank (default 16)")->type_name("RANK");
  cmd->add_option("--deadline", f->deadline, "Finish within this duration at P90 (e.g. 7d)")
      ->type_name("DURATION");
  cmd->add_option("--budget-usd", f->budget_usd, "Spend at most this much (USD, expected)")
      ->type_name("USD");
  cmd->add_option("--max-gpus", f->max_gpus, "At most this many GPUs in total (default 512)")
      ->type_name("N");
  cmd->add_option("--providers", f->providers, "Only these providers (comma-separated)")
      ->type_name("LIST");
  cmd->add_option("--regions", f->regions, "Only these regions (comma-separated)")
      ->type_name("LIST");
  cmd->add_option("--gpus", f->gpus, "Only these GPU models (names or aliases, comma-separated)")
      ->type_name("LIST");
  cmd->add_option("--pricing", f->pricing,
                  "Pricing models: on_demand, spot (spot only: waits through preemptions), "
                  "spot_with_fallback (spot that switches to on-demand when the deadline needs "
                  "it), reserved_1y, reserved_3y (default on_demand,spot)")
      ->type_name("LIST");
  cmd->add_option("--interruptible", f->interruptible, "yes (default) or no: allow spot")
      ->type_name("yes|no");
  cmd->add_option("--checkpoint-every", f->checkpoint_every,
                  "Checkpoint this often (default: every 30 min, Young's optimum when shorter, "
                  "never a write over 5 % of the interval); also the exported run line's")
      ->type_name("DURATION");
  cmd->add_flag("--no-checkpointing", f->no_checkpointing,
                "The job cannot checkpoint/resume (spot becomes a pitfall)");
  RegisterRankingOptions(cmd, *f);
  cmd->add_option("--disk-gb", f->disk_gb,
                  "Persistent disk the job keeps while it runs (GB; priced per provider)")
      ->type_name("GB");
  cmd->add_option("--egress-gb", f->egress_gb,
                  "Data or checkpoints leaving the region (GB; priced per provider)")
      ->type_name("GB");
  cmd->add_option("--max-nodes", f->max_nodes, "At most this many nodes per candidate")
      ->type_name("N");
  cmd->add_option(
         "--framework", f->framework,
         "The frameworks the job runs (a comma list of megatron, deepspeed, fsdp, ddp, hf, "
         "megatron-fsdp, megatron-deepspeed); only their layouts are planned. Default: "
         "from the spec's command (torchrun of an unknown script: ddp, fsdp, deepspeed; "
         "pretrain_gpt.py: megatron; torchtitan: fsdp; ...), else every framework")
      ->type_name("LIST");
  cmd->add_option("--batch-tolerance", f->batch_tolerance,
                  "Data parallelism may change the global batch by at most PCT percent where no "
                  "layout keeps it (default 5; flagged global-batch-changed)")
      ->type_name("PCT");
  cmd->add_flag("--strict-batch", f->strict_batch,
                "Only the spec's global batch, exactly (no --batch-tolerance)");
  cmd->add_flag("--strict-host", f->strict_host,
                "Drop nodes whose known host RAM or vCPUs fall short of the job's (otherwise "
                "flagged host-ram-short / host-cpu-short and scored lower)");
  cmd->add_flag("--allow-precision-fallback", f->allow_precision_fallback,
                "Plan GPUs without the requested precision in fp16 (flagged) instead of skipping "
                "them");
  cmd->add_flag("--allow-long-context", f->allow_long_context,
                "Plan a sequence length beyond the model's context (a context-extension run)");
  cmd->add_flag("--reserved-owned", f->reserved_owned,
                "Reserved capacity is already paid for: reserved rows cost their marginal hourly "
                "price instead of the term's full commitment");
  cmd->add_option("--min-headroom", f->min_headroom,
                  "Fraction of GPU memory a layout must leave free (default 0.1)")
      ->type_name("FRACTION");
  cmd->add_option("--assume-network-gbps", f->assume_network_gbps,
                  "Plan multi-node runs on offers with unknown network at this Gbit/s per node")
      ->type_name("GBPS");
  cmd->add_option("--command", f->command, "Your training command, for --export")
      ->type_name("COMMAND");
  cmd->add_flag("--simulate-all-spot", f->simulate_all_spot,
                "Simulate every spot candidate (by default those provably outside the top N and "
                "the Pareto front are skipped; the output is the same, only slower)");
  cmd->add_option("--threads", f->threads, "Search threads (default: all cores)")->type_name("N");
  cmd->add_flag("--json", f->json,
                "Print the plan as JSON ({\"candidates\", \"pareto\", "
                "\"searched\"})");
  cmd->add_option("--html", f->html, "Also write a self-contained HTML report to FILE")
      ->type_name("FILE");
  cmd->add_option("--export", f->export_args,
                  "Write the picked candidate as a launch file: skypilot FILE (SkyPilot task "
                  "YAML), dstack FILE (dstack task) or slurm FILE (sbatch script: one `fulcrum "
                  "run` on the batch host, srun starting the command once per node)")
      ->expected(2)
      ->type_name("FORMAT FILE");
  cmd->add_option("--pick", f->pick,
                  "Rank to export (default: the best candidate the tool can launch), or all: "
                  "every candidate the tool can launch, to FILE-<rank>.<ext>")
      ->type_name("RANK|all");
  cmd->add_option("--launcher", f->launcher,
                  "Plan only what this launcher can start: skypilot or dstack (their clouds, "
                  "regions, accelerators and node limits, on-demand or spot); slurm (what an "
                  "sbatch script starts: N identical nodes of the offer, --nodes N "
                  "--gres=gpu:G, one launcher per node through srun; any offer and node count, "
                  "on-demand, reserved or spot, not spot_with_fallback: a batch job cannot move "
                  "to on-demand capacity near the deadline)")
      ->type_name("skypilot|dstack|slurm");
  cmd->add_flag("--keep-command", f->keep_command,
                "For --export: refuse (exit 2) a pick on which the command would not start one "
                "process per GPU or, for a Megatron-LM entry point, a NeMo Hydra script or "
                "Megatron-Bridge's run_recipe.py, not run the planned layout, "
                "instead of rewriting its launcher's process and node options and the script's "
                "layout arguments");
  cmd->add_option("--fulcrum-install", f->fulcrum_install,
                  "For --export: shell command that installs fulcrum on the node (run by the "
                  "task's setup when fulcrum is not on PATH; required)")
      ->type_name("COMMAND");
  cmd->add_option("--checkpoint-dir", f->export_checkpoint_dir,
                  "For --export: the job's checkpoint directory on the node (default "
                  "checkpoints)")
      ->type_name("DIR");
  cmd->add_option("--calibrate-from", f->calibrate_from,
                  "Re-plan with what this job (of --data-dir's jobs.db, run with --plan) "
                  "measured: its measured / planned step time on offers of its GPU model, GPUs "
                  "per node and interconnect (other offers keep the estimate), its measured "
                  "memory peak on every offer; a job under way is planned for the rest of its "
                  "work; says what changes (JSON calibrated_from)")
      ->type_name("JOB");
  cmd->add_option("--data-dir", f->data_dir,
                  "For --calibrate-from: the data dir holding jobs.db (as for fulcrum run)")
      ->type_name("DIR");
  cmd->callback([f, &ctx] {
    Status status = RunPlanCommand(*f, ctx);
    if (!status.ok()) ReportError(ctx, status);
  });
}

}  // namespace fulcrum::cli
