#include "telemetry/sim_source.h"

#include <cmath>
#include <fstream>
#include <sstream>

#include "core/input_error.h"
#include "core/parse.h"
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
  std::ifstream in(path);
  if (!in) return Status::NotFound("cannot read scenario file " + path);
  std::stringstream text;
  text << in.rdbuf();
  return ParseScenario(text.str(), path);
}

SimSource::SimSource(int gpu_count, std::vector<Fault> faults, const Clock& clock)
    : gpu_count_(gpu_count),
      faults_(std::move(faults)),
      clock_(clock),
      start_(clock.MonotonicSeconds()) {}

GpuSample SimSource::Healthy(int gpu, double t) const {
  GpuSample s;
  s.index = gpu;
  char uuid[64];
  std::snprintf(uuid, sizeof uuid, "GPU-5151c0de-0000-4000-8000-%012d", gpu);
  s.uuid = uuid;
  s.name = kSimName;
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
  return s;
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
      gone.last_xid = s.last_xid;
      s = gone;
    }
    snapshot.push_back(std::move(s));
  }
  return snapshot;
}

}  // namespace fulcrum::telemetry
