// What `fulcrum doctor` learns about a machine: GatherFacts() probes it (nvidia-smi, nvcc /
// version.json, the Python on PATH for PyTorch / TensorFlow / JAX, the environment, /dev, disk
// and /dev/shm) and records what it could not probe. Tests build SystemFacts by hand (the fake)
// and feed the parsers captured tool output. Nothing here needs a GPU; thread-compatible.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace fulcrum::nodecheck {

struct GpuFacts {
  std::string name;
  std::string driver_version;
  std::optional<bool> persistence_mode;
  std::optional<bool> ecc_enabled;  // nullopt = not supported / N/A
  std::optional<double> sm_clock_mhz;
  std::optional<double> max_sm_clock_mhz;
  std::optional<double> application_sm_clock_mhz;
};

struct FrameworkFacts {
  std::string name;  // "torch", "tensorflow", "jax"
  std::string version;
  std::optional<std::string>
      cuda_build;                     // CUDA version the wheel was built for; nullopt = CPU build
  std::optional<bool> gpu_available;  // the framework's own view (torch.cuda.is_available())
};

struct SystemFacts {
  // Driver (from nvidia-smi).
  std::optional<std::string> driver_version;
  std::vector<GpuFacts> gpus;
  std::string driver_probe_note;  // why the driver could not be read, when it could not
  std::vector<std::string> nvidia_device_files;  // /dev/nvidia0, /dev/nvidiactl, ...
  // CUDA toolkit on this machine.
  std::optional<std::string> cuda_toolkit_version;  // "12.4" / "13.0.88"
  std::string cuda_toolkit_source;                  // "nvcc" or a version.json path
  // Frameworks seen by the first python3 on PATH.
  std::vector<FrameworkFacts> frameworks;
  std::string python_probe_note;
  // Environment and host.
  std::map<std::string, std::string> env;  // CUDA_VISIBLE_DEVICES, NCCL_* (only those set)
  bool in_container = false;
  std::string disk_path;
  std::optional<double> disk_free_bytes;
  std::optional<double> shm_total_bytes;
};

struct DoctorOptions {
  std::string checkpoint_dir = ".";
  std::optional<double> checkpoint_bytes;  // size of one checkpoint, when a model is known
  int checkpoints_kept = 3;
  double python_timeout_seconds = 60;
  bool probe_frameworks = true;  // run the python3 probe (a sim source does not)
};

SystemFacts GatherFacts(const DoctorOptions& options);
// The two halves of GatherFacts: the GPU stack (/dev/nvidia*, nvidia-smi, the CUDA toolkit) and
// the host (Python frameworks, environment, container, disk, /dev/shm). A sim source fills the
// first itself and probes only the second.
void GatherGpuStackFacts(SystemFacts& facts);
void GatherHostFacts(const DoctorOptions& options, SystemFacts& facts);

// Parsers of tool output (exposed for tests).
// `nvidia-smi --query-gpu=name,driver_version,persistence_mode,ecc.mode.current,clocks.sm,
//  clocks.max.sm,clocks.applications.graphics --format=csv,noheader,nounits`
std::vector<GpuFacts> ParseNvidiaSmiQuery(const std::string& text);
// "Cuda compilation tools, release 12.4, V12.4.131" -> "12.4.131"
std::optional<std::string> ParseNvccVersion(const std::string& text);
// JSON lines printed by the python probe script.
std::vector<FrameworkFacts> ParseFrameworkProbe(const std::string& text);

}  // namespace fulcrum::nodecheck
