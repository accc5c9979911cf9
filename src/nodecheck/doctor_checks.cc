#include "nodecheck/doctor_checks.h"

#include <functional>
#include <optional>

#include "core/parse.h"
#include "core/table.h"

namespace fulcrum::nodecheck {
namespace {

bool IsDatacenterGpu(const std::string& name) {
  for (const char* family : {"A100", "H100", "H200", "H20", "B200", "B300", "GH200", "V100", "A30",
                             "A40", "A10", "L40", "L4", "T4", "P100"}) {
    if (name.find(family) != std::string::npos) return true;
  }
  return false;
}

}  // namespace

const char* CheckStatusName(CheckStatus status) {
  switch (status) {
    case CheckStatus::kOk:
      return "ok";
    case CheckStatus::kWarn:
      return "warn";
    case CheckStatus::kFail:
      return "fail";
    case CheckStatus::kSkipped:
      return "skipped";
  }
  return "skipped";
}

namespace {

DoctorCheck DriverCheck(const SystemFacts& facts) {
  DoctorCheck check{"nvidia-driver", CheckStatus::kOk, "", ""};
  if (facts.driver_version) {
    check.finding = "driver " + *facts.driver_version + ", " + std::to_string(facts.gpus.size()) +
                    " GPU(s): " + (facts.gpus.empty() ? "" : facts.gpus.front().name);
    return check;
  }
  if (facts.nvidia_device_files.empty()) {
    check.status = CheckStatus::kSkipped;
    check.finding = "no NVIDIA GPU or driver on this machine (" + facts.driver_probe_note +
                    "; no /dev/nvidia* device files)";
    check.fix =
        "on a GPU server, install the NVIDIA datacenter driver (e.g. the cloud's GPU image)";
    return check;
  }
  check.status = CheckStatus::kFail;
  check.finding =
      "NVIDIA device files exist but the driver could not be queried: " + facts.driver_probe_note;
  check.fix =
      "check that the kernel module is loaded (lsmod | grep nvidia) and matches the user-space "
      "driver; reinstall the driver or reboot after an upgrade";
  return check;
}

DoctorCheck ToolkitCheck(const SystemFacts& facts, const DriverTable& table) {
  DoctorCheck check{"cuda-toolkit", CheckStatus::kOk, "", ""};
  if (!facts.cuda_toolkit_version) {
    check.status = CheckStatus::kSkipped;
    check.finding =
        "no CUDA toolkit found (nvcc not on PATH, no /usr/local/cuda/version.json); "
        "frameworks ship their own CUDA runtime, so this is only needed to compile CUDA code";
    return check;
  }
  std::string version = *facts.cuda_toolkit_version;
  auto min_driver = MinDriverFor(table, version);
  check.finding = "CUDA toolkit " + version + " (" + facts.cuda_toolkit_source + ")";
  if (!min_driver) {
    check.status = CheckStatus::kWarn;
    check.finding += "; its minimum driver is not in catalog/cuda_driver.csv";
    check.fix =
        "add the release-notes row for CUDA " + MajorMinor(version) + " to catalog/cuda_driver.csv";
    return check;
  }
  check.finding += ", needs driver >= " + *min_driver;
  if (!facts.driver_version) {
    check.status = CheckStatus::kSkipped;
    check.finding += "; no driver to compare with";
    return check;
  }
  if (CompareVersions(*facts.driver_version, *min_driver) >= 0) {
    check.finding += "; driver " + *facts.driver_version + " is new enough";
    return check;
  }
  int major = static_cast<int>(
      ParseInt(Split(version, '.')[0]).ok() ? *ParseInt(Split(version, '.')[0]) : 0);
  auto compat = table.min_driver_minor_compat.find(major);
  if (compat != table.min_driver_minor_compat.end() &&
      CompareVersions(*facts.driver_version, compat->second) >= 0) {
    check.status = CheckStatus::kWarn;
    check.finding += "; driver " + *facts.driver_version + " is older but within CUDA " +
                     std::to_string(major) +
                     ".x minor-version compatibility (>= " + compat->second + ")";
    check.fix =
        "most code runs; PTX JIT of newer kernels fails. Upgrade the driver to >= " + *min_driver +
        " or install the cuda-compat package";
    return check;
  }
  check.status = CheckStatus::kFail;
  check.finding += "; driver " + *facts.driver_version + " is too old";
  check.fix = "upgrade the NVIDIA driver to >= " + *min_driver +
              ", or use a CUDA toolkit the driver supports";
  return check;
}

DoctorCheck FrameworkCheck(const FrameworkFacts& fw, const SystemFacts& facts,
                           const DriverTable& table) {
  DoctorCheck check{"framework:" + fw.name, CheckStatus::kOk, fw.name + " " + fw.version, ""};
  if (!fw.cuda_build) {
    check.status = facts.driver_version ? CheckStatus::kFail : CheckStatus::kOk;
    check.finding += " is a CPU-only build";
    if (facts.driver_version) {
      check.fix = "install the CUDA build of " + fw.name + " (e.g. pip install " + fw.name +
                  " --index-url https://download.pytorch.org/whl/cu121 for PyTorch)";
    }
    return check;
  }
  check.finding += " built for CUDA " + *fw.cuda_build;
  if (!facts.driver_version) {
    check.status = CheckStatus::kSkipped;
    check.finding += "; no driver to compare with";
    return check;
  }
  auto min_driver = MinDriverFor(table, *fw.cuda_build);
  int major = static_cast<int>(
      ParseInt(Split(*fw.cuda_build, '.')[0]).ok() ? *ParseInt(Split(*fw.cuda_build, '.')[0]) : 0);
  auto compat = table.min_driver_minor_compat.find(major);
  std::string needed = compat != table.min_driver_minor_compat.end() ? compat->second
                       : min_driver                                  ? *min_driver
                                                                     : "";
  if (!needed.empty() && CompareVersions(*facts.driver_version, needed) < 0) {
    check.status = CheckStatus::kFail;
    check.finding += "; driver " + *facts.driver_version + " is older than its minimum " + needed;
    check.fix = "upgrade the driver to >= " + needed + " or install a " + fw.name +
                " build for an older CUDA";
    return check;
  }
  if (fw.gpu_available && !*fw.gpu_available) {
    check.status = CheckStatus::kFail;
    check.finding += "; the driver is new enough but " + fw.name + " sees no GPU";
    check.fix = "check CUDA_VISIBLE_DEVICES and the container's GPU runtime (--gpus all)";
    return check;
  }
  check.finding += "; compatible with driver " + *facts.driver_version;
  return check;
}

DoctorCheck VisibilityCheck(const SystemFacts& facts) {
  DoctorCheck check{"gpu-visibility", CheckStatus::kOk, "", ""};
  auto cvd = facts.env.find("CUDA_VISIBLE_DEVICES");
  if (cvd != facts.env.end() && Trim(cvd->second).empty()) {
    check.status = CheckStatus::kWarn;
    check.finding = "CUDA_VISIBLE_DEVICES is set but empty: every GPU is hidden from CUDA programs";
    check.fix = "unset CUDA_VISIBLE_DEVICES or list the GPU indices to use";
    return check;
  }
  if (cvd != facts.env.end() && !facts.gpus.empty()) {
    for (const auto& index : Split(cvd->second, ',')) {
      auto i = ParseInt(index);
      if (i.ok() && (*i < 0 || *i >= static_cast<int64_t>(facts.gpus.size()))) {
        check.status = CheckStatus::kWarn;
        check.finding = "CUDA_VISIBLE_DEVICES=" + cvd->second + " names GPU " + std::to_string(*i) +
                        " but only " + std::to_string(facts.gpus.size()) + " exist";
        check.fix = "use indices 0.." + std::to_string(facts.gpus.size() - 1);
        return check;
      }
    }
  }
  if (facts.in_container && facts.nvidia_device_files.empty()) {
    // A CPU-only container is legitimate; on a GPU server this is the classic missing runtime.
    check.status = CheckStatus::kSkipped;
    check.finding = "running in a container with no /dev/nvidia* devices";
    check.fix =
        "start the container with the NVIDIA runtime (docker run --gpus all, "
        "nvidia-container-toolkit)";
    return check;
  }
  if (facts.gpus.empty()) {
    check.status = CheckStatus::kSkipped;
    check.finding = "no GPU visible";
    return check;
  }
  check.finding = std::to_string(facts.gpus.size()) + " GPU(s) visible" +
                  (cvd != facts.env.end() ? ", CUDA_VISIBLE_DEVICES=" + cvd->second : "");
  return check;
}

DoctorCheck PerGpuCheck(const SystemFacts& facts, const std::string& name,
                        const std::function<std::optional<std::string>(const GpuFacts&)>& problem,
                        const std::string& ok_finding, const std::string& fix) {
  DoctorCheck check{name, CheckStatus::kOk, ok_finding, ""};
  if (facts.gpus.empty()) {
    check.status = CheckStatus::kSkipped;
    check.finding = "no GPU to check";
    return check;
  }
  std::string problems;
  for (size_t i = 0; i < facts.gpus.size(); ++i) {
    if (auto p = problem(facts.gpus[i]))
      problems += (problems.empty() ? "" : "; ") + ("GPU " + std::to_string(i) + ": " + *p);
  }
  if (!problems.empty()) {
    check.status = CheckStatus::kWarn;
    check.finding = problems;
    check.fix = fix;
  }
  return check;
}

DoctorCheck DiskCheck(const SystemFacts& facts, const DoctorOptions& options) {
  constexpr double kGiB = 1024.0 * 1024 * 1024;
  DoctorCheck check{"disk-free", CheckStatus::kOk, "", ""};
  if (!facts.disk_free_bytes) {
    check.status = CheckStatus::kSkipped;
    check.finding = facts.disk_path + ": cannot read free space (does the directory exist?)";
    check.fix = "create the checkpoint directory or pass --checkpoint-dir";
    return check;
  }
  double free = *facts.disk_free_bytes;
  // Without a model: 50 GiB holds a few checkpoints of a 1-3 B model (14 bytes/param, calibration
  // README).
  double needed = options.checkpoint_bytes
                      ? *options.checkpoint_bytes * (options.checkpoints_kept + 1)
                      : 50 * kGiB;
  check.finding =
      facts.disk_path + ": " + FormatBytes(free) + " free, " + FormatBytes(needed) +
      (options.checkpoint_bytes
           ? " needed for " + std::to_string(options.checkpoints_kept + 1) + " checkpoints"
           : " suggested");
  if (free < needed) {
    check.status = free < needed / 4 ? CheckStatus::kFail : CheckStatus::kWarn;
    check.fix =
        "free space or point --checkpoint-dir at a larger volume (checkpoints that fail to "
        "write are lost work)";
  }
  return check;
}

DoctorCheck ShmCheck(const SystemFacts& facts) {
  constexpr double kGiB = 1024.0 * 1024 * 1024;
  DoctorCheck check{"shared-memory", CheckStatus::kOk, "", ""};
  if (!facts.shm_total_bytes) {
    check.status = CheckStatus::kSkipped;
    check.finding = "/dev/shm not mounted";
    return check;
  }
  check.finding = "/dev/shm is " + FormatBytes(*facts.shm_total_bytes);
  // Docker's default /dev/shm is 64 MB; PyTorch DataLoader workers and NCCL use it.
  if (*facts.shm_total_bytes < 1 * kGiB) {
    check.status = CheckStatus::kWarn;
    check.fix =
        "give the container more shared memory (docker run --shm-size=16g or --ipc=host); "
        "DataLoader workers and NCCL fail with 'bus error' otherwise";
  }
  return check;
}

DoctorCheck NcclCheck(const SystemFacts& facts) {
  DoctorCheck check{"nccl-env", CheckStatus::kOk, "", ""};
  std::vector<std::string> warnings;
  auto is_set = [&](const char* name) {
    auto it = facts.env.find(name);
    return it != facts.env.end() && it->second == "1";
  };
  if (is_set("NCCL_P2P_DISABLE"))
    warnings.push_back(
        "NCCL_P2P_DISABLE=1 forces GPU-to-GPU traffic through host memory (slow on NVLink "
        "machines)");
  if (is_set("NCCL_IB_DISABLE"))
    warnings.push_back(
        "NCCL_IB_DISABLE=1 disables InfiniBand/RoCE: multi-node runs fall back to TCP sockets");
  if (is_set("NCCL_SHM_DISABLE"))
    warnings.push_back("NCCL_SHM_DISABLE=1 disables shared-memory transport within a node");
  if (!warnings.empty()) {
    check.status = CheckStatus::kWarn;
    for (const auto& w : warnings) check.finding += (check.finding.empty() ? "" : "; ") + w;
    check.fix = "unset these unless a known bug requires them";
    return check;
  }
  check.finding = "no NCCL variable that slows training is set";
  if (facts.gpus.size() > 1 && !facts.env.count("NCCL_DEBUG")) {
    check.finding +=
        "; hint: NCCL_DEBUG=INFO logs the transport chosen (NVLink, IB, socket) at start";
  }
  if (!facts.env.count("NCCL_SOCKET_IFNAME")) {
    check.finding += "; hint: for multi-node jobs set NCCL_SOCKET_IFNAME to the fast interface";
  }
  return check;
}

}  // namespace

std::vector<DoctorCheck> RunChecks(const SystemFacts& facts, const DriverTable& table,
                                   const DoctorOptions& options) {
  std::vector<DoctorCheck> checks;
  checks.push_back(DriverCheck(facts));
  checks.push_back(ToolkitCheck(facts, table));
  if (facts.frameworks.empty()) {
    checks.push_back({"frameworks", CheckStatus::kSkipped,
                      facts.python_probe_note.empty()
                          ? "no PyTorch, TensorFlow or JAX found by python3"
                          : facts.python_probe_note,
                      ""});
  }
  for (const auto& fw : facts.frameworks) checks.push_back(FrameworkCheck(fw, facts, table));
  checks.push_back(VisibilityCheck(facts));
  checks.push_back(PerGpuCheck(
      facts, "persistence-mode",
      [](const GpuFacts& g) -> std::optional<std::string> {
        if (g.persistence_mode && !*g.persistence_mode) return "persistence mode is off";
        return std::nullopt;
      },
      "persistence mode on (or not applicable)",
      "sudo nvidia-smi -pm 1 (keeps the driver loaded: no multi-second start-up per process)"));
  checks.push_back(PerGpuCheck(
      facts, "ecc-mode",
      [](const GpuFacts& g) -> std::optional<std::string> {
        if (g.ecc_enabled && !*g.ecc_enabled && IsDatacenterGpu(g.name))
          return g.name + " has ECC disabled";
        return std::nullopt;
      },
      "ECC on where the GPU supports it",
      "sudo nvidia-smi -e 1 and reboot (silent memory errors corrupt long runs)"));
  checks.push_back(PerGpuCheck(
      facts, "clocks",
      [](const GpuFacts& g) -> std::optional<std::string> {
        if (g.application_sm_clock_mhz && g.max_sm_clock_mhz &&
            *g.application_sm_clock_mhz < 0.9 * *g.max_sm_clock_mhz) {
          return "application clock " + FormatNumber(*g.application_sm_clock_mhz, 0) +
                 " MHz < 90 % of max " + FormatNumber(*g.max_sm_clock_mhz, 0) + " MHz";
        }
        return std::nullopt;
      },
      "application clocks at (or near) the maximum",
      "sudo nvidia-smi -rac (reset application clocks); ask the provider if clocks are locked"));
  checks.push_back(DiskCheck(facts, options));
  checks.push_back(ShmCheck(facts));
  checks.push_back(NcclCheck(facts));
  return checks;
}

}  // namespace fulcrum::nodecheck
