// Names the NCCL ranks behind a hang in the hang alert: a firing transition of the shipped
// GpuJobHung rule (or of any rule labelled `hang: "true"`) gets the stalled ranks that NCCL's
// RAS socket reported (rank, host, pid, GPU, how far behind) appended to its summary and as
// the `nccl_stalled_ranks` annotation and `nccl_rank` / `nccl_host` / `nccl_pid` / `nccl_gpu`
// labels of the first one (nccl_gpu is the NVML index, as fulcrum's `gpu` label). Pure
// functions, thread-safe.
#pragma once

#include <span>
#include <vector>

#include "alert/evaluator.h"
#include "telemetry/nccl_ras.h"

namespace fulcrum::alert {

inline constexpr const char* kHangRuleName = "GpuJobHung";  // examples/rules.yaml

// Whether the transition is a hang alert going to firing.
bool IsHangFiring(const Transition& transition);

// Adds the stalled ranks to each hang alert going to firing in `transitions`; others and an
// empty `stalled` leave them as they are. At most 8 ranks are listed ("and N more").
void NameStalledRanks(std::vector<Transition>& transitions,
                      std::span<const telemetry::NcclLaggingRank> stalled);

}  // namespace fulcrum::alert
