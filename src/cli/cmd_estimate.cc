// `fulcrum estimate`: evaluates exactly one configuration (model x GPU x training setup) and
// prints the per-GPU memory breakdown. Its JSON is the contract the planner and the accuracy
// script use: {"model": {...}, "memory": {...}, "setup": {...}}.
#include <algorithm>
#include <memory>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "catalog/catalog.h"
#include "cli/command.h"
#include "cli/workload_options.h"
#include "core/paths.h"
#include "core/table.h"
#include "estimate/calibration_coverage.h"
#include "estimate/compute.h"
#include "estimate/estimate.h"
#include "estimate/uncertainty.h"

namespace fulcrum::cli {
namespace {

constexpr const char* kFooter = R"(Examples:
  fulcrum estimate --model llama-2-7b --gpu A100-80GB --gpus 8 --zero 3 --micro-batch 2 --global-batch 64 --seq-len 4096
  fulcrum estimate --hf-config ./config.json --gpu H100-SXM --gpus 16 --tp 2 --framework megatron --json
  fulcrum estimate --layers 24 --hidden 2048 --heads 16 --gpu L4 --method lora --json

JSON: {"model": {"name", "parameters", ...}, "memory": {"weights_bytes", "gradients_bytes",
"optimizer_bytes", "activations_bytes", "other_bytes", "peak_bytes_per_gpu",
"peak_at_resume_bytes_per_gpu", "checkpoint_format", "fit_bound", "capacity_bytes",
"headroom_fraction", "unreserved_peak_bytes_per_gpu", "fits", "verdict", ...}, "setup": {...},
"time": {"step_seconds", "tokens_per_second_per_gpu", "mfu", "hfu", "breakdown":
{"compute_seconds", "communication_seconds", "bubble_seconds", "exposed_seconds"},
"step_seconds_p10", "step_seconds_p90"}, "uncertainty": {"family", "architecture_calibrated",
"realism", "production_widened", "moe_widened", "fp8_widened"}}; memory also has
"peak_bytes_per_gpu_p90".
The P10/P90 come from the leave-one-family-out error of the calibration family the setup
resembles most (wider where the GPU's architecture has no calibration row; for a transformer
under --realism production, the default, also covering how far published production runs fell
from the estimate; for a mixture-of-experts model, how far published MoE runs did; for an FP8
run, how far published FP8 runs did; docs/ACCURACY.md, "Uncertainty bands"). Bytes are per GPU.
peak = what nvidia-smi would show (allocated tensors + allocator reserve + CUDA context); "allocated_bytes" and
"reserved_bytes" match torch.cuda.max_memory_allocated / max_memory_reserved.
peak_at_resume_bytes_per_gpu = the peak of the run resumed from its checkpoint (--checkpoint-format;
the load's copies beside the live states, src/estimate/resume.cc); fits, verdict and
headroom_fraction judge the larger of the two peaks, fit_bound says which ("fresh" | "resume").
verdict: "does not fit" (fits false) when that peak without the allocator reserve
(unreserved_peak_bytes_per_gpu: allocated + CUDA context; PyTorch's caching allocator gives its
cache back before it raises out-of-memory) is over the capacity; "tight" when the peak with the
reserve leaves under 10 % free (over the capacity: it fits only once the cache is given back);
else "fits".)";

// The step time of the evaluated configuration on one node of its GPU (estimate/compute.h);
// nullopt when the GPU has no sourced peak for the precision.
std::optional<estimate::StepTime> StepTimeOf(const estimate::EstimateResult& r) {
  catalog::Offer node;
  node.gpu = r.input.gpu.name;
  node.gpu_count = static_cast<int>(r.input.gpus_per_node);
  node.interconnect = r.input.interconnect;
  node.network_gbps = r.input.network_gbps;
  const std::optional<estimate::Hardware> hw =
      estimate::HardwareFor(r.input.gpu, node, r.input.training.precision);
  if (!hw) return std::nullopt;
  return estimate::EstimateStepTime(r.input.model, r.input.training, *hw);
}

// doc["time"] = {step_seconds, tokens_per_second_per_gpu, mfu, hfu, breakdown{...}} (null when
// the GPU lacks a peak for the precision).
void AppendTimeJson(const std::optional<estimate::StepTime>& st, const estimate::StepBand& band,
                    nlohmann::json& doc) {
  doc["memory"]["peak_bytes_per_gpu_p90"] =
      doc["memory"]["peak_bytes_per_gpu"].get<double>() * band.memory_p90_ratio;
  doc["uncertainty"] = {{"family", std::string(band.family)},
                        {"architecture_calibrated", band.architecture_calibrated},
                        {"realism", std::string(estimate::RealismName(band.realism))},
                        {"production_widened", band.production_widened},
                        {"moe_widened", band.moe_widened},
                        {"fp8_widened", band.fp8_widened}};
  if (!st) {
    doc["time"] = nullptr;
    return;
  }
  doc["time"] = {{"step_seconds", st->step_seconds},
                 {"step_seconds_p10", st->step_seconds * band.step_p10_ratio},
                 {"step_seconds_p90", st->step_seconds * band.step_p90_ratio},
                 {"tokens_per_second_per_gpu", st->tokens_per_second_per_gpu},
                 {"mfu", st->mfu},
                 {"hfu", st->hfu},
                 {"breakdown",
                  {{"compute_seconds", st->compute_seconds},
                   {"communication_seconds", st->communication_seconds},
                   {"bubble_seconds", st->bubble_seconds},
                   {"exposed_seconds", st->exposed_seconds}}}};
}

std::string RenderTimeTable(const std::optional<estimate::StepTime>& st,
                            const estimate::StepBand& band) {
  if (!st) return "step time: unknown (the GPU has no sourced peak for this precision)\n";
  Table table({"step time", "seconds"}, {Align::kLeft, Align::kRight});
  table.AddRow({"compute (matmuls, attention, memory-bound, optimizer)",
                FormatNumber(st->compute_seconds, 3)});
  table.AddRow({"communication (all collectives)", FormatNumber(st->communication_seconds, 3)});
  table.AddRow({"  of which exposed", FormatNumber(st->exposed_seconds, 3)});
  table.AddRow({"pipeline bubble", FormatNumber(st->bubble_seconds, 3)});
  table.AddRow({"step", FormatNumber(st->step_seconds, 3)});
  std::string out = table.Render() + "tokens/s per GPU " +
                    FormatNumber(st->tokens_per_second_per_gpu, 0) + ", MFU " +
                    FormatNumber(100 * st->mfu, 1) + "%, HFU " + FormatNumber(100 * st->hfu, 1) +
                    "%\n";
  if (!band.family.empty()) {
    out += "step P10-P90 " + FormatNumber(st->step_seconds * band.step_p10_ratio, 3) + "-" +
           FormatNumber(st->step_seconds * band.step_p90_ratio, 3) + " s (left-out error of the " +
           std::string(band.family) + " calibration family" +
           (band.architecture_calibrated ? ""
                                         : ", widened: no calibration row of this GPU's "
                                           "architecture") +
           (band.production_widened ? ", and of published production runs" : "") +
           (band.moe_widened ? ", and of published mixture-of-experts runs" : "") +
           (band.fp8_widened ? ", and of published FP8 runs" : "") + ")\n";
  }
  return out;
}

struct EstimateOptions {
  estimate::EstimateRequest request;
  bool json = false;
  std::string realism = "production";
};

struct EstimateOutcome {
  estimate::EstimateResult result;
  estimate::StepBand band;
};

Result<EstimateOutcome> RunEstimate(const EstimateOptions& o, const std::string& catalog_flag) {
  FULCRUM_ASSIGN_OR_RETURN(const estimate::Realism realism, estimate::ParseRealism(o.realism));
  const std::string dir = DefaultCatalogDir(catalog_flag);
  catalog::LoadOptions load;
  load.include_user_offers = false;
  FULCRUM_ASSIGN_OR_RETURN(catalog::Catalog cat, catalog::Catalog::Load(dir, load));
  FULCRUM_ASSIGN_OR_RETURN(estimate::EstimateInput input,
                           estimate::ResolveEstimateInput(o.request, cat, dir));
  // The coverage the planner's uncalibrated-gpu warning reads (unknown coverage: calibrated).
  const Result<std::vector<std::string>> covered =
      estimate::CalibratedArchitectures(estimate::DefaultMeasuredCsvPath(dir), cat);
  const bool calibrated =
      !covered.ok() || std::binary_search(covered->begin(), covered->end(), input.gpu.architecture);
  EstimateOutcome out{estimate::Evaluate(input), {}};
  out.band = estimate::BandFor(estimate::DefaultUncertaintyTable(), input.model,
                               input.training.precision, input.gpus, calibrated, realism);
  return out;
}

}  // namespace

void RegisterEstimate(CLI::App* cmd, CliContext& ctx) {
  cmd->footer(kFooter);
  auto options = std::make_shared<EstimateOptions>();
  AddWorkloadOptions(cmd, options->request);
  cmd->add_flag("--json", options->json, "Print the result as JSON (see the contract below)");
  cmd->add_option("--realism", options->realism,
                  "What the step-time band quotes: production (default: a team's own run; the "
                  "union of the calibration family's band and that of published production runs, "
                  "for transformers) or tuned_benchmark (the family's band alone, as for a "
                  "vendor's benchmark table)");
  cmd->callback([&ctx, options] {
    Result<EstimateOutcome> outcome = RunEstimate(*options, ctx.catalog_dir);
    if (!outcome.ok()) {
      ReportError(ctx, outcome.status());
      return;
    }
    const estimate::EstimateResult& result = outcome->result;
    if (options->json) {
      nlohmann::json doc = nlohmann::json::object();
      estimate::AppendEstimateJson(result, doc);
      AppendTimeJson(StepTimeOf(result), outcome->band, doc);
      PrintJson(ctx, doc);
    } else {
      ctx.out << estimate::RenderMemoryTable(result) << "\n"
              << RenderTimeTable(StepTimeOf(result), outcome->band);
    }
  });
}

}  // namespace fulcrum::cli
