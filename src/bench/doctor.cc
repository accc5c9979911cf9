#include "bench/doctor.h"

#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/parse.h"
#include "core/subprocess.h"
#include "core/table.h"

namespace fulcrum::bench {
namespace {

constexpr const char* kNvidiaSmiQuery =
    "--query-gpu=name,driver_version,persistence_mode,ecc.mode.current,clocks.sm,clocks.max.sm,"
    "clocks.applications.graphics";

// Prints one JSON object per framework found; import failures are silent (not installed).
constexpr const char* kPythonProbe = R"PY(
import json
def emit(d): print(json.dumps(d), flush=True)
try:
    import torch
    emit({"name": "torch", "version": torch.__version__, "cuda_build": torch.version.cuda,
          "gpu_available": bool(torch.cuda.is_available())})
except Exception:
    pass
try:
    import tensorflow as tf
    info = tf.sysconfig.get_build_info()
    emit({"name": "tensorflow", "version": tf.__version__, "cuda_build": info.get("cuda_version"),
          "gpu_available": len(tf.config.list_physical_devices("GPU")) > 0})
except Exception:
    pass
try:
    import jax
    build = None
    try:
        from jax._src.lib import cuda_versions
        if cuda_versions is not None:
            build = str(cuda_versions.cuda_runtime_build_version())
    except Exception:
        pass
    emit({"name": "jax", "version": jax.__version__, "cuda_build": build,
          "gpu_available": any(d.platform == "gpu" for d in jax.devices())})
except Exception:
    pass
)PY";

std::optional<double> OptionalNumber(const std::string& cell) {
  auto value = ParseDouble(cell);
  if (!value.ok()) return std::nullopt;  // "[N/A]", "[Not Supported]"
  return *value;
}

std::optional<bool> EnabledDisabled(const std::string& cell) {
  if (EqualsIgnoreCase(cell, "Enabled")) return true;
  if (EqualsIgnoreCase(cell, "Disabled")) return false;
  return std::nullopt;
}

// "12030" (JAX's integer form) -> "12.3"; "12.4" stays.
std::string NormalizeCudaVersion(const std::string& text) {
  if (text.find('.') == std::string::npos && text.size() >= 4) {
    auto number = ParseInt(text);
    if (number.ok())
      return std::to_string(*number / 1000) + "." + std::to_string((*number % 1000) / 10);
  }
  return text;
}

std::string MajorMinor(const std::string& version) {
  auto parts = Split(version, '.');
  if (parts.size() < 2) return version;
  return parts[0] + "." + parts[1];
}

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

int CompareVersions(const std::string& a, const std::string& b) {
  auto pa = Split(a, '.');
  auto pb = Split(b, '.');
  for (size_t i = 0; i < std::max(pa.size(), pb.size()); ++i) {
    int64_t x = i < pa.size() ? ParseInt(pa[i]).ok() ? *ParseInt(pa[i]) : 0 : 0;
    int64_t y = i < pb.size() ? ParseInt(pb[i]).ok() ? *ParseInt(pb[i]) : 0 : 0;
    if (x != y) return x < y ? -1 : 1;
  }
  return 0;
}

Result<DriverTable> LoadDriverTable(const std::string& catalog_dir) {
  DriverTable table;
  // Only the first two columns are read; they never contain commas or quotes.
  auto read =
      [&](const std::string& file, const std::string& header_start,
          const std::function<Status(const std::string&, const std::string&, int)>& add) -> Status {
    std::string path = catalog_dir + "/" + file;
    std::ifstream in(path);
    if (!in) return Status::NotFound(path + ": cannot open");
    std::string line;
    int line_no = 0;
    while (std::getline(in, line)) {
      ++line_no;
      if (line_no == 1) {
        if (line.rfind(header_start, 0) != 0) {
          return Status::InvalidInput(path + ":1: header: expected '" + header_start +
                                      ",...', found '" + line + "'");
        }
        continue;
      }
      if (Trim(line).empty()) continue;
      auto cells = Split(line, ',');
      if (cells.size() < 2)
        return Status::InvalidInput(path + ":" + std::to_string(line_no) +
                                    ": expected at least 2 columns");
      FULCRUM_RETURN_IF_ERROR(add(std::string(Trim(cells[0])), std::string(Trim(cells[1])), line_no)
                                  .WithContext(path + ":" + std::to_string(line_no)));
    }
    return Status::Ok();
  };
  FULCRUM_RETURN_IF_ERROR(read("cuda_driver.csv", "cuda_version,min_driver_linux",
                               [&](const std::string& cuda, const std::string& driver, int) {
                                 if (Split(cuda, '.').size() != 2 || !ParseDouble(cuda).ok())
                                   return Status::InvalidInput(
                                       "cuda_version: expected MAJOR.MINOR, found '" + cuda + "'");
                                 table.min_driver_by_cuda[cuda] = driver;
                                 return Status::Ok();
                               }));
  FULCRUM_RETURN_IF_ERROR(read("cuda_minor_compat.csv", "cuda_major,min_driver_linux",
                               [&](const std::string& major, const std::string& driver, int) {
                                 auto m = ParseInt(major);
                                 if (!m.ok()) return m.status().WithContext("cuda_major");
                                 table.min_driver_minor_compat[static_cast<int>(*m)] = driver;
                                 return Status::Ok();
                               }));
  return table;
}

std::optional<std::string> MinDriverFor(const DriverTable& table, const std::string& cuda_version) {
  auto it = table.min_driver_by_cuda.find(MajorMinor(cuda_version));
  if (it == table.min_driver_by_cuda.end()) return std::nullopt;
  return it->second;
}

std::vector<GpuFacts> ParseNvidiaSmiQuery(const std::string& text) {
  std::vector<GpuFacts> gpus;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (Trim(line).empty()) continue;
    auto cells = Split(line, ',');
    if (cells.size() < 7) continue;
    for (auto& c : cells) c = std::string(Trim(c));
    GpuFacts gpu;
    gpu.name = cells[0];
    gpu.driver_version = cells[1];
    gpu.persistence_mode = EnabledDisabled(cells[2]);
    gpu.ecc_enabled = EnabledDisabled(cells[3]);
    gpu.sm_clock_mhz = OptionalNumber(cells[4]);
    gpu.max_sm_clock_mhz = OptionalNumber(cells[5]);
    gpu.application_sm_clock_mhz = OptionalNumber(cells[6]);
    gpus.push_back(std::move(gpu));
  }
  return gpus;
}

std::optional<std::string> ParseNvccVersion(const std::string& text) {
  // Prefer the full "V12.4.131"; fall back to "release 12.4".
  size_t v = text.find(", V");
  if (v != std::string::npos) {
    size_t end = text.find_first_of(" \n\r", v + 3);
    return text.substr(v + 3, end == std::string::npos ? std::string::npos : end - v - 3);
  }
  size_t r = text.find("release ");
  if (r != std::string::npos) {
    size_t end = text.find_first_of(", \n", r + 8);
    return text.substr(r + 8, end == std::string::npos ? std::string::npos : end - r - 8);
  }
  return std::nullopt;
}

std::vector<FrameworkFacts> ParseFrameworkProbe(const std::string& text) {
  std::vector<FrameworkFacts> frameworks;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    auto doc = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!doc.is_object() || !doc.contains("name") || !doc["name"].is_string()) continue;
    FrameworkFacts fw;
    fw.name = doc["name"].get<std::string>();
    if (doc.contains("version") && doc["version"].is_string())
      fw.version = doc["version"].get<std::string>();
    if (doc.contains("cuda_build") && doc["cuda_build"].is_string()) {
      fw.cuda_build = NormalizeCudaVersion(doc["cuda_build"].get<std::string>());
    }
    if (doc.contains("gpu_available") && doc["gpu_available"].is_boolean()) {
      fw.gpu_available = doc["gpu_available"].get<bool>();
    }
    frameworks.push_back(std::move(fw));
  }
  return frameworks;
}

SystemFacts GatherFacts(const DoctorOptions& options) {
  namespace fs = std::filesystem;
  SystemFacts facts;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/dev", ec)) {
    std::string name = entry.path().filename().string();
    if (name.rfind("nvidia", 0) == 0) facts.nvidia_device_files.push_back(entry.path().string());
  }
  std::sort(facts.nvidia_device_files.begin(), facts.nvidia_device_files.end());

  auto smi = RunCapture({"nvidia-smi", kNvidiaSmiQuery, "--format=csv,noheader,nounits"});
  if (!smi.ok()) {
    facts.driver_probe_note = "nvidia-smi not found on PATH";
  } else if (smi->exit_code != 0) {
    facts.driver_probe_note = "nvidia-smi failed (exit " + std::to_string(smi->exit_code) +
                              "): " + std::string(Trim(smi->out + smi->err)).substr(0, 200);
  } else {
    facts.gpus = ParseNvidiaSmiQuery(smi->out);
    if (!facts.gpus.empty()) facts.driver_version = facts.gpus.front().driver_version;
  }

  std::string nvcc = ProgramExists("nvcc") ? "nvcc" : "/usr/local/cuda/bin/nvcc";
  if (auto out = RunCapture({nvcc, "--version"}); out.ok() && out->exit_code == 0) {
    facts.cuda_toolkit_version = ParseNvccVersion(out->out);
    facts.cuda_toolkit_source = nvcc;
  }
  if (!facts.cuda_toolkit_version) {
    std::ifstream in("/usr/local/cuda/version.json");
    if (in) {
      auto doc = nlohmann::json::parse(in, nullptr, false);
      if (doc.is_object() && doc.contains("cuda") && doc["cuda"].contains("version")) {
        facts.cuda_toolkit_version = doc["cuda"]["version"].get<std::string>();
        facts.cuda_toolkit_source = "/usr/local/cuda/version.json";
      }
    }
  }

  CaptureOptions py_options;
  py_options.timeout_seconds = options.python_timeout_seconds;
  auto py = RunCapture({"python3", "-c", kPythonProbe}, py_options);
  if (!py.ok())
    facts.python_probe_note = "python3 not found on PATH";
  else if (py->timed_out)
    facts.python_probe_note = "python3 probe timed out";
  else
    facts.frameworks = ParseFrameworkProbe(py->out);

  for (const char* name :
       {"CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "NCCL_P2P_DISABLE", "NCCL_IB_DISABLE",
        "NCCL_SOCKET_IFNAME", "NCCL_DEBUG", "NCCL_SHM_DISABLE"}) {
    if (const char* value = std::getenv(name)) facts.env[name] = value;
  }
  facts.in_container = fs::exists("/.dockerenv", ec) || fs::exists("/run/.containerenv", ec) ||
                       std::getenv("KUBERNETES_SERVICE_HOST") != nullptr;

  facts.disk_path = options.checkpoint_dir;
  struct statvfs vfs;
  if (statvfs(options.checkpoint_dir.c_str(), &vfs) == 0) {
    facts.disk_free_bytes = static_cast<double>(vfs.f_bavail) * static_cast<double>(vfs.f_frsize);
  }
  if (statvfs("/dev/shm", &vfs) == 0) {
    facts.shm_total_bytes = static_cast<double>(vfs.f_blocks) * static_cast<double>(vfs.f_frsize);
  }
  return facts;
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

}  // namespace fulcrum::bench
