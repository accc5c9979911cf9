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
    JobFrameworks megatron{kMegatron, (nemo ? "NeMo (" : "Megatron-LM (") + base + ")", true};
    megatron.megatron_lm_arguments = !nemo;
    return megatron;
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

namespace {

// Megatron-LM's activation recompute: --recompute-granularity selective (core attention) or full
// with --recompute-method uniform --recompute-num-layers 1 (each layer's input kept, as the
// estimate's full recompute); none removes them and the older --recompute-activations.
template <typename Value, typename Without, typename Flag>
void RecomputeOptions(const workload::Training& t, const Value& value, const Without& without,
                      const Flag& flag) {
  flag("--recompute-activations", false, "the plan sets --recompute-granularity");
  switch (t.recompute) {
    case workload::Recompute::kNone:
      without("--recompute-granularity", "the plan recomputes nothing");
      without("--recompute-method", "the plan recomputes nothing");
      without("--recompute-num-layers", "the plan recomputes nothing");
      return;
    case workload::Recompute::kSelective:
      value("--recompute-granularity", "selective", "the plan's selective recompute");
      without("--recompute-method", "selective recompute takes no method");
      without("--recompute-num-layers", "selective recompute takes no method");
      return;
    case workload::Recompute::kFull:
      value("--recompute-granularity", "full", "the plan's full recompute");
      value("--recompute-method", "uniform", "each layer's input kept");
      value("--recompute-num-layers", "1", "each layer's input kept");
      return;
  }
}

// Mixed precision: --bf16 or --fp16; FP8 as Transformer Engine's hybrid format (E4M3 forward,
// E5M2 gradients) beside --bf16, as Megatron-LM's own FP8 example runs it, with
// --fp8-param-gather for FP8 weights; fp32 / tf32 neither.
template <typename Value, typename Without, typename Flag>
void PrecisionOptions(const workload::Training& t, const Value& value, const Without& without,
                      const Flag& flag) {
  using workload::Precision;
  const bool fp8 = t.precision == Precision::kFp8;
  const bool bf16 =
      fp8 || t.precision == Precision::kBf16Mixed || t.precision == Precision::kPureBf16;
  flag("--bf16", bf16, "the plan's precision");
  flag("--fp16", t.precision == Precision::kFp16Mixed, "the plan's precision");
  if (fp8) {
    value("--fp8-format", "hybrid", "the plan's FP8 (Transformer Engine)");
  } else {
    without("--fp8-format", "the plan's precision has no FP8");
  }
  flag("--fp8-param-gather", fp8 && t.fp8_params, "the plan's FP8 weights");
}

}  // namespace

JobFrameworks JobFrameworksOf(const PlanSpec& spec) {
  std::string base_dir;
  if (spec.origin != "flags" && !spec.origin.empty()) {
    base_dir = std::filesystem::path(spec.origin).parent_path().string();
  }
  const JobFrameworks of_command =
      spec.command.empty() ? JobFrameworks{} : FrameworksOfCommand(spec.command, base_dir);
  if (spec.constraints.frameworks != 0) {
    JobFrameworks given{spec.constraints.frameworks,
                        "framework " + workload::FrameworkListName(spec.constraints.frameworks) +
                            " (as the spec or --framework says)",
                        false};
    given.megatron_lm_arguments = of_command.megatron_lm_arguments;
    return given;
  }
  return of_command;
}

std::vector<ScriptOption> MegatronLayoutOptions(const workload::Model& m,
                                                const workload::Training& t) {
  std::vector<ScriptOption> out;
  const auto value = [&out](const char* name, const std::string& v, const char* why) {
    out.push_back({name, v, false, why});
  };
  const auto number = [&value](const char* name, int64_t v, const char* why) {
    value(name, std::to_string(v), why);
  };
  const auto flag = [&out](const char* name, bool on, const char* why) {
    out.push_back({name, "", !on, why});
  };
  // Options that take a value and must not be given (the value word goes with them).
  const auto without = [&out](const char* name, const char* why) {
    out.push_back({name, "-", true, why});
  };
  number("--tensor-model-parallel-size", t.tp, "the plan's tensor parallelism");
  number("--pipeline-model-parallel-size", t.pp, "the plan's pipeline stages");
  // The interleaved schedule as virtual stages per rank, which Megatron-LM also takes with uneven
  // first and last stages (arguments.py: --num-layers-per-virtual-pipeline-stage is refused
  // beside --decoder-first/last-pipeline-num-layers and beside this option).
  without("--num-layers-per-virtual-pipeline-stage", "the plan sets virtual stages per rank");
  if (t.vpp > 1) {
    number("--num-virtual-stages-per-pipeline-rank", t.vpp, "the plan's interleaved schedule");
    if (t.microbatch_group_size > 0) {
      number("--microbatch-group-size-per-virtual-pipeline-stage", t.microbatch_group_size,
             "the plan's micro-batch group");
    }
  } else {
    without("--num-virtual-stages-per-pipeline-rank", "the plan runs no interleaved schedule");
  }
  const workload::StageLayers stages = workload::PipelineStageLayers(m, t);
  const bool uneven =
      t.pp > 1 && (t.first_stage_layers > 0 || t.last_stage_layers > 0 || m.layers % t.pp != 0);
  if (uneven) {
    number("--decoder-first-pipeline-num-layers", stages.first, "the plan's first stage");
    number("--decoder-last-pipeline-num-layers", stages.last, "the plan's last stage");
  } else {
    without("--decoder-first-pipeline-num-layers", "the plan's stages are even");
    without("--decoder-last-pipeline-num-layers", "the plan's stages are even");
  }
  number("--context-parallel-size", t.cp, "the plan's context parallelism");
  if (workload::IsMoe(m)) {
    number("--expert-model-parallel-size", t.ep, "the plan's expert parallelism");
  }
  number("--micro-batch-size", t.micro_batch, "the plan's micro-batch");
  number("--global-batch-size", t.global_batch, "the plan's global batch");
  number("--seq-length", t.seq_len, "the plan's sequence length");
  flag("--sequence-parallel", t.sequence_parallel, "the plan's sequence parallelism");
  flag("--use-distributed-optimizer", t.zero_stage >= 1,
       t.zero_stage >= 1 ? "the plan's ZeRO-1" : "the plan replicates the optimizer");
  RecomputeOptions(t, value, without, flag);
  PrecisionOptions(t, value, without, flag);
  return out;
}

}  // namespace fulcrum::plan
