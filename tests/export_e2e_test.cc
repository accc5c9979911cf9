// End-to-end tests of `fulcrum plan --export skypilot|dstack`: every candidate of a full plan on
// the shipped catalog is exported, each file is read back by PyYAML's safe_load (YAML 1.1, as
// SkyPilot and dstack read their task files: that is where an unquoted 4090:2 is a base-60
// number) and each value is checked against the tool's table (catalog/export_<tool>.csv); the
// exported setup and run lines are executed with the training command replaced by `true`.
//
// The field types checked are the tools' schemas: SkyPilot, skypilot-org/skypilot
// @00052dfe0d132c5ad6aa9a175572b0695f747c80 sky/utils/schemas.py (_get_single_resources_schema:
// cloud, region, instance_type strings, accelerators a string "NAME:COUNT", use_spot a boolean;
// the task's num_nodes an integer, setup and run strings); dstack, dstackai/dstack
// @511c318c8a7672fb2a925041bfc2d7301a26272e src/dstack/_internal/core/models/configurations.py
// (TaskConfiguration: type "task", nodes >= 1, commands a list of strings) and profiles.py
// (backends, regions, instance_types lists of strings; SpotPolicy spot | on-demand | auto),
// resources.py (GPUSpec "name:memory:count").
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <vector>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/run_binary.h"

namespace fulcrum::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const char* kPython = "/usr/bin/python3";

// argv: tool, table csv, directory of exports. Prints the number of files checked; any
// mismatch raises (exit 1) with the file and the value.
const char* kCheckExports = R"PY(
import csv, glob, sys, yaml
tool, table, directory = sys.argv[1:4]
rows = list(csv.DictReader(l for l in open(table) if not l.startswith('#')))
cloud_of = {r['provider']: r['name'] for r in rows if r['kind'] == 'cloud'}
max_nodes = {r['name']: int(r['max_nodes'] or 10**6) for r in rows if r['kind'] == 'cloud'}
clouds = set(cloud_of.values())
regions = {}
for r in rows:
    if r['kind'] == 'region':
        regions.setdefault(cloud_of[r['provider']], set()).add(r['name'])
accelerators = {}
for r in rows:
    if r['kind'] == 'accelerator':
        for provider in ([r['provider']] if r['provider'] else list(cloud_of)):
            accelerators.setdefault(cloud_of[provider], set()).add(r['name'])
def check(cond, f, what):
    if not cond:
        raise SystemExit('%s: %s' % (f, what))
files = sorted(glob.glob(directory + '/*'))
check(files, directory, 'no exports')
for f in files:
    d = yaml.safe_load(open(f))
    if tool == 'skypilot':
        res = d['resources']
        cloud, region = res['cloud'], res['region']
        check(isinstance(d['name'], str), f, 'name %r' % d['name'])
        check(isinstance(d['num_nodes'], int) and d['num_nodes'] >= 1, f, 'num_nodes')
        check(isinstance(res['use_spot'], bool), f, 'use_spot %r' % res['use_spot'])
        check(isinstance(res.get('instance_type', ''), str), f, 'instance_type')
        acc = res['accelerators']
        check(isinstance(acc, str), f, 'accelerators %r is not a string' % (acc,))
        name, count = acc.rsplit(':', 1)
        lines = [d['setup'], d['run']]
    else:
        check(d['type'] == 'task', f, 'type')
        check(isinstance(d['nodes'], int) and d['nodes'] >= 1, f, 'nodes')
        check(d['spot_policy'] in ('spot', 'on-demand'), f, 'spot_policy %r' % d['spot_policy'])
        for key in ('backends', 'regions', 'instance_types'):
            value = d.get(key, [''])
            check(isinstance(value, list) and len(value) == 1 and isinstance(value[0], str),
                  f, '%s %r' % (key, value))
        cloud, region = d['backends'][0], d['regions'][0]
        gpu = d['resources']['gpu']
        check(isinstance(gpu, str), f, 'gpu %r is not a string' % (gpu,))
        name, count = gpu.rsplit(':', 1)
        check(all(isinstance(c, str) for c in d['commands']), f, 'commands')
        lines = d['commands']
    check(isinstance(cloud, str) and cloud in clouds, f, 'cloud %r' % (cloud,))
    nodes = d['num_nodes'] if tool == 'skypilot' else d['nodes']
    check(nodes <= max_nodes[cloud], f, '%d nodes on %s' % (nodes, cloud))
    check(isinstance(region, str) and region in regions.get(cloud, ()), f,
          'region %r not a %s region of %s' % (region, tool, cloud))
    check(name in accelerators.get(cloud, ()), f, 'accelerator %r on %s' % (name, cloud))
    check(count.isdigit() and int(count) >= 1, f, 'count %r' % count)
    run = '\n'.join(lines)
    for flag in ('fulcrum run ', '--name ', '--checkpoint-dir ', '--price-per-hour ',
                 '--budget-usd ', ' -- true'):
        check(flag in run, f, 'no %r in the commands' % flag)
print(len(files))
)PY";

// argv: tool, export file. Prints the setup and run lines as one shell script.
const char* kScriptOf = R"PY(
import sys, yaml
tool, f = sys.argv[1:3]
d = yaml.safe_load(open(f))
print(d['setup'] + d['run'] if tool == 'skypilot' else '\n'.join(d['commands']))
)PY";

RunOptions Isolated() {
  RunOptions o;
  static const std::string empty = MakeTempDir("export-offers-d");
  o.env["FULCRUM_OFFERS_DIR"] = empty;  // the shipped catalog only
  return o;
}

// `fulcrum plan` of a 7B full fine-tune on the shipped catalog, every candidate, exported, with
// `command` as the training command.
RunOutput ExportAll(const std::string& tool, const std::string& dir, const std::string& file,
                    const std::string& command = "true") {
  return RunFulcrum({"--catalog",
                     SourcePath("catalog"),
                     "plan",
                     "--model",
                     "llama-2-7b",
                     "--tokens",
                     "2B",
                     "--budget-usd",
                     "20000",
                     "--top",
                     "100000",
                     "--command",
                     command,
                     "--export",
                     tool,
                     dir + "/" + file,
                     "--pick",
                     "all",
                     "--fulcrum-install",
                     "false",
                     "--json"},
                    Isolated());
}

void ExpectEveryExportParsesAndUsesTheToolsNames(const std::string& tool, const std::string& ext) {
  const std::string dir = MakeTempDir("export-" + tool);
  RunOutput r = ExportAll(tool, dir, "task." + ext);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json plan = json::parse(r.out);
  const json& exported = plan["export"];
  ASSERT_EQ(exported["format"], tool);
  // Every candidate is either written or listed with its reason (stderr and JSON).
  EXPECT_EQ(exported["written"].size() + exported["skipped"].size(), plan["candidates"].size());
  EXPECT_GT(exported["written"].size(), 100u);
  for (const json& s : exported["skipped"]) {
    EXPECT_FALSE(s["reason"].get<std::string>().empty());
    EXPECT_NE(r.err.find("not exported: rank " + std::to_string(s["rank"].get<int>()) + ": "),
              std::string::npos);
  }
  RunOutput check = RunProgram(
      kPython, {"-c", kCheckExports, tool, SourcePath("catalog/export_" + tool + ".csv"), dir});
  ASSERT_EQ(check.exit_code, 0) << check.err << check.out;
  EXPECT_EQ(std::stoul(check.out), exported["written"].size());
  fs::remove_all(dir);
}

TEST(ExportE2eTest, EverySkypilotExportOfAFullPlanParsesAsYaml11WithSkypilotsNames) {
  ExpectEveryExportParsesAndUsesTheToolsNames("skypilot", "yaml");
}

TEST(ExportE2eTest, EveryDstackExportOfAFullPlanParsesAsYaml11WithDstacksNames) {
  ExpectEveryExportParsesAndUsesTheToolsNames("dstack", "yml");
}

// The exported setup + run, as the tool runs them on the node: `fulcrum` from the build dir on
// PATH, a fresh HOME, the training command `true`. Before issue 14 the run line had
// --budget-usd without a price: `fulcrum run` refused it with exit 2.
void ExpectExportedCommandsRun(const std::string& tool) {
  const std::string dir = MakeTempDir("export-run-" + tool);
  RunOutput r =
      RunFulcrum({"--catalog", SourcePath("catalog"), "plan", "--model", "llama-2-7b", "--tokens",
                  "1B", "--budget-usd", "500", "--command", "true", "--export", tool,
                  dir + "/task.yaml", "--pick", "all", "--fulcrum-install", "false", "--json"},
                 Isolated());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json written = json::parse(r.out)["export"]["written"];
  ASSERT_FALSE(written.empty());
  const std::string task = written[0]["file"];  // the best candidate the tool can launch
  RunOutput script = RunProgram(kPython, {"-c", kScriptOf, tool, task});
  ASSERT_EQ(script.exit_code, 0) << script.err;
  { std::ofstream(dir + "/task.sh") << "set -e\n" << script.out; }
  fs::create_directories(dir + "/home");
  RunOptions o;
  o.cwd = dir;
  o.env["HOME"] = dir + "/home";
  o.env["XDG_DATA_HOME"] = dir + "/home/.local/share";
  o.env["FULCRUM_DATA_DIR"] = dir + "/data";  // as root the default is /var/lib/fulcrum
  o.env["PATH"] = fs::path(FULCRUM_BINARY).parent_path().string() + ":/usr/bin:/bin";
  RunOutput run = RunProgram("/bin/bash", {dir + "/task.sh"}, o);
  EXPECT_EQ(run.exit_code, 0) << script.out << "\n" << run.out << run.err;
  EXPECT_NE(run.err.find("job succeeded"), std::string::npos) << run.err;
  // Without fulcrum on PATH the setup runs the install command and fails loudly when it did not
  // make fulcrum available (here `false`, which fails).
  o.env["PATH"] = "/usr/bin:/bin";
  run = RunProgram("/bin/bash", {dir + "/task.sh"}, o);
  EXPECT_NE(run.exit_code, 0);
  EXPECT_NE(run.err.find("the --fulcrum-install command failed (exit 1)"), std::string::npos)
      << run.err;
  EXPECT_NE(run.err.find("fulcrum is not on PATH after the --fulcrum-install command"),
            std::string::npos)
      << run.err;
  fs::remove_all(dir);
}

TEST(ExportE2eTest, ExportedSkypilotSetupAndRunExecute) { ExpectExportedCommandsRun("skypilot"); }

TEST(ExportE2eTest, ExportedDstackCommandsExecute) { ExpectExportedCommandsRun("dstack"); }

// Runs exported task file `task` as `tool` runs it on node 1 of 2 (`gpus_per_node` GPUs each)
// with a `torchrun` on PATH that records its argv; returns the argv, one word per line (empty,
// with a failure, when the task did not run).
std::string TorchrunArgvOnNode1(const std::string& tool, const std::string& dir,
                                const std::string& task, int gpus_per_node = 8) {
  RunOutput script = RunProgram(kPython, {"-c", kScriptOf, tool, task});
  EXPECT_EQ(script.exit_code, 0) << script.err;
  if (script.exit_code != 0) return "";
  { std::ofstream(dir + "/task.sh") << "set -e\n" << script.out; }
  fs::create_directories(dir + "/bin");
  fs::create_directories(dir + "/home");
  {
    std::ofstream shim(dir + "/bin/torchrun");
    shim << "#!/bin/sh\nprintf '%s\\n' \"$@\" > \"$TORCHRUN_ARGV\"\n";
  }
  fs::permissions(dir + "/bin/torchrun", fs::perms::owner_all);
  RunOptions o;
  o.cwd = dir;
  o.env["HOME"] = dir + "/home";
  o.env["XDG_DATA_HOME"] = dir + "/home/.local/share";
  o.env["FULCRUM_DATA_DIR"] = dir + "/data";
  o.env["TORCHRUN_ARGV"] = dir + "/argv";
  o.env["PATH"] =
      dir + "/bin:" + fs::path(FULCRUM_BINARY).parent_path().string() + ":/usr/bin:/bin";
  if (tool == "skypilot") {
    o.env["SKYPILOT_NUM_NODES"] = "2";
    o.env["SKYPILOT_NODE_RANK"] = "1";
    o.env["SKYPILOT_NODE_IPS"] = "10.0.0.1\n10.0.0.2";
    o.env["SKYPILOT_NUM_GPUS_PER_NODE"] = std::to_string(gpus_per_node);
  } else {
    o.env["DSTACK_NODES_NUM"] = "2";
    o.env["DSTACK_NODE_RANK"] = "1";
    o.env["DSTACK_MASTER_NODE_IP"] = "10.0.0.1";
    o.env["DSTACK_GPUS_PER_NODE"] = std::to_string(gpus_per_node);
  }
  RunOutput run = RunProgram("/bin/bash", {dir + "/task.sh"}, o);
  EXPECT_EQ(run.exit_code, 0) << script.out << "\n" << run.out << run.err;
  return run.exit_code == 0 ? FileContents(dir + "/argv") : "";
}

// A multi-node export of a torchrun job, run as the tool runs it on node 1 of 2: each node starts
// the run line once, so torchrun must get the node count, this node's rank and the first node's
// address from the tool's environment (SkyPilot docs/source/running-jobs/distributed-jobs.rst:
// SKYPILOT_NUM_NODES, SKYPILOT_NODE_RANK, SKYPILOT_NODE_IPS, SKYPILOT_NUM_GPUS_PER_NODE; dstack
// runner/internal/executor/executor.go: DSTACK_NODES_NUM, DSTACK_NODE_RANK,
// DSTACK_MASTER_NODE_IP, DSTACK_GPUS_PER_NODE). Before, every node ran `torchrun train.py` on its
// own: N independent single-node jobs. A `torchrun` on PATH records the argv it was given.
void ExpectMultiNodeTorchrunJoinsTheNodes(const std::string& tool) {
  const std::string dir = MakeTempDir("export-nodes-" + tool);
  RunOutput r = ExportAll(tool, dir, "task.yaml", "torchrun train.py --lr 3e-4");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json plan = json::parse(r.out);
  std::map<int, json> candidate_of;
  for (const json& c : plan["candidates"]) candidate_of[c["rank"].get<int>()] = c;
  std::string task;
  int per_node = 0;
  for (const json& w : plan["export"]["written"]) {
    const json& c = candidate_of[w["rank"].get<int>()];
    if (c.value("nodes", 0) == 2) {
      task = w["file"];
      per_node = c["gpus_per_node"].get<int>();
      break;
    }
  }
  ASSERT_FALSE(task.empty()) << "no 2-node candidate was exported";
  // Each node starts one process per GPU of its instance (8, or 16 on a 16-GPU machine type).
  EXPECT_EQ(TorchrunArgvOnNode1(tool, dir, task, per_node),
            "--nproc_per_node=" + std::to_string(per_node) +
                "\n--nnodes=2\n--node_rank=1\n--master_addr=10.0.0.1\n"
                "--master_port=8008\ntrain.py\n--lr\n3e-4\n");
  fs::remove_all(dir);
}

TEST(ExportE2eTest, MultiNodeSkypilotTorchrunJoinsTheNodes) {
  ExpectMultiNodeTorchrunJoinsTheNodes("skypilot");
}

TEST(ExportE2eTest, MultiNodeDstackTorchrunJoinsTheNodes) {
  ExpectMultiNodeTorchrunJoinsTheNodes("dstack");
}

// A Megatron-LM job takes its layout as arguments: pretrain_gpt.py without them runs tp 1, pp 1,
// micro-batch 1 in fp32, whatever was planned (before: the 70B pick tp2 pp4 vpp2 was exported as
// the user's `pretrain_gpt.py --tensor-model-parallel-size 8`, which would have run tp 8 pp 1).
// The exported task, run on node 1 of 2, must hand pretrain_gpt.py the pick's layout as the plan
// JSON reports it (argparse: the last occurrence of an option counts), drop the user's
// contradicting --recompute-activations and keep the user's own arguments.
TEST(ExportE2eTest, MegatronExportHandsTheScriptThePlannedLayout) {
  const std::string dir = MakeTempDir("export-megatron");
  RunOutput r = RunFulcrum(
      {"--catalog", SourcePath("catalog"), "plan", "--model", "llama-2-70b", "--tokens", "20B",
       "--seq-len", "4096", "--global-batch", "512", "--command",
       "torchrun --nproc-per-node 8 pretrain_gpt.py --tensor-model-parallel-size 8 "
       "--recompute-activations --lr 3e-4",
       "--export", "skypilot", dir + "/task.yaml", "--fulcrum-install", "false", "--json"},
      Isolated());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json plan = json::parse(r.out);
  const json& written = plan["export"]["written"];
  ASSERT_FALSE(written.empty());
  const int rank = written[0]["rank"].get<int>();
  json pick;
  for (const json& c : plan["candidates"]) {
    if (c["rank"].get<int>() == rank) pick = c;
  }
  ASSERT_EQ(pick["parallel"]["framework"], "megatron");
  const std::string argv = TorchrunArgvOnNode1("skypilot", dir, written[0]["file"]);
  std::vector<std::string> words;
  std::istringstream lines(argv);
  for (std::string w; std::getline(lines, w);) words.push_back(w);
  const auto script = std::find(words.begin(), words.end(), "pretrain_gpt.py");
  ASSERT_NE(script, words.end()) << argv;
  std::map<std::string, std::string> options;  // the last value of each option
  for (auto w = script + 1; w != words.end(); ++w) {
    const bool value = w + 1 != words.end() && (w + 1)->rfind("--", 0) != 0;
    options[*w] = value ? *(w + 1) : "";
    if (value) ++w;
  }
  const json& p = pick["parallel"];
  EXPECT_EQ(options["--tensor-model-parallel-size"], std::to_string(p["tp"].get<int>())) << argv;
  EXPECT_EQ(options["--pipeline-model-parallel-size"], std::to_string(p["pp"].get<int>()));
  EXPECT_EQ(options["--context-parallel-size"], std::to_string(p["cp"].get<int>()));
  EXPECT_EQ(options["--micro-batch-size"], std::to_string(p["micro_batch"].get<int>()));
  EXPECT_EQ(options["--global-batch-size"], std::to_string(p["global_batch"].get<int>()));
  EXPECT_EQ(options["--seq-length"], "4096");
  if (p["vpp"].get<int>() > 1) {
    EXPECT_EQ(options["--num-virtual-stages-per-pipeline-rank"],
              std::to_string(p["vpp"].get<int>()));
  } else {
    EXPECT_EQ(options.count("--num-virtual-stages-per-pipeline-rank"), 0u);
  }
  EXPECT_EQ(options.count("--sequence-parallel"), p["sequence_parallel"].get<bool>() ? 1u : 0u);
  EXPECT_EQ(options.count("--use-distributed-optimizer"), p["zero"].get<int>() >= 1 ? 1u : 0u);
  EXPECT_EQ(options.count("--recompute-activations"), 0u) << argv;
  EXPECT_EQ(options.count("--bf16"), 1u);
  EXPECT_EQ(options["--lr"], "3e-4");
  fs::remove_all(dir);
}

// Plans `command` for `job` (plan's model, tokens, sequence and batch flags), exports the pick as
// a SkyPilot task and runs it on node 1 of 2 with a recording torchrun; returns the plan JSON, the
// pick's and the words torchrun got after `script`.
struct ExportedRun {
  json plan;
  json pick;
  std::vector<std::string> script_args;
  std::string argv;
};
const std::vector<std::string> k70bPretrain = {"--model",   "llama-2-70b", "--tokens",       "20B",
                                               "--seq-len", "4096",        "--global-batch", "512"};
ExportedRun RunExportedCommand(const std::string& dir, const std::vector<std::string>& job,
                               const std::string& command, const std::string& script) {
  ExportedRun out;
  std::vector<std::string> args = {"--catalog", SourcePath("catalog"), "plan"};
  args.insert(args.end(), job.begin(), job.end());
  args.insert(args.end(), {"--command", command, "--export", "skypilot", dir + "/task.yaml",
                           "--fulcrum-install", "false", "--json"});
  RunOutput r = RunFulcrum(args, Isolated());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  if (r.exit_code != 0) return out;
  out.plan = json::parse(r.out);
  const json& written = out.plan["export"]["written"];
  EXPECT_FALSE(written.empty());
  if (written.empty()) return out;
  for (const json& c : out.plan["candidates"]) {
    if (c["rank"] == written[0]["rank"]) out.pick = c;
  }
  out.argv = TorchrunArgvOnNode1("skypilot", dir, written[0]["file"]);
  std::vector<std::string> words;
  std::istringstream lines(out.argv);
  for (std::string w; std::getline(lines, w);) words.push_back(w);
  const auto at = std::find(words.begin(), words.end(), script);
  EXPECT_NE(at, words.end()) << out.argv;
  if (at != words.end()) out.script_args.assign(at + 1, words.end());
  return out;
}

// The Hydra overrides (`key=v`, `+key=v`, `++key=v`) among the script's arguments of `run`: each
// key's value, given once (a failure names a key given otherwise; "-" when it is missing).
class HydraOverrides {
 public:
  explicit HydraOverrides(const ExportedRun& run) : argv_(run.argv) {
    for (const std::string& w : run.script_args) {
      const size_t eq = w.find('=');
      if (eq == std::string::npos || w[0] == '-') continue;
      const size_t key_at = w.find_first_not_of('+');
      values_[w.substr(key_at, eq - key_at)].push_back(w.substr(eq + 1));
    }
  }
  std::string operator[](const std::string& key) const {
    const auto it = values_.find(key);
    EXPECT_TRUE(it != values_.end() && it->second.size() == 1) << key << "\n" << argv_;
    return it == values_.end() || it->second.empty() ? std::string("-") : it->second.front();
  }

 private:
  std::string argv_;
  std::map<std::string, std::vector<std::string>> values_;
};

// NeMo's Hydra scripts take the layout as overrides of their config and Lightning's trainer the
// processes (trainer.devices x trainer.num_nodes must be what the launcher starts). Before, the
// 70B pick (tp2 pp2 on 16 nodes) was exported with the user's trainer.num_nodes=1 and
// model.tensor_model_parallel_size=8 and no pipeline size: NeMo would have run tp 8 pp 1 as one
// node of 128 processes. Each key must now be given once, with the pick's value.
TEST(ExportE2eTest, NemoExportHandsTheScriptThePlannedLayoutAsHydraOverrides) {
  const std::string dir = MakeTempDir("export-nemo");
  const std::string script = "examples/nlp/language_modeling/megatron_gpt_pretraining.py";
  const ExportedRun run = RunExportedCommand(
      dir, k70bPretrain,
      "torchrun --nproc-per-node 8 " + script +
          " --config-name megatron_llama_config trainer.devices=8 trainer.num_nodes=1 "
          "model.tensor_model_parallel_size=8 ++model.micro_batch_size=4 model.optim.lr=3e-4",
      script);
  ASSERT_EQ(run.pick["parallel"]["framework"], "megatron") << run.argv;
  const HydraOverrides one(run);
  const json& p = run.pick["parallel"];
  EXPECT_EQ(one["trainer.devices"], std::to_string(run.pick["gpus_per_node"].get<int>()));
  EXPECT_EQ(one["trainer.num_nodes"], std::to_string(run.pick["nodes"].get<int>()));
  EXPECT_EQ(one["model.tensor_model_parallel_size"], std::to_string(p["tp"].get<int>()));
  EXPECT_EQ(one["model.pipeline_model_parallel_size"], std::to_string(p["pp"].get<int>()));
  EXPECT_EQ(one["model.context_parallel_size"], std::to_string(p["cp"].get<int>()));
  EXPECT_EQ(one["model.micro_batch_size"], std::to_string(p["micro_batch"].get<int>()));
  EXPECT_EQ(one["model.global_batch_size"], std::to_string(p["global_batch"].get<int>()));
  EXPECT_EQ(one["model.encoder_seq_length"], "4096");
  EXPECT_EQ(one["model.virtual_pipeline_model_parallel_size"],
            p["vpp"].get<int>() > 1 ? std::to_string(p["vpp"].get<int>()) : "null");
  EXPECT_EQ(one["model.sequence_parallel"], p["sequence_parallel"].get<bool>() ? "true" : "false");
  EXPECT_EQ(one["model.optim.name"],
            p["zero"].get<int>() >= 1 ? "mcore_distributed_optim" : "fused_adam");
  EXPECT_EQ(one["trainer.precision"], "bf16");
  EXPECT_EQ(one["model.optim.lr"], "3e-4");  // the user's own overrides are kept
  fs::remove_all(dir);
}

// Megatron-Bridge's run_recipe.py takes the layout as ConfigContainer overrides after its recipe;
// its convenience options (-tp, -gb, ...) for the same fields are dropped. Before, run_recipe.py
// was "a script fulcrum does not know" and planned as data parallel only (ddp, fsdp, deepspeed).
TEST(ExportE2eTest, MegatronBridgeExportHandsTheRecipeThePlannedLayout) {
  const std::string dir = MakeTempDir("export-bridge");
  const std::string script = "scripts/training/run_recipe.py";
  const ExportedRun run =
      RunExportedCommand(dir, k70bPretrain,
                         "torchrun --nproc-per-node 8 " + script +
                             " --recipe llama2_70b_pretrain_config --dataset mock -tp 8 -gb 128 "
                             "train.train_iters=1000",
                         script);
  ASSERT_EQ(run.pick["parallel"]["framework"], "megatron") << run.argv;
  const HydraOverrides one(run);
  const json& p = run.pick["parallel"];
  EXPECT_EQ(one["model.tensor_model_parallel_size"], std::to_string(p["tp"].get<int>()));
  EXPECT_EQ(one["model.pipeline_model_parallel_size"], std::to_string(p["pp"].get<int>()));
  EXPECT_EQ(one["model.context_parallel_size"], std::to_string(p["cp"].get<int>()));
  EXPECT_EQ(one["train.micro_batch_size"], std::to_string(p["micro_batch"].get<int>()));
  EXPECT_EQ(one["train.global_batch_size"], std::to_string(p["global_batch"].get<int>()));
  EXPECT_EQ(one["dataset.seq_length"], "4096");
  EXPECT_EQ(one["ddp.use_distributed_optimizer"], p["zero"].get<int>() >= 1 ? "true" : "false");
  EXPECT_EQ(one["mixed_precision"], "bf16_mixed");
  EXPECT_EQ(one["train.train_iters"], "1000");
  for (const char* gone : {"-tp", "-gb"}) {
    EXPECT_EQ(std::count(run.script_args.begin(), run.script_args.end(), gone), 0) << run.argv;
  }
  EXPECT_NE(std::find(run.script_args.begin(), run.script_args.end(), "--recipe"),
            run.script_args.end());
  fs::remove_all(dir);
}

// An HF Trainer job under DeepSpeed, as a new user writes it: the ZeRO stage is in its config file
// (which the export cannot rewrite), so the plan searches only that stage, and the micro-batch and
// accumulation are TrainingArguments, which the export sets to the pick's. Before, the 7B plan
// picked ZeRO-1 at micro-batch 1 for a job whose config says stage 2 and whose command says
// --per_device_train_batch_size 4: the quote (memory, time) was of a layout the job never ran.
TEST(ExportE2eTest, HfTrainerDeepSpeedExportRunsThePlannedBatchAtTheConfigsStage) {
  const std::string dir = MakeTempDir("export-hf-ds");
  { std::ofstream(dir + "/ds_z2.json") << R"({"zero_optimization": {"stage": 2}})"; }
  const ExportedRun run = RunExportedCommand(
      dir,
      {"--model", "llama-2-7b", "--tokens", "2B", "--seq-len", "4096", "--global-batch", "128"},
      "torchrun --nproc-per-node 8 train.py --deepspeed " + dir +
          "/ds_z2.json --gradient_checkpointing --per_device_train_batch_size 4 "
          "--gradient_accumulation_steps 4",
      "train.py");
  ASSERT_FALSE(run.plan.is_null());
  for (const json& c : run.plan["candidates"]) {  // stage 2 wherever there is something to shard
    const bool shards = c["parallel"]["dp"].get<int>() * c["parallel"]["cp"].get<int>() > 1;
    EXPECT_EQ(c["parallel"]["zero"], shards ? 2 : 0) << c["parallel"].dump();
    // The HF Trainer recomputes whole layers (--gradient_checkpointing) or nothing.
    EXPECT_NE(c["parallel"]["recompute"], "selective") << c["parallel"].dump();
  }
  std::map<std::string, std::string> options;  // the script's options and their values
  for (size_t i = 0; i + 1 < run.script_args.size(); ++i) {
    if (run.script_args[i].rfind("--", 0) == 0)
      options[run.script_args[i]] = run.script_args[i + 1];
  }
  const std::string& argv = run.argv;
  const json& pick = run.pick;
  const json& p = pick["parallel"];
  const int mb = p["micro_batch"].get<int>(), dp = p["dp"].get<int>();
  EXPECT_EQ(options["--per_device_train_batch_size"], std::to_string(mb)) << argv;
  EXPECT_EQ(options["--gradient_accumulation_steps"],
            std::to_string(p["global_batch"].get<int>() / (mb * dp)))
      << argv;
  // The user's bare --gradient_checkpointing follows the pick's recompute: True for full, gone
  // for none (its next option, --per_device_train_batch_size, kept as the option it is).
  const bool checkpointing = std::find(run.script_args.begin(), run.script_args.end(),
                                       "--gradient_checkpointing") != run.script_args.end();
  if (p["recompute"] == "full") {
    EXPECT_EQ(options["--gradient_checkpointing"], "True") << argv;
  } else {
    EXPECT_FALSE(checkpointing) << argv;
  }
  fs::remove_all(dir);
}

// THE START TEST (issue 25): every export of every shipped example, run as the tool runs it on
// node 1 of N (rank 1; rank 0 on one node) with the tool's variables set (as in
// ExpectMultiNodeTorchrunJoinsTheNodes), a `fulcrum` on PATH that starts the argv after `--` as
// `fulcrum run` does, and `torchrun`, `accelerate`, `deepspeed` and `python` that record the argv
// they were given. The recorded launch must start one process per GPU of the node (accelerate:
// the total over the nodes) and get the node count, this node's rank and the first node's
// address. Slurm (issue 25): the whole sbatch script runs under bash with srun's variables of
// node 1 of N (SLURM_NODEID=1, SLURM_JOB_NUM_NODES, SLURM_JOB_NODELIST), a `srun` that runs its
// command, and a `scontrol show hostnames` that names 10.0.0.1 first. argv: tool, directory of
// exports, a scratch directory. Prints "files failed
// mismatched" and the first problems. Before (on the previous main): 1403 of 1722 SkyPilot and
// 1203 of 1510 dstack exports mismatched (3 GPUs given 8 processes; the 70B pretrain's
// `--nnodes $NUM_NODES` empty on every node).
const char* kStartCheck = R"PY(
import glob, os, subprocess, sys, yaml
tool, directory, work = sys.argv[1:4]
bin_dir = os.path.join(work, 'bin')
os.makedirs(bin_dir, exist_ok=True)
record = os.path.join(work, 'argv')
# `fulcrum run ... -- CMD`: CMD is started as argv (no shell), as fulcrum run starts it.
fake_fulcrum = '#!/bin/sh\nwhile [ $# -gt 0 ] && [ "$1" != "--" ]; do shift; done\nshift\nexec "$@"\n'
recorder = '#!/bin/sh\nprintf "%s\\n" "$(basename "$0")" "$@" > "$RECORD"\n'
# Slurm: srun starts its command once per node (here: this node's, after srun's options);
# `scontrol show hostnames` lists the job's hosts, 10.0.0.1 first; squeue says RUNNING.
fake_srun = '#!/bin/sh\nwhile [ "${1#-}" != "$1" ]; do shift; done\nexec "$@"\n'
fake_scontrol = ('#!/bin/sh\n[ "$1 $2" = "show hostnames" ] || exit 0\ni=1\n'
                 'while [ $i -le "$SLURM_JOB_NUM_NODES" ]; do echo 10.0.0.$i; i=$((i+1)); done\n')
fake_squeue = '#!/bin/sh\necho RUNNING\n'
for name, text in [('fulcrum', fake_fulcrum), ('srun', fake_srun), ('scontrol', fake_scontrol),
                   ('squeue', fake_squeue)] + [(n, recorder) for n in (
        'torchrun', 'accelerate', 'deepspeed', 'python', 'python3')]:
    path = os.path.join(bin_dir, name)
    with open(path, 'w') as f:
        f.write(text)
    os.chmod(path, 0o755)
# Options that take no value (everything else takes one): torch/distributed/run.py,
# accelerate/commands/launch.py, deepspeed/launcher/runner.py.
FLAGS = {'--standalone', '--no_python', '--run_path', '--multi_gpu', '--cpu', '--use_deepspeed',
         '--use_fsdp', '--same_network', '--no_ssh', '--no_local_rank', '--force_multi'}
def options(args):
    found, i = {}, 0
    while i < len(args) and args[i].startswith('-') and args[i] not in ('-m', '--module'):
        name, eq, value = args[i].partition('=')
        name = name[:2] + name[2:].replace('-', '_')
        if eq:
            found[name], i = value, i + 1
        elif name in FLAGS:
            found[name], i = True, i + 1
        else:
            found[name], i = (args[i + 1] if i + 1 < len(args) else None), i + 2
    return found
def check(argv, gpus, nodes):
    """What is wrong with the recorded launch on node rank 1 (0 on one node) of `nodes`."""
    rank = '1' if nodes > 1 else '0'
    program, args = argv[0], argv[1:]
    if program in ('python', 'python3'):
        if args[:2] == ['-m', 'torch.distributed.run']:
            program, args = 'torchrun', args[2:]
        else:
            return [] if gpus == 1 and nodes == 1 else ['one python process for %d GPU(s) x %d node(s)' % (gpus, nodes)]
    wrong = []
    def want(o, key, value, default=None):
        got = o.get(key, default)
        if str(got) != str(value):
            wrong.append('%s %s, want %s' % (key, got, value))
    if program == 'torchrun':
        o = options(args)
        want(o, '--nproc_per_node', gpus, '1')
        want(o, '--nnodes', nodes, '1')
        if nodes > 1 and '--rdzv_endpoint' not in o:
            want(o, '--node_rank', rank)
            want(o, '--master_addr', '10.0.0.1')
    elif program == 'accelerate':
        o = options(args[1:])
        want(o, '--num_processes', gpus * nodes)
        want(o, '--num_machines', nodes, '1')
        if nodes > 1:
            want(o, '--machine_rank', rank)
            want(o, '--main_process_ip', '10.0.0.1')
    elif program == 'deepspeed':
        o = options(args)
        want(o, '--num_gpus', gpus, str(gpus))
        want(o, '--num_nodes', nodes, '1')
        if nodes > 1:
            want(o, '--node_rank', rank)
            want(o, '--master_addr', '10.0.0.1')
    else:
        wrong.append('unknown launcher %r' % program)
    return wrong
files = sorted(glob.glob(directory + '/*'))
mismatched, failed = [], []
def sbatch_value(text, option):
    for line in text.splitlines():
        if line.startswith('#SBATCH --' + option):
            return int(line.rsplit('=', 1)[1].rsplit(':', 1)[-1])
    return None
# Slurm scripts that differ only in comments and `fulcrum run`'s own options (price, interval)
# run the same launch: one of each is run (every file is still read and counted).
launches = set()
for f in files:
    if tool == 'slurm':
        # The whole batch script, as sbatch runs it on the first node; srun's task on node 1
        # sees SLURM_NODEID=1 (srun(1) OUTPUT ENVIRONMENT VARIABLES).
        text = open(f).read()
        nodes, gpus = sbatch_value(text, 'nodes='), sbatch_value(text, 'gres=gpu:')
        launch = [l.split(' -- ', 1)[-1] for l in text.splitlines() if not l.startswith('# ')]
        key = (nodes, gpus, '\n'.join(launch))
        if key in launches:
            continue
        launches.add(key)
        env = {'SLURM_JOB_ID': '42', 'SLURM_JOB_NUM_NODES': str(nodes),
               'SLURM_NNODES': str(nodes), 'SLURM_NODEID': '1' if nodes > 1 else '0',
               'SLURM_JOB_NODELIST': 'n[1-%d]' % nodes, 'SLURM_GPUS_ON_NODE': str(gpus)}
        env.update({'PATH': bin_dir + ':/usr/bin:/bin', 'RECORD': record, 'HOME': work})
        if os.path.exists(record):
            os.remove(record)
        run = subprocess.run(['/bin/bash', f], env=env, cwd=work, capture_output=True,
                             text=True, timeout=30)
        if run.returncode != 0 or not os.path.exists(record):
            failed.append('%s: exit %d: %s' % (f, run.returncode, run.stderr.strip()[-300:]))
            continue
        wrong = check(open(record).read().splitlines(), gpus, nodes)
        if wrong:
            mismatched.append('%s (%d GPU(s) x %d node(s)): %s' % (f, gpus, nodes,
                                                                  '; '.join(wrong)))
        continue
    d = yaml.safe_load(open(f))
    if tool == 'skypilot':
        nodes, gpus = d['num_nodes'], int(d['resources']['accelerators'].rsplit(':', 1)[1])
        script = d['setup'] + d['run']
        env = {'SKYPILOT_NUM_NODES': str(nodes), 'SKYPILOT_NUM_GPUS_PER_NODE': str(gpus),
               'SKYPILOT_NODE_RANK': '1' if nodes > 1 else '0',
               'SKYPILOT_NODE_IPS': '\n'.join('10.0.0.%d' % (i + 1) for i in range(nodes))}
    else:
        nodes, gpus = d['nodes'], int(d['resources']['gpu'].rsplit(':', 1)[1])
        script = '\n'.join(d['commands'])
        env = {'DSTACK_NODES_NUM': str(nodes), 'DSTACK_GPUS_PER_NODE': str(gpus),
               'DSTACK_NODE_RANK': '1' if nodes > 1 else '0', 'DSTACK_MASTER_NODE_IP': '10.0.0.1'}
    env.update({'PATH': bin_dir + ':/usr/bin:/bin', 'RECORD': record, 'HOME': work})
    if os.path.exists(record):
        os.remove(record)
    run = subprocess.run(['/bin/bash', '-c', 'set -e\n' + script], env=env, cwd=work,
                         capture_output=True, text=True, timeout=30)
    if run.returncode != 0 or not os.path.exists(record):
        failed.append('%s: exit %d: %s' % (f, run.returncode, run.stderr.strip()[-300:]))
        continue
    wrong = check(open(record).read().splitlines(), gpus, nodes)
    if wrong:
        mismatched.append('%s (%d GPU(s) x %d node(s)): %s' % (f, gpus, nodes, '; '.join(wrong)))
print(len(files), len(failed), len(mismatched))
for line in (failed + mismatched)[:5]:
    print(line)
)PY";

class ExportStartTest : public ::testing::TestWithParam<std::pair<std::string, std::string>> {};

TEST_P(ExportStartTest, EveryExportStartsTheNodesProcesses) {
  const auto& [example, tool] = GetParam();
  const std::string dir = MakeTempDir("export-start-" + tool);
  fs::create_directories(dir + "/tasks");
  fs::create_directories(dir + "/work");
  RunOutput r = RunFulcrum(
      {"--catalog", SourcePath("catalog"), "plan", SourcePath("examples/" + example + ".yaml"),
       "--export", tool, dir + "/tasks/task.yaml", "--pick", "all", "--fulcrum-install", "false",
       "--json"},
      Isolated());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const size_t written = json::parse(r.out)["export"]["written"].size();
  ASSERT_GT(written, 0u);
  RunOutput check = RunProgram(kPython, {"-c", kStartCheck, tool, dir + "/tasks", dir + "/work"});
  ASSERT_EQ(check.exit_code, 0) << check.err;
  EXPECT_EQ(check.out.substr(0, check.out.find('\n')), std::to_string(written) + " 0 0")
      << check.out;
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(
    ShippedExamples, ExportStartTest,
    ::testing::Values(std::pair<std::string, std::string>{"llama-7b-finetune", "skypilot"},
                      std::pair<std::string, std::string>{"llama-7b-finetune", "dstack"},
                      std::pair<std::string, std::string>{"llama-70b-pretrain", "skypilot"},
                      std::pair<std::string, std::string>{"llama-70b-pretrain", "dstack"},
                      std::pair<std::string, std::string>{"llama-8b-lora", "skypilot"},
                      std::pair<std::string, std::string>{"llama-8b-lora", "dstack"},
                      std::pair<std::string, std::string>{"resnet50", "skypilot"},
                      std::pair<std::string, std::string>{"resnet50", "dstack"},
                      std::pair<std::string, std::string>{"llama-7b-finetune", "slurm"},
                      std::pair<std::string, std::string>{"llama-70b-pretrain", "slurm"},
                      std::pair<std::string, std::string>{"llama-8b-lora", "slurm"},
                      std::pair<std::string, std::string>{"resnet50", "slurm"}),
    [](const auto& info) {
      std::string name = info.param.first + "_" + info.param.second;
      for (char& c : name) {
        if (c == '-') c = '_';
      }
      return name;
    });

TEST(ExportE2eTest, RefusesWithoutAWayToInstallFulcrum) {
  const std::string dir = MakeTempDir("export-refuse");
  RunOutput r = RunFulcrum({"--catalog", SourcePath("catalog"), "plan", "--model", "llama-2-7b",
                            "--tokens", "1B", "--export", "skypilot", dir + "/task.yaml"},
                           Isolated());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--fulcrum-install"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir + "/task.yaml"));
  fs::remove_all(dir);
}

TEST(ExportE2eTest, APickTheToolCannotLaunchIsAnInputError) {
  // hyperstack is neither a SkyPilot cloud nor a dstack backend.
  const std::string dir = MakeTempDir("export-pick");
  RunOutput r = RunFulcrum({"--catalog", SourcePath("catalog"), "plan", "--model", "llama-2-7b",
                            "--tokens", "1B", "--providers", "hyperstack", "--export", "dstack",
                            dir + "/task.yml", "--fulcrum-install", "false"},
                           Isolated());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("provider hyperstack: not a dstack backend"), std::string::npos) << r.err;
  r = RunFulcrum(
      {"--catalog", SourcePath("catalog"), "plan", "--model", "llama-2-7b", "--tokens", "1B",
       "--export", "dstack", dir + "/x", "--pick", "100000", "--fulcrum-install", "false"},
      Isolated());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--pick"), std::string::npos);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace fulcrum::testing
