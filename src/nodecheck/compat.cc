#include "nodecheck/compat.h"

#include <algorithm>
#include <set>

#include "core/input_error.h"
#include "core/parse.h"

namespace fulcrum::nodecheck {
namespace {

using Kind = CompatVerdictKind;

int Severity(Kind kind) {
  switch (kind) {
    case Kind::kOk:
      return 0;
    case Kind::kMinorVersion:
      return 1;
    case Kind::kForwardCompat:
      return 2;
    case Kind::kFail:
      return 3;
  }
  return 3;
}

void Worsen(CompatVerdict& v, Kind kind) {
  if (Severity(kind) > Severity(v.verdict)) v.verdict = kind;
}

Status BadInput(const std::string& field, const std::string& expected, const std::string& found,
                std::vector<std::string> nearest = {}) {
  return InputError({"", std::nullopt, field, expected, found, std::move(nearest)});
}

// A driver version or branch of whole numbers ("550.54.15", "470").
bool IsDriverVersion(const std::string& text) {
  if (text.empty()) return false;
  for (const std::string& part : Split(text, '.')) {
    if (part.empty() || !ParseInt(part).ok() || *ParseInt(part) < 0) return false;
  }
  return true;
}

int Branch(const std::string& driver) { return static_cast<int>(*ParseInt(Split(driver, '.')[0])); }

// `driver` >= `minimum`; a branch alone ("535") stands for its newest release, so only the
// branches are compared.
bool DriverAtLeast(const std::string& driver, const std::string& minimum) {
  if (Split(driver, '.').size() == 1) return Branch(driver) >= Branch(minimum);
  return CompareVersions(driver, minimum) >= 0;
}

std::string Join(const std::vector<std::string>& items, const char* separator = " ") {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : separator) + item;
  return out;
}

// The wheel the input names, from the table; nullptr for an on-node probe (the probe is the truth).
Result<const TorchWheelRow*> ResolveWheel(const CompatTables& tables, const std::string& torch,
                                          bool probed) {
  const std::string release = TorchRelease(torch);
  std::vector<std::string> releases;
  for (const auto& row : tables.torch_wheels) {
    if (releases.empty() || releases.back() != row.torch) releases.push_back(row.torch);
  }
  if (Split(release, '.').size() != 2 || release.back() == '.') {
    if (probed) return nullptr;
    return BadInput("--torch", "a PyTorch version such as 2.4.1 or 2.4.1+cu121", torch, releases);
  }
  if (CompareVersions(release, releases.back()) > 0) {
    if (probed) return nullptr;
    return Status::InvalidInput("--torch: torch " + release + " is not in the table (data as of " +
                                tables.torch_as_of + "); the newest known is " + releases.back());
  }
  if (std::find(releases.begin(), releases.end(), release) == releases.end()) {
    if (probed) return nullptr;
    return BadInput(
        "--torch",
        "a PyTorch release of the table (" + releases.front() + " to " + releases.back() + ")",
        torch, NearestNames(release, releases));
  }
  const size_t plus = torch.find('+');
  const std::string variant = plus == std::string::npos ? "" : torch.substr(plus + 1);
  std::vector<std::string> variants;
  for (const auto& row : tables.torch_wheels) {
    if (row.torch != release) continue;
    if (variant.empty() ? row.pypi_default : row.variant == variant) return &row;
    variants.push_back(row.variant);
  }
  if (probed || variant == "cpu") return nullptr;
  return BadInput("--torch", "a wheel of torch " + release + ": " + Join(variants, ", "), torch,
                  NearestNames(variant, variants));
}

// The compute capability: measured, else from the GPU's name.
Result<std::optional<std::pair<int, int>>> ResolveGpu(const CompatTables& tables,
                                                      const CompatInput& input, CompatVerdict& v,
                                                      bool& data_center) {
  const GpuArchRow* row = input.gpu ? FindGpu(tables, *input.gpu) : nullptr;
  if (input.gpu) v.gpu = *input.gpu;
  if (row) {
    v.gpu_row = row->gpu;
    data_center = row->segment == "data-center";
  }
  if (input.compute_capability) return input.compute_capability;
  if (row) return std::optional<std::pair<int, int>>({row->cc_major, row->cc_minor});
  if (!input.gpu) return std::optional<std::pair<int, int>>();
  if (input.offline) {
    std::vector<std::string> names;
    for (const auto& r : tables.gpus) names.push_back(r.gpu);
    return BadInput("--gpu", "a GPU of catalog/cuda_gpu_arch.csv", *input.gpu,
                    NearestNames(*input.gpu, names));
  }
  v.reasons.push_back("GPU \"" + *input.gpu +
                      "\" is not in catalog/cuda_gpu_arch.csv: its architecture is not checked");
  return std::optional<std::pair<int, int>>();
}

// How `driver` runs CUDA `cuda`: natively, under minor-version compatibility, through the
// forward-compatibility package, or not at all. Adds the reasons.
Result<Kind> JudgeDriver(const CompatTables& tables, const std::string& driver,
                         const std::string& cuda, bool data_center, bool gpu_known,
                         CompatVerdict& v) {
  const std::string mm = MajorMinor(cuda);
  auto native = MinDriverFor(tables.driver, mm);
  if (!native) {
    std::string newest = "0.0";  // numerically: "12.10" is newer than "12.9"
    for (const auto& [version, driver] : tables.driver.min_driver_by_cuda)
      if (CompareVersions(version, newest) > 0) newest = version;
    bool newer = CompareVersions(mm, newest) > 0;
    return Status::InvalidInput("CUDA " + mm + " is " +
                                (newer ? "not in the table (data as of " + tables.driver_as_of + ")"
                                       : "older than the table (CUDA 10.0 and later)") +
                                ": catalog/cuda_driver.csv");
  }
  if (DriverAtLeast(driver, *native)) {
    v.reasons.push_back("driver " + driver + " runs CUDA " + mm + " natively (needs " + *native +
                        "+)");
    return Kind::kOk;
  }
  const int major = static_cast<int>(*ParseInt(Split(mm, '.')[0]));
  auto minor = tables.driver.min_driver_minor_compat.find(major);
  if (minor != tables.driver.min_driver_minor_compat.end() &&
      DriverAtLeast(driver, minor->second)) {
    v.reasons.push_back("driver " + driver + " is older than CUDA " + mm + "'s own driver (" +
                        *native + ") but runs CUDA " + std::to_string(major) +
                        ".x under minor-version compatibility (" + minor->second +
                        "+); not covered: " + tables.driver.minor_compat_excludes.at(major));
    return Kind::kMinorVersion;
  }
  std::string too_old = "driver " + driver + " is too old for CUDA " + mm + ": it needs " + *native;
  if (minor != tables.driver.min_driver_minor_compat.end())
    too_old += " (or " + minor->second + " under minor-version compatibility)";
  v.reasons.push_back(too_old + " (\"The NVIDIA driver on your system is too old\")");
  for (const ForwardCompatRow& row : tables.forward_compat) {
    if (row.cuda_major != major || row.driver_branch != Branch(driver) ||
        !DriverAtLeast(driver, row.min_driver_linux))
      continue;
    if (data_center) {
      v.reasons.push_back("the forward-compatibility package cuda-compat-" + Split(mm, '.')[0] +
                          "-" + Split(mm, '.')[1] + " runs CUDA " + mm + " on the R" +
                          std::to_string(row.driver_branch) + " branch of a data-center GPU");
      return Kind::kForwardCompat;
    }
    v.reasons.push_back(gpu_known ? "the forward-compatibility package (cuda-compat-*) is for "
                                    "data-center GPUs only; " +
                                        v.gpu.value_or("this GPU") + " (" +
                                        v.gpu_row.value_or("?") + ") is not one"
                                  : "the forward-compatibility package (cuda-compat-*) needs a "
                                    "data-center GPU; the GPU is not known");
  }
  return Kind::kFail;
}

struct ArchCheck {
  bool sass = false;  // compiled kernels for this GPU
  bool ptx = false;   // PTX the driver can JIT for it
};

ArchCheck CheckArch(const std::vector<std::string>& arch_list, std::pair<int, int> cc) {
  ArchCheck check;
  const int gpu = cc.first * 10 + cc.second;
  for (const std::string& arch : arch_list) {
    for (const char* prefix : {"sm_", "compute_"}) {
      const std::string p = prefix;
      if (arch.rfind(p, 0) != 0) continue;
      auto number = ParseInt(arch.substr(p.size()));  // "sm_90a" (arch-specific) does not parse
      if (!number.ok()) continue;
      const int code = static_cast<int>(*number);
      if (p == "sm_" && code / 10 == cc.first && code % 10 <= cc.second) check.sass = true;
      if (p == "compute_" && code <= gpu) check.ptx = true;
    }
  }
  return check;
}

std::string ArchName(std::pair<int, int> cc) {
  return "sm_" + std::to_string(cc.first) + std::to_string(cc.second);
}

// Judges the wheel's GPU code against the GPU; `driver_kind` decides whether PTX JIT can help.
// Returns whether the wheel can run on the GPU.
bool JudgeArch(const std::vector<std::string>& arch_list, std::pair<int, int> cc,
               const std::string& wheel, Kind driver_kind, CompatVerdict& v) {
  ArchCheck check = CheckArch(arch_list, cc);
  const std::string arch = ArchName(cc);
  if (check.sass) {
    v.reasons.push_back(wheel + " carries kernels for " + arch);
    return true;
  }
  if (check.ptx && driver_kind != Kind::kMinorVersion) {
    v.reasons.push_back(wheel + " has no " + arch + " kernels but PTX the driver JIT-compiles " +
                        "(the first start is slow)");
    return true;
  }
  Worsen(v, Kind::kFail);
  if (check.ptx) {
    v.reasons.insert(v.reasons.begin(),
                     wheel + " has only PTX for " + arch +
                         ", and PTX JIT is not available under minor-version compatibility");
    return false;
  }
  v.reasons.insert(v.reasons.begin(), wheel + " carries no code for " + arch + " (built for " +
                                          Join(arch_list) +
                                          "): \"no kernel image is available for execution on "
                                          "the device\"");
  return false;
}

// The minimum driver for CUDA `cuda`: natively, or under minor-version compatibility.
std::optional<std::string> NeededDriver(const CompatTables& tables, const std::string& cuda,
                                        bool native) {
  if (native) return MinDriverFor(tables.driver, cuda);
  auto it =
      tables.driver.min_driver_minor_compat.find(static_cast<int>(*ParseInt(Split(cuda, '.')[0])));
  if (it == tables.driver.min_driver_minor_compat.end()) return std::nullopt;
  return it->second;
}

// The first release from `from_release` on with a wheel that carries code for the GPU and runs
// on `driver` (natively when `native`); in it PyPI's default wheel, else the newest CUDA.
const TorchWheelRow* FindWorkingWheel(const CompatTables& tables, const std::string& from_release,
                                      const std::optional<std::string>& driver,
                                      std::optional<std::pair<int, int>> cc, bool native) {
  const TorchWheelRow* best = nullptr;
  for (const TorchWheelRow& row : tables.torch_wheels) {
    if (!from_release.empty() && CompareVersions(row.torch, from_release) < 0) continue;
    if (best && row.torch != best->torch) break;
    if (cc && !CheckArch(row.arch_list, *cc).sass) continue;
    if (driver) {
      auto need = NeededDriver(tables, row.cuda, native);
      if (!need || !DriverAtLeast(*driver, *need)) continue;
    }
    if (!best || (row.pypi_default && !best->pypi_default) ||
        (!best->pypi_default && CompareVersions(row.cuda, best->cuda) > 0))
      best = &row;
  }
  return best;
}

std::string PipCommand(const TorchWheelRow& row) {
  return "pip install 'torch==" + row.torch + ".*' --index-url " + row.index_url;
}

// What to do, from the tables: the compat package, a wheel that works, the driver to install.
void AddFix(const CompatTables& tables, const CompatInput& input, const TorchWheelRow* wheel,
            std::optional<std::pair<int, int>> cc, bool arch_ok, CompatVerdict& v) {
  std::vector<std::string> fixes;
  const std::string cuda = v.cuda_runtime ? MajorMinor(*v.cuda_runtime) : "";
  const auto native = cuda.empty() ? std::nullopt : MinDriverFor(tables.driver, cuda);
  if (v.verdict == Kind::kMinorVersion) {
    v.fix = "none needed; for PTX JIT and the whole CUDA " + cuda +
            " feature set upgrade the driver to " + native.value_or("?") + " or newer";
    return;
  }
  if (v.verdict == Kind::kForwardCompat) {
    auto parts = Split(cuda, '.');
    fixes.push_back("apt install cuda-compat-" + parts[0] + "-" + parts[1] +
                    " (NVIDIA's CUDA repository) and run with LD_LIBRARY_PATH=/usr/local/cuda-" +
                    cuda + "/compat");
  }
  if (v.verdict == Kind::kOk) return;
  const std::string from = wheel ? wheel->torch : input.torch ? TorchRelease(*input.torch) : "";
  if (input.torch) {
    const TorchWheelRow* better = FindWorkingWheel(tables, from, v.driver, cc, true);
    if (!better) better = FindWorkingWheel(tables, from, v.driver, cc, false);
    if (better && better != wheel)
      fixes.push_back("use the " + better->variant + " wheel of torch " + better->torch + ": " +
                      PipCommand(*better));
  }
  // The driver the wheel needs; when the wheel cannot run on this GPU, the driver of the first
  // wheel that can.
  std::optional<std::string> need = native;
  if (!arch_ok && input.torch) {
    const TorchWheelRow* for_gpu = FindWorkingWheel(tables, from, std::nullopt, cc, true);
    need = for_gpu ? MinDriverFor(tables.driver, for_gpu->cuda) : std::nullopt;
  }
  if (v.driver && need && !DriverAtLeast(*v.driver, *need))
    fixes.push_back("upgrade the driver to " + *need + " or newer");
  v.fix = Join(fixes, "; or ");
}

}  // namespace

const char* CompatVerdictName(CompatVerdictKind kind) {
  switch (kind) {
    case Kind::kOk:
      return "ok";
    case Kind::kMinorVersion:
      return "minor-version";
    case Kind::kForwardCompat:
      return "forward-compat";
    case Kind::kFail:
      return "fail";
  }
  return "fail";
}

Result<CompatVerdict> JudgeCompat(const CompatTables& tables, const CompatInput& input) {
  CompatVerdict v;
  if (input.driver) {
    if (!IsDriverVersion(*input.driver)) {
      std::set<std::string> branches;
      for (const auto& [cuda, driver] : tables.driver.min_driver_by_cuda)
        branches.insert(Split(driver, '.')[0]);
      return BadInput("--driver", "a driver version such as 550.54.15 or a branch such as 535",
                      *input.driver,
                      NearestNames(*input.driver, {branches.begin(), branches.end()}));
    }
    v.driver = input.driver;
  }
  const TorchWheelRow* wheel = nullptr;
  if (input.torch) {
    FULCRUM_ASSIGN_OR_RETURN(wheel, ResolveWheel(tables, *input.torch, input.probed));
    v.torch = input.torch;
    if (input.probed) {
      v.wheel_cuda = input.probed_cuda;
    } else if (wheel) {
      v.wheel_cuda = wheel->cuda;
      v.torch = *input.torch + (input.torch->find('+') == std::string::npos
                                    ? " (PyPI's default: +" + wheel->variant + ")"
                                    : "");
    }
  }
  bool data_center = false;
  FULCRUM_ASSIGN_OR_RETURN(auto cc, ResolveGpu(tables, input, v, data_center));
  if (cc) v.gpu_arch = ArchName(*cc);
  v.cuda_runtime = v.wheel_cuda ? v.wheel_cuda : input.image_cuda;
  if (input.torch && !v.wheel_cuda) {
    Worsen(v, Kind::kFail);
    v.reasons.push_back("torch " + *input.torch + " is a CPU-only build: it cannot use the GPU");
  }
  Kind driver_kind = Kind::kOk;
  std::vector<std::string> runtimes;
  if (v.wheel_cuda) runtimes.push_back(*v.wheel_cuda);
  if (input.image_cuda) runtimes.push_back(*input.image_cuda);
  if (v.driver) {
    for (const std::string& cuda : runtimes) {
      FULCRUM_ASSIGN_OR_RETURN(
          Kind kind, JudgeDriver(tables, *v.driver, cuda, data_center, v.gpu_row.has_value(), v));
      if (Severity(kind) > Severity(driver_kind)) driver_kind = kind;
    }
    Worsen(v, driver_kind);
  }
  // torch.cuda.get_arch_list() is empty where CUDA cannot start; the table's row then says.
  static const std::vector<std::string> kNone;
  const std::vector<std::string>& arch_list = input.probed && !input.probed_arch_list.empty()
                                                  ? input.probed_arch_list
                                              : wheel ? wheel->arch_list
                                                      : kNone;
  bool arch_ok = true;
  if (cc && v.wheel_cuda && !arch_list.empty()) {
    std::string variant;  // "12.1" -> "cu121"
    for (char c : MajorMinor(*v.wheel_cuda))
      if (c != '.') variant += c;
    const std::string name = "torch " + TorchRelease(*input.torch) + " cu" + variant;
    arch_ok = JudgeArch(arch_list, *cc, name, driver_kind, v);
  }
  AddFix(tables, input, wheel, cc, arch_ok, v);
  return v;
}

}  // namespace fulcrum::nodecheck
