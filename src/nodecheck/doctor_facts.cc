#include "nodecheck/doctor_facts.h"

#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/parse.h"
#include "core/subprocess.h"

namespace fulcrum::nodecheck {
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

}  // namespace

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

void GatherGpuStackFacts(SystemFacts& facts) {
  namespace fs = std::filesystem;
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
}

void GatherHostFacts(const DoctorOptions& options, SystemFacts& facts) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (options.probe_frameworks) {
    CaptureOptions py_options;
    py_options.timeout_seconds = options.python_timeout_seconds;
    auto py = RunCapture({"python3", "-c", kPythonProbe}, py_options);
    if (!py.ok())
      facts.python_probe_note = "python3 not found on PATH";
    else if (py->timed_out)
      facts.python_probe_note = "python3 probe timed out";
    else
      facts.frameworks = ParseFrameworkProbe(py->out);
  }

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
}

SystemFacts GatherFacts(const DoctorOptions& options) {
  SystemFacts facts;
  GatherGpuStackFacts(facts);
  GatherHostFacts(options, facts);
  return facts;
}

}  // namespace fulcrum::nodecheck
