// The calibration rows of data/calibration/ as the fit sees them: each published measurement
// turned into an estimator input (estimate::EstimateInput + the node it ran on) and the measured
// value in the unit the source prints, with the row's family for the leave-one-family-out error.
// Loading resolves every row once; Predict evaluates one row under a given TimeCalibration.
// Values; thread-compatible.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "catalog/catalog.h"
#include "core/status.h"
#include "estimate/compute.h"
#include "estimate/estimate.h"
#include "plan/cost.h"

namespace fulcrum::calibrate {

enum class Quantity {
  kMemoryAllocated,  // torch.cuda.max_memory_allocated -> memory.allocated_bytes
  kMemoryReserved,   // torch.cuda.max_memory_reserved -> memory.reserved_bytes
  kMemoryPeak,       // anything else (nvidia-smi) -> memory.peak_bytes_per_gpu
  kTokensPerSecondPerGpu,
  kStepSeconds,
  kSamplesPerSecondTotal,  // images or sequences per second, summed over all GPUs
};

struct CalibrationRow {
  std::string id, family, file, source;
  Quantity quantity = Quantity::kStepSeconds;
  double measured = 0;
  // Short descriptions for the tables.
  std::string model, gpu, layout, batch, precision;
  // The resolved configuration; empty with `refused` set when the estimator refuses the row.
  std::optional<estimate::EstimateInput> input;
  std::string refused;
  catalog::Offer node;      // one node of the machine the row ran on
  double memory_value = 0;  // the memory quantity, evaluated once (no fitted constant in it)
  estimate::MemoryBreakdown memory;  // its parts (memory rows)
  bool last_rank_memory = false;     // measured on the last rank: the last pipeline stage's memory
  // Scored but left out of every fit, with the reason: the run is not the configuration the
  // estimator is given (e.g. batches padded to a length bin, not to seq_len).
  std::string not_fitted;
  // resume.csv rows: the peak of a process resumed from a checkpoint (memory_value is the
  // estimator's resume figure), with the same configuration's fresh-run peak as measured.
  bool resume = false;
  double fresh_measured = 0;
  estimate::ResumeMemory resume_memory;

  bool IsMemory() const { return quantity <= Quantity::kMemoryPeak; }
};

// Reads data/calibration/measured.csv and dle-throughput.csv under `root` (the repository) and
// resolves every row against the catalog and model presets of root/catalog. A row the estimator
// refuses is kept with its reason; a malformed file is an error.
Result<std::vector<CalibrationRow>> LoadCalibrationRows(const std::string& root);

// Reads data/calibration/resume.csv (memory peaks of runs resumed from a checkpoint); scored in
// docs/ACCURACY.md, "Memory at resume", and in no fit or band.
Result<std::vector<CalibrationRow>> LoadResumeRows(const std::string& root);

// A published training run (data/calibration/published_runs.csv): the layout its paper, model
// card or benchmark table reports and the throughput it published, scored in docs/ACCURACY.md
// ("Published runs") against the estimate and its P10-P90 band; in no fit.
// What a published run reports (column metric): tokens_per_s_per_gpu, mfu (model FLOPs) or hfu
// (hardware FLOPs, the recomputed forward counted).
enum class PublishedMetric { kTokensPerSecondPerGpu, kMfu, kHfu };

// A published figure taken over a run's wall clock (tokens trained / end-to-end time, as a model
// card's "trained in 9.5 days"): it holds what the run lost to interruptions, checkpoints and
// the other losses of long runs, which `plan` quotes apart from the step time
// (plan::QuotePublishedRun under the losses fitted on catalog/goodput.csv). Such a run is scored
// on the estimate's steady rate times that goodput, so that the step-time bands (the production
// band among them) hold step time only and `plan` does not count the losses twice.
struct WallClockRun {
  double tokens = 0;               // tokens trained over the published time
  std::string goodput_run;         // its own row of catalog/goodput.csv ("" = none)
  plan::CostAssumptions losses;    // FitGoodput on every row of catalog/goodput.csv
  plan::CostAssumptions left_out;  // ... without goodput_run's row (= losses when none)
};

struct PublishedRun {
  std::string id, kind, source, notes;  // kind: tuned_benchmark | production_run
  PublishedMetric metric = PublishedMetric::kTokensPerSecondPerGpu;
  double published = 0;
  std::optional<WallClockRun> wall_clock;            // columns wall_clock_tokens, goodput_run
  std::string model, gpu, layout, batch, precision;  // short descriptions for the table
  std::optional<estimate::EstimateInput> input;
  std::string refused;
  catalog::Offer node;  // one node of the machine the run used
};
Result<std::vector<PublishedRun>> LoadPublishedRuns(const std::string& root);

// The estimator's value for `row` in the unit of row.measured (nullopt: refused, or no peak for
// the row's precision on its GPU).
std::optional<double> Predict(const CalibrationRow& row,
                              const estimate::TimeCalibration& calibration);

// The step-time estimate behind Predict for a transformer or generic row (nullopt: refused, a
// memory row, or no peak for the row's precision on its GPU).
std::optional<estimate::StepTime> PredictStepTime(const CalibrationRow& row,
                                                  const estimate::TimeCalibration& calibration);

// printf-style text of one number (`format` takes one double), and a fraction as "12.3 %" /
// "+12.3 %": how every generated table of fulcrum-calibrate writes its figures.
std::string Format(const char* format, double value);
std::string Percent(double fraction);
std::string SignedPercent(double fraction);

}  // namespace fulcrum::calibrate
