// Host resources of one node of a candidate: the host RAM and vCPUs the job needs there (the
// model as each local rank loads it, pinned buffers, dataloader workers) against the offer's
// catalog figures (catalog::Offer::memory_gib, ::vcpus). An unknown figure is never short
// (unknown is not zero). Pure and thread-safe; allocates nothing.
#pragma once

#include <optional>
#include <string_view>

#include "catalog/catalog.h"
#include "workload/model.h"
#include "workload/training.h"

namespace fulcrum::plan {

// Pinned host buffers per rank (DataLoader pin_memory batches, NCCL/CUDA host staging): 1 GiB,
// fulcrum's assumption (not a measured or published figure); kept modest so that the check
// fires on the model load, not on it.
inline constexpr double kPinnedBufferGibPerRank = 1.0;
// vCPUs per GPU: the rank's own process plus one dataloader worker; the default of issue 25
// (fulcrum's assumption, not a framework's rule).
inline constexpr int kVcpusPerGpu = 2;

struct HostNeeds {
  double ram_needed_gib = 0;
  std::optional<double> ram_gib;  // the offer's host RAM per node; nullopt = unknown
  int vcpus_needed = 0;
  std::optional<int> vcpus;  // the offer's vCPUs per node; nullopt = unknown
  // How many bytes of the model one node holds while loading, and whether the framework loads
  // it once (rank 0) rather than once per local rank.
  double model_load_gib = 0;
  bool loads_once = false;
  bool RamShort() const { return ram_gib && ram_needed_gib > *ram_gib; }
  bool CpuShort() const { return vcpus && vcpus_needed > *vcpus; }
};

// Bytes per parameter of the checkpoint as it is loaded for `precision`: 4 for fp32 / tf32
// training, 2 otherwise (bf16/fp16 weights; fp8 training loads a bf16 checkpoint).
double LoadBytesPerParameter(workload::Precision precision);

// Whether the job loads the model once (on rank 0, other ranks on the meta device and filled by
// a broadcast or a partitioned init) instead of a full copy per local rank. Only where the
// framework or the command says so:
// - FSDP with accelerate's `--fsdp_cpu_ram_efficient_loading true` or a `sync_module_states`
//   argument (PyTorch FSDP docs: sync_module_states broadcasts rank 0's module states;
//   HF accelerate's FSDP guide: with cpu_ram_efficient_loading the first process loads the
//   checkpoint and the others start with empty weights; huggingface/transformers#25107);
// - DeepSpeed ZeRO-3 with accelerate's `--zero3_init_flag true` (deepspeed.zero.Init partitions
//   the model as it is built; DeepSpeed docs, "Constructing Massive Models").
// Megatron is handled apart (HostNeedsOf: each rank loads its own shard). Anything else (DDP,
// HF, FSDP or ZeRO in a script fulcrum does not know): a full copy per local rank, as PyTorch
// loads it by default (pytorch/pytorch#105840: "the model is loaded for each of the N processes
// completely on CPU").
bool LoadsOnce(const workload::Training& training, std::string_view command);

// The needs of one node of `offer` running `training` (gpu_count local ranks) of `model`:
// model load + kPinnedBufferGibPerRank per rank; kVcpusPerGpu per GPU. Megatron ranks load their
// tp x pp shard of the checkpoint (Megatron-LM checkpoints are saved and loaded per
// model-parallel rank: mp_rank_XX_YYY files, or dist_checkpointing's sharded load).
HostNeeds HostNeedsOf(const catalog::Offer& offer, const workload::Model& model,
                      const workload::Training& training, workload::Precision precision,
                      std::string_view command);

}  // namespace fulcrum::plan
