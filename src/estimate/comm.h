// Collective-communication times for the step-time model: ring all-reduce, reduce-scatter,
// all-gather and point-to-point over a link of known bandwidth. Bandwidths are bytes per second
// in ONE direction per GPU (what a ring uses); sizes are bytes per GPU. Pure functions on plain
// doubles: allocation-free, thread-safe, cheap enough for the planner's inner loop.
#pragma once

#include <optional>

namespace fulcrum::estimate {

// Per-direction bytes/s of one GPU's share of a link. `efficiency` is the achievable fraction
// (NCCL bus bandwidth / wire bandwidth), from the calibration (compute.h TimeCalibration).
struct Link {
  double bytes_per_second = 0;  // achievable, per direction, per GPU
  double latency_seconds = 0;   // per collective step (ring hop)
};

// Ring all-reduce of `bytes` over `ranks` GPUs: 2 (n-1)/n * bytes / bandwidth + 2 (n-1) latency.
// 0 when ranks <= 1 or bytes <= 0.
double AllReduceSeconds(double bytes, int ranks, const Link& link);
// Ring reduce-scatter or all-gather of a `bytes` buffer (the full, unsharded size):
// (n-1)/n * bytes / bandwidth + (n-1) latency.
double ReduceScatterSeconds(double bytes, int ranks, const Link& link);
double AllGatherSeconds(double bytes, int ranks, const Link& link);
// All-to-all of a `bytes` buffer per GPU over `ranks` GPUs (each keeps 1/n, sends the rest):
// (n-1)/n * bytes / bandwidth + (n-1) latency (NCCL runs it as n-1 pairwise exchanges).
double AllToAllSeconds(double bytes, int ranks, const Link& link);
// One point-to-point send of `bytes`.
double SendSeconds(double bytes, const Link& link);

// Wire bandwidth of a PCIe x16 link per direction in GB/s for a generation (3: 15.75, 4: 31.5,
// 5: 63; PCI-SIG base specifications: 8 / 16 / 32 GT/s per lane x 16 lanes, 128b/130b). Unknown
// generation -> gen 4 (the common case in current cloud GPU servers).
double PcieGbytesPerSecond(std::optional<int> generation);

}  // namespace fulcrum::estimate
