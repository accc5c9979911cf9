// Where the compatibility verdict's inputs come from on a node (compat.h judges them): the driver
// and GPU names through NVML (telemetry::NvmlSource), PyTorch as the job's Python sees it (a short
// script run with argv and a timeout), and a container image's CUDA from `docker inspect` or a
// saved `docker inspect` JSON. The parsers are pure and tested on captured output; the probes
// block (up to their timeout). Thread-compatible.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "nodecheck/compat.h"
#include "nodecheck/doctor_facts.h"

namespace fulcrum::nodecheck {

// What the job's Python reports about torch.
struct TorchProbe {
  std::string version;                            // torch.__version__
  std::optional<std::string> cuda;                // torch.version.cuda; nullopt = a CPU build
  std::vector<std::string> arch_list;             // torch.cuda.get_arch_list() ([] without a GPU)
  std::optional<std::string> cudnn;               // torch.backends.cudnn.version() ("90100")
  std::optional<std::string> nccl;                // torch.cuda.nccl.version() ("2.21.5")
  std::optional<std::pair<int, int>> capability;  // torch.cuda.get_device_capability(0)
};

// The probe's one JSON line; InvalidInput when it is not one (or reports that torch is missing).
Result<TorchProbe> ParseTorchProbe(const std::string& output);
// Runs `python -c <probe>`; NotFound when `python` cannot be run, Unavailable on a timeout, a
// non-zero exit or a Python without torch.
Result<TorchProbe> ProbeTorch(const std::string& python, double timeout_seconds);

// A container image's CUDA, from its environment (NVIDIA's images set both).
struct ImageCuda {
  std::string image;
  std::optional<std::string> cuda_version;  // CUDA_VERSION ("12.1.1")
  std::string require_cuda;                 // NVIDIA_REQUIRE_CUDA ("cuda>=12.1 brand=tesla,...")
};
// `docker inspect` output (a JSON array of one object with Config.Env); `where` names it in
// errors. The CUDA version is CUDA_VERSION, else the cuda>=X.Y of NVIDIA_REQUIRE_CUDA.
Result<ImageCuda> ParseDockerInspect(const std::string& json_text, const std::string& where);
// `ref_or_file`: a saved `docker inspect` JSON file when such a file exists, else an image
// reference passed to `docker inspect` (argv, with a timeout).
Result<ImageCuda> InspectImage(const std::string& ref_or_file, double timeout_seconds);

// The driver version and GPU names NVML reports (libnvidia-ml.so.1 through the loader's path).
struct NvmlIdentity {
  std::string driver_version;
  std::vector<std::string> gpu_names;
};
Result<NvmlIdentity> ReadNvmlIdentity();

// The verdict's input from what was probed: the first GPU, the driver, torch (when probed).
CompatInput InputFromProbes(const std::optional<NvmlIdentity>& nvml,
                            const std::optional<TorchProbe>& torch,
                            const std::optional<ImageCuda>& image);

struct CompatOptions {
  // Offline: any of these set means "judge these", nothing is probed.
  std::optional<std::string> driver, torch, gpu;
  std::string image;               // --image: a reference or a saved `docker inspect` JSON
  std::string python = "python3";  // the job's Python
  bool probe_python = true;        // false for a simulated node
  bool use_nvml = true;            // false for a simulated node (its facts are used)
  double timeout_seconds = 60;
};

struct CompatReport {
  std::optional<CompatVerdict> verdict;  // nullopt: nothing to judge (see notes)
  std::vector<std::string> notes;        // what could not be probed, and why
  std::optional<TorchProbe> torch;
  std::optional<ImageCuda> image;
};

// Gathers the inputs (the flags when offline; else NVML, falling back to `facts`' driver and GPU
// names from nvidia-smi or the sim, the job's Python and the image) and judges them; nothing is
// judged (verdict nullopt, notes say why) on a machine without a driver or without a runtime to
// judge (no torch, no --image). Errors:
// InvalidInput / NotFound for bad flags or an unreadable --image (exit 2), JudgeCompat's.
Result<CompatReport> CheckCompat(const CompatTables& tables, const CompatOptions& options,
                                 const SystemFacts& facts);

}  // namespace fulcrum::nodecheck
