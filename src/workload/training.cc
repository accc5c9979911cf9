#include "workload/training.h"

#include <initializer_list>
#include <string>

#include "core/input_error.h"
#include "core/parse.h"

namespace fulcrum::workload {
namespace {

std::string Str(int64_t v) { return std::to_string(v); }

Status AtLeast(const char* flag, int64_t value, int64_t minimum) {
  if (value >= minimum) return Status::Ok();
  return Status::InvalidInput(std::string(flag) + ": expected an integer >= " + Str(minimum) +
                              ", found " + Str(value));
}

Status ValidateSizes(const Training& t) {
  FULCRUM_RETURN_IF_ERROR(AtLeast("--tp", t.tp, 1));
  FULCRUM_RETURN_IF_ERROR(AtLeast("--pp", t.pp, 1));
  FULCRUM_RETURN_IF_ERROR(AtLeast("--vpp", t.vpp, 1));
  FULCRUM_RETURN_IF_ERROR(AtLeast("--cp", t.cp, 1));
  FULCRUM_RETURN_IF_ERROR(AtLeast("--dp", t.dp, 1));
  FULCRUM_RETURN_IF_ERROR(AtLeast("--ep", t.ep, 1));
  FULCRUM_RETURN_IF_ERROR(AtLeast("--dp-shard", t.dp_shard, 0));
  FULCRUM_RETURN_IF_ERROR(AtLeast("--first-stage-layers", t.first_stage_layers, 0));
  FULCRUM_RETURN_IF_ERROR(AtLeast("--last-stage-layers", t.last_stage_layers, 0));
  FULCRUM_RETURN_IF_ERROR(AtLeast("--micro-batch", t.micro_batch, 1));
  FULCRUM_RETURN_IF_ERROR(AtLeast("--global-batch", t.global_batch, 1));
  FULCRUM_RETURN_IF_ERROR(AtLeast("--seq-len", t.seq_len, 1));
  if (t.zero_stage < 0 || t.zero_stage > 3) {
    return Status::InvalidInput("--zero: expected 0, 1, 2 or 3, found " + Str(t.zero_stage));
  }
  if (t.method != Method::kFull) FULCRUM_RETURN_IF_ERROR(AtLeast("--lora-rank", t.lora_rank, 1));
  return Status::Ok();
}

// InvalidInput with the field, what was expected and what was found for --json errors.
Status Refuse(const char* field, const std::string& expected, const std::string& found,
              const std::string& message) {
  ErrorDetail detail;
  detail.field = field;
  detail.expected = expected;
  detail.found = found;
  return Status::InvalidInput(message).WithDetail(detail);
}

// `what` (an option and the frameworks that run it) refused for the run's framework.
Status WrongFramework(const std::string& what, const Training& t) {
  return Status::InvalidInput(what + ", found --framework " +
                              std::string(FrameworkName(t.framework)));
}

// Uneven first / last stages under an interleaved schedule: each rank's stage is cut into vpp
// model chunks; the other stages share the remaining layers evenly, at least one per chunk, and
// the first (last) stage may leave one chunk without a transformer layer, the chunk that holds
// only the embedding (the output layer and loss): Llama 3's 405B pipeline, 126 layers on 16
// stages with one layer fewer on the first and the last (Llama Team 2024, arXiv 2407.21783,
// section 3.3.2); Megatron-LM's --pipeline-model-parallel-layout places such chunks
// (NVIDIA/Megatron-LM MR 2795, "flexible asymmetric VPP with custom PP layout").
Status ValidateInterleavedSplit(const Model& m, const Training& t) {
  const int64_t given = (t.first_stage_layers > 0 ? 1 : 0) + (t.last_stage_layers > 0 ? 1 : 0);
  const int64_t rest = m.layers - t.first_stage_layers - t.last_stage_layers;
  const int64_t others = t.pp - given;
  const bool even = others == 0 ? rest == 0 : rest % others == 0 && rest / others >= t.vpp;
  const int64_t least = t.vpp - 1;
  const bool ends = (t.first_stage_layers == 0 || t.first_stage_layers >= least) &&
                    (t.last_stage_layers == 0 || t.last_stage_layers >= least);
  if (even && ends) return Status::Ok();
  return Refuse("first_stage_layers",
                "a split whose other " + Str(others) + " stages share the rest evenly, at least " +
                    Str(t.vpp) + " layers each, and first / last stages of at least " + Str(least) +
                    " layers",
                Str(t.first_stage_layers) + " + " + Str(t.last_stage_layers),
                "--first-stage-layers " + Str(t.first_stage_layers) + " --last-stage-layers " +
                    Str(t.last_stage_layers) + " with --vpp " + Str(t.vpp) + ": the other " +
                    Str(others) + " of the " + Str(t.pp) + " stages must share the remaining " +
                    Str(rest) + " of the " + Str(m.layers) + " layers evenly with at least " +
                    Str(t.vpp) + " each (one per model chunk), and a given first or last stage " +
                    "needs at least --vpp - 1 = " + Str(least) + " layers");
}

// Explicit or automatic pipeline stage splits (see Training::first_stage_layers).
Status ValidateStages(const Model& m, const Training& t) {
  const bool explicit_split = t.first_stage_layers > 0 || t.last_stage_layers > 0;
  if (t.pp == 1) {
    if (!explicit_split) return Status::Ok();
    return Refuse("first_stage_layers", "0 without --pp > 1", Str(t.first_stage_layers),
                  "--first-stage-layers / --last-stage-layers need pipeline parallelism "
                  "(--pp > 1)");
  }
  if (t.vpp > 1) {
    if (explicit_split) return ValidateInterleavedSplit(m, t);
    if (m.layers % (t.pp * t.vpp) == 0) return Status::Ok();
    return Refuse("vpp", "pp x vpp dividing the " + Str(m.layers) + " layers", Str(t.vpp),
                  "layers (" + Str(m.layers) +
                      ") must be divisible by --pp x --vpp = " + Str(t.pp) + " x " + Str(t.vpp) +
                      " = " + Str(t.pp * t.vpp) + " with an interleaved pipeline");
  }
  if (m.layers < t.pp) {
    return Refuse("pp", "at most " + Str(m.layers) + " (the layers)", Str(t.pp),
                  "--pp " + Str(t.pp) + " exceeds the model's " + Str(m.layers) +
                      " layers (every stage needs at least one)");
  }
  if (!explicit_split) return Status::Ok();
  const int64_t given = (t.first_stage_layers > 0 ? 1 : 0) + (t.last_stage_layers > 0 ? 1 : 0);
  const int64_t rest = m.layers - t.first_stage_layers - t.last_stage_layers;
  const int64_t others = t.pp - given;
  const bool fits = others == 0 ? rest == 0 : rest >= others && rest % others == 0;
  if (fits) return Status::Ok();
  return Refuse("first_stage_layers",
                "a split whose other " + Str(others) + " stages share the rest evenly",
                Str(t.first_stage_layers) + " + " + Str(t.last_stage_layers),
                "--first-stage-layers " + Str(t.first_stage_layers) + " --last-stage-layers " +
                    Str(t.last_stage_layers) + ": the other " + Str(others) + " of the " +
                    Str(t.pp) + " stages must share the remaining " + Str(rest) + " of the " +
                    Str(m.layers) + " layers evenly (at least one each)");
}

// Context, expert and HSDP groups.
// --expert-tp: 1 or tp (fulcrum models these two of Megatron-Core's
// --expert-tensor-parallel-size), for a MoE model under Megatron-Core's model code, and with
// sequence parallelism where tp > 1 (Megatron-LM@d98e8a64dd megatron/core/model_parallel_config.py:
// "When using expert parallelism and tensor parallelism for training, sequence parallelism must be
// used"), so that each tp rank routes its own share of the tokens.
Status ValidateExpertTp(const Model& m, const Training& t) {
  if (t.expert_tp == 0 || t.expert_tp == t.tp) return Status::Ok();
  if (t.expert_tp != 1) {
    return Refuse("expert_tp", "1 or tp = " + Str(t.tp), Str(t.expert_tp),
                  "--expert-tp " + Str(t.expert_tp) +
                      ": fulcrum models whole experts (1) or "
                      "experts split like the dense layers (tp = " +
                      Str(t.tp) + ")");
  }
  if (!IsMoe(m)) {
    return Status::InvalidInput("--expert-tp 1 needs a mixture-of-experts model (model '" + m.name +
                                "' is dense)");
  }
  if (!UsesMegatronCore(t.framework)) {
    return WrongFramework(
        "--expert-tp: Megatron-Core's --expert-tensor-parallel-size, for --framework megatron or "
        "megatron-fsdp",
        t);
  }
  if (!t.sequence_parallel) {
    return Status::InvalidInput(
        "--expert-tp 1 with --tp " + Str(t.tp) +
        " needs --sequence-parallel (Megatron-LM: \"When using expert parallelism and tensor "
        "parallelism for training, sequence parallelism must be used\")");
  }
  return Status::Ok();
}

Status ValidateGroups(const Model& m, const Training& t) {
  if (t.cp > 1 && t.seq_len % (2 * t.cp) != 0) {
    // Megatron splits each sequence into 2 x cp chunks for causal load balancing
    // (megatron/training/utils.py get_batch_on_this_cp_rank; torchtitan's context_parallel
    // shards the same way).
    return Refuse(
        "seq_len", "a multiple of 2 x cp = " + Str(2 * t.cp), Str(t.seq_len),
        "--seq-len " + Str(t.seq_len) + " must be divisible by 2 x --cp = " + Str(2 * t.cp));
  }
  if (t.ep > 1) {
    if (m.experts == 0) {
      return Refuse("ep", "1 for a dense model", Str(t.ep),
                    "--ep " + Str(t.ep) + " needs a mixture-of-experts model (model '" + m.name +
                        "' is dense)");
    }
    if (ExpertTp(t) == t.tp && t.dp % t.ep != 0) {
      return Refuse("ep", "a divisor of dp = " + Str(t.dp), Str(t.ep),
                    "--ep " + Str(t.ep) + " must divide the data-parallel degree (" + Str(t.dp) +
                        "); expert parallelism is carved out of dp (with --expert-tp 1 out of "
                        "tp x cp x dp)");
    }
    const int64_t grid = t.tp * t.cp * t.dp;
    if (ExpertTp(t) == 1 && t.tp > 1 && grid % t.ep != 0) {
      return Refuse("ep", "a divisor of tp x cp x dp = " + Str(grid), Str(t.ep),
                    "--ep " + Str(t.ep) + " with --expert-tp 1 must divide tp x cp x dp = " +
                        Str(grid) + " (Megatron-Core's expert grid)");
    }
    if (m.experts % t.ep != 0) {
      return Refuse("ep", "a divisor of the " + Str(m.experts) + " experts", Str(t.ep),
                    "--ep " + Str(t.ep) + " must divide the " + Str(m.experts) + " routed experts");
    }
  }
  FULCRUM_RETURN_IF_ERROR(ValidateExpertTp(m, t));
  if (t.dp_shard > 0 && t.dp_shard != t.dp) {
    if (t.dp % t.dp_shard != 0) {
      return Refuse("dp_shard", "a divisor of dp = " + Str(t.dp), Str(t.dp_shard),
                    "--dp-shard " + Str(t.dp_shard) + " must divide the data-parallel degree (" +
                        Str(t.dp) + ")");
    }
    if (t.zero_stage < 2) {
      return Refuse("zero", "2 or 3 with --dp-shard", Str(t.zero_stage),
                    "--dp-shard " + Str(t.dp_shard) +
                        " (HSDP) shards model states: use --zero 2 or --zero 3");
    }
  }
  return Status::Ok();
}

// The interleaved schedule's group size (Megatron-LM megatron/core/pipeline_parallel/schedules.py
// @d98e8a64dd, forward_backward_pipelining_with_interleaving: "The number of contiguous
// micro-batches in a virtual pipeline stage should range in [PP, M]") and FP8 weights (Transformer
// Engine's, so fp8 under Megatron's model code with TE: megatron, megatron-fsdp).
Status ValidateScheduleAndFp8(const Training& t) {
  if (t.microbatch_group_size != 0) {
    const int64_t m = MicroBatchesPerStep(t);
    if (t.vpp <= 1) {
      return Status::InvalidInput("--microbatch-group-size " + Str(t.microbatch_group_size) +
                                  " needs an interleaved pipeline (--vpp > 1)");
    }
    if (t.microbatch_group_size < t.pp || t.microbatch_group_size > m) {
      ErrorDetail detail;
      detail.field = "microbatch_group_size";
      detail.expected = "pp .. micro-batches per step = " + Str(t.pp) + " .. " + Str(m);
      detail.found = Str(t.microbatch_group_size);
      return Status::InvalidInput("--microbatch-group-size " + detail.found +
                                  ": Megatron-LM runs between --pp and the micro-batches per "
                                  "step (global batch / (micro-batch x dp)), here " +
                                  detail.expected)
          .WithDetail(detail);
    }
  }
  if (t.fp8_params && (t.precision != Precision::kFp8 || !UsesMegatronCore(t.framework))) {
    return Status::InvalidInput(
        "--fp8-params: FP8 weights are Transformer Engine's: they need --precision fp8 and "
        "--framework megatron or megatron-fsdp, found --precision " +
        std::string(PrecisionName(t.precision)) + " --framework " +
        std::string(FrameworkName(t.framework)));
  }
  return Status::Ok();
}

// Megatron-Core's activation_func_fp8_input_store: its fused SwiGLU only ("Storing activation
// input in FP8 is supported only for SwiGLU.", Megatron-LM@d98e8a64dd
// megatron/core/transformer/transformer_config.py __post_init__), under Megatron-Core's model code.
Status ValidateActivationFp8InputStore(const Model& m, const Training& t) {
  if (!t.activation_fp8_input_store) return Status::Ok();
  if (m.mlp != MlpKind::kSwiglu) {
    return Status::InvalidInput(
        "--activation-func-fp8-input-store: Megatron-Core stores the activation's input in FP8 "
        "for SwiGLU only, and this model's MLP is not gated");
  }
  if (!UsesMegatronCore(t.framework)) {
    return WrongFramework(
        "--activation-func-fp8-input-store: a Megatron-Core option (--framework megatron or "
        "megatron-fsdp)",
        t);
  }
  return Status::Ok();
}

// Param remainders rebuild the fp32 master from the bf16 weight: bf16 weights (bf16 mixed
// precision, or FP8 linears over bf16 weights without FP8 weights, which NeMo keeps with a full
// fp32 copy: store_params) and a framework whose optimizer keeps a master copy in this form
// (apex's DistributedFusedAdam under NeMo's Megatron, --framework megatron).
Status ValidateStoreParamRemainders(const Training& t) {
  if (!t.store_param_remainders) return Status::Ok();
  const bool bf16_weights =
      t.precision == Precision::kBf16Mixed || (t.precision == Precision::kFp8 && !t.fp8_params);
  if (!bf16_weights) {
    return Status::InvalidInput(
        "--store-param-remainders: the remainders complete bf16 weights to fp32: they need "
        "--precision bf16 or fp8 without --fp8-params, found --precision " +
        std::string(PrecisionName(t.precision)) + (t.fp8_params ? " --fp8-params" : ""));
  }
  if (t.framework != Framework::kMegatron) {
    return WrongFramework(
        "--store-param-remainders: apex's DistributedFusedAdam under NeMo's Megatron "
        "(--framework megatron)",
        t);
  }
  return Status::Ok();
}

// DeepSeek-V3's FP8 activation caching: the caches of an FP8 run (its Linear operators' Wgrad in
// FP8), counted against Megatron-Core's saved tensors, the stand-in for DeepSeek's framework.
Status ValidateFp8ActivationCache(const Training& t) {
  if (!t.fp8_activation_cache) return Status::Ok();
  if (t.precision != Precision::kFp8) {
    return Status::InvalidInput(
        "--fp8-activation-cache: DeepSeek-V3 caches the activations of an FP8 run; expected "
        "--precision fp8, found --precision " +
        std::string(PrecisionName(t.precision)));
  }
  if (!UsesMegatronCore(t.framework)) {
    return WrongFramework(
        "--fp8-activation-cache: counted against Megatron-Core's saved tensors; expected "
        "--framework megatron or megatron-fsdp",
        t);
  }
  return Status::Ok();
}

// DeepSpeed's overlap_comm: an option of its ZeRO optimizer (stages 1 and 2), which the
// megatron-deepspeed runs in bf16 do not take (DeepSpeed's BF16_Optimizer reduces after the
// backward whatever the option says; estimate/compute.cc).
Status ValidateOverlapComm(const Training& t) {
  if (!t.overlap_comm) return Status::Ok();
  if (t.framework != Framework::kDeepSpeed && t.framework != Framework::kMegatronDeepSpeed) {
    return WrongFramework(
        "--overlap-comm: DeepSpeed's zero_optimization.overlap_comm; expected --framework "
        "deepspeed or megatron-deepspeed",
        t);
  }
  if (t.zero_stage < 1 || t.zero_stage > 2) {
    return Status::InvalidInput(
        "--overlap-comm: an option of DeepSpeed's ZeRO stage 1 and 2 optimizer (stage 3 "
        "overlaps by default, stage 0 all-reduces after the backward); expected --zero 1 or 2, "
        "found --zero " +
        Str(t.zero_stage));
  }
  return Status::Ok();
}

// FSDP1's backward prefetching: an option of PyTorch FSDP's FULL_SHARD, whose backward gathers
// the parameters again (SHARD_GRAD_OP keeps them: nothing to prefetch).
Status ValidateBackwardPrefetch(const Training& t) {
  if (t.backward_prefetch == BackwardPrefetch::kPre) return Status::Ok();
  if (t.framework != Framework::kFsdp) {
    return WrongFramework(
        "--backward-prefetch: PyTorch FSDP's backward_prefetch; expected "
        "--framework fsdp",
        t);
  }
  if (t.zero_stage != 3) {
    return Status::InvalidInput(
        "--backward-prefetch: an option of FSDP's FULL_SHARD, whose backward all-gathers the "
        "parameters again; expected --zero 3, found --zero " +
        Str(t.zero_stage));
  }
  return Status::Ok();
}

// The HF Trainer's gradient checkpointing: what it changes is FSDP FULL_SHARD's gathers under
// full recompute.
Status ValidateHfGradientCheckpointing(const Training& t) {
  if (!t.hf_gradient_checkpointing) return Status::Ok();
  if (t.framework != Framework::kFsdp) {
    return WrongFramework(
        "--hf-gradient-checkpointing: the HF Trainer's checkpointing around "
        "FSDP units; expected --framework fsdp",
        t);
  }
  if (t.zero_stage != 3 || t.recompute != Recompute::kFull) {
    return Status::InvalidInput(
        "--hf-gradient-checkpointing: the HF Trainer's --gradient_checkpointing (full recompute) "
        "under FSDP FULL_SHARD; expected --zero 3 --recompute full, found --zero " +
        Str(t.zero_stage) + " --recompute " + std::string(RecomputeName(t.recompute)));
  }
  return Status::Ok();
}

// The token dispatcher and group-limited routing of a MoE model. The flex dispatcher is
// Megatron-Core's (its DeepEP / HybridEP backends); group-limited routing is the router's, whatever
// the framework: each group as many experts (transformer_config.py moe_router_num_groups: "Experts
// are divided into 'moe_router_num_groups' equal-sized groups"), at most all of them chosen, and
// the k experts within the chosen groups.
Status ValidateMoeRouting(const Model& m, const Training& t) {
  if (t.moe_dispatcher == MoeDispatcher::kFlex) {
    if (!IsMoe(m)) {
      return Status::InvalidInput(
          "--moe-token-dispatcher-type flex: dispatches a mixture-of-experts model's tokens, and "
          "this model has no experts");
    }
    if (!UsesMegatronCore(t.framework)) {
      return WrongFramework(
          "--moe-token-dispatcher-type flex: Megatron-Core's dispatcher (--framework megatron or "
          "megatron-fsdp)",
          t);
    }
  }
  if (t.moe_router_groups == 0 && t.moe_router_group_topk == 0) return Status::Ok();
  const std::string flags = "--moe-router-num-groups " + Str(t.moe_router_groups) +
                            " --moe-router-group-topk " + Str(t.moe_router_group_topk);
  if (!IsMoe(m)) return Status::InvalidInput(flags + ": routing groups need a MoE model");
  if (t.moe_router_groups < 1 || t.moe_router_group_topk < 1 ||
      t.moe_router_group_topk > t.moe_router_groups) {
    return Status::InvalidInput(flags + ": expected both set, with 1 <= group-topk <= num-groups");
  }
  if (m.experts % t.moe_router_groups != 0) {
    return Status::InvalidInput(flags + ": the " + Str(m.experts) +
                                " experts do not split into equal groups");
  }
  const int64_t selectable = t.moe_router_group_topk * (m.experts / t.moe_router_groups);
  if (m.experts_per_token > selectable) {
    return Status::InvalidInput(flags + ": the chosen groups hold " + Str(selectable) +
                                " experts, fewer than the " + Str(m.experts_per_token) +
                                " each token is routed to");
  }
  return Status::Ok();
}

// Megatron-Core's expert-parallel all-to-all overlap and what its TransformerConfig requires of it
// (Megatron-LM@d98e8a64dd megatron/core/transformer/transformer_config.py __post_init__, under
// overlap_moe_expert_parallel_comm): expert parallelism ("only supported with expert model
// parallelism"), an interleaved pipeline when pp > 1 ("virtual_pipeline_model_parallel_size must be
// specified when pipeline_model_parallel_size > 1"), no full recomputation and no moe in
// recompute_modules, a bf16 or fp16 model (fp8 runs on a bf16 model); Megatron-Core's model code.
Status ValidateMoeA2aOverlap(const Model& m, const Training& t) {
  if (!t.moe_a2a_overlap) return Status::Ok();
  const std::string flag = "--moe-a2a-overlap";
  if (!UsesMegatronCore(t.framework)) {
    return WrongFramework(flag +
                              ": Megatron-Core's --overlap-moe-expert-parallel-comm, for "
                              "--framework megatron or megatron-fsdp",
                          t);
  }
  if (!IsMoe(m) || t.ep <= 1) {
    return Status::InvalidInput(flag +
                                ": overlaps the expert-parallel all-to-all, so it needs a "
                                "mixture-of-experts model and --ep > 1 (Megatron-LM: "
                                "\"only supported with expert model parallelism\")");
  }
  if (t.pp > 1 && t.vpp <= 1) {
    return Status::InvalidInput(flag + " with --pp " + Str(t.pp) +
                                " needs an interleaved pipeline (--vpp > 1; Megatron-LM: "
                                "\"virtual_pipeline_model_parallel_size must be specified when "
                                "pipeline_model_parallel_size > 1\")");
  }
  if (t.recompute == Recompute::kFull || RecomputesModule(t, kRecomputeMoe)) {
    return Status::InvalidInput(flag +
                                ": Megatron-LM refuses it with full recompute and with moe in "
                                "--recompute-modules");
  }
  if (IsFp32Storage(t.precision)) {
    return Status::InvalidInput(flag + ": Megatron-LM runs it on a bf16 or fp16 model, found " +
                                "--precision " + std::string(PrecisionName(t.precision)));
  }
  return Status::Ok();
}

// DualPipe and DualPipeV as deepseek-ai/DualPipe@3da1bbe runs them: DualPipe on an even number of
// ranks (dualpipe.py: "assert num_ranks % 2 == 0"), with an even number of micro-batches, at least
// 2 per rank ("num_chunks % 2 == 0 and num_chunks >= num_ranks * 2"; dualpipev.py: at least 2 per
// rank); each rank already holds two stages, so no interleaving on top, and the stages are even
// (no --first/--last-stage-layers). DeepSeek's library and PyTorch's ScheduleDualPipeV run the
// job's own model code: fulcrum estimates them under megatron's or fsdp's conventions (DeepSeek's
// HAI-LLM, not a fulcrum framework, ran DualPipe for DeepSeek-V3; torchtitan runs PyTorch's).
Status ValidatePipelineSchedule(const Model& m, const Training& t) {
  if (t.pipeline_schedule == PipelineSchedule::k1F1B) return Status::Ok();
  const std::string flag =
      "--pipeline-schedule " + std::string(PipelineScheduleName(t.pipeline_schedule));
  const bool dualpipe = t.pipeline_schedule == PipelineSchedule::kDualPipe;
  if (t.framework != Framework::kMegatron && t.framework != Framework::kFsdp) {
    return Status::InvalidInput(flag + ": estimated under --framework megatron or fsdp, found " +
                                std::string(FrameworkName(t.framework)));
  }
  if (t.pp < 2 || (dualpipe && t.pp % 2 != 0)) {
    return Refuse("pp", dualpipe ? "an even number, at least 2" : "at least 2", Str(t.pp),
                  flag + " needs --pp " + (dualpipe ? "even and " : "") +
                      "at least 2, found --pp " + Str(t.pp));
  }
  if (t.vpp > 1 || t.first_stage_layers > 0 || t.last_stage_layers > 0) {
    return Status::InvalidInput(flag +
                                ": each rank holds two stages of its own; use --vpp 1 and no "
                                "--first-stage-layers / --last-stage-layers");
  }
  // At least one layer per stage: pp stages (DualPipe), 2 pp (DualPipeV).
  const int64_t stages = dualpipe ? t.pp : 2 * t.pp;
  if (m.kind != ModelKind::kGeneric && m.layers < stages) {
    return Refuse("pp", "at most " + Str(dualpipe ? m.layers : m.layers / 2), Str(t.pp),
                  flag + " cuts the " + Str(m.layers) + " layers into " + Str(stages) +
                      " stages, at least one layer each");
  }
  const int64_t micro_batches = MicroBatchesPerStep(t);
  if (micro_batches < 2 * t.pp || (dualpipe && micro_batches % 2 != 0)) {
    return Refuse("global_batch",
                  std::string(dualpipe ? "an even number of " : "") +
                      "micro-batches per step, at least 2 x pp = " + Str(2 * t.pp),
                  Str(micro_batches),
                  flag + " runs at least 2 micro-batches per rank" +
                      (dualpipe ? ", an even number," : "") +
                      " per step (deepseek-ai/DualPipe), found " + Str(micro_batches) +
                      " (global batch / (micro-batch x dp))");
  }
  return Status::Ok();
}

// --recompute-modules other than Megatron's default (core_attn), read only under selective
// recompute as Megatron-LM reads them (every module check in transformer_config.py@d98e8a64dd
// __post_init__ is under recompute_granularity == "selective"; none and full ignore them): only
// under Megatron-Core's model code (megatron, megatron-fsdp; Megatron-DeepSpeed runs Megatron's
// legacy model code, whose selective recompute is core attention only), and only modules the model
// has. Megatron-LM refuses mla_up_proj without multi_latent_attention and moe_act without
// moe_grouped_gemm, a MoE option (__post_init__); moe and shared_experts on a model without MoE
// layers (shared experts) it ignores (moe_layer.py builds their checkpoints only in a MoE layer):
// fulcrum refuses them, as they would recompute nothing.
Status ValidateRecomputeModules(const Model& m, const Training& t) {
  const uint32_t modules = t.recompute_modules;
  if (modules == kRecomputeCoreAttn || t.recompute != Recompute::kSelective) return Status::Ok();
  const std::string model = m.name.empty() ? "the model" : m.name;
  const std::string flag = "--recompute-modules " + RecomputeModulesName(modules);
  if (!UsesMegatronCore(t.framework)) {
    return WrongFramework(flag +
                              ": Megatron-Core's option, for --framework megatron or "
                              "megatron-fsdp",
                          t);
  }
  if ((modules & kRecomputeMlaUpProj) && !IsMla(m)) {
    return Status::InvalidInput(flag + ": mla_up_proj needs multi-latent attention, and " + model +
                                " has none (Megatron-LM: \"mla_up_proj in "
                                "recompute_modules is only supported with "
                                "multi_latent_attention\")");
  }
  const uint32_t moe_modules = kRecomputeMoeAct | kRecomputeMoe | kRecomputeSharedExperts;
  if ((modules & moe_modules) && !IsMoe(m)) {
    return Status::InvalidInput(flag +
                                ": moe_act, moe and shared_experts recompute MoE layers, "
                                "and " +
                                model +
                                " has none (Megatron-LM: \"moe_act in recompute_modules is only "
                                "supported with moe_grouped_gemm\")");
  }
  if ((modules & kRecomputeSharedExperts) && m.shared_experts == 0) {
    return Status::InvalidInput(flag + ": shared_experts, and " + model + " has no shared experts");
  }
  return Status::Ok();
}

// Adam moments below fp32 are Megatron-LM's precision-aware optimizer: Adam only, under the
// distributed optimizer (Megatron-LM@d98e8a64dd megatron/core/optimizer/optimizer_config.py
// "--use-precision-aware-optimizer only supported with adam"; optimizer/__init__.py "only
// supported with distributed optimizer"), which fulcrum models as --framework megatron --zero 1.
Status ValidateMomentDtypes(const Training& t) {
  if (t.exp_avg_dtype == MomentDtype::kFp32 && t.exp_avg_sq_dtype == MomentDtype::kFp32) {
    return Status::Ok();
  }
  const std::string flags = "--exp-avg-dtype " + std::string(MomentDtypeName(t.exp_avg_dtype)) +
                            " --exp-avg-sq-dtype " +
                            std::string(MomentDtypeName(t.exp_avg_sq_dtype));
  if (t.framework != Framework::kMegatron || t.optimizer != Optimizer::kAdamW ||
      t.zero_stage != 1 || t.method != Method::kFull) {
    return Status::InvalidInput(
        flags +
        ": Megatron-LM's precision-aware optimizer, for --framework megatron --optimizer adamw "
        "--zero 1 (its distributed optimizer) and full training, found --framework " +
        std::string(FrameworkName(t.framework)) + " --optimizer " +
        std::string(OptimizerName(t.optimizer)) + " --zero " + Str(t.zero_stage) + " --method " +
        std::string(MethodName(t.method)));
  }
  return Status::Ok();
}

// TF1's graph optimizers (AdamWeightDecayOptimizer and LAMB, Adam-family) update fp32 variables
// replicated on every data-parallel rank (Horovod): full training with --optimizer adamw and no
// ZeRO sharding.
Status ValidateOptimizerKernels(const Training& t) {
  if (t.optimizer_kernels == OptimizerKernels::kFused) return Status::Ok();
  if (t.optimizer != Optimizer::kAdamW || t.zero_stage != 0 || t.method != Method::kFull) {
    return Status::InvalidInput(
        "--optimizer-kernels tf1-graph: TensorFlow 1's Adam-family graph optimizers on "
        "replicated fp32 variables, for --optimizer adamw --zero 0 --method full, found "
        "--optimizer " +
        std::string(OptimizerName(t.optimizer)) + " --zero " + Str(t.zero_stage) + " --method " +
        std::string(MethodName(t.method)));
  }
  return Status::Ok();
}

// flash-attn's fused cross entropy runs on the whole vocabulary of one GPU's logits: not Megatron's
// vocab-parallel loss, and only for a model with a language-model head.
Status ValidateCrossEntropy(const Model& m, const Training& t) {
  if (t.cross_entropy == CrossEntropy::kFramework) return Status::Ok();
  if (UsesMegatronModel(t.framework)) {
    return Status::InvalidInput(
        "--cross-entropy fused: flash-attn's cross entropy on one GPU's whole logits, not for "
        "--framework " +
        std::string(FrameworkName(t.framework)) +
        " (Megatron's vocab-parallel cross entropy is its own loss); use --cross-entropy "
        "framework");
  }
  if (m.kind == ModelKind::kGeneric) {
    return Status::InvalidInput(
        "--cross-entropy fused: a language model's loss over its vocabulary; a generic model has "
        "no vocabulary head");
  }
  return Status::Ok();
}

// --mean-seq-len, --head-tokens and --head-width: a shorter padded run and a head narrower than
// the vocabulary, for the transformer models (a generic model has no sequence or head).
Status ValidateRunShape(const Model& m, const Training& t) {
  FULCRUM_RETURN_IF_ERROR(AtLeast("--mean-seq-len", t.mean_seq_len, 0));
  FULCRUM_RETURN_IF_ERROR(AtLeast("--head-tokens", t.head_tokens, 0));
  FULCRUM_RETURN_IF_ERROR(AtLeast("--head-width", t.head_width, 0));
  const bool set = t.mean_seq_len > 0 || t.head_tokens > 0 || t.head_width > 0;
  if (!set) return Status::Ok();
  if (m.kind == ModelKind::kGeneric) {
    return Status::InvalidInput("model '" + m.name +
                                "' is generic (parameters + FLOPs only): --mean-seq-len, "
                                "--head-tokens and --head-width need a transformer");
  }
  if (t.mean_seq_len > t.seq_len) {
    return Refuse("mean_seq_len", "1.." + Str(t.seq_len), Str(t.mean_seq_len),
                  "--mean-seq-len " + Str(t.mean_seq_len) + " exceeds --seq-len " + Str(t.seq_len) +
                      " (the longest a batch is padded to)");
  }
  if (t.mean_seq_len > 0 && t.cp > 1) {
    return Status::InvalidInput(
        "--mean-seq-len needs --cp 1 (context parallelism splits "
        "sequences of one fixed length)");
  }
  if (t.head_tokens > RunSeqLen(t)) {
    return Refuse("head_tokens", "1.." + Str(RunSeqLen(t)), Str(t.head_tokens),
                  "--head-tokens " + Str(t.head_tokens) + " exceeds the tokens per sequence (" +
                      Str(RunSeqLen(t)) + ")");
  }
  return Status::Ok();
}

Status ValidateLayout(const Model& m, const Training& t, int64_t gpus) {
  if (gpus > 0 && GpuCount(t) != gpus) {
    return Status::InvalidInput("--tp x --pp x --cp x --dp = " + Str(t.tp) + " x " + Str(t.pp) +
                                " x " + Str(t.cp) + " x " + Str(t.dp) + " = " + Str(GpuCount(t)) +
                                ", but --gpus is " + Str(gpus) + "; they must be equal");
  }
  if (t.global_batch % (t.micro_batch * t.dp) != 0) {
    return Status::InvalidInput(
        "--global-batch " + Str(t.global_batch) + " must be a multiple of --micro-batch x dp = " +
        Str(t.micro_batch) + " x " + Str(t.dp) + " = " + Str(t.micro_batch * t.dp));
  }
  if (t.vpp > 1 && t.pp == 1) {
    return Status::InvalidInput("--vpp " + Str(t.vpp) + " needs pipeline parallelism (--pp > 1)");
  }
  if (t.sequence_parallel && t.tp == 1) {
    return Status::InvalidInput("--sequence-parallel needs tensor parallelism (--tp > 1)");
  }
  FULCRUM_RETURN_IF_ERROR(ValidateScheduleAndFp8(t));
  if (m.kind == ModelKind::kGeneric) {
    if (t.tp > 1 || t.pp > 1 || t.cp > 1 || t.ep > 1) {
      return Status::InvalidInput(
          "model '" + m.name +
          "' is generic (parameters + FLOPs only): use --tp 1 --pp 1 --cp 1 --ep 1");
    }
    return Status::Ok();
  }
  if (m.heads % t.tp != 0 || m.kv_heads % t.tp != 0) {
    return Status::InvalidInput("--tp " + Str(t.tp) + " must divide the attention heads (" +
                                Str(m.heads) + " heads, " + Str(m.kv_heads) + " kv-heads)");
  }
  FULCRUM_RETURN_IF_ERROR(ValidateStages(m, t));
  FULCRUM_RETURN_IF_ERROR(ValidateGroups(m, t));
  if (m.position == PositionKind::kLearned && t.seq_len > m.max_seq_len) {
    return Status::InvalidInput("--seq-len " + Str(t.seq_len) + " exceeds the model's learned " +
                                "position table (" + Str(m.max_seq_len) + " positions)");
  }
  return Status::Ok();
}

}  // namespace

StageLayers PipelineStageLayers(const Model& m, const Training& t) {
  StageLayers s;
  const int64_t layers = m.kind == ModelKind::kGeneric ? 1 : m.layers;
  if (t.pp <= 1) {
    s.first = s.last = layers;
    return s;
  }
  if (t.first_stage_layers > 0 || t.last_stage_layers > 0) {
    const int64_t given = (t.first_stage_layers > 0 ? 1 : 0) + (t.last_stage_layers > 0 ? 1 : 0);
    const int64_t others = t.pp - given;
    const int64_t rest = layers - t.first_stage_layers - t.last_stage_layers;
    const int64_t even = others > 0 ? rest / others : 0;
    s.first = t.first_stage_layers > 0 ? t.first_stage_layers : even;
    s.last = t.last_stage_layers > 0 ? t.last_stage_layers : even;
    s.middle = t.pp > 2 ? even : 0;
    return s;
  }
  // Floor or ceiling of layers / pp; the first and then the last stage take the floor.
  const int64_t floor = layers / t.pp;
  const int64_t ceiling = floor + (layers % t.pp != 0 ? 1 : 0);
  const int64_t floor_stages = t.pp - layers % t.pp;  // == pp when pp divides the layers
  s.first = floor;
  s.last = floor_stages >= 2 ? floor : ceiling;
  s.middle = t.pp > 2 ? (floor_stages >= t.pp ? floor : ceiling) : 0;
  return s;
}

bool FrameworkRunsLayout(Framework f, const Training& t) {
  // Context parallelism: Megatron-LM (--context-parallel-size) and torchtitan's FSDP2
  // (context_parallel_degree); expert parallelism: Megatron-Core (--expert-model-parallel-size),
  // DeepSpeed-MoE (ep_size) and torchtitan (expert_parallel_degree). HSDP: FSDP only. FSDP with
  // tensor and pipeline parallelism: torchtitan (tensor_parallel_degree, pipeline_parallel_degree;
  // 1F1B by default, Interleaved1F1B with more than one stage per rank).
  const bool hsdp = t.dp_shard > 0 && t.dp_shard != t.dp;
  switch (f) {
    case Framework::kMegatron:
      return t.zero_stage <= 1 && !hsdp;
    case Framework::kDeepSpeed:
      return t.tp == 1 && t.cp == 1 && !hsdp && (t.pp == 1 || t.zero_stage <= 1);
    case Framework::kFsdp:
      return t.zero_stage != 1;
    case Framework::kHf:
    case Framework::kDdp:
      return t.tp == 1 && t.pp == 1 && t.cp == 1 && t.ep == 1 && !hsdp && t.zero_stage == 0;
    case Framework::kMegatronFsdp:
      return t.zero_stage >= 2 && t.pp == 1;
    case Framework::kMegatronDeepSpeed:
      return t.zero_stage <= 1 && t.cp == 1 && !hsdp;
  }
  return false;
}

CheckpointFormat DefaultCheckpointFormat(Framework f) {
  switch (f) {
    case Framework::kMegatron:
      return CheckpointFormat::kTorchDist;
    case Framework::kMegatronFsdp:
      return CheckpointFormat::kFsdpDtensor;
    case Framework::kDeepSpeed:
    case Framework::kMegatronDeepSpeed:
      return CheckpointFormat::kDeepSpeed;
    case Framework::kFsdp:
      return CheckpointFormat::kDcp;
    case Framework::kHf:
    case Framework::kDdp:
      return CheckpointFormat::kSafetensors;
  }
  return CheckpointFormat::kTorchDist;
}

CheckpointFormat ResolvedCheckpointFormat(const Training& t) {
  return t.checkpoint_format == CheckpointFormat::kDefault ? DefaultCheckpointFormat(t.framework)
                                                           : t.checkpoint_format;
}

bool FrameworkWritesFormat(Framework f, CheckpointFormat format) {
  if (format == CheckpointFormat::kDefault) return true;
  switch (f) {
    case Framework::kMegatron:
      return format == CheckpointFormat::kTorchDist || format == CheckpointFormat::kTorch;
    case Framework::kMegatronFsdp:
      return format == CheckpointFormat::kFsdpDtensor || format == CheckpointFormat::kTorchDist;
    case Framework::kDeepSpeed:
    case Framework::kMegatronDeepSpeed:
      return format == CheckpointFormat::kDeepSpeed;
    case Framework::kFsdp:
      return format == CheckpointFormat::kDcp || format == CheckpointFormat::kFsdpFull;
    case Framework::kHf:
    case Framework::kDdp:
      return format == CheckpointFormat::kSafetensors;
  }
  return false;
}

Framework DefaultFrameworkFor(const Training& t) {
  if (t.zero_stage == 3 || (t.dp_shard > 0 && t.dp_shard != t.dp)) return Framework::kFsdp;
  if (t.tp > 1 || t.pp > 1) return t.zero_stage == 2 ? Framework::kFsdp : Framework::kMegatron;
  if (t.cp > 1)
    return t.zero_stage == 0 || t.zero_stage == 2 ? Framework::kFsdp : Framework::kMegatron;
  if (t.method != Method::kFull && t.zero_stage == 0) return Framework::kHf;
  return Framework::kDeepSpeed;
}

Status Validate(const Model& model, const Training& training, int64_t gpus) {
  FULCRUM_RETURN_IF_ERROR(ValidateModel(model));
  FULCRUM_RETURN_IF_ERROR(ValidateSizes(training));
  FULCRUM_RETURN_IF_ERROR(ValidateLayout(model, training, gpus));
  FULCRUM_RETURN_IF_ERROR(ValidateRunShape(model, training));
  FULCRUM_RETURN_IF_ERROR(ValidateRecomputeModules(model, training));
  FULCRUM_RETURN_IF_ERROR(ValidateMomentDtypes(training));
  FULCRUM_RETURN_IF_ERROR(ValidateOptimizerKernels(training));
  FULCRUM_RETURN_IF_ERROR(ValidateCrossEntropy(model, training));
  FULCRUM_RETURN_IF_ERROR(ValidateActivationFp8InputStore(model, training));
  FULCRUM_RETURN_IF_ERROR(ValidateFp8ActivationCache(training));
  FULCRUM_RETURN_IF_ERROR(ValidateStoreParamRemainders(training));
  FULCRUM_RETURN_IF_ERROR(ValidateOverlapComm(training));
  FULCRUM_RETURN_IF_ERROR(ValidateBackwardPrefetch(training));
  FULCRUM_RETURN_IF_ERROR(ValidateHfGradientCheckpointing(training));
  FULCRUM_RETURN_IF_ERROR(ValidateMoeA2aOverlap(model, training));
  FULCRUM_RETURN_IF_ERROR(ValidateMoeRouting(model, training));
  FULCRUM_RETURN_IF_ERROR(ValidatePipelineSchedule(model, training));
  if (!FrameworkRunsLayout(training.framework, training)) {
    return Status::InvalidInput(
        "--framework " + std::string(FrameworkName(training.framework)) + " cannot run --tp " +
        Str(training.tp) + " --pp " + Str(training.pp) + " --cp " + Str(training.cp) + " --ep " +
        Str(training.ep) + " --zero " + Str(training.zero_stage) +
        (training.dp_shard > 0 ? " --dp-shard " + Str(training.dp_shard) : std::string()) +
        " (Megatron-LM: ZeRO <= 1 via its distributed optimizer, cp and ep; DeepSpeed: ZeRO 0-3, "
        "no tp or cp, ZeRO <= 1 with pp; FSDP: ZeRO 0, 2 or 3 (NO_SHARD, SHARD_GRAD_OP, "
        "FULL_SHARD; HYBRID_SHARD with --dp-shard) with tp, pp, cp and ep; hf: ZeRO 0, no "
        "tp/pp/cp/ep; megatron-fsdp: ZeRO 2 or 3 with tp, cp and ep, no pp; "
        "megatron-deepspeed: ZeRO <= 1 with tp and pp, no cp)");
  }
  if (!FrameworkWritesFormat(training.framework, training.checkpoint_format)) {
    ErrorDetail detail;
    detail.field = "checkpoint_format";
    detail.expected = "a format " + std::string(FrameworkName(training.framework)) + " writes";
    detail.found = std::string(CheckpointFormatName(training.checkpoint_format));
    return Status::InvalidInput(
               "--checkpoint-format " + detail.found + ": --framework " +
               std::string(FrameworkName(training.framework)) +
               " does not write it (megatron: torch_dist, torch; megatron-fsdp: fsdp_dtensor, "
               "torch_dist; deepspeed, megatron-deepspeed: deepspeed; fsdp: dcp, fsdp_full; hf, "
               "ddp: safetensors)")
        .WithDetail(detail);
  }
  return Status::Ok();
}

std::string_view PrecisionName(Precision p) {
  switch (p) {
    case Precision::kFp32:
      return "fp32";
    case Precision::kFp16Mixed:
      return "fp16";
    case Precision::kBf16Mixed:
      return "bf16";
    case Precision::kPureBf16:
      return "pure-bf16";
    case Precision::kTf32:
      return "tf32";
    case Precision::kFp8:
      return "fp8";
  }
  return "?";
}

std::string_view OptimizerName(Optimizer o) {
  switch (o) {
    case Optimizer::kAdamW:
      return "adamw";
    case Optimizer::kSgdMomentum:
      return "sgd";
    case Optimizer::kAdam8bit:
      return "adam8bit";
  }
  return "?";
}

std::string_view MethodName(Method m) {
  switch (m) {
    case Method::kFull:
      return "full";
    case Method::kLora:
      return "lora";
    case Method::kQlora:
      return "qlora";
  }
  return "?";
}

std::string_view RecomputeName(Recompute r) {
  switch (r) {
    case Recompute::kNone:
      return "none";
    case Recompute::kSelective:
      return "selective";
    case Recompute::kFull:
      return "full";
  }
  return "?";
}

std::string_view FrameworkName(Framework f) {
  switch (f) {
    case Framework::kMegatron:
      return "megatron";
    case Framework::kDeepSpeed:
      return "deepspeed";
    case Framework::kFsdp:
      return "fsdp";
    case Framework::kHf:
      return "hf";
    case Framework::kDdp:
      return "ddp";
    case Framework::kMegatronFsdp:
      return "megatron-fsdp";
    case Framework::kMegatronDeepSpeed:
      return "megatron-deepspeed";
  }
  return "?";
}

std::string_view CheckpointFormatName(CheckpointFormat f) {
  switch (f) {
    case CheckpointFormat::kDefault:
      return "default";
    case CheckpointFormat::kTorchDist:
      return "torch_dist";
    case CheckpointFormat::kTorch:
      return "torch";
    case CheckpointFormat::kFsdpDtensor:
      return "fsdp_dtensor";
    case CheckpointFormat::kDcp:
      return "dcp";
    case CheckpointFormat::kFsdpFull:
      return "fsdp_full";
    case CheckpointFormat::kDeepSpeed:
      return "deepspeed";
    case CheckpointFormat::kSafetensors:
      return "safetensors";
  }
  return "?";
}

namespace {
Status Expected(const char* flag, const char* choices, std::string_view found) {
  return Status::InvalidInput(std::string(flag) + ": expected " + choices + ", found '" +
                              std::string(found) + "'");
}

// Of `values`, the one whose name (`name_of`) is `text` in any case; else `flag`'s choices.
template <typename E>
Result<E> ParseNamed(std::string_view text, std::initializer_list<E> values,
                     std::string_view (*name_of)(E), const char* flag, const char* choices) {
  const std::string t = ToLower(text);
  for (E v : values) {
    if (t == ToLower(name_of(v))) return v;
  }
  return Expected(flag, choices, text);
}
}  // namespace

Result<Precision> ParsePrecision(std::string_view text) {
  const std::string t = ToLower(text);
  if (t == "fp32") return Precision::kFp32;
  if (t == "fp16" || t == "fp16-mixed") return Precision::kFp16Mixed;
  if (t == "bf16" || t == "bf16-mixed") return Precision::kBf16Mixed;
  if (t == "pure-bf16") return Precision::kPureBf16;
  if (t == "fp8") return Precision::kFp8;
  if (t == "tf32") return Precision::kTf32;
  return Expected("--precision", "bf16, fp16, fp8, fp32, tf32 or pure-bf16", text);
}

Result<Optimizer> ParseOptimizer(std::string_view text) {
  const std::string t = ToLower(text);
  if (t == "adamw" || t == "adam") return Optimizer::kAdamW;
  if (t == "sgd") return Optimizer::kSgdMomentum;
  if (t == "adam8bit") return Optimizer::kAdam8bit;
  return Expected("--optimizer", "adamw, sgd or adam8bit", text);
}

Result<Method> ParseMethod(std::string_view text) {
  const std::string t = ToLower(text);
  if (t == "full") return Method::kFull;
  if (t == "lora") return Method::kLora;
  if (t == "qlora") return Method::kQlora;
  return Expected("--method", "full, lora or qlora", text);
}

Result<Recompute> ParseRecompute(std::string_view text) {
  const std::string t = ToLower(text);
  if (t == "none") return Recompute::kNone;
  if (t == "selective") return Recompute::kSelective;
  if (t == "full") return Recompute::kFull;
  return Expected("--recompute", "none, selective or full", text);
}

namespace {
// Megatron-LM's names of the RecomputeModule bits, bit i at index i, in the order of its
// recompute_modules docstring (transformer_config.py@d98e8a64dd).
constexpr const char* kRecomputeModuleNames[kRecomputeModuleCount] = {
    "core_attn", "moe_act", "layernorm", "mla_up_proj", "mlp", "moe", "shared_experts"};
// Megatron's other choices, for model families fulcrum does not model (GatedDeltaNet /
// GatedDeltaProduct attention, hyper-connections).
constexpr const char* kUnmodelledRecomputeModules[] = {"gdn_norm_out", "gdp_in_proj", "gdp_qkv",
                                                       "mhc"};
}  // namespace

Result<uint32_t> ParseRecomputeModules(std::string_view text) {
  std::vector<std::string> known(std::begin(kRecomputeModuleNames),
                                 std::end(kRecomputeModuleNames));
  uint32_t modules = 0;
  for (const std::string& part : Split(std::string(text), ',')) {
    const std::string name = ToLower(Trim(part));
    if (name.empty()) continue;
    int bit = -1;
    for (int i = 0; i < kRecomputeModuleCount; ++i) {
      if (name == kRecomputeModuleNames[i]) bit = i;
    }
    if (bit >= 0) {
      modules |= 1u << bit;
      continue;
    }
    for (const char* unmodelled : kUnmodelledRecomputeModules) {
      if (name == unmodelled) {
        return Status::InvalidInput("--recompute-modules: " + name +
                                    " recomputes a part of a model family fulcrum does not "
                                    "model; expected some of " +
                                    JoinNames(known));
      }
    }
    ErrorDetail detail;
    detail.field = "--recompute-modules";
    detail.expected = "Megatron-LM's module names, some of " + JoinNames(known);
    detail.found = name;
    detail.nearest = NearestNames(name, known);
    return InputError(detail);
  }
  if (modules == 0) {
    return Status::InvalidInput("--recompute-modules: expected a comma-separated list of some of " +
                                JoinNames(known) + ", found '" + std::string(text) + "'");
  }
  return modules;
}

std::string RecomputeModulesName(uint32_t modules) {
  std::string out;
  for (int i = 0; i < kRecomputeModuleCount; ++i) {
    if (!(modules & (1u << i))) continue;
    if (!out.empty()) out += ',';
    out += kRecomputeModuleNames[i];
  }
  return out;
}

Result<Framework> ParseFramework(std::string_view text) {
  const std::string t = ToLower(text);
  if (t == "megatron") return Framework::kMegatron;
  if (t == "deepspeed") return Framework::kDeepSpeed;
  if (t == "fsdp") return Framework::kFsdp;
  if (t == "hf") return Framework::kHf;
  if (t == "ddp") return Framework::kDdp;
  if (t == "megatron-fsdp") return Framework::kMegatronFsdp;
  if (t == "megatron-deepspeed") return Framework::kMegatronDeepSpeed;
  return Expected("--framework",
                  "megatron, deepspeed, fsdp, ddp, hf, megatron-fsdp or megatron-deepspeed", text);
}

Result<FrameworkMask> ParseFrameworkList(std::string_view text) {
  FrameworkMask mask = 0;
  for (const std::string& part : Split(std::string(text), ',')) {
    const std::string name(Trim(part));
    if (name.empty()) continue;
    FULCRUM_ASSIGN_OR_RETURN(Framework f, ParseFramework(name));
    mask |= FrameworkBit(f);
  }
  if (mask == 0) {
    return Expected("--framework",
                    "megatron, deepspeed, fsdp, ddp, hf, megatron-fsdp or megatron-deepspeed",
                    text);
  }
  return mask;
}

std::string FrameworkListName(FrameworkMask mask) {
  std::string out;
  for (int i = 0; i < kFrameworkCount; ++i) {
    const auto f = static_cast<Framework>(i);
    if (mask & FrameworkBit(f)) out += (out.empty() ? "" : ", ") + std::string(FrameworkName(f));
  }
  return out;
}

Result<BackwardPrefetch> ParseBackwardPrefetch(std::string_view text) {
  return ParseNamed(
      text, {BackwardPrefetch::kPre, BackwardPrefetch::kPost, BackwardPrefetch::kNone},
      BackwardPrefetchName, "--backward-prefetch", "BACKWARD_PRE, BACKWARD_POST or NO_PREFETCH");
}

std::string_view BackwardPrefetchName(BackwardPrefetch p) {
  switch (p) {
    case BackwardPrefetch::kPre:
      return "BACKWARD_PRE";
    case BackwardPrefetch::kPost:
      return "BACKWARD_POST";
    case BackwardPrefetch::kNone:
      return "NO_PREFETCH";
  }
  return "?";
}

Result<MomentDtype> ParseMomentDtype(std::string_view text, const char* flag) {
  const std::string t = ToLower(text);
  if (t == "fp32") return MomentDtype::kFp32;
  if (t == "fp16") return MomentDtype::kFp16;
  if (t == "bf16") return MomentDtype::kBf16;
  if (t == "fp8") return MomentDtype::kFp8;
  return Expected(flag, "fp32, fp16, bf16 or fp8", text);
}

std::string_view MomentDtypeName(MomentDtype d) {
  switch (d) {
    case MomentDtype::kFp32:
      return "fp32";
    case MomentDtype::kFp16:
      return "fp16";
    case MomentDtype::kBf16:
      return "bf16";
    case MomentDtype::kFp8:
      return "fp8";
  }
  return "?";
}

Result<OptimizerKernels> ParseOptimizerKernels(std::string_view text) {
  return ParseNamed(text, {OptimizerKernels::kFused, OptimizerKernels::kTf1Graph},
                    OptimizerKernelsName, "--optimizer-kernels", "fused or tf1-graph");
}

std::string_view OptimizerKernelsName(OptimizerKernels k) {
  return k == OptimizerKernels::kTf1Graph ? "tf1-graph" : "fused";
}

Result<CrossEntropy> ParseCrossEntropy(std::string_view text) {
  return ParseNamed(text, {CrossEntropy::kFramework, CrossEntropy::kFused}, CrossEntropyName,
                    "--cross-entropy", "framework or fused");
}

std::string_view CrossEntropyName(CrossEntropy c) {
  return c == CrossEntropy::kFused ? "fused" : "framework";
}

Result<PipelineSchedule> ParsePipelineSchedule(std::string_view text) {
  return ParseNamed(
      text, {PipelineSchedule::k1F1B, PipelineSchedule::kDualPipe, PipelineSchedule::kDualPipeV},
      PipelineScheduleName, "--pipeline-schedule", "1f1b, dualpipe or dualpipev");
}

Result<MoeDispatcher> ParseMoeDispatcher(std::string_view text) {
  return ParseNamed(text, {MoeDispatcher::kAllToAll, MoeDispatcher::kFlex}, MoeDispatcherName,
                    "--moe-token-dispatcher-type", "alltoall or flex (allgather is not modelled)");
}

std::string_view MoeDispatcherName(MoeDispatcher d) {
  return d == MoeDispatcher::kFlex ? "flex" : "alltoall";
}

std::string_view PipelineScheduleName(PipelineSchedule s) {
  switch (s) {
    case PipelineSchedule::k1F1B:
      return "1f1b";
    case PipelineSchedule::kDualPipe:
      return "dualpipe";
    case PipelineSchedule::kDualPipeV:
      return "dualpipev";
  }
  return "?";
}

Result<GradPrecision> ParseGradPrecision(std::string_view text) {
  const std::string t = ToLower(text);
  if (t == "fp16") return GradPrecision::kFp16;
  if (t == "bf16") return GradPrecision::kBf16;
  if (t == "fp32") return GradPrecision::kFp32;
  return Expected("--grad-precision", "fp16, bf16 or fp32", text);
}

Result<CheckpointFormat> ParseCheckpointFormat(std::string_view text) {
  if (ToLower(text) == "torch_dcp") return CheckpointFormat::kDcp;  // Megatron-LM's name for it
  return ParseNamed(
      text,
      {CheckpointFormat::kDefault, CheckpointFormat::kTorchDist, CheckpointFormat::kTorch,
       CheckpointFormat::kFsdpDtensor, CheckpointFormat::kDcp, CheckpointFormat::kFsdpFull,
       CheckpointFormat::kDeepSpeed, CheckpointFormat::kSafetensors},
      CheckpointFormatName, "--checkpoint-format",
      "default, torch_dist, torch, fsdp_dtensor, dcp, fsdp_full, deepspeed or "
      "safetensors");
}

namespace {

bool LoraTargetsMatrix(uint32_t targets, AttentionRole role) {
  switch (role) {
    case AttentionRole::kQuery:
      return (targets & kLoraQ) != 0;
    case AttentionRole::kKey:
      return (targets & kLoraK) != 0;
    case AttentionRole::kValue:
      return (targets & kLoraV) != 0;
    case AttentionRole::kKeyValue:
      return (targets & (kLoraK | kLoraV)) != 0;
    case AttentionRole::kOutput:
      return (targets & kLoraO) != 0;
  }
  return false;
}

double LoraMlpMatrices(const Model& m) { return m.mlp == MlpKind::kSwiglu ? 3 : 2; }

}  // namespace

double LoraParameterCountPerLayer(const Model& m, const Training& t) {
  const double r = static_cast<double>(t.lora_rank);
  const AttentionMatrices matrices = AttentionProjectionMatrices(m);
  double params = 0;
  for (int i = 0; i < matrices.count; ++i) {
    const AttentionMatrix& a = matrices.items[static_cast<size_t>(i)];
    if (LoraTargetsMatrix(t.lora_targets, a.role)) {
      params += r * (static_cast<double>(a.in) + static_cast<double>(a.out));
    }
  }
  if (t.lora_targets & kLoraMlp) {
    params += LoraMlpMatrices(m) * r *
              (static_cast<double>(m.hidden) + static_cast<double>(m.ffn_hidden));
  }
  return params;
}

double LoraAdapterCountPerLayer(const Model& m, const Training& t) {
  const AttentionMatrices matrices = AttentionProjectionMatrices(m);
  double count = 0;
  for (int i = 0; i < matrices.count; ++i) {
    if (LoraTargetsMatrix(t.lora_targets, matrices.items[static_cast<size_t>(i)].role)) count += 1;
  }
  if (t.lora_targets & kLoraMlp) count += LoraMlpMatrices(m);
  return count;
}

}  // namespace fulcrum::workload
