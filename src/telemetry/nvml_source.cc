#include "telemetry/nvml_source.h"

#include <dlfcn.h>

#include <spdlog/spdlog.h>

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
  std::string uuid, name;
  NvmlCapabilities caps;
  int last_xid = 0;
  bool lost = false;
};

// True when the call answered NOT_SUPPORTED (the capability is absent for good).
bool Unsupported(nvmlReturn_t rc) { return rc == NVML_ERROR_NOT_SUPPORTED; }

}  // namespace

struct NvmlSource::Impl {
  void* library = nullptr;
  Api api;
  std::vector<Device> devices;
  nvmlEventSet_t events = nullptr;
  std::unordered_map<nvmlDevice_t, size_t> by_handle;

  ~Impl() {
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
  }

  void DrainEvents() {
    if (events == nullptr || api.event_set_wait == nullptr) return;
    for (int i = 0; i < 64; ++i) {  // bounded: never spin on a misbehaving driver
      nvmlEventData_t data{};
      nvmlReturn_t rc = api.event_set_wait(events, &data, 0);
      if (rc != NVML_SUCCESS) return;  // TIMEOUT: no more events
      if ((data.eventType & kEventXidCritical) == 0) continue;
      auto it = by_handle.find(data.device);
      if (it != by_handle.end()) devices[it->second].last_xid = static_cast<int>(data.eventData);
    }
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

  GpuSample Read(size_t index, double now) {
    Device& d = devices[index];
    GpuSample s;
    s.index = static_cast<int>(index);
    s.uuid = d.uuid;
    s.name = d.name;
    s.timestamp = now;
    if (d.lost) return s;
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
    if (c.utilization) {
      nvmlUtilization_t u{};
      if (ok(api.get_utilization(d.handle, &u))) {
        s.utilization_gpu_pct = u.gpu;
        s.utilization_memory_pct = u.memory;
      }
    }
    if (c.memory) {
      nvmlMemory_t m{};
      if (ok(api.get_memory(d.handle, &m))) {
        s.memory_used_bytes = static_cast<double>(m.used);
        s.memory_total_bytes = static_cast<double>(m.total);
      }
    }
    unsigned int v = 0;
    // NVML reports power in milliwatts.
    if (c.power && ok(api.get_power(d.handle, &v))) s.power_watts = v / 1000.0;
    if (c.power_limit && ok(api.get_power_limit(d.handle, &v))) s.power_limit_watts = v / 1000.0;
    if (c.temperature && ok(api.get_temperature(d.handle, kTemperatureGpu, &v))) {
      s.temperature_celsius = v;
    }
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
    if (c.processes && !d.lost) ReadProcesses(d, s);
    if (c.xid_events || d.last_xid != 0) s.last_xid = d.last_xid;
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

Result<GpuSnapshot> NvmlSource::Sample() {
  impl_->DrainEvents();
  struct timespec ts {};
  clock_gettime(CLOCK_REALTIME, &ts);
  double now = static_cast<double>(ts.tv_sec) + ts.tv_nsec * 1e-9;
  GpuSnapshot snapshot;
  snapshot.reserve(impl_->devices.size());
  for (size_t i = 0; i < impl_->devices.size(); ++i) snapshot.push_back(impl_->Read(i, now));
  return snapshot;
}

}  // namespace fulcrum::telemetry
