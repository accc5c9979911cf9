// Alert rules: what condition on which agent metric, held for how long, raises which alert.
// A Rule is a plain value loaded from YAML (rules_yaml.h) and handed to the Evaluator. Metric
// names are those of docs/API.md without the `fulcrum_` prefix (gpu_temperature_celsius), plus
// `job_running` (1 while a supervised job runs on the GPU, fed by the agent) and
// `job_progress_age_seconds` (seconds since the GPU's running job last reported a progress step
// or heartbeat, from jobs.db; no series when no job runs on it). Durations are
// seconds. Pure data and pure functions, thread-safe.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace fulcrum::alert {

// Comparison of the rule's value against its threshold. kIn: the value is one of `values`
// (XID codes); kNotIn the opposite.
enum class CompareOp { kGreater, kGreaterEqual, kLess, kLessEqual, kEqual, kNotEqual, kIn, kNotIn };

// What the rule compares, computed per GPU from its samples:
//  kThreshold: the sample's value (optionally divided by `divide_by`'s latest value);
//  kIncrease:  value - previous value of the same series (counters: ECC errors); no value on the
//              first sample of a series;
//  kSwing:     |value - previous| / |previous|, sample-to-sample relative change (0.3 = 30 %);
//              no value on the first sample or when the previous value is 0.
enum class RuleKind { kThreshold, kIncrease, kSwing };

// An extra condition on another metric of the same GPU (falls back to the host-wide series,
// gpu = -1, e.g. `job_running`). A missing series makes the condition false.
struct Condition {
  std::string metric;
  CompareOp op = CompareOp::kEqual;
  double threshold = 0;
};

struct Rule {
  std::string name;    // alertname, e.g. "GpuTooHot"; [A-Za-z_][A-Za-z0-9_]*
  std::string metric;  // e.g. "gpu_temperature_celsius"
  RuleKind kind = RuleKind::kThreshold;
  CompareOp op = CompareOp::kGreater;
  double threshold = 0;
  std::vector<double> values;   // for kIn / kNotIn only
  std::string divide_by;        // "" or a metric: value = metric / divide_by (memory used/total)
  std::vector<Condition> when;  // all must hold for the rule to be active
  double for_seconds = 0;       // 0 = "at once": fires on the first active sample
  double keep_firing_for_seconds = 0;         // stays firing this long after the condition clears
  std::string severity = "warning";           // "critical", "warning", "info"
  std::map<std::string, std::string> labels;  // added to every alert of this rule
  std::map<std::string, std::string> annotations;  // summary, description; see ExpandTemplate
};

// Whether `value op threshold` (or membership in `values` for kIn/kNotIn).
bool Compare(CompareOp op, double value, double threshold, const std::vector<double>& values);

// "gt" style names are not accepted; these are the YAML spellings: ">", ">=", "<", "<=", "==",
// "!=", "in", "not_in".
std::string_view ToString(CompareOp op);
std::optional<CompareOp> ParseCompareOp(std::string_view text);
std::string_view ToString(RuleKind kind);  // "threshold", "increase", "swing"
std::optional<RuleKind> ParseRuleKind(std::string_view text);

// Whether a rule may use the metric: one of telemetry::Metrics() (docs/API.md), "job_running"
// or "job_progress_age_seconds".
bool IsKnownMetric(std::string_view name);

// Substitutes `{{ $value }}`, `{{ $threshold }}`, `{{ $labels.NAME }}` (any spacing inside the
// braces) in an annotation. Unknown placeholders are left as written. Numbers print with up to 4
// significant decimals ("87.5", "0.31").
std::string ExpandTemplate(std::string_view text, double value, double threshold,
                           const std::map<std::string, std::string>& labels);

// Checks a rule built in code (the YAML loader checks the same things with file:line context):
// name and metric well formed, op consistent with kind/values, durations finite and >= 0.
Status ValidateRule(const Rule& rule);

}  // namespace fulcrum::alert
