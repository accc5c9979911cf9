// Which frameworks a job runs, read from its command as an ML engineer would read it.
#include "plan/frameworks.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <unistd.h>

#include <gtest/gtest.h>

#include "workload/published_shapes_test_util.h"

namespace fulcrum::plan {
namespace {

using workload::Framework;
using workload::FrameworkBit;

constexpr workload::FrameworkMask kMegatron = FrameworkBit(Framework::kMegatron);
constexpr workload::FrameworkMask kFsdp = FrameworkBit(Framework::kFsdp);
constexpr workload::FrameworkMask kDeepSpeed = FrameworkBit(Framework::kDeepSpeed);
constexpr workload::FrameworkMask kDdp = FrameworkBit(Framework::kDdp);
constexpr workload::FrameworkMask kMegatronFsdp = FrameworkBit(Framework::kMegatronFsdp);
constexpr workload::FrameworkMask kMegatronDeepSpeed = FrameworkBit(Framework::kMegatronDeepSpeed);

workload::FrameworkMask Of(const std::string& command, const std::string& dir = "") {
  return FrameworksOfCommand(command, dir).allowed;
}

TEST(FrameworksTest, AnUnknownScriptUnderALauncherRunsDataParallelOnly) {
  for (const char* command :
       {"torchrun --nproc-per-node 8 train.py --config finetune.yaml",
        "python -m torch.distributed.run --nproc_per_node=8 train.py",
        "NCCL_DEBUG=INFO torchrun --standalone --nproc_per_node 8 /code/train.py",
        "deepspeed_is_not_here=1 torchrun --nnodes $NUM_NODES --node_rank $NODE_RANK train.py"}) {
    const JobFrameworks j = FrameworksOfCommand(command, "");
    EXPECT_EQ(j.allowed, workload::kDataParallelFrameworks) << command;
    EXPECT_TRUE(j.from_command) << command;
    EXPECT_NE(j.reason.find("train.py"), std::string::npos) << j.reason;
  }
}

TEST(FrameworksTest, MegatronAndNemoEntryPointsRunMegatron) {
  EXPECT_EQ(Of("torchrun --nproc_per_node 8 pretrain_gpt.py --tensor-model-parallel-size 4"),
            kMegatron);
  EXPECT_EQ(Of("torchrun $DISTRIBUTED_ARGS /workspace/Megatron-LM/pretrain_mamba.py"), kMegatron);
  EXPECT_EQ(Of("python examples/nlp/language_modeling/megatron_gpt_pretraining.py"), kMegatron);
  EXPECT_EQ(Of("nemo llm pretrain --factory llama3_8b"), kMegatron);
  // Megatron-DeepSpeed: a Megatron entry point under the deepspeed launcher.
  EXPECT_EQ(Of("deepspeed --num_gpus 8 pretrain_gpt.py --deepspeed_config ds.json"),
            kMegatronDeepSpeed);
  EXPECT_EQ(Of("torchrun --nproc_per_node 8 pretrain_gpt.py --deepspeed --zero-stage 1"),
            kMegatronDeepSpeed);
  // Megatron-LM's own FSDP (issue 31: these were refused).
  EXPECT_EQ(Of("torchrun --nproc_per_node 8 pretrain_gpt.py --use-megatron-fsdp "
               "--data-parallel-sharding-strategy optim_grads_params"),
            kMegatronFsdp);
  EXPECT_EQ(Of("torchrun --nproc_per_node 8 pretrain_gpt.py --use-torch-fsdp2"), kMegatronFsdp);
}

TEST(FrameworksTest, TorchtitanRunsFsdpWithModelParallelism) {
  EXPECT_EQ(Of("torchrun --nproc_per_node=8 -m torchtitan.train --job.config_file llama3_8b.toml"),
            kFsdp);
  EXPECT_EQ(Of("torchrun --nproc_per_node 8 torchtitan/train.py"), kFsdp);
  EXPECT_EQ(Of("torchrun --nproc_per_node 8 train.py --job.config_file ./train_configs/x.toml"),
            kFsdp);
}

TEST(FrameworksTest, TheHfTrainersArgumentsNameTheFramework) {
  EXPECT_EQ(Of("torchrun --nproc_per_node 8 run_clm.py --fsdp 'full_shard auto_wrap'"), kFsdp);
  EXPECT_EQ(Of("torchrun --nproc_per_node 8 run_clm.py --deepspeed ds_config_zero3.json"),
            kDeepSpeed);
  EXPECT_EQ(Of("deepspeed train.py --deepspeed_config ds.json"), kDeepSpeed);
  // None of them runs a pipeline or tensor parallelism of its own: data parallel only (the HF
  // Trainer's --fsdp full_shard was planned as pp 8 under fsdp), and so are Lightning's
  // strategies; torchtitan's FSDP2 keeps its model parallelism.
  for (const char* command :
       {"torchrun run_clm.py --fsdp full_shard",
        "torchrun run_clm.py --deepspeed ds_config_zero3.json",
        "deepspeed train.py --deepspeed_config ds.json", "python train.py --trainer.strategy fsdp",
        "python train.py --strategy deepspeed_stage_2"}) {
    EXPECT_TRUE(FrameworksOfCommand(command, "").data_parallel_only) << command;
  }
  EXPECT_FALSE(FrameworksOfCommand("torchrun -m torchtitan.train --job.config_file x.toml", "")
                   .data_parallel_only);
}

TEST(FrameworksTest, AccelerateReadsItsFlagsAndItsConfigFile) {
  EXPECT_EQ(Of("accelerate launch --use_fsdp train.py"), kFsdp);
  EXPECT_EQ(Of("accelerate launch --use_deepspeed --num_processes 8 train.py"), kDeepSpeed);
  EXPECT_EQ(Of("accelerate launch --multi_gpu train.py"), kDdp);
  EXPECT_EQ(Of("accelerate launch train.py"), workload::kDataParallelFrameworks);
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("fulcrum_frameworks_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "fsdp.yaml") << "compute_environment: LOCAL_MACHINE\n"
                                      "distributed_type: FSDP\nnum_processes: 8\n";
  std::ofstream(dir / "ds.yaml") << "distributed_type: 'DEEPSPEED'\n";
  EXPECT_EQ(Of("accelerate launch --config_file fsdp.yaml train.py", dir.string()), kFsdp);
  EXPECT_EQ(Of("accelerate launch --config_file=" + (dir / "ds.yaml").string() + " train.py"),
            kDeepSpeed);
  // A config that is not there: the launcher's data-parallel frameworks.
  EXPECT_EQ(Of("accelerate launch --config_file missing.yaml train.py", dir.string()),
            workload::kDataParallelFrameworks);
  std::filesystem::remove_all(dir);
}

TEST(FrameworksTest, LightningsStrategyNamesTheFramework) {
  EXPECT_EQ(Of("python train.py fit --trainer.strategy fsdp"), kFsdp);
  EXPECT_EQ(Of("lightning run model --strategy=deepspeed_stage_3 train.py"), kDeepSpeed);
  EXPECT_EQ(Of("lightning run model --strategy ddp train.py"), kDdp);
}

TEST(FrameworksTest, WithoutALauncherFulcrumKnowsEveryFrameworkIsSearched) {
  EXPECT_EQ(Of("bash run.sh"), workload::kEveryFramework);
  EXPECT_FALSE(FrameworksOfCommand("bash run.sh", "").from_command);
  EXPECT_EQ(Of("python train.py --epochs 3"), workload::kEveryFramework);
}

TEST(FrameworksTest, TheSpecsFrameworkWinsOverTheCommandAndNoCommandSearchesEverything) {
  PlanSpec spec;
  EXPECT_EQ(JobFrameworksOf(spec).allowed, workload::kEveryFramework);
  EXPECT_TRUE(JobFrameworksOf(spec).reason.empty());
  spec.command = "torchrun --nproc-per-node 8 train.py";
  EXPECT_EQ(JobFrameworksOf(spec).allowed, workload::kDataParallelFrameworks);
  spec.constraints.frameworks = kMegatron | kFsdp;
  EXPECT_EQ(JobFrameworksOf(spec).allowed, kMegatron | kFsdp);
  EXPECT_FALSE(JobFrameworksOf(spec).from_command);
}

}  // namespace

// Each Megatron-Core launcher's way of taking the layout: Megatron-LM's entry points their
// options, NeMo's Hydra scripts and Megatron-Bridge's run_recipe.py Hydra overrides; Megatron-
// DeepSpeed (a DeepSpeed config), `nemo llm` and unknown scripts none. A spec that names the
// framework keeps what the command says about its arguments.
TEST(FrameworksTest, EachMegatronLauncherTakesTheLayoutItsOwnWay) {
  const auto arguments = [](const char* command) {
    return FrameworksOfCommand(command, "").layout_arguments;
  };
  EXPECT_EQ(arguments("torchrun pretrain_gpt.py --bf16"), LayoutArguments::kMegatronLm);
  EXPECT_EQ(arguments("python examples/nlp/megatron_gpt_pretraining.py"), LayoutArguments::kNemo);
  EXPECT_EQ(arguments("torchrun --nproc-per-node 8 scripts/training/run_recipe.py --recipe "
                      "llama3_8b_pretrain_config"),
            LayoutArguments::kMegatronBridge);
  EXPECT_EQ(FrameworksOfCommand("torchrun scripts/training/run_recipe.py --recipe x", "").allowed,
            kMegatron);
  EXPECT_EQ(
      FrameworksOfCommand(
          "torchrun scripts/training/run_recipe.py --recipe x ++ddp.use_megatron_fsdp=True", "")
          .allowed,
      kMegatronFsdp);
  EXPECT_EQ(arguments("torchrun pretrain_gpt.py --use-megatron-fsdp"),
            LayoutArguments::kMegatronLm);
  EXPECT_EQ(arguments("torchrun pretrain_gpt.py --use-torch-fsdp2"),
            LayoutArguments::kMegatronLmTorchFsdp2);
  EXPECT_EQ(arguments("nemo llm pretrain --factory llama3_8b"), LayoutArguments::kNone);
  EXPECT_EQ(arguments("deepspeed pretrain_gpt.py --deepspeed"), LayoutArguments::kNone);
  EXPECT_EQ(arguments("torchrun train.py"), LayoutArguments::kNone);
  EXPECT_EQ(arguments("torchrun run_recipe.py"), LayoutArguments::kNone);  // not Bridge's
  PlanSpec spec;
  spec.command = "torchrun pretrain_gpt.py";
  spec.constraints.frameworks = kMegatron;
  EXPECT_EQ(JobFrameworksOf(spec).layout_arguments, LayoutArguments::kMegatronLm);
}

// Llama 3 405B as its paper ran it (126 layers on 16 stages, one layer fewer on the first and
// last, 8 virtual stages), with full recompute and FP8 weights, in Megatron-LM's arguments.
TEST(FrameworksTest, MegatronLayoutOptionsSpellThePlannedLayout) {
  workload::Model m = workload::testing::Llama3_405b();
  workload::Training t = workload::testing::Llama3_405bTraining();
  t.recompute = workload::Recompute::kFull;
  t.precision = workload::Precision::kFp8;
  t.fp8_params = true;
  std::map<std::string, std::string> set;
  std::set<std::string> absent;
  for (const ScriptOption& o : MegatronLayoutOptions(m, t)) {
    if (o.absent) {
      absent.insert(o.name);
    } else {
      set[o.name] = o.value;
    }
  }
  const std::map<std::string, std::string> expected = {
      {"--tensor-model-parallel-size", "8"},
      {"--pipeline-model-parallel-size", "16"},
      {"--num-virtual-stages-per-pipeline-rank", "8"},
      {"--decoder-first-pipeline-num-layers", "7"},
      {"--decoder-last-pipeline-num-layers", "7"},
      {"--context-parallel-size", "1"},
      {"--micro-batch-size", "1"},
      {"--global-batch-size", "2048"},
      {"--seq-length", "8192"},
      {"--sequence-parallel", ""},
      {"--use-distributed-optimizer", ""},
      {"--overlap-grad-reduce", ""},
      {"--overlap-param-gather", ""},
      {"--recompute-granularity", "full"},
      {"--recompute-method", "uniform"},
      {"--recompute-num-layers", "1"},
      {"--bf16", ""},
      {"--fp8-format", "hybrid"},
      {"--fp8-param-gather", ""}};
  EXPECT_EQ(set, expected);
  for (const char* gone :
       {"--num-layers-per-virtual-pipeline-stage", "--recompute-activations", "--fp16"}) {
    EXPECT_EQ(absent.count(gone), 1u) << gone;
  }
  // A dense model on even stages without recompute: the uneven-stage and recompute options go.
  t.first_stage_layers = t.last_stage_layers = 0;
  m.layers = 128;
  t.recompute = workload::Recompute::kNone;
  absent.clear();
  for (const ScriptOption& o : MegatronLayoutOptions(m, t)) {
    if (o.absent) absent.insert(o.name);
  }
  for (const char* gone : {"--decoder-first-pipeline-num-layers", "--recompute-granularity",
                           "--recompute-method", "--recompute-num-layers"}) {
    EXPECT_EQ(absent.count(gone), 1u) << gone;
  }
}

namespace {

// The options' values by name (set) and the names that must be absent.
std::pair<std::map<std::string, std::string>, std::set<std::string>> Spelled(
    const std::vector<ScriptOption>& options) {
  std::map<std::string, std::string> set;
  std::set<std::string> absent;
  for (const ScriptOption& o : options) {
    if (o.absent) {
      absent.insert(o.name);
    } else {
      set[o.name] = o.value;
    }
  }
  return {set, absent};
}

}  // namespace

// The 405B layout of MegatronLayoutOptionsSpellThePlannedLayout as NeMo's Hydra overrides
// (megatron_gpt_config.yaml's keys; trainer.devices x trainer.num_nodes = the processes).
TEST(FrameworksTest, NemoLayoutOptionsSpellThePlannedLayoutAsHydraOverrides) {
  workload::Model m = workload::testing::Llama3_405b();
  workload::Training t = workload::testing::Llama3_405bTraining();
  t.recompute = workload::Recompute::kFull;
  t.precision = workload::Precision::kFp8;
  t.fp8_params = true;
  const std::vector<ScriptOption> options = NemoLayoutOptions(m, t, 1024, 8);
  for (const ScriptOption& o : options) EXPECT_TRUE(o.hydra) << o.name;
  const std::map<std::string, std::string> expected = {
      {"trainer.devices", "8"},
      {"trainer.num_nodes", "1024"},
      {"model.tensor_model_parallel_size", "8"},
      {"model.pipeline_model_parallel_size", "16"},
      {"model.virtual_pipeline_model_parallel_size", "8"},
      {"model.num_layers_in_first_pipeline_stage", "7"},
      {"model.num_layers_in_last_pipeline_stage", "7"},
      {"model.context_parallel_size", "1"},
      {"model.sequence_parallel", "true"},
      {"model.activations_checkpoint_granularity", "full"},
      {"model.activations_checkpoint_method", "uniform"},
      {"model.activations_checkpoint_num_layers", "1"},
      {"model.micro_batch_size", "1"},
      {"model.global_batch_size", "2048"},
      {"model.encoder_seq_length", "8192"},
      {"model.optim.name", "mcore_distributed_optim"},
      {"trainer.precision", "bf16"},
      {"model.fp8", "true"},
      {"model.fp8_hybrid", "true"},
      {"model.fp8_params", "true"}};
  EXPECT_EQ(Spelled(options).first, expected);
  // Even stages, no recompute, bf16, ZeRO 0: nulls and fused_adam.
  t.first_stage_layers = t.last_stage_layers = 0;
  m.layers = 128;
  t.vpp = 1;
  t.recompute = workload::Recompute::kNone;
  t.precision = workload::Precision::kBf16Mixed;
  t.zero_stage = 0;
  const auto set = Spelled(NemoLayoutOptions(m, t, 2, 8)).first;
  for (const char* key :
       {"model.virtual_pipeline_model_parallel_size", "model.num_layers_in_first_pipeline_stage",
        "model.activations_checkpoint_granularity", "model.activations_checkpoint_num_layers"}) {
    EXPECT_EQ(set.at(key), "null") << key;
  }
  EXPECT_EQ(set.at("model.optim.name"), "fused_adam");
  EXPECT_EQ(set.at("model.fp8"), "false");
  EXPECT_EQ(set.count("model.fp8_params"), 0u);
}

// The same layout as Megatron-Bridge's ConfigContainer overrides (docs/megatron-lm-to-megatron-
// bridge.md's mapping), with run_recipe.py's convenience options removed.
TEST(FrameworksTest, MegatronBridgeLayoutOptionsSpellThePlannedLayout) {
  workload::Model m = workload::testing::Llama3_405b();
  workload::Training t = workload::testing::Llama3_405bTraining();
  t.recompute = workload::Recompute::kSelective;
  const auto [set, absent] = Spelled(MegatronBridgeLayoutOptions(m, t));
  const std::map<std::string, std::string> expected = {
      {"model.tensor_model_parallel_size", "8"},
      {"model.pipeline_model_parallel_size", "16"},
      {"model.virtual_pipeline_model_parallel_size", "8"},
      {"model.num_layers_in_first_pipeline_stage", "7"},
      {"model.num_layers_in_last_pipeline_stage", "7"},
      {"model.context_parallel_size", "1"},
      {"model.sequence_parallel", "true"},
      {"model.recompute_granularity", "selective"},
      {"model.recompute_method", "null"},
      {"model.recompute_num_layers", "null"},
      {"train.micro_batch_size", "1"},
      {"train.global_batch_size", "2048"},
      {"dataset.seq_length", "8192"},
      {"ddp.use_distributed_optimizer", "true"},
      {"optimizer.use_distributed_optimizer", "true"},
      {"mixed_precision", "bf16_mixed"}};
  EXPECT_EQ(set, expected);
  for (const char* gone : {"-tp", "--tensor_model_parallel_size", "-gb", "--seq_length"}) {
    EXPECT_EQ(absent.count(gone), 1u) << gone;
  }
}

// A megatron-fsdp layout as Megatron-LM's arguments: Megatron-FSDP with the ZeRO stage as its
// sharding strategy (the distributed optimizer it sets itself); PyTorch FSDP2 keeps the user's
// --use-torch-fsdp2, gets no strategy and loses --use-distributed-optimizer, which it refuses; a
// megatron layout drops both FSDP flags.
TEST(FrameworksTest, MegatronFsdpLayoutsNameTheirShardingStrategy) {
  const workload::Model m = workload::testing::Llama3_405b();
  workload::Training t = workload::testing::Llama3_405bTraining();
  t.framework = workload::Framework::kMegatronFsdp;
  t.pp = 1, t.vpp = 1, t.first_stage_layers = t.last_stage_layers = 0;
  t.zero_stage = 3;
  auto [set, absent] = Spelled(MegatronLayoutOptions(m, t));
  EXPECT_EQ(set.at("--data-parallel-sharding-strategy"), "optim_grads_params");
  EXPECT_EQ(set.count("--use-megatron-fsdp"), 1u);
  EXPECT_EQ(set.count("--use-distributed-optimizer") + absent.count("--use-distributed-optimizer"),
            0u);  // Megatron-FSDP sets it itself: the user's choice stands
  // The overlaps the estimate assumes, which Megatron-LM runs only when asked.
  EXPECT_EQ(set.count("--overlap-grad-reduce"), 1u);
  EXPECT_EQ(set.count("--overlap-param-gather"), 1u);
  t.zero_stage = 2;
  EXPECT_EQ(Spelled(MegatronLayoutOptions(m, t)).first.at("--data-parallel-sharding-strategy"),
            "optim_grads");
  std::tie(set, absent) = Spelled(MegatronLayoutOptions(m, t, true));
  EXPECT_EQ(set.count("--data-parallel-sharding-strategy"), 0u);
  EXPECT_EQ(absent.count("--use-megatron-fsdp"), 1u);
  EXPECT_EQ(absent.count("--use-torch-fsdp2"), 0u);
  EXPECT_EQ(absent.count("--use-distributed-optimizer"), 1u);
  // PyTorch FSDP2 overlaps by itself, and Megatron-LM refuses --overlap-param-gather without the
  // distributed optimizer or Megatron-FSDP.
  EXPECT_EQ(set.count("--overlap-param-gather"), 0u);
  t.framework = workload::Framework::kMegatron;
  t.zero_stage = 1;
  std::tie(set, absent) = Spelled(MegatronLayoutOptions(m, t));
  EXPECT_EQ(absent.count("--use-megatron-fsdp"), 1u);
  EXPECT_EQ(absent.count("--use-torch-fsdp2"), 1u);
  EXPECT_EQ(set.count("--use-distributed-optimizer"), 1u);
}

// What a command's own files and options fix (its DeepSpeed config, HF's --fsdp, an accelerate
// config) and HF TrainingArguments' batch options, which the export sets.
TEST(FrameworksTest, TheCommandsOwnConfigFixesTheZeroStageAndMicroBatch) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("fulcrum-fixes-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "z2.json") << R"({"zero_optimization": {"stage": 2},
      "train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": "auto"})";
  std::ofstream(dir / "z1_overlap.json")
      << R"({"zero_optimization": {"stage": 1, "overlap_comm": true}})";
  std::ofstream(dir / "auto.json")
      << R"({"zero_optimization": {"stage": 3}, "train_micro_batch_size_per_gpu": "auto"})";
  std::ofstream(dir / "fsdp.yaml") << "distributed_type: FSDP\nfsdp_config:\n"
                                      "  fsdp_sharding_strategy: SHARD_GRAD_OP\n";
  std::ofstream(dir / "fsdp2.yaml") << "distributed_type: FSDP\nfsdp_config:\n"
                                       "  fsdp_version: 2\n  fsdp_reshard_after_forward: true\n";
  std::ofstream(dir / "ds.yaml") << "distributed_type: DEEPSPEED\ndeepspeed_config:\n"
                                    "  zero_stage: 1\n";
  std::ofstream(dir / "ds_file.yaml") << "distributed_type: DEEPSPEED\ndeepspeed_config:\n"
                                         "  deepspeed_config_file: 'z2.json'\n";
  const std::string base = dir.string();
  JobFrameworks jf = FrameworksOfCommand("deepspeed train.py --deepspeed z2.json", base);
  EXPECT_EQ(jf.zero_stage, 2);
  EXPECT_EQ(jf.micro_batch, 4);
  EXPECT_NE(jf.fixed_by.find("z2.json"), std::string::npos) << jf.fixed_by;
  EXPECT_EQ(jf.layout_arguments, LayoutArguments::kNone);
  // overlap_comm as the config sets it; unset, DeepSpeed's default below stage 3 (off).
  EXPECT_FALSE(jf.overlap_comm);
  EXPECT_TRUE(jf.overlap_comm_from.empty());
  jf = FrameworksOfCommand("deepspeed train.py --deepspeed z1_overlap.json", base);
  EXPECT_EQ(jf.zero_stage, 1);
  EXPECT_TRUE(jf.overlap_comm);
  EXPECT_EQ(jf.overlap_comm_from, "z1_overlap.json");
  jf = FrameworksOfCommand(
      "torchrun train.py --deepspeed auto.json --per_device_train_batch_size 8", base);
  EXPECT_EQ(jf.zero_stage, 3);
  EXPECT_EQ(jf.micro_batch, 0);  // "auto": HF fills it from its own argument, which is set
  EXPECT_EQ(jf.layout_arguments, LayoutArguments::kHfTrainer);
  jf = FrameworksOfCommand("torchrun train.py --fsdp \"shard_grad_op auto_wrap\"", base);
  EXPECT_EQ(jf.zero_stage, 2);
  EXPECT_EQ(FrameworksOfCommand("torchrun train.py --fsdp full_shard", base).zero_stage, 3);
  EXPECT_EQ(FrameworksOfCommand("torchrun train.py --fsdp hybrid_shard", base).zero_stage, -1);
  EXPECT_EQ(FrameworksOfCommand("accelerate launch --config_file fsdp.yaml t.py", base).zero_stage,
            2);
  EXPECT_EQ(FrameworksOfCommand("accelerate launch --config_file fsdp2.yaml t.py", base).zero_stage,
            3);
  EXPECT_EQ(FrameworksOfCommand("accelerate launch --config_file ds.yaml t.py", base).zero_stage,
            1);
  jf = FrameworksOfCommand("accelerate launch --config_file ds_file.yaml t.py", base);
  EXPECT_EQ(jf.zero_stage, 2);
  EXPECT_EQ(jf.micro_batch, 4);
  // A file that is not there fixes nothing; nor does a command without these.
  EXPECT_EQ(FrameworksOfCommand("deepspeed t.py --deepspeed missing.json", base).zero_stage, -1);
  // A script's own --gradient_accumulation_steps is not HF's: nothing is appended to it.
  EXPECT_EQ(FrameworksOfCommand("deepspeed train.py --gradient_accumulation_steps 4", base)
                .layout_arguments,
            LayoutArguments::kNone);
  jf = FrameworksOfCommand("torchrun train.py --lr 1", base);
  EXPECT_EQ(jf.zero_stage, -1);
  EXPECT_TRUE(jf.fixed_by.empty());
  // Megatron-LM's own arguments stay its dialect.
  EXPECT_EQ(FrameworksOfCommand("torchrun pretrain_gpt.py --gradient-accumulation-steps 2", base)
                .layout_arguments,
            LayoutArguments::kMegatronLm);
  std::filesystem::remove_all(dir);
}

// accelerate's FSDP1 backward prefetching as its launch runs it (huggingface/accelerate@16cb6eb8):
// the plugin's default NO_PREFETCH where neither the config nor the command line sets
// fsdp_backward_prefetch (the older docs' fsdp_backward_prefetch_policy is read by nothing), the
// command line over the config, and nothing read under FSDP2 or another framework.
TEST(FrameworksTest, AccelerateFsdp1RunsWithoutBackwardPrefetchUnlessItsConfigSaysSo) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("fulcrum-prefetch-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "plain.yaml") << "distributed_type: FSDP\nfsdp_config:\n"
                                       "  fsdp_sharding_strategy: FULL_SHARD\n";
  std::ofstream(dir / "old.yaml") << "distributed_type: FSDP\nfsdp_config:\n"
                                     "  fsdp_backward_prefetch_policy: BACKWARD_PRE\n";
  std::ofstream(dir / "pre.yaml") << "distributed_type: FSDP\nfsdp_config:\n"
                                     "  fsdp_backward_prefetch: BACKWARD_PRE\n";
  std::ofstream(dir / "post.yaml") << "distributed_type: FSDP\nfsdp_config:\n"
                                      "  backward_prefetch: 'BACKWARD_POST'\n";
  std::ofstream(dir / "v2.yaml") << "distributed_type: FSDP\nfsdp_config:\n  fsdp_version: 2\n";
  std::ofstream(dir / "ddp.yaml") << "distributed_type: MULTI_GPU\n";
  const std::string base = dir.string();
  const auto of = [&](const std::string& command) { return FrameworksOfCommand(command, base); };
  JobFrameworks jf = of("accelerate launch --config_file plain.yaml train.py");
  EXPECT_EQ(jf.backward_prefetch, workload::BackwardPrefetch::kNone);
  EXPECT_NE(jf.backward_prefetch_from.find("plain.yaml"), std::string::npos);
  EXPECT_EQ(of("accelerate launch --config_file old.yaml train.py").backward_prefetch,
            workload::BackwardPrefetch::kNone);
  jf = of("accelerate launch --config_file pre.yaml train.py");
  EXPECT_EQ(jf.backward_prefetch, workload::BackwardPrefetch::kPre);
  EXPECT_EQ(jf.backward_prefetch_from, "pre.yaml: fsdp_backward_prefetch BACKWARD_PRE");
  EXPECT_EQ(of("accelerate launch --config_file post.yaml train.py").backward_prefetch,
            workload::BackwardPrefetch::kPost);
  jf = of("accelerate launch --config_file post.yaml --fsdp_backward_prefetch NO_PREFETCH t.py");
  EXPECT_EQ(jf.backward_prefetch, workload::BackwardPrefetch::kNone);
  EXPECT_EQ(jf.backward_prefetch_from, "--fsdp_backward_prefetch NO_PREFETCH");
  EXPECT_EQ(of("accelerate launch --use_fsdp train.py").backward_prefetch,
            workload::BackwardPrefetch::kNone);
  EXPECT_EQ(of("accelerate launch --use_fsdp --fsdp_backward_prefetch backward_pre train.py")
                .backward_prefetch,
            workload::BackwardPrefetch::kPre);
  // The HF Trainer: --fsdp_config's backward_prefetch (keys with or without the fsdp_ prefix),
  // NO_PREFETCH under an explicit version 1, nothing read under version 2 or where neither is set
  // (the version is the installed transformers').
  std::ofstream(dir / "hf_v1.json")
      << R"({"fsdp_version": 1, "transformer_layer_cls_to_wrap": "X"})";
  std::ofstream(dir / "hf_post.json") << R"({"backward_prefetch": "backward_post"})";
  std::ofstream(dir / "hf_v2.json") << R"({"version": 2, "backward_prefetch": "NO_PREFETCH"})";
  std::ofstream(dir / "hf_plain.json") << R"({"min_num_params": 0})";
  jf = of("torchrun train.py --fsdp \"full_shard auto_wrap\" --fsdp_config hf_v1.json");
  EXPECT_EQ(jf.backward_prefetch, workload::BackwardPrefetch::kNone);
  EXPECT_NE(jf.backward_prefetch_from.find("hf_v1.json sets version 1"), std::string::npos);
  jf = of("torchrun train.py --fsdp full_shard --fsdp_config hf_post.json");
  EXPECT_EQ(jf.backward_prefetch, workload::BackwardPrefetch::kPost);
  EXPECT_EQ(jf.backward_prefetch_from, "hf_post.json: backward_prefetch backward_post");
  for (const char* command : {"torchrun train.py --fsdp full_shard --fsdp_config hf_v2.json",
                              "torchrun train.py --fsdp full_shard --fsdp_config hf_plain.json",
                              "torchrun train.py --fsdp_config hf_v1.json",
                              "accelerate launch --config_file v2.yaml train.py",
                              "accelerate launch --use_fsdp --fsdp_version 2 train.py",
                              "accelerate launch --config_file ddp.yaml train.py",
                              "torchrun train.py --fsdp full_shard"}) {
    jf = of(command);
    EXPECT_EQ(jf.backward_prefetch, workload::BackwardPrefetch::kPre) << command;
    EXPECT_TRUE(jf.backward_prefetch_from.empty()) << command;
  }
  std::filesystem::remove_all(dir);
}

// HF TrainingArguments' batch options of a layout: the micro-batch and the global batch over the
// micro-batches of the data-parallel ranks.
TEST(FrameworksTest, HfTrainerLayoutOptionsSpellTheMicroBatchAccumulationAndCheckpointing) {
  workload::Training t;
  t.dp = 8;
  t.micro_batch = 2;
  t.global_batch = 128;
  const auto [set, absent] = Spelled(HfTrainerLayoutOptions(t));
  EXPECT_EQ(set.at("--per_device_train_batch_size"), "2");
  EXPECT_EQ(set.at("--gradient_accumulation_steps"), "8");
  // No recompute: no --gradient_checkpointing; full recompute: --gradient_checkpointing True.
  EXPECT_EQ(set.count("--gradient_checkpointing"), 0u);
  EXPECT_EQ(absent.count("--gradient_checkpointing"), 1u);
  t.recompute = workload::Recompute::kFull;
  EXPECT_EQ(Spelled(HfTrainerLayoutOptions(t)).first.at("--gradient_checkpointing"), "True");
}

// A Megatron-LM command's own recompute modules and precision-aware optimizer moments are read
// (Megatron-LM's spellings: a space-separated list, or one word after '='); the moments need the
// distributed optimizer, so they fix ZeRO stage 1, and the export keeps it even where one rank
// leaves nothing to shard.
TEST(FrameworksTest, AMegatronCommandsRecomputeModulesAndMomentsAreItsOwn) {
  JobFrameworks jf = FrameworksOfCommand(
      "torchrun pretrain_gpt.py --recompute-granularity selective --recompute-modules "
      "mla_up_proj moe_act --use-distributed-optimizer --use-precision-aware-optimizer "
      "--exp-avg-dtype bf16 --exp-avg-sq-dtype bf16 --lr 1e-4",
      "");
  EXPECT_EQ(jf.recompute_modules, workload::kRecomputeMlaUpProj | workload::kRecomputeMoeAct);
  EXPECT_EQ(jf.exp_avg_dtype, workload::MomentDtype::kBf16);
  EXPECT_EQ(jf.exp_avg_sq_dtype, workload::MomentDtype::kBf16);
  EXPECT_EQ(jf.zero_stage, 1);
  EXPECT_FALSE(jf.fixed_by.empty());
  jf = FrameworksOfCommand("torchrun pretrain_gpt.py --recompute-modules=layernorm", "");
  EXPECT_EQ(jf.recompute_modules, workload::kRecomputeLayernorm);
  // Without --use-precision-aware-optimizer Megatron-LM keeps fp32 moments; an unknown module
  // name is Megatron-LM's to refuse; another script's options are not Megatron-LM's.
  jf = FrameworksOfCommand("torchrun pretrain_gpt.py --exp-avg-dtype bf16", "");
  EXPECT_EQ(jf.exp_avg_dtype, workload::MomentDtype::kFp32);
  EXPECT_EQ(jf.zero_stage, -1);
  EXPECT_EQ(FrameworksOfCommand("torchrun pretrain_gpt.py --recompute-modules attn", "")
                .recompute_modules,
            0u);
  EXPECT_EQ(
      FrameworksOfCommand("torchrun train.py --recompute-modules moe_act", "").recompute_modules,
      0u);
  workload::Training t = workload::testing::Llama3_405bTraining();
  t.dp = 1;
  t.zero_stage = 0;
  t.exp_avg_dtype = workload::MomentDtype::kBf16;
  EXPECT_EQ(Spelled(MegatronLayoutOptions(workload::testing::Llama3_405b(), t))
                .first.count("--use-distributed-optimizer"),
            1u);
}

// Megatron-Bridge's and NeMo's Hydra override of Megatron-Core's activation_func_fp8_input_store is
// read (Hydra's true/True, with or without ++); Megatron-LM's entry points have no such option.
TEST(FrameworksTest, AHydraCommandsFp8ActivationInputStoreIsItsOwn) {
  EXPECT_TRUE(FrameworksOfCommand("torchrun scripts/training/run_recipe.py --recipe x "
                                  "++model.activation_func_fp8_input_store=True",
                                  "")
                  .activation_fp8_input_store);
  EXPECT_TRUE(FrameworksOfCommand("python examples/nlp/megatron_gpt_pretraining.py "
                                  "model.activation_func_fp8_input_store=true",
                                  "")
                  .activation_fp8_input_store);
  EXPECT_FALSE(FrameworksOfCommand("torchrun scripts/training/run_recipe.py --recipe x "
                                   "model.activation_func_fp8_input_store=false",
                                   "")
                   .activation_fp8_input_store);
  EXPECT_FALSE(FrameworksOfCommand("torchrun pretrain_gpt.py "
                                   "model.activation_func_fp8_input_store=true",
                                   "")
                   .activation_fp8_input_store);
}

// Megatron-Core's expert-parallel all-to-all overlap: Megatron-LM's flag, or Megatron-Bridge's
// CommOverlapConfig override; neither spelling means anything to the other launcher.
TEST(FrameworksTest, TheAllToAllOverlapIsReadFromEitherSpelling) {
  EXPECT_TRUE(FrameworksOfCommand("torchrun pretrain_gpt.py --overlap-moe-expert-parallel-comm", "")
                  .moe_a2a_overlap);
  EXPECT_FALSE(FrameworksOfCommand("torchrun pretrain_gpt.py", "").moe_a2a_overlap);
  EXPECT_TRUE(FrameworksOfCommand("torchrun scripts/training/run_recipe.py --recipe x "
                                  "comm_overlap.overlap_moe_expert_parallel_comm=true",
                                  "")
                  .moe_a2a_overlap);
  EXPECT_FALSE(FrameworksOfCommand("torchrun scripts/training/run_recipe.py --recipe x "
                                   "comm_overlap.overlap_moe_expert_parallel_comm=false",
                                   "")
                   .moe_a2a_overlap);
}

// The flex dispatcher and node-limited routing: Megatron-LM's options or the Megatron-Bridge
// overrides (as DeepSeek-V3's recipe sets moe_router_num_groups 8, moe_router_group_topk 4).
TEST(FrameworksTest, TheMoeDispatcherAndRoutingGroupsAreReadFromEitherSpelling) {
  for (const char* command :
       {"torchrun pretrain_gpt.py --moe-token-dispatcher-type flex --moe-router-num-groups 8 "
        "--moe-router-group-topk 4",
        "torchrun scripts/training/run_recipe.py --recipe x model.moe_token_dispatcher_type=flex "
        "model.moe_router_num_groups=8 model.moe_router_group_topk=4"}) {
    const JobFrameworks jf = FrameworksOfCommand(command, "");
    EXPECT_EQ(jf.moe_dispatcher, workload::MoeDispatcher::kFlex) << command;
    EXPECT_EQ(jf.moe_router_groups, 8) << command;
    EXPECT_EQ(jf.moe_router_group_topk, 4) << command;
  }
  const JobFrameworks plain =
      FrameworksOfCommand("torchrun pretrain_gpt.py --moe-token-dispatcher-type alltoall", "");
  EXPECT_EQ(plain.moe_dispatcher, workload::MoeDispatcher::kAllToAll);
  EXPECT_EQ(plain.moe_router_groups, 0);
  // One of the pair alone is Megatron's to refuse: nothing is read.
  EXPECT_EQ(FrameworksOfCommand("torchrun pretrain_gpt.py --moe-router-num-groups 8", "")
                .moe_router_groups,
            0);
}

// Whole experts: Megatron-LM's --expert-tensor-parallel-size 1 or the Megatron-Bridge override.
TEST(FrameworksTest, WholeExpertsAreReadFromEitherSpelling) {
  EXPECT_EQ(
      FrameworksOfCommand("torchrun pretrain_gpt.py --expert-tensor-parallel-size 1", "").expert_tp,
      1);
  EXPECT_EQ(
      FrameworksOfCommand("torchrun pretrain_gpt.py --expert-tensor-parallel-size 2", "").expert_tp,
      0);
  EXPECT_EQ(FrameworksOfCommand("torchrun scripts/training/run_recipe.py --recipe x "
                                "model.expert_tensor_parallel_size=1",
                                "")
                .expert_tp,
            1);
}

}  // namespace fulcrum::plan
