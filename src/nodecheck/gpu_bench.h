// The GPU half of `fulcrum bench`: runs the fulcrum-gpubench program (built only where a CUDA
// toolkit was found, installed in <prefix>/libexec/fulcrum), parses its JSON, and compares each
// figure with the datasheet value of the detected GPU: percent of spec and a verdict ("ok",
// "low" below 70 % of spec, "unstable" when the sustained run swings more than 30 %). When the
// program is missing or finds no GPU, the result says why instead. Blocking; thread-compatible.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/status.h"

namespace fulcrum::nodecheck {

// Thresholds of the bench's verdicts (and of `bench --expect`): a figure under 70 % of its spec
// is low; a sustained run swinging more than 30 % between 1 s intervals is unstable (the "30 %
// compute fluctuation" the GPU selection guides warn of on shared hosts).
inline constexpr double kLowFractionOfSpec = 0.70;
inline constexpr double kUnstableSwing = 0.30;

// Datasheet figures of one catalog GPU (filled by the caller from the catalog).
struct Datasheet {
  std::string name;
  double memory_gib = 0;
  std::optional<double> bf16_tflops, fp16_tflops, tf32_tflops, fp32_tflops;
  std::optional<double> memory_bandwidth_bytes_per_second;
  // NVLink bandwidth per GPU, both directions together (the catalog's nvlink_gbps x 1e9);
  // nullopt = no NVLink / not sourced.
  std::optional<double> nvlink_bytes_per_second;
  // Host link (PCIe x16), one direction, theoretical: the caller fills it as the planner does
  // (estimate::PcieGbytesPerSecond, gen 4 where the catalog does not say).
  std::optional<double> pcie_bytes_per_second;
};

// Picks the catalog GPU that a CUDA device name ("NVIDIA H100 80GB HBM3") and its memory size
// denote: same family token, PCIe/SXM/NVL form factor, closest memory. nullopt when none fits.
std::optional<size_t> MatchDatasheet(const std::string& device_name, double memory_bytes,
                                     const std::vector<Datasheet>& candidates);

// How this fulcrum was built with respect to fulcrum-gpubench (CMakeLists.txt passes it to
// gpu_bench.cc): whether the build made the program, why not when it did not, and where
// `cmake --install` / the .deb put it relative to the installed fulcrum's directory.
struct GpuBenchBuild {
  bool built = false;
  std::string not_built_reason;  // "no CUDA toolkit (nvcc) found at build time", ...
  std::string libexec_from_bindir = "../libexec/fulcrum";
};
GpuBenchBuild ThisGpuBenchBuild();

// Where fulcrum-gpubench is, or why it is not there. Looked for, in order: `env_override`
// ($FULCRUM_GPUBENCH) when non-empty (and only there), <exe_dir>/fulcrum-gpubench (a build tree),
// <exe_dir>/<libexec_from_bindir>/fulcrum-gpubench (an installed fulcrum). missing_reason names
// the true cause: a build without the bench, or a built bench that is not installed where looked.
struct GpuBenchLocation {
  std::string program;                        // set when found
  std::optional<std::string> missing_reason;  // set when not
};
GpuBenchLocation LocateGpuBench(const std::string& exe_dir, const std::string& env_override,
                                const GpuBenchBuild& build);

struct GpuBenchOptions {
  std::string program;  // path of fulcrum-gpubench; "" = LocateGpuBench from the executable
  double stability_seconds = 30;
  bool quick = false;
  int device = 0;
};

// Runs the program. Ok with skipped_reason set when it is absent or finds no GPU; a non-ok Status
// only for a failure worth an error exit (the program crashed or printed garbage).
struct GpuBenchRun {
  std::optional<std::string> skipped_reason;
  std::string json_text;  // fulcrum-gpubench's JSON when it ran
};
Result<GpuBenchRun> RunGpuBench(const GpuBenchOptions& options);

// Builds the report object for `bench --json`'s "gpu" key from the program's JSON and the
// matched datasheet (may be null): adds spec, percent_of_spec and verdict to each figure.
Result<nlohmann::json> BuildGpuReport(const std::string& json_text, const Datasheet* datasheet);

// Verdicts (exposed for tests).
std::string SpecVerdict(double measured, std::optional<double> spec);  // "ok" | "low" | "unknown"
std::string StabilityVerdict(double min_tflops, double max_tflops, double mean_tflops);

}  // namespace fulcrum::nodecheck
