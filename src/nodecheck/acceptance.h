// Acceptance on arrival (`fulcrum bench --expect plan.json | --offer P:I`): compares what a
// freshly rented node measured (the `bench --json` result object and the doctor's checks) with
// what the plan assumed of it (NodeExpectation, plain figures filled by the caller from the plan
// file and the catalog), figure by figure, and gives the verdict accept or reject with reasons.
// A figure is rejected under kLowFractionOfSpec (70 %) of the expectation, the sustained run when
// it swings more than kUnstableSwing (30 %), the GPU model or count when they differ, the stack
// when a driver/CUDA doctor check fails. Unknown on either side is "unknown", never a reject
// (except an unmeasured GPU: a node whose GPUs cannot be measured is not accepted). Pure.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "nodecheck/bench_source.h"
#include "nodecheck/doctor_checks.h"
#include "nodecheck/driver_table.h"

namespace fulcrum::nodecheck {

struct NodeExpectation {
  std::string origin;  // what the expectation came from ("plan.json rank 1", "offer aws:p5...")
  std::string gpu;     // catalog GPU name
  int gpus_per_node = 1;
  std::string gemm_dtype = "bf16";    // the GEMM of the plan's precision (bf16, fp16, tf32, fp32)
  std::optional<double> gemm_tflops;  // the dense peak the plan assumed for it
  std::optional<double> memory_bandwidth_bytes_per_second;
  // GPU-to-GPU in the node, one direction (NVLink or PCIe as the plan assumed); only checked
  // with more than one GPU per node.
  std::string interconnect;  // "nvlink" | "pcie"
  std::optional<double> interconnect_bytes_per_second;
  std::optional<double> host_bytes_per_second;        // PCIe x16, one direction, theoretical
  std::optional<double> disk_write_bytes_per_second;  // the plan's checkpoint write bandwidth
};

struct AcceptanceCheck {
  std::string name;         // gpu-model, gpu-count, gemm-bf16, memory-bandwidth, interconnect,
                            // host-link, disk-write, stability, doctor-<check>
  nlohmann::json expected;  // number (units in `unit`), string, or null when unknown
  nlohmann::json measured;
  std::string unit;     // "TFLOP/s", "bytes/s", "GPUs", "swing", "" for text
  std::string verdict;  // "accept" | "reject" | "unknown"
  std::string reason;   // why, for a reject (also set for unknown)
};

struct Acceptance {
  std::string verdict;               // "accept" | "reject"
  std::vector<std::string> reasons;  // one per rejected check
  std::vector<AcceptanceCheck> checks;
};

// `bench` is the result object `fulcrum bench --json` prints ({"gpu", "gpu_skipped_reason",
// "disk", ...}); `doctor` the checks of the same node (may be empty: not run); `gpus_seen` the
// GPU count the doctor's facts saw (for the count when the GPU bench could not run).
Acceptance Evaluate(const NodeExpectation& expected, const nlohmann::json& bench,
                    const std::vector<DoctorCheck>& doctor, std::optional<int> gpus_seen);

// The doctor on the same source (its facts, the driver table's checks), then Evaluate(): what
// `bench --expect` does after measuring (`bench` from RunNodeBench, node_bench.h).
Acceptance AcceptNode(GpuBenchSource& source, const NodeExpectation& expected,
                      const nlohmann::json& bench, const DriverTable& table,
                      const DoctorOptions& options);

// A check's value for tables and reasons, in its unit: "989.0 TFLOP/s", "3350 GB/s", "131 MB/s",
// "38 %" (swing), "-" for null.
std::string FormatCheckValue(const nlohmann::json& value, const std::string& unit);

// {"verdict", "reasons": [...], "expected_from", "checks": [{"name", "expected", "measured",
// "unit", "verdict", "reason"}]}
nlohmann::json AcceptanceJson(const Acceptance& acceptance, const NodeExpectation& expected);

}  // namespace fulcrum::nodecheck
