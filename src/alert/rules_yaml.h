// Loads alert rules from YAML:
//   rules:
//     - {name: GpuTooHot, metric: gpu_temperature_celsius, op: ">", threshold: 85, for: 5m,
//        keep_firing_for: 0s, severity: critical, labels: {...}, annotations: {summary: ...}}
// Optional per rule: kind (threshold|increase|swing), values (list, for op in/not_in),
// divide_by (metric), when (list of {metric, op, threshold}). Parsed with core/yaml: errors read
// "<file>:<line>: rules[i].<field>: expected ..., found ..."; unknown fields (with the nearest
// valid one), duplicate keys and non-finite numbers are errors (typos must not pass silently).
// Thread-safe (no shared state).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "alert/rule.h"
#include "core/status.h"

namespace fulcrum::alert {

// `source_name` is used in error messages (a path, or "<defaults>"). When `warnings` is given,
// problems that do not stop the agent are appended to it (an empty rule set: `rules: []`).
Result<std::vector<Rule>> ParseRulesYaml(std::string_view text, std::string_view source_name,
                                         std::vector<std::string>* warnings = nullptr);

// Reads (core ReadTextFile: at most 16 MiB) and parses a rules file; a missing/unreadable file is
// kNotFound/kIoError, a larger one kInvalidInput with its size.
Result<std::vector<Rule>> LoadRulesFile(const std::string& path,
                                        std::vector<std::string>* warnings = nullptr);

// The shipped defaults: examples/rules.yaml embedded at build time (web/CMakeLists.txt generates
// the definition), so that `fulcrum agent` without --rules needs no file on disk.
std::string_view DefaultRulesYaml();
Result<std::vector<Rule>> DefaultRules();

}  // namespace fulcrum::alert
