#include "plan/notes.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "core/input_error.h"
#include "estimate/estimate.h"

namespace fulcrum::plan {
namespace {

void NetworkNotes(const PlanInputs& in, const HardwareClasses& classes,
                  std::vector<std::string>& notes) {
  const bool any_multi_node_unknown =
      std::any_of(classes.classes.begin(), classes.classes.end(),
                  [](const HardwareClass& hc) { return !hc.network_known && !hc.network_assumed; });
  if (any_multi_node_unknown) {
    notes.push_back(
        "offers whose network bandwidth is not in the catalog were planned on one node only "
        "(--assume-network-gbps N plans them multi-node)");
  }
  if (classes.any_conservative) {
    const ConservativeNetwork& conservative = classes.conservative;
    const catalog::Offer& from = *conservative.from;
    notes.push_back(fmt::format(
        "offers whose provider publishes no inter-node network: mean time at the assumed {:g} "
        "Gbit/s per node, P90 at {:g} Gbit/s per GPU (the lowest any multi-GPU offer of the "
        "catalog publishes: {} {}, {:g} Gbit/s for {} GPUs, {})",
        *in.spec.constraints.assume_network_gbps, conservative.gbps_per_gpu, from.provider,
        from.instance_type, *from.network_gbps, from.gpu_count, from.source));
  }
}

void PrecisionAndMethodNotes(const PlanInputs& in, const HardwareClasses& classes,
                             const std::vector<Candidate>& candidates,
                             std::vector<std::string>& notes) {
  if (!classes.skipped_precision.empty()) {
    std::string list;
    for (const std::string& gpu : classes.skipped_precision) {
      list += (list.empty() ? "" : ", ") + gpu + " (" +
              estimate::SupportedPrecisionNames(*in.catalog.FindGpu(gpu)) + ")";
    }
    notes.push_back("skipped, no " + std::string(workload::PrecisionName(in.base.precision)) +
                    " tensor-core mode: " + list +
                    "; --allow-precision-fallback plans them in fp16");
  }
  if (in.base.method == workload::Method::kLora &&
      std::any_of(candidates.begin(), candidates.end(), [](const Candidate& k) {
        return k.layout.training.framework == workload::Framework::kMegatron;
      })) {
    notes.push_back(
        "LoRA layouts with tp/pp/cp/ep (framework megatron-bridge) run on NeMo Megatron-Bridge "
        "PEFT (Megatron-Core; Megatron-LM itself has no LoRA: docs.nvidia.com/nemo/"
        "megatron-bridge); HF PEFT runs LoRA data parallel only (fsdp, deepspeed, hf)");
  }
  if (in.base.method == workload::Method::kQlora) {
    notes.push_back(
        "QLoRA is planned data parallel only: its 4-bit bitsandbytes base runs under HF PEFT with "
        "FSDP or DeepSpeed ZeRO-3 (PEFT 0.10), no tp/pp/cp/ep framework loads it");
  }
}

// How the DeepSpeed ZeRO-1/2 candidates reduce their gradients (estimate/compute.cc
// ReductionBehindBackward): on the compute stream, DeepSpeed's default below stage 3, unless the
// job's DeepSpeed config sets zero_optimization.overlap_comm; empty when no candidate is one.
std::string DeepSpeedOverlapNote(const PlanInputs& in, const std::vector<Candidate>& candidates) {
  const bool any = std::any_of(candidates.begin(), candidates.end(), [](const Candidate& k) {
    const workload::Training& t = k.layout.training;
    return workload::DeepSpeedEngineReduces(t) && t.zero_stage >= 1;
  });
  if (!any) return "";
  if (!in.frameworks.overlap_comm_from.empty()) {
    return std::string("DeepSpeed ZeRO-1/2 layouts reduce their gradients ") +
           (in.frameworks.overlap_comm ? "behind the backward" : "after the backward") +
           " (zero_optimization.overlap_comm " + (in.frameworks.overlap_comm ? "true" : "false") +
           " in " + in.frameworks.overlap_comm_from + ")";
  }
  return "DeepSpeed ZeRO-1/2 layouts reduce their gradients after the backward, on the compute "
         "stream (zero_optimization.overlap_comm is off by default below stage 3): "
         "\"overlap_comm\": true in the job's DeepSpeed config hides the reduction behind the "
         "backward (fulcrum estimate --overlap-comm gives that step time)";
}

// What the job's FSDP1 launch (accelerate, the HF Trainer) leaves of the FULL_SHARD candidates'
// backward overlap (estimate/compute.cc BackwardSerialized); empty when nothing was read or no
// candidate is one.
std::string FsdpBackwardPrefetchNote(const PlanInputs& in,
                                     const std::vector<Candidate>& candidates) {
  const bool any = std::any_of(candidates.begin(), candidates.end(), [](const Candidate& k) {
    return workload::FsdpFullShard(k.layout.training);
  });
  if (!any || in.frameworks.backward_prefetch_from.empty()) return "";
  const workload::BackwardPrefetch p = in.frameworks.backward_prefetch;
  const std::string head = "FSDP FULL_SHARD layouts run with backward_prefetch " +
                           std::string(workload::BackwardPrefetchName(p)) + " (" +
                           in.frameworks.backward_prefetch_from + "): ";
  if (p == workload::BackwardPrefetch::kPre) {
    return head + "the backward's all-gathers and reduce-scatters hide behind it";
  }
  return head + "the backward waits for its " +
         (p == workload::BackwardPrefetch::kNone ? "all-gathers and reduce-scatters"
                                                 : "all-gathers") +
         "; backward prefetching BACKWARD_PRE (accelerate's fsdp_backward_prefetch, the HF "
         "Trainer's fsdp_config backward_prefetch) or FSDP version 2 hides them behind it (fulcrum "
         "estimate --backward-prefetch gives either step time)";
}

// Where the spot risk comes from; empty when no candidate is spot or the risk is unsourced.
std::string SpotRiskNote(const CostAssumptions& a, const std::vector<Candidate>& candidates) {
  const bool any_spot = std::any_of(candidates.begin(), candidates.end(),
                                    [](const Candidate& k) { return IsSpot(k.pricing); });
  if (!any_spot || a.spot_risk_source.empty()) return "";
  std::string gang = "n nodes are preempted n times as often (no multi-node traces)";
  if (!a.spot_gang.rows.empty()) {
    const spot::RiskScale& top = a.spot_gang.rows.back();
    gang = fmt::format(
        "all nodes at once: {} nodes have {:.2f}x the MTTI of one and {:.0f} % vs {:.0f} % "
        "availability, from {} (beyond {}: independent groups of {})",
        top.count, top.mtti_factor, 100 * top.available_fraction,
        100 * a.spot_gang.rows.front().available_fraction, a.spot_gang.source, top.count,
        top.count);
  }
  std::string size;
  if (a.spot_instance_size.rows.size() > 1) {
    const spot::RiskScale& big = a.spot_instance_size.rows.back();
    size = fmt::format("; {}-GPU instances have {:.2f}x the MTTI of 1-GPU ones, from {}", big.count,
                       big.mtti_factor, a.spot_instance_size.source);
  }
  return fmt::format(
      "spot risk: MTTI {:.1f} h per 1-GPU instance, outage {:.1f} h, from {}; applied to every "
      "GPU type and provider (no public traces for newer GPUs: an assumption){}; {}",
      a.spot_mtti_seconds_per_instance / 3600.0, a.spot_outage_mean_seconds / 3600.0,
      a.spot_risk_source, size, gang);
}

// What the storage figures include: the checkpoint storage assumed where the spec names none,
// and the providers whose storage or egress no sourced price covers (their rows leave it out).
void StorageNotes(const PlanInputs& in, const CostedCandidates& costed,
                  std::vector<std::string>& notes) {
  if (costed.assumed_checkpoint_gb > 0) {
    notes.push_back(fmt::format(
        "storage: one checkpoint ({:.0f} GB, {:g} bytes per trained parameter) priced at each "
        "provider's checkpoint-storage rate for as long as the run lasts (catalog/"
        "storage_prices.csv); `storage: {{disk_gb, checkpoint_gb, keep_days}}` and `egress_gb` "
        "price disks, data, kept checkpoints and transfers",
        costed.assumed_checkpoint_gb, in.assumptions.checkpoint_bytes_per_trained_param));
  }
  if (costed.unpriced_storage.empty()) return;
  std::string list;
  for (const auto& [provider, parts] : costed.unpriced_storage) {
    const std::string what = JoinNames({parts.begin(), parts.end()});
    list += (list.empty() ? "" : "; ") + provider + " (" + what + ")";
  }
  notes.push_back("storage not priced for " + list +
                  ": no sourced price in catalog/storage_prices.csv, so their rows leave those "
                  "costs out");
}

// What checkpoint writes are costed at on the rows shown: the kinds of catalog/storage.csv that
// say what an instance writes to, and the default kind for every other provider. Empty when
// nothing checkpoints or storage.csv gave no default (LoadCostAssumptions notes that).
std::string CheckpointWriteNote(const PlanInputs& in, const std::vector<Candidate>& candidates) {
  const CostAssumptions& a = in.assumptions;
  if (!in.spec.checkpointing || a.checkpoint_write_kind.empty()) return "";
  std::set<std::string> own, fallback;
  const size_t shown = std::min(candidates.size(), static_cast<size_t>(std::max(1, in.spec.top)));
  for (size_t i = 0; i < shown; ++i) {
    const catalog::Offer& o = in.catalog.offers()[candidates[i].offer];
    if (const spot::StorageKind* k = CheckpointStorageFor(o, a)) {
      own.insert(fmt::format("{} {} ({}, {:.0f} MB/s)", o.provider, o.instance_type, k->kind,
                             k->write_bytes_per_second / 1e6));
    } else {
      fallback.insert(o.provider);
    }
  }
  std::vector<std::string> parts;
  if (!fallback.empty()) {
    const std::string list = JoinNames({fallback.begin(), fallback.end()});
    parts.push_back(fmt::format(
        "at {}'s {:.0f} MB/s per node on {} (the catalog/storage.csv default, the slowest "
        "common case: no row there says what these instances write to)",
        a.checkpoint_write_kind, a.checkpoint_write_bytes_per_second_per_node / 1e6, list));
  }
  if (!own.empty()) {
    parts.push_back("per instance on " + JoinNames({own.begin(), own.end()}));
  }
  if (parts.empty()) return "";
  std::string note = "checkpoint writes costed ";
  for (size_t i = 0; i < parts.size(); ++i) note += (i == 0 ? "" : "; ") + parts[i];
  return note;
}

void CostAndBatchNotes(const PlanInputs& in, const CostedCandidates& costed,
                       std::vector<std::string>& notes) {
  const Constraints& c = in.spec.constraints;
  StorageNotes(in, costed, notes);
  if (c.reserved_owned) {
    notes.push_back(
        "--reserved-owned: reserved rows cost their marginal hourly price (the term is already "
        "paid for)");
  }
  if (!in.spec.global_batch_given) {
    notes.push_back(
        "global batch not given: using " + std::to_string(in.base.global_batch) +
        (in.model.kind == workload::ModelKind::kGeneric ? " samples" : " sequences (2^20 tokens)") +
        (c.strict_batch ? ""
                        : ", which a layout may change by at most 10 % to a multiple of dp x "
                          "micro-batch (--global-batch N keeps one exactly)"));
  }
}

}  // namespace

std::vector<std::string> PlanNotes(const PlanInputs& in, const HardwareClasses& classes,
                                   const CostedCandidates& costed,
                                   const std::vector<Candidate>& candidates) {
  std::vector<std::string> notes;
  if (!in.frameworks.reason.empty()) {
    notes.push_back("frameworks searched: " + workload::FrameworkListName(in.frameworks.allowed) +
                    " (" + in.frameworks.reason + ")");
  }
  if (!in.frameworks.fixed_by.empty()) {
    std::string fixed;
    if (in.frameworks.zero_stage >= 0) {
      fixed = "ZeRO stage " + std::to_string(in.frameworks.zero_stage);
    }
    if (in.frameworks.micro_batch > 0) {
      fixed += (fixed.empty() ? "" : " and ") + std::string("micro-batch ") +
               std::to_string(in.frameworks.micro_batch);
    }
    notes.push_back("only " + fixed + " planned: the command fixes it (" + in.frameworks.fixed_by +
                    "; a layout needing another is not searched)");
  }
  NetworkNotes(in, classes, notes);
  PrecisionAndMethodNotes(in, classes, candidates, notes);
  if (!in.spec.constraints.deadline_seconds && in.spec.objective == Objective::kBalanced) {
    notes.push_back(
        "no deadline: runs finishing within 24 h at P90 count as fast enough (the balanced "
        "score's performance saturates; --deadline sets it to half the deadline)");
  }
  std::string spot = SpotRiskNote(in.assumptions, candidates);
  if (!spot.empty()) notes.push_back(std::move(spot));
  CostAndBatchNotes(in, costed, notes);
  if (std::string overlap = DeepSpeedOverlapNote(in, candidates); !overlap.empty()) {
    notes.push_back(std::move(overlap));
  }
  if (std::string prefetch = FsdpBackwardPrefetchNote(in, candidates); !prefetch.empty()) {
    notes.push_back(std::move(prefetch));
  }
  if (std::string write = CheckpointWriteNote(in, candidates); !write.empty()) {
    notes.push_back(std::move(write));
  }
  return notes;
}

}  // namespace fulcrum::plan
