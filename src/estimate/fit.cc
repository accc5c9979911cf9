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
std::optional<EstimateResult> TryFit(const EstimateInput& in) {
  if (!workload::Validate(in.model, in.training, in.gpus).ok()) return std::nullopt;
  EstimateResult r = Evaluate(in);
  if (r.verdict == FitVerdict::kDoesNotFit) return std::nullopt;
  return r;
}

// Keeps the global batch when it divides evenly, otherwise the nearest larger multiple.
void KeepGlobalBatch(Training& t) {
  const int64_t step = t.micro_batch * t.dp;
  if (t.global_batch % step != 0) t.global_batch = (t.global_batch / step + 1) * step;
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
    c.gpus = t.tp * t.pp * dp;
    KeepGlobalBatch(c.training);
    if (auto r = TryFit(c)) {
      out.push_back({"zero3",
                     "ZeRO-3 / FSDP full shard over " + Str(dp) + " data-parallel ranks (" +
                         Str(c.gpus) + " GPUs)",
                     "--zero 3 --gpus " + Str(c.gpus) + " --dp " + Str(dp) + " --global-batch " +
                         Str(c.training.global_batch),
                     *r});
      return;
    }
  }
}

void TensorParallel(const EstimateInput& in, std::vector<WayOut>& out) {
  for (int64_t tp = in.training.tp * 2; tp <= in.gpus_per_node; tp *= 2) {
    EstimateInput c = in;
    c.training.tp = tp;
    c.training.sequence_parallel = true;
    c.gpus = tp * c.training.pp * c.training.dp;
    if (auto r = TryFit(c)) {
      out.push_back(
          {"tensor-parallel",
           "tensor parallel " + Str(tp) + " with sequence parallelism (" + Str(c.gpus) + " GPUs)",
           "--tp " + Str(tp) + " --sequence-parallel --gpus " + Str(c.gpus), *r});
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
    if (auto r = TryFit(c)) {
      const std::string name(workload::MethodName(m));
      out.push_back({name,
                     (m == workload::Method::kLora ? "LoRA" : "QLoRA (4-bit base)") +
                         std::string(" rank ") + Str(c.training.lora_rank) +
                         " on every linear layer",
                     "--method " + name, *r});
    }
  }
}

void LargerGpu(const EstimateInput& in, const catalog::Catalog& cat, std::vector<WayOut>& out) {
  std::vector<const catalog::Gpu*> larger;
  for (const catalog::Gpu& g : cat.gpus()) {
    if (g.memory_gib > in.gpu.memory_gib) larger.push_back(&g);
  }
  std::stable_sort(larger.begin(), larger.end(), [](const catalog::Gpu* a, const catalog::Gpu* b) {
    return a->memory_gib < b->memory_gib;
  });
  for (const catalog::Gpu* g : larger) {
    EstimateInput c = in;
    c.gpu = *g;
    std::optional<EstimateResult> r = TryFit(c);
    if (r && r->verdict == FitVerdict::kFits) {
      out.push_back({"gpu",
                     "a larger GPU: " + g->name + " (" + FormatNumber(g->memory_gib, 0) + " GiB)",
                     "--gpu " + g->name, *r});
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
  Adapters(input, ways);
  LargerGpu(input, catalog, ways);
  return ways;
}

}  // namespace fulcrum::estimate
