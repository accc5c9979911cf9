#include "cli/bench_expect.h"

#include "core/input_error.h"
#include "core/parse.h"
#include "estimate/comm.h"
#include "estimate/compute.h"
#include "plan/cost.h"
#include "supervise/plan_file.h"
#include "workload/training.h"

namespace fulcrum::cli {
namespace {

// The figures the planner built on for `gpu` in `offer` at `precision`: its hardware model's
// peak FLOP/s, memory and intra-node bandwidth (NVLink only where the offer says nvlink), the
// PCIe figure it uses, and the checkpoint write bandwidth of its cost model.
nodecheck::NodeExpectation ExpectationFor(const catalog::Gpu& gpu, const catalog::Offer& offer,
                                          workload::Precision precision,
                                          const std::string& catalog_dir, std::string origin) {
  nodecheck::NodeExpectation e;
  e.origin = std::move(origin);
  e.gpu = gpu.name;
  e.gpus_per_node = std::max(1, offer.gpu_count);
  switch (precision) {
    case workload::Precision::kFp32:
      e.gemm_dtype = "fp32";
      break;
    case workload::Precision::kTf32:
      e.gemm_dtype = gpu.tf32_tflops ? "tf32" : "fp32";
      break;
    case workload::Precision::kFp16Mixed:
      e.gemm_dtype = gpu.fp16_tflops ? "fp16" : "bf16";
      break;
    default:  // bf16, pure bf16, fp8 (the bench has no fp8 GEMM: its 16-bit peak is compared)
      e.gemm_dtype = gpu.bf16_tflops ? "bf16" : "fp16";
      break;
  }
  auto hw = estimate::HardwareFor(gpu, offer, precision, estimate::DefaultTimeCalibration());
  if (hw) {
    e.gemm_tflops =
        (precision == workload::Precision::kFp8 ? hw->peak_flops_16bit : hw->peak_flops) / 1e12;
    e.memory_bandwidth_bytes_per_second = hw->memory_bytes_per_second;
    e.interconnect = hw->nvlink ? "nvlink" : "pcie";
    e.interconnect_bytes_per_second = hw->intra_node_bytes_per_second;
  }
  e.host_bytes_per_second = estimate::PcieGbytesPerSecond(gpu.pcie_gen) * 1e9;
  std::string note;
  e.disk_write_bytes_per_second =
      plan::LoadCostAssumptions(catalog_dir, &note).checkpoint_write_bytes_per_second_per_node;
  return e;
}

std::vector<std::string> OfferNames(const catalog::Catalog& cat) {
  std::vector<std::string> names;
  for (const auto& o : cat.offers()) names.push_back(o.provider + ":" + o.instance_type);
  return names;
}

const catalog::Offer* FindOffer(const catalog::Catalog& cat, const std::string& provider,
                                const std::string& instance, const std::string& region) {
  const catalog::Offer* any = nullptr;
  for (const auto& o : cat.offers()) {
    if (o.provider != provider || o.instance_type != instance) continue;
    if (o.region == region) return &o;
    if (!any) any = &o;
  }
  return any;
}

}  // namespace

Result<nodecheck::NodeExpectation> ExpectationFromPlan(const std::string& path, int pick,
                                                       const catalog::Catalog& cat,
                                                       const std::string& catalog_dir) {
  FULCRUM_ASSIGN_OR_RETURN(supervise::PlannedRun run, supervise::ReadPlanFile(path, pick));
  std::string where = "candidates[rank " + std::to_string(pick) + "]";
  const catalog::Gpu* gpu = cat.FindGpu(run.gpu);
  if (gpu == nullptr) {
    return InputError({path,
                       std::nullopt,
                       where + ".gpu",
                       "a GPU of the catalog",
                       run.gpu.empty() ? "none" : run.gpu,
                       {}});
  }
  const catalog::Offer* offer = FindOffer(cat, run.provider, run.instance_type, run.region);
  if (offer == nullptr) {
    std::string found = run.provider + ":" + run.instance_type;
    return InputError({path, std::nullopt, where + ".instance_type", "an offer of the catalog",
                       found, NearestNames(found, OfferNames(cat))});
  }
  auto precision = workload::ParsePrecision(run.precision.empty() ? "bf16" : run.precision);
  if (!precision.ok()) {
    return InputError({path,
                       std::nullopt,
                       where + ".parallel.precision",
                       "a precision (bf16, fp16, fp8, fp32, tf32, pure-bf16)",
                       run.precision,
                       {}});
  }
  auto e = ExpectationFor(*gpu, *offer, *precision, catalog_dir,
                          path + " rank " + std::to_string(pick) + " (" + offer->provider + " " +
                              offer->instance_type + ": " + std::to_string(offer->gpu_count) +
                              " x " + gpu->name + ", " + run.precision + ")");
  // The plan's own count wins over the catalog row's (they agree unless the catalog changed).
  if (run.gpus_per_node > 0) e.gpus_per_node = run.gpus_per_node;
  return e;
}

Result<nodecheck::NodeExpectation> ExpectationFromOffer(const std::string& provider_instance,
                                                        const catalog::Catalog& cat,
                                                        const std::string& catalog_dir) {
  size_t colon = provider_instance.find(':');
  const catalog::Offer* offer = colon == std::string::npos
                                    ? nullptr
                                    : FindOffer(cat, provider_instance.substr(0, colon),
                                                provider_instance.substr(colon + 1), "");
  if (offer == nullptr) {
    return InputError({"", std::nullopt, "--offer",
                       "PROVIDER:INSTANCE of an offer in the catalog (see fulcrum offers)",
                       provider_instance, NearestNames(provider_instance, OfferNames(cat))});
  }
  const catalog::Gpu* gpu = cat.FindGpu(offer->gpu);
  if (gpu == nullptr) {
    return InputError({offer->origin, offer->line, "gpu", "a GPU of the catalog", offer->gpu, {}});
  }
  return ExpectationFor(*gpu, *offer, workload::Precision::kBf16Mixed, catalog_dir,
                        "offer " + provider_instance + " (" + std::to_string(offer->gpu_count) +
                            " x " + gpu->name + ", bf16)");
}

}  // namespace fulcrum::cli
