#include "alert/rule.h"

#include <gtest/gtest.h>

#include "telemetry/gpu_sample.h"

namespace fulcrum::alert {
namespace {

TEST(KnownMetricTest, EveryExportedMetricCanBeUsedInARule) {
  for (const auto& metric : telemetry::Metrics()) {
    EXPECT_TRUE(IsKnownMetric(metric.name)) << metric.name;
  }
  EXPECT_TRUE(IsKnownMetric("job_running"));
  EXPECT_TRUE(IsKnownMetric("gpu_memory_used_ratio"));
  EXPECT_FALSE(IsKnownMetric("gpu_temprature_celsius"));
}

}  // namespace
}  // namespace fulcrum::alert
