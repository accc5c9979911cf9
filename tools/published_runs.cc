#include "published_runs.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <sstream>

#include "calibration_data.h"
#include "calibration_fit.h"
#include "estimate/estimate.h"
#include "estimate/uncertainty.h"

namespace fulcrum::calibrate {
namespace {

// The generated bands as the estimator's table (views into `bands`, which must outlive it).
estimate::UncertaintyTable TableOf(const GeneratedBands& bands) {
  estimate::UncertaintyTable table;
  for (const GeneratedFamilyBand& b : bands.families) {
    table.families.push_back({b.family, b.step, b.step_new_architecture, b.memory});
  }
  table.points = bands.points;
  return table;
}

struct Scored {
  double predicted = 0, low = 0, high = 0;  // the metric, and its P10-P90 band
  bool inside = false;
  double error = 0;             // (predicted - published) / published
  double left_out_error = 0;    // the same, fitted without the band's calibration family
  std::string left_out;         // that family
  double fp8_reproducing = -1;  // FP8 runs: Fp8EfficiencyReproducing (-1: not an FP8 run)
  std::string fit;              // fits | tight | does not fit, and which peak bounds it
};

using LeftOutFits = std::map<std::string, estimate::TimeCalibration>;

// Which of a wall-clock run's goodput quotes a prediction takes: the losses fitted on every row
// of catalog/goodput.csv, or without the run's own row (its left-out error).
enum class Losses { kAll, kLeftOut };

// The share of a wall-clock run's end-to-end time that is steady training, as `plan` quotes it
// for the run's tokens at the steady rate `st` (1 for a steady-state figure).
double GoodputOf(const PublishedRun& run, const estimate::StepTime& st, Losses losses) {
  if (!run.wall_clock || st.tokens_per_second_per_gpu <= 0) return 1;
  const estimate::EstimateInput& in = *run.input;
  plan::GoodputRun g;
  g.run = run.id;
  g.gpus = static_cast<int>(in.gpus);
  g.trained_parameters = estimate::TrainableParameterCount(in.model, in.training);
  g.steady_days = run.wall_clock->tokens /
                  (st.tokens_per_second_per_gpu * static_cast<double>(in.gpus)) / 86400.0;
  const WallClockRun& w = *run.wall_clock;
  return plan::QuotePublishedRun(g, losses == Losses::kAll ? w.losses : w.left_out)
      .goodput_fraction;
}

// The run's step under `c` at its steady rate (nullopt: no peak for its precision).
std::optional<estimate::StepTime> SteadyStep(const PublishedRun& run,
                                             const estimate::TimeCalibration& c) {
  const estimate::EstimateInput& in = *run.input;
  const std::optional<estimate::Hardware> hw =
      estimate::HardwareFor(in.gpu, run.node, in.training.precision, c);
  if (!hw) return std::nullopt;
  return estimate::EstimateStepTime(in.model, in.training, *hw, c);
}

// The run's metric (tokens/s per GPU, MFU, or HFU: as MFU with recomputed FLOPs counted) under
// `c` (nullopt: no peak for its precision); over the wall clock for a wall-clock run.
std::optional<double> Predict(const PublishedRun& run, const estimate::TimeCalibration& c,
                              Losses losses = Losses::kAll) {
  const std::optional<estimate::StepTime> step = SteadyStep(run, c);
  if (!step) return std::nullopt;
  const estimate::StepTime& st = *step;
  const double goodput = GoodputOf(run, st, losses);
  switch (run.metric) {
    case PublishedMetric::kMfu:
      return st.mfu * goodput;
    case PublishedMetric::kHfu:
      return st.hfu * goodput;
    case PublishedMetric::kTokensPerSecondPerGpu:
      break;
  }
  return st.tokens_per_second_per_gpu * goodput;
}

// For an FP8 run: the fp8_gemm_max_efficiency of its GPU's architecture that reproduces the
// published figure with every other constant as fitted (bisection; the metric grows with it), 0
// when even 1 (the whole FP8 peak) does not. A diagnosis printed beside the row, never fed back
// into the fit.
double Fp8EfficiencyReproducing(const PublishedRun& run, const estimate::TimeCalibration& fitted) {
  estimate::TimeCalibration c = fitted;
  double& fp8 = estimate::EfficiencyFor(run.input->gpu.architecture, c).fp8_gemm_max_efficiency;
  double low = 0.01, high = 1;
  fp8 = high;
  if (Predict(run, c).value_or(0) < run.published) return 0;
  for (int i = 0; i < 40; ++i) {
    fp8 = (low + high) / 2;
    (Predict(run, c).value_or(0) < run.published ? low : high) = fp8;
  }
  return (low + high) / 2;
}

// Each run's measured / predicted step time under `fitted` (the metrics are inverse to the step
// time), index for index; nullopt for a run without a prediction.
std::vector<std::optional<double>> StepRatios(const std::vector<PublishedRun>& runs,
                                              const estimate::TimeCalibration& fitted) {
  std::vector<std::optional<double>> ratios(runs.size());
  for (size_t i = 0; i < runs.size(); ++i) {
    const PublishedRun& run = runs[i];
    if (!run.input || run.published <= 0) continue;
    if (const std::optional<double> predicted = Predict(run, fitted)) {
      ratios[i] = *predicted / run.published;
    }
  }
  return ratios;
}

// Sets the published-run bands of `out` (estimate::UncertaintyTable or GeneratedBands) from
// `ratios` (StepRatios of `runs`) without the run at `except` (runs.size(): of them all):
// production_step over the production runs of transformers, moe_step over the runs of
// mixture-of-experts models and fp8_step over the FP8 runs, either kind for those two.
template <typename Bands>
void SetBandsWithout(const std::vector<PublishedRun>& runs,
                     const std::vector<std::optional<double>>& ratios, size_t except, Bands& out) {
  std::vector<double> production, moe, fp8;
  for (size_t i = 0; i < runs.size(); ++i) {
    if (i == except || !ratios[i]) continue;
    const estimate::EstimateInput& in = *runs[i].input;
    if (runs[i].kind == "production_run" && in.model.kind != workload::ModelKind::kGeneric) {
      production.push_back(*ratios[i]);
    }
    if (workload::IsMoe(in.model)) moe.push_back(*ratios[i]);
    if (in.training.precision == workload::Precision::kFp8) fp8.push_back(*ratios[i]);
  }
  out.production_step = BandOf(std::move(production));
  out.moe_step = BandOf(std::move(moe));
  out.fp8_step = BandOf(std::move(fp8));
}

// `table` holds the published-run bands the run is scored with, without its own ratio
// (SetBandsWithout): its own ratio does not widen the band it is scored with. A tuned benchmark
// takes the family's band alone, unless a MoE or FP8 band widens it.
std::optional<Scored> Score(const PublishedRun& run, const estimate::TimeCalibration& fitted,
                            const LeftOutFits& left_out, const estimate::UncertaintyTable& table) {
  if (!run.input) return std::nullopt;
  const estimate::EstimateInput& in = *run.input;
  const std::optional<double> predicted = Predict(run, fitted);
  if (!predicted) return std::nullopt;
  const estimate::StepBand band =
      estimate::BandFor(table, in.model, in.training.precision, in.gpus, true,
                        run.kind == "production_run" ? estimate::Realism::kProduction
                                                     : estimate::Realism::kTunedBenchmark);
  Scored s;
  // Throughput and MFU are inverse to the step time: the slow end (P90 step) is the low end.
  s.predicted = *predicted;
  s.low = s.predicted / band.step_p90_ratio;
  s.high = s.predicted / band.step_p10_ratio;
  s.inside = run.published >= s.low && run.published <= s.high;
  s.error = (s.predicted - run.published) / run.published;
  // Left out: the constants fitted without the family whose band the run takes ("dle/resnet50"
  // is family dle), i.e. as if the calibration rows nearest to the run had not been seen.
  s.left_out = std::string(band.family.substr(0, band.family.find('/')));
  const auto without = left_out.find(s.left_out);
  const std::optional<double> out =
      Predict(run, without == left_out.end() ? fitted : without->second, Losses::kLeftOut);
  s.left_out_error = (out.value_or(s.predicted) - run.published) / run.published;
  if (in.training.precision == workload::Precision::kFp8) {
    s.fp8_reproducing = Fp8EfficiencyReproducing(run, fitted);
  }
  const estimate::EstimateResult r = estimate::Evaluate(in);
  s.fit = std::string(estimate::FitVerdictName(r.verdict)) + " (" +
          estimate::FitBoundName(r.memory, r.resume) + ")";
  return s;
}

std::string Metric(const PublishedRun& run, double v) {
  switch (run.metric) {
    case PublishedMetric::kMfu:
      return Percent(v) + " MFU";
    case PublishedMetric::kHfu:
      return Percent(v) + " HFU";
    case PublishedMetric::kTokensPerSecondPerGpu:
      break;
  }
  return Format("%.0f", v) + " tok/s/GPU";
}

// For an interleaved run that does not fit: what its peak stage holds (from the estimate, not
// fitted), and the micro-batch group size (Megatron's microbatch_group_size_per_vp_stage, the
// paper's N, extended below its lower bound pp) under which it would fit, with the chunks of
// activations the first stage then holds; largest_fitting 0 when none does or the run fits.
struct GroupFit {
  int64_t minimum_chunks = 0;  // first-stage chunks at Megatron's smallest group size, pp
  int64_t largest_fitting = 0;
  int64_t chunks = 0;
  bool does_not_fit = false;    // at the run's own group size
  double layers_in_flight = 0;  // at the peak stage: activations / one layer's for one micro-batch
  // rest: logits, buffers and CUDA context; unreserved: the peak without the allocator's
  // reserve (what "does not fit" judges), peak: with it.
  double layer_bytes = 0, activations = 0, states = 0, rest = 0, unreserved = 0, peak = 0;
  double capacity = 0, gradients = 0;
  // The share of the activations that would have to go for the unreserved peak to fit.
  double activations_over = 0;
  // The unreserved peak were the FP32 gradient accumulation sharded over dp x cp.
  double peak_sharded_gradients = 0;
};
GroupFit GroupSizeThatFits(const PublishedRun& run) {
  GroupFit g;
  if (!run.input || run.input->training.vpp <= 1) return g;
  estimate::EstimateInput in = *run.input;
  workload::Training& t = in.training;
  const int64_t m = workload::MicroBatchesPerStep(t);
  auto chunks = [&](int64_t n) {
    return std::min(m * t.vpp, 2 * (t.pp - 1) + (t.vpp - 1) * n + 1);
  };
  g.minimum_chunks = chunks(t.pp);
  const estimate::EstimateResult r = estimate::Evaluate(in);
  g.does_not_fit = r.verdict == estimate::FitVerdict::kDoesNotFit;
  if (!g.does_not_fit) return g;
  const estimate::MemoryBreakdown& b = r.memory;
  g.layer_bytes = estimate::LayerActivationBytes(in.model, t);
  g.activations = b.activations_bytes;
  g.layers_in_flight = g.layer_bytes > 0 ? b.activations_bytes / g.layer_bytes : 0;
  g.gradients = b.gradients_bytes;
  g.states = b.weights_bytes + b.gradients_bytes + b.optimizer_bytes;
  g.rest = b.other_bytes - b.allocator_reserve_bytes;
  g.unreserved = r.unreserved_peak_bytes;
  g.peak = b.peak_bytes_per_gpu;
  g.capacity = r.capacity_bytes;
  if (g.activations > 0) g.activations_over = (g.unreserved - g.capacity) / g.activations;
  const double shards = static_cast<double>(workload::StateShards(t));
  g.peak_sharded_gradients = g.unreserved - g.gradients * (1 - 1 / shards);
  for (int64_t n = t.pp - 1; n >= 1; --n) {
    t.microbatch_group_size = n;
    if (estimate::Evaluate(in).verdict == estimate::FitVerdict::kDoesNotFit) continue;
    g.largest_fitting = n;
    g.chunks = chunks(n);
    break;
  }
  return g;
}

std::string Gib(double bytes, const char* format = "%.1f") {
  return Format(format, bytes / 1073741824.0) + " GiB";
}

// Rows without a pipeline whose peak with the allocator's reserve comes out over their GPU's
// memory: the peak and its parts, and the verdict without the reserve (fulcrum's assumption, the
// part nearest the margin).
std::string UnpipelinedOverflow(const std::vector<PublishedRun>& runs) {
  std::ostringstream out;
  for (const PublishedRun& run : runs) {
    if (!run.input || run.input->training.pp > 1) continue;
    const estimate::EstimateResult r = estimate::Evaluate(*run.input);
    if (!(r.headroom_fraction < 0)) continue;  // within the GPU with the reserve
    const estimate::MemoryBreakdown& b = r.memory;
    out << run.id << " comes out at " << Gib(b.peak_bytes_per_gpu) << " of "
        << Gib(r.capacity_bytes) << ", " << Gib(b.peak_bytes_per_gpu - r.capacity_bytes)
        << " over: weights " << Gib(b.weights_bytes);
    const workload::Training& t = run.input->training;
    if (t.precision == workload::Precision::kFp8 && !t.fp8_params) {
      out << " (with no fp8_params, Transformer Engine's FP8 cast and transpose of each linear "
             "weight beside the 16-bit one)";
    }
    out << ", gradients " << Gib(b.gradients_bytes) << ", optimizer states "
        << Gib(b.optimizer_bytes) << ", activations " << Gib(b.activations_bytes)
        << ", allocator reserve " << Gib(b.allocator_reserve_bytes)
        << " (fulcrum's assumption of the caching allocator's slack, not measured). Without the "
           "reserve, which PyTorch's allocator gives back before it raises out-of-memory, it is "
        << Gib(r.unreserved_peak_bytes) << ": " << estimate::FitVerdictName(r.verdict) << ". ";
  }
  if (out.tellp() > 0) out << "\n\n";
  return out.str();
}

// DeepSeek-V3's row: what its report says it did for memory, in Megatron-LM's terms (the row's
// recompute_modules and moment dtypes), its FP8 activation caches and its DualPipe schedule, the
// peak with them, without the recompute, BF16 moments and caches, and under 1F1B, all from the
// estimate, and what is assumed or still not modelled.
std::string DeepSeekMemoryParagraph(const std::vector<PublishedRun>& runs) {
  std::ostringstream out;
  out << "DeepSeek-V3 (deepseek-v3-2048): its multi-head latent attention and DeepSeekMoE shape "
         "are modelled (671 B parameters, 37.6 B used per token; DeepSeek's 250 GFLOPs per token "
         "at 4K, which counts the causal half of the attention, within 1 %), and so is its "
         "schedule, DualPipe (`--pipeline-schedule dualpipe`; arXiv 2412.19437 section 3.2.1, "
         "deepseek-ai/DualPipe@3da1bbe): each forward chunk runs beside another micro-batch's "
         "backward chunk with the expert-parallel all-to-all and the pipeline sends under their "
         "compute, its bubble is the README's (PP/2 - 1)(F&B + B - 3W), and each rank holds two "
         "stages' parameters and PP + 1 stage micro-batches of activations; so is its dispatch "
         "(section 3.2.2: each token sent over IB once to each of the at most 4 nodes its "
         "experts are on and forwarded there over NVLink; `--moe-token-dispatcher-type flex "
         "--moe-router-num-groups 8 --moe-router-group-topk 4`). Its memory takes "
         "DeepSeek's recomputation of the RMSNorms and the MLA up-projections (section 3.2.3) and "
         "of the MoE SwiGLU output, and its BF16 AdamW moments (section 3.3.3), as Megatron-LM's "
         "--recompute-modules layernorm,mla_up_proj,moe_act and --exp-avg-dtype / "
         "--exp-avg-sq-dtype bf16, and its FP8 activation caching (section 3.3.3, \"Low-Precision "
         "Activation\"; `estimate --fp8-activation-cache`): the attention output kept once in "
         "E5M6 where Megatron-Core keeps it in 16 bits beside the output projection's FP8 cast, "
         "the MoE experts' SwiGLU inputs in FP8 with their outputs recomputed, and the other "
         "linear inputs as Transformer Engine's FP8 casts (1 byte each). The experts' outputs "
         "are not kept: Megatron-Core applies the router's probabilities inside the SwiGLU, and "
         "the combine's unpermute saves no tensor (Megatron-LM@d98e8a64dd moe/experts.py, "
         "moe/token_dispatcher.py).";
  for (const PublishedRun& run : runs) {
    if (run.id != "deepseek-v3-2048" || !run.input) continue;
    const estimate::EstimateResult as_run = estimate::Evaluate(*run.input);
    estimate::EstimateInput plain = *run.input;
    plain.training.recompute = workload::Recompute::kNone;
    plain.training.recompute_modules = workload::kRecomputeCoreAttn;
    plain.training.exp_avg_dtype = workload::MomentDtype::kFp32;
    plain.training.exp_avg_sq_dtype = workload::MomentDtype::kFp32;
    plain.training.fp8_activation_cache = false;
    const estimate::EstimateResult without = estimate::Evaluate(plain);
    estimate::EstimateInput one_f_one_b = *run.input;
    one_f_one_b.training.pipeline_schedule = workload::PipelineSchedule::k1F1B;
    const estimate::EstimateResult under_1f1b = estimate::Evaluate(one_f_one_b);
    const estimate::MemoryBreakdown& b = as_run.memory;
    const estimate::MemoryBreakdown& w = without.memory;
    const double over = as_run.unreserved_peak_bytes - as_run.capacity_bytes;
    out << " With them the peak is " << Gib(b.peak_bytes_per_gpu) << " ("
        << Gib(w.peak_bytes_per_gpu) << " without): activations " << Gib(b.activations_bytes)
        << " (" << Gib(w.activations_bytes) << "), weights " << Gib(b.weights_bytes)
        << ", gradients " << Gib(b.gradients_bytes) << ", optimizer states and fp32 master weights "
        << Gib(b.optimizer_bytes) << " (" << Gib(w.optimizer_bytes)
        << "); under 1F1B the same run would peak at " << Gib(under_1f1b.memory.peak_bytes_per_gpu);
    if (as_run.verdict == estimate::FitVerdict::kDoesNotFit && b.activations_bytes > 0) {
      out << ". So it does not fit in " << Gib(as_run.capacity_bytes)
          << " here although it trained: " << Percent(over / b.activations_bytes)
          << " of the activations over.";
    } else {
      out << ", within the " << Gib(as_run.capacity_bytes) << " of one GPU, as it trained.";
    }
  }
  out << " What the report does not state and the estimate assumes: the width of the 1x128 tiles' "
         "scales of the cached activations (4 bytes), the micro-batch size (1), how its 61 layers "
         "and the MTP module are split over the 16 stages (the end stages the floor of 61 / 16, "
         "the others the ceiling), and which other tensors HAI-LLM's kernels save (Megatron-Core's "
         "with Transformer Engine).";
  out << " The MTP module is not modelled, nor its FP8 dispatch (the estimate sends BF16).\n\n";
  return out.str();
}

// What a gradient accumulation sharded after each micro-batch's backward would send: the run's
// whole FP32 gradients per GPU (`gradients_bytes`) reduce-scattered over dp x cp each
// micro-batch, at its NIC's line
// rate (the node's network over its GPUs), beside the estimate's compute per micro-batch (its
// step's compute over the micro-batches per step, forward and backward).
std::string ShardedAccumulationTraffic(const PublishedRun& run, double gradients_bytes,
                                       const estimate::TimeCalibration& fitted) {
  const std::optional<estimate::StepTime> step = SteadyStep(run, fitted);
  if (!step || !run.node.network_gbps || *run.node.network_gbps <= 0 || run.node.gpu_count <= 0) {
    return "";
  }
  const workload::Training& t = run.input->training;
  const double shards = static_cast<double>(workload::StateShards(t));
  const double nic_bytes_per_second = *run.node.network_gbps * 1e9 / 8 / run.node.gpu_count;
  const double sent = gradients_bytes * (shards - 1) / shards;
  const double micro_batches = static_cast<double>(workload::MicroBatchesPerStep(t));
  return " (" + Format("%.1f", gradients_bytes / 1e9) +
         " GB of FP32 gradients per GPU reduce-scattered each micro-batch: " +
         Format("%.2f", sent / nic_bytes_per_second) + " s at its NIC's line rate, beside " +
         Format("%.2f", step->compute_seconds / micro_batches) +
         " s of compute per micro-batch, forward and backward)";
}

// The recipes as trained against their GPUs' memory (issue 31's "the recipes as trained fit"):
// how many fit, are tight (and of those, fit only without the allocator reserve) or do not fit.
std::string RecipeFitSummary(const std::vector<PublishedRun>& runs) {
  int fits = 0, tight = 0, over = 0, total = 0;
  std::vector<std::string> reserve_only, not_fitting;
  for (const PublishedRun& run : runs) {
    if (!run.input) continue;
    const estimate::EstimateResult r = estimate::Evaluate(*run.input);
    ++total;
    if (r.verdict == estimate::FitVerdict::kFits) ++fits;
    if (r.verdict == estimate::FitVerdict::kTight) ++tight;
    if (r.verdict == estimate::FitVerdict::kDoesNotFit) {
      ++over;
      not_fitting.push_back(run.id + " " + Gib(r.unreserved_peak_bytes));
    } else if (r.headroom_fraction < 0) {
      reserve_only.push_back(run.id);
    }
  }
  auto join = [](const std::vector<std::string>& items) {
    std::string text;
    for (const std::string& item : items) text += (text.empty() ? "" : ", ") + item;
    return text.empty() ? std::string("none") : text;
  };
  std::ostringstream out;
  out << "\nThe recipes as trained: of the " << total << " runs, " << fits << " fit, " << tight
      << " are tight (over their GPU's memory only with the allocator reserve: "
      << join(reserve_only) << ") and " << over
      << " do not fit (the peak without the reserve: " << join(not_fitting) << ").\n";
  return out.str();
}

// The memory column's reading: which settings the recipes' published configurations state, what
// the interleaved schedule holds, and which public runs are not in the table and why.
std::string MemoryParagraph(const std::vector<PublishedRun>& runs,
                            const estimate::TimeCalibration& fitted) {
  std::ostringstream out;
  out << "\nMemory. The NeMo 24.07 rows run with the settings NeMo-Framework-Launcher's H100 FP8 "
         "examples of that release state (grad_sync_dtype=bf16 with Apex's DistributedFusedAdam, "
         "which NeMo runs with store_param_remainders for a bf16 model without fp8_params: "
         "its fp32 master weights as 16-bit remainders beside the bf16 weights and its fp32 Adam "
         "states, 10 bytes a parameter sharded over dp x cp where Megatron's distributed "
         "optimizer keeps 12 (`estimate --store-param-remainders`; its bf16 gradient shard "
         "lives from the step's last gradient sync to the next step's zero_grad, not beside the "
         "activations); no fp8_params, so Transformer Engine keeps each linear weight's FP8 "
         "cast and "
         "transpose beside the BF16 weight), and the 512-GPU GPT-3 row, the table's MLPerf "
         "configuration, with the launcher's GPT-3 175B MLPerf config of that release "
         "(fp8_params: FP8 weights with no BF16 copy, and grad_sync_dtype=bf16); each row's "
         "notes cite the file. Megatron-LM's interleaved "
         "schedule runs 2 (p - 1) + (v - 1) g + 1 model chunks forward on the first stage before "
         "its first backward, g = microbatch_group_size_per_vp_stage, which Megatron takes "
         "between p and the micro-batches per step m (default p) and `estimate "
         "--microbatch-group-size` models; PyTorch's ScheduleInterleaved1F1B, the upstream form "
         "of the schedule Llama 3's paper describes, runs the same warm-up with g = m / max(1, "
         "floor(m / p)), i.e. g = p = 16 for the 405B rows' m = 32 and m = 16 "
         "(pytorch/pytorch@00722e648b torch/distributed/pipelining/schedules.py, "
         "_get_warmup_ops).";
  std::ostringstream sharded;  // the peaks with sharded gradient accumulation
  for (const PublishedRun& run : runs) {
    const GroupFit g = GroupSizeThatFits(run);
    if (g.minimum_chunks == 0 || !g.does_not_fit) continue;
    out << " " << run.id << ": at g = p its peak stage holds " << Format("%.0f", g.layers_in_flight)
        << " layers' activations of one micro-batch (" << Gib(g.layer_bytes, "%.2f")
        << " each) = " << Gib(g.activations) << ", beside " << Gib(g.states)
        << " of weights, gradients and optimizer states and " << Gib(g.rest)
        << " of logits, buffers and CUDA context: " << Gib(g.unreserved) << " of "
        << Gib(g.capacity) << " without the allocator reserve (" << Gib(g.peak) << " with it), "
        << Percent(g.activations_over) << " of the activations over (" << g.minimum_chunks
        << " chunks on the first stage";
    if (g.largest_fitting > 0) {
      out << "); it would fit with g <= " << g.largest_fitting << " (" << g.chunks
          << " chunks), below Megatron's range.";
    } else {
      out << "); no group size makes it fit.";
    }
    // The sharded reading below is of Llama 3's paper, whose runs are the production ones here.
    if (run.kind == "production_run") {
      sharded << (sharded.tellp() > 0 ? ", " : "") << run.id << " " << Gib(g.peak_sharded_gradients)
              << ShardedAccumulationTraffic(run, g.gradients, fitted);
    }
  }
  out << " Llama 3 405B's paper (arXiv 2407.21783, section 3.3.2) sets N, its g, \"flexibly\" "
         "to run fewer micro-batches than stages under a batch-size limit, or more per group "
         "\"finding a sweet spot between DFS and breadth first schedule (BFS)\", where DFS has "
         "N = PP and BFS N = M (Figure 6's example: N = 5 on 4 ranks); with m >= p that is "
         "p <= N <= m, so the fewest warm-up chunks its schedule runs are Megatron's default, and "
         "a larger N holds more. The chunk outputs it frees (\"the input and output tensors of "
         "each pipeline stage\") are not counted here (Megatron frees them too: "
         "deallocate_pipeline_outputs), and the first and last stages' embedding- and loss-only "
         "chunks hold no layer. What the paper leaves unstated: the micro-batch size (Table 4 "
         "gives 32, 16 and 16 sequences per data-parallel rank; the rows take 1), N itself, "
         "which tensors its layers save for backward (the estimate takes Megatron-Core's with "
         "Transformer Engine: both norms' inputs and outputs, Q, K, V, the attention output, "
         "the SwiGLU input and output; no activation checkpointing), and whether the FP32 "
         "gradient accumulation over the micro-batches it describes (\"Numerical stability\") "
         "is a whole buffer "
         "reduce-scattered in FP32 once per step (as the rows take it: Megatron's distributed "
         "optimizer) or sharded (\"shards optimizer states and gradients\" read as a "
         "reduce-scatter after each micro-batch's backward): sharded, the peaks without the "
         "allocator reserve would be "
      << sharded.str()
      << ". Sharded, the accumulation would fit them, at the cost of that traffic on every "
         "micro-batch (at the 8K rows most of a micro-batch's compute at line rate), which "
         "their step time as estimated here does not carry (a whole buffer reduced once per "
         "step); with a whole buffer they do not fit here although they trained without "
         "activation checkpointing: at any N the paper describes, their layers would have to "
         "save less than Megatron-Core's by the share above. Neither reading is adopted for "
         "memory alone: the paper does not say which it is.\n\n"
      << UnpipelinedOverflow(runs) << DeepSeekMemoryParagraph(runs)
      << "Public runs not in the table: Llama 2 (the paper gives GPU-hours per model, Table 2, but "
         "neither the GPU count nor the layout); MPT-30B (its card gives three stages' GPUs and "
         "batch, no time "
         "per stage); Falcon-180B (its card gives the layout, TP 8 PP 8 DP 64 on 4096 A100-40GB, "
         "but no throughput or duration); OLMo-7B (no throughput figure was read in a source for "
         "this table).\n";
  return out.str();
}

// The wall-clock runs: the steady rate, the goodput `plan` quotes for them (with and without the
// run's own row of catalog/goodput.csv) and what that makes of the comparison.
std::string WallClockParagraph(const std::vector<PublishedRun>& runs,
                               const estimate::TimeCalibration& fitted) {
  std::ostringstream out;
  for (const PublishedRun& run : runs) {
    if (!run.wall_clock || !run.input) continue;
    const std::optional<estimate::StepTime> step = SteadyStep(run, fitted);
    if (!step) continue;
    const estimate::StepTime& st = *step;
    const double steady = st.tokens_per_second_per_gpu;
    out << (out.tellp() > 0 ? "; " : "") << run.id << ": steady " << Format("%.0f", steady)
        << " tok/s/GPU (" << SignedPercent((steady - run.published) / run.published)
        << " against the published "
        << "figure), goodput " << Format("%.3f", GoodputOf(run, st, Losses::kAll));
    if (!run.wall_clock->goodput_run.empty()) {
      out << " (" << Format("%.3f", GoodputOf(run, st, Losses::kLeftOut)) << " without its own "
          << "row, " << run.wall_clock->goodput_run << ", of catalog/goodput.csv)";
    }
  }
  if (out.tellp() == 0) return "";
  return "\nWall-clock runs. A figure taken over a run's end-to-end time (tokens trained / days, "
         "column wall_clock_tokens) holds the time the run lost to interruptions, checkpoints, "
         "evaluations and restarts, which `plan` quotes apart from the step time (\"Goodput of "
         "long runs\" above: steady time + hardware interruptions + the losses fitted on "
         "catalog/goodput.csv). Such a run is predicted as the estimate's steady rate times the "
         "goodput `plan` quotes for its GPUs and tokens (plan::QuotePublishedRun), its band "
         "likewise, and its left-out error takes the goodput fitted without the run's own row of "
         "catalog/goodput.csv, where it has one; the production band (estimate --realism "
         "production, and `plan`'s P90) then holds step time only, so that `plan` does not count "
         "these losses twice. " +
         out.str() + ".\n";
}

std::string PublishedMarkdown(const std::vector<PublishedRun>& runs,
                              const estimate::TimeCalibration& fitted, const LeftOutFits& left_out,
                              const GeneratedBands& bands) {
  estimate::UncertaintyTable table = TableOf(bands);
  const std::vector<std::optional<double>> ratios = StepRatios(runs, fitted);
  std::ostringstream rows;
  std::map<std::string, std::vector<double>> errors, left_out_errors;
  double fp8_low = 1e9, fp8_high = 0;  // the FP8 efficiencies that reproduce the FP8 runs
  std::map<std::string, int> inside;
  for (size_t i = 0; i < runs.size(); ++i) {
    const PublishedRun& run = runs[i];
    SetBandsWithout(runs, ratios, i, table);
    rows << "| " << run.id << " | " << run.kind << " | " << run.model << " | " << run.gpu << " | "
         << run.layout << " | " << run.batch << " | " << run.precision << " | "
         << Metric(run, run.published) << " | ";
    const std::optional<Scored> s = Score(run, fitted, left_out, table);
    if (!s) {
      rows << "refused: " << (run.refused.empty() ? "no peak for the precision" : run.refused)
           << " | | | | | | |\n";
      for (const std::string& k : {run.kind, std::string("all")}) {
        errors[k].push_back(10);
        left_out_errors[k].push_back(10);
      }
      continue;
    }
    rows << Metric(run, s->predicted) << " | " << SignedPercent(s->error) << " | "
         << SignedPercent(s->left_out_error) << " (" << s->left_out << ") | " << Metric(run, s->low)
         << " - " << Metric(run, s->high) << " | " << (s->inside ? "yes" : "no") << " | " << s->fit
         << " | " << (s->fp8_reproducing > 0 ? Format("%.2f", s->fp8_reproducing) : "") << " |\n";
    if (s->fp8_reproducing > 0) {
      fp8_low = std::min(fp8_low, s->fp8_reproducing);
      fp8_high = std::max(fp8_high, s->fp8_reproducing);
    }
    for (const std::string& k : {run.kind, std::string("all")}) {
      errors[k].push_back(std::abs(s->error));
      left_out_errors[k].push_back(std::abs(s->left_out_error));
      inside[k] += s->inside ? 1 : 0;
    }
  }
  std::ostringstream out;
  out << "\n## Published runs\n\n"
         "Public training runs with the layout their paper, model card or benchmark table reports "
         "(data/calibration/published_runs.csv, each row with its source), against the estimate "
         "under the fitted constants and its P10-P90 band (the band of the calibration family the "
         "run resembles most, as `estimate` reports it; for a production run the union with the "
         "production band of the other production runs, as `estimate --realism production` "
         "reports it, for a mixture-of-experts model with the band of the other MoE runs and for "
         "an FP8 run with the band of the other FP8 runs, so that no run widens its own band). "
         "Only the BLOOM row is in the fit; the "
         "others are out of sample. `tuned_benchmark`: a vendor's benchmark table; "
         "`production_run`: a run that trained a released model. Goal (issue 31): at least 80 % "
         "inside the band, median error at most 15 %. **Left out**: predicted with the constants "
         "fitted without the calibration family whose band the run takes (named in brackets), "
         "as if the measurements nearest to the run had not been seen. Each run is compared in "
         "the unit it published: tokens/s per GPU, MFU (model FLOPs) or HFU (hardware FLOPs, "
         "the recomputed forward counted: OPT-175B's TFLOP/s, in Megatron-LM's convention; the "
         "row's notes say why).\n\n"
         "| runs | rows | median error | P90 error | left-out median | left-out P90 | inside "
         "P10-P90 |\n|---|---|---|---|---|---|---|\n";
  for (const auto& [kind, e] : errors) {
    const ErrorSummary s = Summarize(e);
    const ErrorSummary out_of_fit = Summarize(left_out_errors[kind]);
    out << "| " << kind << " | " << s.rows << " | " << Percent(s.median) << " | " << Percent(s.p90)
        << " | " << Percent(out_of_fit.median) << " | " << Percent(out_of_fit.p90) << " | "
        << inside[kind] << " of " << s.rows << " |\n";
  }
  out << "\n| id | kind | model | gpu x n | layout as published | micro/global batch x seq | "
         "precision | published | predicted | error | left-out error | P10-P90 | inside | "
         "memory | FP8 efficiency reproducing it |\n"
         "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n"
      << rows.str() << WallClockParagraph(runs, fitted);
  if (fp8_high > 0) {
    out << "\nThe FP8 rows (NeMo's Megatron with Transformer Engine): the last column is the "
           "hopper.fp8_gemm_max_efficiency (the fraction of the FP8 peak Megatron-Core's FP8 "
           "GEMMs reach) that would reproduce each, every other constant as fitted: "
        << Format("%.2f", fp8_low) << "-" << Format("%.2f", fp8_high) << ", against "
        << Format("%.2f", fitted.hopper.fp8_gemm_max_efficiency)
        << " fitted on the Megatron FP8 training measurements in data/calibration/ "
           "(Megatron-Bridge's two 25.11 rows: another release and other layouts than NeMo "
           "24.07's), while the BF16 Llama 3 405B rows on the same GPUs come out close. An "
           "explicit cost for Transformer Engine's cast and transpose kernels would not explain "
           "that spread "
           "(an estimate from their traffic: about 50 bytes per hidden unit and token per layer, "
           "under 10 % of a layer's FP8 GEMM time at hidden 2560 and less above).\n";
  }
  out << RecipeFitSummary(runs) << MemoryParagraph(runs, fitted);
  return out.str();
}

}  // namespace

void SetPublishedRunBands(const std::vector<PublishedRun>& runs,
                          const estimate::TimeCalibration& fitted, GeneratedBands& bands) {
  SetBandsWithout(runs, StepRatios(runs, fitted), runs.size(), bands);
}

void AddPublishedRuns(const std::string& root, const std::vector<PublishedRun>& runs,
                      const estimate::TimeCalibration& fitted,
                      const std::map<std::string, estimate::TimeCalibration>& left_out,
                      const GeneratedBands& bands,
                      std::vector<std::pair<std::string, std::string>>& outputs) {
  for (auto& [path, text] : outputs) {
    if (path == root + "/docs/ACCURACY.md")
      text += PublishedMarkdown(runs, fitted, left_out, bands);
  }
}

}  // namespace fulcrum::calibrate
