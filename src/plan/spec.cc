#include "plan/spec.h"

#include <cmath>
#include <filesystem>
#include <limits>

#include <fmt/format.h>

#include "core/parse.h"
#include "core/text_file.h"
#include "core/yaml.h"

namespace fulcrum::plan {
namespace {

constexpr double kPositive = YamlNode::kAboveZero;
constexpr double kBelowOne = 1.0 - std::numeric_limits<double>::epsilon() / 2;

// `framework: fsdp`, `framework: fsdp,deepspeed` or `framework: [fsdp, deepspeed]`.
Status ParseFrameworks(const YamlNode& v, Constraints& c) {
  FULCRUM_ASSIGN_OR_RETURN(std::vector<std::string> names, v.StringList(true));
  workload::FrameworkMask mask = 0;
  for (const std::string& name : names) {
    Result<workload::Framework> f = workload::ParseFramework(name);
    if (!f.ok()) return v.Error("megatron, deepspeed, fsdp, ddp or hf (or a list of them)");
    mask |= workload::FrameworkBit(*f);
  }
  if (mask == 0) return v.Error("megatron, deepspeed, fsdp, ddp or hf (or a list of them)");
  c.frameworks = mask;
  return Status::Ok();
}

// `batch_tolerance: 5` or `5%`: percent of the global batch, 0 to 50.
Status ParseBatchTolerance(const YamlNode& v, Constraints& c) {
  FULCRUM_ASSIGN_OR_RETURN(std::string text, v.Text());
  const std::optional<double> fraction = BatchToleranceFraction(text);
  if (!fraction) return v.Error("a percentage from 0 to 50, e.g. 5");
  c.batch_tolerance = *fraction;
  return Status::Ok();
}

Status ParseConstraints(const YamlNode& node, Constraints& c) {
  FULCRUM_RETURN_IF_ERROR(
      node.CheckKeys({"deadline", "budget_usd", "max_gpus", "providers", "regions", "gpus",
                      "pricing", "interruptible", "min_headroom", "assume_network_gbps",
                      "max_nodes", "framework", "strict_batch", "batch_tolerance", "strict_host"}));
  if (auto v = node.Find("deadline")) {
    FULCRUM_ASSIGN_OR_RETURN(c.deadline_seconds, v->Duration("a duration such as 7d or 36h"));
  }
  if (auto v = node.Find("budget_usd")) {
    FULCRUM_ASSIGN_OR_RETURN(c.budget_usd, v->Number("a positive amount of USD", kPositive));
  }
  if (auto v = node.Find("max_gpus")) {
    FULCRUM_ASSIGN_OR_RETURN(double n, v->Number("a positive integer", kPositive));
    c.max_gpus = static_cast<int>(n);
  }
  if (auto v = node.Find("providers")) {
    FULCRUM_ASSIGN_OR_RETURN(c.providers, v->StringList(true));
  }
  if (auto v = node.Find("regions")) {
    FULCRUM_ASSIGN_OR_RETURN(c.regions, v->StringList(true));
  }
  if (auto v = node.Find("gpus")) {
    FULCRUM_ASSIGN_OR_RETURN(c.gpus, v->StringList(true));
  }
  if (auto v = node.Find("pricing")) {
    FULCRUM_ASSIGN_OR_RETURN(std::vector<std::string> names, v->StringList(true));
    c.pricing.clear();
    for (const std::string& name : names) {
      Result<PricingModel> p = ParsePricingModel(name);
      if (!p.ok()) {
        return v->Error("on_demand, reserved_1y, reserved_3y, spot or spot_with_fallback");
      }
      c.pricing.push_back(*p);
    }
  }
  if (auto v = node.Find("interruptible")) {
    FULCRUM_ASSIGN_OR_RETURN(c.interruptible, v->Bool());
  }
  if (auto v = node.Find("min_headroom")) {
    FULCRUM_ASSIGN_OR_RETURN(c.min_headroom,
                             v->Number("a fraction in [0, 1), e.g. 0.1", 0, kBelowOne));
  }
  if (auto v = node.Find("assume_network_gbps")) {
    FULCRUM_ASSIGN_OR_RETURN(c.assume_network_gbps,
                             v->Number("a positive bandwidth in Gbit/s", kPositive));
  }
  if (auto v = node.Find("max_nodes")) {
    FULCRUM_ASSIGN_OR_RETURN(double n, v->Number("a positive integer", kPositive));
    c.max_nodes = static_cast<int>(n);
  }
  if (auto v = node.Find("framework")) FULCRUM_RETURN_IF_ERROR(ParseFrameworks(*v, c));
  if (auto v = node.Find("batch_tolerance")) FULCRUM_RETURN_IF_ERROR(ParseBatchTolerance(*v, c));
  if (auto v = node.Find("strict_batch")) {
    FULCRUM_ASSIGN_OR_RETURN(c.strict_batch, v->Bool());
  }
  if (auto v = node.Find("strict_host")) {
    FULCRUM_ASSIGN_OR_RETURN(c.strict_host, v->Bool());
  }
  return Status::Ok();
}

Status ParseWeightsNode(const YamlNode& node, Weights& w) {
  FULCRUM_RETURN_IF_ERROR(
      node.CheckKeys({"stability", "performance", "cost", "usability", "support"},
                     "a mapping of criterion: weight"));
  const std::pair<const char*, double*> fields[] = {{"stability", &w.stability},
                                                    {"performance", &w.performance},
                                                    {"cost", &w.cost},
                                                    {"usability", &w.usability},
                                                    {"support", &w.support}};
  for (const auto& [name, target] : fields) {
    if (auto v = node.Find(name)) {
      FULCRUM_ASSIGN_OR_RETURN(*target, v->Number("a weight >= 0", 0));
    }
  }
  return Status::Ok();
}

Status ParseCosts(const YamlNode& node, ExtraCosts& e) {
  FULCRUM_RETURN_IF_ERROR(
      node.CheckKeys({"storage_gb", "storage_usd_per_gb_month", "egress_gb", "egress_usd_per_gb"}));
  const std::pair<const char*, double*> fields[] = {
      {"storage_gb", &e.storage_gb},
      {"storage_usd_per_gb_month", &e.storage_usd_per_gb_month},
      {"egress_gb", &e.egress_gb},
      {"egress_usd_per_gb", &e.egress_usd_per_gb}};
  for (const auto& [name, target] : fields) {
    if (auto v = node.Find(name)) {
      FULCRUM_ASSIGN_OR_RETURN(*target, v->Number("a number >= 0", 0));
    }
  }
  return Status::Ok();
}

Status ParseStorage(const YamlNode& node, StorageNeeds& n) {
  FULCRUM_RETURN_IF_ERROR(node.CheckKeys({"disk_gb", "checkpoint_gb", "keep_days"}));
  const std::pair<const char*, double*> fields[] = {
      {"disk_gb", &n.disk_gb}, {"checkpoint_gb", &n.checkpoint_gb}, {"keep_days", &n.keep_days}};
  for (const auto& [name, target] : fields) {
    if (auto v = node.Find(name)) {
      FULCRUM_ASSIGN_OR_RETURN(*target, v->Number("a number >= 0", 0));
    }
  }
  return Status::Ok();
}

Status ParseTraining(const YamlNode& root, PlanSpec& spec) {
  workload::Training& t = spec.training;
  if (auto v = root.Find("seq_len")) {
    FULCRUM_ASSIGN_OR_RETURN(double n, v->Number("a positive integer (tokens)", kPositive));
    t.seq_len = static_cast<int64_t>(n);
  }
  if (auto v = root.Find("global_batch")) {
    FULCRUM_ASSIGN_OR_RETURN(double n, v->Number("a positive number of sequences", kPositive));
    t.global_batch = static_cast<int64_t>(n);
    spec.global_batch_given = true;
  }
  if (auto v = root.Find("precision")) {
    FULCRUM_ASSIGN_OR_RETURN(std::string text, v->Text());
    Result<workload::Precision> p = workload::ParsePrecision(text);
    if (!p.ok()) return v->Error("bf16, fp16, fp8 or fp32");
    t.precision = *p;
  }
  if (auto v = root.Find("method")) {
    FULCRUM_ASSIGN_OR_RETURN(std::string text, v->Text());
    Result<workload::Method> m = workload::ParseMethod(text);
    if (!m.ok()) return v->Error("full, lora or qlora");
    t.method = *m;
  }
  if (auto v = root.Find("optimizer")) {
    FULCRUM_ASSIGN_OR_RETURN(std::string text, v->Text());
    Result<workload::Optimizer> o = workload::ParseOptimizer(text);
    if (!o.ok()) return v->Error("adamw, sgd or adam8bit");
    t.optimizer = *o;
  }
  if (auto v = root.Find("lora_rank")) {
    FULCRUM_ASSIGN_OR_RETURN(double n, v->Number("a positive integer", kPositive));
    t.lora_rank = static_cast<int64_t>(n);
  }
  if (auto v = root.Find("flash_attention")) {
    FULCRUM_ASSIGN_OR_RETURN(t.flash_attention, v->Bool());
  }
  // The job's loss (estimate --cross-entropy): `fused` under the frameworks that run the job's own
  // model code; Megatron's layouts keep its vocab-parallel loss.
  if (auto v = root.Find("cross_entropy")) {
    FULCRUM_ASSIGN_OR_RETURN(std::string text, v->Text());
    Result<workload::CrossEntropy> c = workload::ParseCrossEntropy(text);
    if (!c.ok()) return v->Error("framework or fused");
    t.cross_entropy = *c;
  }
  return Status::Ok();
}

Status ParseModelAndWork(const YamlNode& root, const std::string& base_dir, PlanSpec& spec) {
  SpecModel model;
  FULCRUM_RETURN_IF_ERROR(ParseSpecModel(root, base_dir, model));
  spec.model_preset = model.preset;
  spec.hf_config_path = model.hf_config_path;
  spec.model_yaml = model.yaml;
  if (auto v = root.Find("tokens")) {
    FULCRUM_ASSIGN_OR_RETURN(spec.tokens, v->Count("a token count such as 20B"));
  }
  if (auto v = root.Find("samples")) {
    FULCRUM_ASSIGN_OR_RETURN(spec.samples, v->Count("a sample count such as 1.28M"));
  }
  if (auto v = root.Find("epochs")) {
    FULCRUM_ASSIGN_OR_RETURN(spec.epochs, v->Number("a positive number", kPositive));
  }
  return Status::Ok();
}

}  // namespace

Status ParseSpecModel(const YamlNode& root, const std::string& base_dir, SpecModel& model) {
  if (auto m = root.Find("model")) {
    if (m->IsScalar()) {
      model.preset = m->raw().Scalar();
    } else if (m->IsMap()) {
      YAML::Emitter emitter;
      emitter << m->raw();
      model.yaml = emitter.c_str();
    } else {
      return m->Error("a preset name or a model mapping");
    }
  }
  if (auto v = root.Find("hf_config")) {
    FULCRUM_ASSIGN_OR_RETURN(std::string path, v->Text());
    std::filesystem::path p(path);
    if (p.is_relative() && !base_dir.empty()) p = std::filesystem::path(base_dir) / p;
    model.hf_config_path = p.string();
  }
  return Status::Ok();
}

std::string_view ObjectiveName(Objective o) {
  switch (o) {
    case Objective::kBalanced:
      return "balanced";
    case Objective::kCheapest:
      return "cheapest";
    case Objective::kFastest:
      return "fastest";
  }
  return "balanced";
}

std::optional<bool> ParseRankUnconfirmed(std::string_view text) {
  const std::string t = ToLower(Trim(text));
  if (t == "last") return true;
  if (t == "mixed") return false;
  return std::nullopt;
}

Result<bool> RankUnconfirmedFlag(std::string_view text) {
  const std::optional<bool> last = ParseRankUnconfirmed(text);
  if (!last) {
    return Status::InvalidInput("--rank-unconfirmed: expected last or mixed, found \"" +
                                std::string(text) + "\"");
  }
  return *last;
}

Result<bool> RankUnconfirmedField(const YamlNode& node) {
  FULCRUM_ASSIGN_OR_RETURN(std::string text, node.Text());
  const std::optional<bool> last = ParseRankUnconfirmed(text);
  if (!last) return node.Error("last or mixed");
  return *last;
}

std::string UnconfirmedFootnote(bool last, std::string_view first_rows, std::string_view order) {
  const std::string head =
      "?: price or interconnect not confirmed by the catalog (JSON unconfirmed); ";
  return last ? head + "ranked after the confirmed " + std::string(first_rows) +
                    " (--rank-unconfirmed mixed: by " + std::string(order) + " alone)\n"
              : head + "ranked by " + std::string(order) + " alone (--rank-unconfirmed mixed)\n";
}

Result<Objective> ParseObjective(std::string_view text) {
  const std::string t = ToLower(Trim(text));
  if (t == "balanced") return Objective::kBalanced;
  if (t == "cheapest") return Objective::kCheapest;
  if (t == "fastest") return Objective::kFastest;
  return Status::InvalidInput("objective: expected balanced, cheapest or fastest, found \"" +
                              std::string(text) + "\"");
}

std::string_view PricingModelName(PricingModel p) {
  switch (p) {
    case PricingModel::kOnDemand:
      return "on_demand";
    case PricingModel::kReserved1y:
      return "reserved_1y";
    case PricingModel::kReserved3y:
      return "reserved_3y";
    case PricingModel::kSpot:
      return "spot";
    case PricingModel::kSpotWithFallback:
      return "spot_with_fallback";
  }
  return "on_demand";
}

Result<PricingModel> ParsePricingModel(std::string_view text) {
  std::string t = ToLower(Trim(text));
  for (char& ch : t) {
    if (ch == '-') ch = '_';
  }
  if (t == "on_demand" || t == "ondemand") return PricingModel::kOnDemand;
  if (t == "reserved_1y" || t == "reserved1y") return PricingModel::kReserved1y;
  if (t == "reserved_3y" || t == "reserved3y") return PricingModel::kReserved3y;
  if (t == "spot" || t == "preemptible") return PricingModel::kSpot;
  if (t == "spot_with_fallback") return PricingModel::kSpotWithFallback;
  return Status::InvalidInput(
      "pricing model: expected on_demand, reserved_1y, reserved_3y, spot or spot_with_fallback, "
      "found \"" +
      std::string(text) + "\"");
}

Result<Weights> ParseWeights(std::string_view text, Weights base) {
  for (const std::string& part : Split(text, ',')) {
    if (Trim(part).empty()) continue;
    const size_t eq = part.find('=');
    const std::string name = eq == std::string::npos ? "" : ToLower(Trim(part.substr(0, eq)));
    Result<double> value = eq == std::string::npos ? Result<double>(Status::InvalidInput("no ="))
                                                   : ParseDouble(Trim(part.substr(eq + 1)));
    double* target = name == "stability"     ? &base.stability
                     : name == "performance" ? &base.performance
                     : name == "cost"        ? &base.cost
                     : name == "usability"   ? &base.usability
                     : name == "support"     ? &base.support
                                             : nullptr;
    if (target == nullptr || !value.ok() || *value < 0) {
      return Status::InvalidInput(
          "--weights: expected CRITERION=WEIGHT pairs separated by commas (criteria: stability, "
          "performance, cost, usability, support; weights >= 0), found \"" +
          std::string(Trim(part)) + "\"");
    }
    *target = *value;
  }
  if (base.stability + base.performance + base.cost + base.usability + base.support <= 0) {
    return Status::InvalidInput("--weights: at least one weight must be positive");
  }
  return base;
}

Result<PlanSpec> ParsePlanYaml(std::string_view text, const std::string& origin,
                               const std::string& base_dir) {
  FULCRUM_ASSIGN_OR_RETURN(YamlNode root, LoadYaml(text, origin));
  PlanSpec spec;
  spec.origin = origin;
  FULCRUM_RETURN_IF_ERROR(
      root.CheckKeys({"model",           "hf_config",       "tokens",       "samples",
                      "epochs",          "seq_len",         "global_batch", "precision",
                      "method",          "lora_rank",       "optimizer",    "flash_attention",
                      "cross_entropy",   "checkpointing",   "command",      "constraints",
                      "weights",         "costs",           "top",          "name",
                      "description",     "objective",       "storage",      "egress_gb",
                      "framework",       "batch_tolerance", "strict_host",  "checkpoint_every",
                      "rank_unconfirmed"},
                     "a mapping of plan fields (model, tokens, ...)"));
  FULCRUM_RETURN_IF_ERROR(ParseModelAndWork(root, base_dir, spec));
  FULCRUM_RETURN_IF_ERROR(ParseTraining(root, spec));
  if (auto v = root.Find("checkpointing")) {
    FULCRUM_ASSIGN_OR_RETURN(spec.checkpointing, v->Bool());
  }
  // The checkpoint interval `fulcrum run` is given (--checkpoint-every wins over it).
  if (auto v = root.Find("checkpoint_every")) {
    FULCRUM_ASSIGN_OR_RETURN(double seconds,
                             v->Duration("a positive duration such as 30m or 2h", kPositive));
    spec.checkpoint_every_seconds = seconds;
  }
  if (auto v = root.Find("command")) {
    FULCRUM_ASSIGN_OR_RETURN(spec.command, v->Text());
  }
  if (auto v = root.Find("constraints")) {
    FULCRUM_RETURN_IF_ERROR(ParseConstraints(*v, spec.constraints));
  }
  // The job's framework, batch tolerance and host strictness may also stand at the top level.
  if (auto v = root.Find("framework"))
    FULCRUM_RETURN_IF_ERROR(ParseFrameworks(*v, spec.constraints));
  if (auto v = root.Find("batch_tolerance")) {
    FULCRUM_RETURN_IF_ERROR(ParseBatchTolerance(*v, spec.constraints));
  }
  if (auto v = root.Find("strict_host")) {
    FULCRUM_ASSIGN_OR_RETURN(spec.constraints.strict_host, v->Bool());
  }
  if (auto v = root.Find("weights")) FULCRUM_RETURN_IF_ERROR(ParseWeightsNode(*v, spec.weights));
  if (auto v = root.Find("costs")) FULCRUM_RETURN_IF_ERROR(ParseCosts(*v, spec.extra));
  if (auto v = root.Find("top")) {
    FULCRUM_ASSIGN_OR_RETURN(double n, v->Number("a positive integer", kPositive));
    spec.top = static_cast<int>(n);
  }
  if (auto v = root.Find("storage")) FULCRUM_RETURN_IF_ERROR(ParseStorage(*v, spec.storage));
  if (auto v = root.Find("egress_gb")) {
    FULCRUM_ASSIGN_OR_RETURN(spec.storage.egress_gb, v->Number("a number of GB >= 0", 0));
  }
  if (auto v = root.Find("objective")) {
    FULCRUM_ASSIGN_OR_RETURN(std::string text, v->Text());
    Result<Objective> o = ParseObjective(text);
    if (!o.ok()) return v->Error("balanced, cheapest or fastest");
    spec.objective = *o;
  }
  if (auto v = root.Find("rank_unconfirmed")) {
    FULCRUM_ASSIGN_OR_RETURN(spec.unconfirmed_last, RankUnconfirmedField(*v));
  }
  return spec;
}

Result<PlanSpec> LoadPlanFile(const std::string& path) {
  FULCRUM_ASSIGN_OR_RETURN(std::string text, ReadTextFile(path, "a plan spec (YAML)"));
  return ParsePlanYaml(text, path, std::filesystem::path(path).parent_path().string());
}

Status ValidateSpec(const PlanSpec& spec) {
  const int models =
      !spec.model_preset.empty() + !spec.hf_config_path.empty() + !spec.model_yaml.empty();
  if (models != 1) {
    return Status::InvalidInput(spec.origin +
                                ": model: give exactly one of model (preset name or mapping) or "
                                "hf_config (--model / --hf-config)");
  }
  if (spec.tokens.has_value() == spec.samples.has_value()) {
    return Status::InvalidInput(spec.origin +
                                ": work: give exactly one of tokens (--tokens 20B) or samples "
                                "(--samples 1.28M, with epochs)");
  }
  if ((spec.tokens && !(*spec.tokens > 0)) || (spec.samples && !(*spec.samples > 0)) ||
      !(spec.epochs > 0)) {
    return Status::InvalidInput(spec.origin + ": work: tokens/samples/epochs must be positive");
  }
  // Far beyond any published run (Llama 3: 15.6e12 tokens); the search's time must not grow
  // with the work, and such numbers are typos (1e19) or overflow (1e400 = infinity).
  const double work = spec.tokens ? *spec.tokens : *spec.samples * spec.epochs;
  if (!std::isfinite(work) || work > kMaxWorkUnits) {
    return Status::InvalidInput(
        spec.origin + ": work: " + (spec.tokens ? "tokens" : "samples x epochs") +
        " beyond the limit of 1e15 (found " + fmt::format("{:.3g}", work) + ")");
  }
  if (spec.constraints.budget_usd && !(*spec.constraints.budget_usd > 0)) {
    return Status::InvalidInput(spec.origin +
                                ": constraints.budget_usd: expected a positive amount");
  }
  if (spec.constraints.deadline_seconds &&
      !(*spec.constraints.deadline_seconds > 0 &&
        *spec.constraints.deadline_seconds <= kMaxDeadlineSeconds)) {
    return Status::InvalidInput(spec.origin +
                                ": constraints.deadline: expected a duration up to 10 years");
  }
  if (spec.training.seq_len < 1) {
    return Status::InvalidInput(spec.origin + ": seq_len: expected a positive integer");
  }
  if (spec.constraints.max_gpus < 1) {
    return Status::InvalidInput(spec.origin + ": constraints.max_gpus: expected >= 1");
  }
  if (spec.constraints.pricing.empty()) {
    return Status::InvalidInput(spec.origin + ": constraints.pricing: expected at least one model");
  }
  if (spec.top < 1) return Status::InvalidInput(spec.origin + ": top: expected >= 1");
  if (spec.training.method == workload::Method::kQlora &&
      spec.constraints.frameworks == workload::FrameworkBit(workload::Framework::kMegatron)) {
    ErrorDetail detail;
    detail.field = "framework";
    detail.expected = "deepspeed, fsdp or hf for qlora";
    detail.found = "megatron";
    detail.nearest = {"fsdp", "deepspeed", "hf"};
    return Status::InvalidInput(
               spec.origin +
               ": framework: megatron has no QLoRA (its 4-bit base is bitsandbytes, which HF "
               "PEFT runs with FSDP or DeepSpeed ZeRO-3); use fsdp, deepspeed or hf, or "
               "--method lora (LoRA on Megatron-Core: NeMo Megatron-Bridge)")
        .WithDetail(detail);
  }
  return Status::Ok();
}

std::optional<double> BatchToleranceFraction(std::string_view text) {
  std::string t(Trim(text));
  if (!t.empty() && t.back() == '%') t.pop_back();
  const Result<double> pct = ParseDouble(t);
  if (!pct.ok() || !(*pct >= 0 && *pct <= 50)) return std::nullopt;
  return *pct / 100;
}

}  // namespace fulcrum::plan
