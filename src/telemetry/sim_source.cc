#include "telemetry/sim_source.h"

#include <cmath>

#include "core/input_error.h"
#include "core/parse.h"
#include "core/text_file.h"
#include "core/yaml.h"

namespace fulcrum::telemetry {
namespace {

// The simulated device: an H100 SXM5 80 GB. Figures from NVIDIA's H100 datasheet (700 W TDP,
// 1980 MHz max SM boost) and nvidia-smi on that part (81559 MiB total, 2619 MHz HBM3 clock).
constexpr const char* kSimName = "NVIDIA H100 80GB HBM3 (sim)";
constexpr double kTotalBytes = 81559.0 * 1024 * 1024;
constexpr double kPowerLimitWatts = 700;
constexpr double kSmClockMhz = 1980;
constexpr double kMemClockMhz = 2619;
constexpr double kPi = 3.14159265358979323846;
constexpr double kMiB = 1024.0 * 1024;
// Illustrative figures for the fields a datasheet does not give: what the driver reserves, a
// memory (HBM) temperature a few degrees above the core, NVLink traffic of data parallelism.
constexpr double kReservedBytes = 512 * kMiB;
constexpr double kNvlinkBytesPerSecond = 40e9;
constexpr const char* kSimDriverVersion = "550.54.15";

struct FaultName {
  const char* name;
  FaultKind kind;
};
constexpr FaultName kFaultNames[] = {
    {"overheat", FaultKind::kOverheat},
    {"heat-ramp", FaultKind::kHeatRamp},
    {"thermal-slowdown", FaultKind::kThermalSlowdown},
    {"power-cap", FaultKind::kPowerCap},
    {"ecc-uncorrectable", FaultKind::kEccUncorrectable},
    {"utilization-collapse", FaultKind::kUtilizationCollapse},
    {"memory-leak", FaultKind::kMemoryLeak},
    {"process-exit", FaultKind::kProcessExit},
    {"hang", FaultKind::kHang},
    {"recover", FaultKind::kRecover},
};

std::string KnownFaults() {
  std::string list;
  for (const auto& f : kFaultNames) list += std::string(f.name) + ", ";
  return list + "xid:N";
}

}  // namespace

Result<Fault> ParseFaultName(const std::string& text) {
  Fault fault;
  fault.text = text;
  std::string lower = ToLower(Trim(text));
  for (char& c : lower) {
    if (c == '_') c = '-';
  }
  if (lower.rfind("xid:", 0) == 0) {
    auto code = ParseInt(lower.substr(4));
    if (!code.ok() || *code <= 0 || *code > 1000) {
      return Status::InvalidInput("fault '" + text +
                                  "': expected xid:N with N a positive XID code");
    }
    fault.kind = FaultKind::kXid;
    fault.xid = static_cast<int>(*code);
    return fault;
  }
  if (lower == "ecc") lower = "ecc-uncorrectable";
  for (const auto& f : kFaultNames) {
    if (lower == f.name) {
      fault.kind = f.kind;
      return fault;
    }
  }
  return Status::InvalidInput("unknown fault '" + text + "'; expected one of " + KnownFaults());
}

Result<std::vector<Fault>> ParseScenario(const std::string& yaml_text, const std::string& origin) {
  FULCRUM_ASSIGN_OR_RETURN(YamlNode root, LoadYaml(yaml_text, origin));
  YamlNode list = root.Named("faults");
  if (root.IsMap()) {
    FULCRUM_RETURN_IF_ERROR(root.CheckKeys({"faults"}));
    FULCRUM_ASSIGN_OR_RETURN(list, root.Required("faults"));
  }
  if (list.IsNull()) return std::vector<Fault>{};
  FULCRUM_ASSIGN_OR_RETURN(std::vector<YamlNode> entries,
                           list.Items("a list of {at, gpu, fault} entries"));
  std::vector<Fault> faults;
  for (const YamlNode& entry : entries) {
    FULCRUM_RETURN_IF_ERROR(
        entry.CheckKeys({"at", "gpu", "fault", "for", "rate", "over"}, "{at, gpu, fault}"));
    FULCRUM_ASSIGN_OR_RETURN(YamlNode fault_node, entry.Required("fault"));
    FULCRUM_ASSIGN_OR_RETURN(std::string fault_text, fault_node.Text());
    auto parsed = ParseFaultName(fault_text);
    if (!parsed.ok()) {
      std::vector<std::string> names;
      for (const auto& f : kFaultNames) names.emplace_back(f.name);
      return InputError({origin, fault_node.line(), fault_node.field(),
                         "a fault (" + KnownFaults() + ")", fault_text,
                         NearestNames(fault_text, names)});
    }
    Fault fault = *parsed;
    FULCRUM_ASSIGN_OR_RETURN(YamlNode at, entry.Required("at"));
    FULCRUM_ASSIGN_OR_RETURN(fault.at_seconds, at.Duration());
    FULCRUM_ASSIGN_OR_RETURN(YamlNode gpu, entry.Required("gpu"));
    FULCRUM_ASSIGN_OR_RETURN(int64_t index, gpu.Integer(0, 1 << 20, "a GPU index >= 0"));
    fault.gpu = static_cast<int>(index);
    if (auto v = entry.Find("for")) {
      FULCRUM_ASSIGN_OR_RETURN(fault.for_seconds, v->Duration());
    }
    if (auto v = entry.Find("rate")) {
      FULCRUM_ASSIGN_OR_RETURN(fault.rate, v->Number("a rate in C/s > 0", YamlNode::kAboveZero));
    }
    if (auto v = entry.Find("over")) {
      FULCRUM_ASSIGN_OR_RETURN(fault.ramp_seconds,
                               v->Duration("a duration > 0", YamlNode::kAboveZero));
    }
    faults.push_back(fault);
  }
  return faults;
}

Result<std::vector<Fault>> LoadScenario(const std::string& path) {
  FULCRUM_ASSIGN_OR_RETURN(std::string text, ReadTextFile(path, "a sim scenario (YAML)"));
  return ParseScenario(text, path);
}

SimSource::SimSource(int gpu_count, std::vector<Fault> faults, const Clock& clock)
    : gpu_count_(gpu_count),
      faults_(std::move(faults)),
      xid_delivered_(faults_.size(), false),
      counters_(static_cast<size_t>(std::max(gpu_count, 0))),
      clock_(clock),
      start_(clock.MonotonicSeconds()) {}

GpuSample SimSource::Healthy(int gpu, double t) const {
  GpuSample s;
  s.index = gpu;
  char uuid[64];
  std::snprintf(uuid, sizeof uuid, "GPU-5151c0de-0000-4000-8000-%012d", gpu);
  s.uuid = uuid;
  s.name = kSimName;
  char bus[32];
  std::snprintf(bus, sizeof bus, "00000000:%02X:00.0", 0x18 + 0x10 * gpu);
  s.pci_bus_id = bus;
  s.minor = gpu;
  s.driver_version = kSimDriverVersion;
  // A training workload: 88 % busy with a slow +-6 % wave (one minute period) per GPU.
  double util = 88 + 6 * std::sin(2 * kPi * t / 60 + gpu);
  s.utilization_gpu_pct = std::round(util);
  s.utilization_memory_pct = std::round(util * 0.45);
  s.memory_total_bytes = kTotalBytes;
  s.memory_used_bytes = 62.0 * 1024 * 1024 * 1024;
  s.power_limit_watts = kPowerLimitWatts;
  s.power_watts = std::round(120 + 5.2 * util);
  s.temperature_celsius = std::round(45 + 0.25 * util);
  s.sm_clock_mhz = kSmClockMhz;
  s.memory_clock_mhz = kMemClockMhz;
  s.clock_event_reasons = 0;
  s.ecc_corrected = 0;
  s.ecc_uncorrected = 0;
  s.last_xid = 0;
  s.pcie_tx_bytes_per_second = 2.0e9 + 1e8 * gpu;
  s.pcie_rx_bytes_per_second = 1.5e9 + 1e8 * gpu;
  s.processes = std::vector<GpuProcess>{{10000 + gpu, 60.0 * 1024 * 1024 * 1024}};
  s.memory_temperature_celsius = *s.temperature_celsius + 6;
  s.memory_reserved_bytes = kReservedBytes;
  s.pcie_replays = 0;
  s.encoder_utilization_pct = 0;
  s.decoder_utilization_pct = 0;
  s.remapped_rows_correctable = 0;
  s.remapped_rows_uncorrectable = 0;
  s.row_remap_failure = 0;
  s.gr_engine_active_ratio = util / 100 * 0.98;
  s.tensor_active_ratio = util / 100 * 0.45;
  s.dram_active_ratio = util / 100 * 0.4;
  return s;
}

void SimSource::Accumulate(GpuSample& s, double t, bool lost) {
  Counters& c = counters_[static_cast<size_t>(s.index)];
  double dt = c.last_at < 0 ? 0 : std::max(0.0, s.timestamp - c.last_at);
  c.last_at = s.timestamp;
  for (size_t i = 0; i < faults_.size(); ++i) {
    const Fault& f = faults_[i];
    if (f.kind != FaultKind::kXid || f.gpu != s.index || f.at_seconds > t || xid_delivered_[i]) {
      continue;
    }
    xid_delivered_[i] = true;
    s.new_xids.push_back(f.xid);
    c.xid_counts[f.xid] += 1;
  }
  s.xid_counts = c.xid_counts;
  if (lost) return;
  bool busy = s.utilization_gpu_pct.value_or(0) > 5;
  c.energy_joules += s.power_watts.value_or(0) * dt;
  c.pcie_tx += s.pcie_tx_bytes_per_second.value_or(0) * dt;
  c.pcie_rx += s.pcie_rx_bytes_per_second.value_or(0) * dt;
  c.nvlink_tx += (busy ? kNvlinkBytesPerSecond : 0) * dt;
  c.nvlink_rx += (busy ? kNvlinkBytesPerSecond : 0) * dt;
  s.energy_joules = c.energy_joules;
  s.pcie_tx_bytes = c.pcie_tx;
  s.pcie_rx_bytes = c.pcie_rx;
  s.nvlink_tx_bytes = c.nvlink_tx;
  s.nvlink_rx_bytes = c.nvlink_rx;
  if (s.memory_total_bytes && s.memory_used_bytes) {
    s.memory_free_bytes =
        std::max(0.0, *s.memory_total_bytes - *s.memory_used_bytes - kReservedBytes);
  }
}

Result<GpuSnapshot> SimSource::Sample() {
  double t = clock_.MonotonicSeconds() - start_;
  GpuSnapshot snapshot;
  for (int gpu = 0; gpu < gpu_count_; ++gpu) {
    GpuSample s = Healthy(gpu, t);
    s.timestamp = clock_.UnixSeconds();
    double cleared_at = -1;
    for (const Fault& f : faults_) {
      if (f.gpu == gpu && f.kind == FaultKind::kRecover && f.at_seconds <= t) {
        cleared_at = std::max(cleared_at, f.at_seconds);
      }
    }
    bool lost = false;
    for (const Fault& f : faults_) {
      if (f.gpu != gpu || f.at_seconds > t || f.at_seconds < cleared_at) continue;
      double since = t - f.at_seconds;
      bool active = !f.for_seconds || since < *f.for_seconds;
      switch (f.kind) {
        case FaultKind::kEccUncorrectable:  // a counter: past errors stay counted
          *s.ecc_uncorrected += 1;
          continue;
        case FaultKind::kXid:  // the last XID stays reported
          s.last_xid = f.xid;
          if (f.xid == 79 && active) lost = true;  // fallen off the bus
          continue;
        default:
          break;
      }
      if (!active) continue;
      switch (f.kind) {
        case FaultKind::kOverheat:
          s.temperature_celsius = 95;
          break;
        case FaultKind::kHeatRamp:
          s.temperature_celsius = std::min(100.0, *s.temperature_celsius + f.rate * since);
          break;
        case FaultKind::kThermalSlowdown:
          *s.clock_event_reasons |= kReasonHwThermal | kReasonHwSlowdown;
          s.sm_clock_mhz = std::round(kSmClockMhz * 0.6);
          break;
        case FaultKind::kPowerCap:
          *s.clock_event_reasons |= kReasonSwPowerCap;
          s.power_watts = kPowerLimitWatts;
          s.sm_clock_mhz = std::round(kSmClockMhz * 0.8);
          break;
        case FaultKind::kUtilizationCollapse:
          s.utilization_gpu_pct = 2;
          s.utilization_memory_pct = 1;
          s.power_watts = 130;
          break;
        case FaultKind::kMemoryLeak:
          s.memory_used_bytes = std::min(
              kTotalBytes, *s.memory_used_bytes + (kTotalBytes - *s.memory_used_bytes) *
                                                      std::min(1.0, since / f.ramp_seconds));
          break;
        case FaultKind::kProcessExit:
          s.processes = std::vector<GpuProcess>{};
          s.utilization_gpu_pct = 0;
          s.utilization_memory_pct = 0;
          s.memory_used_bytes = 0.5 * 1024 * 1024;
          s.power_watts = 70;
          *s.clock_event_reasons |= kReasonGpuIdle;
          break;
        case FaultKind::kHang:
          s.utilization_gpu_pct = 100;
          s.power_watts = std::round(kPowerLimitWatts * 0.25);
          s.tensor_active_ratio = 0;
          s.dram_active_ratio = 0.01;
          s.pcie_tx_bytes_per_second = 1e6;
          s.pcie_rx_bytes_per_second = 1e6;
          break;
        default:
          break;
      }
    }
    if (lost) {
      GpuSample gone;
      gone.index = s.index;
      gone.uuid = s.uuid;
      gone.name = s.name;
      gone.timestamp = s.timestamp;
      gone.pci_bus_id = s.pci_bus_id;
      gone.minor = s.minor;
      gone.driver_version = s.driver_version;
      gone.last_xid = s.last_xid;
      s = gone;
    }
    Accumulate(s, t, lost);
    snapshot.push_back(std::move(s));
  }
  return snapshot;
}

}  // namespace fulcrum::telemetry
