#include "estimate/uncertainty.h"

#include <cmath>

#include <gtest/gtest.h>

namespace fulcrum::estimate {
namespace {

// Two transformer families (a 7B on 8 GPUs, a 70B on 1024) and one CNN family.
UncertaintyTable Table() {
  UncertaintyTable t;
  t.families = {{"small", {0.9, 1.1, 10}, {0.8, 1.4, 10}, {1.0, 1.2, 5}},
                {"large", {0.7, 1.3, 10}, {0.6, 1.2, 10}, {1.0, 1.5, 5}},
                {"cnn", {0.5, 3.0, 10}, {0.4, 4.0, 10}, {1.0, 1.9, 5}}};
  t.points = {{0, false, std::log10(7e9), 3},
              {1, false, std::log10(70e9), 10},
              {2, true, std::log10(25e6), 3}};
  return t;
}

// About 7 B (32 x 4096) or about 70 B (80 x 8192) parameters.
workload::Model Transformer(int billions) {
  workload::Model m;
  m.layers = billions >= 70 ? 80 : 32;
  m.hidden = billions >= 70 ? 8192 : 4096;
  m.heads = 32;
  m.kv_heads = 32;
  m.ffn_hidden = 4 * m.hidden;
  m.vocab = 32000;
  return m;
}

TEST(UncertaintyTest, TheNearestCalibrationRowChoosesTheFamily) {
  const UncertaintyTable t = Table();
  const StepBand small = BandFor(t, Transformer(7), 8, true);
  EXPECT_EQ(small.family, "small");
  EXPECT_DOUBLE_EQ(small.step_p10_ratio, 0.9);
  EXPECT_DOUBLE_EQ(small.step_p90_ratio, 1.1);
  EXPECT_DOUBLE_EQ(small.memory_p90_ratio, 1.2);
  EXPECT_EQ(BandFor(t, Transformer(70), 1024, true).family, "large");
  // Scale counts too: a 7B on 1024 GPUs is nearer the 70B row at that scale than the 7B on 8
  // (|1 decade| + 0 vs 0 + 7/4).
  EXPECT_EQ(BandFor(t, Transformer(7), 1024, true).family, "large");
}

TEST(UncertaintyTest, ModelKindComesFirst) {
  workload::Model cnn;
  cnn.kind = workload::ModelKind::kGeneric;
  cnn.generic_parameters = 7e9;  // as large as the 7B transformer: still a CNN
  EXPECT_EQ(BandFor(Table(), cnn, 8, true).family, "cnn");
}

// The larger tail of the new-architecture band, both ways: "small" errs up to 1.4x slow (and
// 0.8x), so 1/1.4 .. 1.4; "large" errs up to 0.6x (too slow a prediction), so 0.6 .. 1/0.6 —
// on a chip without rows the error's direction is not known.
TEST(UncertaintyTest, AnUncalibratedArchitectureWidensBothEnds) {
  const StepBand b = BandFor(Table(), Transformer(7), 8, false);
  EXPECT_FALSE(b.architecture_calibrated);
  EXPECT_NEAR(b.step_p10_ratio, 1 / 1.4, 1e-12);
  EXPECT_NEAR(b.step_p90_ratio, 1.4, 1e-12);
  const StepBand l = BandFor(Table(), Transformer(70), 1024, false);
  EXPECT_NEAR(l.step_p10_ratio, 0.6, 1e-12);
  EXPECT_NEAR(l.step_p90_ratio, 1 / 0.6, 1e-12);
  // Never narrower than the family's own left-out band.
  const StepBand calibrated = BandFor(Table(), Transformer(70), 1024, true);
  EXPECT_LE(l.step_p10_ratio, calibrated.step_p10_ratio);
  EXPECT_GE(l.step_p90_ratio, calibrated.step_p90_ratio);
}

TEST(UncertaintyTest, AnEmptyTableIsNoBand) {
  const StepBand b = BandFor(UncertaintyTable{}, Transformer(7), 8, false);
  EXPECT_TRUE(b.family.empty());
  EXPECT_DOUBLE_EQ(b.step_p90_ratio, 1);
}

// The generated table (tools/calibrate.cc) holds every family of the data with its rows.
TEST(UncertaintyTest, TheGeneratedTableCoversTheCalibrationFamilies) {
  const UncertaintyTable& t = DefaultUncertaintyTable();
  ASSERT_FALSE(t.families.empty());
  ASSERT_FALSE(t.points.empty());
  for (const FamilyBand& f : t.families) {
    EXPECT_LE(f.step.p10, f.step.p90) << f.family;
    EXPECT_GT(f.step.rows, 0) << f.family;
  }
  for (const CalibrationPoint& p : t.points) {
    EXPECT_LT(static_cast<size_t>(p.family), t.families.size());
  }
}

}  // namespace
}  // namespace fulcrum::estimate
