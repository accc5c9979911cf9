#include "plan/spec.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "core/parse.h"

namespace fulcrum::plan {
namespace {

std::string Where(const std::string& origin, const YAML::Node& node, const std::string& field) {
  const YAML::Mark mark = node.Mark();
  std::string where = origin;
  if (mark.line >= 0) where += ":" + std::to_string(mark.line + 1);
  return where + ": " + field;
}

Status Bad(const std::string& origin, const YAML::Node& node, const std::string& field,
           const std::string& expected) {
  std::string found = node.IsScalar() ? "\"" + node.Scalar() + "\"" : "a list or mapping";
  return Status::InvalidInput(Where(origin, node, field) + ": expected " + expected + ", found " +
                              found);
}

Result<std::string> ScalarText(const std::string& origin, const YAML::Node& node,
                               const std::string& field) {
  if (!node.IsScalar()) return Bad(origin, node, field, "a single value");
  return node.Scalar();
}

Result<double> Number(const std::string& origin, const YAML::Node& node, const std::string& field,
                      Result<double> (*parse)(std::string_view), const std::string& expected) {
  FULCRUM_ASSIGN_OR_RETURN(std::string text, ScalarText(origin, node, field));
  Result<double> value = parse(text);
  if (!value.ok()) return Bad(origin, node, field, expected);
  return value;
}

Result<bool> Bool(const std::string& origin, const YAML::Node& node, const std::string& field) {
  FULCRUM_ASSIGN_OR_RETURN(std::string text, ScalarText(origin, node, field));
  const std::string t = ToLower(text);
  if (t == "true" || t == "yes" || t == "on") return true;
  if (t == "false" || t == "no" || t == "off") return false;
  return Bad(origin, node, field, "true or false");
}

Result<std::vector<std::string>> List(const std::string& origin, const YAML::Node& node,
                                      const std::string& field) {
  std::vector<std::string> out;
  if (node.IsScalar()) {
    for (const std::string& part : Split(node.Scalar(), ',')) {
      if (!Trim(part).empty()) out.emplace_back(Trim(part));
    }
    return out;
  }
  if (!node.IsSequence()) return Bad(origin, node, field, "a list of names");
  for (const YAML::Node& item : node) {
    FULCRUM_ASSIGN_OR_RETURN(std::string text, ScalarText(origin, item, field));
    out.push_back(text);
  }
  return out;
}

Status CheckKeys(const std::string& origin, const YAML::Node& map,
                 const std::vector<std::string>& known, const std::string& section) {
  for (const auto& kv : map) {
    const std::string key = kv.first.as<std::string>("");
    bool ok = false;
    for (const std::string& k : known) ok = ok || k == key;
    if (!ok) {
      std::string list;
      for (const std::string& k : known) list += (list.empty() ? "" : ", ") + k;
      return Status::InvalidInput(Where(origin, kv.first, section + key) +
                                  ": unknown field; expected one of " + list);
    }
  }
  return Status::Ok();
}

Result<double> ParseFraction(std::string_view text) {
  FULCRUM_ASSIGN_OR_RETURN(double v, ParseDouble(text));
  if (v < 0 || v >= 1) return Status::InvalidInput("out of range");
  return v;
}

Result<double> ParsePositive(std::string_view text) {
  FULCRUM_ASSIGN_OR_RETURN(double v, ParseDouble(text));
  if (v <= 0) return Status::InvalidInput("not positive");
  return v;
}

Result<double> ParseNonNegative(std::string_view text) {
  FULCRUM_ASSIGN_OR_RETURN(double v, ParseDouble(text));
  if (v < 0) return Status::InvalidInput("negative");
  return v;
}

Status ParseConstraints(const std::string& origin, const YAML::Node& node, Constraints& c) {
  if (!node.IsMap()) return Bad(origin, node, "constraints", "a mapping");
  FULCRUM_RETURN_IF_ERROR(
      CheckKeys(origin, node,
                {"deadline", "budget_usd", "max_gpus", "providers", "regions", "gpus", "pricing",
                 "interruptible", "min_headroom", "assume_network_gbps", "max_nodes",
                 "framework", "strict_batch"},
                "constraints."));
  if (node["deadline"]) {
    FULCRUM_ASSIGN_OR_RETURN(c.deadline_seconds,
                             Number(origin, node["deadline"], "constraints.deadline",
                                    ParseDurationSeconds, "a duration such as 7d or 36h"));
  }
  if (node["budget_usd"]) {
    FULCRUM_ASSIGN_OR_RETURN(
        c.budget_usd, Number(origin, node["budget_usd"], "constraints.budget_usd", ParsePositive,
                             "a positive amount of USD"));
  }
  if (node["max_gpus"]) {
    FULCRUM_ASSIGN_OR_RETURN(double v, Number(origin, node["max_gpus"], "constraints.max_gpus",
                                              ParsePositive, "a positive integer"));
    c.max_gpus = static_cast<int>(v);
  }
  if (node["providers"]) {
    FULCRUM_ASSIGN_OR_RETURN(c.providers, List(origin, node["providers"], "constraints.providers"));
  }
  if (node["regions"]) {
    FULCRUM_ASSIGN_OR_RETURN(c.regions, List(origin, node["regions"], "constraints.regions"));
  }
  if (node["gpus"]) {
    FULCRUM_ASSIGN_OR_RETURN(c.gpus, List(origin, node["gpus"], "constraints.gpus"));
  }
  if (node["pricing"]) {
    FULCRUM_ASSIGN_OR_RETURN(std::vector<std::string> names,
                             List(origin, node["pricing"], "constraints.pricing"));
    c.pricing.clear();
    for (const std::string& name : names) {
      Result<PricingModel> p = ParsePricingModel(name);
      if (!p.ok()) {
        return Bad(origin, node["pricing"], "constraints.pricing",
                   "on_demand, reserved_1y, reserved_3y or spot");
      }
      c.pricing.push_back(*p);
    }
  }
  if (node["interruptible"]) {
    FULCRUM_ASSIGN_OR_RETURN(c.interruptible,
                             Bool(origin, node["interruptible"], "constraints.interruptible"));
  }
  if (node["min_headroom"]) {
    FULCRUM_ASSIGN_OR_RETURN(c.min_headroom,
                             Number(origin, node["min_headroom"], "constraints.min_headroom",
                                    ParseFraction, "a fraction in [0, 1), e.g. 0.1"));
  }
  if (node["assume_network_gbps"]) {
    FULCRUM_ASSIGN_OR_RETURN(
        c.assume_network_gbps,
        Number(origin, node["assume_network_gbps"], "constraints.assume_network_gbps",
               ParsePositive, "a positive bandwidth in Gbit/s"));
  }
  if (node["max_nodes"]) {
    FULCRUM_ASSIGN_OR_RETURN(double v, Number(origin, node["max_nodes"], "constraints.max_nodes",
                                              ParsePositive, "a positive integer"));
    c.max_nodes = static_cast<int>(v);
  }
  if (node["framework"]) {
    FULCRUM_ASSIGN_OR_RETURN(std::string text,
                             ScalarText(origin, node["framework"], "constraints.framework"));
    Result<workload::Framework> f = workload::ParseFramework(text);
    if (!f.ok()) {
      return Bad(origin, node["framework"], "constraints.framework",
                 "megatron, deepspeed, fsdp or hf");
    }
    c.framework = *f;
  }
  if (node["strict_batch"]) {
    FULCRUM_ASSIGN_OR_RETURN(c.strict_batch,
                             Bool(origin, node["strict_batch"], "constraints.strict_batch"));
  }
  return Status::Ok();
}

Status ParseWeightsNode(const std::string& origin, const YAML::Node& node, Weights& w) {
  if (!node.IsMap()) return Bad(origin, node, "weights", "a mapping of criterion: weight");
  FULCRUM_RETURN_IF_ERROR(CheckKeys(
      origin, node, {"stability", "performance", "cost", "usability", "support"}, "weights."));
  const std::pair<const char*, double*> fields[] = {{"stability", &w.stability},
                                                    {"performance", &w.performance},
                                                    {"cost", &w.cost},
                                                    {"usability", &w.usability},
                                                    {"support", &w.support}};
  for (const auto& [name, target] : fields) {
    if (!node[name]) continue;
    FULCRUM_ASSIGN_OR_RETURN(*target, Number(origin, node[name], std::string("weights.") + name,
                                             ParseNonNegative, "a weight >= 0"));
  }
  return Status::Ok();
}

Status ParseCosts(const std::string& origin, const YAML::Node& node, ExtraCosts& e) {
  if (!node.IsMap()) return Bad(origin, node, "costs", "a mapping");
  FULCRUM_RETURN_IF_ERROR(CheckKeys(
      origin, node, {"storage_gb", "storage_usd_per_gb_month", "egress_gb", "egress_usd_per_gb"},
      "costs."));
  const std::pair<const char*, double*> fields[] = {
      {"storage_gb", &e.storage_gb},
      {"storage_usd_per_gb_month", &e.storage_usd_per_gb_month},
      {"egress_gb", &e.egress_gb},
      {"egress_usd_per_gb", &e.egress_usd_per_gb}};
  for (const auto& [name, target] : fields) {
    if (!node[name]) continue;
    FULCRUM_ASSIGN_OR_RETURN(*target, Number(origin, node[name], std::string("costs.") + name,
                                             ParseNonNegative, "a number >= 0"));
  }
  return Status::Ok();
}

Status ParseStorage(const std::string& origin, const YAML::Node& node, StorageNeeds& n) {
  if (!node.IsMap()) return Bad(origin, node, "storage", "a mapping");
  FULCRUM_RETURN_IF_ERROR(
      CheckKeys(origin, node, {"disk_gb", "checkpoint_gb", "keep_days"}, "storage."));
  const std::pair<const char*, double*> fields[] = {
      {"disk_gb", &n.disk_gb}, {"checkpoint_gb", &n.checkpoint_gb}, {"keep_days", &n.keep_days}};
  for (const auto& [name, target] : fields) {
    if (!node[name]) continue;
    FULCRUM_ASSIGN_OR_RETURN(*target, Number(origin, node[name], std::string("storage.") + name,
                                             ParseNonNegative, "a number >= 0"));
  }
  return Status::Ok();
}

Status ParseTraining(const std::string& origin, const YAML::Node& root, PlanSpec& spec) {
  workload::Training& t = spec.training;
  if (root["seq_len"]) {
    FULCRUM_ASSIGN_OR_RETURN(double v, Number(origin, root["seq_len"], "seq_len", ParsePositive,
                                              "a positive integer (tokens)"));
    t.seq_len = static_cast<int64_t>(v);
  }
  if (root["global_batch"]) {
    FULCRUM_ASSIGN_OR_RETURN(double v, Number(origin, root["global_batch"], "global_batch",
                                              ParsePositive, "a positive number of sequences"));
    t.global_batch = static_cast<int64_t>(v);
    spec.global_batch_given = true;
  }
  if (root["precision"]) {
    FULCRUM_ASSIGN_OR_RETURN(std::string text, ScalarText(origin, root["precision"], "precision"));
    Result<workload::Precision> p = workload::ParsePrecision(text);
    if (!p.ok()) return Bad(origin, root["precision"], "precision", "bf16, fp16, fp8 or fp32");
    t.precision = *p;
  }
  if (root["method"]) {
    FULCRUM_ASSIGN_OR_RETURN(std::string text, ScalarText(origin, root["method"], "method"));
    Result<workload::Method> m = workload::ParseMethod(text);
    if (!m.ok()) return Bad(origin, root["method"], "method", "full, lora or qlora");
    t.method = *m;
  }
  if (root["optimizer"]) {
    FULCRUM_ASSIGN_OR_RETURN(std::string text, ScalarText(origin, root["optimizer"], "optimizer"));
    Result<workload::Optimizer> o = workload::ParseOptimizer(text);
    if (!o.ok()) return Bad(origin, root["optimizer"], "optimizer", "adamw, sgd or adam8bit");
    t.optimizer = *o;
  }
  if (root["lora_rank"]) {
    FULCRUM_ASSIGN_OR_RETURN(double v, Number(origin, root["lora_rank"], "lora_rank", ParsePositive,
                                              "a positive integer"));
    t.lora_rank = static_cast<int64_t>(v);
  }
  if (root["flash_attention"]) {
    FULCRUM_ASSIGN_OR_RETURN(t.flash_attention,
                             Bool(origin, root["flash_attention"], "flash_attention"));
  }
  return Status::Ok();
}

Status ParseModelAndWork(const std::string& origin, const YAML::Node& root,
                         const std::string& base_dir, PlanSpec& spec) {
  if (root["model"]) {
    const YAML::Node& m = root["model"];
    if (m.IsScalar()) {
      spec.model_preset = m.Scalar();
    } else if (m.IsMap()) {
      YAML::Emitter emitter;
      emitter << m;
      spec.model_yaml = emitter.c_str();
    } else {
      return Bad(origin, m, "model", "a preset name or a model mapping");
    }
  }
  if (root["hf_config"]) {
    FULCRUM_ASSIGN_OR_RETURN(std::string path, ScalarText(origin, root["hf_config"], "hf_config"));
    std::filesystem::path p(path);
    if (p.is_relative() && !base_dir.empty()) p = std::filesystem::path(base_dir) / p;
    spec.hf_config_path = p.string();
  }
  if (root["tokens"]) {
    FULCRUM_ASSIGN_OR_RETURN(spec.tokens, Number(origin, root["tokens"], "tokens", ParseCount,
                                                 "a token count such as 20B"));
  }
  if (root["samples"]) {
    FULCRUM_ASSIGN_OR_RETURN(spec.samples, Number(origin, root["samples"], "samples", ParseCount,
                                                  "a sample count such as 1.28M"));
  }
  if (root["epochs"]) {
    FULCRUM_ASSIGN_OR_RETURN(
        spec.epochs, Number(origin, root["epochs"], "epochs", ParsePositive, "a positive number"));
  }
  return Status::Ok();
}

}  // namespace

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
  return Status::InvalidInput("pricing model: expected on_demand, reserved_1y, reserved_3y or " +
                              std::string("spot, found \"") + std::string(text) + "\"");
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

Result<Objective> ParseObjective(std::string_view text) {
  const std::string t = ToLower(Trim(text));
  if (t == "balanced") return Objective::kBalanced;
  if (t == "cheapest") return Objective::kCheapest;
  if (t == "fastest") return Objective::kFastest;
  return Status::InvalidInput("objective: expected balanced, cheapest or fastest, found \"" +
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
  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    return Status::InvalidInput(origin + ":" + std::to_string(e.mark.line + 1) +
                                ": not valid YAML: " + e.msg);
  }
  PlanSpec spec;
  spec.origin = origin;
  if (!root.IsMap()) {
    return Status::InvalidInput(origin +
                                ": expected a mapping of plan fields (model, tokens, ...)");
  }
  try {
    FULCRUM_RETURN_IF_ERROR(CheckKeys(
        origin, root, {"model",     "hf_config",       "tokens",        "samples", "epochs",
                       "seq_len",   "global_batch",    "precision",     "method",  "lora_rank",
                       "optimizer", "flash_attention", "checkpointing", "command", "constraints",
                       "weights",   "costs",           "top",           "name",    "description",
                       "objective", "storage",         "egress_gb"},
        ""));
    FULCRUM_RETURN_IF_ERROR(ParseModelAndWork(origin, root, base_dir, spec));
    FULCRUM_RETURN_IF_ERROR(ParseTraining(origin, root, spec));
    if (root["checkpointing"]) {
      FULCRUM_ASSIGN_OR_RETURN(spec.checkpointing,
                               Bool(origin, root["checkpointing"], "checkpointing"));
    }
    if (root["command"]) {
      FULCRUM_ASSIGN_OR_RETURN(spec.command, ScalarText(origin, root["command"], "command"));
    }
    if (root["constraints"]) {
      FULCRUM_RETURN_IF_ERROR(ParseConstraints(origin, root["constraints"], spec.constraints));
    }
    if (root["weights"])
      FULCRUM_RETURN_IF_ERROR(ParseWeightsNode(origin, root["weights"], spec.weights));
    if (root["costs"]) FULCRUM_RETURN_IF_ERROR(ParseCosts(origin, root["costs"], spec.extra));
    if (root["storage"]) FULCRUM_RETURN_IF_ERROR(ParseStorage(origin, root["storage"], spec.storage));
    if (root["egress_gb"]) {
      FULCRUM_ASSIGN_OR_RETURN(spec.storage.egress_gb,
                               Number(origin, root["egress_gb"], "egress_gb", ParseNonNegative,
                                      "a number of GB >= 0"));
    }
    if (root["objective"]) {
      FULCRUM_ASSIGN_OR_RETURN(std::string text,
                               ScalarText(origin, root["objective"], "objective"));
      Result<Objective> o = ParseObjective(text);
      if (!o.ok()) {
        return Bad(origin, root["objective"], "objective", "balanced, cheapest or fastest");
      }
      spec.objective = *o;
    }
    if (root["top"]) {
      FULCRUM_ASSIGN_OR_RETURN(
          double v, Number(origin, root["top"], "top", ParsePositive, "a positive integer"));
      spec.top = static_cast<int>(v);
    }
  } catch (const YAML::Exception& e) {
    return Status::InvalidInput(origin + ":" + std::to_string(e.mark.line + 1) + ": " + e.msg);
  }
  return spec;
}

Result<PlanSpec> LoadPlanFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::NotFound(path + ": cannot open the plan spec");
  std::stringstream buffer;
  buffer << in.rdbuf();
  return ParsePlanYaml(buffer.str(), path, std::filesystem::path(path).parent_path().string());
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
    return Status::InvalidInput(spec.origin + ": work: " + (spec.tokens ? "tokens" : "samples x epochs") +
                                " beyond the limit of 1e15 (found " + fmt::format("{:.3g}", work) + ")");
  }
  if (spec.constraints.budget_usd && !(*spec.constraints.budget_usd > 0)) {
    return Status::InvalidInput(spec.origin + ": constraints.budget_usd: expected a positive amount");
  }
  if (spec.constraints.deadline_seconds && !(*spec.constraints.deadline_seconds > 0 &&
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
  return Status::Ok();
}

}  // namespace fulcrum::plan
