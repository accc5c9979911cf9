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
  const StepBand small = BandFor(t, Transformer(7), workload::Precision::kBf16Mixed, 8, true,
                                 Realism::kTunedBenchmark);
  EXPECT_EQ(small.family, "small");
  EXPECT_DOUBLE_EQ(small.step_p10_ratio, 0.9);
  EXPECT_DOUBLE_EQ(small.step_p90_ratio, 1.1);
  EXPECT_DOUBLE_EQ(small.memory_p90_ratio, 1.2);
  EXPECT_EQ(BandFor(t, Transformer(70), workload::Precision::kBf16Mixed, 1024, true,
                    Realism::kTunedBenchmark)
                .family,
            "large");
  // Scale counts too: a 7B on 1024 GPUs is nearer the 70B row at that scale than the 7B on 8
  // (|1 decade| + 0 vs 0 + 7/4).
  EXPECT_EQ(BandFor(t, Transformer(7), workload::Precision::kBf16Mixed, 1024, true,
                    Realism::kTunedBenchmark)
                .family,
            "large");
}

TEST(UncertaintyTest, ModelKindComesFirst) {
  workload::Model cnn;
  cnn.kind = workload::ModelKind::kGeneric;
  cnn.generic_parameters = 7e9;  // as large as the 7B transformer: still a CNN
  EXPECT_EQ(
      BandFor(Table(), cnn, workload::Precision::kBf16Mixed, 8, true, Realism::kTunedBenchmark)
          .family,
      "cnn");
}

// The larger tail of the new-architecture band, both ways: "small" errs up to 1.4x slow (and
// 0.8x), so 1/1.4 .. 1.4; "large" errs up to 0.6x (too slow a prediction), so 0.6 .. 1/0.6 —
// on a chip without rows the error's direction is not known.
TEST(UncertaintyTest, AnUncalibratedArchitectureWidensBothEnds) {
  const StepBand b = BandFor(Table(), Transformer(7), workload::Precision::kBf16Mixed, 8, false,
                             Realism::kTunedBenchmark);
  EXPECT_FALSE(b.architecture_calibrated);
  EXPECT_NEAR(b.step_p10_ratio, 1 / 1.4, 1e-12);
  EXPECT_NEAR(b.step_p90_ratio, 1.4, 1e-12);
  const StepBand l = BandFor(Table(), Transformer(70), workload::Precision::kBf16Mixed, 1024, false,
                             Realism::kTunedBenchmark);
  EXPECT_NEAR(l.step_p10_ratio, 0.6, 1e-12);
  EXPECT_NEAR(l.step_p90_ratio, 1 / 0.6, 1e-12);
  // Never narrower than the family's own left-out band.
  const StepBand calibrated = BandFor(Table(), Transformer(70), workload::Precision::kBf16Mixed,
                                      1024, true, Realism::kTunedBenchmark);
  EXPECT_LE(l.step_p10_ratio, calibrated.step_p10_ratio);
  EXPECT_GE(l.step_p90_ratio, calibrated.step_p90_ratio);
}

TEST(UncertaintyTest, AnEmptyTableIsNoBand) {
  const StepBand b = BandFor(UncertaintyTable{}, Transformer(7), workload::Precision::kBf16Mixed, 8,
                             false, Realism::kTunedBenchmark);
  EXPECT_TRUE(b.family.empty());
  EXPECT_DOUBLE_EQ(b.step_p90_ratio, 1);
}

// A production run of a transformer takes the union of its family's band and the production
// band; a tuned benchmark, and a CNN either way, keep the family's band.
TEST(UncertaintyTest, AProductionRunWidensATransformersBandOnly) {
  UncertaintyTable t = Table();
  t.production_step = {0.8, 1.25, 10};
  const StepBand tuned = BandFor(t, Transformer(7), workload::Precision::kBf16Mixed, 8, true,
                                 Realism::kTunedBenchmark);
  EXPECT_DOUBLE_EQ(tuned.step_p10_ratio, 0.9);
  EXPECT_DOUBLE_EQ(tuned.step_p90_ratio, 1.1);
  EXPECT_FALSE(tuned.production_widened);
  const StepBand production =
      BandFor(t, Transformer(7), workload::Precision::kBf16Mixed, 8, true, Realism::kProduction);
  EXPECT_EQ(production.realism, Realism::kProduction);
  EXPECT_TRUE(production.production_widened);
  EXPECT_DOUBLE_EQ(production.step_p10_ratio, 0.8);
  EXPECT_DOUBLE_EQ(production.step_p90_ratio, 1.25);
  // "large" is wider than the production band below (0.7) and as wide above (1.3): kept.
  const StepBand large = BandFor(t, Transformer(70), workload::Precision::kBf16Mixed, 1024, true,
                                 Realism::kProduction);
  EXPECT_DOUBLE_EQ(large.step_p10_ratio, 0.7);
  EXPECT_DOUBLE_EQ(large.step_p90_ratio, 1.3);
  EXPECT_FALSE(large.production_widened);
  workload::Model cnn;
  cnn.kind = workload::ModelKind::kGeneric;
  cnn.generic_parameters = 25e6;
  const StepBand c =
      BandFor(t, cnn, workload::Precision::kBf16Mixed, 8, true, Realism::kProduction);
  EXPECT_DOUBLE_EQ(c.step_p10_ratio, 0.5);
  EXPECT_DOUBLE_EQ(c.step_p90_ratio, 3.0);
  EXPECT_FALSE(c.production_widened);
}

// A mixture-of-experts model takes the union with the published MoE runs' band under either
// realism (the calibration rows are dense); a dense model of the same size does not.
TEST(UncertaintyTest, AMixtureOfExpertsModelWidensWithTheMoeRuns) {
  UncertaintyTable t = Table();
  t.moe_step = {1.05, 1.6, 3};
  workload::Model moe = Transformer(7);
  moe.experts = 8;
  moe.experts_per_token = 2;
  moe.expert_ffn_hidden = moe.ffn_hidden;
  for (Realism r : {Realism::kTunedBenchmark, Realism::kProduction}) {
    const StepBand b = BandFor(t, moe, workload::Precision::kBf16Mixed, 8, true, r);
    EXPECT_TRUE(b.moe_widened);
    EXPECT_LE(b.step_p10_ratio, 0.9);  // the family's fast end stays
    EXPECT_DOUBLE_EQ(b.step_p90_ratio, 1.6);
  }
  const StepBand dense = BandFor(t, Transformer(7), workload::Precision::kBf16Mixed, 8, true,
                                 Realism::kTunedBenchmark);
  EXPECT_FALSE(dense.moe_widened);
  EXPECT_DOUBLE_EQ(dense.step_p90_ratio, 1.1);
  // The generated table holds the published MoE runs (DeepSeek-V3, Qwen3-MoE).
  EXPECT_GE(DefaultUncertaintyTable().moe_step.rows, 3);
}

// An FP8 run takes the union with the published FP8 runs' band under either realism (two
// calibration rows fit the FP8 GEMM rate); the same run in BF16 does not.
TEST(UncertaintyTest, AnFp8RunWidensWithTheFp8Runs) {
  UncertaintyTable t = Table();
  t.fp8_step = {0.8, 1.3, 15};
  for (Realism r : {Realism::kTunedBenchmark, Realism::kProduction}) {
    const StepBand b = BandFor(t, Transformer(7), workload::Precision::kFp8, 8, true, r);
    EXPECT_TRUE(b.fp8_widened);
    EXPECT_DOUBLE_EQ(b.step_p10_ratio, 0.8);
    EXPECT_DOUBLE_EQ(b.step_p90_ratio, 1.3);
  }
  const StepBand bf16 = BandFor(t, Transformer(7), workload::Precision::kBf16Mixed, 8, true,
                                Realism::kTunedBenchmark);
  EXPECT_FALSE(bf16.fp8_widened);
  EXPECT_DOUBLE_EQ(bf16.step_p90_ratio, 1.1);
  // The generated table holds the published FP8 runs (NeMo 24.07's, DeepSeek-V3, Qwen3-MoE).
  EXPECT_GE(DefaultUncertaintyTable().fp8_step.rows, 10);
}

TEST(UncertaintyTest, RealismNamesRoundTrip) {
  for (Realism r : {Realism::kProduction, Realism::kTunedBenchmark}) {
    EXPECT_EQ(ParseRealism(RealismName(r)).value(), r);
  }
  EXPECT_FALSE(ParseRealism("benchmark").ok());
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
  // The published production runs (data/calibration/published_runs.csv) are in it.
  EXPECT_GE(t.production_step.rows, 5);
  EXPECT_LE(t.production_step.p10, t.production_step.p90);
}

}  // namespace
}  // namespace fulcrum::estimate
