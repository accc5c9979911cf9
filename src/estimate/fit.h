// Ways out of a configuration that does not fit (or fits tightly): each candidate change — a
// smaller micro-batch, activation recompute, ZeRO-3/FSDP over more GPUs, tensor parallelism,
// context parallelism (sequences from 8k tokens), LoRA/QLoRA, a larger GPU from the catalog — is
// evaluated with the same memory model, and only those that fit are returned, in that order. Pure
// computation over values; thread-compatible.
#pragma once

#include <string>
#include <vector>

#include "catalog/catalog.h"
#include "estimate/estimate.h"

namespace fulcrum::estimate {

struct WayOut {
  // micro-batch | recompute | zero3 | tensor-parallel | context-parallel | lora | qlora | gpu
  std::string kind;
  std::string change;  // human sentence, e.g. "micro-batch 2 (gradient accumulation 16)"
  std::string flags;   // the flags that differ from the original command
  EstimateResult result;
};

std::vector<WayOut> FindWaysOut(const EstimateInput& input, const catalog::Catalog& catalog);

}  // namespace fulcrum::estimate
