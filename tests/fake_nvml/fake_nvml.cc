// A fake libnvidia-ml.so.1 for tests: implements the NVML C functions fulcrum loads, with values
// scripted in the text file named by $FAKE_NVML_SCRIPT (re-read whenever NVML is polled for
// events, i.e. at the start of every sample). Script lines:
//   count N                          number of GPUs (default 1)
//   gpu I FIELD VALUE                FIELD: name uuid util_gpu util_mem mem_used mem_total
//                                    power_mw power_limit_mw temperature sm_clock mem_clock
//                                    reasons ecc_corrected ecc_uncorrected pcie_tx_kb pcie_rx_kb
//                                    processes mem_reserved enc_util dec_util memory_temp
//                                    energy_mj pcie_replay nvlink_tx_kib nvlink_rx_kib
//                                    remapped_cor remapped_unc remap_failure pci_bus_id minor
//                                    gpm (1 = GPM supported; default unsupported) gpm_graphics
//                                    gpm_tensor gpm_dram (percent);
//                                    VALUE `unsupported` answers NOT_SUPPORTED
//   gpu I lost                       every getter answers GPU_IS_LOST
//   gpu I process PID BYTES          a compute process
//   xid I CODE                       one XID critical event (delivered once per script line)
//   driver VERSION                   nvmlSystemGetDriverVersion (default 550.54.15)
// fakeNvmlCallCount("nvmlDeviceGetPowerUsage") counts calls, so tests can check probing.
#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "telemetry/nvml_api.h"

namespace {

struct FakeGpu {
  std::map<std::string, std::string> fields;
  std::vector<std::pair<unsigned, unsigned long long>> processes;
  bool lost = false;
};

struct State {
  std::mutex mu;
  unsigned count = 1;
  std::vector<FakeGpu> gpus;
  std::vector<std::pair<int, std::pair<unsigned, unsigned long long>>> xids;  // line, gpu, code
  std::set<int> delivered;
  std::string driver_version = "550.54.15";
  std::map<std::string, int> calls;
  bool initialised = false;
};

State& S() {
  static State state;
  return state;
}

void Load() {
  State& s = S();
  s.count = 1;
  s.gpus.assign(16, FakeGpu{});
  s.xids.clear();
  s.driver_version = "550.54.15";
  const char* path = std::getenv("FAKE_NVML_SCRIPT");
  if (path == nullptr) return;
  std::ifstream in(path);
  std::string line;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    std::istringstream words(line);
    std::string kind;
    words >> kind;
    if (kind == "count") {
      words >> s.count;
    } else if (kind == "gpu") {
      unsigned i = 0;
      std::string field, value;
      words >> i >> field;
      if (i >= s.gpus.size()) continue;
      if (field == "lost") {
        s.gpus[i].lost = true;
      } else if (field == "process") {
        unsigned pid = 0;
        unsigned long long bytes = 0;
        words >> pid >> bytes;
        s.gpus[i].processes.push_back({pid, bytes});
      } else {
        std::getline(words >> std::ws, value);
        s.gpus[i].fields[field] = value;
      }
    } else if (kind == "driver") {
      words >> s.driver_version;
    } else if (kind == "xid") {
      unsigned i = 0;
      unsigned long long code = 0;
      words >> i >> code;
      s.xids.push_back({line_no, {i, code}});
    }
  }
}

nvmlDevice_t Handle(unsigned i) {
  return reinterpret_cast<nvmlDevice_t>(static_cast<uintptr_t>(i + 1));
}
unsigned Index(nvmlDevice_t d) { return static_cast<unsigned>(reinterpret_cast<uintptr_t>(d) - 1); }

// Looks up FIELD of the device; returns an NVML code and, on success, the value.
template <typename T>
nvmlReturn_t Get(const char* fn, nvmlDevice_t d, const std::string& field, T fallback, T* out) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  s.calls[fn]++;
  if (!s.initialised) return NVML_ERROR_UNINITIALIZED;
  unsigned i = Index(d);
  if (i >= s.count) return NVML_ERROR_INVALID_ARGUMENT;
  if (s.gpus[i].lost) return NVML_ERROR_GPU_IS_LOST;
  auto it = s.gpus[i].fields.find(field);
  if (it == s.gpus[i].fields.end()) {
    *out = fallback;
    return NVML_SUCCESS;
  }
  if (it->second == "unsupported") return NVML_ERROR_NOT_SUPPORTED;
  *out = static_cast<T>(std::strtoull(it->second.c_str(), nullptr, 10));
  return NVML_SUCCESS;
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) int fakeNvmlCallCount(const char* fn) {
  std::lock_guard<std::mutex> lock(S().mu);
  return S().calls[fn];
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlInit_v2() {
  std::lock_guard<std::mutex> lock(S().mu);
  Load();
  S().delivered.clear();  // a new session: events of an earlier one are not replayed
  S().initialised = true;
  return NVML_SUCCESS;
}
__attribute__((visibility("default"))) nvmlReturn_t nvmlShutdown() {
  std::lock_guard<std::mutex> lock(S().mu);
  S().initialised = false;
  return NVML_SUCCESS;
}
__attribute__((visibility("default"))) const char* nvmlErrorString(nvmlReturn_t rc) {
  switch (rc) {
    case NVML_ERROR_NOT_SUPPORTED:
      return "Not Supported";
    case NVML_ERROR_GPU_IS_LOST:
      return "GPU is lost";
    default:
      return "Fake NVML error";
  }
}
__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetCount_v2(unsigned* count) {
  std::lock_guard<std::mutex> lock(S().mu);
  *count = S().count;
  return NVML_SUCCESS;
}
__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned i,
                                                                                  nvmlDevice_t* d) {
  std::lock_guard<std::mutex> lock(S().mu);
  if (i >= S().count) return NVML_ERROR_INVALID_ARGUMENT;
  *d = Handle(i);
  return NVML_SUCCESS;
}

static nvmlReturn_t GetString(nvmlDevice_t d, const std::string& field, const std::string& fallback,
                              char* buf, unsigned len) {
  std::lock_guard<std::mutex> lock(S().mu);
  unsigned i = Index(d);
  if (i >= S().count) return NVML_ERROR_INVALID_ARGUMENT;
  auto it = S().gpus[i].fields.find(field);
  std::string value = it == S().gpus[i].fields.end() ? fallback : it->second;
  if (value.size() + 1 > len) return NVML_ERROR_INSUFFICIENT_SIZE;
  std::memcpy(buf, value.c_str(), value.size() + 1);
  return NVML_SUCCESS;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t d, char* buf,
                                                                      unsigned len) {
  return GetString(d, "name", "Fake GPU", buf, len);
}
__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char* buf,
                                                                      unsigned len) {
  return GetString(d, "uuid", "GPU-fa4e0000-0000-0000-0000-00000000000" + std::to_string(Index(d)),
                   buf, len);
}
__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetUtilizationRates(
    nvmlDevice_t d, nvmlUtilization_t* u) {
  nvmlReturn_t rc = Get("nvmlDeviceGetUtilizationRates", d, "util_gpu", 50u, &u->gpu);
  if (rc != NVML_SUCCESS) return rc;
  return Get("nvmlDeviceGetUtilizationRates.memory", d, "util_mem", 20u, &u->memory);
}
__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t d,
                                                                            nvmlMemory_t* m) {
  nvmlReturn_t rc = Get("nvmlDeviceGetMemoryInfo", d, "mem_total", 85899345920ull, &m->total);
  if (rc != NVML_SUCCESS) return rc;
  rc = Get("nvmlDeviceGetMemoryInfo.used", d, "mem_used", 1073741824ull, &m->used);
  m->free = m->total - m->used;
  return rc;
}
__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t d,
                                                                            unsigned* mw) {
  return Get("nvmlDeviceGetPowerUsage", d, "power_mw", 300000u, mw);
}
__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t d,
                                                                                    unsigned* mw) {
  return Get("nvmlDeviceGetEnforcedPowerLimit", d, "power_limit_mw", 700000u, mw);
}
__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t d,
                                                                             unsigned sensor,
                                                                             unsigned* c) {
  if (sensor != 0) return NVML_ERROR_INVALID_ARGUMENT;
  return Get("nvmlDeviceGetTemperature", d, "temperature", 60u, c);
}
__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t d,
                                                                           unsigned type,
                                                                           unsigned* mhz) {
  return type == 1 ? Get("nvmlDeviceGetClockInfo", d, "sm_clock", 1980u, mhz)
                   : Get("nvmlDeviceGetClockInfo", d, "mem_clock", 2619u, mhz);
}
__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(
    nvmlDevice_t d, unsigned long long* r) {
  return Get("nvmlDeviceGetCurrentClocksEventReasons", d, "reasons", 0ull, r);
}
__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetTotalEccErrors(
    nvmlDevice_t d, unsigned type, unsigned counter, unsigned long long* n) {
  if (counter != 0) return NVML_ERROR_INVALID_ARGUMENT;
  return type == 0 ? Get("nvmlDeviceGetTotalEccErrors", d, "ecc_corrected", 0ull, n)
                   : Get("nvmlDeviceGetTotalEccErrors", d, "ecc_uncorrected", 0ull, n);
}
__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetPcieThroughput(nvmlDevice_t d,
                                                                                unsigned counter,
                                                                                unsigned* kb) {
  return counter == 0 ? Get("nvmlDeviceGetPcieThroughput", d, "pcie_tx_kb", 1000u, kb)
                      : Get("nvmlDeviceGetPcieThroughput", d, "pcie_rx_kb", 2000u, kb);
}
__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(
    nvmlDevice_t d, unsigned* count, nvmlProcessInfo_t* infos) {
  unsigned ignored = 0;
  nvmlReturn_t rc = Get("nvmlDeviceGetComputeRunningProcesses_v3", d, "processes", 0u, &ignored);
  if (rc != NVML_SUCCESS) return rc;
  std::lock_guard<std::mutex> lock(S().mu);
  const auto& procs = S().gpus[Index(d)].processes;
  if (*count < procs.size() || infos == nullptr) {
    bool need = !procs.empty();
    *count = static_cast<unsigned>(procs.size());
    return need ? NVML_ERROR_INSUFFICIENT_SIZE : NVML_SUCCESS;
  }
  for (size_t i = 0; i < procs.size(); ++i) {
    infos[i] = nvmlProcessInfo_t{procs[i].first, procs[i].second, 0xFFFFFFFF, 0xFFFFFFFF};
  }
  *count = static_cast<unsigned>(procs.size());
  return NVML_SUCCESS;
}
__attribute__((visibility("default"))) nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t* set) {
  *set = reinterpret_cast<nvmlEventSet_t>(static_cast<uintptr_t>(0x5e7));
  return NVML_SUCCESS;
}
__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceRegisterEvents(
    nvmlDevice_t d, unsigned long long types, nvmlEventSet_t) {
  unsigned ignored = 0;
  nvmlReturn_t rc = Get("nvmlDeviceRegisterEvents", d, "events", 0u, &ignored);
  if (rc != NVML_SUCCESS) return rc;
  return (types & 0x8) ? NVML_SUCCESS : NVML_ERROR_NOT_SUPPORTED;
}
__attribute__((visibility("default"))) nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t,
                                                                        nvmlEventData_t* data,
                                                                        unsigned) {
  std::lock_guard<std::mutex> lock(S().mu);
  State& s = S();
  s.calls["nvmlEventSetWait_v2"]++;
  Load();
  for (const auto& [line, event] : s.xids) {
    if (s.delivered.count(line) != 0 || event.first >= s.count) continue;
    s.delivered.insert(line);
    *data = nvmlEventData_t{Handle(event.first), 0x8, event.second, 0xFFFFFFFF, 0xFFFFFFFF};
    return NVML_SUCCESS;
  }
  return NVML_ERROR_TIMEOUT;
}
__attribute__((visibility("default"))) nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t) {
  return NVML_SUCCESS;
}
__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t d,
                                                                               nvmlMemory_v2_t* m) {
  if (m->version != fulcrum::telemetry::nvml::kMemoryV2Version) return NVML_ERROR_INVALID_ARGUMENT;
  nvmlReturn_t rc =
      Get("nvmlDeviceGetMemoryInfo_v2", d, "mem_reserved", 536870912ull, &m->reserved);
  if (rc != NVML_SUCCESS) return rc;
  rc = Get("nvmlDeviceGetMemoryInfo", d, "mem_total", 85899345920ull, &m->total);
  if (rc != NVML_SUCCESS) return rc;
  rc = Get("nvmlDeviceGetMemoryInfo.used", d, "mem_used", 1073741824ull, &m->used);
  m->free = m->total - m->used - m->reserved;
  return rc;
}
__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetEncoderUtilization(
    nvmlDevice_t d, unsigned* util, unsigned* period_us) {
  *period_us = 167000;
  return Get("nvmlDeviceGetEncoderUtilization", d, "enc_util", 0u, util);
}
__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetDecoderUtilization(
    nvmlDevice_t d, unsigned* util, unsigned* period_us) {
  *period_us = 167000;
  return Get("nvmlDeviceGetDecoderUtilization", d, "dec_util", 0u, util);
}
__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t d,
                                                                            nvmlPciInfo_t* pci) {
  *pci = nvmlPciInfo_t{};
  char bus[32];
  std::snprintf(bus, sizeof bus, "00000000:%02X:00.0", 0x18 + Index(d));
  nvmlReturn_t rc = GetString(d, "pci_bus_id", bus, pci->busId, sizeof pci->busId);
  return rc;
}
__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t d,
                                                                             unsigned* minor) {
  return Get("nvmlDeviceGetMinorNumber", d, "minor", Index(d), minor);
}
__attribute__((visibility("default"))) nvmlReturn_t nvmlSystemGetDriverVersion(char* buf,
                                                                               unsigned len) {
  std::lock_guard<std::mutex> lock(S().mu);
  const std::string& v = S().driver_version;
  if (v == "unsupported") return NVML_ERROR_NOT_SUPPORTED;
  if (v.size() + 1 > len) return NVML_ERROR_INSUFFICIENT_SIZE;
  std::memcpy(buf, v.c_str(), v.size() + 1);
  return NVML_SUCCESS;
}
// GPM: a sample remembers its device; the metrics between two samples answer from the script.
struct nvmlGpmSample_st {
  nvmlDevice_t device = nullptr;
};
__attribute__((visibility("default"))) nvmlReturn_t nvmlGpmQueryDeviceSupport(
    nvmlDevice_t d, nvmlGpmSupport_t* support) {
  if (support->version != fulcrum::telemetry::nvml::kGpmSupportVersion) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  return Get("nvmlGpmQueryDeviceSupport", d, "gpm", 0u, &support->isSupportedDevice);
}
__attribute__((visibility("default"))) nvmlReturn_t nvmlGpmSampleAlloc(nvmlGpmSample_t* sample) {
  *sample = new nvmlGpmSample_st;
  return NVML_SUCCESS;
}
__attribute__((visibility("default"))) nvmlReturn_t nvmlGpmSampleFree(nvmlGpmSample_t sample) {
  delete sample;
  return NVML_SUCCESS;
}
__attribute__((visibility("default"))) nvmlReturn_t nvmlGpmSampleGet(nvmlDevice_t d,
                                                                     nvmlGpmSample_t sample) {
  unsigned ignored = 0;
  nvmlReturn_t rc = Get("nvmlGpmSampleGet", d, "gpm", 0u, &ignored);
  if (rc == NVML_SUCCESS) sample->device = d;
  return rc;
}
__attribute__((visibility("default"))) nvmlReturn_t nvmlGpmMetricsGet(nvmlGpmMetricsGet_t* m) {
  namespace nv = fulcrum::telemetry::nvml;
  if (m->version != nv::kGpmMetricsGetVersion || m->sample1 == nullptr || m->sample2 == nullptr ||
      m->sample1->device != m->sample2->device || m->numMetrics > 333) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  for (unsigned i = 0; i < m->numMetrics; ++i) {
    nvmlGpmMetric_t& metric = m->metrics[i];
    const char* field = metric.metricId == nv::kGpmMetricGraphicsUtil    ? "gpm_graphics"
                        : metric.metricId == nv::kGpmMetricAnyTensorUtil ? "gpm_tensor"
                        : metric.metricId == nv::kGpmMetricDramBwUtil    ? "gpm_dram"
                                                                         : nullptr;
    if (field == nullptr) {
      metric.nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
      continue;
    }
    unsigned pct = 0;
    metric.nvmlReturn = Get("nvmlGpmMetricsGet", m->sample2->device, field, 50u, &pct);
    metric.value = pct;
  }
  return NVML_SUCCESS;
}
// Field values: each field answers from its script FIELD (defaults below), per entry.
__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetFieldValues(
    nvmlDevice_t d, int count, nvmlFieldValue_t* values) {
  namespace nv = fulcrum::telemetry::nvml;
  struct Known {
    unsigned id;
    const char* field;
    unsigned long long fallback;
  };
  static const Known kKnown[] = {
      {nv::kFieldMemoryTemp, "memory_temp", 66},
      {nv::kFieldTotalEnergy, "energy_mj", 123456789},
      {nv::kFieldPcieReplayCounter, "pcie_replay", 0},
      {nv::kFieldNvlinkDataTx, "nvlink_tx_kib", 4096},
      {nv::kFieldNvlinkDataRx, "nvlink_rx_kib", 8192},
      {nv::kFieldRemappedCorrectable, "remapped_cor", 0},
      {nv::kFieldRemappedUncorrectable, "remapped_unc", 0},
      {nv::kFieldRemappedFailure, "remap_failure", 0},
  };
  for (int i = 0; i < count; ++i) {
    nvmlFieldValue_t& v = values[i];
    v.nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
    for (const Known& k : kKnown) {
      if (k.id != v.fieldId) continue;
      bool nvlink = k.id == nv::kFieldNvlinkDataTx || k.id == nv::kFieldNvlinkDataRx;
      if (nvlink && v.scopeId != nv::kAllLinks) {
        v.nvmlReturn = NVML_ERROR_INVALID_ARGUMENT;
        break;
      }
      v.valueType = nv::kValueTypeUnsignedLongLong;
      v.nvmlReturn = Get("nvmlDeviceGetFieldValues", d, k.field, k.fallback, &v.value.ullVal);
      if (v.nvmlReturn == NVML_ERROR_GPU_IS_LOST) return NVML_ERROR_GPU_IS_LOST;
    }
  }
  return NVML_SUCCESS;
}

}  // extern "C"
