// Our own declarations of the NVML C API subset fulcrum uses (types, constants and function
// pointer types), written from the NVML reference (docs.nvidia.com/deploy/nvml-api) and the
// nvml.h of the CUDA toolkit. Shared by NvmlSource and the fake
// libnvidia-ml.so.1 in tests/fake_nvml so both sides agree on layouts. No state.
#pragma once

#include <cstdint>

extern "C" {

typedef int nvmlReturn_t;
typedef struct nvmlDevice_st* nvmlDevice_t;
typedef struct nvmlEventSet_st* nvmlEventSet_t;

enum : int {
  NVML_SUCCESS = 0,
  NVML_ERROR_UNINITIALIZED = 1,
  NVML_ERROR_INVALID_ARGUMENT = 2,
  NVML_ERROR_NOT_SUPPORTED = 3,
  NVML_ERROR_NO_PERMISSION = 4,
  NVML_ERROR_NOT_FOUND = 6,
  NVML_ERROR_INSUFFICIENT_SIZE = 7,
  NVML_ERROR_DRIVER_NOT_LOADED = 9,
  NVML_ERROR_TIMEOUT = 10,
  NVML_ERROR_GPU_IS_LOST = 15,
  NVML_ERROR_UNKNOWN = 999,
};

typedef struct {
  unsigned int gpu;     // percent
  unsigned int memory;  // percent
} nvmlUtilization_t;

typedef struct {
  unsigned long long total;  // bytes
  unsigned long long free;
  unsigned long long used;
} nvmlMemory_t;

// nvmlProcessInfo_t as used by nvmlDeviceGetComputeRunningProcesses_v3 (24 bytes with padding);
// the _v1 getter (no suffix) uses the first two fields only (16 bytes).
typedef struct {
  unsigned int pid;
  unsigned long long usedGpuMemory;  // bytes; NVML_VALUE_NOT_AVAILABLE when unknown
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
} nvmlProcessInfo_t;

typedef struct {
  unsigned int pid;
  unsigned long long usedGpuMemory;
} nvmlProcessInfo_v1_t;

// nvmlMemory_v2_t (nvmlDeviceGetMemoryInfo_v2): `version` must be nvml::kMemoryV2Version.
typedef struct {
  unsigned int version;
  unsigned long long total;  // bytes
  unsigned long long reserved;
  unsigned long long free;
  unsigned long long used;
} nvmlMemory_v2_t;

// nvmlPciInfo_t as filled by nvmlDeviceGetPciInfo_v3.
typedef struct {
  char busIdLegacy[16];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;
  unsigned int pciSubSystemId;
  char busId[32];  // "00000000:3B:00.0"
} nvmlPciInfo_t;

// nvmlFieldValue_t (nvmlDeviceGetFieldValues): fieldId and scopeId are set by the caller, the
// rest by NVML; `value` is a union of 8 bytes read according to valueType.
typedef union {
  double dVal;
  unsigned int uiVal;
  unsigned long ulVal;
  unsigned long long ullVal;
  signed long long sllVal;
  int siVal;
  unsigned short usVal;
} nvmlValue_t;

typedef struct {
  unsigned int fieldId;
  unsigned int scopeId;
  long long timestamp;  // microseconds since 1970
  long long latencyUsec;
  int valueType;  // nvmlValueType_t: nvml::kValueType*
  nvmlReturn_t nvmlReturn;
  nvmlValue_t value;
} nvmlFieldValue_t;

// GPU Performance Monitoring (GPM, Hopper and later): opaque sample buffers, a support query and
// the metrics computed between two samples (nvml.h nvmlGpm*; NVML_GPM_METRIC_MAX is 333 in the
// r550 header, the largest we know, so the struct is at least as large as NVML's).
typedef struct nvmlGpmSample_st* nvmlGpmSample_t;

typedef struct {
  unsigned int version;  // nvml::kGpmSupportVersion
  unsigned int isSupportedDevice;
} nvmlGpmSupport_t;

typedef struct {
  unsigned int metricId;  // nvml::kGpmMetric*
  nvmlReturn_t nvmlReturn;
  double value;  // percent (0-100) for the utilization metrics
  struct {
    char* shortName;
    char* longName;
    char* unit;
  } metricInfo;
} nvmlGpmMetric_t;

typedef struct {
  unsigned int version;  // nvml::kGpmMetricsGetVersion
  unsigned int numMetrics;
  nvmlGpmSample_t sample1;
  nvmlGpmSample_t sample2;
  nvmlGpmMetric_t metrics[333];
} nvmlGpmMetricsGet_t;

typedef struct {
  nvmlDevice_t device;
  unsigned long long eventType;
  unsigned long long eventData;  // the XID code for XidCriticalError events
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
} nvmlEventData_t;

}  // extern "C"

namespace fulcrum::telemetry::nvml {

inline constexpr unsigned long long kValueNotAvailable = ~0ULL;  // NVML_VALUE_NOT_AVAILABLE
inline constexpr unsigned int kTemperatureGpu = 0;               // NVML_TEMPERATURE_GPU
inline constexpr unsigned int kClockSm = 1;                      // NVML_CLOCK_SM
inline constexpr unsigned int kClockMem = 2;                     // NVML_CLOCK_MEM
inline constexpr unsigned int kEccCorrected = 0;                 // NVML_MEMORY_ERROR_TYPE_CORRECTED
inline constexpr unsigned int kEccUncorrected = 1;
inline constexpr unsigned int kEccVolatile = 0;  // NVML_VOLATILE_ECC
inline constexpr unsigned int kPcieTx = 0;       // NVML_PCIE_UTIL_TX_BYTES
inline constexpr unsigned int kPcieRx = 1;
inline constexpr unsigned long long kEventXidCritical = 0x8;  // nvmlEventTypeXidCriticalError
inline constexpr unsigned int kMemoryV2Version = sizeof(nvmlMemory_v2_t) | (2u << 24);
// nvmlValueType_t.
inline constexpr int kValueTypeDouble = 0, kValueTypeUnsignedInt = 1, kValueTypeUnsignedLong = 2,
                     kValueTypeUnsignedLongLong = 3, kValueTypeSignedLongLong = 4,
                     kValueTypeSignedInt = 5, kValueTypeUnsignedShort = 6;
// Field IDs (nvml.h NVML_FI_DEV_*).
inline constexpr unsigned int kFieldMemoryTemp = 82;   // C
inline constexpr unsigned int kFieldTotalEnergy = 83;  // mJ since the driver was loaded
inline constexpr unsigned int kFieldPcieReplayCounter = 94;
inline constexpr unsigned int kFieldNvlinkDataTx = 138;  // KiB, scope kAllLinks = every link
inline constexpr unsigned int kFieldNvlinkDataRx = 139;
inline constexpr unsigned int kFieldRemappedCorrectable = 142;
inline constexpr unsigned int kFieldRemappedUncorrectable = 143;
inline constexpr unsigned int kFieldRemappedFailure = 145;  // 1 = a row failed to remap
inline constexpr unsigned int kAllLinks = 0xFFFFFFFFu;      // scopeId UINT_MAX
inline constexpr unsigned int kGpmSupportVersion = 1;       // NVML_GPM_SUPPORT_VERSION
inline constexpr unsigned int kGpmMetricsGetVersion = 1;    // NVML_GPM_METRICS_GET_VERSION
// nvmlGpmMetricId_t: percentages over the interval between two samples.
inline constexpr unsigned int kGpmMetricGraphicsUtil = 1;   // NVML_GPM_METRIC_GRAPHICS_UTIL
inline constexpr unsigned int kGpmMetricAnyTensorUtil = 5;  // NVML_GPM_METRIC_ANY_TENSOR_UTIL
inline constexpr unsigned int kGpmMetricDramBwUtil = 10;    // NVML_GPM_METRIC_DRAM_BW_UTIL

using InitFn = nvmlReturn_t (*)();
using ShutdownFn = nvmlReturn_t (*)();
using ErrorStringFn = const char* (*)(nvmlReturn_t);
using GetCountFn = nvmlReturn_t (*)(unsigned int*);
using GetHandleFn = nvmlReturn_t (*)(unsigned int, nvmlDevice_t*);
using GetStringFn = nvmlReturn_t (*)(nvmlDevice_t, char*, unsigned int);
using GetUtilFn = nvmlReturn_t (*)(nvmlDevice_t, nvmlUtilization_t*);
using GetMemoryFn = nvmlReturn_t (*)(nvmlDevice_t, nvmlMemory_t*);
using GetUintFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int*);
using GetTempFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int, unsigned int*);
using GetClockFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int, unsigned int*);
using GetReasonsFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned long long*);
using GetEccFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int, unsigned int, unsigned long long*);
using GetPcieFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int, unsigned int*);
using GetProcsFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int*, void*);
using GetMemoryV2Fn = nvmlReturn_t (*)(nvmlDevice_t, nvmlMemory_v2_t*);
using GetCodecUtilFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int*, unsigned int*);
using GetPciInfoFn = nvmlReturn_t (*)(nvmlDevice_t, nvmlPciInfo_t*);
using GetFieldValuesFn = nvmlReturn_t (*)(nvmlDevice_t, int, nvmlFieldValue_t*);
using SystemGetStringFn = nvmlReturn_t (*)(char*, unsigned int);
using GpmQuerySupportFn = nvmlReturn_t (*)(nvmlDevice_t, nvmlGpmSupport_t*);
using GpmSampleAllocFn = nvmlReturn_t (*)(nvmlGpmSample_t*);
using GpmSampleFreeFn = nvmlReturn_t (*)(nvmlGpmSample_t);
using GpmSampleGetFn = nvmlReturn_t (*)(nvmlDevice_t, nvmlGpmSample_t);
using GpmMetricsGetFn = nvmlReturn_t (*)(nvmlGpmMetricsGet_t*);
using EventSetCreateFn = nvmlReturn_t (*)(nvmlEventSet_t*);
using RegisterEventsFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned long long, nvmlEventSet_t);
using EventSetWaitFn = nvmlReturn_t (*)(nvmlEventSet_t, nvmlEventData_t*, unsigned int);
using EventSetFreeFn = nvmlReturn_t (*)(nvmlEventSet_t);

}  // namespace fulcrum::telemetry::nvml
