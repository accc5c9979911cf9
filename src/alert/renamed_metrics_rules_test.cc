// Rule files written for the previous release's metric names (README changelog).
#include <gtest/gtest.h>

#include "alert/rules_yaml.h"

namespace fulcrum::alert {
namespace {

TEST(RenamedMetricsRulesTest, SameValuedOldNamesLoadUnderTheNewName) {
  auto rules = ParseRulesYaml(
      "rules:\n  - {name: Slow, metric: gpu_sm_clock_hz, op: \"<\", threshold: 1e9}\n"
      "  - {name: Busy, metric: gpu_utilization_ratio, op: \">\", threshold: 0.5,\n"
      "     when: [{metric: gpu_memory_clock_hz, op: \">\", threshold: 1}]}\n",
      "old.yaml");
  ASSERT_TRUE(rules.ok()) << rules.status().ToString();
  EXPECT_EQ((*rules)[0].metric, "gpu_sm_clock_hertz");
  EXPECT_EQ((*rules)[1].when[0].metric, "gpu_memory_clock_hertz");
}

TEST(RenamedMetricsRulesTest, AGaugeThatBecameACounterSaysSo) {
  auto rules = ParseRulesYaml(
      "rules:\n  - {name: Pcie, metric: gpu_pcie_tx_bytes_per_second, op: \">\", threshold: 1}\n",
      "old.yaml");
  ASSERT_FALSE(rules.ok());
  EXPECT_EQ(rules.status().code(), StatusCode::kInvalidInput);
  EXPECT_NE(rules.status().message().find(
                "gpu_pcie_tx_bytes_per_second is now the counter gpu_pcie_tx_bytes_total"),
            std::string::npos)
      << rules.status().message();
  EXPECT_NE(rules.status().message().find("old.yaml:2"), std::string::npos);
}

}  // namespace
}  // namespace fulcrum::alert
