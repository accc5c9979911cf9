// fulcrum-gpubench: measures one GPU the way `fulcrum bench` reports it, and prints one JSON
// object on stdout. Correctness first: every CUDA/cuBLAS call is checked (a failure prints
// {"error": ...} and exits 1), and each GEMM is checked against a double-precision host
// reference on sampled entries before its speed counts. Exit 3 (with {"error": ...}) when no
// usable GPU is present, so the caller can say so.
//
// Usage: fulcrum-gpubench [--device N] [--stability-seconds S] [--gemm-size N] [--quick]
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

[[noreturn]] void Fail(const std::string& message, int code = 1) {
  std::printf("{\"error\": \"%s\"}\n", message.c_str());
  std::exit(code);
}

#define CUDA_CHECK(expr)                                                                 \
  do {                                                                                   \
    cudaError_t err_ = (expr);                                                           \
    if (err_ != cudaSuccess) Fail(std::string(#expr) + ": " + cudaGetErrorString(err_)); \
  } while (0)

#define CUBLAS_CHECK(expr)                                                 \
  do {                                                                     \
    cublasStatus_t st_ = (expr);                                           \
    if (st_ != CUBLAS_STATUS_SUCCESS)                                      \
      Fail(std::string(#expr) + ": cublas status " + std::to_string(st_)); \
  } while (0)

// ---- NVML, loaded at run time (own declarations, as the agent does) ----------------------
struct Nvml {
  void* lib = nullptr;
  void* device = nullptr;
  int (*get_clock)(void*, int, unsigned*) = nullptr;         // nvmlDeviceGetClockInfo
  int (*get_temp)(void*, int, unsigned*) = nullptr;          // nvmlDeviceGetTemperature
  int (*get_reasons)(void*, unsigned long long*) = nullptr;  // ...GetCurrentClocksEventReasons
  int (*get_power)(void*, unsigned*) = nullptr;              // nvmlDeviceGetPowerUsage (mW)

  bool Open(const char* pci_bus_id) {
    lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return false;
    auto init = reinterpret_cast<int (*)()>(dlsym(lib, "nvmlInit_v2"));
    auto by_pci = reinterpret_cast<int (*)(const char*, void**)>(
        dlsym(lib, "nvmlDeviceGetHandleByPciBusId_v2"));
    get_clock =
        reinterpret_cast<int (*)(void*, int, unsigned*)>(dlsym(lib, "nvmlDeviceGetClockInfo"));
    get_temp =
        reinterpret_cast<int (*)(void*, int, unsigned*)>(dlsym(lib, "nvmlDeviceGetTemperature"));
    get_power = reinterpret_cast<int (*)(void*, unsigned*)>(dlsym(lib, "nvmlDeviceGetPowerUsage"));
    get_reasons = reinterpret_cast<int (*)(void*, unsigned long long*)>(
        dlsym(lib, "nvmlDeviceGetCurrentClocksEventReasons"));
    if (!get_reasons) {
      get_reasons = reinterpret_cast<int (*)(void*, unsigned long long*)>(
          dlsym(lib, "nvmlDeviceGetCurrentClocksThrottleReasons"));
    }
    return init && by_pci && init() == 0 && by_pci(pci_bus_id, &device) == 0;
  }
};

// ---- kernels ----------------------------------------------------------------------------
__device__ __host__ inline float HashToUnit(unsigned long long i, unsigned seed) {
  unsigned long long x = i * 0x9E3779B97F4A7C15ull + seed;
  x ^= x >> 31;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 29;
  return static_cast<float>(x & 0xFFFFFF) / 8388608.0f - 1.0f;  // [-1, 1)
}

template <typename T>
__device__ inline T FromFloat(float v);
template <>
__device__ inline float FromFloat<float>(float v) {
  return v;
}
template <>
__device__ inline __half FromFloat<__half>(float v) {
  return __float2half(v);
}
template <>
__device__ inline __nv_bfloat16 FromFloat<__nv_bfloat16>(float v) {
  return __float2bfloat16(v);
}

template <typename T>
__global__ void FillKernel(T* data, size_t n, unsigned seed) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    data[i] = FromFloat<T>(HashToUnit(i, seed));
  }
}

__global__ void CopyKernel(const float4* __restrict__ in, float4* __restrict__ out, size_t n) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    out[i] = in[i];
  }
}

template <typename T>
float ToFloatHost(T v);
template <>
float ToFloatHost<float>(float v) {
  return v;
}
template <>
float ToFloatHost<__half>(__half v) {
  return __half2float(v);
}
template <>
float ToFloatHost<__nv_bfloat16>(__nv_bfloat16 v) {
  return __bfloat162float(v);
}

struct GemmResult {
  std::string dtype;
  int n = 0;
  double tflops = 0;
  bool correct = false;
  double max_relative_error = 0;
};

struct Timer {
  cudaEvent_t start, stop;
  Timer() {
    CUDA_CHECK(cudaEventCreate(&start));
    CUDA_CHECK(cudaEventCreate(&stop));
  }
  ~Timer() {
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
  }
  void Start() { CUDA_CHECK(cudaEventRecord(start)); }
  double StopSeconds() {
    float ms = 0;
    CUDA_CHECK(cudaEventRecord(stop));
    CUDA_CHECK(cudaEventSynchronize(stop));
    CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    return ms / 1000.0;
  }
};

// C (n x n, fp32 out for fp32/tf32, same type for 16-bit) = A * B, column-major.
template <typename T>
GemmResult RunGemm(cublasHandle_t handle, const char* dtype, cudaDataType_t type,
                   cublasComputeType_t compute, int n, int reps, double tolerance) {
  size_t elems = static_cast<size_t>(n) * n;
  T *a = nullptr, *b = nullptr, *c = nullptr;
  CUDA_CHECK(cudaMalloc(&a, elems * sizeof(T)));
  CUDA_CHECK(cudaMalloc(&b, elems * sizeof(T)));
  CUDA_CHECK(cudaMalloc(&c, elems * sizeof(T)));
  FillKernel<T><<<1024, 256>>>(a, elems, 1);
  FillKernel<T><<<1024, 256>>>(b, elems, 2);
  CUDA_CHECK(cudaGetLastError());
  float alpha = 1.0f, beta = 0.0f;
  auto gemm = [&] {
    CUBLAS_CHECK(cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha, a, type, n, b,
                              type, n, &beta, c, type, n, compute, CUBLAS_GEMM_DEFAULT));
  };
  gemm();  // warm-up (and the result checked below)
  CUDA_CHECK(cudaDeviceSynchronize());

  GemmResult result;
  result.dtype = dtype;
  result.n = n;
  // Check 64 sampled entries against a double-precision reference of the same inputs.
  std::vector<T> row(n), col(n);
  result.correct = true;
  for (int s = 0; s < 64; ++s) {
    int r = (s * 7919) % n, k = (s * 104729 + 13) % n;
    // Row r of A is strided by n in column-major; copy it element-wise with a 2D copy.
    CUDA_CHECK(cudaMemcpy2D(row.data(), sizeof(T), a + r, n * sizeof(T), sizeof(T), n,
                            cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(col.data(), b + static_cast<size_t>(k) * n, n * sizeof(T),
                          cudaMemcpyDeviceToHost));
    T got;
    CUDA_CHECK(
        cudaMemcpy(&got, c + static_cast<size_t>(k) * n + r, sizeof(T), cudaMemcpyDeviceToHost));
    double ref = 0, scale = 0;
    for (int i = 0; i < n; ++i) {
      double x = ToFloatHost(row[i]), y = ToFloatHost(col[i]);
      ref += x * y;
      scale += std::fabs(x * y);
    }
    double err = std::fabs(ToFloatHost(got) - ref) / (scale > 0 ? scale : 1);
    result.max_relative_error = std::max(result.max_relative_error, err);
    if (err > tolerance) result.correct = false;
  }
  Timer timer;
  timer.Start();
  for (int i = 0; i < reps; ++i) gemm();
  double seconds = timer.StopSeconds();
  result.tflops = 2.0 * n * static_cast<double>(n) * n * reps / seconds / 1e12;
  CUDA_CHECK(cudaFree(a));
  CUDA_CHECK(cudaFree(b));
  CUDA_CHECK(cudaFree(c));
  return result;
}

double DeviceCopyBandwidth(size_t bytes, int reps) {
  float4 *in = nullptr, *out = nullptr;
  CUDA_CHECK(cudaMalloc(&in, bytes));
  CUDA_CHECK(cudaMalloc(&out, bytes));
  CUDA_CHECK(cudaMemset(in, 1, bytes));
  size_t n = bytes / sizeof(float4);
  CopyKernel<<<2048, 256>>>(in, out, n);
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaDeviceSynchronize());
  Timer timer;
  timer.Start();
  for (int i = 0; i < reps; ++i) CopyKernel<<<2048, 256>>>(in, out, n);
  CUDA_CHECK(cudaGetLastError());
  double seconds = timer.StopSeconds();
  CUDA_CHECK(cudaFree(in));
  CUDA_CHECK(cudaFree(out));
  return 2.0 * bytes * reps / seconds;  // bytes read + written
}

double HostCopyBandwidth(size_t bytes, int reps, bool to_device) {
  void* host = nullptr;
  void* dev = nullptr;
  CUDA_CHECK(cudaMallocHost(&host, bytes));
  CUDA_CHECK(cudaMalloc(&dev, bytes));
  std::memset(host, 1, bytes);
  Timer timer;
  timer.Start();
  for (int i = 0; i < reps; ++i) {
    if (to_device)
      CUDA_CHECK(cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice));
    else
      CUDA_CHECK(cudaMemcpyAsync(host, dev, bytes, cudaMemcpyDeviceToHost));
  }
  double seconds = timer.StopSeconds();
  CUDA_CHECK(cudaFreeHost(host));
  CUDA_CHECK(cudaFree(dev));
  return static_cast<double>(bytes) * reps / seconds;
}

std::string JsonNumber(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  int device = 0;
  double stability_seconds = 30;
  int gemm_n = 8192;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--device" && i + 1 < argc)
      device = std::atoi(argv[++i]);
    else if (arg == "--stability-seconds" && i + 1 < argc)
      stability_seconds = std::atof(argv[++i]);
    else if (arg == "--gemm-size" && i + 1 < argc)
      gemm_n = std::atoi(argv[++i]);
    else if (arg == "--quick") {
      stability_seconds = 5;
      gemm_n = 4096;
    } else
      Fail("unknown argument " + arg, 2);
  }
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0) {
    Fail(std::string("no usable CUDA GPU: ") +
             (err != cudaSuccess ? cudaGetErrorString(err) : "0 devices"),
         3);
  }
  if (device < 0 || device >= count) Fail("--device out of range", 2);
  CUDA_CHECK(cudaSetDevice(device));
  cudaDeviceProp prop;
  CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  int driver_version = 0, runtime_version = 0;
  CUDA_CHECK(cudaDriverGetVersion(&driver_version));
  CUDA_CHECK(cudaRuntimeGetVersion(&runtime_version));
  char pci[32];
  CUDA_CHECK(cudaDeviceGetPCIBusId(pci, sizeof pci, device));
  Nvml nvml;
  bool have_nvml = nvml.Open(pci);

  cublasHandle_t handle;
  CUBLAS_CHECK(cublasCreate(&handle));
  int reps = gemm_n >= 8192 ? 20 : 50;
  std::vector<GemmResult> gemms;
  // Tolerances: relative to sum |a_i b_i|; fp32 accumulate in all cases, inputs exact.
  gemms.push_back(
      RunGemm<__nv_bfloat16>(handle, "bf16", CUDA_R_16BF, CUBLAS_COMPUTE_32F, gemm_n, reps, 1e-2));
  gemms.push_back(
      RunGemm<__half>(handle, "fp16", CUDA_R_16F, CUBLAS_COMPUTE_32F, gemm_n, reps, 1e-2));
  gemms.push_back(RunGemm<float>(handle, "tf32", CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, gemm_n,
                                 reps / 2 + 1, 5e-3));
  gemms.push_back(
      RunGemm<float>(handle, "fp32", CUDA_R_32F, CUBLAS_COMPUTE_32F, gemm_n / 2, reps, 1e-5));

  size_t free_bytes = 0, total_bytes = 0;
  CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  size_t copy_bytes = std::min<size_t>(size_t(2) << 30, free_bytes / 4) & ~size_t(15);
  double device_bw = DeviceCopyBandwidth(copy_bytes, 20);
  size_t host_bytes = size_t(1) << 30;
  double h2d = HostCopyBandwidth(host_bytes, 5, true);
  double d2h = HostCopyBandwidth(host_bytes, 5, false);

  // Peer-to-peer from this device to every other one that allows it.
  std::string p2p = "[";
  for (int peer = 0; peer < count; ++peer) {
    if (peer == device) continue;
    int can = 0;
    CUDA_CHECK(cudaDeviceCanAccessPeer(&can, device, peer));
    if (!can) continue;
    cudaError_t e = cudaDeviceEnablePeerAccess(peer, 0);
    if (e != cudaSuccess && e != cudaErrorPeerAccessAlreadyEnabled)
      Fail(std::string("enable peer: ") + cudaGetErrorString(e));
    cudaGetLastError();
    void *src = nullptr, *dst = nullptr;
    size_t bytes = size_t(512) << 20;
    CUDA_CHECK(cudaMalloc(&src, bytes));
    CUDA_CHECK(cudaSetDevice(peer));
    CUDA_CHECK(cudaMalloc(&dst, bytes));
    CUDA_CHECK(cudaSetDevice(device));
    Timer timer;
    timer.Start();
    for (int i = 0; i < 5; ++i) CUDA_CHECK(cudaMemcpyPeerAsync(dst, peer, src, device, bytes));
    double seconds = timer.StopSeconds();
    CUDA_CHECK(cudaFree(src));
    CUDA_CHECK(cudaSetDevice(peer));
    CUDA_CHECK(cudaFree(dst));
    CUDA_CHECK(cudaSetDevice(device));
    p2p += std::string(p2p.size() > 1 ? ", " : "") + "{\"src\": " + std::to_string(device) +
           ", \"dst\": " + std::to_string(peer) +
           ", \"bytes_per_second\": " + JsonNumber(5.0 * bytes / seconds) + "}";
  }
  p2p += "]";

  // Stability: sustained bf16 GEMM, one figure per ~1 s interval, with clocks and temperature.
  size_t elems = static_cast<size_t>(gemm_n) * gemm_n;
  __nv_bfloat16 *a = nullptr, *b = nullptr, *c = nullptr;
  CUDA_CHECK(cudaMalloc(&a, elems * sizeof(*a)));
  CUDA_CHECK(cudaMalloc(&b, elems * sizeof(*b)));
  CUDA_CHECK(cudaMalloc(&c, elems * sizeof(*c)));
  FillKernel<__nv_bfloat16><<<1024, 256>>>(a, elems, 3);
  FillKernel<__nv_bfloat16><<<1024, 256>>>(b, elems, 4);
  CUDA_CHECK(cudaGetLastError());
  float alpha = 1, beta = 0;
  std::string intervals = "[";
  std::vector<double> rates;
  auto wall_start = std::chrono::steady_clock::now();
  while (std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count() <
         stability_seconds) {
    Timer timer;
    timer.Start();
    int done = 0;
    auto interval_start = std::chrono::steady_clock::now();
    while (
        std::chrono::duration<double>(std::chrono::steady_clock::now() - interval_start).count() <
        1.0) {
      for (int i = 0; i < 5; ++i) {
        CUBLAS_CHECK(cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, gemm_n, gemm_n, gemm_n, &alpha,
                                  a, CUDA_R_16BF, gemm_n, b, CUDA_R_16BF, gemm_n, &beta, c,
                                  CUDA_R_16BF, gemm_n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
      }
      done += 5;
      CUDA_CHECK(cudaDeviceSynchronize());
    }
    double seconds = timer.StopSeconds();
    double tflops = 2.0 * gemm_n * static_cast<double>(gemm_n) * gemm_n * done / seconds / 1e12;
    rates.push_back(tflops);
    unsigned sm = 0, temp = 0, power_mw = 0;
    unsigned long long reasons = 0;
    bool ok_sm = have_nvml && nvml.get_clock && nvml.get_clock(nvml.device, 1, &sm) == 0;
    bool ok_temp = have_nvml && nvml.get_temp && nvml.get_temp(nvml.device, 0, &temp) == 0;
    bool ok_power = have_nvml && nvml.get_power && nvml.get_power(nvml.device, &power_mw) == 0;
    bool ok_reasons = have_nvml && nvml.get_reasons && nvml.get_reasons(nvml.device, &reasons) == 0;
    intervals +=
        std::string(intervals.size() > 1 ? ", " : "") + "{\"tflops\": " + JsonNumber(tflops) +
        ", \"sm_clock_mhz\": " + (ok_sm ? std::to_string(sm) : "null") +
        ", \"temperature_celsius\": " + (ok_temp ? std::to_string(temp) : "null") +
        ", \"power_watts\": " + (ok_power ? JsonNumber(power_mw / 1000.0) : "null") +
        ", \"clock_event_reasons\": " + (ok_reasons ? std::to_string(reasons) : "null") + "}";
  }
  intervals += "]";
  CUDA_CHECK(cudaFree(a));
  CUDA_CHECK(cudaFree(b));
  CUDA_CHECK(cudaFree(c));
  CUBLAS_CHECK(cublasDestroy(handle));
  double mean = 0, var = 0;
  for (double r : rates) mean += r;
  mean /= rates.empty() ? 1 : rates.size();
  for (double r : rates) var += (r - mean) * (r - mean);
  double cv = rates.size() > 1 ? std::sqrt(var / (rates.size() - 1)) / mean : 0;
  double min_rate = rates.empty() ? 0 : *std::min_element(rates.begin(), rates.end());
  double max_rate = rates.empty() ? 0 : *std::max_element(rates.begin(), rates.end());

  std::printf(
      "{\"device\": {\"index\": %d, \"name\": \"%s\", \"pci_bus_id\": \"%s\", \"memory_bytes\": "
      "%zu, "
      "\"sm_count\": %d, \"compute_capability\": \"%d.%d\", \"cuda_driver_version\": %d, "
      "\"cuda_runtime_version\": %d, \"gpu_count\": %d},\n",
      device, prop.name, pci, total_bytes, prop.multiProcessorCount, prop.major, prop.minor,
      driver_version, runtime_version, count);
  std::printf(" \"gemm\": [");
  for (size_t i = 0; i < gemms.size(); ++i) {
    std::printf(
        "%s{\"dtype\": \"%s\", \"size\": %d, \"tflops\": %s, \"correct\": %s, "
        "\"max_relative_error\": %s}",
        i ? ", " : "", gemms[i].dtype.c_str(), gemms[i].n, JsonNumber(gemms[i].tflops).c_str(),
        gemms[i].correct ? "true" : "false", JsonNumber(gemms[i].max_relative_error).c_str());
  }
  std::printf(
      "],\n \"memory_bandwidth_bytes_per_second\": %s,\n \"h2d_bytes_per_second\": %s,\n"
      " \"d2h_bytes_per_second\": %s,\n \"p2p\": %s,\n",
      JsonNumber(device_bw).c_str(), JsonNumber(h2d).c_str(), JsonNumber(d2h).c_str(), p2p.c_str());
  std::printf(
      " \"stability\": {\"seconds\": %s, \"mean_tflops\": %s, \"min_tflops\": %s, \"max_tflops\": "
      "%s, "
      "\"cv\": %s, \"intervals\": %s}}\n",
      JsonNumber(stability_seconds).c_str(), JsonNumber(mean).c_str(), JsonNumber(min_rate).c_str(),
      JsonNumber(max_rate).c_str(), JsonNumber(cv).c_str(), intervals.c_str());
  return 0;
}
