#include "workload/training.h"

#include <string>

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
  FULCRUM_RETURN_IF_ERROR(AtLeast("--dp", t.dp, 1));
  FULCRUM_RETURN_IF_ERROR(AtLeast("--micro-batch", t.micro_batch, 1));
  FULCRUM_RETURN_IF_ERROR(AtLeast("--global-batch", t.global_batch, 1));
  FULCRUM_RETURN_IF_ERROR(AtLeast("--seq-len", t.seq_len, 1));
  if (t.zero_stage < 0 || t.zero_stage > 3) {
    return Status::InvalidInput("--zero: expected 0, 1, 2 or 3, found " + Str(t.zero_stage));
  }
  if (t.method != Method::kFull) FULCRUM_RETURN_IF_ERROR(AtLeast("--lora-rank", t.lora_rank, 1));
  return Status::Ok();
}

Status ValidateLayout(const Model& m, const Training& t, int64_t gpus) {
  if (gpus > 0 && GpuCount(t) != gpus) {
    return Status::InvalidInput("--tp x --pp x --dp = " + Str(t.tp) + " x " + Str(t.pp) + " x " +
                                Str(t.dp) + " = " + Str(GpuCount(t)) + ", but --gpus is " +
                                Str(gpus) + "; they must be equal");
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
  if (m.kind == ModelKind::kGeneric) {
    if (t.tp > 1 || t.pp > 1) {
      return Status::InvalidInput("model '" + m.name +
                                  "' is generic (parameters + FLOPs only): use --tp 1 --pp 1");
    }
    return Status::Ok();
  }
  if (m.heads % t.tp != 0 || m.kv_heads % t.tp != 0) {
    return Status::InvalidInput("--tp " + Str(t.tp) + " must divide the attention heads (" +
                                Str(m.heads) + " heads, " + Str(m.kv_heads) + " kv-heads)");
  }
  if (m.layers % (t.pp * t.vpp) != 0) {
    return Status::InvalidInput("layers (" + Str(m.layers) +
                                ") must be divisible by --pp x --vpp = " + Str(t.pp) + " x " +
                                Str(t.vpp) + " = " + Str(t.pp * t.vpp));
  }
  if (m.position == PositionKind::kLearned && t.seq_len > m.max_seq_len) {
    return Status::InvalidInput("--seq-len " + Str(t.seq_len) + " exceeds the model's learned " +
                                "position table (" + Str(m.max_seq_len) + " positions)");
  }
  return Status::Ok();
}

}  // namespace

bool FrameworkRunsLayout(Framework f, const Training& t) {
  switch (f) {
    case Framework::kMegatron:
      return t.zero_stage <= 1;
    case Framework::kDeepSpeed:
      return t.tp == 1 && (t.pp == 1 || t.zero_stage <= 1);
    case Framework::kFsdp:
      return t.tp == 1 && t.pp == 1 && t.zero_stage != 1;
    case Framework::kHf:
      return t.tp == 1 && t.pp == 1 && t.zero_stage == 0;
  }
  return false;
}

Framework DefaultFrameworkFor(const Training& t) {
  if (t.tp > 1 || t.pp > 1) return Framework::kMegatron;
  if (t.zero_stage == 3) return Framework::kFsdp;
  if (t.method != Method::kFull && t.zero_stage == 0) return Framework::kHf;
  return Framework::kDeepSpeed;
}

Status Validate(const Model& model, const Training& training, int64_t gpus) {
  FULCRUM_RETURN_IF_ERROR(ValidateModel(model));
  FULCRUM_RETURN_IF_ERROR(ValidateSizes(training));
  FULCRUM_RETURN_IF_ERROR(ValidateLayout(model, training, gpus));
  if (!FrameworkRunsLayout(training.framework, training)) {
    return Status::InvalidInput(
        "--framework " + std::string(FrameworkName(training.framework)) + " cannot run --tp " +
        Str(training.tp) + " --pp " + Str(training.pp) + " --zero " + Str(training.zero_stage) +
        " (Megatron-LM: ZeRO <= 1 via its distributed optimizer; DeepSpeed: ZeRO 0-3, no tp, "
        "ZeRO <= 1 with pp; FSDP: ZeRO 0, 2 or 3 (NO_SHARD, SHARD_GRAD_OP, FULL_SHARD), no tp/pp; "
        "hf: ZeRO 0, no tp/pp)");
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
  }
  return "?";
}

namespace {
Status Expected(const char* flag, const char* choices, std::string_view found) {
  return Status::InvalidInput(std::string(flag) + ": expected " + choices + ", found '" +
                              std::string(found) + "'");
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

Result<Framework> ParseFramework(std::string_view text) {
  const std::string t = ToLower(text);
  if (t == "megatron") return Framework::kMegatron;
  if (t == "deepspeed") return Framework::kDeepSpeed;
  if (t == "fsdp") return Framework::kFsdp;
  if (t == "hf") return Framework::kHf;
  return Expected("--framework", "megatron, deepspeed, fsdp or hf", text);
}

Result<GradPrecision> ParseGradPrecision(std::string_view text) {
  const std::string t = ToLower(text);
  if (t == "fp16") return GradPrecision::kFp16;
  if (t == "bf16") return GradPrecision::kBf16;
  if (t == "fp32") return GradPrecision::kFp32;
  return Expected("--grad-precision", "fp16, bf16 or fp32", text);
}

}  // namespace fulcrum::workload
