#include "alert/rules_yaml.h"

#include <map>

#include "core/input_error.h"
#include "core/parse.h"
#include "core/text_file.h"
#include "core/yaml.h"
#include "telemetry/gpu_sample.h"

namespace fulcrum::alert {
namespace {

const std::vector<std::string> kRuleFields = {
    "name", "metric",          "kind",     "op",     "threshold",  "values", "divide_by", "when",
    "for",  "keep_firing_for", "severity", "labels", "annotations"};

std::vector<std::string> MetricNames() {
  std::vector<std::string> names = {"job_running", "job_progress_age_seconds"};
  for (const auto& metric : telemetry::Metrics()) names.emplace_back(metric.name);
  return names;
}

Result<CompareOp> OpOf(const YamlNode& node) {
  FULCRUM_ASSIGN_OR_RETURN(std::string text, node.Text());
  std::optional<CompareOp> op = ParseCompareOp(text);
  if (!op) return node.Error("one of > >= < <= == != in not_in");
  return *op;
}

Result<std::string> MetricOf(const YamlNode& node) {
  FULCRUM_ASSIGN_OR_RETURN(std::string text, node.Text());
  // A rules file written for an earlier release keeps working where the values are the same.
  const telemetry::RenamedMetric* renamed = telemetry::FindRenamedMetric(text);
  if (renamed != nullptr && renamed->kind == telemetry::RenamedMetric::kSame) {
    return std::string(renamed->new_name);
  }
  if (!IsKnownMetric(text)) {
    Status error = node.Error(
        "a metric of docs/API.md without the fulcrum_ prefix (e.g. gpu_temperature_celsius), "
        "job_running or job_progress_age_seconds" +
        std::string(renamed != nullptr ? std::string("; ") + renamed->old_name +
                                             " is now the counter " + renamed->new_name
                                       : std::string()));
    ErrorDetail detail = *error.detail();
    detail.nearest = NearestNames(text, MetricNames());
    return InputError(std::move(detail));
  }
  return text;
}

Result<Condition> ConditionOf(const YamlNode& node) {
  FULCRUM_RETURN_IF_ERROR(node.CheckKeys({"metric", "op", "threshold"}, "{metric, op, threshold}"));
  Condition condition;
  FULCRUM_ASSIGN_OR_RETURN(YamlNode metric, node.Required("metric"));
  FULCRUM_ASSIGN_OR_RETURN(condition.metric, MetricOf(metric));
  FULCRUM_ASSIGN_OR_RETURN(YamlNode op, node.Required("op"));
  FULCRUM_ASSIGN_OR_RETURN(condition.op, OpOf(op));
  if (condition.op == CompareOp::kIn || condition.op == CompareOp::kNotIn) {
    return op.Error("one of > >= < <= == !=");
  }
  FULCRUM_ASSIGN_OR_RETURN(YamlNode threshold, node.Required("threshold"));
  FULCRUM_ASSIGN_OR_RETURN(condition.threshold, threshold.Number());
  return condition;
}

Status ApplyField(const std::string& key, const YamlNode& value, Rule& rule) {
  if (key == "name") {
    FULCRUM_ASSIGN_OR_RETURN(rule.name, value.Text());
  } else if (key == "metric") {
    FULCRUM_ASSIGN_OR_RETURN(rule.metric, MetricOf(value));
  } else if (key == "kind") {
    FULCRUM_ASSIGN_OR_RETURN(std::string text, value.Text());
    std::optional<RuleKind> kind = ParseRuleKind(text);
    if (!kind) return value.Error("threshold, increase or swing");
    rule.kind = *kind;
  } else if (key == "op") {
    FULCRUM_ASSIGN_OR_RETURN(rule.op, OpOf(value));
  } else if (key == "threshold") {
    FULCRUM_ASSIGN_OR_RETURN(rule.threshold, value.Number());
  } else if (key == "values") {
    FULCRUM_ASSIGN_OR_RETURN(std::vector<YamlNode> items,
                             value.Items("a non-empty list of numbers"));
    if (items.empty()) return value.Error("a non-empty list of numbers");
    for (const YamlNode& item : items) {
      FULCRUM_ASSIGN_OR_RETURN(double number, item.Number());
      rule.values.push_back(number);
    }
  } else if (key == "divide_by") {
    FULCRUM_ASSIGN_OR_RETURN(rule.divide_by, MetricOf(value));
  } else if (key == "when") {
    FULCRUM_ASSIGN_OR_RETURN(std::vector<YamlNode> items,
                             value.Items("a list of {metric, op, threshold}"));
    for (const YamlNode& item : items) {
      FULCRUM_ASSIGN_OR_RETURN(Condition condition, ConditionOf(item));
      rule.when.push_back(std::move(condition));
    }
  } else if (key == "for") {
    FULCRUM_ASSIGN_OR_RETURN(rule.for_seconds,
                             value.Duration("a duration such as 0s, 90s, 5m, 1h"));
  } else if (key == "keep_firing_for") {
    FULCRUM_ASSIGN_OR_RETURN(rule.keep_firing_for_seconds,
                             value.Duration("a duration such as 0s, 90s, 5m, 1h"));
  } else if (key == "severity") {
    FULCRUM_ASSIGN_OR_RETURN(rule.severity, value.Text());
  } else if (key == "labels") {
    FULCRUM_ASSIGN_OR_RETURN(rule.labels, value.StringMap());
  } else if (key == "annotations") {
    FULCRUM_ASSIGN_OR_RETURN(rule.annotations, value.StringMap());
  }
  return Status::Ok();  // CheckKeys refused every other key
}

Result<Rule> RuleOf(const YamlNode& node) {
  FULCRUM_RETURN_IF_ERROR(node.CheckKeys(kRuleFields, "a rule mapping"));
  Rule rule;
  FULCRUM_ASSIGN_OR_RETURN(auto entries, node.Entries());
  for (const auto& [key, value] : entries) FULCRUM_RETURN_IF_ERROR(ApplyField(key, value, rule));
  for (const char* required : {"name", "metric", "op"}) {
    if (!node.Find(required)) return node.MissingError(required);
  }
  const bool set_op = rule.op == CompareOp::kIn || rule.op == CompareOp::kNotIn;
  if (set_op && !node.Find("values")) {
    return node.MissingError("values", "a list of values (op in / not_in needs one)");
  }
  if (!set_op && !node.Find("threshold")) return node.MissingError("threshold");
  Status valid = ValidateRule(rule);
  if (!valid.ok()) {
    return Status::InvalidInput(node.Where() + ": " + node.field() + ": " + valid.message());
  }
  return rule;
}

}  // namespace

Result<std::vector<Rule>> ParseRulesYaml(std::string_view text, std::string_view source_name,
                                         std::vector<std::string>* warnings) {
  FULCRUM_ASSIGN_OR_RETURN(YamlNode root, LoadYaml(text, std::string(source_name)));
  FULCRUM_RETURN_IF_ERROR(root.CheckKeys({"rules"}, "a mapping with a 'rules' list"));
  FULCRUM_ASSIGN_OR_RETURN(YamlNode list, root.Required("rules"));
  std::vector<Rule> rules;
  if (!list.IsNull()) {
    FULCRUM_ASSIGN_OR_RETURN(std::vector<YamlNode> items, list.Items("a list of rules"));
    std::map<std::string, int> names;  // rule name -> line
    for (const YamlNode& item : items) {
      FULCRUM_ASSIGN_OR_RETURN(Rule rule, RuleOf(item));
      auto [first, inserted] = names.emplace(rule.name, item.line().value_or(0));
      if (!inserted) {
        FULCRUM_ASSIGN_OR_RETURN(YamlNode name, item.Required("name"));
        return InputError({name.origin(),
                           name.line(),
                           name.field(),
                           "a rule name used once",
                           "duplicate rule name \"" + rule.name + "\" (first on line " +
                               std::to_string(first->second) + ")",
                           {}},
                          FoundIs::kDescription);
      }
      rules.push_back(std::move(rule));
    }
  }
  if (rules.empty() && warnings != nullptr) {
    warnings->push_back(list.Where() +
                        ": rules: the rule set is empty; the agent will sample and serve but "
                        "never alert");
  }
  return rules;
}

Result<std::vector<Rule>> LoadRulesFile(const std::string& path,
                                        std::vector<std::string>* warnings) {
  FULCRUM_ASSIGN_OR_RETURN(std::string text, ReadTextFile(path, "an alert rules file (YAML)"));
  return ParseRulesYaml(text, path, warnings);
}

Result<std::vector<Rule>> DefaultRules() {
  return ParseRulesYaml(DefaultRulesYaml(), "<default rules>");
}

}  // namespace fulcrum::alert
