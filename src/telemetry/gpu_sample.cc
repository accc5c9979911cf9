#include "telemetry/gpu_sample.h"

#include <nlohmann/json.hpp>

namespace fulcrum::telemetry {
namespace {

using Opt = std::optional<double>;

Opt Scaled(const Opt& value, double factor) {
  if (!value) return std::nullopt;
  return *value * factor;
}

Opt ReasonBit(const GpuSample& s, uint64_t mask) {
  if (!s.clock_event_reasons) return std::nullopt;
  return (*s.clock_event_reasons & mask) != 0 ? 1.0 : 0.0;
}

}  // namespace

const std::vector<MetricDef>& Metrics() {
  static const std::vector<MetricDef> kMetrics = {
      {"gpu_utilization_ratio", "Fraction of time a kernel ran on the GPU (0-1)",
       MetricType::kGauge, false,
       [](const GpuSample& s) { return Scaled(s.utilization_gpu_pct, 0.01); }},
      {"gpu_memory_utilization_ratio", "Fraction of time device memory was read or written (0-1)",
       MetricType::kGauge, false,
       [](const GpuSample& s) { return Scaled(s.utilization_memory_pct, 0.01); }},
      {"gpu_memory_used_bytes", "Device memory in use, bytes", MetricType::kGauge, false,
       [](const GpuSample& s) { return s.memory_used_bytes; }},
      {"gpu_memory_total_bytes", "Device memory in total, bytes", MetricType::kGauge, false,
       [](const GpuSample& s) { return s.memory_total_bytes; }},
      {"gpu_memory_used_ratio", "Device memory in use over total (0-1)", MetricType::kGauge, false,
       [](const GpuSample& s) -> Opt {
         if (!s.memory_used_bytes || !s.memory_total_bytes || *s.memory_total_bytes <= 0) {
           return std::nullopt;
         }
         return *s.memory_used_bytes / *s.memory_total_bytes;
       }},
      {"gpu_power_watts", "Power draw, watts", MetricType::kGauge, false,
       [](const GpuSample& s) { return s.power_watts; }},
      {"gpu_power_limit_watts", "Enforced power limit, watts", MetricType::kGauge, false,
       [](const GpuSample& s) { return s.power_limit_watts; }},
      {"gpu_power_used_ratio", "Power draw over the enforced limit (0-1)", MetricType::kGauge,
       false,
       [](const GpuSample& s) -> Opt {
         if (!s.power_watts || !s.power_limit_watts || *s.power_limit_watts <= 0) {
           return std::nullopt;
         }
         return *s.power_watts / *s.power_limit_watts;
       }},
      {"gpu_temperature_celsius", "GPU core temperature, degrees Celsius", MetricType::kGauge,
       false, [](const GpuSample& s) { return s.temperature_celsius; }},
      {"gpu_sm_clock_hertz", "SM clock, hertz", MetricType::kGauge, false,
       [](const GpuSample& s) { return Scaled(s.sm_clock_mhz, 1e6); }},
      {"gpu_memory_clock_hertz", "Memory clock, hertz", MetricType::kGauge, false,
       [](const GpuSample& s) { return Scaled(s.memory_clock_mhz, 1e6); }},
      {"gpu_clock_event_reasons", "Clock event (throttle) reasons, NVML bitmask",
       MetricType::kGauge, true,
       [](const GpuSample& s) -> Opt {
         if (!s.clock_event_reasons) return std::nullopt;
         return static_cast<double>(*s.clock_event_reasons);
       }},
      // The two flags of the shipped rules: hardware thermal slowdown (HwThermalSlowdown) and
      // running at the power limit (SwPowerCap); every other reason stays in the bitmask.
      {"gpu_thermal_slowdown", "1 while the hardware slows the clocks for temperature",
       MetricType::kGauge, true, [](const GpuSample& s) { return ReasonBit(s, kReasonHwThermal); }},
      {"gpu_power_capped", "1 while the clocks are held down by the power limit",
       MetricType::kGauge, true,
       [](const GpuSample& s) { return ReasonBit(s, kReasonSwPowerCap); }},
      {"gpu_ecc_corrected_errors_total", "Corrected ECC errors", MetricType::kCounter, true,
       [](const GpuSample& s) { return s.ecc_corrected; }},
      {"gpu_ecc_uncorrected_errors_total", "Uncorrected ECC errors", MetricType::kCounter, true,
       [](const GpuSample& s) { return s.ecc_uncorrected; }},
      {"gpu_xid_last", "Last XID error code since the agent started (0 = none)", MetricType::kGauge,
       true,
       [](const GpuSample& s) -> Opt {
         if (!s.last_xid) return std::nullopt;
         return static_cast<double>(*s.last_xid);
       }},
      {"gpu_pcie_tx_bytes_total", "Bytes sent over PCIe since the agent started",
       MetricType::kCounter, true, [](const GpuSample& s) { return s.pcie_tx_bytes; }},
      {"gpu_pcie_rx_bytes_total", "Bytes received over PCIe since the agent started",
       MetricType::kCounter, true, [](const GpuSample& s) { return s.pcie_rx_bytes; }},
      {"gpu_memory_temperature_celsius", "Device memory (HBM) temperature, degrees Celsius",
       MetricType::kGauge, false, [](const GpuSample& s) { return s.memory_temperature_celsius; }},
      {"gpu_energy_joules_total", "Energy used since the driver was loaded, joules",
       MetricType::kCounter, true, [](const GpuSample& s) { return s.energy_joules; }},
      {"gpu_pcie_replays_total", "PCIe replays (link-level retries)", MetricType::kCounter, true,
       [](const GpuSample& s) { return s.pcie_replays; }},
      {"gpu_encoder_utilization_ratio", "Fraction of time the video encoder was busy (0-1)",
       MetricType::kGauge, false,
       [](const GpuSample& s) { return Scaled(s.encoder_utilization_pct, 0.01); }},
      {"gpu_decoder_utilization_ratio", "Fraction of time the video decoder was busy (0-1)",
       MetricType::kGauge, false,
       [](const GpuSample& s) { return Scaled(s.decoder_utilization_pct, 0.01); }},
      {"gpu_memory_free_bytes", "Device memory free, bytes", MetricType::kGauge, false,
       [](const GpuSample& s) { return s.memory_free_bytes; }},
      {"gpu_memory_reserved_bytes", "Device memory reserved by the driver and firmware, bytes",
       MetricType::kGauge, false, [](const GpuSample& s) { return s.memory_reserved_bytes; }},
      {"gpu_nvlink_tx_bytes_total", "Data bytes sent over all NVLinks", MetricType::kCounter, true,
       [](const GpuSample& s) { return s.nvlink_tx_bytes; }},
      {"gpu_nvlink_rx_bytes_total", "Data bytes received over all NVLinks", MetricType::kCounter,
       true, [](const GpuSample& s) { return s.nvlink_rx_bytes; }},
      {"gpu_remapped_rows_correctable_total", "Memory rows remapped for correctable errors",
       MetricType::kCounter, true, [](const GpuSample& s) { return s.remapped_rows_correctable; }},
      {"gpu_remapped_rows_uncorrectable_total", "Memory rows remapped for uncorrectable errors",
       MetricType::kCounter, true,
       [](const GpuSample& s) { return s.remapped_rows_uncorrectable; }},
      {"gpu_row_remap_failure", "1 when a memory row could not be remapped", MetricType::kGauge,
       true, [](const GpuSample& s) { return s.row_remap_failure; }},
      {"gpu_gr_engine_active_ratio", "Fraction of time the graphics engine was active (0-1)",
       MetricType::kGauge, false, [](const GpuSample& s) { return s.gr_engine_active_ratio; }},
      {"gpu_tensor_active_ratio", "Fraction of cycles the tensor pipes were active (0-1)",
       MetricType::kGauge, false, [](const GpuSample& s) { return s.tensor_active_ratio; }},
      {"gpu_dram_active_ratio", "Fraction of cycles device memory was busy (0-1)",
       MetricType::kGauge, false, [](const GpuSample& s) { return s.dram_active_ratio; }},
  };
  return kMetrics;
}

const MetricDef* FindMetric(std::string_view name) {
  for (const MetricDef& m : Metrics()) {
    if (name == m.name) return &m;
  }
  return nullptr;
}

const std::vector<RenamedMetric>& RenamedMetrics() {
  // Release 0.x names (README changelog): `_hz` became `_hertz`, and PCIe throughput became
  // byte counters (Prometheus naming, https://prometheus.io/docs/practices/naming/).
  static const std::vector<RenamedMetric> kRenamed = {
      {"gpu_sm_clock_hz", "gpu_sm_clock_hertz", RenamedMetric::kSame},
      {"gpu_memory_clock_hz", "gpu_memory_clock_hertz", RenamedMetric::kSame},
      {"gpu_pcie_tx_bytes_per_second", "gpu_pcie_tx_bytes_total", RenamedMetric::kRateOf},
      {"gpu_pcie_rx_bytes_per_second", "gpu_pcie_rx_bytes_total", RenamedMetric::kRateOf},
  };
  return kRenamed;
}

const RenamedMetric* FindRenamedMetric(std::string_view old_name) {
  for (const RenamedMetric& r : RenamedMetrics()) {
    if (old_name == r.old_name) return &r;
  }
  return nullptr;
}

const std::vector<DcgmMetricDef>& DcgmMetrics() {
  // Names, types, help texts and units of dcgm-exporter's default counters
  // (github.com/NVIDIA/dcgm-exporter@d5e5f510a1b6b393f39a43293ccd9dc985defc79,
  // etc/default-counters.csv): clocks in MHz, framebuffer in MiB, energy in mJ, utilisation in
  // percent, profiling fields as 0-1 ratios, DCGM_FI_PROF_PCIE_* in bytes per second.
  constexpr double kMiB = 1024.0 * 1024.0;
  static const std::vector<DcgmMetricDef> kDcgm = {
      {"DCGM_FI_DEV_SM_CLOCK", MetricType::kGauge, "SM clock frequency (in MHz).",
       [](const GpuSample& s) { return s.sm_clock_mhz; }},
      {"DCGM_FI_DEV_MEM_CLOCK", MetricType::kGauge, "Memory clock frequency (in MHz).",
       [](const GpuSample& s) { return s.memory_clock_mhz; }},
      {"DCGM_FI_DEV_MEMORY_TEMP", MetricType::kGauge, "Memory temperature (in C).",
       [](const GpuSample& s) { return s.memory_temperature_celsius; }},
      {"DCGM_FI_DEV_GPU_TEMP", MetricType::kGauge, "GPU temperature (in C).",
       [](const GpuSample& s) { return s.temperature_celsius; }},
      {"DCGM_FI_DEV_POWER_USAGE", MetricType::kGauge, "Power draw (in W).",
       [](const GpuSample& s) { return s.power_watts; }},
      {"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", MetricType::kCounter,
       "Total energy consumption since boot (in mJ).",
       [](const GpuSample& s) { return Scaled(s.energy_joules, 1000); }},
      {"DCGM_FI_DEV_PCIE_REPLAY_COUNTER", MetricType::kCounter, "Total number of PCIe retries.",
       [](const GpuSample& s) { return s.pcie_replays; }},
      {"DCGM_FI_DEV_GPU_UTIL", MetricType::kGauge, "GPU utilization (in %).",
       [](const GpuSample& s) { return s.utilization_gpu_pct; }},
      {"DCGM_FI_DEV_MEM_COPY_UTIL", MetricType::kGauge, "Memory utilization (in %).",
       [](const GpuSample& s) { return s.utilization_memory_pct; }},
      {"DCGM_FI_DEV_ENC_UTIL", MetricType::kGauge, "Encoder utilization (in %).",
       [](const GpuSample& s) { return s.encoder_utilization_pct; }},
      {"DCGM_FI_DEV_DEC_UTIL", MetricType::kGauge, "Decoder utilization (in %).",
       [](const GpuSample& s) { return s.decoder_utilization_pct; }},
      {"DCGM_FI_DEV_XID_ERRORS", MetricType::kGauge, "Value of the last XID error encountered.",
       [](const GpuSample& s) -> Opt {
         if (!s.last_xid) return std::nullopt;
         return static_cast<double>(*s.last_xid);
       }},
      {"DCGM_FI_DEV_FB_FREE", MetricType::kGauge, "Framebuffer memory free (in MiB).",
       [](const GpuSample& s) { return Scaled(s.memory_free_bytes, 1 / kMiB); }},
      {"DCGM_FI_DEV_FB_USED", MetricType::kGauge, "Framebuffer memory used (in MiB).",
       [](const GpuSample& s) { return Scaled(s.memory_used_bytes, 1 / kMiB); }},
      {"DCGM_FI_DEV_FB_RESERVED", MetricType::kGauge, "Framebuffer memory reserved (in MiB).",
       [](const GpuSample& s) { return Scaled(s.memory_reserved_bytes, 1 / kMiB); }},
      // dcgm-exporter's help says "bandwidth counters"; DCGM sums the NVLink data throughput
      // counters of every link. fulcrum reports the data bytes of both directions.
      {"DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", MetricType::kCounter,
       "Total number of NVLink bandwidth counters for all lanes.",
       [](const GpuSample& s) -> Opt {
         if (!s.nvlink_tx_bytes || !s.nvlink_rx_bytes) return std::nullopt;
         return *s.nvlink_tx_bytes + *s.nvlink_rx_bytes;
       }},
      {"DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", MetricType::kCounter,
       "Number of remapped rows for uncorrectable errors",
       [](const GpuSample& s) { return s.remapped_rows_uncorrectable; }},
      {"DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", MetricType::kCounter,
       "Number of remapped rows for correctable errors",
       [](const GpuSample& s) { return s.remapped_rows_correctable; }},
      {"DCGM_FI_DEV_ROW_REMAP_FAILURE", MetricType::kGauge, "Whether remapping of rows has failed",
       [](const GpuSample& s) { return s.row_remap_failure; }},
      {"DCGM_FI_PROF_GR_ENGINE_ACTIVE", MetricType::kGauge,
       "Ratio of time the graphics engine is active.",
       [](const GpuSample& s) { return s.gr_engine_active_ratio; }},
      {"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", MetricType::kGauge,
       "Ratio of cycles the tensor (HMMA) pipe is active.",
       [](const GpuSample& s) { return s.tensor_active_ratio; }},
      {"DCGM_FI_PROF_DRAM_ACTIVE", MetricType::kGauge,
       "Ratio of cycles the device memory interface is active sending or receiving data.",
       [](const GpuSample& s) { return s.dram_active_ratio; }},
      {"DCGM_FI_PROF_PCIE_TX_BYTES", MetricType::kGauge,
       "The rate of data transmitted over the PCIe bus - including both protocol headers and data "
       "payloads - in bytes per second.",
       [](const GpuSample& s) { return s.pcie_tx_bytes_per_second; }},
      {"DCGM_FI_PROF_PCIE_RX_BYTES", MetricType::kGauge,
       "The rate of data received over the PCIe bus - including both protocol headers and data "
       "payloads - in bytes per second.",
       [](const GpuSample& s) { return s.pcie_rx_bytes_per_second; }},
  };
  return kDcgm;
}

std::vector<std::string> ClockEventReasonNames(uint64_t reasons) {
  static const std::pair<uint64_t, const char*> kNames[] = {
      {kReasonGpuIdle, "gpu_idle"},
      {kReasonAppClocks, "applications_clocks"},
      {kReasonSwPowerCap, "sw_power_cap"},
      {kReasonHwSlowdown, "hw_slowdown"},
      {kReasonSyncBoost, "sync_boost"},
      {kReasonSwThermal, "sw_thermal_slowdown"},
      {kReasonHwThermal, "hw_thermal_slowdown"},
      {kReasonHwPowerBrake, "hw_power_brake_slowdown"},
  };
  std::vector<std::string> names;
  for (const auto& [bit, name] : kNames) {
    if (reasons & bit) names.emplace_back(name);
  }
  return names;
}

namespace {

nlohmann::json OptJson(const std::optional<double>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

std::optional<double> OptFrom(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  if (!it->is_number())
    throw std::invalid_argument(std::string("field '") + key + "' is not a number");
  return it->get<double>();
}

// The optional numeric fields of /v1/gpus, in their JSON order, after the fixed ones.
struct NumberField {
  const char* key;
  std::optional<double> GpuSample::*member;
};
constexpr NumberField kNumberFields[] = {
    {"utilization_gpu_pct", &GpuSample::utilization_gpu_pct},
    {"utilization_memory_pct", &GpuSample::utilization_memory_pct},
    {"memory_used_bytes", &GpuSample::memory_used_bytes},
    {"memory_total_bytes", &GpuSample::memory_total_bytes},
    {"power_watts", &GpuSample::power_watts},
    {"power_limit_watts", &GpuSample::power_limit_watts},
    {"temperature_celsius", &GpuSample::temperature_celsius},
    {"sm_clock_mhz", &GpuSample::sm_clock_mhz},
    {"memory_clock_mhz", &GpuSample::memory_clock_mhz},
    {"ecc_corrected", &GpuSample::ecc_corrected},
    {"ecc_uncorrected", &GpuSample::ecc_uncorrected},
    {"pcie_tx_bytes_per_second", &GpuSample::pcie_tx_bytes_per_second},
    {"pcie_rx_bytes_per_second", &GpuSample::pcie_rx_bytes_per_second},
    {"pcie_tx_bytes", &GpuSample::pcie_tx_bytes},
    {"pcie_rx_bytes", &GpuSample::pcie_rx_bytes},
    {"memory_temperature_celsius", &GpuSample::memory_temperature_celsius},
    {"energy_joules", &GpuSample::energy_joules},
    {"pcie_replays", &GpuSample::pcie_replays},
    {"encoder_utilization_pct", &GpuSample::encoder_utilization_pct},
    {"decoder_utilization_pct", &GpuSample::decoder_utilization_pct},
    {"memory_free_bytes", &GpuSample::memory_free_bytes},
    {"memory_reserved_bytes", &GpuSample::memory_reserved_bytes},
    {"nvlink_tx_bytes", &GpuSample::nvlink_tx_bytes},
    {"nvlink_rx_bytes", &GpuSample::nvlink_rx_bytes},
    {"remapped_rows_correctable", &GpuSample::remapped_rows_correctable},
    {"remapped_rows_uncorrectable", &GpuSample::remapped_rows_uncorrectable},
    {"row_remap_failure", &GpuSample::row_remap_failure},
    {"gr_engine_active_ratio", &GpuSample::gr_engine_active_ratio},
    {"tensor_active_ratio", &GpuSample::tensor_active_ratio},
    {"dram_active_ratio", &GpuSample::dram_active_ratio},
};

}  // namespace

nlohmann::json SampleToJson(const GpuSample& s) {
  nlohmann::json j;
  j["index"] = s.index;
  j["uuid"] = s.uuid;
  j["name"] = s.name;
  j["pci_bus_id"] = s.pci_bus_id.empty() ? nlohmann::json(nullptr) : nlohmann::json(s.pci_bus_id);
  j["minor"] = s.minor ? nlohmann::json(*s.minor) : nlohmann::json(nullptr);
  j["driver_version"] =
      s.driver_version.empty() ? nlohmann::json(nullptr) : nlohmann::json(s.driver_version);
  j["timestamp"] = s.timestamp;
  for (const NumberField& f : kNumberFields) j[f.key] = OptJson(s.*f.member);
  if (s.clock_event_reasons) {
    j["clock_event_reasons"] = ClockEventReasonNames(*s.clock_event_reasons);
    j["clock_event_reasons_mask"] = *s.clock_event_reasons;
  } else {
    j["clock_event_reasons"] = nullptr;
    j["clock_event_reasons_mask"] = nullptr;
  }
  j["last_xid"] = s.last_xid ? nlohmann::json(*s.last_xid) : nlohmann::json(nullptr);
  j["new_xids"] = s.new_xids;
  nlohmann::json counts = nlohmann::json::object();
  for (const auto& [code, n] : s.xid_counts) counts[std::to_string(code)] = n;
  j["xid_counts"] = std::move(counts);
  if (s.processes) {
    nlohmann::json procs = nlohmann::json::array();
    for (const GpuProcess& p : *s.processes) {
      procs.push_back({{"pid", p.pid}, {"used_memory_bytes", OptJson(p.used_memory_bytes)}});
    }
    j["processes"] = std::move(procs);
  } else {
    j["processes"] = nullptr;
  }
  return j;
}

Result<GpuSample> SampleFromJson(const nlohmann::json& j) {
  try {
    if (!j.is_object()) return Status::InvalidInput("GPU sample: expected an object");
    GpuSample s;
    s.index = j.at("index").get<int>();
    s.uuid = j.value("uuid", "");
    s.name = j.value("name", "");
    if (auto it = j.find("pci_bus_id"); it != j.end() && it->is_string()) s.pci_bus_id = *it;
    if (auto v = OptFrom(j, "minor")) s.minor = static_cast<int>(*v);
    if (auto it = j.find("driver_version"); it != j.end() && it->is_string()) {
      s.driver_version = *it;
    }
    s.timestamp = j.value("timestamp", 0.0);
    for (const NumberField& f : kNumberFields) s.*f.member = OptFrom(j, f.key);
    if (auto mask = OptFrom(j, "clock_event_reasons_mask")) {
      s.clock_event_reasons = static_cast<uint64_t>(*mask);
    }
    if (auto xid = OptFrom(j, "last_xid")) s.last_xid = static_cast<int>(*xid);
    if (auto it = j.find("new_xids"); it != j.end() && it->is_array()) {
      for (const auto& code : *it) s.new_xids.push_back(code.get<int>());
    }
    if (auto it = j.find("xid_counts"); it != j.end() && it->is_object()) {
      for (const auto& [code, n] : it->items()) s.xid_counts[std::stoi(code)] = n.get<double>();
    }
    auto procs = j.find("processes");
    if (procs != j.end() && procs->is_array()) {
      std::vector<GpuProcess> list;
      for (const auto& p : *procs) {
        list.push_back({p.at("pid").get<int64_t>(), OptFrom(p, "used_memory_bytes")});
      }
      s.processes = std::move(list);
    }
    return s;
  } catch (const std::exception& e) {
    return Status::InvalidInput(std::string("GPU sample: ") + e.what());
  }
}

}  // namespace fulcrum::telemetry

#include "telemetry/gpu_source.h"

namespace fulcrum::telemetry {

void MergeFastFields(const GpuSample& fast, GpuSample& full) {
  full.timestamp = fast.timestamp;
  full.utilization_gpu_pct = fast.utilization_gpu_pct;
  full.utilization_memory_pct = fast.utilization_memory_pct;
  full.temperature_celsius = fast.temperature_celsius;
  full.power_watts = fast.power_watts;
  full.new_xids = fast.new_xids;
  full.xid_counts = fast.xid_counts;
  if (fast.last_xid) full.last_xid = fast.last_xid;
}

void FastFieldAggregate::Add(const GpuSnapshot& fast) {
  if (sums_.size() < fast.size()) sums_.resize(fast.size());
  for (size_t i = 0; i < fast.size(); ++i) {
    const GpuSample& s = fast[i];
    Sums& sum = sums_[i];
    auto add = [](const std::optional<double>& v, double& total, int& n) {
      if (!v) return;
      total += *v;
      ++n;
    };
    add(s.utilization_gpu_pct, sum.util, sum.util_n);
    add(s.utilization_memory_pct, sum.util_mem, sum.util_mem_n);
    add(s.temperature_celsius, sum.temperature, sum.temperature_n);
    add(s.power_watts, sum.power, sum.power_n);
    sum.xids.insert(sum.xids.end(), s.new_xids.begin(), s.new_xids.end());
  }
}

void FastFieldAggregate::Apply(GpuSnapshot& full) {
  for (size_t i = 0; i < full.size() && i < sums_.size(); ++i) {
    const Sums& sum = sums_[i];
    GpuSample& s = full[i];
    auto mean = [](std::optional<double>& field, double total, int n) {
      if (n > 0) field = total / n;
    };
    mean(s.utilization_gpu_pct, sum.util, sum.util_n);
    mean(s.utilization_memory_pct, sum.util_mem, sum.util_mem_n);
    mean(s.temperature_celsius, sum.temperature, sum.temperature_n);
    mean(s.power_watts, sum.power, sum.power_n);
    s.new_xids = sum.xids;
  }
  sums_.assign(sums_.size(), Sums{});
}

}  // namespace fulcrum::telemetry
