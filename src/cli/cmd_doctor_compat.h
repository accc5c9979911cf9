// `fulcrum doctor`'s compatibility verdict (nodecheck/compat_probe.h): its flags, its JSON view
// and its table lines. cmd_doctor.cc calls these; the verdict itself is the library's.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "cli/command.h"
#include "nodecheck/compat_probe.h"

namespace fulcrum::cli {

struct CompatFlags {
  std::string python = "python3";
  std::string image;
  std::string driver, torch, gpu;  // offline
  bool offline() const { return !driver.empty() || !torch.empty() || !gpu.empty(); }
};

void AddCompatOptions(CLI::App* cmd, CompatFlags& flags);
nodecheck::CompatOptions ToCompatOptions(const CompatFlags& flags, bool sim_source);
// {"verdict", "driver", "cuda_runtime", "wheel_cuda", "gpu_arch", "gpu", "torch", "reasons",
//  "fix", "probed": {...}, "notes"}; null when there was nothing to judge.
nlohmann::json CompatJson(const nodecheck::CompatReport& report);
void PrintCompat(CliContext& ctx, const nodecheck::CompatReport& report);
// The exit code the verdict asks for: 3 on "fail", else 0.
int CompatExitCode(const nodecheck::CompatReport& report);

}  // namespace fulcrum::cli
