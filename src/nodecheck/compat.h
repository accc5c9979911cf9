// The compatibility verdict of `fulcrum doctor` (and validate's environment phase): can this node's
// NVIDIA driver run the CUDA runtime of the job's PyTorch wheel (or container image), and does the
// wheel carry GPU code for the node's GPU? The rules are NVIDIA's (native driver, minor-version
// compatibility, the forward-compatibility package on data-center GPUs) and the tables are
// catalog/'s (compat_table.h); this file only applies them. Pure; thread-compatible.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "nodecheck/compat_table.h"

namespace fulcrum::nodecheck {

enum class CompatVerdictKind { kOk, kMinorVersion, kForwardCompat, kFail };
// "ok", "minor-version", "forward-compat", "fail".
const char* CompatVerdictName(CompatVerdictKind kind);

// What is known about the node and the job; every part may be missing (then it is not judged).
struct CompatInput {
  std::optional<std::string> driver;  // "550.54.15", or a branch alone: "470"
  std::optional<std::string> gpu;     // a GPU name: NVML / nvidia-smi ("NVIDIA H100 80GB HBM3") or
                                      // the catalog's ("H100-SXM5-80GB")
  std::optional<std::pair<int, int>> compute_capability;  // measured; wins over the name's row
  // The framework, from --torch ("2.4.1+cu121"; without +cuXYZ: PyPI's default wheel of 2.4)...
  std::optional<std::string> torch;
  // ...or probed in the job's Python: torch.__version__, torch.version.cuda (nullopt with
  // torch set = a CPU build) and torch.cuda.get_arch_list(). A probe wins over the table's row.
  bool probed = false;
  std::optional<std::string> probed_cuda;
  std::vector<std::string> probed_arch_list;
  std::optional<std::string> image_cuda;  // CUDA_VERSION of a container image ("12.1.1")
  std::string image;                      // the image reference, for messages
  // The input came from flags (--driver/--torch/--gpu): an unknown GPU name is an error rather
  // than "not checked".
  bool offline = false;
};

struct CompatVerdict {
  CompatVerdictKind verdict = CompatVerdictKind::kOk;
  std::optional<std::string> driver;
  std::optional<std::string> cuda_runtime;  // the CUDA the driver has to run (wheel or image)
  std::optional<std::string> wheel_cuda;    // the wheel's CUDA ("12.1")
  std::optional<std::string> gpu_arch;      // "sm_90"
  std::optional<std::string> gpu;           // the GPU as named in the input
  std::optional<std::string> gpu_row;  // its row in cuda_gpu_arch.csv ("GeForce RTX 50 series")
  std::optional<std::string> torch;    // "2.4.1+cu121"
  std::vector<std::string> reasons;    // one sentence per finding, the decisive ones first
  std::string fix;                     // "" when nothing is to be done
};

// InvalidInput (exit 2) for a malformed driver, a torch release or wheel variant the table does
// not know (with the nearest known), a GPU name the table does not know (when no compute
// capability was measured), or a torch release / CUDA version newer than the table ("not in the
// table (data as of DATE)").
Result<CompatVerdict> JudgeCompat(const CompatTables& tables, const CompatInput& input);

}  // namespace fulcrum::nodecheck
