#include "plan/frameworks.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <filesystem>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

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

// The value of Hydra override `key` among `words` (core/torchrun.h HydraOverrideValue); the last
// one counts. nullopt when absent.
std::optional<std::string> HydraOverride(const std::vector<std::string>& words,
                                         std::string_view key) {
  std::optional<std::string> value;
  for (const std::string& w : words) {
    if (const auto v = HydraOverrideValue(w, key)) value = std::string(*v);
  }
  return value;
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

// `text` without the quotes YAML or a shell may put around it.
std::string Unquoted(std::string text) {
  text.erase(std::remove(text.begin(), text.end(), '\''), text.end());
  text.erase(std::remove(text.begin(), text.end(), '"'), text.end());
  return text;
}

// `path` relative to the spec's directory.
std::string InBaseDir(const std::string& path, const std::string& base_dir) {
  std::filesystem::path file(path);
  if (file.is_relative() && !base_dir.empty()) file = std::filesystem::path(base_dir) / file;
  return file.string();
}

// An accelerate config file (`accelerate launch --config_file FILE`, YAML) as its `key: value`
// lines, keys and values trimmed and unquoted, read once for the frameworks and for what it fixes.
struct AccelerateConfig {
  std::string name;  // the file's base name, for the plan's notes
  std::vector<std::pair<std::string, std::string>> entries;
};

std::optional<AccelerateConfig> ReadAccelerateConfig(const Launch& l, const std::string& base_dir) {
  if (l.launcher != Launcher::kAccelerate) return std::nullopt;
  const std::optional<std::string> path = OptionValue(l.args, "--config_file");
  if (!path) return std::nullopt;
  Result<std::string> text = ReadTextFile(InBaseDir(*path, base_dir), "accelerate config");
  if (!text.ok()) return std::nullopt;
  AccelerateConfig config{BaseName(*path), {}};
  for (const std::string& raw : Split(*text, '\n')) {
    const std::string_view line = Trim(raw);
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    config.entries.emplace_back(std::string(Trim(line.substr(0, colon))),
                                Unquoted(std::string(Trim(line.substr(colon + 1)))));
  }
  return config;
}

// accelerate's distributed_type (accelerate/utils/dataclasses.py DistributedType: MULTI_GPU,
// FSDP, DEEPSPEED, MEGATRON_LM, ...) as written in its config file (`distributed_type: FSDP`).
std::optional<FrameworkMask> AccelerateConfigFrameworks(const AccelerateConfig& config) {
  for (const auto& [key, type] : config.entries) {
    if (key != "distributed_type") continue;
    if (type == "FSDP") return kFsdp;
    if (type == "DEEPSPEED") return kDeepSpeed;
    if (type == "MEGATRON_LM") return kMegatron;
    if (type == "MULTI_GPU" || type == "NO") return kDdp;
  }
  return std::nullopt;
}

std::optional<FrameworkMask> AccelerateFrameworks(const Launch& l,
                                                  const std::optional<AccelerateConfig>& config) {
  // accelerate launch flags (accelerate/commands/launch.py): --use_fsdp, --use_deepspeed,
  // --use_megatron_lm, --multi_gpu, --config_file.
  if (HasOption(l.args, "--use_fsdp")) return kFsdp;
  if (HasOption(l.args, "--use_deepspeed")) return kDeepSpeed;
  if (HasOption(l.args, "--use_megatron_lm")) return kMegatron;
  if (config) {
    if (auto mask = AccelerateConfigFrameworks(*config)) return mask;
  }
  if (HasOption(l.args, "--multi_gpu")) return kDdp;
  return std::nullopt;
}

// What the script (and its arguments) says, whatever the launcher.
std::optional<JobFrameworks> ScriptFrameworks(const Launch& l) {
  const std::string base = BaseName(l.script);
  const bool deepspeed = l.launcher == Launcher::kDeepSpeed || HasOption(l.args, "--deepspeed");
  // NeMo's Hydra scripts: examples/nlp/language_modeling/megatron_gpt_pretraining.py and its
  // siblings (NVIDIA/NeMo@8cfedd7203, @hydra_runner(config_path="conf", config_name=...)).
  const bool nemo_hydra =
      StartsWith(base, "megatron_") && l.script.find("examples/") != std::string::npos;
  const bool nemo =
      nemo_hydra || l.script.find("nemo/") != std::string::npos || StartsWith(l.script, "nemo.");
  // Megatron-Bridge's recipe launcher, run "in an existing distributed environment" (torchrun):
  // NVIDIA-NeMo/Megatron-Bridge@067f987df scripts/training/run_recipe.py (--recipe or --model).
  const bool bridge =
      base == "run_recipe.py" &&
      (l.script.find("scripts/training/") != std::string::npos || HasOption(l.args, "--recipe"));
  if (bridge) {
    // Megatron-FSDP in Megatron-Bridge: the ddp.use_megatron_fsdp field (training/config.py).
    const std::optional<std::string> fsdp = HydraOverride(l.args, "ddp.use_megatron_fsdp");
    if (fsdp && ToLower(*fsdp) == "true") {
      return JobFrameworks{kMegatronFsdp, "Megatron-Bridge (run_recipe.py, Megatron-FSDP)", true};
    }
    JobFrameworks megatron{kMegatron, "Megatron-Bridge (run_recipe.py)", true};
    megatron.layout_arguments = LayoutArguments::kMegatronBridge;
    return megatron;
  }
  if (std::find(kMegatronEntryPoints.begin(), kMegatronEntryPoints.end(), base) !=
          kMegatronEntryPoints.end() ||
      nemo) {
    if (deepspeed) {
      return JobFrameworks{kMegatronDeepSpeed, "Megatron-DeepSpeed (" + base + " with DeepSpeed)",
                           true};
    }
    // Megatron-LM's FSDP: --use-megatron-fsdp or --use-torch-fsdp2 (megatron/training/
    // arguments.py; docs/user-guide/features/megatron_fsdp.md).
    const bool torch_fsdp2 = HasOption(l.args, "--use-torch-fsdp2");
    if (HasOption(l.args, "--use-megatron-fsdp") || torch_fsdp2) {
      JobFrameworks fsdp{kMegatronFsdp,
                         "Megatron-FSDP (" + base +
                             (torch_fsdp2 ? " --use-torch-fsdp2)" : " --use-megatron-fsdp)"),
                         true};
      if (!nemo) {
        fsdp.layout_arguments =
            torch_fsdp2 ? LayoutArguments::kMegatronLmTorchFsdp2 : LayoutArguments::kMegatronLm;
      }
      return fsdp;
    }
    JobFrameworks megatron{kMegatron, (nemo ? "NeMo (" : "Megatron-LM (") + base + ")", true};
    megatron.layout_arguments = nemo_hydra ? LayoutArguments::kNemo
                                : nemo     ? LayoutArguments::kNone
                                           : LayoutArguments::kMegatronLm;
    return megatron;
  }
  if (l.script.find("torchtitan") != std::string::npos || HasOption(l.args, "--job.config_file")) {
    return JobFrameworks{kFsdp, "torchtitan (FSDP2 with tp, pp and cp)", true};
  }
  // The HF Trainer's TrainingArguments --fsdp ("full_shard auto_wrap") and --deepspeed (a config),
  // and a DeepSpeed script: data parallel only, as for any script fulcrum does not know (the HF
  // Trainer runs no pipeline or tensor parallelism of its own; DeepSpeed's pipeline needs the
  // script to build a PipelineModule). Before, their layouts were searched with pp, and the HF
  // Trainer's --fsdp full_shard was quoted as a pp 8 pipeline it cannot run.
  if (HasOption(l.args, "--fsdp")) {
    return JobFrameworks{kFsdp, base + " --fsdp (HF Trainer, data parallel only)", true, true};
  }
  if (deepspeed) {
    return JobFrameworks{kDeepSpeed, "DeepSpeed (" + base + ", data parallel only)", true, true};
  }
  // Lightning: Trainer(strategy=...) / LightningCLI --trainer.strategy; its FSDP, DeepSpeed and
  // DDP strategies shard or replicate the data-parallel way (tensor parallelism is its
  // ModelParallelStrategy, which these words do not name).
  std::optional<std::string> strategy = OptionValue(l.args, "--trainer.strategy");
  if (!strategy) strategy = OptionValue(l.args, "--strategy");
  if (strategy) {
    const std::string s = ToLower(*strategy);
    const auto lightning = [&s](workload::FrameworkMask mask) {
      return JobFrameworks{mask, "Lightning strategy " + s + " (data parallel only)", true, true};
    };
    if (StartsWith(s, "fsdp")) return lightning(kFsdp);
    if (StartsWith(s, "deepspeed")) return lightning(kDeepSpeed);
    if (StartsWith(s, "ddp")) return lightning(kDdp);
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

namespace {

// The frameworks of launch `l` (not `nemo llm`).
JobFrameworks FrameworksOfLaunch(const Launch& l,
                                 const std::optional<AccelerateConfig>& accelerate) {
  if (l.launcher == Launcher::kNone) {
    return {workload::kEveryFramework,
            "the command is not a launcher fulcrum knows: every framework is searched", false};
  }
  if (std::optional<JobFrameworks> known = ScriptFrameworks(l)) return *known;
  if (l.launcher == Launcher::kAccelerate) {
    if (auto mask = AccelerateFrameworks(l, accelerate)) {
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

// The JSON object in the job's file `path` (relative to `base_dir`); nullopt when it cannot be
// read or holds no object (the job fails on it, not the plan).
std::optional<nlohmann::json> JsonObjectFile(const std::string& path, const std::string& base_dir,
                                             const char* what) {
  Result<std::string> text = ReadTextFile(InBaseDir(path, base_dir), what);
  if (!text.ok()) return std::nullopt;
  nlohmann::json config = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (!config.is_object()) return std::nullopt;
  return config;
}

// A DeepSpeed config's fixed ZeRO stage and micro-batch (DeepSpeed docs, "DeepSpeed
// Configuration JSON": zero_optimization.stage, train_micro_batch_size_per_gpu; "auto", which the
// HF integration fills from TrainingArguments, fixes nothing), and its
// zero_optimization.overlap_comm.
void DeepSpeedConfigFixes(const std::string& path, const std::string& base_dir, JobFrameworks& jf) {
  const std::optional<nlohmann::json> read = JsonObjectFile(path, base_dir, "DeepSpeed config");
  if (!read) return;
  const nlohmann::json& config = *read;
  std::string said;
  const auto zero = config.find("zero_optimization");
  if (zero != config.end() && zero->is_object()) {
    const auto stage = zero->find("stage");
    if (stage != zero->end() && stage->is_number_integer() && stage->get<int>() >= 0 &&
        stage->get<int>() <= 3) {
      jf.zero_stage = stage->get<int>();
      said = "zero_optimization.stage " + std::to_string(jf.zero_stage);
    }
    // overlap_comm (a boolean; where the config does not set it, DeepSpeed's default: off below
    // stage 3).
    const auto overlap = zero->find("overlap_comm");
    if (overlap != zero->end() && overlap->is_boolean()) {
      jf.overlap_comm = overlap->get<bool>();
      jf.overlap_comm_from = BaseName(path);
    }
  }
  const auto mb = config.find("train_micro_batch_size_per_gpu");
  if (mb != config.end() && mb->is_number_integer() && mb->get<int>() > 0) {
    jf.micro_batch = mb->get<int>();
    said += (said.empty() ? "" : ", ") + std::string("train_micro_batch_size_per_gpu ") +
            std::to_string(jf.micro_batch);
  }
  if (!said.empty()) jf.fixed_by = BaseName(path) + ": " + said;
}

// An FSDP sharding strategy's ZeRO stage: FULL_SHARD 3, SHARD_GRAD_OP 2, NO_SHARD 0 (HF's
// --fsdp words, transformers trainer_utils.py FSDPOption; accelerate's fsdp_sharding_strategy,
// accelerate/utils/constants.py FSDP_SHARDING_STRATEGY, or its index 1-3 in older configs).
// Hybrid sharding (within a node, replicated across) is not a stage the planner searches: -1.
int FsdpShardingStage(const std::string& text) {
  const std::string strategy = ToLower(Unquoted(text));
  if (strategy == "full_shard" || strategy == "1") return 3;
  if (strategy == "shard_grad_op" || strategy == "2") return 2;
  if (strategy == "no_shard" || strategy == "3") return 0;
  return -1;
}

// What an accelerate config file fixes: FSDP's fsdp_sharding_strategy (FSDP2:
// fsdp_reshard_after_forward true = FULL_SHARD, false = SHARD_GRAD_OP) or DeepSpeed's zero_stage,
// or the DeepSpeed config its deepspeed_config_file names (accelerate config YAML, `fsdp_config:`
// / `deepspeed_config:` sections).
void AccelerateConfigFixes(const AccelerateConfig& config, const std::string& base_dir,
                           JobFrameworks& jf) {
  for (const auto& [key, value] : config.entries) {
    int stage = -1;
    if (key == "fsdp_sharding_strategy") stage = FsdpShardingStage(value);
    if (key == "fsdp_reshard_after_forward") stage = ToLower(value) == "true" ? 3 : 2;
    if (key == "zero_stage") {
      const Result<int64_t> n = ParseInt(value);
      stage = n.ok() && *n >= 0 && *n <= 3 ? static_cast<int>(*n) : -1;
    }
    if (stage >= 0) {
      jf.zero_stage = stage;
      jf.fixed_by = config.name + ": " + key + " " + value;
    }
    // deepspeed_config_file: a DeepSpeed config beside the accelerate one (relative to the
    // directory the job runs in, taken as the spec's).
    if (key == "deepspeed_config_file" && !value.empty()) DeepSpeedConfigFixes(value, base_dir, jf);
  }
}

// accelerate's FSDP backward prefetching (JobFrameworks::backward_prefetch): under FSDP1, its
// default FSDP version (FSDP_VERSION "1" where nothing says), --fsdp_backward_prefetch or the
// config's fsdp_backward_prefetch (an fsdp_config key, `fsdp_` prefixed or not: accelerate
// launch adds the prefix and lets the command line win), else the plugin's default NO_PREFETCH
// (huggingface/accelerate@16cb6eb8 src/accelerate/commands/launch.py, utils/launch.py,
// utils/dataclasses.py FullyShardedDataParallelPlugin.backward_prefetch; the older docs' key
// fsdp_backward_prefetch_policy is read by nothing there). FSDP2 always prefetches.
void AccelerateBackwardPrefetch(const Launch& l, const std::optional<AccelerateConfig>& config,
                                JobFrameworks& jf) {
  if (l.launcher != Launcher::kAccelerate || AccelerateFrameworks(l, config) != kFsdp) return;
  std::optional<std::string> version = OptionValue(l.args, "--fsdp_version");
  std::optional<std::string> prefetch = OptionValue(l.args, "--fsdp_backward_prefetch");
  std::string from = prefetch ? "--fsdp_backward_prefetch " + *prefetch : "";
  const std::vector<std::pair<std::string, std::string>> none;
  for (const auto& [key, value] : config ? config->entries : none) {
    if (key == "fsdp_version" && !version) version = value;
    if ((key == "fsdp_backward_prefetch" || key == "backward_prefetch") && !prefetch) {
      prefetch = value;
      from = config->name + ": " + key + " " + value;
    }
  }
  if (version && *version == "2") return;
  if (!prefetch) {
    jf.backward_prefetch = workload::BackwardPrefetch::kNone;
    jf.backward_prefetch_from = (config ? config->name : std::string("accelerate launch")) +
                                " sets no fsdp_backward_prefetch: accelerate's FSDP1 default, "
                                "NO_PREFETCH";
    return;
  }
  const Result<workload::BackwardPrefetch> p = workload::ParseBackwardPrefetch(*prefetch);
  if (!p.ok()) return;  // accelerate refuses it itself
  jf.backward_prefetch = *p;
  jf.backward_prefetch_from = from;
}

// The HF Trainer's FSDP backward prefetching (--fsdp with --fsdp_config FILE: JSON whose keys may
// carry the fsdp_ prefix TrainingArguments strips): under FSDP1 (version 1) its
// backward_prefetch, NO_PREFETCH where unset (huggingface/transformers training_args.py:
// fsdp_config.get("backward_prefetch", "NO_PREFETCH"), fsdp_config.get("version", 1)); FSDP2
// (version 2, the default of recent releases, which deprecate version 1) always prefetches. A
// config naming neither says nothing: the version then depends on the installed transformers.
void HfFsdpBackwardPrefetch(const Launch& l, const std::string& base_dir, JobFrameworks& jf) {
  const std::optional<std::string> path = OptionValue(l.args, "--fsdp_config");
  if (!path || path->empty() || !OptionValue(l.args, "--fsdp")) return;
  const std::optional<nlohmann::json> read = JsonObjectFile(*path, base_dir, "FSDP config");
  if (!read) return;
  const nlohmann::json& config = *read;
  std::optional<std::string> version, prefetch;
  for (auto it = config.begin(); it != config.end(); ++it) {
    const std::string key = StartsWith(it.key(), "fsdp_") ? it.key().substr(5) : it.key();
    if (key == "version") version = it->is_string() ? it->get<std::string>() : it->dump();
    if (key == "backward_prefetch" && it->is_string()) prefetch = it->get<std::string>();
  }
  if (version == "2" || (!prefetch && version != "1")) return;
  const Result<workload::BackwardPrefetch> p =
      prefetch ? workload::ParseBackwardPrefetch(*prefetch)
               : Result<workload::BackwardPrefetch>(workload::BackwardPrefetch::kNone);
  if (!p.ok()) return;  // TrainingArguments refuses it itself
  jf.backward_prefetch = *p;
  jf.backward_prefetch_from =
      BaseName(*path) + (prefetch ? ": backward_prefetch " + *prefetch
                                  : " sets version 1 and no backward_prefetch: the HF Trainer's "
                                    "FSDP1 default, NO_PREFETCH");
}

// The words of list option `name` (Megatron-LM's nargs='*': `--name a b` up to the next option,
// or `--name=a`), joined by commas; nullopt when absent.
std::optional<std::string> ListOption(const std::vector<std::string>& words,
                                      std::string_view name) {
  for (size_t i = 0; i < words.size(); ++i) {
    if (StartsWith(words[i], std::string(name) + "=")) return words[i].substr(name.size() + 1);
    if (words[i] != name) continue;
    std::string list;
    for (size_t j = i + 1; j < words.size() && !StartsWith(words[j], "-"); ++j) {
      list += (list.empty() ? "" : ",") + words[j];
    }
    return list;
  }
  return std::nullopt;
}

// The MoE dispatcher and routing groups, from their values in either spelling (a Megatron-LM
// option's or a Hydra override's); values Megatron would refuse are left to it: nothing is read.
void MoeRoutingChoices(const std::optional<std::string>& dispatcher,
                       const std::optional<std::string>& groups,
                       const std::optional<std::string>& group_topk, JobFrameworks& jf) {
  if (dispatcher && ToLower(*dispatcher) == "flex")
    jf.moe_dispatcher = workload::MoeDispatcher::kFlex;
  if (!groups || !group_topk) return;
  const Result<int64_t> g = ParseInt(*groups);
  const Result<int64_t> m = ParseInt(*group_topk);
  if (g.ok() && m.ok() && *g > 0 && *m > 0) {
    jf.moe_router_groups = *g;
    jf.moe_router_group_topk = *m;
  }
}

// A Megatron-LM command's recompute modules and precision-aware optimizer moments
// (megatron/training/arguments.py@d98e8a64dd: --recompute-modules, nargs='*';
// --use-precision-aware-optimizer with --exp-avg-dtype / --exp-avg-sq-dtype, "only supported
// with distributed optimizer"). Names Megatron-LM would refuse are left to it: nothing is read.
void MegatronCommandChoices(const Launch& l, JobFrameworks& jf) {
  if (const std::optional<std::string> list = ListOption(l.args, "--recompute-modules")) {
    const Result<uint32_t> modules = workload::ParseRecomputeModules(*list);
    if (modules.ok()) jf.recompute_modules = *modules;
  }
  jf.moe_a2a_overlap = HasOption(l.args, "--overlap-moe-expert-parallel-comm");
  MoeRoutingChoices(OptionValue(l.args, "--moe-token-dispatcher-type"),
                    OptionValue(l.args, "--moe-router-num-groups"),
                    OptionValue(l.args, "--moe-router-group-topk"), jf);
  if (const std::optional<std::string> etp = OptionValue(l.args, "--expert-tensor-parallel-size")) {
    if (*etp == "1") jf.expert_tp = 1;
  }
  if (!HasOption(l.args, "--use-precision-aware-optimizer")) return;
  const auto moment = [&l](const char* option, workload::MomentDtype& out) {
    if (const std::optional<std::string> v = OptionValue(l.args, option)) {
      const Result<workload::MomentDtype> d = workload::ParseMomentDtype(*v, option);
      if (d.ok()) out = *d;
    }
  };
  moment("--exp-avg-dtype", jf.exp_avg_dtype);
  moment("--exp-avg-sq-dtype", jf.exp_avg_sq_dtype);
  if (jf.exp_avg_dtype != workload::MomentDtype::kFp32 ||
      jf.exp_avg_sq_dtype != workload::MomentDtype::kFp32) {
    jf.zero_stage = 1;
    jf.fixed_by = "--use-precision-aware-optimizer, which needs the distributed optimizer";
  }
}

// What the command's own options and files fix (JobFrameworks::zero_stage, micro_batch) and
// HF TrainingArguments' batch options (kHfTrainer).
void CommandFixes(const Launch& l, const std::string& base_dir,
                  const std::optional<AccelerateConfig>& accelerate, JobFrameworks& jf) {
  if (jf.layout_arguments == LayoutArguments::kMegatronLm ||
      jf.layout_arguments == LayoutArguments::kMegatronLmTorchFsdp2) {
    MegatronCommandChoices(l, jf);
  }
  // Megatron-Bridge's and NeMo's model config field, as a Hydra override (Megatron-Core
  // TransformerConfig activation_func_fp8_input_store; Hydra/OmegaConf booleans true/True).
  if (jf.layout_arguments == LayoutArguments::kMegatronBridge ||
      jf.layout_arguments == LayoutArguments::kNemo) {
    const std::optional<std::string> store =
        HydraOverride(l.args, "model.activation_func_fp8_input_store");
    jf.activation_fp8_input_store = store && ToLower(*store) == "true";
    // Megatron-Bridge's CommOverlapConfig field (NVIDIA-NeMo/Megatron-Bridge@5776a6d90b
    // src/megatron/bridge/training/comm_overlap.py; the performance recipes' moe_a2a_overlap sets
    // it, scripts/performance/utils/overrides.py).
    const std::optional<std::string> a2a =
        HydraOverride(l.args, "comm_overlap.overlap_moe_expert_parallel_comm");
    jf.moe_a2a_overlap = a2a && ToLower(*a2a) == "true";
    const std::optional<std::string> etp =
        HydraOverride(l.args, "model.expert_tensor_parallel_size");
    if (etp && *etp == "1") jf.expert_tp = 1;
    MoeRoutingChoices(HydraOverride(l.args, "model.moe_token_dispatcher_type"),
                      HydraOverride(l.args, "model.moe_router_num_groups"),
                      HydraOverride(l.args, "model.moe_router_group_topk"), jf);
  }
  // HF TrainingArguments' own name (transformers training_args.py); a script's own
  // --gradient_accumulation_steps alone says nothing of its parser (DeepSpeed's examples have it).
  const bool hf_batch = HasOption(l.args, "--per_device_train_batch_size") ||
                        HasOption(l.args, "--per-device-train-batch-size");
  if (hf_batch && jf.layout_arguments == LayoutArguments::kNone) {
    jf.layout_arguments = LayoutArguments::kHfTrainer;
  }
  // HF Trainer: --deepspeed FILE; Megatron-DeepSpeed and DeepSpeed scripts: --deepspeed_config.
  for (const char* option : {"--deepspeed", "--deepspeed_config", "--deepspeed-config"}) {
    const std::optional<std::string> file = OptionValue(l.args, option);
    if (file && !file->empty() && (*file)[0] != '-') DeepSpeedConfigFixes(*file, base_dir, jf);
  }
  if (const std::optional<std::string> fsdp = OptionValue(l.args, "--fsdp")) {
    const int stage = FsdpShardingStage(*fsdp);
    if (stage >= 0) {
      jf.zero_stage = stage;
      jf.fixed_by = "--fsdp " + *fsdp;
    }
  }
  if (accelerate) AccelerateConfigFixes(*accelerate, base_dir, jf);
  AccelerateBackwardPrefetch(l, accelerate, jf);
  HfFsdpBackwardPrefetch(l, base_dir, jf);
}

}  // namespace

JobFrameworks FrameworksOfCommand(const std::string& command, const std::string& base_dir) {
  const std::vector<std::string> words = Words(command);
  if (!words.empty() && BaseName(words[0]) == "nemo" && words.size() > 1 && words[1] == "llm") {
    return {kMegatron, "NeMo (nemo llm)", true};
  }
  const Launch l = LaunchOf(words);
  const std::optional<AccelerateConfig> accelerate = ReadAccelerateConfig(l, base_dir);
  JobFrameworks jf = FrameworksOfLaunch(l, accelerate);
  CommandFixes(l, base_dir, accelerate, jf);
  return jf;
}

namespace {

// Whether layout `t` gives its first and last stages their own layer counts (set, or layers not
// a multiple of pp): the scripts are then told both.
bool UnevenStages(const workload::Model& m, const workload::Training& t) {
  return t.pp > 1 && (t.first_stage_layers > 0 || t.last_stage_layers > 0 || m.layers % t.pp != 0);
}

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
    given.layout_arguments = of_command.layout_arguments;
    given.zero_stage = of_command.zero_stage;
    given.micro_batch = of_command.micro_batch;
    given.fixed_by = of_command.fixed_by;
    given.recompute_modules = of_command.recompute_modules;
    given.exp_avg_dtype = of_command.exp_avg_dtype;
    given.exp_avg_sq_dtype = of_command.exp_avg_sq_dtype;
    given.overlap_comm = of_command.overlap_comm;
    given.overlap_comm_from = of_command.overlap_comm_from;
    given.backward_prefetch = of_command.backward_prefetch;
    given.backward_prefetch_from = of_command.backward_prefetch_from;
    return given;
  }
  return of_command;
}

std::vector<ScriptOption> MegatronLayoutOptions(const workload::Model& m,
                                                const workload::Training& t, bool torch_fsdp2) {
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
  const bool uneven = UnevenStages(m, t);
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
  if (t.framework == Framework::kMegatronFsdp) {
    // Megatron-FSDP shards over data parallelism itself: --data-parallel-sharding-strategy
    // optim_grads (ZeRO-2) or optim_grads_params (ZeRO-3), the distributed optimizer set by it
    // (the user's --use-distributed-optimizer left as it is);
    // PyTorch FSDP2 (--use-torch-fsdp2) fully shards and refuses --use-distributed-optimizer
    // (megatron/training/arguments.py: "--use-torch-fsdp2 is not supported with MCore's
    // distributed optimizer"; docs/user-guide/features/megatron_fsdp.md).
    flag("--use-megatron-fsdp", !torch_fsdp2, "the plan's Megatron-FSDP");
    if (torch_fsdp2) {
      flag("--use-distributed-optimizer", false, "PyTorch FSDP2 refuses it");
    } else {
      value("--data-parallel-sharding-strategy",
            t.zero_stage >= 3 ? "optim_grads_params" : "optim_grads", "the plan's ZeRO stage");
    }
  } else {
    flag("--use-megatron-fsdp", false, "the plan runs Megatron's distributed optimizer");
    flag("--use-torch-fsdp2", false, "the plan runs Megatron's distributed optimizer");
    // The precision-aware optimizer's moments need the distributed optimizer, also where one
    // data-parallel rank leaves nothing to shard (the plan's stage 0 there).
    const bool moments = t.exp_avg_dtype != workload::MomentDtype::kFp32 ||
                         t.exp_avg_sq_dtype != workload::MomentDtype::kFp32;
    flag("--use-distributed-optimizer", t.zero_stage >= 1 || moments,
         t.zero_stage >= 1 || moments ? "the plan's ZeRO-1" : "the plan replicates the optimizer");
  }
  // The estimate hides the gradients' reduction behind the backward and the distributed
  // optimizer's (or Megatron-FSDP's) parameter all-gather behind the compute
  // (estimate/compute.cc DataParallelSeconds), which Megatron-LM does only when asked:
  // --overlap-grad-reduce and --overlap-param-gather default to False, and the second needs the
  // first and the distributed optimizer or Megatron-FSDP (NVIDIA/Megatron-LM@d98e8a64dd
  // megatron/training/arguments.py). Megatron-Bridge's recipes set both (recipes/common.py).
  if (!torch_fsdp2 && t.dp * t.cp > 1) {
    flag("--overlap-grad-reduce", true, "the plan's gradient reduction behind the backward");
    if (t.zero_stage >= 1) {
      flag("--overlap-param-gather", true, "the plan's parameter all-gather behind the compute");
    }
  }
  RecomputeOptions(t, value, without, flag);
  PrecisionOptions(t, value, without, flag);
  return out;
}

namespace {

// Hydra overrides of a Megatron-Core layout (NeMo's and Megatron-Bridge's configs), each a
// `key=value` word; null is Hydra's and OmegaConf's spelling of None.
class HydraLayout {
 public:
  void Set(const std::string& key, const std::string& value, const char* why,
           std::vector<std::string> equivalents = {}) {
    ScriptOption option{key, value, false, why, true, std::move(equivalents)};
    out_.push_back(std::move(option));
  }
  void Number(const std::string& key, int64_t value, const char* why) {
    Set(key, std::to_string(value), why);
  }
  void Bool(const std::string& key, bool on, const char* why) {
    Set(key, on ? "true" : "false", why);
  }
  void Null(const std::string& key, const char* why) { Set(key, "null", why); }
  // A dashed option of the script (with its value) that must not be given.
  void Without(const char* name, const char* why) { out_.push_back({name, "-", true, why}); }

  // tp, pp (with the interleaved schedule's virtual stages and uneven first and last stages,
  // Megatron-Core's TransformerConfig fields num_layers_in_first/last_pipeline_stage), cp, ep,
  // sequence parallelism and activation recompute, as Megatron-Core's config fields name them
  // (NVIDIA/Megatron-LM@d98e8a64dd megatron/core/model_parallel_config.py,
  // megatron/core/transformer/transformer_config.py), under `prefix` ("model.").
  void Parallelism(const std::string& prefix, const workload::Model& m, const workload::Training& t,
                   const char* recompute_key_stem) {
    Number(prefix + "tensor_model_parallel_size", t.tp, "the plan's tensor parallelism");
    Number(prefix + "pipeline_model_parallel_size", t.pp, "the plan's pipeline stages");
    if (t.vpp > 1) {
      Number(prefix + "virtual_pipeline_model_parallel_size", t.vpp,
             "the plan's interleaved schedule");
    } else {
      Null(prefix + "virtual_pipeline_model_parallel_size",
           "the plan runs no interleaved schedule");
    }
    const workload::StageLayers stages = workload::PipelineStageLayers(m, t);
    const bool uneven = UnevenStages(m, t);
    if (uneven) {
      Number(prefix + "num_layers_in_first_pipeline_stage", stages.first, "the plan's first stage");
      Number(prefix + "num_layers_in_last_pipeline_stage", stages.last, "the plan's last stage");
    } else {
      Null(prefix + "num_layers_in_first_pipeline_stage", "the plan's stages are even");
      Null(prefix + "num_layers_in_last_pipeline_stage", "the plan's stages are even");
    }
    Number(prefix + "context_parallel_size", t.cp, "the plan's context parallelism");
    if (workload::IsMoe(m)) {
      Number(prefix + "expert_model_parallel_size", t.ep, "the plan's expert parallelism");
    }
    Bool(prefix + "sequence_parallel", t.sequence_parallel, "the plan's sequence parallelism");
    const std::string stem = prefix + recompute_key_stem;
    switch (t.recompute) {
      case workload::Recompute::kNone:
        Null(stem + "_granularity", "the plan recomputes nothing");
        Null(stem + "_method", "the plan recomputes nothing");
        Null(stem + "_num_layers", "the plan recomputes nothing");
        break;
      case workload::Recompute::kSelective:
        Set(stem + "_granularity", "selective", "the plan's selective recompute");
        Null(stem + "_method", "selective recompute takes no method");
        Null(stem + "_num_layers", "selective recompute takes no method");
        break;
      case workload::Recompute::kFull:
        Set(stem + "_granularity", "full", "the plan's full recompute");
        Set(stem + "_method", "uniform", "each layer's input kept");
        Number(stem + "_num_layers", 1, "each layer's input kept");
        break;
    }
  }

  std::vector<ScriptOption> Take() { return std::move(out_); }

 private:
  std::vector<ScriptOption> out_;
};

bool IsBf16Family(workload::Precision p) {
  using workload::Precision;
  return p == Precision::kFp8 || p == Precision::kBf16Mixed || p == Precision::kPureBf16;
}

}  // namespace

std::vector<ScriptOption> NemoLayoutOptions(const workload::Model& m, const workload::Training& t,
                                            int nodes, int gpus_per_node) {
  HydraLayout h;
  // Lightning starts the run with trainer.devices x trainer.num_nodes processes and must match
  // the launcher's.
  h.Number("trainer.devices", gpus_per_node, "one process per GPU of the node");
  h.Number("trainer.num_nodes", nodes, "the plan's nodes");
  // NeMo's names for Megatron-Core's recompute fields: activations_checkpoint_granularity,
  // _method, _num_layers (megatron_gpt_config.yaml, "Activation Checkpointing").
  h.Parallelism("model.", m, t, "activations_checkpoint");
  h.Number("model.micro_batch_size", t.micro_batch, "the plan's micro-batch");
  h.Number("model.global_batch_size", t.global_batch, "the plan's global batch");
  // model.data.seq_length is ${model.encoder_seq_length} in the shipped config.
  h.Number("model.encoder_seq_length", t.seq_len, "the plan's sequence length");
  // ZeRO-1: Megatron-Core's distributed optimizer (optim.name mcore_distributed_optim, as
  // NeMo-Framework-Launcher@26e42fa9 conf/training/llama/llama3_70b.yaml sets it) or Apex's
  // distributed Adam, which NeMo treats alike (megatron_base_model.py: with_distributed_adam).
  if (t.zero_stage >= 1) {
    h.Set("model.optim.name", "mcore_distributed_optim", "the plan's ZeRO-1",
          {"distributed_fused_adam"});
  } else {
    h.Set("model.optim.name", "fused_adam", "the plan replicates the optimizer");
  }
  // trainer.precision as the shipped configs spell it (bf16, 16, 32), Lightning 2's names kept;
  // FP8 is Transformer Engine's hybrid format beside bf16 (model.fp8, model.fp8_hybrid) and
  // model.fp8_params for FP8 weights (megatron_gpt_model.py: fp8_param_gather).
  using workload::Precision;
  if (IsBf16Family(t.precision)) {
    h.Set("trainer.precision", "bf16", "the plan's precision", {"bf16-mixed", "bf16-true"});
  } else if (t.precision == Precision::kFp16Mixed) {
    h.Set("trainer.precision", "16", "the plan's precision", {"16-mixed", "fp16"});
  } else {
    h.Set("trainer.precision", "32", "the plan's precision", {"32-true"});
  }
  const bool fp8 = t.precision == Precision::kFp8;
  h.Bool("model.fp8", fp8, fp8 ? "the plan's FP8 (Transformer Engine)" : "the plan has no FP8");
  if (fp8) {
    h.Bool("model.fp8_hybrid", true, "the plan's FP8 (Transformer Engine)");
    h.Bool("model.fp8_params", t.fp8_params, "the plan's FP8 weights");
  }
  return h.Take();
}

std::vector<ScriptOption> MegatronBridgeLayoutOptions(const workload::Model& m,
                                                      const workload::Training& t) {
  HydraLayout h;
  // run_recipe.py's convenience options for these fields ("When both forms set the same field,
  // the trailing KEY=VALUE override takes precedence"): removed, so that one value is visible.
  for (const char* option :
       {"-tp", "--tensor_model_parallel_size", "-pp", "--pipeline_model_parallel_size", "-cp",
        "--context_parallel_size", "-vp", "--virtual_pipeline_model_parallel_size", "-ep",
        "--expert_model_parallel_size", "-mb", "--micro_batch_size", "-gb", "--global_batch_size",
        "-sl", "--seq_length"}) {
    h.Without(option, "the plan's layout is set as overrides");
  }
  h.Parallelism("model.", m, t, "recompute");
  if (t.vpp > 1 && t.microbatch_group_size > 0) {
    h.Number("model.microbatch_group_size_per_vp_stage", t.microbatch_group_size,
             "the plan's micro-batch group");
  }
  h.Number("train.micro_batch_size", t.micro_batch, "the plan's micro-batch");
  h.Number("train.global_batch_size", t.global_batch, "the plan's global batch");
  // "--seq-length N -> model.seq_length=N dataset.seq_length=N"; run_recipe.py: "The selected
  // dataset owns the sequence length ... the runner synchronizes model.seq_length".
  h.Number("dataset.seq_length", t.seq_len, "the plan's sequence length");
  // --use-distributed-optimizer -> ddp.use_distributed_optimizer and
  // optimizer.use_distributed_optimizer.
  const char* zero_why =
      t.zero_stage >= 1 ? "the plan's ZeRO-1" : "the plan replicates the optimizer";
  h.Bool("ddp.use_distributed_optimizer", t.zero_stage >= 1, zero_why);
  h.Bool("optimizer.use_distributed_optimizer", t.zero_stage >= 1, zero_why);
  // mixed_precision presets (src/megatron/bridge/training/mixed_precision.py): bf16_mixed,
  // fp16_mixed; FP8 as Transformer Engine's hybrid format, bf16_with_fp8_delayed_scaling_mixed
  // (fp8 "hybrid", with fp8_param_gather), its other bf16 FP8 recipes kept.
  using workload::Precision;
  if (t.precision == Precision::kFp8) {
    h.Set("mixed_precision", "bf16_with_fp8_delayed_scaling_mixed", "the plan's FP8",
          {"bf16_with_fp8_current_scaling_mixed", "bf16_with_fp8_subchannel_scaling_mixed",
           "bf16_with_mxfp8_mixed"});
  } else if (IsBf16Family(t.precision)) {
    h.Set("mixed_precision", "bf16_mixed", "the plan's precision", {"bf16-mixed"});
  } else if (t.precision == Precision::kFp16Mixed) {
    h.Set("mixed_precision", "fp16_mixed", "the plan's precision", {"fp16-mixed", "16-mixed"});
  }
  return h.Take();
}

std::vector<ScriptOption> ScriptLayoutOptions(LayoutArguments arguments, const workload::Model& m,
                                              const workload::Training& t, int nodes,
                                              int gpus_per_node) {
  const Framework f = t.framework;
  switch (arguments) {
    case LayoutArguments::kMegatronLm:
    case LayoutArguments::kMegatronLmTorchFsdp2:
      if (!workload::UsesMegatronCore(f)) break;
      return MegatronLayoutOptions(m, t, arguments == LayoutArguments::kMegatronLmTorchFsdp2);
    case LayoutArguments::kNemo:  // their spellings of Megatron-FSDP are not written
      if (f != Framework::kMegatron) break;
      return NemoLayoutOptions(m, t, nodes, gpus_per_node);
    case LayoutArguments::kMegatronBridge:
      if (f != Framework::kMegatron) break;
      return MegatronBridgeLayoutOptions(m, t);
    case LayoutArguments::kHfTrainer:
      if (workload::UsesMegatronModel(f)) break;
      return HfTrainerLayoutOptions(t);
    case LayoutArguments::kNone:
      break;
  }
  return {};
}

std::vector<ScriptOption> HfTrainerLayoutOptions(const workload::Training& t) {
  std::vector<ScriptOption> out;
  out.push_back({"--per_device_train_batch_size", std::to_string(t.micro_batch), false,
                 "the plan's micro-batch"});
  out.push_back({"--gradient_accumulation_steps", std::to_string(workload::MicroBatchesPerStep(t)),
                 false,
                 "the plan's global batch over the micro-batches of its data-parallel ranks"});
  // TrainingArguments' gradient_checkpointing, a bool HfArgumentParser also takes bare or as
  // yes/true/t/y/1 (transformers hf_argparser.py string_to_bool): each decoder layer recomputed
  // whole in the backward, the plan's full recompute; without it, nothing recomputed.
  if (t.recompute == workload::Recompute::kFull) {
    out.push_back({"--gradient_checkpointing",
                   "True",
                   false,
                   "the plan's full recompute: each layer's forward again in the backward",
                   false,
                   {"true", "yes", "t", "y", "1"}});
  } else {
    out.push_back(
        {"--gradient_checkpointing", "True", true, "the plan's layout recomputes nothing"});
  }
  return out;
}

}  // namespace fulcrum::plan
