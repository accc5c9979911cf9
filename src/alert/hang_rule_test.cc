// The shipped GpuJobHung rule (examples/rules.yaml, embedded): busy GPU, low power, no job
// progress for its threshold, held for its `for`.
#include <gtest/gtest.h>

#include "alert/evaluator.h"
#include "alert/rules_yaml.h"

namespace fulcrum::alert {
namespace {

constexpr double kT0 = 1'700'000'000;

std::vector<Rule> HangRuleOnly() {
  auto rules = DefaultRules();
  EXPECT_TRUE(rules.ok()) << rules.status().ToString();
  std::vector<Rule> out;
  for (const Rule& r : *rules) {
    if (r.name == "GpuJobHung") out.push_back(r);
  }
  EXPECT_EQ(out.size(), 1u);
  return out;
}

// One tick of GPU 0: utilization, power over limit, seconds since the job's last progress
// (nullopt: no job runs there).
std::vector<Transition> Tick(Evaluator& e, double t, double utilization, double power_ratio,
                             std::optional<double> progress_age) {
  std::vector<Sample> batch = {{"gpu_utilization_ratio", 0, utilization, kT0 + t},
                               {"gpu_power_used_ratio", 0, power_ratio, kT0 + t}};
  if (progress_age) batch.push_back({"job_progress_age_seconds", 0, *progress_age, kT0 + t});
  return e.Evaluate(batch);
}

TEST(HangRuleTest, FiresWhenBusyAtLowPowerWithoutProgressForItsHold) {
  std::vector<Rule> rules = HangRuleOnly();
  ASSERT_EQ(rules.size(), 1u);
  const Rule& rule = rules[0];
  EXPECT_EQ(rule.severity, "critical");
  Evaluator e(rules);
  double age0 = rule.threshold + 1;  // already past the no-progress threshold
  auto first = Tick(e, 0, 1.0, 0.25, age0);
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0].to, AlertStatus::kPending);
  EXPECT_TRUE(Tick(e, rule.for_seconds - 1, 1.0, 0.25, age0 + rule.for_seconds - 1).empty());
  auto fired = Tick(e, rule.for_seconds, 1.0, 0.25, age0 + rule.for_seconds);
  ASSERT_EQ(fired.size(), 1u);
  EXPECT_EQ(fired[0].to, AlertStatus::kFiring);
  EXPECT_EQ(fired[0].gpu, 0);
  // Progress again (a step arrived): resolves.
  auto resolved = Tick(e, rule.for_seconds + 1, 1.0, 0.25, 1);
  ASSERT_EQ(resolved.size(), 1u);
  EXPECT_EQ(resolved[0].to, AlertStatus::kResolved);
}

TEST(HangRuleTest, QuietWhileTrainingOrWithoutAJobOrWithRecentProgress) {
  std::vector<Rule> rules = HangRuleOnly();
  ASSERT_EQ(rules.size(), 1u);
  double hold = rules[0].for_seconds, late = rules[0].threshold + 1;
  Evaluator e(rules);
  for (double t = 0; t <= 2 * hold; t += 10) {
    // A training step: busy at high power, even with stale progress (a slow logger).
    EXPECT_TRUE(Tick(e, t, 1.0, 0.85, late + t).empty());
  }
  Evaluator no_job(rules);
  for (double t = 0; t <= 2 * hold; t += 10) {
    EXPECT_TRUE(Tick(no_job, t, 1.0, 0.25, std::nullopt).empty());  // nothing supervised here
  }
  Evaluator fresh(rules);
  for (double t = 0; t <= 2 * hold; t += 10) {
    EXPECT_TRUE(Tick(fresh, t, 1.0, 0.25, 5).empty());  // low power but making progress
  }
  Evaluator idle(rules);
  for (double t = 0; t <= 2 * hold; t += 10) {
    EXPECT_TRUE(Tick(idle, t, 0.02, 0.1, late + t).empty());  // idle, not hung
  }
}

}  // namespace
}  // namespace fulcrum::alert
