#include "alert/rules_yaml.h"

#include <yaml-cpp/yaml.h>

#include <fstream>
#include <set>
#include <sstream>

#include "core/parse.h"

namespace fulcrum::alert {
namespace {

// Builds "<source>:<line>: field '<field>': <what>" errors for one document.
class ErrorSite {
 public:
  explicit ErrorSite(std::string_view source) : source_(source) {}
  Status At(const YAML::Node& node, std::string_view field, const std::string& what) const {
    std::string where = source_;
    if (node.Mark().line >= 0) where += ":" + std::to_string(node.Mark().line + 1);
    return Status::InvalidInput(where + ": field '" + std::string(field) + "': " + what);
  }

 private:
  std::string source_;
};

std::string Describe(const YAML::Node& node) {
  if (node.IsScalar()) return "'" + node.Scalar() + "'";
  if (node.IsSequence()) return "a list";
  if (node.IsMap()) return "a mapping";
  return "nothing";
}

Result<std::string> ScalarOf(const ErrorSite& site, const YAML::Node& node,
                             std::string_view field) {
  if (!node.IsScalar()) {
    return site.At(node, field, "expected a single value, found " + Describe(node));
  }
  return node.Scalar();
}

Result<double> NumberOf(const ErrorSite& site, const YAML::Node& node, std::string_view field) {
  FULCRUM_ASSIGN_OR_RETURN(std::string text, ScalarOf(site, node, field));
  Result<double> number = ParseDouble(text);
  if (!number.ok()) return site.At(node, field, "expected a number, found '" + text + "'");
  return *number;
}

Result<double> DurationOf(const ErrorSite& site, const YAML::Node& node, std::string_view field) {
  FULCRUM_ASSIGN_OR_RETURN(std::string text, ScalarOf(site, node, field));
  Result<double> seconds = ParseDurationSeconds(text);
  if (!seconds.ok()) {
    return site.At(node, field,
                   "expected a duration such as 0s, 90s, 5m, 1h, found '" + text + "'");
  }
  return *seconds;
}

Result<CompareOp> OpOf(const ErrorSite& site, const YAML::Node& node, std::string_view field) {
  FULCRUM_ASSIGN_OR_RETURN(std::string text, ScalarOf(site, node, field));
  std::optional<CompareOp> op = ParseCompareOp(text);
  if (!op) {
    return site.At(node, field, "expected one of > >= < <= == != in not_in, found '" + text + "'");
  }
  return *op;
}

Result<std::string> MetricOf(const ErrorSite& site, const YAML::Node& node,
                             std::string_view field) {
  FULCRUM_ASSIGN_OR_RETURN(std::string text, ScalarOf(site, node, field));
  if (!IsKnownMetric(text)) {
    return site.At(node, field,
                   "unknown metric '" + text +
                       "' (expected a name from docs/API.md without the fulcrum_ prefix, e.g. "
                       "gpu_temperature_celsius, or job_running)");
  }
  return text;
}

Result<std::map<std::string, std::string>> StringMapOf(const ErrorSite& site,
                                                       const YAML::Node& node,
                                                       std::string_view field) {
  if (!node.IsMap()) return site.At(node, field, "expected a mapping, found " + Describe(node));
  std::map<std::string, std::string> out;
  for (auto it = node.begin(); it != node.end(); ++it) {
    FULCRUM_ASSIGN_OR_RETURN(std::string key, ScalarOf(site, it->first, field));
    FULCRUM_ASSIGN_OR_RETURN(std::string value,
                             ScalarOf(site, it->second, std::string(field) + "." + key));
    out[key] = value;
  }
  return out;
}

Result<Condition> ConditionOf(const ErrorSite& site, const YAML::Node& node) {
  if (!node.IsMap()) {
    return site.At(node, "when", "expected {metric, op, threshold}, found " + Describe(node));
  }
  Condition condition;
  bool has_metric = false, has_op = false, has_threshold = false;
  for (auto it = node.begin(); it != node.end(); ++it) {
    FULCRUM_ASSIGN_OR_RETURN(std::string key, ScalarOf(site, it->first, "when"));
    const YAML::Node value = it->second;  // a copy: it-> yields a temporary
    if (key == "metric") {
      FULCRUM_ASSIGN_OR_RETURN(condition.metric, MetricOf(site, value, "when.metric"));
      has_metric = true;
    } else if (key == "op") {
      FULCRUM_ASSIGN_OR_RETURN(condition.op, OpOf(site, value, "when.op"));
      if (condition.op == CompareOp::kIn || condition.op == CompareOp::kNotIn) {
        return site.At(
            value, "when.op",
            "expected one of > >= < <= == !=, found '" + std::string(ToString(condition.op)) + "'");
      }
      has_op = true;
    } else if (key == "threshold") {
      FULCRUM_ASSIGN_OR_RETURN(condition.threshold, NumberOf(site, value, "when.threshold"));
      has_threshold = true;
    } else {
      return site.At(it->first, "when." + key, "unknown field (expected metric, op, threshold)");
    }
  }
  if (!has_metric) return site.At(node, "when.metric", "missing");
  if (!has_op) return site.At(node, "when.op", "missing");
  if (!has_threshold) return site.At(node, "when.threshold", "missing");
  return condition;
}

Status ApplyField(const ErrorSite& site, const std::string& key, const YAML::Node& value,
                  Rule& rule) {
  if (key == "name") {
    FULCRUM_ASSIGN_OR_RETURN(rule.name, ScalarOf(site, value, key));
  } else if (key == "metric") {
    FULCRUM_ASSIGN_OR_RETURN(rule.metric, MetricOf(site, value, key));
  } else if (key == "kind") {
    FULCRUM_ASSIGN_OR_RETURN(std::string text, ScalarOf(site, value, key));
    std::optional<RuleKind> kind = ParseRuleKind(text);
    if (!kind) {
      return site.At(value, key, "expected threshold, increase or swing, found '" + text + "'");
    }
    rule.kind = *kind;
  } else if (key == "op") {
    FULCRUM_ASSIGN_OR_RETURN(rule.op, OpOf(site, value, key));
  } else if (key == "threshold") {
    FULCRUM_ASSIGN_OR_RETURN(rule.threshold, NumberOf(site, value, key));
  } else if (key == "values") {
    if (!value.IsSequence() || value.size() == 0) {
      return site.At(value, key, "expected a non-empty list of numbers, found " + Describe(value));
    }
    for (const YAML::Node& item : value) {
      FULCRUM_ASSIGN_OR_RETURN(double number, NumberOf(site, item, key));
      rule.values.push_back(number);
    }
  } else if (key == "divide_by") {
    FULCRUM_ASSIGN_OR_RETURN(rule.divide_by, MetricOf(site, value, key));
  } else if (key == "when") {
    if (!value.IsSequence()) {
      return site.At(value, key,
                     "expected a list of {metric, op, threshold}, found " + Describe(value));
    }
    for (const YAML::Node& item : value) {
      FULCRUM_ASSIGN_OR_RETURN(Condition condition, ConditionOf(site, item));
      rule.when.push_back(std::move(condition));
    }
  } else if (key == "for") {
    FULCRUM_ASSIGN_OR_RETURN(rule.for_seconds, DurationOf(site, value, key));
  } else if (key == "keep_firing_for") {
    FULCRUM_ASSIGN_OR_RETURN(rule.keep_firing_for_seconds, DurationOf(site, value, key));
  } else if (key == "severity") {
    FULCRUM_ASSIGN_OR_RETURN(rule.severity, ScalarOf(site, value, key));
  } else if (key == "labels") {
    FULCRUM_ASSIGN_OR_RETURN(rule.labels, StringMapOf(site, value, key));
  } else if (key == "annotations") {
    FULCRUM_ASSIGN_OR_RETURN(rule.annotations, StringMapOf(site, value, key));
  } else {
    return site.At(value, key,
                   "unknown field (expected name, metric, kind, op, threshold, values, "
                   "divide_by, when, for, keep_firing_for, severity, labels, annotations)");
  }
  return Status::Ok();
}

Result<Rule> RuleOf(const ErrorSite& site, const YAML::Node& node) {
  if (!node.IsMap()) {
    return site.At(node, "rules[]", "expected a rule mapping, found " + Describe(node));
  }
  Rule rule;
  std::set<std::string> seen;
  for (auto it = node.begin(); it != node.end(); ++it) {
    FULCRUM_ASSIGN_OR_RETURN(std::string key, ScalarOf(site, it->first, "rules[]"));
    if (!seen.insert(key).second) return site.At(it->first, key, "given twice");
    FULCRUM_RETURN_IF_ERROR(ApplyField(site, key, it->second, rule));
  }
  for (const char* required : {"name", "metric", "op"}) {
    if (seen.count(required) == 0) return site.At(node, required, "missing");
  }
  const bool set_op = rule.op == CompareOp::kIn || rule.op == CompareOp::kNotIn;
  if (set_op && seen.count("values") == 0) {
    return site.At(node, "values", "missing (op in / not_in needs a list of values)");
  }
  if (!set_op && seen.count("threshold") == 0) return site.At(node, "threshold", "missing");
  Status valid = ValidateRule(rule);
  if (!valid.ok()) return site.At(node, "rule", valid.message());
  return rule;
}

}  // namespace

Result<std::vector<Rule>> ParseRulesYaml(std::string_view text, std::string_view source_name) {
  const ErrorSite site(source_name);
  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    return Status::InvalidInput(std::string(source_name) + ":" + std::to_string(e.mark.line + 1) +
                                ": YAML syntax error: " + e.msg);
  }
  try {
    if (!root.IsMap()) {
      return site.At(root, "rules",
                     "expected a mapping with a 'rules' list, found " + Describe(root));
    }
    std::vector<Rule> rules;
    bool has_rules = false;
    for (auto it = root.begin(); it != root.end(); ++it) {
      FULCRUM_ASSIGN_OR_RETURN(std::string key, ScalarOf(site, it->first, "rules"));
      if (key != "rules") return site.At(it->first, key, "unknown field (expected rules)");
      has_rules = true;
      const YAML::Node list = it->second;  // a copy: it-> yields a temporary
      if (list.IsNull()) continue;
      if (!list.IsSequence()) {
        return site.At(list, "rules", "expected a list of rules, found " + Describe(list));
      }
      std::set<std::string> names;
      for (const YAML::Node& item : list) {
        FULCRUM_ASSIGN_OR_RETURN(Rule rule, RuleOf(site, item));
        if (!names.insert(rule.name).second) {
          return site.At(item, "name", "duplicate rule name '" + rule.name + "'");
        }
        rules.push_back(std::move(rule));
      }
    }
    if (!has_rules) return site.At(root, "rules", "missing");
    return rules;
  } catch (const YAML::Exception& e) {
    return Status::InvalidInput(std::string(source_name) + ":" + std::to_string(e.mark.line + 1) +
                                ": " + e.msg);
  }
}

Result<std::vector<Rule>> LoadRulesFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound("rules file '" + path + "': cannot open");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return Status::IoError("rules file '" + path + "': read error");
  return ParseRulesYaml(text.str(), path);
}

Result<std::vector<Rule>> DefaultRules() {
  return ParseRulesYaml(DefaultRulesYaml(), "<default rules>");
}

}  // namespace fulcrum::alert
