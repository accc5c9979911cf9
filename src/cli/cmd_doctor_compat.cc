#include "cli/cmd_doctor_compat.h"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <ostream>

namespace fulcrum::cli {
namespace {

nlohmann::json Optional(const std::optional<std::string>& value) {
  return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
}

}  // namespace

void AddCompatOptions(CLI::App* cmd, CompatFlags& flags) {
  cmd->add_option("--python", flags.python,
                  "The job's Python: its torch (version, torch.version.cuda, "
                  "torch.cuda.get_arch_list(), cuDNN, NCCL) is judged against this node")
      ->capture_default_str();
  cmd->add_option("--image", flags.image,
                  "A container image (its CUDA_VERSION / NVIDIA_REQUIRE_CUDA from `docker "
                  "inspect`), or a file holding saved `docker inspect` output");
  cmd->add_option("--driver", flags.driver,
                  "Offline: the NVIDIA driver to judge (550.54.15, or a branch: 535); with "
                  "--torch/--gpu nothing is probed and only the verdict is printed");
  cmd->add_option("--torch", flags.torch,
                  "Offline: the PyTorch wheel (2.4.1+cu121; 2.4.1 alone is PyPI's default wheel "
                  "of that release, see catalog/torch_wheels.csv)");
  cmd->add_option("--gpu", flags.gpu,
                  "Offline: the GPU (a name of catalog/cuda_gpu_arch.csv or as nvidia-smi prints "
                  "it: H100, \"NVIDIA GeForce RTX 4090\")");
}

nodecheck::CompatOptions ToCompatOptions(const CompatFlags& flags, bool sim_source) {
  nodecheck::CompatOptions options;
  if (!flags.driver.empty()) options.driver = flags.driver;
  if (!flags.torch.empty()) options.torch = flags.torch;
  if (!flags.gpu.empty()) options.gpu = flags.gpu;
  options.image = flags.image;
  options.python = flags.python;
  options.probe_python = !sim_source;
  options.use_nvml = !sim_source;
  return options;
}

nlohmann::json CompatJson(const nodecheck::CompatReport& report) {
  if (!report.verdict) return nullptr;
  const nodecheck::CompatVerdict& v = *report.verdict;
  nlohmann::json j = {{"verdict", nodecheck::CompatVerdictName(v.verdict)},
                      {"driver", Optional(v.driver)},
                      {"cuda_runtime", Optional(v.cuda_runtime)},
                      {"wheel_cuda", Optional(v.wheel_cuda)},
                      {"gpu_arch", Optional(v.gpu_arch)},
                      {"gpu", Optional(v.gpu)},
                      {"torch", Optional(v.torch)},
                      {"reasons", v.reasons},
                      {"fix", v.fix.empty() ? nlohmann::json(nullptr) : nlohmann::json(v.fix)},
                      {"notes", report.notes}};
  if (report.torch) {
    const auto& t = *report.torch;
    j["probed_torch"] = {{"version", t.version},
                         {"cuda", Optional(t.cuda)},
                         {"arch_list", t.arch_list},
                         {"cudnn", Optional(t.cudnn)},
                         {"nccl", Optional(t.nccl)}};
  }
  if (report.image) {
    j["image"] = {{"ref", report.image->image},
                  {"cuda_version", Optional(report.image->cuda_version)},
                  {"require_cuda", report.image->require_cuda}};
  }
  return j;
}

void PrintCompat(CliContext& ctx, const nodecheck::CompatReport& report) {
  if (!report.verdict) {
    ctx.out << "compat: not judged";
    for (const auto& note : report.notes) ctx.out << "\n  " << note;
    ctx.out << "\n";
    return;
  }
  const nodecheck::CompatVerdict& v = *report.verdict;
  ctx.out << "compat: " << nodecheck::CompatVerdictName(v.verdict) << " (driver "
          << v.driver.value_or("?") << ", CUDA runtime " << v.cuda_runtime.value_or("?") << ", GPU "
          << v.gpu_arch.value_or("?") << ")\n";
  if (report.torch) {
    ctx.out << "  torch " << report.torch->version << ", CUDA "
            << report.torch->cuda.value_or("none (CPU build)") << ", cuDNN "
            << report.torch->cudnn.value_or("?") << ", NCCL " << report.torch->nccl.value_or("?")
            << "\n";
  }
  for (const auto& reason : v.reasons) ctx.out << "  - " << reason << "\n";
  for (const auto& note : report.notes) ctx.out << "  (" << note << ")\n";
  if (!v.fix.empty()) ctx.out << "  fix: " << v.fix << "\n";
}

int CompatExitCode(const nodecheck::CompatReport& report) {
  return report.verdict && report.verdict->verdict == nodecheck::CompatVerdictKind::kFail ? 3 : 0;
}

}  // namespace fulcrum::cli
