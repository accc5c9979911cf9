#include "nodecheck/gpu_bench.h"

#include <cmath>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "core/parse.h"
#include "core/paths.h"
#include "core/subprocess.h"
#include "core/table.h"

namespace fulcrum::nodecheck {
namespace {

const char* kFamilies[] = {"GH200",     "H200",         "H100",     "H20",      "A100",
                           "A10G",      "A10",          "A40",      "A30",      "L40S",
                           "L40",       "L4",           "T4",       "V100",     "P100",
                           "B200",      "B300",         "RTX 4090", "RTX 3090", "RTX 5090",
                           "RTX A6000", "RTX 6000 Ada", "MI300X",   "MI250X",   "MI325X"};

std::string Normalize(const std::string& text) {
  std::string out;
  for (char c : text)
    out += (c == '-' || c == '_') ? ' '
                                  : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

bool ContainsToken(const std::string& haystack, const std::string& token) {
  size_t pos = haystack.find(token);
  while (pos != std::string::npos) {
    bool left = pos == 0 || !std::isalnum(static_cast<unsigned char>(haystack[pos - 1]));
    size_t end = pos + token.size();
    bool right = end >= haystack.size() || !std::isalnum(static_cast<unsigned char>(haystack[end]));
    if (left && right) return true;
    pos = haystack.find(token, pos + 1);
  }
  return false;
}

enum class Form { kUnknown, kPcie, kSxm, kNvl };

Form FormOf(const std::string& normalized) {
  if (normalized.find("PCIE") != std::string::npos) return Form::kPcie;
  if (ContainsToken(normalized, "NVL")) return Form::kNvl;
  if (normalized.find("SXM") != std::string::npos || normalized.find("HBM3") != std::string::npos)
    return Form::kSxm;
  return Form::kUnknown;
}

void AddSpec(nlohmann::json& figure, double measured, std::optional<double> spec) {
  if (spec) {
    figure["spec"] = *spec;
    figure["percent_of_spec"] = 100.0 * measured / *spec;
  } else {
    figure["spec"] = nullptr;
    figure["percent_of_spec"] = nullptr;
  }
  figure["verdict"] = SpecVerdict(measured, spec);
}

}  // namespace

std::optional<size_t> MatchDatasheet(const std::string& device_name, double memory_bytes,
                                     const std::vector<Datasheet>& candidates) {
  std::string device = Normalize(device_name);
  std::string family;
  for (const char* f : kFamilies) {
    if (ContainsToken(device, f)) {
      family = f;
      break;
    }
  }
  if (family.empty()) return std::nullopt;
  Form device_form = FormOf(device);
  double device_gib = memory_bytes / (1024.0 * 1024 * 1024);
  std::optional<size_t> best;
  double best_score = 1e18;
  for (size_t i = 0; i < candidates.size(); ++i) {
    std::string name = Normalize(candidates[i].name);
    if (!ContainsToken(name, family)) continue;
    double score = std::fabs(candidates[i].memory_gib - device_gib) / std::max(device_gib, 1.0);
    Form form = FormOf(name);
    if (device_form != Form::kUnknown && form != Form::kUnknown && form != device_form)
      score += 1.0;
    if (device_form == Form::kUnknown && form == Form::kSxm)
      score += 0.01;  // bare names: prefer PCIe/plain
    if (score < best_score) {
      best_score = score;
      best = i;
    }
  }
  // Memory reported by CUDA is a little below the marketing size; more than 25 % off is another
  // SKU.
  if (best && best_score <= 0.25) return best;
  return std::nullopt;
}

std::string SpecVerdict(double measured, std::optional<double> spec) {
  if (!spec || *spec <= 0) return "unknown";
  return measured < kLowFractionOfSpec * *spec ? "low" : "ok";
}

std::string StabilityVerdict(double min_tflops, double max_tflops, double mean_tflops) {
  if (mean_tflops <= 0) return "unknown";
  return (max_tflops - min_tflops) / mean_tflops > kUnstableSwing ? "unstable" : "ok";
}

GpuBenchBuild ThisGpuBenchBuild() {
  GpuBenchBuild build;
#if defined(FULCRUM_GPUBENCH_BUILT)
  build.built = FULCRUM_GPUBENCH_BUILT != 0;
#endif
#if defined(FULCRUM_GPUBENCH_NOT_BUILT_REASON)
  build.not_built_reason = FULCRUM_GPUBENCH_NOT_BUILT_REASON;
#else
  build.not_built_reason = "not part of this build";
#endif
#if defined(FULCRUM_GPUBENCH_LIBEXEC_FROM_BINDIR)
  build.libexec_from_bindir = FULCRUM_GPUBENCH_LIBEXEC_FROM_BINDIR;
#endif
  return build;
}

GpuBenchLocation LocateGpuBench(const std::string& exe_dir, const std::string& env_override,
                                const GpuBenchBuild& build) {
  GpuBenchLocation location;
  if (!env_override.empty()) {
    if (ProgramExists(env_override)) {
      location.program = env_override;
    } else {
      location.missing_reason = "FULCRUM_GPUBENCH names " + env_override +
                                ", which is not an executable file (unset it to use the "
                                "fulcrum-gpubench installed beside fulcrum)";
    }
    return location;
  }
  if (exe_dir.empty()) {
    location.missing_reason =
        "the directory of the running fulcrum is unknown (/proc/self/exe unreadable): set "
        "FULCRUM_GPUBENCH to the path of fulcrum-gpubench";
    return location;
  }
  namespace fs = std::filesystem;
  std::vector<std::string> looked;
  for (const std::string& dir :
       {exe_dir, (fs::path(exe_dir) / build.libexec_from_bindir).string()}) {
    std::string candidate = (fs::path(dir) / "fulcrum-gpubench").lexically_normal().string();
    if (ProgramExists(candidate)) {
      location.program = candidate;
      return location;
    }
    looked.push_back(candidate);
  }
  std::string where = looked[0] + " nor " + looked[1];
  if (build.built) {
    location.missing_reason =
        "fulcrum-gpubench was built with this fulcrum but is not "
        "installed where fulcrum looks (neither " +
        where +
        " exists): install it with `cmake --install BUILD_DIR` or the "
        ".deb, or set FULCRUM_GPUBENCH to its path";
  } else {
    location.missing_reason = "fulcrum was built without the CUDA GPU bench (" +
                              build.not_built_reason + "; neither " + where +
                              " exists): rebuild with a CUDA toolkit and -DFULCRUM_CUDA=ON, or "
                              "set FULCRUM_GPUBENCH to a fulcrum-gpubench";
  }
  return location;
}

Result<GpuBenchRun> RunGpuBench(const GpuBenchOptions& options) {
  GpuBenchRun run;
  std::string program = options.program;
  if (program.empty()) {
    const char* env = std::getenv("FULCRUM_GPUBENCH");
    GpuBenchLocation location =
        LocateGpuBench(ExecutableDir(), env ? env : "", ThisGpuBenchBuild());
    if (location.missing_reason) {
      run.skipped_reason = location.missing_reason;
      return run;
    }
    program = location.program;
  } else if (!ProgramExists(program)) {
    run.skipped_reason = program + " not found (not an executable file)";
    return run;
  }
  std::vector<std::string> argv = {program, "--device", std::to_string(options.device),
                                   "--stability-seconds",
                                   FormatNumber(options.stability_seconds, 1)};
  if (options.quick) argv.insert(argv.begin() + 1, "--quick");
  if (options.quick) argv.back() = FormatNumber(std::min(options.stability_seconds, 5.0), 1);
  CaptureOptions capture;
  capture.timeout_seconds = options.stability_seconds + 600;
  FULCRUM_ASSIGN_OR_RETURN(CaptureResult out, RunCapture(argv, capture));
  auto doc = nlohmann::json::parse(out.out, nullptr, false);
  if (out.exit_code == 3) {
    run.skipped_reason = doc.is_object() && doc.contains("error")
                             ? doc["error"].get<std::string>()
                             : std::string("no usable CUDA GPU");
    return run;
  }
  if (out.timed_out) return Status::Unavailable(program + " did not finish in time");
  if (out.exit_code != 0 || !doc.is_object()) {
    std::string why = doc.is_object() && doc.contains("error")
                          ? doc["error"].get<std::string>()
                          : std::string(Trim(out.err)).substr(0, 300);
    return Status::IoError(program + " failed (exit " + std::to_string(out.exit_code) +
                           "): " + why);
  }
  run.json_text = out.out;
  return run;
}

Result<nlohmann::json> BuildGpuReport(const std::string& json_text, const Datasheet* datasheet) {
  auto doc = nlohmann::json::parse(json_text, nullptr, false);
  if (!doc.is_object() || !doc.contains("gemm") || !doc.contains("stability")) {
    return Status::InvalidInput("GPU bench output: expected an object with gemm and stability");
  }
  nlohmann::json report = doc;
  report["datasheet_gpu"] = datasheet ? nlohmann::json(datasheet->name) : nlohmann::json(nullptr);
  for (auto& gemm : report["gemm"]) {
    std::string dtype = gemm.value("dtype", "");
    std::optional<double> spec;
    if (datasheet) {
      if (dtype == "bf16")
        spec = datasheet->bf16_tflops;
      else if (dtype == "fp16")
        spec = datasheet->fp16_tflops;
      else if (dtype == "tf32")
        spec = datasheet->tf32_tflops;
      else if (dtype == "fp32")
        spec = datasheet->fp32_tflops;
    }
    AddSpec(gemm, gemm.value("tflops", 0.0), spec);
    if (!gemm.value("correct", false)) gemm["verdict"] = "wrong-result";
  }
  nlohmann::json bandwidth;
  double measured_bw = doc.value("memory_bandwidth_bytes_per_second", 0.0);
  bandwidth["measured_bytes_per_second"] = measured_bw;
  AddSpec(bandwidth, measured_bw,
          datasheet ? datasheet->memory_bandwidth_bytes_per_second : std::nullopt);
  report["memory_bandwidth"] = bandwidth;
  auto& stability = report["stability"];
  stability["swing_fraction"] =
      stability.value("mean_tflops", 0.0) > 0
          ? (stability.value("max_tflops", 0.0) - stability.value("min_tflops", 0.0)) /
                stability.value("mean_tflops", 1.0)
          : 0.0;
  stability["verdict"] =
      StabilityVerdict(stability.value("min_tflops", 0.0), stability.value("max_tflops", 0.0),
                       stability.value("mean_tflops", 0.0));
  return report;
}

}  // namespace fulcrum::nodecheck
