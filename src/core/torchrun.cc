#include "core/torchrun.h"

#include <algorithm>
#include <cctype>
#include <set>

namespace fulcrum {
namespace {

// The program's file name: "torchrun" for "/opt/venv/bin/torchrun".
std::string ProgramName(const std::string& word) { return word.substr(word.rfind('/') + 1); }

bool IsPython(const std::string& word) { return ProgramName(word).rfind("python", 0) == 0; }

// "--nproc-per-node" and "--nproc_per_node" alike: '-' after the leading dashes becomes '_'.
std::string Normalized(std::string_view option) {
  std::string out(option.substr(0, option.find('=')));
  for (size_t i = 2; i < out.size(); ++i) {
    if (out[i] == '-') out[i] = '_';
  }
  return out;
}

// Each launcher's options that take no value (every other option takes one, after a space or
// '='). torchrun: pytorch/pytorch torch/distributed/run.py get_args_parser (--standalone,
// --module/-m, --no-python, --run-path; torch.distributed.launch adds --use-env).
// accelerate: huggingface/accelerate@00785cd9fc2e src/accelerate/commands/launch.py
// launch_command_parser, its action="store_true" arguments. deepspeed:
// microsoft/DeepSpeed@048b0d505481 deepspeed/launcher/runner.py parse_args, likewise, and
// --no_ssh (microsoft/DeepSpeed issue 5510).
const std::set<std::string>& FlagOptions(Launcher launcher) {
  static const std::set<std::string> torchrun = {"--standalone", "--module",  "-m", "--no_python",
                                                 "--run_path",   "--use_env", "-h", "--help"};
  static const std::set<std::string> accelerate = {"--cpu",
                                                   "--multi_gpu",
                                                   "--tpu",
                                                   "--ipex",
                                                   "--quiet",
                                                   "-q",
                                                   "--enable_cpu_affinity",
                                                   "--dynamo_use_fullgraph",
                                                   "--dynamo_use_dynamic",
                                                   "--use_deepspeed",
                                                   "--use_fsdp",
                                                   "--use_megatron_lm",
                                                   "--use_xpu",
                                                   "--same_network",
                                                   "--module",
                                                   "-m",
                                                   "--no_python",
                                                   "--tpu_cluster",
                                                   "--no_tpu_cluster",
                                                   "--tpu_use_sudo",
                                                   "--downcast_bf16",
                                                   "--debug",
                                                   "-h",
                                                   "--help"};
  static const std::set<std::string> deepspeed = {
      "--module",   "--no_python",        "--no_local_rank",      "--no_ssh_check", "--force_multi",
      "--save_pid", "--elastic_training", "--bind_cores_to_rank", "--no_ssh",       "-h",
      "--help"};
  static const std::set<std::string> none;
  switch (launcher) {
    case Launcher::kTorchrun:
      return torchrun;
    case Launcher::kAccelerate:
      return accelerate;
    case Launcher::kDeepspeed:
      return deepspeed;
    default:
      return none;
  }
}

// The first word after the launcher's options that start at `at`.
size_t ScriptAt(const std::vector<std::string>& words, size_t at, Launcher launcher) {
  const std::set<std::string>& flags = FlagOptions(launcher);
  while (at < words.size() && words[at].size() > 1 && words[at][0] == '-') {
    const std::string option = Normalized(words[at]);
    if (option == "-m" || option == "--module") return at;  // the module name follows
    const bool takes_value = words[at].find('=') == std::string::npos && !flags.count(option);
    at += takes_value ? 2 : 1;
  }
  return std::min(at, words.size());
}

// A launcher option among words [options_at, script_at).
struct FoundOption {
  size_t word = 0;
  bool inline_value = false;  // "--x=v"
  bool value_word = false;    // "--x v": the value is the next word
  std::string value;          // "" for a flag given bare ("--x" before another option or last)
};
std::optional<FoundOption> FindOption(const std::vector<std::string>& words,
                                      const LaunchCommand& lc,
                                      std::initializer_list<const char*> names) {
  for (size_t i = lc.options_at; i < lc.script_at && i < words.size(); ++i) {
    const std::string option = Normalized(words[i]);
    for (const char* name : names) {
      if (option != Normalized(name)) continue;
      FoundOption found;
      found.word = i;
      const size_t eq = words[i].find('=');
      found.inline_value = eq != std::string::npos;
      // A next word that is itself an option is no value: the option was given bare (an
      // optional-value flag such as TrainingArguments' `--gradient_checkpointing`).
      if (found.inline_value) {
        found.value = words[i].substr(eq + 1);
      } else if (i + 1 < words.size() && words[i + 1].rfind("--", 0) != 0) {
        found.value = words[i + 1];
        found.value_word = true;
      }
      return found;
    }
  }
  return std::nullopt;
}

// `value` without the quotes and braces of a shell variable reference: "NAME" for "$NAME",
// "${NAME}" or "\"$NAME\""; "" when it is not one.
std::string VariableOf(std::string value) {
  if (value.size() >= 2 && value.front() == '"' && value.back() == '"') {
    value = value.substr(1, value.size() - 2);
  }
  if (value.empty() || value[0] != '$') return "";
  value = value.substr(1);
  if (!value.empty() && value.front() == '{' && value.back() == '}') {
    value = value.substr(1, value.size() - 2);
  }
  const bool name = !value.empty() && std::all_of(value.begin(), value.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
  return name ? value : "";
}

class Rewriter {
 public:
  Rewriter(const std::vector<std::string>& words, const NodeLaunch& node, LaunchRewrite& out)
      : words_(words), node_(node), out_(out) {}

  // Whether `value` already is `number` of `quantity` on the node.
  bool Right(const std::string& value, NodeQuantity quantity, int number) const {
    if (value == std::to_string(number)) return true;
    const std::string var = VariableOf(value);
    if (!var.empty()) {
      if (CommonVariableQuantity(var) == quantity) return true;
      auto own = node_.own_variables.find(var);
      return own != node_.own_variables.end() && own->second == quantity;
    }
    return false;
  }

  // Sets option `names` (the first is the spelling added) to `text`; nothing when `keep` says
  // the user's value is already right. `add_when_missing`: add it when the user left it out.
  template <typename Keep>
  void Set(const LaunchCommand& lc, std::initializer_list<const char*> names,
           const std::string& text, Keep keep, bool add_when_missing, const std::string& why) {
    const std::string name = *names.begin();
    std::optional<FoundOption> found = FindOption(words_, lc, names);
    if (found) {
      if (!keep(found->value)) Replace(*found, text, " (" + why + ")");
      return;
    }
    if (!add_when_missing) return;
    added_.push_back(name + "=" + text);
    out_.changes.push_back("added " + name + "=" + text + " (" + why + ")");
  }

  // The added options go in one edit, right after the launcher's word(s).
  void FlushAdded(size_t at) {
    if (added_.empty()) return;
    out_.edits.push_back({at, false, added_});
    added_.clear();
  }

  std::string Shell(NodeQuantity q) const {
    auto it = node_.shell.find(q);
    return it == node_.shell.end() ? "" : it->second;
  }

  void Torchrun(const LaunchCommand& lc) {
    const int gpus = node_.gpus_per_node;
    Set(
        lc, {"--nproc_per_node", "--nproc-per-node"}, std::to_string(gpus),
        [&](const std::string& v) {
          // "gpu" and "auto": one process per GPU of the node (torch/distributed/run.py).
          return v == "gpu" || v == "auto" || Right(v, NodeQuantity::kGpusPerNode, gpus);
        },
        gpus != 1, "one process per GPU of the node; torchrun's default is 1");
    TorchrunNodes(lc);
  }

  void TorchrunNodes(const LaunchCommand& lc) {
    const int nodes = node_.nodes;
    auto count_right = [&](const std::string& v) {
      const size_t colon = v.find(':');  // elastic MIN:MAX: the task's count within it
      if (colon != std::string::npos) {
        const std::string low = v.substr(0, colon), high = v.substr(colon + 1);
        const bool numbers =
            !low.empty() && !high.empty() && std::all_of(low.begin(), low.end(), ::isdigit) &&
            std::all_of(high.begin(), high.end(), ::isdigit) && low.size() < 9 && high.size() < 9;
        return numbers && std::stoi(low) <= nodes && nodes <= std::stoi(high);
      }
      return Right(v, NodeQuantity::kNodeCount, nodes);
    };
    if (nodes == 1) {
      Set(lc, {"--nnodes"}, "1", count_right, false, "the task has one node");
      return;
    }
    Set(lc, {"--nnodes"}, Shell(NodeQuantity::kNodeCount), count_right, true,
        "the task's node count");
    std::vector<std::string> sub(words_.begin() + static_cast<long>(lc.options_at),
                                 words_.begin() + static_cast<long>(lc.script_at));
    if (HasTorchrunRendezvous(sub)) return;
    Set(
        lc, {"--node_rank", "--node-rank"}, Shell(NodeQuantity::kNodeRank),
        [&](const std::string& v) {
          return !VariableOf(v).empty() && Right(v, NodeQuantity::kNodeRank, -1);
        },
        true, "this node's rank");
    Set(
        lc, {"--master_addr", "--master-addr"}, Shell(NodeQuantity::kMasterAddr),
        [](const std::string&) { return true; }, true, "the first node's address");
    Set(
        lc, {"--master_port", "--master-port"}, Shell(NodeQuantity::kMasterPort),
        [](const std::string&) { return true; }, true, "the first node's port");
  }

  void Accelerate(const LaunchCommand& lc) {
    const int nodes = node_.nodes, total = node_.gpus_per_node * node_.nodes;
    Set(
        lc, {"--num_processes", "--num-processes"}, std::to_string(total),
        [&](const std::string& v) { return Right(v, NodeQuantity::kWorldSize, total); }, total != 1,
        "accelerate's --num_processes is the total over the nodes");
    auto count_right = [&](const std::string& v) {
      return Right(v, NodeQuantity::kNodeCount, nodes);
    };
    if (nodes == 1) {
      Set(lc, {"--num_machines", "--num-machines"}, "1", count_right, false,
          "the task has one node");
      return;
    }
    Set(lc, {"--num_machines", "--num-machines"}, Shell(NodeQuantity::kNodeCount), count_right,
        true, "the task's node count");
    Set(
        lc, {"--machine_rank", "--machine-rank"}, Shell(NodeQuantity::kNodeRank),
        [&](const std::string& v) {
          return !VariableOf(v).empty() && Right(v, NodeQuantity::kNodeRank, -1);
        },
        true, "this node's rank");
    Set(
        lc, {"--main_process_ip", "--main-process-ip"}, Shell(NodeQuantity::kMasterAddr),
        [](const std::string&) { return true; }, true, "the first node's address");
    Set(
        lc, {"--main_process_port", "--main-process-port"}, Shell(NodeQuantity::kMasterPort),
        [](const std::string&) { return true; }, true, "the first node's port");
  }

  void Deepspeed(const LaunchCommand& lc) {
    const int gpus = node_.gpus_per_node, nodes = node_.nodes;
    Set(
        lc, {"--num_gpus", "--num_accelerators"}, std::to_string(gpus),
        [&](const std::string& v) { return Right(v, NodeQuantity::kGpusPerNode, gpus); }, true,
        "one process per GPU of the node");
    auto count_right = [&](const std::string& v) {
      return Right(v, NodeQuantity::kNodeCount, nodes);
    };
    if (nodes == 1) {
      Set(lc, {"--num_nodes"}, "1", count_right, false, "the task has one node");
      return;
    }
    Set(lc, {"--num_nodes"}, Shell(NodeQuantity::kNodeCount), count_right, true,
        "the task's node count");
    // Each node starts the command itself: no ssh from the first node, the node's rank and the
    // first node's address given (the --no_ssh mode of microsoft/DeepSpeed issue 5510, which
    // "depends on a --node_rank flag"; not checked here against a runner.py release). A
    // hostfile of the user's own means they launch over ssh: left alone.
    if (FindOption(words_, lc, {"--hostfile", "-H"})) return;
    if (!FindOption(words_, lc, {"--no_ssh"})) {
      added_.push_back("--no_ssh");
      out_.changes.push_back("added --no_ssh (each node starts its own processes)");
    }
    Set(
        lc, {"--node_rank"}, Shell(NodeQuantity::kNodeRank),
        [&](const std::string& v) {
          return !VariableOf(v).empty() && Right(v, NodeQuantity::kNodeRank, -1);
        },
        true, "this node's rank");
    Set(
        lc, {"--master_addr"}, Shell(NodeQuantity::kMasterAddr),
        [](const std::string&) { return true; }, true, "the first node's address");
    Set(
        lc, {"--master_port"}, Shell(NodeQuantity::kMasterPort),
        [](const std::string&) { return true; }, true, "the first node's port");
  }

  // `python SCRIPT` starts one process: on more GPUs or nodes it runs under torchrun, which
  // starts `python SCRIPT` once per GPU with the rank in its environment.
  void Python(const LaunchCommand& lc) {
    if (node_.gpus_per_node == 1 && node_.nodes == 1) return;
    LaunchCommand as_torchrun = lc;
    as_torchrun.launcher = Launcher::kTorchrun;
    as_torchrun.options_at = as_torchrun.script_at = 1;
    added_.push_back("--nproc_per_node=" + std::to_string(node_.gpus_per_node));
    Torchrun(as_torchrun);
    // Torchrun() found no --nproc_per_node and added one more when gpus != 1: keep one.
    added_.erase(std::unique(added_.begin(), added_.end()), added_.end());
    std::vector<std::string> launch = {"torchrun"};
    launch.insert(launch.end(), added_.begin(), added_.end());
    added_.clear();
    out_.edits.push_back({0, true, launch});
    out_.changes.clear();
    out_.changes.push_back("`" + words_[0] + "` -> `" + Join(launch) +
                           "` (one process per GPU of the node, as the plan's layout runs)");
  }

  // The script's arguments (the words after the script, or after `-m MODULE`) edited to
  // node_.script_options; appended options go in one edit at the end.
  void Script(const LaunchCommand& lc) {
    if (node_.script_options.empty() || lc.script_at >= words_.size()) return;
    LaunchCommand args = lc;
    args.options_at = lc.script_at + (words_[lc.script_at] == "-m" ? 2 : 1);
    args.script_at = words_.size();
    std::vector<std::string> appended;
    for (const ScriptOption& option : node_.script_options) {
      const std::vector<FoundOption> found = FindScriptOption(args, option);
      const std::string why = " (" + option.why + ")";
      if (option.absent) {
        for (const FoundOption& f : found) Remove(f, !option.value.empty() && !option.hydra, why);
        continue;
      }
      if (found.empty()) {
        std::vector<std::string> words = {option.name};
        if (option.hydra) {
          words = {"++" + option.name + "=" + option.value};
        } else if (!option.value.empty()) {
          words.push_back(option.value);
        }
        out_.changes.push_back("added " + Join(words) + why);
        appended.insert(appended.end(), words.begin(), words.end());
        continue;
      }
      for (const FoundOption& f : found) {
        if (!option.value.empty() && !IsAsRight(f.value, option)) Replace(f, option.value, why);
      }
    }
    if (!appended.empty()) out_.edits.push_back({words_.size(), false, appended});
  }

  static std::string Join(const std::vector<std::string>& words) {
    std::string out;
    for (const std::string& w : words) out += (out.empty() ? "" : " ") + w;
    return out;
  }

 private:
  // Every occurrence of option `name` among the words [range.options_at, range.script_at).
  std::vector<FoundOption> FindAll(LaunchCommand range, const std::string& name) const {
    std::vector<FoundOption> out;
    while (std::optional<FoundOption> f = FindOption(words_, range, {name.c_str()})) {
      out.push_back(*f);
      range.options_at = f->word + 1;
    }
    return out;
  }

  // Every occurrence of `option` among the script's arguments `args`: a Hydra override also as
  // `+name=` and `++name=`, and only in its one-word form (a word without '=' is no override).
  std::vector<FoundOption> FindScriptOption(const LaunchCommand& args,
                                            const ScriptOption& option) const {
    if (!option.hydra) return FindAll(args, option.name);
    std::vector<FoundOption> out;
    for (size_t i = args.options_at; i < args.script_at && i < words_.size(); ++i) {
      if (const auto value = HydraOverrideValue(words_[i], option.name)) {
        out.push_back({i, true, false, std::string(*value)});
      }
    }
    return out;
  }

  // The user's `value` already says what `option` does.
  static bool IsAsRight(const std::string& value, const ScriptOption& option) {
    const auto same = [&value](const std::string& other) {
      return value.size() == other.size() &&
             std::equal(value.begin(), value.end(), other.begin(), [](char a, char b) {
               return std::tolower(static_cast<unsigned char>(a)) ==
                      std::tolower(static_cast<unsigned char>(b));
             });
    };
    if (option.hydra ? same(option.value) : value == option.value) return true;
    return std::any_of(option.equivalents.begin(), option.equivalents.end(), same);
  }

  // Gives the option found at `f` the value `text` (after its '=' or as the next word), and
  // says so ("--x 8 -> 2" + `why`).
  void Replace(const FoundOption& f, const std::string& text, const std::string& why) {
    const std::string spelled = words_[f.word].substr(0, words_[f.word].find('='));
    if (f.inline_value) {
      out_.edits.push_back({f.word, true, {spelled + "=" + text}});
    } else {
      out_.edits.push_back({f.word + 1, f.value_word, {text}});  // a bare flag gets its value
    }
    out_.changes.push_back(spelled + " " + (f.inline_value || f.value_word ? f.value : "(bare)") +
                           " -> " + text + why);
  }

  // Removes the option found at `f` (and its value word when it takes one after a space).
  void Remove(const FoundOption& f, bool takes_value, const std::string& why) {
    out_.edits.push_back({f.word, true, {}});
    const bool value_word = takes_value && f.value_word;
    if (value_word) out_.edits.push_back({f.word + 1, true, {}});
    out_.changes.push_back("removed " + words_[f.word] + (value_word ? " " + f.value : "") + why);
  }

  const std::vector<std::string>& words_;
  const NodeLaunch& node_;
  LaunchRewrite& out_;
  std::vector<std::string> added_;
};

}  // namespace

std::optional<std::string_view> HydraOverrideValue(std::string_view word, std::string_view key) {
  const size_t key_at = word.find_first_not_of('+');
  if (key_at > 2 || word.size() <= key_at + key.size()) return std::nullopt;  // npos: only '+'
  if (word.compare(key_at, key.size(), key) != 0 || word[key_at + key.size()] != '=') {
    return std::nullopt;
  }
  return word.substr(key_at + key.size() + 1);
}

size_t TorchrunOptionsAt(const std::vector<std::string>& command) {
  if (command.empty()) return 0;
  if (ProgramName(command[0]) == "torchrun") return 1;
  if (IsPython(command[0]) && command.size() >= 3 && command[1] == "-m" &&
      (command[2] == "torch.distributed.run" || command[2] == "torch.distributed.launch"))
    return 3;
  return 0;
}

bool HasTorchrunOption(const std::vector<std::string>& command, const std::string& name) {
  const std::string wanted = Normalized(name);
  for (const auto& word : command) {
    if (word.rfind("--", 0) == 0 && Normalized(word) == wanted) return true;
  }
  return false;
}

bool HasTorchrunRendezvous(const std::vector<std::string>& command) {
  return HasTorchrunOption(command, "--standalone") ||
         HasTorchrunOption(command, "--rdzv-endpoint") ||
         HasTorchrunOption(command, "--master-addr");
}

const char* LauncherName(Launcher launcher) {
  switch (launcher) {
    case Launcher::kTorchrun:
      return "torchrun";
    case Launcher::kAccelerate:
      return "accelerate launch";
    case Launcher::kDeepspeed:
      return "deepspeed";
    case Launcher::kPython:
      return "python";
    case Launcher::kNone:
      break;
  }
  return "none";
}

LaunchCommand ParseLaunchCommand(const std::vector<std::string>& words) {
  LaunchCommand lc;
  if (words.empty()) return lc;
  const std::string program = ProgramName(words[0]);
  if (const size_t at = TorchrunOptionsAt(words); at != 0) {
    lc.launcher = Launcher::kTorchrun;
    lc.options_at = at;
  } else if (program == "accelerate" && words.size() >= 2 && words[1] == "launch") {
    lc.launcher = Launcher::kAccelerate;
    lc.options_at = 2;
  } else if (program == "deepspeed") {
    lc.launcher = Launcher::kDeepspeed;
    lc.options_at = 1;
  } else if (IsPython(words[0]) && words.size() >= 2 &&
             (words[1] == "-m" ? words.size() >= 3 : words[1][0] != '-')) {
    lc.launcher = Launcher::kPython;
    lc.options_at = lc.script_at = 1;
    return lc;
  } else {
    return lc;
  }
  lc.script_at = ScriptAt(words, lc.options_at, lc.launcher);
  return lc;
}

std::optional<NodeQuantity> CommonVariableQuantity(std::string_view name) {
  // Names that launch scripts commonly use for the job's shape (torch's own: WORLD_SIZE,
  // MASTER_ADDR, MASTER_PORT, LOCAL_WORLD_SIZE, GROUP_RANK, from
  // pytorch/pytorch torch/distributed/run.py's environment for workers; accelerate's
  // num_machines / machine_rank / main_process_ip / main_process_port as upper-case names).
  static const std::map<std::string_view, NodeQuantity> kNames = {
      {"NUM_NODES", NodeQuantity::kNodeCount},
      {"NNODES", NodeQuantity::kNodeCount},
      {"N_NODES", NodeQuantity::kNodeCount},
      {"NODE_COUNT", NodeQuantity::kNodeCount},
      {"NUM_MACHINES", NodeQuantity::kNodeCount},
      {"NODE_RANK", NodeQuantity::kNodeRank},
      {"MACHINE_RANK", NodeQuantity::kNodeRank},
      {"GROUP_RANK", NodeQuantity::kNodeRank},
      {"MASTER_ADDR", NodeQuantity::kMasterAddr},
      {"MASTER_IP", NodeQuantity::kMasterAddr},
      {"MAIN_PROCESS_IP", NodeQuantity::kMasterAddr},
      {"HEAD_NODE_IP", NodeQuantity::kMasterAddr},
      {"MASTER_PORT", NodeQuantity::kMasterPort},
      {"MAIN_PROCESS_PORT", NodeQuantity::kMasterPort},
      {"GPUS_PER_NODE", NodeQuantity::kGpusPerNode},
      {"NUM_GPUS_PER_NODE", NodeQuantity::kGpusPerNode},
      {"NPROC_PER_NODE", NodeQuantity::kGpusPerNode},
      {"NUM_GPUS", NodeQuantity::kGpusPerNode},
      {"LOCAL_WORLD_SIZE", NodeQuantity::kGpusPerNode},
      {"WORLD_SIZE", NodeQuantity::kWorldSize},
      {"NUM_PROCESSES", NodeQuantity::kWorldSize}};
  auto it = kNames.find(name);
  if (it == kNames.end()) return std::nullopt;
  return it->second;
}

std::vector<std::string> ShellVariablesIn(std::string_view command) {
  std::vector<std::string> out;
  auto name_char = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (size_t i = 0; i < command.size(); ++i) {
    if (command[i] != '$' || (i > 0 && command[i - 1] == '\\')) continue;
    size_t start = i + 1;
    const bool braced = start < command.size() && command[start] == '{';
    if (braced) ++start;
    size_t end = start;
    while (end < command.size() && name_char(command[end])) ++end;
    if (end == start || std::isdigit(static_cast<unsigned char>(command[start]))) continue;
    std::string name(command.substr(start, end - start));
    if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(std::move(name));
  }
  return out;
}

LaunchRewrite RewriteLaunch(const std::vector<std::string>& words, const NodeLaunch& node) {
  LaunchRewrite out;
  const LaunchCommand lc = ParseLaunchCommand(words);
  out.launcher = lc.launcher;
  Rewriter rewriter(words, node, out);
  switch (lc.launcher) {
    case Launcher::kTorchrun:
      rewriter.Torchrun(lc);
      break;
    case Launcher::kAccelerate:
      rewriter.Accelerate(lc);
      break;
    case Launcher::kDeepspeed:
      rewriter.Deepspeed(lc);
      break;
    case Launcher::kPython:
      rewriter.Python(lc);
      break;
    case Launcher::kNone:
      return out;
  }
  if (lc.launcher != Launcher::kPython) rewriter.FlushAdded(lc.options_at);
  rewriter.Script(lc);
  // By position; at one position the insertion first, so that applying the edits from the
  // last one replaces the user's word before anything is inserted in front of it.
  std::sort(out.edits.begin(), out.edits.end(), [](const WordEdit& a, const WordEdit& b) {
    return a.at != b.at ? a.at < b.at : (!a.replace && b.replace);
  });
  return out;
}

namespace {

// The whitespace-separated words of shell text `command` and where each starts.
std::vector<std::string> CommandWords(const std::string& command, std::vector<size_t>& starts) {
  std::vector<std::string> words;
  for (size_t i = 0; i < command.size();) {
    if (std::isspace(static_cast<unsigned char>(command[i]))) {
      ++i;
      continue;
    }
    const size_t start = i;
    while (i < command.size() && !std::isspace(static_cast<unsigned char>(command[i]))) ++i;
    words.push_back(command.substr(start, i - start));
    starts.push_back(start);
  }
  return words;
}

}  // namespace

ShellCommandRewrite RewriteShellCommand(const std::string& command, const NodeLaunch& node) {
  ShellCommandRewrite out;
  out.text = command;
  std::vector<size_t> starts;
  const std::vector<std::string> words = CommandWords(command, starts);
  out.rewrite = RewriteLaunch(words, node);
  // From the last edit, so that each word's position still holds (at one position the
  // insertion comes first in `edits`, hence last here: after the word it goes before is
  // replaced).
  for (auto it = out.rewrite.edits.rbegin(); it != out.rewrite.edits.rend(); ++it) {
    std::string joined;
    for (const std::string& w : it->words) joined += (joined.empty() ? "" : " ") + w;
    if (it->at >= words.size()) {
      out.text += " " + joined;
    } else if (it->replace) {
      out.text.replace(starts[it->at], words[it->at].size(), joined);
    } else {
      out.text.insert(starts[it->at], joined + " ");
    }
  }
  return out;
}

std::vector<std::string> NodeVariableExports(std::string_view command, const NodeLaunch& node) {
  std::vector<std::string> lines;
  for (const std::string& name : ShellVariablesIn(command)) {
    const std::optional<NodeQuantity> q = CommonVariableQuantity(name);
    if (!q) continue;
    auto it = node.shell.find(*q);
    if (it != node.shell.end()) lines.push_back("export " + name + "=" + it->second);
  }
  return lines;
}

NodeLaunch SlurmNodeLaunch(int nodes, int gpus_per_node) {
  NodeLaunch node;
  node.gpus_per_node = gpus_per_node;
  node.nodes = nodes;
  node.shell[NodeQuantity::kNodeCount] = "\"$SLURM_JOB_NUM_NODES\"";
  node.shell[NodeQuantity::kNodeRank] = "\"$SLURM_NODEID\"";
  node.shell[NodeQuantity::kMasterAddr] = "\"$MASTER_ADDR\"";
  node.shell[NodeQuantity::kMasterPort] = "\"$MASTER_PORT\"";
  node.shell[NodeQuantity::kGpusPerNode] = std::to_string(gpus_per_node);
  node.shell[NodeQuantity::kWorldSize] = std::to_string(gpus_per_node * nodes);
  node.own_variables["SLURM_JOB_NUM_NODES"] = NodeQuantity::kNodeCount;
  node.own_variables["SLURM_NNODES"] = NodeQuantity::kNodeCount;
  node.own_variables["SLURM_NODEID"] = NodeQuantity::kNodeRank;
  node.own_variables["SLURM_GPUS_ON_NODE"] = NodeQuantity::kGpusPerNode;
  return node;
}

}  // namespace fulcrum
