// Fuzz target for the alert rules YAML loader: any input must give rules or an InvalidInput
// status with a message, never a crash, a hang or an exception; loaded rules must validate and
// run through an Evaluator.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "alert/evaluator.h"
#include "alert/rules_yaml.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto rules = fulcrum::alert::ParseRulesYaml(text, "fuzz.yaml");
  if (!rules.ok()) {
    if (rules.status().message().empty()) std::abort();
    return 0;
  }
  for (const auto& rule : *rules) {
    if (!fulcrum::alert::ValidateRule(rule).ok()) std::abort();
  }
  fulcrum::alert::Evaluator evaluator(*rules);
  std::vector<fulcrum::alert::Sample> batch;
  for (const auto& rule : *rules) {
    batch.push_back({rule.metric, 0, rule.threshold + 1, 1.0});
    batch.push_back({rule.metric, 0, rule.threshold - 1, 2.0});
  }
  (void)evaluator.Evaluate(batch);
  return 0;
}
