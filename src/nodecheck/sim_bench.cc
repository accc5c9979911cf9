#include "nodecheck/sim_bench.h"

#include <cmath>

#include <nlohmann/json.hpp>

#include "core/clock.h"
#include "core/input_error.h"

namespace fulcrum::nodecheck {
namespace {

constexpr double kPi = 3.14159265358979323846;
constexpr double kGiB = 1024.0 * 1024 * 1024;
// The swing's wave period: 4 s, so that any run of 4 s or more reaches both extremes.
constexpr double kSwingPeriodSeconds = 4;
// The CUDA release of the sim's driver: the agent sim reports driver 550.54.15, and NVIDIA's
// CUDA toolkit release notes (Table 3) give 550.54.14 as the minimum driver of CUDA 12.4 GA.
constexpr const char* kSimCudaVersion = "12.4";
constexpr int kSimCudaVersionNumber = 12040;  // as cudaDriverGetVersion reports 12.4

// A sample of the agent's sim at `seconds` since its start (a fresh source: sampling is pure).
telemetry::GpuSnapshot SampleAt(int gpu_count, const std::vector<telemetry::Fault>& faults,
                                double seconds) {
  ManualClock clock;
  telemetry::SimSource source(gpu_count, faults, clock);
  clock.Set(seconds);
  auto snapshot = source.Sample();
  return snapshot.ok() ? *snapshot : telemetry::GpuSnapshot{};
}

nlohmann::json Optional(const std::optional<double>& value) {
  return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
}

Status SpecError(const std::string& field, const std::string& expected, const std::string& found) {
  return InputError({"", std::nullopt, field, expected, found, {}}, FoundIs::kDescription);
}

}  // namespace

SimBenchSource::SimBenchSource(SimGpuSpec spec) : spec_(std::move(spec)) {
  auto healthy = SampleAt(1, {}, 0);
  healthy_sm_clock_mhz_ = healthy.empty() ? 0 : healthy.front().sm_clock_mhz.value_or(0);
}

Result<std::unique_ptr<SimBenchSource>> SimBenchSource::Create(SimGpuSpec spec) {
  if (spec.gpu_count < 1 || spec.gpu_count > 64) {
    return SpecError("--sim-gpus", "a GPU count from 1 to 64", std::to_string(spec.gpu_count));
  }
  if (!(spec.fraction > 0 && spec.fraction <= 2)) {
    return SpecError("--sim-fraction", "a fraction of the datasheet in (0, 2]",
                     nlohmann::json(spec.fraction).dump());
  }
  if (!(spec.swing_fraction >= 0 && spec.swing_fraction <= 1)) {
    return SpecError("--sim-swing", "a peak-to-peak swing fraction in [0, 1]",
                     nlohmann::json(spec.swing_fraction).dump());
  }
  const Datasheet& d = spec.datasheet;
  if (!d.bf16_tflops && !d.fp16_tflops && !d.fp32_tflops) {
    return SpecError("--sim-gpu", "a catalog GPU with a bf16, fp16 or fp32 TFLOP/s figure",
                     d.name + " (none sourced)");
  }
  for (const auto& fault : spec.faults) {
    if (fault.gpu >= spec.gpu_count) {
      return SpecError("--sim-scenario", "faults on GPUs 0.." + std::to_string(spec.gpu_count - 1),
                       "gpu " + std::to_string(fault.gpu) + " (" + fault.text + ")");
    }
  }
  return std::unique_ptr<SimBenchSource>(new SimBenchSource(std::move(spec)));
}

std::string SimBenchSource::DriverVersion() {
  auto sample = SampleAt(1, {}, 0);
  return sample.empty() ? "" : sample.front().driver_version;
}

std::string SimBenchSource::CudaVersion() { return kSimCudaVersion; }

double SimBenchSource::PeakTflops() const {
  const Datasheet& d = spec_.datasheet;
  return d.bf16_tflops   ? *d.bf16_tflops
         : d.fp16_tflops ? *d.fp16_tflops
                         : d.fp32_tflops.value_or(0);
}

SimInterval SimBenchSource::IntervalAt(int gpu, double seconds) const {
  auto snapshot = SampleAt(spec_.gpu_count, spec_.faults, seconds);
  SimInterval interval;
  if (gpu < 0 || gpu >= static_cast<int>(snapshot.size())) return interval;
  const telemetry::GpuSample& s = snapshot[static_cast<size_t>(gpu)];
  interval.sm_clock_mhz = s.sm_clock_mhz;
  interval.temperature_celsius = s.temperature_celsius;
  interval.power_watts = s.power_watts;
  interval.clock_event_reasons = s.clock_event_reasons;
  if (!s.sm_clock_mhz || healthy_sm_clock_mhz_ <= 0) return interval;  // fallen off the bus
  double clock_ratio = *s.sm_clock_mhz / healthy_sm_clock_mhz_;
  double wave = std::sin(2 * kPi * (seconds + 1) / kSwingPeriodSeconds);
  interval.tflops =
      PeakTflops() * spec_.fraction * clock_ratio * (1 + spec_.swing_fraction / 2 * wave);
  return interval;
}

Result<GpuBenchRun> SimBenchSource::RunGpuBench(const GpuBenchOptions& options) {
  if (options.device < 0 || options.device >= spec_.gpu_count) {
    return SpecError("--device", "a GPU index from 0 to " + std::to_string(spec_.gpu_count - 1),
                     std::to_string(options.device));
  }
  const Datasheet& d = spec_.datasheet;
  const double f = spec_.fraction;
  nlohmann::json doc;
  auto first = SampleAt(spec_.gpu_count, spec_.faults, 0);
  doc["device"] = {{"index", options.device},
                   {"name", d.name},
                   {"pci_bus_id", first.empty() ? "" : first[0].pci_bus_id},
                   {"memory_bytes", d.memory_gib * kGiB},
                   {"sm_count", nullptr},
                   {"compute_capability", nullptr},
                   {"cuda_driver_version", kSimCudaVersionNumber},
                   {"cuda_runtime_version", kSimCudaVersionNumber},
                   {"gpu_count", spec_.gpu_count},
                   {"sim", true}};
  doc["gemm"] = nlohmann::json::array();
  const std::pair<const char*, std::optional<double>> dtypes[] = {{"bf16", d.bf16_tflops},
                                                                  {"fp16", d.fp16_tflops},
                                                                  {"tf32", d.tf32_tflops},
                                                                  {"fp32", d.fp32_tflops}};
  for (const auto& [dtype, spec] : dtypes) {
    if (!spec) continue;  // the real bench fails on a GPU without the type; the sim leaves it out
    doc["gemm"].push_back({{"dtype", dtype},
                           {"size", 8192},
                           {"tflops", *spec * f},
                           {"correct", true},
                           {"max_relative_error", 0.0}});
  }
  if (d.memory_bandwidth_bytes_per_second) {
    doc["memory_bandwidth_bytes_per_second"] = *d.memory_bandwidth_bytes_per_second * f;
  }
  // Peer copies: one direction of NVLink (half the catalog's both-directions figure) where the
  // GPU has it, else the PCIe link. Unknown figures stay null (the real bench always has them).
  const bool host_known = d.pcie_bytes_per_second.has_value();
  const double host = d.pcie_bytes_per_second.value_or(0) * f;
  doc["h2d_bytes_per_second"] = host_known ? nlohmann::json(host) : nlohmann::json(nullptr);
  doc["d2h_bytes_per_second"] = doc["h2d_bytes_per_second"];
  const bool peer_known = d.nvlink_bytes_per_second.has_value() || host_known;
  const double peer = d.nvlink_bytes_per_second ? *d.nvlink_bytes_per_second / 2 * f : host;
  doc["p2p"] = nlohmann::json::array();
  for (int other = 0; other < spec_.gpu_count && peer_known; ++other) {
    if (other == options.device) continue;
    doc["p2p"].push_back({{"src", options.device}, {"dst", other}, {"bytes_per_second", peer}});
  }
  double seconds =
      options.quick ? std::min(options.stability_seconds, 5.0) : options.stability_seconds;
  int count = std::max(1, static_cast<int>(std::ceil(seconds)));
  nlohmann::json intervals = nlohmann::json::array();
  double sum = 0, sum_sq = 0, lo = 0, hi = 0;
  for (int i = 0; i < count; ++i) {
    SimInterval in = IntervalAt(options.device, i);
    intervals.push_back(
        {{"tflops", in.tflops},
         {"sm_clock_mhz", Optional(in.sm_clock_mhz)},
         {"temperature_celsius", Optional(in.temperature_celsius)},
         {"power_watts", Optional(in.power_watts)},
         {"clock_event_reasons", in.clock_event_reasons ? nlohmann::json(*in.clock_event_reasons)
                                                        : nlohmann::json(nullptr)}});
    sum += in.tflops;
    sum_sq += in.tflops * in.tflops;
    lo = i == 0 ? in.tflops : std::min(lo, in.tflops);
    hi = i == 0 ? in.tflops : std::max(hi, in.tflops);
  }
  double mean = sum / count;
  double var = count > 1 ? std::max(0.0, (sum_sq - count * mean * mean) / (count - 1)) : 0;
  doc["stability"] = {{"seconds", seconds},
                      {"mean_tflops", mean},
                      {"min_tflops", lo},
                      {"max_tflops", hi},
                      {"cv", mean > 0 ? std::sqrt(var) / mean : 0.0},
                      {"intervals", intervals}};
  GpuBenchRun run;
  run.json_text = doc.dump();
  return run;
}

SystemFacts SimBenchSource::GatherFacts(const DoctorOptions& options) {
  SystemFacts facts;
  auto snapshot = SampleAt(spec_.gpu_count, spec_.faults, 0);
  for (const telemetry::GpuSample& s : snapshot) {
    GpuFacts gpu;
    gpu.name = spec_.datasheet.name;
    gpu.driver_version = s.driver_version;
    gpu.persistence_mode = true;
    gpu.ecc_enabled = true;
    gpu.sm_clock_mhz = s.sm_clock_mhz;
    gpu.max_sm_clock_mhz = healthy_sm_clock_mhz_;
    gpu.application_sm_clock_mhz = healthy_sm_clock_mhz_;
    facts.gpus.push_back(std::move(gpu));
    facts.nvidia_device_files.push_back("/dev/nvidia" + std::to_string(s.index));
  }
  facts.nvidia_device_files.push_back("/dev/nvidiactl");
  if (!facts.gpus.empty()) facts.driver_version = facts.gpus.front().driver_version;
  facts.cuda_toolkit_version = kSimCudaVersion;
  facts.cuda_toolkit_source = "sim";
  // This host's Python frameworks say nothing about the simulated GPUs (a CPU-only torch here
  // would read as a broken stack next to the sim's driver): not probed.
  DoctorOptions host = options;
  host.probe_frameworks = false;
  GatherHostFacts(host, facts);
  facts.python_probe_note = "not probed with --source sim (this host's Python is not the sim's)";
  return facts;
}

}  // namespace fulcrum::nodecheck
