#include "estimate/estimate.h"

#include <algorithm>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/parse.h"
#include "core/table.h"
#include "workload/model_io.h"

namespace fulcrum::estimate {
namespace {

using workload::Model;
using workload::Training;

std::string Str(int64_t v) { return std::to_string(v); }

Result<Model> CustomModel(const EstimateRequest& r) {
  Model m;
  m.name = "custom";
  m.source = "command-line shape";
  m.layers = r.layers;
  m.hidden = r.hidden;
  m.heads = r.heads;
  m.kv_heads = r.kv_heads > 0 ? r.kv_heads : r.heads;
  m.head_dim = r.head_dim;
  m.ffn_hidden = r.ffn_hidden > 0 ? r.ffn_hidden : 4 * r.hidden;
  m.vocab = r.vocab > 0 ? r.vocab : 50257;  // GPT-2 BPE vocabulary when not given
  m.tied_embeddings = r.tied_embeddings;
  m.experts = r.experts;
  m.experts_per_token = r.experts > 0 && r.experts_per_token == 0 ? 2 : r.experts_per_token;
  if (!r.mlp.empty()) {
    FULCRUM_ASSIGN_OR_RETURN(m.mlp, workload::ParseMlpKind(r.mlp));
  }
  // A gated MLP implies the LLaMA family's conventions; GELU the GPT family's.
  const bool gated = m.mlp == workload::MlpKind::kSwiglu;
  m.norm = gated ? workload::NormKind::kRmsNorm : workload::NormKind::kLayerNorm;
  m.position = workload::PositionKind::kRotary;
  m.linear_bias = !gated;
  m.dropout = !gated;
  if (r.hidden <= 0 || r.heads <= 0) {
    return Status::InvalidInput(
        "a custom model needs --layers, --hidden and --heads (all positive)");
  }
  FULCRUM_RETURN_IF_ERROR(workload::ValidateModel(m));
  return m;
}

template <typename T>
Status ParseInto(const std::string& text, Result<T> (*parse)(std::string_view), T& field) {
  if (text.empty()) return Status::Ok();
  FULCRUM_ASSIGN_OR_RETURN(field, parse(text));
  return Status::Ok();
}

// none | all (optimizer+params) | '+'-joined parts: optimizer, params (with optimizer),
// activations.
Status ApplyOffload(const std::string& text, Training& t) {
  const std::string v = ToLower(text);
  if (v.empty() || v == "none") return Status::Ok();
  if (v == "all") {
    t.offload_optimizer = true;
    t.offload_params = true;
    return Status::Ok();
  }
  size_t start = 0;
  while (start <= v.size()) {
    const size_t end = std::min(v.find('+', start), v.size());
    const std::string part = v.substr(start, end - start);
    if (part == "optimizer") {
      t.offload_optimizer = true;
    } else if (part == "params") {
      t.offload_params = true;
    } else if (part == "activations") {
      t.offload_activations = true;
    } else {
      return Status::InvalidInput(
          "--offload: expected none, optimizer, optimizer+params, activations or a '+'-joined "
          "combination of optimizer, params and activations, found '" +
          text + "'");
    }
    start = end + 1;
  }
  if (t.offload_params && !t.offload_optimizer) {
    return Status::InvalidInput("--offload " + text +
                                ": parameter offload needs optimizer offload (optimizer+params)");
  }
  return Status::Ok();
}

Result<Training> ResolveTraining(const EstimateRequest& r, const Model& model, int64_t& gpus) {
  Training t;
  FULCRUM_RETURN_IF_ERROR(ParseInto(r.precision, workload::ParsePrecision, t.precision));
  FULCRUM_RETURN_IF_ERROR(ParseInto(r.optimizer, workload::ParseOptimizer, t.optimizer));
  FULCRUM_RETURN_IF_ERROR(ParseInto(r.method, workload::ParseMethod, t.method));
  FULCRUM_RETURN_IF_ERROR(ParseInto(r.recompute, workload::ParseRecompute, t.recompute));
  FULCRUM_RETURN_IF_ERROR(ParseInto(r.framework, workload::ParseFramework, t.framework));
  FULCRUM_RETURN_IF_ERROR(
      ParseInto(r.recompute_modules, workload::ParseRecomputeModules, t.recompute_modules));
  FULCRUM_RETURN_IF_ERROR(
      ParseInto(r.optimizer_kernels, workload::ParseOptimizerKernels, t.optimizer_kernels));
  FULCRUM_RETURN_IF_ERROR(ParseInto(r.cross_entropy, workload::ParseCrossEntropy, t.cross_entropy));
  FULCRUM_RETURN_IF_ERROR(
      ParseInto(r.pipeline_schedule, workload::ParsePipelineSchedule, t.pipeline_schedule));
  FULCRUM_RETURN_IF_ERROR(
      ParseInto(r.moe_dispatcher, workload::ParseMoeDispatcher, t.moe_dispatcher));
  FULCRUM_RETURN_IF_ERROR(
      ParseInto(r.backward_prefetch, workload::ParseBackwardPrefetch, t.backward_prefetch));
  if (!r.exp_avg_dtype.empty()) {
    FULCRUM_ASSIGN_OR_RETURN(t.exp_avg_dtype,
                             workload::ParseMomentDtype(r.exp_avg_dtype, "--exp-avg-dtype"));
  }
  if (!r.exp_avg_sq_dtype.empty()) {
    FULCRUM_ASSIGN_OR_RETURN(t.exp_avg_sq_dtype,
                             workload::ParseMomentDtype(r.exp_avg_sq_dtype, "--exp-avg-sq-dtype"));
  }
  // Modules are read under selective recompute only (as Megatron-LM reads them); a list given
  // with no --recompute at all is a forgotten flag, not a choice (an explicit none or full, as a
  // suggested change appends, ignores them).
  if (!r.recompute_modules.empty() && r.recompute.empty()) {
    return Status::InvalidInput("--recompute-modules " + r.recompute_modules +
                                ": modules are recomputed under --recompute selective "
                                "(Megatron-LM's --recompute-granularity selective), and "
                                "--recompute is not given");
  }
  FULCRUM_RETURN_IF_ERROR(
      ParseInto(r.grad_precision, workload::ParseGradPrecision, t.grad_precision));
  FULCRUM_RETURN_IF_ERROR(
      ParseInto(r.checkpoint_format, workload::ParseCheckpointFormat, t.checkpoint_format));
  FULCRUM_RETURN_IF_ERROR(ApplyOffload(r.offload, t));
  const std::string flash = ToLower(r.flash_attention);
  if (!flash.empty() && flash != "on" && flash != "off") {
    return Status::InvalidInput("--flash-attention: expected on or off, found '" +
                                r.flash_attention + "'");
  }
  t.flash_attention = flash != "off";
  t.lora_rank = r.lora_rank;
  t.tp = r.tp;
  t.pp = r.pp;
  t.vpp = r.vpp;
  t.cp = r.cp;
  t.ep = r.ep;
  t.expert_tp = r.expert_tp;
  t.dp_shard = r.dp_shard;
  t.first_stage_layers = r.first_stage_layers;
  t.last_stage_layers = r.last_stage_layers;
  t.zero_stage = r.zero;
  t.sequence_parallel = r.sequence_parallel;
  t.micro_batch = r.micro_batch;
  t.fp8_params = r.fp8_params;
  t.activation_fp8_input_store = r.activation_fp8_input_store;
  t.store_param_remainders = r.store_param_remainders;
  t.fp8_activation_cache = r.fp8_activation_cache;
  t.microbatch_group_size = r.microbatch_group_size;
  t.moe_a2a_overlap = r.moe_a2a_overlap;
  t.overlap_comm = r.overlap_comm;
  t.hf_gradient_checkpointing = r.hf_gradient_checkpointing;
  t.moe_router_groups = r.moe_router_groups;
  t.moe_router_group_topk = r.moe_router_group_topk;
  if (r.tp < 1 || r.pp < 1 || r.cp < 1) {
    return Status::InvalidInput("--tp, --pp and --cp must be at least 1");
  }
  const int64_t model_parallel = r.tp * r.pp * r.cp;
  if (r.gpus < 0)
    return Status::InvalidInput("--gpus: expected a positive count, found " + Str(r.gpus));
  if (r.dp > 0) {
    t.dp = r.dp;
  } else if (r.gpus > 0) {
    if (r.gpus % model_parallel != 0) {
      return Status::InvalidInput(
          "--gpus " + Str(r.gpus) +
          " is not divisible by --tp x --pp x --cp = " + Str(model_parallel));
    }
    t.dp = r.gpus / model_parallel;
  } else {
    t.dp = 1;
  }
  gpus = r.gpus > 0 ? r.gpus : workload::GpuCount(t);
  // No framework named: the default (FSDP) where it has the sharding, else the one that does.
  if (r.framework.empty() && !workload::FrameworkRunsLayout(t.framework, t)) {
    t.framework = workload::DefaultFrameworkFor(t);
  }
  t.global_batch = r.global_batch > 0 ? r.global_batch : t.micro_batch * t.dp;
  if (r.seq_len > 0) {
    t.seq_len = r.seq_len;
  } else {
    t.seq_len = model.max_seq_len > 0 ? std::min<int64_t>(2048, model.max_seq_len) : 2048;
  }
  t.mean_seq_len = r.mean_seq_len;
  t.head_tokens = r.head_tokens;
  t.head_width = r.head_width;
  FULCRUM_RETURN_IF_ERROR(workload::Validate(model, t, gpus));
  return t;
}

}  // namespace

bool PrecisionSupported(const catalog::Gpu& gpu, workload::Precision precision) {
  auto positive = [](const std::optional<double>& v) { return v.has_value() && *v > 0; };
  switch (precision) {
    case workload::Precision::kFp32:
      return positive(gpu.fp32_tflops) || positive(gpu.tf32_tflops);
    case workload::Precision::kFp16Mixed:
      return positive(gpu.fp16_tflops);
    case workload::Precision::kBf16Mixed:
    case workload::Precision::kPureBf16:
      return positive(gpu.bf16_tflops);
    case workload::Precision::kFp8:
      return positive(gpu.fp8_tflops);
    case workload::Precision::kTf32:  // TF32 tensor cores: Ampere and later
      return positive(gpu.tf32_tflops);
  }
  return false;
}

std::string SupportedPrecisionNames(const catalog::Gpu& gpu) {
  std::string out;
  for (workload::Precision p :
       {workload::Precision::kBf16Mixed, workload::Precision::kFp16Mixed, workload::Precision::kFp8,
        workload::Precision::kTf32, workload::Precision::kFp32}) {
    if (!PrecisionSupported(gpu, p)) continue;
    out += (out.empty() ? "" : ", ") + std::string(workload::PrecisionName(p));
  }
  return out.empty() ? "none sourced" : out;
}

Status CheckPrecisionSupported(const catalog::Gpu& gpu, workload::Precision precision) {
  if (PrecisionSupported(gpu, precision)) return Status::Ok();
  const std::string name(workload::PrecisionName(precision));
  ErrorDetail detail;
  detail.field = "precision";
  detail.expected = SupportedPrecisionNames(gpu);
  detail.found = name;
  return Status::InvalidInput(
             "--precision " + name + ": " + gpu.name + " (" + gpu.architecture + ") has no " +
             name + " tensor-core mode in the catalog; it supports " + SupportedPrecisionNames(gpu))
      .WithDetail(detail);
}

Result<Model> ResolveModel(const EstimateRequest& r, const std::string& catalog_dir) {
  const int sources =
      (r.model.empty() ? 0 : 1) + (r.hf_config.empty() ? 0 : 1) + (r.layers > 0 ? 1 : 0);
  if (sources == 0) {
    return Status::InvalidInput(
        "no model: give --model NAME, --hf-config FILE or --layers/--hidden/--heads");
  }
  if (sources > 1) {
    return Status::InvalidInput(
        "give only one of --model, --hf-config and --layers/--hidden/--heads");
  }
  if (!r.model.empty()) return workload::LoadModelPreset(catalog_dir, r.model);
  if (!r.hf_config.empty()) return workload::LoadHfConfigFile(r.hf_config);
  return CustomModel(r);
}

Result<EstimateInput> ResolveEstimateInput(const EstimateRequest& r,
                                           const catalog::Catalog& catalog,
                                           const std::string& catalog_dir) {
  EstimateInput in;
  FULCRUM_ASSIGN_OR_RETURN(in.model, ResolveModel(r, catalog_dir));
  if (r.gpu.empty()) return Status::InvalidInput("--gpu NAME is required (see fulcrum gpus)");
  Result<const catalog::Gpu*> gpu = catalog.ResolveGpu(r.gpu);
  if (!gpu.ok()) return Status(gpu.status().code(), "--gpu: " + gpu.status().message());
  in.gpu = **gpu;
  FULCRUM_ASSIGN_OR_RETURN(in.training, ResolveTraining(r, in.model, in.gpus));
  FULCRUM_RETURN_IF_ERROR(CheckPrecisionSupported(in.gpu, in.training.precision));
  if (r.gpus_per_node < 1) return Status::InvalidInput("--gpus-per-node must be at least 1");
  in.gpus_per_node = r.gpus_per_node;
  const std::string ic = ToLower(r.interconnect);
  if (ic.empty()) {
    in.interconnect =
        in.gpu.nvlink_gbps ? catalog::Interconnect::kNvlink : catalog::Interconnect::kPcie;
  } else if (ic == "nvlink") {
    in.interconnect = catalog::Interconnect::kNvlink;
  } else if (ic == "pcie") {
    in.interconnect = catalog::Interconnect::kPcie;
  } else {
    return Status::InvalidInput("--interconnect: expected nvlink or pcie, found '" +
                                r.interconnect + "'");
  }
  if (!(r.network_gbps > 0)) return Status::InvalidInput("--network-gbps must be positive");
  in.network_gbps = r.network_gbps;
  return in;
}

EstimateResult Evaluate(const EstimateInput& input) {
  EstimateResult r;
  r.input = input;
  const workload::ModelCounts counts = workload::CountModel(input.model);
  r.parameters = counts.parameters;
  r.memory = EstimateMemory(input.model, counts, input.training);
  r.resume = EstimateResumeMemory(input.model, counts, input.training, r.memory);
  r.capacity_bytes = CapacityBytesFromGib(input.gpu.memory_gib);
  const double bound = FitPeakBytes(r.memory, r.resume);
  r.headroom_fraction = HeadroomFraction(bound, r.capacity_bytes);
  r.unreserved_peak_bytes = FitUnreservedPeakBytes(r.memory, r.resume);
  r.verdict = ClassifyFit(bound, r.unreserved_peak_bytes, r.capacity_bytes);
  return r;
}

void AppendEstimateJson(const EstimateResult& r, nlohmann::json& doc) {
  const Model& m = r.input.model;
  const Training& t = r.input.training;
  doc["model"] = {{"name", m.name},
                  {"parameters", r.parameters},
                  {"active_parameters", workload::ActiveParameterCount(m)},
                  {"experts", m.experts},
                  {"experts_per_token", m.experts_per_token},
                  {"kind", std::string(workload::ModelKindName(m.kind))},
                  {"source", m.source}};
  const MemoryBreakdown& b = r.memory;
  doc["memory"] = {
      {"weights_bytes", b.weights_bytes},
      {"gradients_bytes", b.gradients_bytes},
      {"optimizer_bytes", b.optimizer_bytes},
      {"activations_bytes", b.activations_bytes},
      {"other_bytes", b.other_bytes},
      {"logits_bytes", b.logits_bytes},
      {"comm_buffer_bytes", b.comm_buffer_bytes},
      {"cuda_context_bytes", b.cuda_context_bytes},
      {"allocator_reserve_bytes", b.allocator_reserve_bytes},
      {"allocated_bytes", b.allocated_bytes},
      {"reserved_bytes", b.reserved_bytes},
      {"peak_bytes_per_gpu", b.peak_bytes_per_gpu},
      {"peak_at_resume_bytes_per_gpu", r.resume.peak_at_resume_bytes_per_gpu},
      {"checkpoint_format", std::string(workload::CheckpointFormatName(r.resume.format))},
      {"resume_load_transient_bytes", r.resume.load_transient_bytes},
      {"resume_retained_bytes", r.resume.retained_bytes},
      {"fit_bound", FitBoundName(r.memory, r.resume)},
      {"capacity_bytes", r.capacity_bytes},
      {"headroom_fraction", r.headroom_fraction},
      {"unreserved_peak_bytes_per_gpu", r.unreserved_peak_bytes},
      {"fits", r.verdict != FitVerdict::kDoesNotFit},
      {"verdict", FitVerdictName(r.verdict)}};
  doc["setup"] = {
      {"gpu", r.input.gpu.name},
      {"gpus", r.input.gpus},
      {"gpus_per_node", r.input.gpus_per_node},
      {"interconnect", r.input.interconnect == catalog::Interconnect::kPcie ? "pcie" : "nvlink"},
      {"network_gbps", r.input.network_gbps},
      {"precision", std::string(workload::PrecisionName(t.precision))},
      {"optimizer", std::string(workload::OptimizerName(t.optimizer))},
      {"method", std::string(workload::MethodName(t.method))},
      {"framework", std::string(workload::FrameworkName(t.framework))},
      {"tp", t.tp},
      {"pp", t.pp},
      {"vpp", t.vpp},
      {"cp", t.cp},
      {"dp", t.dp},
      {"ep", t.ep},
      {"zero", t.zero_stage},
      {"sequence_parallel", t.sequence_parallel},
      {"micro_batch", t.micro_batch},
      {"global_batch", t.global_batch},
      {"gradient_accumulation_steps", workload::MicroBatchesPerStep(t)},
      {"seq_len", t.seq_len},
      {"recompute", std::string(workload::RecomputeName(t.recompute))},
      {"flash_attention", t.flash_attention}};
  // Megatron-Core's --recompute-modules, echoed where selective recompute reads them under its
  // model code (absent otherwise, so outputs without the option stay as they were).
  if (t.recompute == workload::Recompute::kSelective &&
      t.recompute_modules != workload::kRecomputeCoreAttn) {
    doc["setup"]["recompute_modules"] = workload::RecomputeModulesName(t.recompute_modules);
  }
  // The run's padded length and output head, where set (absent otherwise, as above).
  if (t.mean_seq_len > 0) doc["setup"]["mean_seq_len"] = t.mean_seq_len;
  if (t.head_tokens > 0) doc["setup"]["head_tokens"] = t.head_tokens;
  if (t.head_width > 0) doc["setup"]["head_width"] = t.head_width;
  // Megatron's precision-aware optimizer's moment dtypes, where not fp32.
  if (t.exp_avg_dtype != workload::MomentDtype::kFp32 ||
      t.exp_avg_sq_dtype != workload::MomentDtype::kFp32) {
    doc["setup"]["exp_avg_dtype"] = std::string(workload::MomentDtypeName(t.exp_avg_dtype));
    doc["setup"]["exp_avg_sq_dtype"] = std::string(workload::MomentDtypeName(t.exp_avg_sq_dtype));
  }
  if (t.activation_fp8_input_store) doc["setup"]["activation_func_fp8_input_store"] = true;
  if (t.store_param_remainders) doc["setup"]["store_param_remainders"] = true;
  if (t.fp8_activation_cache) doc["setup"]["fp8_activation_cache"] = true;
  if (t.moe_a2a_overlap) doc["setup"]["moe_a2a_overlap"] = true;
  if (t.overlap_comm) doc["setup"]["overlap_comm"] = true;
  if (t.hf_gradient_checkpointing) doc["setup"]["hf_gradient_checkpointing"] = true;
  if (t.backward_prefetch != workload::BackwardPrefetch::kPre) {
    doc["setup"]["backward_prefetch"] =
        std::string(workload::BackwardPrefetchName(t.backward_prefetch));
  }
  if (t.moe_dispatcher != workload::MoeDispatcher::kAllToAll) {
    doc["setup"]["moe_token_dispatcher_type"] =
        std::string(workload::MoeDispatcherName(t.moe_dispatcher));
  }
  if (t.moe_router_groups > 0) {
    doc["setup"]["moe_router_num_groups"] = t.moe_router_groups;
    doc["setup"]["moe_router_group_topk"] = t.moe_router_group_topk;
  }
  if (t.optimizer_kernels != workload::OptimizerKernels::kFused) {
    doc["setup"]["optimizer_kernels"] =
        std::string(workload::OptimizerKernelsName(t.optimizer_kernels));
  }
  if (t.cross_entropy != workload::CrossEntropy::kFramework) {
    doc["setup"]["cross_entropy"] = std::string(workload::CrossEntropyName(t.cross_entropy));
  }
  if (t.pipeline_schedule != workload::PipelineSchedule::k1F1B) {
    doc["setup"]["pipeline_schedule"] =
        std::string(workload::PipelineScheduleName(t.pipeline_schedule));
  }
  const workload::StageLayers stages = workload::PipelineStageLayers(m, t);
  const int64_t shard = t.dp_shard > 0 ? t.dp_shard : t.dp;
  doc["parallel"] = {{"tp", t.tp},
                     {"pp", t.pp},
                     {"vpp", t.vpp},
                     {"cp", t.cp},
                     {"dp", t.dp},
                     {"ep", t.ep},
                     {"expert_tp", workload::ExpertTp(t)},
                     {"dp_shard", shard},
                     {"dp_replicate", t.dp / shard},
                     {"stage_layers",
                      {{"first", stages.first}, {"middle", stages.middle}, {"last", stages.last}}}};
}

std::string RenderMemoryTable(const EstimateResult& r) {
  const MemoryBreakdown& b = r.memory;
  Table table({"part", "per GPU", "note"}, {Align::kLeft, Align::kRight, Align::kLeft});
  table.AddRow({"weights", FormatBytes(b.weights_bytes), ""});
  table.AddRow({"gradients", FormatBytes(b.gradients_bytes), ""});
  table.AddRow({"optimizer", FormatBytes(b.optimizer_bytes),
                r.input.training.store_param_remainders ? "states + 16-bit master remainders"
                                                        : "states + fp32 master weights"});
  table.AddRow({"activations", FormatBytes(b.activations_bytes), "saved for backward"});
  table.AddRow({"logits/loss", FormatBytes(b.logits_bytes), ""});
  table.AddRow({"comm buffers", FormatBytes(b.comm_buffer_bytes), ""});
  table.AddRow({"allocator reserve", FormatBytes(b.allocator_reserve_bytes), ""});
  table.AddRow({"CUDA context", FormatBytes(b.cuda_context_bytes), ""});
  table.AddRow({"peak", FormatBytes(b.peak_bytes_per_gpu), "fresh run"});
  const std::string format(workload::CheckpointFormatName(r.resume.format));
  table.AddRow({"peak at resume", FormatBytes(r.resume.peak_at_resume_bytes_per_gpu),
                r.resume.load_transient_bytes > 0
                    ? "loading " + format + " adds " + FormatBytes(r.resume.load_transient_bytes)
                    : "loading " + format + " in place"});
  table.AddRow({"capacity", FormatBytes(r.capacity_bytes), r.input.gpu.name});
  std::ostringstream out;
  out << r.input.model.name << " (" << FormatNumber(r.parameters / 1e9, 2) << " B parameters) on "
      << r.input.gpus << " x " << r.input.gpu.name << "\n"
      << DescribeSetup(r.input) << "\n\n"
      << table.Render() << "\nverdict: " << FitVerdictName(r.verdict);
  const double bound = FitPeakBytes(b, r.resume);
  const std::string which = std::string(" at the ") + FitBoundName(b, r.resume) + " peak";
  if (r.verdict == FitVerdict::kDoesNotFit) {
    out << " (" << FormatBytes(r.unreserved_peak_bytes - r.capacity_bytes) << " over the "
        << FormatBytes(r.capacity_bytes) << " of one " << r.input.gpu.name << which
        << " without the allocator reserve)\n";
  } else if (r.headroom_fraction < 0) {
    out << " (fits only if the caching allocator gives back its cache: "
        << FormatBytes(r.capacity_bytes - r.unreserved_peak_bytes) << " free" << which
        << " without the allocator reserve, " << FormatBytes(bound - r.capacity_bytes)
        << " over with it)\n";
  } else {
    out << " (" << FormatNumber(r.headroom_fraction * 100, 1) << " % free" << which << ")\n";
  }
  return out.str();
}

std::string DescribeSetup(const EstimateInput& in) {
  const Training& t = in.training;
  std::ostringstream s;
  s << "--precision " << workload::PrecisionName(t.precision) << " --optimizer "
    << workload::OptimizerName(t.optimizer) << " --method " << workload::MethodName(t.method);
  if (t.method != workload::Method::kFull) s << " --lora-rank " << t.lora_rank;
  s << " --framework " << workload::FrameworkName(t.framework);
  if (t.checkpoint_format != workload::CheckpointFormat::kDefault) {
    s << " --checkpoint-format " << workload::CheckpointFormatName(t.checkpoint_format);
  }
  s << " --tp " << t.tp << " --pp " << t.pp;
  if (t.vpp > 1) s << " --vpp " << t.vpp;
  if (t.microbatch_group_size > 0) s << " --microbatch-group-size " << t.microbatch_group_size;
  if (t.first_stage_layers > 0) s << " --first-stage-layers " << t.first_stage_layers;
  if (t.last_stage_layers > 0) s << " --last-stage-layers " << t.last_stage_layers;
  if (t.cp > 1) s << " --cp " << t.cp;
  s << " --dp " << t.dp;
  if (t.ep > 1) s << " --ep " << t.ep;
  if (workload::ExpertTp(t) != t.tp) s << " --expert-tp " << workload::ExpertTp(t);
  if (t.dp_shard > 0) s << " --dp-shard " << t.dp_shard;
  s << " --zero " << t.zero_stage;
  if (t.sequence_parallel) s << " --sequence-parallel";
  s << " --micro-batch " << t.micro_batch << " --global-batch " << t.global_batch << " --seq-len "
    << t.seq_len;
  if (t.mean_seq_len > 0) s << " --mean-seq-len " << t.mean_seq_len;
  if (t.head_tokens > 0) s << " --head-tokens " << t.head_tokens;
  if (t.head_width > 0) s << " --head-width " << t.head_width;
  s << " --recompute " << workload::RecomputeName(t.recompute);
  if (t.recompute == workload::Recompute::kSelective &&
      t.recompute_modules != workload::kRecomputeCoreAttn) {
    s << " --recompute-modules " << workload::RecomputeModulesName(t.recompute_modules);
  }
  s << " --flash-attention " << (t.flash_attention ? "on" : "off");
  if (t.grad_precision != workload::GradPrecision::kDefault) {
    s << " --grad-precision "
      << (t.grad_precision == workload::GradPrecision::kFp16   ? "fp16"
          : t.grad_precision == workload::GradPrecision::kBf16 ? "bf16"
                                                               : "fp32");
  }
  if (t.fp8_params) s << " --fp8-params";
  if (t.activation_fp8_input_store) s << " --activation-func-fp8-input-store";
  if (t.store_param_remainders) s << " --store-param-remainders";
  if (t.fp8_activation_cache) s << " --fp8-activation-cache";
  if (t.moe_a2a_overlap) s << " --moe-a2a-overlap";
  if (t.overlap_comm) s << " --overlap-comm";
  if (t.hf_gradient_checkpointing) s << " --hf-gradient-checkpointing";
  if (t.backward_prefetch != workload::BackwardPrefetch::kPre) {
    s << " --backward-prefetch " << workload::BackwardPrefetchName(t.backward_prefetch);
  }
  if (t.moe_dispatcher != workload::MoeDispatcher::kAllToAll) {
    s << " --moe-token-dispatcher-type " << workload::MoeDispatcherName(t.moe_dispatcher);
  }
  if (t.moe_router_groups > 0) {
    s << " --moe-router-num-groups " << t.moe_router_groups << " --moe-router-group-topk "
      << t.moe_router_group_topk;
  }
  if (t.exp_avg_dtype != workload::MomentDtype::kFp32 ||
      t.exp_avg_sq_dtype != workload::MomentDtype::kFp32) {
    s << " --exp-avg-dtype " << workload::MomentDtypeName(t.exp_avg_dtype) << " --exp-avg-sq-dtype "
      << workload::MomentDtypeName(t.exp_avg_sq_dtype);
  }
  if (t.optimizer_kernels != workload::OptimizerKernels::kFused) {
    s << " --optimizer-kernels " << workload::OptimizerKernelsName(t.optimizer_kernels);
  }
  if (t.cross_entropy != workload::CrossEntropy::kFramework) {
    s << " --cross-entropy " << workload::CrossEntropyName(t.cross_entropy);
  }
  if (t.pipeline_schedule != workload::PipelineSchedule::k1F1B) {
    s << " --pipeline-schedule " << workload::PipelineScheduleName(t.pipeline_schedule);
  }
  if (t.offload_optimizer || t.offload_activations) {
    std::string parts = t.offload_optimizer ? "optimizer" : "";
    if (t.offload_params) parts += "+params";
    if (t.offload_activations) parts += parts.empty() ? "activations" : "+activations";
    s << " --offload " << parts;
  }
  return s.str();
}

}  // namespace fulcrum::estimate
