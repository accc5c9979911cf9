#include "estimate/fit.h"

#include <algorithm>
#include <optional>

#include "core/parse.h"
#include "core/table.h"

namespace fulcrum::estimate {
namespace {

using workload::Training;

std::string Str(int64_t v) { return std::to_string(v); }

// Evaluates `in` when it is a valid setup; nullopt when invalid or it still does not fit.
// A way out whose sharding the current framework lacks runs under one that has it (the
// framework `estimate` picks for the same flags when none is named).
std::optional<EstimateResult> TryFit(const EstimateInput& given) {
  EstimateInput in = given;
  if (!workload::FrameworkRunsLayout(in.training.framework, in.training)) {
    in.training.framework = workload::DefaultFrameworkFor(in.training);
    // Megatron-Core's --recompute-modules do not exist there: its default, core attention.
    if (!workload::UsesMegatronModel(in.training.framework)) {
      in.training.recompute_modules = workload::kRecomputeCoreAttn;
    }
    // Nor Megatron's precision-aware optimizer: fp32 moments.
    in.training.exp_avg_dtype = workload::MomentDtype::kFp32;
    in.training.exp_avg_sq_dtype = workload::MomentDtype::kFp32;
    // Nor apex's param remainders (NeMo's Megatron only): a full fp32 master.
    in.training.store_param_remainders = false;
  }
  if (!workload::Validate(in.model, in.training, in.gpus).ok()) return std::nullopt;
  EstimateResult r = Evaluate(in);
  // A way out fits with the allocator's reserve too: tight only by the reserve is not out.
  if (r.verdict == FitVerdict::kDoesNotFit || r.headroom_fraction < 0) return std::nullopt;
  return r;
}

// Keeps the global batch when it divides evenly, otherwise the nearest larger multiple.
void KeepGlobalBatch(Training& t) {
  const int64_t step = t.micro_batch * t.dp;
  if (t.global_batch % step != 0) t.global_batch = (t.global_batch / step + 1) * step;
}

struct Completed {
  EstimateResult result;
  std::string flags;   // extra flags (micro-batch / recompute) added to the change
  std::string change;  // extra words for the sentence
};

// Makes a structural change fit if it can with the least extra cost: the same micro-batch and
// recompute first, then smaller micro-batches (more gradient accumulation, same samples per
// step), then selective and full recompute (extra compute).
std::optional<Completed> Complete(const EstimateInput& in) {
  const Training& t = in.training;
  for (workload::Recompute mode :
       {workload::Recompute::kNone, workload::Recompute::kSelective, workload::Recompute::kFull}) {
    if (static_cast<int>(mode) < static_cast<int>(t.recompute)) continue;
    for (int64_t mb = t.micro_batch; mb >= 1; --mb) {
      EstimateInput c = in;
      c.training.recompute = mode;
      c.training.micro_batch = mb;
      if (c.training.global_batch % (mb * c.training.dp) != 0) continue;
      if (auto r = TryFit(c)) {
        Completed done{*r, "", ""};
        if (mb != t.micro_batch) {
          done.flags += " --micro-batch " + Str(mb);
          done.change += ", micro-batch " + Str(mb);
        }
        if (mode != t.recompute) {
          const std::string name(workload::RecomputeName(mode));
          done.flags += " --recompute " + name;
          done.change += ", " + name + " recompute";
        }
        return done;
      }
    }
  }
  return std::nullopt;
}

void LargestMicroBatch(const EstimateInput& in, std::vector<WayOut>& out) {
  for (int64_t mb = in.training.micro_batch - 1; mb >= 1; --mb) {
    EstimateInput c = in;
    c.training.micro_batch = mb;
    if (c.training.global_batch % (mb * c.training.dp) != 0) continue;
    if (auto r = TryFit(c)) {
      out.push_back({"micro-batch",
                     "largest micro-batch that fits: " + Str(mb) + " (gradient accumulation " +
                         Str(workload::MicroBatchesPerStep(c.training)) + ")",
                     "--micro-batch " + Str(mb), *r});
      return;
    }
  }
}

void Recompute(const EstimateInput& in, std::vector<WayOut>& out) {
  for (workload::Recompute mode : {workload::Recompute::kSelective, workload::Recompute::kFull}) {
    if (static_cast<int>(mode) <= static_cast<int>(in.training.recompute)) continue;
    EstimateInput c = in;
    c.training.recompute = mode;
    if (auto r = TryFit(c)) {
      const std::string name(workload::RecomputeName(mode));
      out.push_back({"recompute", name + " activation recompute", "--recompute " + name, *r});
      return;
    }
  }
}

void Zero3(const EstimateInput& in, std::vector<WayOut>& out) {
  const Training& t = in.training;
  std::vector<int64_t> degrees = {t.dp};
  for (int64_t d = 2; d <= 4096; d *= 2) {
    if (d > t.dp) degrees.push_back(d);
  }
  for (int64_t dp : degrees) {
    if (dp == t.dp && t.zero_stage == 3) continue;
    EstimateInput c = in;
    c.training.zero_stage = 3;
    c.training.dp = dp;
    c.gpus = workload::GpuCount(c.training);
    KeepGlobalBatch(c.training);
    if (auto done = Complete(c)) {
      out.push_back({"zero3",
                     "ZeRO-3 / FSDP full shard over " + Str(dp) + " data-parallel ranks (" +
                         Str(c.gpus) + " GPUs)" + done->change,
                     "--zero 3 --gpus " + Str(c.gpus) + " --dp " + Str(dp) + " --global-batch " +
                         Str(c.training.global_batch) + done->flags,
                     done->result});
      return;
    }
  }
}

void TensorParallel(const EstimateInput& in, std::vector<WayOut>& out) {
  for (int64_t tp = in.training.tp * 2; tp <= in.gpus_per_node; tp *= 2) {
    EstimateInput c = in;
    c.training.tp = tp;
    c.training.sequence_parallel = true;
    c.gpus = workload::GpuCount(c.training);
    if (auto done = Complete(c)) {
      out.push_back({"tensor-parallel",
                     "tensor parallel " + Str(tp) + " with sequence parallelism (" + Str(c.gpus) +
                         " GPUs)" + done->change,
                     "--tp " + Str(tp) + " --sequence-parallel --gpus " + Str(c.gpus) + done->flags,
                     done->result});
      return;
    }
  }
}

// Long sequences: split each sequence over cp GPUs of the node (activations and logits / cp),
// from 8k tokens where they dominate.
constexpr int64_t kContextParallelMinSeqLen = 8192;

void ContextParallel(const EstimateInput& in, std::vector<WayOut>& out) {
  const Training& t = in.training;
  if (in.model.kind == workload::ModelKind::kGeneric || t.seq_len < kContextParallelMinSeqLen) {
    return;
  }
  for (int64_t cp = t.cp * 2; cp * t.tp <= in.gpus_per_node; cp *= 2) {
    if (t.seq_len % (2 * cp) != 0) continue;
    EstimateInput c = in;
    c.training.cp = cp;
    // Carved out of dp where it divides (the same GPUs), else on more GPUs.
    if (t.dp % cp == 0) c.training.dp = t.dp / cp;
    c.gpus = workload::GpuCount(c.training);
    KeepGlobalBatch(c.training);
    if (auto done = Complete(c)) {
      out.push_back({"context-parallel",
                     "context parallel " + Str(cp) + ": each GPU holds " + Str(t.seq_len / cp) +
                         " of the " + Str(t.seq_len) + " tokens (" + Str(c.gpus) + " GPUs)" +
                         done->change,
                     "--cp " + Str(cp) + " --gpus " + Str(c.gpus) + " --dp " + Str(c.training.dp) +
                         " --global-batch " + Str(c.training.global_batch) + done->flags,
                     done->result});
      return;
    }
  }
}

void Adapters(const EstimateInput& in, std::vector<WayOut>& out) {
  for (workload::Method m : {workload::Method::kLora, workload::Method::kQlora}) {
    if (in.training.method == m || in.model.kind == workload::ModelKind::kGeneric) continue;
    if (in.training.method == workload::Method::kQlora) continue;
    EstimateInput c = in;
    c.training.method = m;
    if (auto done = Complete(c)) {
      const std::string name(workload::MethodName(m));
      out.push_back({name,
                     (m == workload::Method::kLora ? "LoRA" : "QLoRA (4-bit base)") +
                         std::string(" rank ") + Str(c.training.lora_rank) +
                         " on every linear layer" + done->change,
                     "--method " + name + done->flags, done->result});
      return;  // QLoRA only when LoRA does not fit
    }
  }
}

void LargerGpu(const EstimateInput& in, const catalog::Catalog& cat, std::vector<WayOut>& out) {
  std::vector<const catalog::Gpu*> larger;
  for (const catalog::Gpu& g : cat.gpus()) {
    if (g.memory_gib > in.gpu.memory_gib) larger.push_back(&g);
  }
  // Same vendor first (the software stack stays the same), then by memory size.
  std::stable_sort(
      larger.begin(), larger.end(), [&in](const catalog::Gpu* a, const catalog::Gpu* b) {
        const bool a_other = a->vendor != in.gpu.vendor, b_other = b->vendor != in.gpu.vendor;
        if (a_other != b_other) return b_other;
        return a->memory_gib < b->memory_gib;
      });
  for (const catalog::Gpu* g : larger) {
    EstimateInput c = in;
    c.gpu = *g;
    if (auto done = Complete(c)) {
      out.push_back({"gpu",
                     "a larger GPU: " + g->name + " (" + FormatNumber(g->memory_gib, 0) + " GiB)" +
                         done->change,
                     "--gpu " + g->name + done->flags, done->result});
      return;
    }
  }
}

}  // namespace

std::vector<WayOut> FindWaysOut(const EstimateInput& input, const catalog::Catalog& catalog) {
  std::vector<WayOut> ways;
  LargestMicroBatch(input, ways);
  Recompute(input, ways);
  Zero3(input, ways);
  TensorParallel(input, ways);
  ContextParallel(input, ways);
  Adapters(input, ways);
  LargerGpu(input, catalog, ways);
  return ways;
}

}  // namespace fulcrum::estimate
