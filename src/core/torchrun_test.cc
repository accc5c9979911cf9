#include "core/torchrun.h"

#include <gtest/gtest.h>

namespace fulcrum {
namespace {

std::vector<std::string> Words(const std::string& text) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at < text.size()) {
    const size_t end = text.find(' ', at);
    out.push_back(text.substr(at, end - at));
    if (end == std::string::npos) break;
    at = end + 1;
  }
  return out;
}

// The rewritten command as one line, the edits applied to the words.
std::string Apply(const std::string& command, const NodeLaunch& node,
                  LaunchRewrite* rewrite = nullptr) {
  std::vector<std::string> words = Words(command);
  const LaunchRewrite rw = RewriteLaunch(words, node);
  if (rewrite != nullptr) *rewrite = rw;
  for (auto it = rw.edits.rbegin(); it != rw.edits.rend(); ++it) {
    if (it->replace && it->at < words.size()) {
      words.erase(words.begin() + static_cast<long>(it->at));
    }
    words.insert(words.begin() + static_cast<long>(std::min(it->at, words.size())),
                 it->words.begin(), it->words.end());
  }
  std::string out;
  for (const std::string& w : words) out += (out.empty() ? "" : " ") + w;
  return out;
}

NodeLaunch Node(int gpus, int nodes) {
  NodeLaunch n;
  n.gpus_per_node = gpus;
  n.nodes = nodes;
  n.shell = {{NodeQuantity::kNodeCount, "$N"},  {NodeQuantity::kNodeRank, "$R"},
             {NodeQuantity::kMasterAddr, "$A"}, {NodeQuantity::kMasterPort, "8008"},
             {NodeQuantity::kGpusPerNode, "8"}, {NodeQuantity::kWorldSize, "16"}};
  n.own_variables = {{"N", NodeQuantity::kNodeCount}, {"R", NodeQuantity::kNodeRank}};
  return n;
}

TEST(LaunchCommandTest, FindsTheLauncherAndWhereItsOptionsEnd) {
  LaunchCommand lc = ParseLaunchCommand(Words("torchrun --nnodes 2 --standalone -m pkg.train -x"));
  EXPECT_EQ(lc.launcher, Launcher::kTorchrun);
  EXPECT_EQ(lc.options_at, 1u);
  EXPECT_EQ(lc.script_at, 4u);  // -m: the module follows
  lc = ParseLaunchCommand(Words("accelerate launch --multi_gpu --num_processes=4 t.py --lr 1"));
  EXPECT_EQ(lc.launcher, Launcher::kAccelerate);
  EXPECT_EQ(lc.script_at, 4u);
  lc = ParseLaunchCommand(Words("deepspeed --num_gpus 2 --no_local_rank t.py"));
  EXPECT_EQ(lc.launcher, Launcher::kDeepspeed);
  EXPECT_EQ(lc.script_at, 4u);
  EXPECT_EQ(
      ParseLaunchCommand(Words("/venv/bin/python3 -m torch.distributed.launch t.py")).launcher,
      Launcher::kTorchrun);
  EXPECT_EQ(ParseLaunchCommand(Words("python3.11 train.py")).launcher, Launcher::kPython);
  EXPECT_EQ(ParseLaunchCommand(Words("python -O train.py")).launcher, Launcher::kNone);
  EXPECT_EQ(ParseLaunchCommand(Words("bash run.sh")).launcher, Launcher::kNone);
}

TEST(RewriteLaunchTest, TorchrunGetsOneProcessPerGpuOfTheNode) {
  LaunchRewrite rw;
  EXPECT_EQ(Apply("torchrun --nproc-per-node 8 train.py --nproc-per-node 5", Node(3, 1), &rw),
            "torchrun --nproc-per-node 3 train.py --nproc-per-node 5");  // the script's stays
  ASSERT_EQ(rw.changes.size(), 1u);
  EXPECT_EQ(rw.changes[0].rfind("--nproc-per-node 8 -> 3", 0), 0u) << rw.changes[0];
  EXPECT_EQ(Apply("torchrun --nproc_per_node=8 t.py", Node(4, 1)),
            "torchrun --nproc_per_node=4 t.py");
  EXPECT_EQ(Apply("torchrun t.py", Node(4, 1)), "torchrun --nproc_per_node=4 t.py");
  // Already right: the number, torchrun's "gpu"/"auto", a variable of the GPU count.
  for (const char* fits : {"torchrun --nproc-per-node 4 t.py", "torchrun --nproc-per-node gpu t.py",
                           "torchrun --nproc-per-node $GPUS_PER_NODE t.py"}) {
    EXPECT_TRUE(RewriteLaunch(Words(fits), Node(4, 1)).changes.empty()) << fits;
  }
  // One node: a --nnodes of 2 would wait forever for a second node.
  EXPECT_EQ(Apply("torchrun --nnodes 2 --nproc-per-node 1 t.py", Node(1, 1)),
            "torchrun --nnodes 1 --nproc-per-node 1 t.py");
}

// The script's own arguments follow node.script_options: a value replaced (spaced or after '='),
// every occurrence; an option or flag that must be absent removed (with its value word); a
// missing one appended at the end; the launcher's options and the rest of the arguments kept.
TEST(RewriteLaunchTest, TheScriptGetsItsOptions) {
  NodeLaunch node = Node(2, 1);
  node.script_options = {{"--tp", "2", false, "plan"},
                         {"--pp", "4", false, "plan"},
                         {"--sp", "", false, "plan"},
                         {"--old", "-", true, "plan"},
                         {"--noisy", "", true, "plan"}};
  LaunchRewrite rw;
  EXPECT_EQ(Apply("torchrun --nproc-per-node 2 pretrain.py --tp 8 --old 3 --lr 1 --tp=4 --noisy",
                  node, &rw),
            "torchrun --nproc-per-node 2 pretrain.py --tp 2 --lr 1 --tp=2 --pp 4 --sp");
  EXPECT_EQ(rw.changes.size(), 6u);  // 2 replaced, 2 removed, 2 added
  // Already right: nothing to change, nothing said.
  EXPECT_TRUE(RewriteLaunch(Words("torchrun --nproc-per-node 2 p.py --tp 2 --pp=4 --sp"), node)
                  .changes.empty());
  // `python -m MODULE` (run under torchrun on 2 GPUs): the module's arguments.
  EXPECT_EQ(Apply("python -m train --tp 1", node),
            "torchrun --nproc_per_node=2 -m train --tp 2 --pp 4 --sp");
  // A command fulcrum does not recognise is left alone.
  EXPECT_EQ(Apply("bash run.sh --tp 1", node), "bash run.sh --tp 1");
}

// An optional-value flag given bare (TrainingArguments' `--gradient_checkpointing`, which
// HfArgumentParser takes with or without a value): the next option is not its value, so setting
// it inserts the value after the flag and removing it removes the flag alone. Before, the next
// option's name was read as its value: `--lr` was replaced by `False`, or removed with it.
TEST(RewriteLaunchTest, ABareFlagIsNotGivenTheNextOptionAsItsValue) {
  NodeLaunch node = Node(1, 1);
  node.script_options = {{"--gradient_checkpointing", "True", false, "plan"}};
  EXPECT_EQ(Apply("python train.py --gradient_checkpointing --lr 3e-4", node),
            "python train.py --gradient_checkpointing True --lr 3e-4");
  EXPECT_EQ(Apply("python train.py --lr 3e-4 --gradient_checkpointing", node),
            "python train.py --lr 3e-4 --gradient_checkpointing True");
  EXPECT_EQ(Apply("python train.py --gradient_checkpointing true --lr 3e-4", node),
            "python train.py --gradient_checkpointing True --lr 3e-4");
  node.script_options = {{"--gradient_checkpointing", "True", true, "plan"}};
  EXPECT_EQ(Apply("python train.py --gradient_checkpointing --lr 3e-4", node),
            "python train.py --lr 3e-4");
  EXPECT_EQ(Apply("python train.py --gradient_checkpointing True --lr 3e-4", node),
            "python train.py --lr 3e-4");
}

// Hydra overrides (NeMo, Megatron-Bridge): one word `key=value`, found also as `+key=` and
// `++key=`, whose prefix is kept; appended as `++key=value`; a value that says the same (case
// aside, or a listed synonym) is kept; a dashed convenience option is removed with its value.
TEST(RewriteLaunchTest, HydraOverridesAreSetInTheirOwnForm) {
  NodeLaunch node = Node(8, 1);
  ScriptOption tp{"model.tp", "2", false, "plan", true};
  ScriptOption sp{"model.sp", "true", false, "plan", true};
  ScriptOption precision{"trainer.precision", "bf16", false, "plan", true, {"bf16-mixed"}};
  ScriptOption cp{"model.cp", "1", false, "plan", true};
  node.script_options = {tp, sp, precision, cp, {"-tp", "-", true, "plan"}};
  LaunchRewrite rw;
  EXPECT_EQ(Apply("torchrun --nproc-per-node 8 run.py -tp 4 model.tp=8 ++model.sp=True "
                  "trainer.precision=bf16-mixed x.model.cp=4 model.tp",
                  node, &rw),
            "torchrun --nproc-per-node 8 run.py model.tp=2 ++model.sp=True "
            "trainer.precision=bf16-mixed x.model.cp=4 model.tp ++model.cp=1");
  // -tp 4 removed, model.tp replaced, model.cp added; model.sp (True) and the precision kept;
  // x.model.cp is another key and a bare word is no override.
  EXPECT_EQ(rw.changes.size(), 3u);
  EXPECT_EQ(Apply("torchrun --nproc-per-node 8 run.py +model.tp=4", node),
            "torchrun --nproc-per-node 8 run.py +model.tp=2 ++model.sp=true "
            "++trainer.precision=bf16 ++model.cp=1");
}

TEST(RewriteLaunchTest, MultiNodeTorchrunJoinsTheNodesUnlessTheUserSetARendezvous) {
  EXPECT_EQ(Apply("torchrun --nnodes $NUM_NODES --nproc-per-node 8 t.py", Node(8, 2)),
            "torchrun --node_rank=$R --master_addr=$A --master_port=8008 --nnodes $NUM_NODES "
            "--nproc-per-node 8 t.py");
  EXPECT_EQ(Apply("torchrun --nnodes 4 --node_rank 0 --nproc-per-node 8 t.py", Node(8, 2)),
            "torchrun --master_addr=$A --master_port=8008 --nnodes $N --node_rank $R "
            "--nproc-per-node 8 t.py");
  // A replaced first option and the options added in front of it.
  EXPECT_EQ(Apply("torchrun --nproc_per_node=8 t.py", Node(4, 2)),
            "torchrun --nnodes=$N --node_rank=$R --master_addr=$A --master_port=8008 "
            "--nproc_per_node=4 t.py");
  EXPECT_EQ(Apply("torchrun --nnodes 1:4 --rdzv-endpoint h:1 --nproc-per-node 8 t.py", Node(8, 2)),
            "torchrun --nnodes 1:4 --rdzv-endpoint h:1 --nproc-per-node 8 t.py");
}

TEST(RewriteLaunchTest, AccelerateCountsProcessesOverAllNodes) {
  EXPECT_EQ(Apply("accelerate launch --num_processes 8 t.py", Node(4, 1)),
            "accelerate launch --num_processes 4 t.py");
  EXPECT_EQ(Apply("accelerate launch --num-processes=8 t.py", Node(8, 2)),
            "accelerate launch --num_machines=$N --machine_rank=$R --main_process_ip=$A "
            "--main_process_port=8008 --num-processes=16 t.py");
}

TEST(RewriteLaunchTest, DeepspeedGetsTheNodesGpusAndEachNodeStartsItself) {
  EXPECT_EQ(Apply("deepspeed --num_gpus 8 t.py", Node(2, 1)), "deepspeed --num_gpus 2 t.py");
  EXPECT_EQ(Apply("deepspeed t.py --deepspeed ds.json", Node(8, 2)),
            "deepspeed --num_gpus=8 --num_nodes=$N --no_ssh --node_rank=$R --master_addr=$A "
            "--master_port=8008 t.py --deepspeed ds.json");
}

TEST(RewriteLaunchTest, PlainPythonRunsUnderTorchrunOnMoreThanOneGpu) {
  LaunchRewrite rw;
  EXPECT_EQ(Apply("python train.py --lr 1", Node(4, 1), &rw),
            "torchrun --nproc_per_node=4 train.py --lr 1");
  ASSERT_EQ(rw.changes.size(), 1u);
  EXPECT_NE(rw.changes[0].find("`python` -> `torchrun --nproc_per_node=4`"), std::string::npos);
  EXPECT_EQ(Apply("python -m pkg.train", Node(2, 1)), "torchrun --nproc_per_node=2 -m pkg.train");
  EXPECT_TRUE(RewriteLaunch(Words("python train.py"), Node(1, 1)).edits.empty());
  EXPECT_TRUE(RewriteLaunch(Words("bash train.sh"), Node(8, 2)).edits.empty());
}

TEST(ShellVariablesTest, NamesTheVariablesACommandUses) {
  EXPECT_EQ(
      ShellVariablesIn("torchrun --nnodes $NUM_NODES --rdzv ${MASTER_ADDR}:1 $1 \\$X $NUM_NODES"),
      (std::vector<std::string>{"NUM_NODES", "MASTER_ADDR"}));
  EXPECT_EQ(CommonVariableQuantity("NNODES"), NodeQuantity::kNodeCount);
  EXPECT_EQ(CommonVariableQuantity("WORLD_SIZE"), NodeQuantity::kWorldSize);
  EXPECT_EQ(CommonVariableQuantity("HOME"), std::nullopt);
}

}  // namespace
}  // namespace fulcrum
