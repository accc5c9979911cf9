// Loads alert rules from YAML:
//   rules:
//     - {name: GpuTooHot, metric: gpu_temperature_celsius, op: ">", threshold: 85, for: 5m,
//        keep_firing_for: 0s, severity: critical, labels: {...}, annotations: {summary: ...}}
// Optional per rule: kind (threshold|increase|swing), values (list, for op in/not_in),
// divide_by (metric), when (list of {metric, op, threshold}). Errors name "<file>:<line>: field
// '<f>'", what was expected and what was found. Unknown fields are errors (typos must not pass
// silently). Thread-safe (no shared state).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "alert/rule.h"
#include "core/status.h"

namespace fulcrum::alert {

// `source_name` is used in error messages (a path, or "<defaults>").
Result<std::vector<Rule>> ParseRulesYaml(std::string_view text, std::string_view source_name);

// Reads and parses a rules file; a missing/unreadable file is kNotFound/kIoError.
Result<std::vector<Rule>> LoadRulesFile(const std::string& path);

// The shipped defaults: examples/rules.yaml embedded at build time (web/CMakeLists.txt generates
// the definition), so that `fulcrum agent` without --rules needs no file on disk.
std::string_view DefaultRulesYaml();
Result<std::vector<Rule>> DefaultRules();

}  // namespace fulcrum::alert
