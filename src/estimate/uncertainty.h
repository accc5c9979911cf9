// The estimator's uncertainty band: how far measured step times and memory peaks fall from
// fulcrum's predictions on setups the fit has not seen, as ratios measured / predicted. The
// figures come from the calibration data (tools/calibrate.cc writes them to the generated
// src/estimate/uncertainty_fitted.cc): per source family, the leave-one-family-out ratios of its
// rows (fitted without the family), and the new-architecture ratios (each row predicted as a GPU
// without calibration rows is: TimeCalibration::other for its architecture, the rest fitted
// without its architecture's rows) for GPUs whose architecture has no calibration row. A setup
// takes the band of the family whose calibration row it resembles most (same model kind, nearest
// parameter count and GPU count). A production band, the ratios of published production runs
// (runs that trained a released model, data/calibration/published_runs.csv) to the estimate,
// widens a transformer's band when the estimate quotes a production run rather than a tuned
// benchmark (issue 31: production runs fall short of hand-tuned benchmark tables). Immutable
// data; thread-safe.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "workload/model.h"
#include "workload/training.h"

namespace fulcrum::estimate {

// Quantiles (nearest rank) of measured / predicted over the rows behind it; 1 = no error.
struct RatioBand {
  double p10 = 1;
  double p90 = 1;
  int rows = 0;  // rows the quantiles come from (the pooled rows when the family had too few)
};

struct FamilyBand {
  std::string_view family;          // "mpt", "dle/resnet50", ... (see tools/calibration_bands.h)
  RatioBand step;                   // step time, the family left out of the fit
  RatioBand step_new_architecture;  // step time, each row predicted as an unlisted architecture
  RatioBand memory;                 // peak memory (no fitted constant: in-sample = left out)
};

// One calibration row, as the resemblance sees it.
struct CalibrationPoint {
  int family = 0;        // index into UncertaintyTable::families
  bool generic = false;  // FLOPs-only model (CNN) rather than a transformer
  double log10_parameters = 0;
  double log2_gpus = 0;
};

struct UncertaintyTable {
  std::vector<FamilyBand> families;
  std::vector<CalibrationPoint> points;
  // Step time of the published production runs (transformers), measured / predicted under the
  // fitted constants; rows 0 = none.
  RatioBand production_step;
  // Step time of the published runs of mixture-of-experts models (both kinds), measured /
  // predicted under the fitted constants: the calibration rows are all dense, so a MoE model's
  // routing, permutation and expert kernels are covered only by these runs; rows 0 = none.
  RatioBand moe_step;
  // Step time of the published FP8 runs (both kinds), measured / predicted under the fitted
  // constants: the calibration rows hold two FP8 runs (Megatron-Bridge's), which fit the FP8 GEMM
  // rate of every FP8 estimate, so the FP8 rates of other releases, models and layouts are covered
  // only by these runs (NeMo 24.07's FP8 benchmarks are each reproduced by an FP8 rate of its own,
  // far apart: docs/ACCURACY.md, "Published runs"); rows 0 = none.
  RatioBand fp8_step;
};

// What is known about the run the estimate quotes: a tuned benchmark configuration (the
// calibration rows are mostly such tables) or a production run (a team's own job: data
// loading, checkpoints, evaluation, stragglers, untuned settings).
enum class Realism { kProduction, kTunedBenchmark };

// "production" | "tuned_benchmark" (estimate --realism); InvalidInput naming the flag otherwise.
Result<Realism> ParseRealism(std::string_view name);
std::string_view RealismName(Realism realism);

// The table fitted on data/calibration/ (generated).
const UncertaintyTable& DefaultUncertaintyTable();

struct StepBand {
  std::string_view family;  // the family the band comes from ("" when the table is empty)
  bool architecture_calibrated = true;
  double step_p10_ratio = 1;  // step_seconds_p10 = step_seconds x this
  double step_p90_ratio = 1;
  double memory_p90_ratio = 1;                 // peak_bytes_per_gpu_p90 = peak_bytes_per_gpu x this
  Realism realism = Realism::kTunedBenchmark;  // the band asked for
  bool production_widened = false;             // the production band moved an end of the step band
  bool moe_widened = false;  // the mixture-of-experts band moved an end of the step band
  bool fp8_widened = false;  // the FP8 band moved an end of the step band
};

// The band of the family whose row resembles (model, training, gpus) most: same model kind
// where the table has one, then the smallest |delta log10 parameters| + |delta log2 GPUs| / 4
// (a decade of parameters weighs like 16x the GPUs). Where the GPU's architecture has no
// calibration row, the step band also covers the family's new-architecture error in both
// directions: its larger tail |ln ratio| (P10 or P90) applied as P90 = e^size, P10 = e^-size,
// because which way a chip without rows errs is not known (the measured transfers err both
// ways depending on which architecture plays the new one); the union with the left-out band.
// For a production run of a transformer the step band is also the union with the table's
// production band (generic models such as CNNs have no production rows: their band is
// unchanged). A mixture-of-experts model's band is also the union with the MoE band, and an FP8
// run's (`precision` kFp8) with the FP8 band, under either realism.
StepBand BandFor(const UncertaintyTable& table, const workload::Model& model,
                 workload::Precision precision, int64_t gpus, bool architecture_calibrated,
                 Realism realism);

}  // namespace fulcrum::estimate
