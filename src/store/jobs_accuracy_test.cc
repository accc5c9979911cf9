#include "store/jobs_accuracy.h"

#include <gtest/gtest.h>

namespace fulcrum::store {
namespace {

PredictionRecord Row(const std::string& gpu, int gpus, double predicted_step,
                     std::optional<double> measured_step) {
  PredictionRecord r;
  r.uid = gpu + "." + std::to_string(gpus);
  r.gpu = gpu;
  r.gpus_per_node = gpus;
  r.predicted_step_seconds = predicted_step;
  r.measured_step_seconds = measured_step;
  return r;
}

TEST(JobsAccuracyTest, ErrorsPerHardwareClass) {
  std::vector<PredictionRecord> log = {
      Row("H100-SXM5-80GB", 8, 1.0, 1.5),           // +50 %
      Row("A100-PCIe-80GB", 1, 2.0, 1.8),           // -10 %
      Row("H100-SXM5-80GB", 8, 1.0, 0.9),           // -10 %
      Row("H100-SXM5-80GB", 8, 1.0, std::nullopt),  // not measured: no error
      Row("H100-SXM5-80GB", 1, 1.0, 1.2),           // another class: one GPU per node
  };
  log[0].predicted_cost_usd = 10;
  log[0].measured_cost_usd = 12;
  const std::vector<ClassAccuracy> classes = AccuracyByClass(log);
  ASSERT_EQ(classes.size(), 3u);
  const ClassAccuracy& h100 = classes[0];
  EXPECT_EQ(ClassLabel(h100.gpu, h100.gpus_per_node), "H100-SXM5-80GB x8");
  EXPECT_EQ(h100.jobs, 3);
  EXPECT_EQ(h100.step_time.jobs, 2);
  EXPECT_NEAR(*h100.step_time.bias, 0.20, 1e-12);
  EXPECT_NEAR(*h100.step_time.mean_abs, 0.30, 1e-12);
  EXPECT_NEAR(*h100.step_time.worst, 0.50, 1e-12);
  EXPECT_EQ(h100.cost.jobs, 1);
  EXPECT_NEAR(*h100.cost.bias, 0.2, 1e-12);
  EXPECT_FALSE(h100.memory.bias) << "nothing measured: unknown, not 0";
  EXPECT_EQ(h100.memory.jobs, 0);
  EXPECT_NEAR(*classes[1].step_time.worst, -0.10, 1e-12);
  EXPECT_EQ(classes[2].gpus_per_node, 1);
  EXPECT_EQ(ClassLabel("", std::nullopt), "unknown GPU");
}

}  // namespace
}  // namespace fulcrum::store
