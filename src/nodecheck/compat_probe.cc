#include "nodecheck/compat_probe.h"

#include <filesystem>

#include <nlohmann/json.hpp>

#include "core/parse.h"
#include "core/subprocess.h"
#include "core/text_file.h"
#include "telemetry/nvml_source.h"

namespace fulcrum::nodecheck {
namespace {

// Prints one JSON object: torch's version, CUDA build, GPU code, cuDNN, NCCL and the first GPU's
// compute capability (when CUDA is usable), or {"error": ...} when torch cannot be imported.
constexpr const char* kTorchProbe = R"PY(
import json
try:
    import torch
except Exception as e:
    print(json.dumps({"error": "import torch failed: %s" % e}))
    raise SystemExit(0)
d = {"version": torch.__version__, "cuda": torch.version.cuda}
def attempt(key, f):
    try:
        d[key] = f()
    except Exception:
        d[key] = None
attempt("arch_list", lambda: torch.cuda.get_arch_list())
attempt("cudnn", lambda: torch.backends.cudnn.version())
attempt("nccl", lambda: ".".join(str(x) for x in torch.cuda.nccl.version()))
attempt("capability", lambda: list(torch.cuda.get_device_capability(0)) if torch.cuda.is_available() else None)
print(json.dumps(d))
)PY";

std::optional<std::string> OptionalText(const nlohmann::json& j, const char* key) {
  if (!j.contains(key) || j[key].is_null()) return std::nullopt;
  return j[key].is_string() ? j[key].get<std::string>() : j[key].dump();
}

}  // namespace

Result<TorchProbe> ParseTorchProbe(const std::string& output) {
  nlohmann::json j;
  for (const std::string& line : Split(output, '\n')) {
    auto parsed = nlohmann::json::parse(line, nullptr, false);
    if (parsed.is_object()) j = parsed;
  }
  if (!j.is_object())
    return Status::InvalidInput("torch probe: expected a JSON line, found \"" +
                                std::string(Trim(output)).substr(0, 200) + "\"");
  if (j.contains("error")) return Status::Unavailable(j["error"].dump());
  TorchProbe probe;
  probe.version = OptionalText(j, "version").value_or("");
  probe.cuda = OptionalText(j, "cuda");
  if (j.contains("arch_list") && j["arch_list"].is_array()) {
    for (const auto& arch : j["arch_list"])
      if (arch.is_string()) probe.arch_list.push_back(arch.get<std::string>());
  }
  probe.cudnn = OptionalText(j, "cudnn");
  probe.nccl = OptionalText(j, "nccl");
  if (j.contains("capability") && j["capability"].is_array() && j["capability"].size() == 2 &&
      j["capability"][0].is_number_integer() && j["capability"][1].is_number_integer())
    probe.capability = std::make_pair(j["capability"][0].get<int>(), j["capability"][1].get<int>());
  if (probe.version.empty())
    return Status::InvalidInput("torch probe: no \"version\" in " + j.dump());
  return probe;
}

Result<TorchProbe> ProbeTorch(const std::string& python, double timeout_seconds) {
  CaptureOptions options;
  options.timeout_seconds = timeout_seconds;
  auto run = RunCapture({python, "-c", kTorchProbe}, options);
  if (!run.ok()) return Status::NotFound("--python " + python + ": cannot be run (not on PATH?)");
  if (run->timed_out)
    return Status::Unavailable("--python " + python + ": the torch probe timed out after " +
                               FormatDuration(timeout_seconds));
  if (run->exit_code != 0)
    return Status::Unavailable("--python " + python + ": exit " + std::to_string(run->exit_code) +
                               ": " + std::string(Trim(run->err)).substr(0, 300));
  auto probe = ParseTorchProbe(run->out);
  if (!probe.ok()) return probe.status().WithContext("--python " + python);
  return probe;
}

Result<ImageCuda> ParseDockerInspect(const std::string& json_text, const std::string& where) {
  auto doc = nlohmann::json::parse(json_text, nullptr, false);
  if (doc.is_array() && !doc.empty()) doc = doc[0];
  if (!doc.is_object() || !doc.contains("Config") || !doc["Config"].is_object())
    return Status::InvalidInput(where +
                                ": expected `docker inspect` output (an object with Config), "
                                "found " +
                                (doc.is_discarded() ? "no JSON" : "other JSON"));
  ImageCuda image;
  image.image = where;
  if (doc.contains("RepoTags") && doc["RepoTags"].is_array() && !doc["RepoTags"].empty() &&
      doc["RepoTags"][0].is_string())
    image.image = doc["RepoTags"][0].get<std::string>();
  const auto& env = doc["Config"].value("Env", nlohmann::json::array());
  for (const auto& entry : env) {
    if (!entry.is_string()) continue;
    const std::string kv = entry.get<std::string>();
    const size_t eq = kv.find('=');
    if (eq == std::string::npos) continue;
    const std::string key = kv.substr(0, eq), value = kv.substr(eq + 1);
    if (key == "CUDA_VERSION") image.cuda_version = value;
    if (key == "NVIDIA_REQUIRE_CUDA") image.require_cuda = value;
  }
  if (!image.cuda_version) {
    const size_t at = image.require_cuda.find("cuda>=");
    if (at != std::string::npos) {
      std::string version = image.require_cuda.substr(at + 6);
      version = version.substr(0, version.find(' '));
      if (!version.empty()) image.cuda_version = version;
    }
  }
  if (!image.cuda_version)
    return Status::InvalidInput(where +
                                ": expected CUDA_VERSION or NVIDIA_REQUIRE_CUDA in "
                                "Config.Env, found neither (not a CUDA image?)");
  return image;
}

Result<ImageCuda> InspectImage(const std::string& ref_or_file, double timeout_seconds) {
  std::error_code ec;
  if (std::filesystem::is_regular_file(ref_or_file, ec)) {
    FULCRUM_ASSIGN_OR_RETURN(std::string text,
                             ReadTextFile(ref_or_file, "a saved `docker inspect` JSON"));
    return ParseDockerInspect(text, ref_or_file);
  }
  CaptureOptions options;
  options.timeout_seconds = timeout_seconds;
  auto run = RunCapture({"docker", "inspect", "--type", "image", ref_or_file}, options);
  if (!run.ok())
    return Status::NotFound("--image " + ref_or_file +
                            ": not a file, and docker is not on PATH to inspect it");
  if (run->timed_out || run->exit_code != 0)
    return Status::InvalidInput("--image " + ref_or_file + ": docker inspect failed: " +
                                std::string(Trim(run->err)).substr(0, 300) +
                                " (pull the image first, or pass a saved `docker inspect` JSON)");
  return ParseDockerInspect(run->out, ref_or_file);
}

Result<NvmlIdentity> ReadNvmlIdentity() {
  FULCRUM_ASSIGN_OR_RETURN(auto source, telemetry::NvmlSource::Open());
  FULCRUM_ASSIGN_OR_RETURN(telemetry::GpuSnapshot snapshot, source->Sample());
  NvmlIdentity identity;
  for (const auto& gpu : snapshot) {
    identity.gpu_names.push_back(gpu.name);
    if (identity.driver_version.empty()) identity.driver_version = gpu.driver_version;
  }
  return identity;
}

CompatInput InputFromProbes(const std::optional<NvmlIdentity>& nvml,
                            const std::optional<TorchProbe>& torch,
                            const std::optional<ImageCuda>& image) {
  CompatInput in;
  if (nvml) {
    if (!nvml->driver_version.empty()) in.driver = nvml->driver_version;
    if (!nvml->gpu_names.empty()) in.gpu = nvml->gpu_names.front();
  }
  if (torch) {
    in.torch = torch->version;
    in.probed = true;
    in.probed_cuda = torch->cuda;
    in.probed_arch_list = torch->arch_list;
    in.compute_capability = torch->capability;
  }
  if (image) {
    in.image = image->image;
    in.image_cuda = image->cuda_version;
  }
  return in;
}

Result<CompatReport> CheckCompat(const CompatTables& tables, const CompatOptions& options,
                                 const SystemFacts& facts) {
  CompatReport report;
  if (!options.image.empty()) {
    FULCRUM_ASSIGN_OR_RETURN(ImageCuda image, InspectImage(options.image, options.timeout_seconds));
    report.image = std::move(image);
  }
  CompatInput input;
  if (options.driver || options.torch || options.gpu) {
    input = InputFromProbes(std::nullopt, std::nullopt, report.image);
    input.driver = options.driver;
    input.torch = options.torch;
    input.gpu = options.gpu;
    input.offline = true;
  } else {
    std::optional<NvmlIdentity> nvml;
    if (options.use_nvml) {
      auto read = ReadNvmlIdentity();
      if (read.ok()) {
        nvml = *read;
      } else {
        report.notes.push_back("NVML: " + read.status().message());
      }
    }
    if (!nvml && facts.driver_version) {
      nvml = NvmlIdentity{*facts.driver_version, {}};
      for (const auto& gpu : facts.gpus) nvml->gpu_names.push_back(gpu.name);
    }
    if (!nvml) {
      report.notes.push_back(
          "no NVIDIA driver found (NVML, nvidia-smi): nothing to judge on this "
          "machine; judge another with --driver/--torch/--gpu");
      return report;
    }
    if (options.probe_python) {
      auto torch = ProbeTorch(options.python, options.timeout_seconds);
      if (torch.ok()) {
        report.torch = *torch;
      } else {
        report.notes.push_back("torch: " + torch.status().message());
      }
    }
    input = InputFromProbes(nvml, report.torch, report.image);
  }
  if (!input.torch && !input.image_cuda) {
    if (input.offline)
      return Status::InvalidInput(
          "--driver/--gpu: expected --torch VER[+cuXYZ] or --image too "
          "(the CUDA runtime to judge), found neither");
    report.notes.push_back("nothing to judge: no torch in " + options.python + " and no --image");
    return report;
  }
  FULCRUM_ASSIGN_OR_RETURN(CompatVerdict verdict, JudgeCompat(tables, input));
  report.verdict = std::move(verdict);
  return report;
}

}  // namespace fulcrum::nodecheck
