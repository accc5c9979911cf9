#include "telemetry/nvml_source.h"

#include <dlfcn.h>

#include <spdlog/spdlog.h>

#include <map>
#include <memory>
#include <optional>
#include <unordered_map>

#include "telemetry/nvml_api.h"

namespace fulcrum::telemetry {

using namespace nvml;  // NOLINT(google-build-using-namespace): the constants of nvml_api.h

namespace {

struct Api {
  InitFn init = nullptr;
  ShutdownFn shutdown = nullptr;
  ErrorStringFn error_string = nullptr;
  GetCountFn get_count = nullptr;
  GetHandleFn get_handle = nullptr;
  GetStringFn get_name = nullptr, get_uuid = nullptr;
  GetUtilFn get_utilization = nullptr;
  GetMemoryFn get_memory = nullptr;
  GetUintFn get_power = nullptr, get_power_limit = nullptr;
  GetTempFn get_temperature = nullptr;
  GetClockFn get_clock = nullptr;
  GetReasonsFn get_reasons = nullptr;
  GetEccFn get_ecc = nullptr;
  GetPcieFn get_pcie = nullptr;
  GetProcsFn get_procs = nullptr;
  bool procs_v3 = false;
  GetMemoryV2Fn get_memory_v2 = nullptr;
  GetCodecUtilFn get_encoder = nullptr, get_decoder = nullptr;
  GetPciInfoFn get_pci_info = nullptr;
  GetUintFn get_minor = nullptr;
  GetFieldValuesFn get_field_values = nullptr;
  SystemGetStringFn get_driver_version = nullptr;
  GpmQuerySupportFn gpm_query_support = nullptr;
  GpmSampleAllocFn gpm_sample_alloc = nullptr;
  GpmSampleFreeFn gpm_sample_free = nullptr;
  GpmSampleGetFn gpm_sample_get = nullptr;
  GpmMetricsGetFn gpm_metrics_get = nullptr;
  EventSetCreateFn event_set_create = nullptr;
  RegisterEventsFn register_events = nullptr;
  EventSetWaitFn event_set_wait = nullptr;
  EventSetFreeFn event_set_free = nullptr;
};

template <typename Fn>
void Load(void* lib, Fn& fn, const char* name) {
  fn = reinterpret_cast<Fn>(dlsym(lib, name));
}

template <typename Fn>
void LoadFirst(void* lib, Fn& fn, const char* a, const char* b) {
  Load(lib, fn, a);
  if (fn == nullptr) Load(lib, fn, b);
}

struct Device {
  nvmlDevice_t handle = nullptr;
  std::string uuid, name, pci_bus_id;
  std::optional<int> minor;
  NvmlCapabilities caps;
  int last_xid = 0;
  std::vector<int> new_xids;         // since the previous sample
  std::map<int, double> xid_counts;  // since Open
  bool lost = false;
  // PCIe bytes integrated from the throughput readings (NVML has no PCIe byte counter).
  double pcie_tx_bytes = 0, pcie_rx_bytes = 0, pcie_last_at = -1;
  // GPM sample buffers: the previous full sample's and the current one's.
  nvmlGpmSample_t gpm_previous = nullptr, gpm_current = nullptr;
  bool gpm_has_previous = false;
};

// The field IDs asked through nvmlDeviceGetFieldValues.
constexpr unsigned int kFieldIds[] = {kFieldMemoryTemp,
                                      kFieldTotalEnergy,
                                      kFieldPcieReplayCounter,
                                      kFieldNvlinkDataTx,
                                      kFieldNvlinkDataRx,
                                      kFieldRemappedCorrectable,
                                      kFieldRemappedUncorrectable,
                                      kFieldRemappedFailure};

std::optional<double> FieldNumber(const nvmlFieldValue_t& v) {
  if (v.nvmlReturn != NVML_SUCCESS) return std::nullopt;
  switch (v.valueType) {
    case kValueTypeDouble:
      return v.value.dVal;
    case kValueTypeUnsignedInt:
      return static_cast<double>(v.value.uiVal);
    case kValueTypeUnsignedLong:
      return static_cast<double>(v.value.ulVal);
    case kValueTypeUnsignedLongLong:
      return static_cast<double>(v.value.ullVal);
    case kValueTypeSignedLongLong:
      return static_cast<double>(v.value.sllVal);
    case kValueTypeSignedInt:
      return static_cast<double>(v.value.siVal);
    case kValueTypeUnsignedShort:
      return static_cast<double>(v.value.usVal);
    default:
      return std::nullopt;
  }
}

std::vector<nvmlFieldValue_t> FieldRequest(const std::vector<unsigned int>& ids) {
  std::vector<nvmlFieldValue_t> values(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    values[i] = nvmlFieldValue_t{};
    values[i].fieldId = ids[i];
    bool nvlink = ids[i] == kFieldNvlinkDataTx || ids[i] == kFieldNvlinkDataRx;
    values[i].scopeId = nvlink ? kAllLinks : 0;
  }
  return values;
}

double UnixNow() {
  struct timespec ts {};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<double>(ts.tv_sec) + ts.tv_nsec * 1e-9;
}

// True when the call answered NOT_SUPPORTED (the capability is absent for good).
bool Unsupported(nvmlReturn_t rc) { return rc == NVML_ERROR_NOT_SUPPORTED; }

}  // namespace

struct NvmlSource::Impl {
  void* library = nullptr;
  Api api;
  std::vector<Device> devices;
  nvmlEventSet_t events = nullptr;
  std::unordered_map<nvmlDevice_t, size_t> by_handle;
  std::string driver_version;
  std::unique_ptr<nvmlGpmMetricsGet_t> gpm_request;  // 13 KiB, reused by every GPM read

  ~Impl() {
    for (Device& d : devices) {
      if (api.gpm_sample_free == nullptr) break;
      if (d.gpm_previous != nullptr) api.gpm_sample_free(d.gpm_previous);
      if (d.gpm_current != nullptr) api.gpm_sample_free(d.gpm_current);
    }
    if (events != nullptr && api.event_set_free != nullptr) api.event_set_free(events);
    if (api.shutdown != nullptr) api.shutdown();
    if (library != nullptr) dlclose(library);
  }

  std::string Error(nvmlReturn_t rc) const {
    const char* text = api.error_string != nullptr ? api.error_string(rc) : nullptr;
    return text != nullptr ? std::string(text) : "NVML error " + std::to_string(rc);
  }

  void Probe(Device& d) {
    nvmlUtilization_t util{};
    d.caps.utilization = api.get_utilization && !Unsupported(api.get_utilization(d.handle, &util));
    nvmlMemory_t mem{};
    d.caps.memory = api.get_memory && !Unsupported(api.get_memory(d.handle, &mem));
    unsigned int value = 0;
    d.caps.power = api.get_power && !Unsupported(api.get_power(d.handle, &value));
    d.caps.power_limit = api.get_power_limit && !Unsupported(api.get_power_limit(d.handle, &value));
    d.caps.temperature =
        api.get_temperature && !Unsupported(api.get_temperature(d.handle, kTemperatureGpu, &value));
    d.caps.sm_clock = api.get_clock && !Unsupported(api.get_clock(d.handle, kClockSm, &value));
    d.caps.memory_clock = api.get_clock && !Unsupported(api.get_clock(d.handle, kClockMem, &value));
    unsigned long long reasons = 0;
    d.caps.clock_events = api.get_reasons && !Unsupported(api.get_reasons(d.handle, &reasons));
    unsigned long long ecc = 0;
    d.caps.ecc =
        api.get_ecc && !Unsupported(api.get_ecc(d.handle, kEccUncorrected, kEccVolatile, &ecc));
    d.caps.pcie = api.get_pcie && !Unsupported(api.get_pcie(d.handle, kPcieTx, &value));
    unsigned int count = 0;
    d.caps.processes = api.get_procs && !Unsupported(api.get_procs(d.handle, &count, nullptr));
    if (events != nullptr && api.register_events != nullptr) {
      d.caps.xid_events = api.register_events(d.handle, kEventXidCritical, events) == NVML_SUCCESS;
    }
    nvmlMemory_v2_t mem2{};
    mem2.version = kMemoryV2Version;
    d.caps.memory_reserved =
        api.get_memory_v2 && api.get_memory_v2(d.handle, &mem2) == NVML_SUCCESS;
    unsigned int period = 0;
    d.caps.encoder = api.get_encoder && !Unsupported(api.get_encoder(d.handle, &value, &period));
    d.caps.decoder = api.get_decoder && !Unsupported(api.get_decoder(d.handle, &value, &period));
    ProbeGpm(d);
    if (api.get_field_values != nullptr) {
      std::vector<unsigned int> ids(std::begin(kFieldIds), std::end(kFieldIds));
      std::vector<nvmlFieldValue_t> values = FieldRequest(ids);
      if (api.get_field_values(d.handle, static_cast<int>(values.size()), values.data()) ==
          NVML_SUCCESS) {
        for (const nvmlFieldValue_t& v : values) {
          if (!Unsupported(v.nvmlReturn)) d.caps.fields.push_back(v.fieldId);
        }
      }
    }
  }

  void ProbeGpm(Device& d) {
    if (!api.gpm_query_support || !api.gpm_sample_alloc || !api.gpm_sample_free ||
        !api.gpm_sample_get || !api.gpm_metrics_get) {
      return;
    }
    nvmlGpmSupport_t support{};
    support.version = kGpmSupportVersion;
    if (api.gpm_query_support(d.handle, &support) != NVML_SUCCESS || !support.isSupportedDevice) {
      return;
    }
    if (api.gpm_sample_alloc(&d.gpm_previous) != NVML_SUCCESS ||
        api.gpm_sample_alloc(&d.gpm_current) != NVML_SUCCESS) {
      return;  // the destructor frees what was allocated
    }
    d.caps.gpm = true;
  }

  // Takes a GPM sample and, from the second one on, the ratios over the interval since the
  // previous full sample (NVML reports percentages).
  void ReadGpm(Device& d, GpuSample& s) {
    if (api.gpm_sample_get(d.handle, d.gpm_current) != NVML_SUCCESS) {
      d.gpm_has_previous = false;
      return;
    }
    if (d.gpm_has_previous) {
      if (!gpm_request) gpm_request = std::make_unique<nvmlGpmMetricsGet_t>();
      nvmlGpmMetricsGet_t& request = *gpm_request;
      request = nvmlGpmMetricsGet_t{};
      request.version = kGpmMetricsGetVersion;
      request.numMetrics = 3;
      request.sample1 = d.gpm_previous;
      request.sample2 = d.gpm_current;
      request.metrics[0].metricId = kGpmMetricGraphicsUtil;
      request.metrics[1].metricId = kGpmMetricAnyTensorUtil;
      request.metrics[2].metricId = kGpmMetricDramBwUtil;
      if (api.gpm_metrics_get(&request) == NVML_SUCCESS) {
        auto ratio = [&](int i) -> std::optional<double> {
          if (request.metrics[i].nvmlReturn != NVML_SUCCESS) return std::nullopt;
          return request.metrics[i].value / 100;
        };
        s.gr_engine_active_ratio = ratio(0);
        s.tensor_active_ratio = ratio(1);
        s.dram_active_ratio = ratio(2);
      }
    }
    std::swap(d.gpm_previous, d.gpm_current);
    d.gpm_has_previous = true;
  }

  void ReadFields(Device& d, GpuSample& s) {
    std::vector<nvmlFieldValue_t> values = FieldRequest(d.caps.fields);
    if (api.get_field_values(d.handle, static_cast<int>(values.size()), values.data()) !=
        NVML_SUCCESS) {
      return;
    }
    for (const nvmlFieldValue_t& v : values) {
      std::optional<double> x = FieldNumber(v);
      if (!x) continue;
      switch (v.fieldId) {
        case kFieldMemoryTemp:
          s.memory_temperature_celsius = *x;
          break;
        case kFieldTotalEnergy:
          s.energy_joules = *x / 1000;  // mJ
          break;
        case kFieldPcieReplayCounter:
          s.pcie_replays = *x;
          break;
        case kFieldNvlinkDataTx:
          s.nvlink_tx_bytes = *x * 1024;  // KiB
          break;
        case kFieldNvlinkDataRx:
          s.nvlink_rx_bytes = *x * 1024;
          break;
        case kFieldRemappedCorrectable:
          s.remapped_rows_correctable = *x;
          break;
        case kFieldRemappedUncorrectable:
          s.remapped_rows_uncorrectable = *x;
          break;
        case kFieldRemappedFailure:
          s.row_remap_failure = *x;
          break;
        default:
          break;
      }
    }
  }

  void DrainEvents() {
    if (events == nullptr || api.event_set_wait == nullptr) return;
    for (int i = 0; i < 64; ++i) {  // bounded: never spin on a misbehaving driver
      nvmlEventData_t data{};
      nvmlReturn_t rc = api.event_set_wait(events, &data, 0);
      if (rc != NVML_SUCCESS) return;  // TIMEOUT: no more events
      if ((data.eventType & kEventXidCritical) == 0) continue;
      auto it = by_handle.find(data.device);
      if (it == by_handle.end()) continue;
      Device& d = devices[it->second];
      int code = static_cast<int>(data.eventData);
      d.last_xid = code;
      d.new_xids.push_back(code);
      d.xid_counts[code] += 1;
    }
  }

  GpuSnapshot ReadAll(bool fast) {
    DrainEvents();
    double now = UnixNow();
    GpuSnapshot snapshot;
    snapshot.reserve(devices.size());
    for (size_t i = 0; i < devices.size(); ++i) snapshot.push_back(Read(i, now, fast));
    return snapshot;
  }

  void ReadProcesses(Device& d, GpuSample& s) {
    unsigned int count = 0;
    nvmlReturn_t rc = api.get_procs(d.handle, &count, nullptr);
    if (rc != NVML_SUCCESS && rc != NVML_ERROR_INSUFFICIENT_SIZE) return;
    std::vector<GpuProcess> list;
    if (count > 0) {
      count += 4;  // processes may start between the two calls
      if (api.procs_v3) {
        std::vector<nvmlProcessInfo_t> infos(count);
        if (api.get_procs(d.handle, &count, infos.data()) != NVML_SUCCESS) return;
        for (unsigned i = 0; i < count; ++i)
          list.push_back(ToProcess(infos[i].pid, infos[i].usedGpuMemory));
      } else {
        std::vector<nvmlProcessInfo_v1_t> infos(count);
        if (api.get_procs(d.handle, &count, infos.data()) != NVML_SUCCESS) return;
        for (unsigned i = 0; i < count; ++i)
          list.push_back(ToProcess(infos[i].pid, infos[i].usedGpuMemory));
      }
    }
    s.processes = std::move(list);
  }

  static GpuProcess ToProcess(unsigned int pid, unsigned long long used) {
    GpuProcess p;
    p.pid = pid;
    if (used != kValueNotAvailable) p.used_memory_bytes = static_cast<double>(used);
    return p;
  }

  // One GPU's reading: every capability, or with `fast` only utilization, temperature and
  // power (the fast ticks between full samples). XID events drained before are handed out here.
  GpuSample Read(size_t index, double now, bool fast) {
    Device& d = devices[index];
    GpuSample s;
    s.index = static_cast<int>(index);
    s.uuid = d.uuid;
    s.name = d.name;
    s.pci_bus_id = d.pci_bus_id;
    s.minor = d.minor;
    s.driver_version = driver_version;
    s.timestamp = now;
    s.new_xids = std::move(d.new_xids);
    d.new_xids.clear();
    s.xid_counts = d.xid_counts;
    if (d.lost) {
      if (d.last_xid != 0) s.last_xid = d.last_xid;
      return s;
    }
    const NvmlCapabilities& c = d.caps;
    nvmlReturn_t rc = NVML_SUCCESS;
    auto ok = [&](nvmlReturn_t r) {
      rc = r;
      if (r == NVML_ERROR_GPU_IS_LOST && !d.lost) {
        d.lost = true;
        spdlog::warn("GPU {} is lost (NVML GPU_IS_LOST); its fields are unknown from now", index);
      }
      return r == NVML_SUCCESS;
    };
    if (c.xid_events || d.last_xid != 0) s.last_xid = d.last_xid;
    if (c.utilization) {
      nvmlUtilization_t u{};
      if (ok(api.get_utilization(d.handle, &u))) {
        s.utilization_gpu_pct = u.gpu;
        s.utilization_memory_pct = u.memory;
      }
    }
    unsigned int v = 0;
    // NVML reports power in milliwatts.
    if (c.power && ok(api.get_power(d.handle, &v))) s.power_watts = v / 1000.0;
    if (c.temperature && ok(api.get_temperature(d.handle, kTemperatureGpu, &v))) {
      s.temperature_celsius = v;
    }
    if (fast) return s;
    if (c.memory) {
      nvmlMemory_t m{};
      if (ok(api.get_memory(d.handle, &m))) {
        s.memory_used_bytes = static_cast<double>(m.used);
        s.memory_total_bytes = static_cast<double>(m.total);
      }
    }
    if (c.power_limit && ok(api.get_power_limit(d.handle, &v))) s.power_limit_watts = v / 1000.0;
    if (c.sm_clock && ok(api.get_clock(d.handle, kClockSm, &v))) s.sm_clock_mhz = v;
    if (c.memory_clock && ok(api.get_clock(d.handle, kClockMem, &v))) s.memory_clock_mhz = v;
    unsigned long long big = 0;
    if (c.clock_events && ok(api.get_reasons(d.handle, &big))) s.clock_event_reasons = big;
    if (c.ecc) {
      if (ok(api.get_ecc(d.handle, kEccCorrected, kEccVolatile, &big))) {
        s.ecc_corrected = static_cast<double>(big);
      }
      if (ok(api.get_ecc(d.handle, kEccUncorrected, kEccVolatile, &big))) {
        s.ecc_uncorrected = static_cast<double>(big);
      }
    }
    // NVML reports PCIe throughput in KB/s over a 20 ms window; KB = 1024 bytes.
    if (c.pcie && ok(api.get_pcie(d.handle, kPcieTx, &v))) s.pcie_tx_bytes_per_second = v * 1024.0;
    if (c.pcie && ok(api.get_pcie(d.handle, kPcieRx, &v))) s.pcie_rx_bytes_per_second = v * 1024.0;
    if (s.pcie_tx_bytes_per_second && s.pcie_rx_bytes_per_second) {
      double dt = d.pcie_last_at < 0 ? 0 : std::max(0.0, now - d.pcie_last_at);
      d.pcie_last_at = now;
      d.pcie_tx_bytes += *s.pcie_tx_bytes_per_second * dt;
      d.pcie_rx_bytes += *s.pcie_rx_bytes_per_second * dt;
      s.pcie_tx_bytes = d.pcie_tx_bytes;
      s.pcie_rx_bytes = d.pcie_rx_bytes;
    }
    if (c.memory_reserved) {
      nvmlMemory_v2_t m{};
      m.version = kMemoryV2Version;
      if (ok(api.get_memory_v2(d.handle, &m))) {
        s.memory_free_bytes = static_cast<double>(m.free);
        s.memory_reserved_bytes = static_cast<double>(m.reserved);
      }
    } else if (c.memory) {
      nvmlMemory_t m{};
      if (ok(api.get_memory(d.handle, &m))) s.memory_free_bytes = static_cast<double>(m.free);
    }
    unsigned int period = 0;
    if (c.encoder && ok(api.get_encoder(d.handle, &v, &period))) s.encoder_utilization_pct = v;
    if (c.decoder && ok(api.get_decoder(d.handle, &v, &period))) s.decoder_utilization_pct = v;
    if (!c.fields.empty() && !d.lost) ReadFields(d, s);
    if (c.gpm && !d.lost) ReadGpm(d, s);
    if (c.processes && !d.lost) ReadProcesses(d, s);
    (void)rc;
    return s;
  }
};

NvmlSource::NvmlSource(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
NvmlSource::~NvmlSource() = default;

Result<std::unique_ptr<NvmlSource>> NvmlSource::Open(const std::string& library) {
  auto impl = std::make_unique<Impl>();
  impl->library = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (impl->library == nullptr) {
    const char* why = dlerror();
    return Status::Unavailable("cannot load " + library +
                               " (is the NVIDIA driver installed?): " + (why ? why : "unknown"));
  }
  void* lib = impl->library;
  Api& a = impl->api;
  LoadFirst(lib, a.init, "nvmlInit_v2", "nvmlInit");
  Load(lib, a.shutdown, "nvmlShutdown");
  Load(lib, a.error_string, "nvmlErrorString");
  LoadFirst(lib, a.get_count, "nvmlDeviceGetCount_v2", "nvmlDeviceGetCount");
  LoadFirst(lib, a.get_handle, "nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex");
  Load(lib, a.get_name, "nvmlDeviceGetName");
  Load(lib, a.get_uuid, "nvmlDeviceGetUUID");
  Load(lib, a.get_utilization, "nvmlDeviceGetUtilizationRates");
  Load(lib, a.get_memory, "nvmlDeviceGetMemoryInfo");
  Load(lib, a.get_power, "nvmlDeviceGetPowerUsage");
  Load(lib, a.get_power_limit, "nvmlDeviceGetEnforcedPowerLimit");
  Load(lib, a.get_temperature, "nvmlDeviceGetTemperature");
  Load(lib, a.get_clock, "nvmlDeviceGetClockInfo");
  LoadFirst(lib, a.get_reasons, "nvmlDeviceGetCurrentClocksEventReasons",
            "nvmlDeviceGetCurrentClocksThrottleReasons");
  Load(lib, a.get_ecc, "nvmlDeviceGetTotalEccErrors");
  Load(lib, a.get_pcie, "nvmlDeviceGetPcieThroughput");
  Load(lib, a.get_procs, "nvmlDeviceGetComputeRunningProcesses_v3");
  a.procs_v3 = a.get_procs != nullptr;
  if (!a.procs_v3) Load(lib, a.get_procs, "nvmlDeviceGetComputeRunningProcesses");
  Load(lib, a.get_memory_v2, "nvmlDeviceGetMemoryInfo_v2");
  Load(lib, a.get_encoder, "nvmlDeviceGetEncoderUtilization");
  Load(lib, a.get_decoder, "nvmlDeviceGetDecoderUtilization");
  LoadFirst(lib, a.get_pci_info, "nvmlDeviceGetPciInfo_v3", "nvmlDeviceGetPciInfo_v2");
  Load(lib, a.get_minor, "nvmlDeviceGetMinorNumber");
  Load(lib, a.get_field_values, "nvmlDeviceGetFieldValues");
  Load(lib, a.get_driver_version, "nvmlSystemGetDriverVersion");
  Load(lib, a.gpm_query_support, "nvmlGpmQueryDeviceSupport");
  Load(lib, a.gpm_sample_alloc, "nvmlGpmSampleAlloc");
  Load(lib, a.gpm_sample_free, "nvmlGpmSampleFree");
  Load(lib, a.gpm_sample_get, "nvmlGpmSampleGet");
  Load(lib, a.gpm_metrics_get, "nvmlGpmMetricsGet");
  Load(lib, a.event_set_create, "nvmlEventSetCreate");
  Load(lib, a.register_events, "nvmlDeviceRegisterEvents");
  LoadFirst(lib, a.event_set_wait, "nvmlEventSetWait_v2", "nvmlEventSetWait");
  Load(lib, a.event_set_free, "nvmlEventSetFree");
  if (!a.init || !a.get_count || !a.get_handle) {
    return Status::Unavailable(library + " lacks nvmlInit/nvmlDeviceGetCount/GetHandleByIndex");
  }
  nvmlReturn_t rc = a.init();
  if (rc != NVML_SUCCESS) {
    std::string why = impl->Error(rc);
    a.shutdown = nullptr;  // nothing to shut down
    return Status::Unavailable("nvmlInit failed: " + why);
  }
  unsigned int count = 0;
  rc = a.get_count(&count);
  if (rc != NVML_SUCCESS)
    return Status::Unavailable("nvmlDeviceGetCount failed: " + impl->Error(rc));
  if (count == 0) return Status::Unavailable("NVML reports no GPU");
  char version[96] = {};  // NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE is 80
  if (a.get_driver_version && a.get_driver_version(version, sizeof version) == NVML_SUCCESS) {
    impl->driver_version = version;
  }
  if (a.event_set_create != nullptr && a.event_set_create(&impl->events) != NVML_SUCCESS) {
    impl->events = nullptr;
  }
  for (unsigned int i = 0; i < count; ++i) {
    Device d;
    rc = a.get_handle(i, &d.handle);
    if (rc != NVML_SUCCESS) {
      return Status::Unavailable("nvmlDeviceGetHandleByIndex(" + std::to_string(i) +
                                 ") failed: " + impl->Error(rc));
    }
    char buffer[96] = {};  // NVML_DEVICE_NAME_V2_BUFFER_SIZE and UUID sizes are at most 96
    if (a.get_name && a.get_name(d.handle, buffer, sizeof buffer) == NVML_SUCCESS) d.name = buffer;
    buffer[0] = 0;
    if (a.get_uuid && a.get_uuid(d.handle, buffer, sizeof buffer) == NVML_SUCCESS) d.uuid = buffer;
    nvmlPciInfo_t pci{};
    if (a.get_pci_info && a.get_pci_info(d.handle, &pci) == NVML_SUCCESS) {
      pci.busId[sizeof pci.busId - 1] = 0;
      d.pci_bus_id = pci.busId;
    }
    unsigned int minor = 0;
    if (a.get_minor && a.get_minor(d.handle, &minor) == NVML_SUCCESS) {
      d.minor = static_cast<int>(minor);
    }
    impl->Probe(d);
    impl->by_handle[d.handle] = impl->devices.size();
    impl->devices.push_back(std::move(d));
  }
  return std::unique_ptr<NvmlSource>(new NvmlSource(std::move(impl)));
}

int NvmlSource::gpu_count() const { return static_cast<int>(impl_->devices.size()); }

const NvmlCapabilities& NvmlSource::capabilities(int index) const {
  return impl_->devices.at(static_cast<size_t>(index)).caps;
}

Result<GpuSnapshot> NvmlSource::Sample() { return impl_->ReadAll(/*fast=*/false); }

Result<GpuSnapshot> NvmlSource::SampleFast() { return impl_->ReadAll(/*fast=*/true); }

}  // namespace fulcrum::telemetry
