// Sharing one node's GPUs between many small jobs of the local queue: the node's GPUs (count,
// memory, existing MIG instances), a job's request (--gpu-memory or --gpu-fraction, --reserve,
// --share, --enforce), and the fit of one request on the GPUs as they are loaded. Sizes are
// bytes. A job gets one GPU (or one MIG instance); the sum of the reservations on a GPU never
// passes its memory less the reserve. fulcrum assigns existing MIG instances; it never creates
// or destroys them. Pure functions except DetectNodeGpus and MpsControlRunning (environment,
// /dev, /proc). Thread-safe.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "telemetry/gpu_sample.h"

namespace fulcrum::supervise {

// The seeds' buffer: 10 % of each GPU's memory stays unreserved unless --reserve says otherwise.
inline constexpr double kDefaultReserveFraction = 0.10;

// An existing MIG GPU instance (as NVML lists them): its profile name ("1g.10gb"), memory and
// the MIG UUID that CUDA_VISIBLE_DEVICES takes.
struct MigInstance {
  std::string profile;
  double memory_bytes = 0;
  std::string uuid;
};

struct NodeGpu {
  int index = 0;
  std::optional<double> memory_bytes;  // nullopt: unknown (`--node-gpus 2`, /dev count)
  std::vector<MigInstance> mig;        // non-empty: the GPU is in MIG mode
};

// "2" (memory unknown) or "2x80GiB" (NxSIZE), as --node-gpus and $FULCRUM_NODE_GPUS take them.
Result<std::vector<NodeGpu>> ParseNodeGpus(std::string_view text);
// "2x80GiB" for two GPUs of 80 GiB, "2" when the memory is unknown; "" for none.
std::string FormatNodeGpus(const std::vector<NodeGpu>& gpus);
// $FULCRUM_NODE_GPUS when set and valid, else the GPUs the local agent at `agent_url` lists on
// /v1/gpus (NVML's index and memory total; skipped for "" or "none", or when it does not
// answer within half a second), else the /dev/nvidiaN devices (memory unknown).
std::vector<NodeGpu> DetectNodeGpus(const std::string& agent_url = "");
// The agent's GPU samples as node GPUs (memory unknown where the sample has none).
std::vector<NodeGpu> NodeGpusFromSamples(const std::vector<telemetry::GpuSample>& samples);

// What a job asked for: exactly one of memory_bytes and fraction; the reserve as a fraction of
// the GPU's memory or as bytes (neither: kDefaultReserveFraction).
struct ShareRequest {
  std::optional<double> memory_bytes;
  std::optional<double> fraction;  // (0, 1]
  std::optional<double> reserve_fraction;
  std::optional<double> reserve_bytes;
  std::string share = "auto";  // "auto" (MPS when its control daemon runs, else time) | "mps"
  bool enforce = false;        // time-slicing: stop a job over its reservation
};

// "10%" -> fraction 0.10, "8GiB" -> bytes; into `request`. kInvalidInput naming --reserve.
Status ParseReserve(std::string_view text, ShareRequest& request);
// kInvalidInput unless 0 < fraction <= 1 (--gpu-fraction).
Status CheckGpuFraction(double fraction);
// "auto" | "mps"; kInvalidInput naming the choices.
Status CheckShareMode(const std::string& share);

// The bytes `request` reserves on `gpu` (its memory, or its fraction of the GPU's memory);
// nullopt when the GPU's memory is unknown and the request is a fraction.
std::optional<double> ReservationOn(const ShareRequest& request, const NodeGpu& gpu);
// The GPU's memory less the reserve (nullopt when the memory is unknown).
std::optional<double> ReservableOn(const ShareRequest& request, const NodeGpu& gpu);

// Whether the request can ever fit on this node; kInvalidInput naming the sizes that can (a
// reservation larger than any GPU, a fraction outside (0, 1], GPUs of unknown memory).
Status CheckShareFits(const ShareRequest& request, const std::vector<NodeGpu>& gpus);

// What each GPU holds now: whole-GPU jobs, the sum of the shares' reservations and the MIG
// instances in use.
struct GpuLoad {
  bool whole = false;
  double reserved_bytes = 0;
  int shares = 0;
  std::set<std::string> mig_in_use;
};

struct SharePlacement {
  int gpu = 0;
  double reservation_bytes = 0;
  std::string mode;  // "time" | "mps" | "mig"
  std::string mig_uuid;
  std::string mig_profile;
};

// First fit: the lowest-index GPU that holds the request without over-commit (a MIG GPU: its
// smallest free instance with enough memory), and adds it to `loads` (indexed like `gpus`).
// `mps` says whether MPS is the mechanism on non-MIG GPUs. nullopt when nothing fits now.
std::optional<SharePlacement> FitShare(const ShareRequest& request,
                                       const std::vector<NodeGpu>& gpus,
                                       std::vector<GpuLoad>& loads, bool mps);

// The environment of a placed share: CUDA_VISIBLE_DEVICES (the GPU index, or the MIG UUID) and
// under MPS the per-client limits CUDA_MPS_PINNED_DEVICE_MEM_LIMIT and
// CUDA_MPS_ACTIVE_THREAD_PERCENTAGE.
std::map<std::string, std::string> ShareEnv(const SharePlacement& placement,
                                            const ShareRequest& request, const NodeGpu& gpu);

// Whether an nvidia-cuda-mps-control daemon runs (a /proc/PID/comm names it).
bool MpsControlRunning(const std::string& proc_root = "/proc");

}  // namespace fulcrum::supervise
