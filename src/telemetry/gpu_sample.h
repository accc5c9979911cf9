// One reading of one GPU, the unit every source produces and every consumer (store, alerts,
// /metrics, /v1, recorder) reads. Unknown or unsupported fields are std::nullopt, never 0.
// Times are Unix seconds; memory in bytes; power in watts; clocks in MHz as NVML reports them.
// The metric table maps a sample to the named metrics of docs/API.md. Plain values, no locking.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/status.h"

namespace fulcrum::telemetry {

// NVML clock-event (throttle) reason bits (nvml.h nvmlClocksEventReason*, NVML API reference,
// https://docs.nvidia.com/deploy/nvml-api/).
inline constexpr uint64_t kReasonGpuIdle = 0x1;
inline constexpr uint64_t kReasonAppClocks = 0x2;
inline constexpr uint64_t kReasonSwPowerCap = 0x4;
inline constexpr uint64_t kReasonHwSlowdown = 0x8;
inline constexpr uint64_t kReasonSyncBoost = 0x10;
inline constexpr uint64_t kReasonSwThermal = 0x20;
inline constexpr uint64_t kReasonHwThermal = 0x40;
inline constexpr uint64_t kReasonHwPowerBrake = 0x80;

struct GpuProcess {
  int64_t pid = 0;
  std::optional<double> used_memory_bytes;
};

struct GpuSample {
  int index = 0;
  std::string uuid;
  std::string name;
  std::string pci_bus_id;      // "00000000:3B:00.0" ("" = unknown)
  std::optional<int> minor;    // /dev/nvidia<minor>
  std::string driver_version;  // "550.54.15" ("" = unknown)
  double timestamp = 0;        // Unix seconds
  std::optional<double> utilization_gpu_pct;
  std::optional<double> utilization_memory_pct;
  std::optional<double> memory_used_bytes;
  std::optional<double> memory_total_bytes;
  std::optional<double> power_watts;
  std::optional<double> power_limit_watts;
  std::optional<double> temperature_celsius;
  std::optional<double> sm_clock_mhz;
  std::optional<double> memory_clock_mhz;
  std::optional<uint64_t> clock_event_reasons;
  std::optional<double> ecc_corrected;  // errors since boot (volatile) or aggregate
  std::optional<double> ecc_uncorrected;
  std::optional<int> last_xid;  // 0 = no XID since the source started
  std::optional<double> pcie_tx_bytes_per_second;
  std::optional<double> pcie_rx_bytes_per_second;
  // Bytes through PCIe since the source started: NVML reports only a rate (a 20 ms window), so
  // the source integrates it over its sampling interval. Counters (never decrease).
  std::optional<double> pcie_tx_bytes;
  std::optional<double> pcie_rx_bytes;
  std::optional<double> memory_temperature_celsius;  // HBM temperature (NVML_FI_DEV_MEMORY_TEMP)
  std::optional<double> energy_joules;               // since the driver was loaded (counter)
  std::optional<double> pcie_replays;                // PCIe replay (retry) counter
  std::optional<double> encoder_utilization_pct;
  std::optional<double> decoder_utilization_pct;
  std::optional<double> memory_free_bytes;
  std::optional<double> memory_reserved_bytes;  // held by the driver and firmware
  std::optional<double> nvlink_tx_bytes;        // data bytes over every NVLink (counter)
  std::optional<double> nvlink_rx_bytes;
  std::optional<double> remapped_rows_correctable;  // rows remapped for correctable errors
  std::optional<double> remapped_rows_uncorrectable;
  std::optional<double> row_remap_failure;  // 1 when a row could not be remapped
  // Profiling (DCGM "DCP") ratios 0-1, from NVML GPM (Hopper and later); nullopt elsewhere.
  std::optional<double> gr_engine_active_ratio;
  std::optional<double> tensor_active_ratio;
  std::optional<double> dram_active_ratio;
  // XID errors: the codes that arrived since the previous sample (each one an event), and how
  // many of each code arrived since the source started (code -> count).
  std::vector<int> new_xids;
  std::map<int, double> xid_counts;
  std::optional<std::vector<GpuProcess>> processes;  // nullopt = unknown
};

// One tick: every GPU of the machine, read together.
using GpuSnapshot = std::vector<GpuSample>;

enum class MetricType { kGauge, kCounter };

// A metric of docs/API.md ("gpu_temperature_celsius"), derived from a sample.
struct MetricDef {
  const char* name;
  const char* help;
  MetricType type;
  bool rollup_max;  // 1-minute rollup keeps the max (bitmasks, counters, codes), else the mean
  std::optional<double> (*extract)(const GpuSample&);
};

// All metrics in a fixed order (the store's columns follow it).
const std::vector<MetricDef>& Metrics();
// nullptr when `name` is not a metric.
const MetricDef* FindMetric(std::string_view name);

// A metric name of an earlier release (see the README changelog) and what it became: the same
// values under a new name (kSame), or a per-second gauge whose quantity is now a counter
// (kRateOf: the old series is the new counter's rate).
struct RenamedMetric {
  enum Kind { kSame, kRateOf };
  const char* old_name;
  const char* new_name;
  Kind kind;
};
const std::vector<RenamedMetric>& RenamedMetrics();
// nullptr when `old_name` is not a renamed metric.
const RenamedMetric* FindRenamedMetric(std::string_view old_name);

// A metric of NVIDIA dcgm-exporter (`--metrics-names dcgm`): its name, Prometheus type, help
// and the value in dcgm-exporter's unit (MHz, MiB, mJ, percent, C, W, 0-1 ratios).
struct DcgmMetricDef {
  const char* name;
  MetricType type;
  const char* help;
  std::optional<double> (*extract)(const GpuSample&);
};
const std::vector<DcgmMetricDef>& DcgmMetrics();
// Names of the set bits of `reasons` ("hw_thermal_slowdown", "sw_power_cap", ...).
std::vector<std::string> ClockEventReasonNames(uint64_t reasons);

// JSON as in docs/API.md /v1/gpus (nulls for unknown). FromJson accepts that same shape.
nlohmann::json SampleToJson(const GpuSample& sample);
Result<GpuSample> SampleFromJson(const nlohmann::json& json);

}  // namespace fulcrum::telemetry
