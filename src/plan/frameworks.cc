#include "plan/frameworks.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <filesystem>
#include <optional>
#include <string_view>
#include <vector>

#include "core/parse.h"
#include "core/text_file.h"

namespace fulcrum::plan {
namespace {

using workload::Framework;
using workload::FrameworkBit;
using workload::FrameworkMask;

constexpr FrameworkMask kMegatron = FrameworkBit(Framework::kMegatron);
constexpr FrameworkMask kDeepSpeed = FrameworkBit(Framework::kDeepSpeed);
constexpr FrameworkMask kFsdp = FrameworkBit(Framework::kFsdp);
constexpr FrameworkMask kDdp = FrameworkBit(Framework::kDdp);
constexpr FrameworkMask kMegatronFsdp = FrameworkBit(Framework::kMegatronFsdp);
constexpr FrameworkMask kMegatronDeepSpeed = FrameworkBit(Framework::kMegatronDeepSpeed);

// Megatron-LM's training entry points (NVIDIA/Megatron-LM, repository root: pretrain_gpt.py,
// pretrain_bert.py, pretrain_t5.py, pretrain_mamba.py, pretrain_vlm.py, pretrain_retro.py).
constexpr std::array<std::string_view, 6> kMegatronEntryPoints = {
    "pretrain_gpt.py",   "pretrain_bert.py", "pretrain_t5.py",
    "pretrain_mamba.py", "pretrain_vlm.py",  "pretrain_retro.py"};

std::string BaseName(std::string_view path) {
  const size_t slash = path.find_last_of('/');
  return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

bool StartsWith(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

// The value of option `name` ("--name value" or "--name=value"); nullopt when absent.
std::optional<std::string> OptionValue(const std::vector<std::string>& words,
                                       std::string_view name) {
  for (size_t i = 0; i < words.size(); ++i) {
    if (words[i] == name && i + 1 < words.size()) return words[i + 1];
    if (StartsWith(words[i], std::string(name) + "=")) return words[i].substr(name.size() + 1);
  }
  return std::nullopt;
}

bool HasWord(const std::vector<std::string>& words, std::string_view word) {
  return std::find(words.begin(), words.end(), word) != words.end();
}

bool HasOption(const std::vector<std::string>& words, std::string_view name) {
  return HasWord(words, name) || OptionValue(words, name).has_value();
}

// The words of `command` without surrounding quotes, after leading VAR=value assignments and
// `env` / `exec` (enough to recognise launchers and scripts: the command itself runs unchanged).
std::vector<std::string> Words(const std::string& command) {
  std::vector<std::string> words;
  for (const std::string& raw : Split(command, ' ')) {
    std::string w(Trim(raw));
    if (w.size() >= 2 && (w.front() == '"' || w.front() == '\'') && w.back() == w.front()) {
      w = w.substr(1, w.size() - 2);
    }
    if (w.empty()) continue;
    const bool assignment = words.empty() && w.find('=') != std::string::npos && w[0] != '-';
    if (assignment || (words.empty() && (w == "env" || w == "exec"))) continue;
    words.push_back(w);
  }
  return words;
}

bool IsPython(std::string_view word) { return StartsWith(BaseName(word), "python"); }

// How the command starts its processes.
enum class Launcher { kNone, kTorchrun, kAccelerate, kDeepSpeed, kLightning, kPython };

struct Launch {
  Launcher launcher = Launcher::kNone;
  std::string script;             // the script (or module, for -m) the launcher starts
  std::vector<std::string> args;  // every word after the launcher word(s)
};

Launch LaunchOf(const std::vector<std::string>& w) {
  Launch l;
  size_t at = 0;
  if (w.empty()) return l;
  const std::string first = BaseName(w[0]);
  if (first == "torchrun") {
    l.launcher = Launcher::kTorchrun, at = 1;
  } else if (first == "accelerate" && w.size() > 1 && w[1] == "launch") {
    l.launcher = Launcher::kAccelerate, at = 2;
  } else if (first == "deepspeed") {
    l.launcher = Launcher::kDeepSpeed, at = 1;
  } else if ((first == "lightning" || first == "fabric") && w.size() > 1 && w[1] == "run") {
    l.launcher = Launcher::kLightning, at = 2;
  } else if (IsPython(w[0])) {
    l.launcher = Launcher::kPython, at = 1;
    const std::optional<std::string> module = OptionValue(w, "-m");
    if (module == "torch.distributed.run" || module == "torch.distributed.launch") {
      l.launcher = Launcher::kTorchrun, at = 3;
    } else if (module == "accelerate.commands.launch") {
      l.launcher = Launcher::kAccelerate, at = 3;
    } else if (module == "deepspeed.launcher.runner") {
      l.launcher = Launcher::kDeepSpeed, at = 3;
    } else if (module) {
      l.script = *module;
    }
  } else {
    return l;
  }
  l.args.assign(w.begin() + static_cast<std::ptrdiff_t>(std::min(at, w.size())), w.end());
  // The script: the first word that is a .py file or a module after -m.
  for (size_t i = 0; l.script.empty() && i < l.args.size(); ++i) {
    if (l.args[i] == "-m" && i + 1 < l.args.size()) l.script = l.args[i + 1];
    if (l.args[i].size() > 3 && l.args[i].substr(l.args[i].size() - 3) == ".py") {
      l.script = l.args[i];
    }
  }
  return l;
}

// accelerate's distributed_type (accelerate/utils/dataclasses.py DistributedType: MULTI_GPU,
// FSDP, DEEPSPEED, MEGATRON_LM, ...) as written in its config file (`distributed_type: FSDP`).
std::optional<FrameworkMask> AccelerateConfigFrameworks(const std::string& path,
                                                        const std::string& base_dir) {
  std::filesystem::path file(path);
  if (file.is_relative() && !base_dir.empty()) file = std::filesystem::path(base_dir) / file;
  Result<std::string> text = ReadTextFile(file.string(), "accelerate config");
  if (!text.ok()) return std::nullopt;
  for (const std::string& line : Split(*text, '\n')) {
    const std::string_view l = Trim(line);
    if (!StartsWith(l, "distributed_type:")) continue;
    std::string type(Trim(l.substr(std::string_view("distributed_type:").size())));
    type.erase(std::remove(type.begin(), type.end(), '\''), type.end());
    type.erase(std::remove(type.begin(), type.end(), '"'), type.end());
    if (type == "FSDP") return kFsdp;
    if (type == "DEEPSPEED") return kDeepSpeed;
    if (type == "MEGATRON_LM") return kMegatron;
    if (type == "MULTI_GPU" || type == "NO") return kDdp;
  }
  return std::nullopt;
}

std::optional<FrameworkMask> AccelerateFrameworks(const Launch& l, const std::string& base_dir) {
  // accelerate launch flags (accelerate/commands/launch.py): --use_fsdp, --use_deepspeed,
  // --use_megatron_lm, --multi_gpu, --config_file.
  if (HasOption(l.args, "--use_fsdp")) return kFsdp;
  if (HasOption(l.args, "--use_deepspeed")) return kDeepSpeed;
  if (HasOption(l.args, "--use_megatron_lm")) return kMegatron;
  if (const auto config = OptionValue(l.args, "--config_file")) {
    if (auto mask = AccelerateConfigFrameworks(*config, base_dir)) return mask;
  }
  if (HasOption(l.args, "--multi_gpu")) return kDdp;
  return std::nullopt;
}

// What the script (and its arguments) says, whatever the launcher.
std::optional<JobFrameworks> ScriptFrameworks(const Launch& l) {
  const std::string base = BaseName(l.script);
  const bool deepspeed = l.launcher == Launcher::kDeepSpeed || HasOption(l.args, "--deepspeed");
  const bool nemo =
      l.script.find("nemo/") != std::string::npos || StartsWith(l.script, "nemo.") ||
      (StartsWith(base, "megatron_") && l.script.find("examples/") != std::string::npos);
  if (std::find(kMegatronEntryPoints.begin(), kMegatronEntryPoints.end(), base) !=
          kMegatronEntryPoints.end() ||
      nemo) {
    if (deepspeed) {
      return JobFrameworks{kMegatronDeepSpeed, "Megatron-DeepSpeed (" + base + " with DeepSpeed)",
                           true};
    }
    // Megatron-LM's FSDP: --use-megatron-fsdp or --use-torch-fsdp2 (megatron/training/
    // arguments.py; docs/user-guide/features/megatron_fsdp.md).
    if (HasOption(l.args, "--use-megatron-fsdp") || HasOption(l.args, "--use-torch-fsdp2")) {
      return JobFrameworks{kMegatronFsdp, "Megatron-FSDP (" + base + " --use-megatron-fsdp)", true};
    }
    return JobFrameworks{kMegatron, (nemo ? "NeMo (" : "Megatron-LM (") + base + ")", true};
  }
  if (l.script.find("torchtitan") != std::string::npos || HasOption(l.args, "--job.config_file")) {
    return JobFrameworks{kFsdp, "torchtitan (FSDP2 with tp, pp and cp)", true};
  }
  // The HF Trainer's TrainingArguments --fsdp ("full_shard auto_wrap") and --deepspeed (a config).
  if (HasOption(l.args, "--fsdp")) return JobFrameworks{kFsdp, base + " --fsdp (HF Trainer)", true};
  if (deepspeed) return JobFrameworks{kDeepSpeed, "DeepSpeed (" + base + ")", true};
  // Lightning: Trainer(strategy=...) / LightningCLI --trainer.strategy.
  std::optional<std::string> strategy = OptionValue(l.args, "--trainer.strategy");
  if (!strategy) strategy = OptionValue(l.args, "--strategy");
  if (strategy) {
    const std::string s = ToLower(*strategy);
    if (StartsWith(s, "fsdp")) return JobFrameworks{kFsdp, "Lightning strategy " + s, true};
    if (StartsWith(s, "deepspeed"))
      return JobFrameworks{kDeepSpeed, "Lightning strategy " + s, true};
    if (StartsWith(s, "ddp")) return JobFrameworks{kDdp, "Lightning strategy " + s, true};
  }
  return std::nullopt;
}

const char* LauncherName(Launcher l) {
  switch (l) {
    case Launcher::kTorchrun:
      return "torchrun";
    case Launcher::kAccelerate:
      return "accelerate launch";
    case Launcher::kDeepSpeed:
      return "deepspeed";
    case Launcher::kLightning:
      return "lightning run";
    case Launcher::kPython:
      return "python";
    case Launcher::kNone:
      break;
  }
  return "?";
}

}  // namespace

JobFrameworks FrameworksOfCommand(const std::string& command, const std::string& base_dir) {
  const std::vector<std::string> words = Words(command);
  if (!words.empty() && BaseName(words[0]) == "nemo" && words.size() > 1 && words[1] == "llm") {
    return {kMegatron, "NeMo (nemo llm)", true};
  }
  const Launch l = LaunchOf(words);
  if (l.launcher == Launcher::kNone) {
    return {workload::kEveryFramework,
            "the command is not a launcher fulcrum knows: every framework is searched", false};
  }
  if (std::optional<JobFrameworks> known = ScriptFrameworks(l)) return *known;
  if (l.launcher == Launcher::kAccelerate) {
    if (auto mask = AccelerateFrameworks(l, base_dir)) {
      // Megatron-LM under accelerate shards the model; the others are data parallel.
      return {*mask, "accelerate launch (" + workload::FrameworkListName(*mask) + ")", true,
              *mask != kMegatron};
    }
  }
  if (l.launcher == Launcher::kPython) {
    return {workload::kEveryFramework,
            "python " + (l.script.empty() ? std::string("...") : BaseName(l.script)) +
                " without a distributed launcher: every framework is searched",
            false};
  }
  const std::string script = l.script.empty() ? "a script" : BaseName(l.script);
  return {workload::kDataParallelFrameworks,
          std::string(LauncherName(l.launcher)) + " of " + script +
              ", a script fulcrum does not know: data parallel only (" +
              workload::FrameworkListName(workload::kDataParallelFrameworks) +
              ", tp and pp 1); --framework names the frameworks it runs (megatron for tp/pp)",
          true, true};
}

JobFrameworks JobFrameworksOf(const PlanSpec& spec) {
  if (spec.constraints.frameworks != 0) {
    return {spec.constraints.frameworks,
            "framework " + workload::FrameworkListName(spec.constraints.frameworks) +
                " (as the spec or --framework says)",
            false};
  }
  if (spec.command.empty()) return {};
  std::string base_dir;
  if (spec.origin != "flags" && !spec.origin.empty()) {
    base_dir = std::filesystem::path(spec.origin).parent_path().string();
  }
  return FrameworksOfCommand(spec.command, base_dir);
}

}  // namespace fulcrum::plan
