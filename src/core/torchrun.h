// Reading and rewriting a training launcher's command line (argv words): which launcher it is
// (torchrun / python -m torch.distributed.run, accelerate launch, the deepspeed launcher, a plain
// python script), where its own options end, and the edits that make it start the planned
// processes on one node of the planned cluster. Shared by the Slurm script writer and the
// SkyPilot/dstack exports. Pure functions over the words; thread-safe.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fulcrum {

// Where torchrun's own options start in `command`: 1 for `torchrun ...` (any path), 3 for
// `python... -m torch.distributed.run ...` (or the older torch.distributed.launch, which takes
// the same options); 0 when it is not torchrun.
size_t TorchrunOptionsAt(const std::vector<std::string>& command);

// True when the user already gave torchrun option `name` (e.g. --rdzv-endpoint, also spelled
// --rdzv_endpoint, with its value after a space or '=').
bool HasTorchrunOption(const std::vector<std::string>& command, const std::string& name);

// True when the user already said where torchrun's nodes meet (--standalone, --rdzv-endpoint or
// --master-addr): a writer that adds multi-node options then adds no rendezvous of its own.
bool HasTorchrunRendezvous(const std::vector<std::string>& command);

enum class Launcher { kNone, kTorchrun, kAccelerate, kDeepspeed, kPython };
const char* LauncherName(Launcher launcher);  // "torchrun", "accelerate launch", ...

struct LaunchCommand {
  Launcher launcher = Launcher::kNone;
  size_t options_at = 0;  // the first word of the launcher's own options
  size_t script_at = 0;   // the first word after them (the script, or -m); words.size(): none
};
// kPython only for `python[3[.N]] SCRIPT ...` and `python -m MODULE ...` (other interpreter
// options: kNone, the command is left alone).
LaunchCommand ParseLaunchCommand(const std::vector<std::string>& words);

// What a node of the planned cluster knows about the job.
enum class NodeQuantity {
  kNodeCount,
  kNodeRank,
  kMasterAddr,
  kMasterPort,
  kGpusPerNode,
  kWorldSize  // processes over all nodes (torch's WORLD_SIZE)
};
// The quantity a commonly used variable holds (NUM_NODES, NNODES, NODE_RANK, MASTER_ADDR,
// WORLD_SIZE, GPUS_PER_NODE, ...); nullopt for any other name.
std::optional<NodeQuantity> CommonVariableQuantity(std::string_view name);
// The variable names `$NAME` / `${NAME}` in shell text `command`, in order of first use.
std::vector<std::string> ShellVariablesIn(std::string_view command);

// An option the training script must get, in the script's own spelling (the planned layout for
// a script that takes it as arguments, e.g. Megatron-LM's --tensor-model-parallel-size): with a
// value, `--name value` (the user's value replaced, or the option appended); without one, a flag
// present or absent; `absent` with a value: the option must not be given (with its value).
// `hydra`: a Hydra command-line override, one word `name=value` (NeMo's and Megatron-Bridge's
// scripts), also found as `+name=value` and `++name=value` and appended as `++name=value`, which
// sets the key whether or not the script's config declares it (Hydra 1.3 "Basic Override
// syntax": "Appending or overriding a config value : ++foo.bar=value",
// https://hydra.cc/docs/1.3/advanced/override_grammar/basic/).
// The value word `word` gives Hydra key `key` (`key=v`, `+key=v` or `++key=v`, Hydra 1.3's
// override grammar as in ScriptOption); nullopt when it sets another key or is no override.
std::optional<std::string_view> HydraOverrideValue(std::string_view word, std::string_view key);

struct ScriptOption {
  std::string name;
  std::string value;  // empty: a flag
  bool absent = false;
  std::string why;  // for the change sentence
  bool hydra = false;
  // Other values that are as right as `value` (compared without case: a user's `true` or a
  // synonym of the planned setting is kept).
  std::vector<std::string> equivalents = {};
};

struct NodeLaunch {
  int gpus_per_node = 1;
  int nodes = 1;
  // What the script must get after its name (RewriteLaunch edits its arguments to match).
  std::vector<ScriptOption> script_options;
  // Shell text for each quantity as the node's launcher gives it ("\"$SKYPILOT_NODE_RANK\"").
  std::map<NodeQuantity, std::string> shell;
  // The launcher's own variables (SKYPILOT_NUM_NODES -> kNodeCount): a value that names one of
  // them, or a common variable of the same quantity, is already right.
  std::map<std::string, NodeQuantity> own_variables;
};

// A change to the words: replace word `at`, or insert before word `at` (at == words.size():
// append). `words` are written by fulcrum (shell text, not the user's).
struct WordEdit {
  size_t at = 0;
  bool replace = false;
  std::vector<std::string> words;
};
struct LaunchRewrite {
  Launcher launcher = Launcher::kNone;
  std::vector<WordEdit> edits;       // by increasing `at`; at one `at`, an insertion first
  std::vector<std::string> changes;  // one sentence per edit, for the task's header
};

// The edits that make `words` start the node's processes: torchrun's --nproc-per-node and the
// deepspeed launcher's --num_gpus become the node's GPU count, accelerate's --num_processes the
// total over the nodes (each added when missing); with more than one node the node count, this
// node's rank and the first node's address and port (unless the user set a rendezvous); a plain
// `python SCRIPT` on more than one GPU or node runs under torchrun. A value already right (the
// number, or a variable of that quantity) is kept. The script's arguments are then edited to
// `node.script_options` (a launcher fulcrum does not recognise: nothing is edited).
LaunchRewrite RewriteLaunch(const std::vector<std::string>& words, const NodeLaunch& node);

// RewriteLaunch on shell text (a spec's `command:`): the launcher is read from the
// whitespace-separated words, the edits are applied at their places, and the rest of the text
// is kept as the user wrote it.
struct ShellCommandRewrite {
  std::string text;
  LaunchRewrite rewrite;
};
ShellCommandRewrite RewriteShellCommand(const std::string& command, const NodeLaunch& node);

// `export NAME=<shell text>` for each variable shell text `command` names for the job's shape
// (CommonVariableQuantity: NUM_NODES, NODE_RANK, MASTER_ADDR, WORLD_SIZE, ...), from `node`'s
// own; run before the command, so that its $NAME expands to the node's value.
std::vector<std::string> NodeVariableExports(std::string_view command, const NodeLaunch& node);

// A node of a Slurm job of `nodes` x `gpus_per_node`, in a task that `srun` starts once per node
// from a batch script that exported MASTER_ADDR (the first host of the job's node list) and
// MASTER_PORT. Slurm's variables, as srun(1) (Slurm 22.05, "OUTPUT ENVIRONMENT VARIABLES";
// https://slurm.schedmd.com/srun.html) defines them in each task: SLURM_JOB_NUM_NODES and
// SLURM_NNODES "Total number of nodes in the job's resource allocation", SLURM_NODEID "The
// relative node ID of the current node", SLURM_GPUS_ON_NODE "Number of GPUs available to the step
// on this node"; the batch script's own MASTER_ADDR/MASTER_PORT reach the task because srun's
// --export=ALL is the "Default mode if --export is not specified".
NodeLaunch SlurmNodeLaunch(int nodes, int gpus_per_node);

}  // namespace fulcrum
