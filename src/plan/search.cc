#include "plan/search.h"

#include <algorithm>
#include <chrono>
#include <string>
#include <utility>

#include "estimate/estimate.h"
#include "plan/notes.h"

namespace fulcrum::plan {
namespace {

// The request's own errors: the spec's (ValidateSpec), tokens for a generic model, a sequence
// beyond the model's context without --allow-long-context.
Status CheckPlanRequest(const workload::Model& model, const PlanSpec& spec) {
  FULCRUM_RETURN_IF_ERROR(ValidateSpec(spec));
  if (model.kind == workload::ModelKind::kGeneric && spec.tokens) {
    return Status::InvalidInput(spec.origin + ": tokens: '" + model.name +
                                "' is a generic (non-token) model; give samples and epochs");
  }
  if (model.max_seq_len > 0 && spec.training.seq_len > model.max_seq_len &&
      !spec.allow_long_context) {
    ErrorDetail detail;
    detail.field = "seq_len";
    detail.expected = "at most " + std::to_string(model.max_seq_len);
    detail.found = std::to_string(spec.training.seq_len);
    return Status::InvalidInput(spec.origin + ": seq_len " + std::to_string(spec.training.seq_len) +
                                " is beyond " + model.name + "'s context of " +
                                std::to_string(model.max_seq_len) +
                                " tokens (--allow-long-context plans it anyway, e.g. for a "
                                "context-extension run)")
        .WithDetail(detail);
  }
  return Status::Ok();
}

double WorkUnits(const workload::Model& model, const PlanSpec& spec, bool* samples_out) {
  const bool generic = model.kind == workload::ModelKind::kGeneric;
  *samples_out = generic;
  if (spec.tokens) return *spec.tokens;  // RunPlan refuses tokens for generic models
  const double samples = *spec.samples * spec.epochs;
  return generic ? samples : samples * static_cast<double>(spec.training.seq_len);
}

workload::Training BaseTraining(const workload::Model& model, const PlanSpec& spec) {
  workload::Training t = spec.training;
  if (!spec.global_batch_given) {
    // Default batch: 256 samples for generic models (ResNet-50's classic batch, Goyal et al.
    // 2017 use 256 per 8 GPUs); 2^20 tokens for transformers (fulcrum's default).
    t.global_batch =
        model.kind == workload::ModelKind::kGeneric
            ? 256
            : std::max<int64_t>(1, (int64_t{1} << 20) / std::max<int64_t>(1, t.seq_len));
  }
  return t;
}

}  // namespace

Result<PlanResult> RunPlan(const catalog::Catalog& catalog, const workload::Model& model,
                           const PlanSpec& request, const CostAssumptions& assumptions,
                           int threads) {
  const auto started = std::chrono::steady_clock::now();
  FULCRUM_RETURN_IF_ERROR(CheckPlanRequest(model, request));
  FULCRUM_ASSIGN_OR_RETURN(PlanOffers offers, ResolvePlanOffers(catalog, request.constraints));
  PlanResult result;
  result.model = model;
  result.spec = request;
  result.spec.constraints = std::move(offers.constraints);
  const PlanSpec& spec = result.spec;
  PlanInputs in{catalog, model, spec,    assumptions,          BaseTraining(model, spec),
                0,       0,     threads, JobFrameworksOf(spec)};
  // What the command itself chooses for every layout (its recompute modules, its optimizer's
  // moment dtypes): the estimates are of what it will run.
  const JobFrameworks& job = in.frameworks;
  if (job.recompute_modules != 0) in.base.recompute_modules = job.recompute_modules;
  if (job.exp_avg_dtype != workload::MomentDtype::kFp32 ||
      job.exp_avg_sq_dtype != workload::MomentDtype::kFp32) {
    in.base.exp_avg_dtype = job.exp_avg_dtype;
    in.base.exp_avg_sq_dtype = job.exp_avg_sq_dtype;
  }
  in.base.activation_fp8_input_store = job.activation_fp8_input_store;
  in.base.moe_a2a_overlap = job.moe_a2a_overlap;
  in.base.expert_tp = job.expert_tp;
  in.base.moe_dispatcher = job.moe_dispatcher;
  in.base.moe_router_groups = job.moe_router_groups;
  in.base.moe_router_group_topk = job.moe_router_group_topk;
  in.base.overlap_comm = job.overlap_comm;  // read by DeepSpeed's ZeRO 1 and 2 layouts only
  in.base.backward_prefetch = job.backward_prefetch;  // read by FSDP's FULL_SHARD layouts only
  // The HF Trainer recomputes through --gradient_checkpointing, which the export sets for a
  // full-recompute pick (HfTrainerLayoutOptions): no selective recompute is searched for it, and
  // FSDP FULL_SHARD with full recompute gathers once more.
  in.base.hf_gradient_checkpointing = job.layout_arguments == LayoutArguments::kHfTrainer;
  in.work_units = WorkUnits(model, spec, &result.units_are_samples);
  in.trained_parameters = estimate::TrainableParameterCount(model, in.base);

  result.frameworks = in.frameworks.allowed;
  result.frameworks_reason = in.frameworks.reason;
  result.layout_arguments = in.frameworks.layout_arguments;

  const HardwareClasses classes = ClassifyOffers(catalog, offers.offers, spec, in.base);
  const LayoutTable layouts =
      SearchClassLayouts(model, in.base, classes.classes, spec, in.frameworks, threads);
  CostedCandidates costed = CostCandidates(in, classes, layouts);
  result.candidates = std::move(costed.candidates);
  RankCandidates(result);

  result.work_units = in.work_units;
  result.notes = PlanNotes(in, classes, costed, result.candidates);
  result.notes.insert(result.notes.end(), offers.notes.begin(), offers.notes.end());
  if (std::string note = UnconfirmedRowsNote(result, catalog); !note.empty()) {
    result.notes.push_back(std::move(note));
  }
  result.offers_considered = classes.offers_considered;
  result.hardware_classes = static_cast<int64_t>(classes.classes.size());
  result.configurations = layouts.configurations;
  result.spot_pruned = costed.spot_pruned;
  result.threads = layouts.threads;
  result.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return result;
}

}  // namespace fulcrum::plan
