#include "alert/rules_yaml.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace fulcrum::alert {
namespace {

using ::testing::HasSubstr;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

const Rule* FindRule(const std::vector<Rule>& rules, const std::string& name) {
  for (const Rule& rule : rules) {
    if (rule.name == name) return &rule;
  }
  return nullptr;
}

TEST(RulesYamlTest, ParsesTheIssueExample) {
  auto rules = ParseRulesYaml(
      R"(rules: [{name: GpuTooHot, metric: gpu_temperature_celsius, op: ">", threshold: 85,
  for: 5m, keep_firing_for: 0s, severity: critical, annotations: {summary: "hot {{ $value }}"}}])",
      "inline.yaml");
  ASSERT_TRUE(rules.ok()) << rules.status().ToString();
  ASSERT_EQ(rules->size(), 1u);
  const Rule& rule = (*rules)[0];
  EXPECT_EQ(rule.name, "GpuTooHot");
  EXPECT_EQ(rule.metric, "gpu_temperature_celsius");
  EXPECT_EQ(rule.op, CompareOp::kGreater);
  EXPECT_EQ(rule.kind, RuleKind::kThreshold);
  EXPECT_DOUBLE_EQ(rule.threshold, 85);
  EXPECT_DOUBLE_EQ(rule.for_seconds, 300);
  EXPECT_DOUBLE_EQ(rule.keep_firing_for_seconds, 0);
  EXPECT_EQ(rule.severity, "critical");
  EXPECT_EQ(rule.annotations.at("summary"), "hot {{ $value }}");
}

TEST(RulesYamlTest, DefaultsAreTheExampleFileByteForByte) {
  const std::string example = ReadFile(std::string(FULCRUM_SOURCE_DIR) + "/examples/rules.yaml");
  ASSERT_FALSE(example.empty());
  EXPECT_EQ(std::string(DefaultRulesYaml()), example)
      << "the embedded default rules differ from examples/rules.yaml (web/CMakeLists.txt)";
}

TEST(RulesYamlTest, ShippedDefaultsCoverTheIssueList) {
  auto loaded = LoadRulesFile(std::string(FULCRUM_SOURCE_DIR) + "/examples/rules.yaml");
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  const auto& rules = *loaded;

  const Rule* hot = FindRule(rules, "GpuTooHot");
  ASSERT_NE(hot, nullptr);
  EXPECT_EQ(hot->metric, "gpu_temperature_celsius");
  EXPECT_EQ(hot->op, CompareOp::kGreater);
  EXPECT_DOUBLE_EQ(hot->threshold, 85);
  EXPECT_DOUBLE_EQ(hot->for_seconds, 5 * 60);

  const Rule* thermal = FindRule(rules, "GpuThermalSlowdown");
  ASSERT_NE(thermal, nullptr);
  EXPECT_EQ(thermal->metric, "gpu_thermal_slowdown");
  EXPECT_DOUBLE_EQ(thermal->for_seconds, 5 * 60);

  const Rule* power = FindRule(rules, "GpuPowerCapped");
  ASSERT_NE(power, nullptr);
  EXPECT_EQ(power->metric, "gpu_power_capped");
  EXPECT_DOUBLE_EQ(power->for_seconds, 10 * 60);

  const Rule* xid = FindRule(rules, "GpuCriticalXid");
  ASSERT_NE(xid, nullptr);
  EXPECT_EQ(xid->op, CompareOp::kIn);
  EXPECT_EQ(xid->values, (std::vector<double>{48, 62, 63, 64, 74, 79, 92, 94, 95, 119, 120}));
  EXPECT_DOUBLE_EQ(xid->for_seconds, 0);

  const Rule* ecc = FindRule(rules, "GpuUncorrectableEcc");
  ASSERT_NE(ecc, nullptr);
  EXPECT_EQ(ecc->kind, RuleKind::kIncrease);
  EXPECT_DOUBLE_EQ(ecc->for_seconds, 0);

  const Rule* memory = FindRule(rules, "GpuMemoryNearlyFull");
  ASSERT_NE(memory, nullptr);
  EXPECT_EQ(memory->divide_by, "gpu_memory_total_bytes");
  EXPECT_DOUBLE_EQ(memory->threshold, 0.9);
  EXPECT_DOUBLE_EQ(memory->for_seconds, 2 * 60);

  const Rule* idle = FindRule(rules, "GpuIdleDuringJob");
  ASSERT_NE(idle, nullptr);
  EXPECT_EQ(idle->op, CompareOp::kLess);
  EXPECT_DOUBLE_EQ(idle->threshold, 0.1);
  EXPECT_DOUBLE_EQ(idle->for_seconds, 30 * 60);
  ASSERT_EQ(idle->when.size(), 1u);
  EXPECT_EQ(idle->when[0].metric, "job_running");

  const Rule* swing = FindRule(rules, "GpuClockSwing");
  ASSERT_NE(swing, nullptr);
  EXPECT_EQ(swing->kind, RuleKind::kSwing);
  EXPECT_DOUBLE_EQ(swing->threshold, 0.3);

  // Every metric a default rule uses is in docs/API.md's list (or job_running).
  const std::string api = ReadFile(std::string(FULCRUM_SOURCE_DIR) + "/docs/API.md");
  for (const Rule& rule : rules) {
    if (rule.metric != "job_running") {
      EXPECT_THAT(api, HasSubstr("`" + rule.metric + "`"));
    }
    if (!rule.divide_by.empty()) {
      EXPECT_THAT(api, HasSubstr("`" + rule.divide_by + "`"));
    }
  }
}

struct BadCase {
  const char* yaml;
  const char* expected;  // substring of the error message
};

TEST(RulesYamlTest, ErrorsNameFileLineAndField) {
  const BadCase cases[] = {
      {"rules:\n  - name: A\n    metric: gpu_temprature_celsius\n    op: \">\"\n    threshold: 1\n",
       "r.yaml:3: rules[0].metric: expected a metric of docs/API.md without the fulcrum_ prefix "
       "(e.g. gpu_temperature_celsius), job_running or job_progress_age_seconds, found "
       "\"gpu_temprature_celsius\"; did you mean gpu_temperature_celsius?"},
      {"rules:\n  - name: A\n    metric: gpu_temperature_celsius\n    op: \"=>\"\n    threshold: "
       "1\n",
       "r.yaml:4: rules[0].op: expected one of > >= < <= == != in not_in, found \"=>\""},
      {"rules:\n  - name: A\n    metric: gpu_temperature_celsius\n    op: \">\"\n    threshold: "
       "hot\n",
       "r.yaml:5: rules[0].threshold: expected a number, found \"hot\""},
      {"rules:\n  - name: A\n    metric: gpu_temperature_celsius\n    op: \">\"\n    threshold: 1\n"
       "    for: 5 minutes\n",
       "r.yaml:6: rules[0].for: expected a duration"},
      {"rules:\n  - name: A\n    metric: gpu_temperature_celsius\n    op: \">\"\n    threshold: 1\n"
       "    sevrity: critical\n",
       "r.yaml:6: rules[0].sevrity: expected a known field (name, metric, kind, op, threshold, "
       "values, divide_by, when, for, keep_firing_for, severity, labels, annotations), found "
       "unknown field \"sevrity\"; did you mean severity?"},
      {"rules:\n  - name: A\n    metric: gpu_temperature_celsius\n    op: \">\"\n",
       "r.yaml:2: rules[0].threshold: expected a value, found no such field"},
      {"rules:\n  - name: A\n    metric: gpu_xid_last\n    op: in\n    threshold: 1\n",
       "rules[0].values: expected a list of values (op in / not_in needs one), found no such "
       "field"},
      {"rules:\n  - {name: A, metric: gpu_temperature_celsius, op: \">\", threshold: 1}\n"
       "  - {name: A, metric: gpu_temperature_celsius, op: \">\", threshold: 2}\n",
       "r.yaml:3: rules[1].name: expected a rule name used once, found duplicate rule name \"A\" "
       "(first on line 2)"},
      {"rules:\n  - {name: A, metric: gpu_sm_clock_hertz, kind: wobble, op: \">\", threshold: 1}\n",
       "r.yaml:2: rules[0].kind: expected threshold, increase or swing, found \"wobble\""},
      {"rules:\n  - {name: A, metric: gpu_utilization_ratio, op: \"<\", threshold: 1,\n"
       "     when: [{metric: job_runing, op: \"==\", threshold: 1}]}\n",
       "r.yaml:3: rules[0].when[0].metric: expected a metric of docs/API.md"},
      {"rules:\n  - {name: A, metric: gpu_temperature_celsius, op: \">\", threshold: 1,\n"
       "     annotations: [a, b]}\n",
       "r.yaml:3: rules[0].annotations: expected a mapping, found a list"},
      {"rules:\n  - {name: \"bad name\", metric: gpu_temperature_celsius, op: \">\", threshold: "
       "1}\n",
       "expected an identifier"},
      {"rules:\n  - {name: A, metric: gpu_temperature_celsius, op: \">\", threshold: 1, for: "
       "-5s}\n",
       "r.yaml:2: rules[0].for: expected a duration"},
      {"rulez: []\n",
       "r.yaml:1: rulez: expected a known field (rules), found unknown field \"rulez\"; did "
       "you mean rules?"},
      {"rules: {name: A}\n", "r.yaml:1: rules: expected a list of rules, found a mapping"},
      {"rules:\n  - name: A\n    metric: [\n", "r.yaml:"},  // YAML syntax error
      {"- 1\n- 2\n", "expected a mapping with a 'rules' list"},
  };
  for (const BadCase& c : cases) {
    auto rules = ParseRulesYaml(c.yaml, "r.yaml");
    ASSERT_FALSE(rules.ok()) << c.yaml;
    EXPECT_EQ(rules.status().code(), StatusCode::kInvalidInput);
    EXPECT_THAT(rules.status().message(), HasSubstr(c.expected)) << c.yaml;
  }
}

TEST(RulesYamlTest, EmptyRuleListIsAllowedWithAWarning) {
  for (const char* text : {"rules: []\n", "rules:\n"}) {
    std::vector<std::string> warnings;
    auto rules = ParseRulesYaml(text, "r.yaml", &warnings);
    ASSERT_TRUE(rules.ok()) << text;
    EXPECT_TRUE(rules->empty());
    ASSERT_EQ(warnings.size(), 1u) << text;
    EXPECT_THAT(warnings[0], HasSubstr("r.yaml:1: rules: the rule set is empty"));
  }
  std::vector<std::string> warnings;
  ASSERT_TRUE(ParseRulesYaml(DefaultRulesYaml(), "<default rules>", &warnings).ok());
  EXPECT_TRUE(warnings.empty());
}

TEST(RulesYamlTest, DuplicateKeysRefused) {
  auto rules = ParseRulesYaml(
      "rules:\n  - name: A\n    metric: gpu_temperature_celsius\n    op: \">\"\n"
      "    threshold: 80\n    threshold: 90\n",
      "r.yaml");
  ASSERT_FALSE(rules.ok());
  EXPECT_EQ(rules.status().message(),
            "r.yaml:6: rules[0].threshold: expected each key once in a mapping, found "
            "\"threshold\" again (first on line 5)");
  ASSERT_NE(rules.status().detail(), nullptr);
  EXPECT_EQ(rules.status().detail()->line, 6);
  EXPECT_FALSE(ParseRulesYaml("rules: []\nrules: []\n", "r.yaml").ok());
}

TEST(RulesYamlTest, NonFiniteNumbersRefused) {
  for (const char* bad : {".inf", "-.inf", ".nan", "nan", "1e400"}) {
    auto rules = ParseRulesYaml(
        std::string("rules:\n  - {name: A, metric: gpu_temperature_celsius, op: \">\", "
                    "threshold: ") +
            bad + "}\n",
        "r.yaml");
    ASSERT_FALSE(rules.ok()) << bad;
    EXPECT_THAT(rules.status().message(),
                HasSubstr(std::string("r.yaml:2: rules[0].threshold: expected a number, found \"") +
                          bad + "\""));
    rules = ParseRulesYaml(
        std::string("rules:\n  - {name: A, metric: gpu_xid_last, op: in, values: [1, ") + bad +
            "]}\n",
        "r.yaml");
    ASSERT_FALSE(rules.ok()) << bad;
    EXPECT_THAT(rules.status().message(), HasSubstr("rules[0].values[1]: expected a number"));
  }
}

TEST(RulesYamlTest, MissingFileIsNotFound) {
  auto rules = LoadRulesFile("/nonexistent/fulcrum/rules.yaml");
  ASSERT_FALSE(rules.ok());
  EXPECT_EQ(rules.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(rules.status().message(), HasSubstr("/nonexistent/fulcrum/rules.yaml"));
}

TEST(RulesYamlTest, FixtureWithAllOptionalFields) {
  auto rules =
      LoadRulesFile(std::string(FULCRUM_SOURCE_DIR) + "/tests/fixtures/alert/all_fields.yaml");
  ASSERT_TRUE(rules.ok()) << rules.status().ToString();
  ASSERT_EQ(rules->size(), 2u);
  const Rule& rule = (*rules)[0];
  EXPECT_EQ(rule.labels.at("team"), "ml-infra");
  EXPECT_EQ(rule.op, CompareOp::kNotIn);
  EXPECT_EQ(rule.values, (std::vector<double>{0, 31}));
  EXPECT_DOUBLE_EQ(rule.keep_firing_for_seconds, 90);
  const Rule& second = (*rules)[1];
  EXPECT_EQ(second.kind, RuleKind::kSwing);
  ASSERT_EQ(second.when.size(), 2u);
  EXPECT_EQ(second.when[1].op, CompareOp::kNotEqual);
}

// --- rule.h helpers -------------------------------------------------------------------------

TEST(RuleTest, CompareOperators) {
  EXPECT_TRUE(Compare(CompareOp::kGreater, 2, 1, {}));
  EXPECT_FALSE(Compare(CompareOp::kGreater, 1, 1, {}));
  EXPECT_TRUE(Compare(CompareOp::kGreaterEqual, 1, 1, {}));
  EXPECT_TRUE(Compare(CompareOp::kLess, 0, 1, {}));
  EXPECT_TRUE(Compare(CompareOp::kLessEqual, 1, 1, {}));
  EXPECT_TRUE(Compare(CompareOp::kEqual, 1, 1, {}));
  EXPECT_TRUE(Compare(CompareOp::kNotEqual, 2, 1, {}));
  EXPECT_TRUE(Compare(CompareOp::kIn, 79, 0, {48, 79}));
  EXPECT_FALSE(Compare(CompareOp::kIn, 31, 0, {48, 79}));
  EXPECT_TRUE(Compare(CompareOp::kNotIn, 31, 0, {48, 79}));
  for (const char* op : {">", ">=", "<", "<=", "==", "!=", "in", "not_in"}) {
    ASSERT_TRUE(ParseCompareOp(op).has_value()) << op;
    EXPECT_EQ(ToString(*ParseCompareOp(op)), op);
  }
  EXPECT_FALSE(ParseCompareOp("gt").has_value());
}

TEST(RuleTest, ExpandTemplate) {
  std::map<std::string, std::string> labels = {{"gpu", "3"}, {"alertname", "X"}};
  EXPECT_EQ(
      ExpandTemplate("GPU {{ $labels.gpu }} at {{$value}} > {{ $threshold }}", 87.5, 85, labels),
      "GPU 3 at 87.5 > 85");
  EXPECT_EQ(ExpandTemplate("{{ $value }}", 0.3125, 0, labels), "0.3125");
  EXPECT_EQ(ExpandTemplate("{{ $labels.nope }} {{ x", 1, 1, labels), "{{ $labels.nope }} {{ x");
}

TEST(RuleTest, ValidateRuleInCode) {
  Rule rule;
  rule.name = "Ok";
  rule.metric = "gpu_power_watts";
  EXPECT_TRUE(ValidateRule(rule).ok());
  rule.divide_by = "gpu_power_limit_watts";
  rule.kind = RuleKind::kSwing;
  EXPECT_FALSE(ValidateRule(rule).ok());
}

}  // namespace
}  // namespace fulcrum::alert
