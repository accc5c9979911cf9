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
      {"gpu_temperature_celsius", "GPU core temperature, degrees Celsius", MetricType::kGauge,
       false, [](const GpuSample& s) { return s.temperature_celsius; }},
      {"gpu_sm_clock_hz", "SM clock, hertz", MetricType::kGauge, false,
       [](const GpuSample& s) { return Scaled(s.sm_clock_mhz, 1e6); }},
      {"gpu_memory_clock_hz", "Memory clock, hertz", MetricType::kGauge, false,
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
      {"gpu_pcie_tx_bytes_per_second", "PCIe transmit throughput, bytes per second",
       MetricType::kGauge, false, [](const GpuSample& s) { return s.pcie_tx_bytes_per_second; }},
      {"gpu_pcie_rx_bytes_per_second", "PCIe receive throughput, bytes per second",
       MetricType::kGauge, false, [](const GpuSample& s) { return s.pcie_rx_bytes_per_second; }},
  };
  return kMetrics;
}

const MetricDef* FindMetric(std::string_view name) {
  for (const MetricDef& m : Metrics()) {
    if (name == m.name) return &m;
  }
  return nullptr;
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

}  // namespace

nlohmann::json SampleToJson(const GpuSample& s) {
  nlohmann::json j;
  j["index"] = s.index;
  j["uuid"] = s.uuid;
  j["name"] = s.name;
  j["timestamp"] = s.timestamp;
  j["utilization_gpu_pct"] = OptJson(s.utilization_gpu_pct);
  j["utilization_memory_pct"] = OptJson(s.utilization_memory_pct);
  j["memory_used_bytes"] = OptJson(s.memory_used_bytes);
  j["memory_total_bytes"] = OptJson(s.memory_total_bytes);
  j["power_watts"] = OptJson(s.power_watts);
  j["power_limit_watts"] = OptJson(s.power_limit_watts);
  j["temperature_celsius"] = OptJson(s.temperature_celsius);
  j["sm_clock_mhz"] = OptJson(s.sm_clock_mhz);
  j["memory_clock_mhz"] = OptJson(s.memory_clock_mhz);
  if (s.clock_event_reasons) {
    j["clock_event_reasons"] = ClockEventReasonNames(*s.clock_event_reasons);
    j["clock_event_reasons_mask"] = *s.clock_event_reasons;
  } else {
    j["clock_event_reasons"] = nullptr;
    j["clock_event_reasons_mask"] = nullptr;
  }
  j["ecc_corrected"] = OptJson(s.ecc_corrected);
  j["ecc_uncorrected"] = OptJson(s.ecc_uncorrected);
  j["last_xid"] = s.last_xid ? nlohmann::json(*s.last_xid) : nlohmann::json(nullptr);
  j["pcie_tx_bytes_per_second"] = OptJson(s.pcie_tx_bytes_per_second);
  j["pcie_rx_bytes_per_second"] = OptJson(s.pcie_rx_bytes_per_second);
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
    s.timestamp = j.value("timestamp", 0.0);
    s.utilization_gpu_pct = OptFrom(j, "utilization_gpu_pct");
    s.utilization_memory_pct = OptFrom(j, "utilization_memory_pct");
    s.memory_used_bytes = OptFrom(j, "memory_used_bytes");
    s.memory_total_bytes = OptFrom(j, "memory_total_bytes");
    s.power_watts = OptFrom(j, "power_watts");
    s.power_limit_watts = OptFrom(j, "power_limit_watts");
    s.temperature_celsius = OptFrom(j, "temperature_celsius");
    s.sm_clock_mhz = OptFrom(j, "sm_clock_mhz");
    s.memory_clock_mhz = OptFrom(j, "memory_clock_mhz");
    if (auto mask = OptFrom(j, "clock_event_reasons_mask")) {
      s.clock_event_reasons = static_cast<uint64_t>(*mask);
    }
    s.ecc_corrected = OptFrom(j, "ecc_corrected");
    s.ecc_uncorrected = OptFrom(j, "ecc_uncorrected");
    if (auto xid = OptFrom(j, "last_xid")) s.last_xid = static_cast<int>(*xid);
    s.pcie_tx_bytes_per_second = OptFrom(j, "pcie_tx_bytes_per_second");
    s.pcie_rx_bytes_per_second = OptFrom(j, "pcie_rx_bytes_per_second");
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
