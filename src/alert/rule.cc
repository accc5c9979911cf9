#include "alert/rule.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>

#include "telemetry/gpu_sample.h"

namespace fulcrum::alert {
namespace {

bool IsIdentifier(std::string_view text) {
  if (text.empty()) return false;
  if (!(std::isalpha(static_cast<unsigned char>(text[0])) || text[0] == '_')) return false;
  return std::all_of(text.begin(), text.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

std::string FormatNumber(double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%.4f", value);
  std::string text = buffer;
  // Trim trailing zeros and a dangling decimal point: 87.5000 -> 87.5, 85.0000 -> 85.
  if (text.find('.') != std::string::npos) {
    while (!text.empty() && text.back() == '0') text.pop_back();
    if (!text.empty() && text.back() == '.') text.pop_back();
  }
  return text;
}

}  // namespace

bool Compare(CompareOp op, double value, double threshold, const std::vector<double>& values) {
  switch (op) {
    case CompareOp::kGreater:
      return value > threshold;
    case CompareOp::kGreaterEqual:
      return value >= threshold;
    case CompareOp::kLess:
      return value < threshold;
    case CompareOp::kLessEqual:
      return value <= threshold;
    case CompareOp::kEqual:
      return value == threshold;
    case CompareOp::kNotEqual:
      return value != threshold;
    case CompareOp::kIn:
      return std::find(values.begin(), values.end(), value) != values.end();
    case CompareOp::kNotIn:
      return std::find(values.begin(), values.end(), value) == values.end();
  }
  return false;
}

std::string_view ToString(CompareOp op) {
  switch (op) {
    case CompareOp::kGreater:
      return ">";
    case CompareOp::kGreaterEqual:
      return ">=";
    case CompareOp::kLess:
      return "<";
    case CompareOp::kLessEqual:
      return "<=";
    case CompareOp::kEqual:
      return "==";
    case CompareOp::kNotEqual:
      return "!=";
    case CompareOp::kIn:
      return "in";
    case CompareOp::kNotIn:
      return "not_in";
  }
  return "?";
}

std::optional<CompareOp> ParseCompareOp(std::string_view text) {
  for (CompareOp op :
       {CompareOp::kGreater, CompareOp::kGreaterEqual, CompareOp::kLess, CompareOp::kLessEqual,
        CompareOp::kEqual, CompareOp::kNotEqual, CompareOp::kIn, CompareOp::kNotIn}) {
    if (ToString(op) == text) return op;
  }
  return std::nullopt;
}

std::string_view ToString(RuleKind kind) {
  switch (kind) {
    case RuleKind::kThreshold:
      return "threshold";
    case RuleKind::kIncrease:
      return "increase";
    case RuleKind::kSwing:
      return "swing";
  }
  return "?";
}

std::optional<RuleKind> ParseRuleKind(std::string_view text) {
  for (RuleKind kind : {RuleKind::kThreshold, RuleKind::kIncrease, RuleKind::kSwing}) {
    if (ToString(kind) == text) return kind;
  }
  return std::nullopt;
}

// The metrics on /metrics (telemetry::Metrics(), the one list; docs/API.md) plus job_running,
// which the agent feeds from the supervisor's jobs.
bool IsKnownMetric(std::string_view name) {
  return name == "job_running" || name == "job_progress_age_seconds" ||
         telemetry::FindMetric(name) != nullptr;
}

std::string ExpandTemplate(std::string_view text, double value, double threshold,
                           const std::map<std::string, std::string>& labels) {
  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  while (pos < text.size()) {
    size_t open = text.find("{{", pos);
    if (open == std::string_view::npos) break;
    size_t close = text.find("}}", open + 2);
    if (close == std::string_view::npos) break;
    out.append(text.substr(pos, open - pos));
    std::string_view inner = text.substr(open + 2, close - open - 2);
    while (!inner.empty() && inner.front() == ' ') inner.remove_prefix(1);
    while (!inner.empty() && inner.back() == ' ') inner.remove_suffix(1);
    std::string_view label_prefix = "$labels.";
    if (inner == "$value") {
      out += FormatNumber(value);
    } else if (inner == "$threshold") {
      out += FormatNumber(threshold);
    } else if (inner.substr(0, label_prefix.size()) == label_prefix &&
               labels.count(std::string(inner.substr(label_prefix.size()))) > 0) {
      out += labels.at(std::string(inner.substr(label_prefix.size())));
    } else {
      out.append(text.substr(open, close + 2 - open));
    }
    pos = close + 2;
  }
  out.append(text.substr(pos));
  return out;
}

Status ValidateRule(const Rule& rule) {
  if (!IsIdentifier(rule.name)) {
    return Status::InvalidInput(
        "field 'name': expected an identifier [A-Za-z_][A-Za-z0-9_]*, found '" + rule.name + "'");
  }
  const std::string where = "rule '" + rule.name + "': ";
  if (!IsKnownMetric(rule.metric)) {
    return Status::InvalidInput(where + "field 'metric': unknown metric '" + rule.metric +
                                "' (expected a name from docs/API.md without the fulcrum_ "
                                "prefix, e.g. gpu_temperature_celsius, or job_running)");
  }
  if (!rule.divide_by.empty() && !IsKnownMetric(rule.divide_by)) {
    return Status::InvalidInput(where + "field 'divide_by': unknown metric '" + rule.divide_by +
                                "'");
  }
  if (!rule.divide_by.empty() && rule.kind != RuleKind::kThreshold) {
    return Status::InvalidInput(where + "field 'divide_by': only allowed with kind threshold");
  }
  const bool set_op = rule.op == CompareOp::kIn || rule.op == CompareOp::kNotIn;
  if (set_op && rule.values.empty()) {
    return Status::InvalidInput(where + "field 'values': op '" + std::string(ToString(rule.op)) +
                                "' needs a non-empty list of values");
  }
  if (!set_op && !rule.values.empty()) {
    return Status::InvalidInput(where + "field 'values': only allowed with op in / not_in");
  }
  if (!std::isfinite(rule.threshold)) {
    return Status::InvalidInput(where + "field 'threshold': expected a finite number");
  }
  if (!std::isfinite(rule.for_seconds) || rule.for_seconds < 0) {
    return Status::InvalidInput(where + "field 'for': expected a duration >= 0");
  }
  if (!std::isfinite(rule.keep_firing_for_seconds) || rule.keep_firing_for_seconds < 0) {
    return Status::InvalidInput(where + "field 'keep_firing_for': expected a duration >= 0");
  }
  if (rule.severity.empty()) {
    return Status::InvalidInput(where + "field 'severity': expected a non-empty string");
  }
  for (const Condition& condition : rule.when) {
    if (!IsKnownMetric(condition.metric)) {
      return Status::InvalidInput(where + "field 'when.metric': unknown metric '" +
                                  condition.metric + "'");
    }
    if (condition.op == CompareOp::kIn || condition.op == CompareOp::kNotIn) {
      return Status::InvalidInput(where + "field 'when.op': in / not_in not supported here");
    }
    if (!std::isfinite(condition.threshold)) {
      return Status::InvalidInput(where + "field 'when.threshold': expected a finite number");
    }
  }
  return Status::Ok();
}

}  // namespace fulcrum::alert
