// Serving calibration: the published serving benchmarks of data/calibration/serving.csv
// (TensorRT-LLM static-batching throughput and first-token latency tables, each row sourced),
// the fit of serve::ServeCalibration on them with the one coordinate descent of
// calibration_fit.h, the leave-one-family-out error, and what fulcrum-calibrate writes from it:
// src/serve/serving_calibration_fitted.cc (constants and the latency band) and the
// "Inference" section of docs/ACCURACY.md. Deterministic; values, thread-compatible.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "serve/serve.h"

namespace fulcrum::calibrate {

enum class ServingMetric {
  kOutputTokensPerSecondPerGpu,     // batch x output tokens over the run's wall time / tp
  kTtftSeconds,                     // time to first token of the batch
  kTpotSeconds,                     // one decode step (time per output token)
  kPrefillTokensPerSecond,          // batch x input tokens over the prefill time (whole model)
  kDecodeTokensPerSecondPerGpu,     // batch / time per decode step / tp (decode steps only)
  kOutputTokensPerSecondPerStream,  // 1 / time per decode step: one sequence's decode rate
  kKvCacheTokens,  // tokens the engine's KV cache holds (vLLM "GPU KV cache size"); no fitted
                   // constant (memory), so these rows are scored but not fitted on
};

struct ServingRow {
  std::string id, family, framework, source;
  std::string engine;  // ParseEngine's name; request.engine holds its catalog profile
  std::string model_name, gpu_name, precision;
  ServingMetric metric = ServingMetric::kOutputTokensPerSecondPerGpu;
  double measured = 0;
  serve::ServeRequest request;
};

// Reads root/data/calibration/serving.csv against root/catalog (GPUs, model presets). Errors
// name file:line and column.
Result<std::vector<ServingRow>> LoadServingRows(const std::string& root);

// The estimate in the row's unit; nullopt when the estimator refuses the configuration.
std::optional<double> PredictServing(const ServingRow& row,
                                     const serve::ServeCalibration& calibration);

// Fit from the priors (ServeCalibration's member initialisers) in three stages: the base
// constants on the reference engine's rows (TensorRT-LLM), then each other engine's factors and
// the bitsandbytes overheads on that engine's rows with the base held, both on GPUs other than
// CDNA 3; then cdna3_gemm_factor on the CDNA 3 rows with the rest held.
serve::ServeCalibration FitServing(const std::vector<const ServingRow*>& rows);

struct ServingReport {
  serve::ServeCalibration fitted;
  std::map<std::string, serve::ServeCalibration> left_out;  // family -> fit without it
  // Over the rows of the continuous-batching engines with published serving tables (trtllm,
  // vllm, sglang): what serve-plan's targets are compared with.
  serve::ServeLatencyBand band;
};
ServingReport FitServingReport(const std::vector<ServingRow>& rows);

std::string ServingFittedSource(const ServingReport& report);
std::string ServingAccuracyMarkdown(const std::vector<ServingRow>& rows,
                                    const ServingReport& report);

// fulcrum-calibrate's serving step: loads, fits, appends the generated source to `outputs` and
// the inference section to the docs/ACCURACY.md entry of `outputs`. False (message on stderr)
// when the data cannot be read.
bool AddServingCalibration(const std::string& root,
                           std::vector<std::pair<std::string, std::string>>& outputs);

}  // namespace fulcrum::calibrate
