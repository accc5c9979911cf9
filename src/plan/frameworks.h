// Which frameworks a training job can run, so that the planner only offers layouts the job's own
// code runs: `framework:` in the spec or `--framework` wins; otherwise it is read from the command
// (the launcher and the script or module it starts, with the arguments that name a framework);
// without either, every framework. Read-only: at most the accelerate config file the command
// names is read. Thread-safe.
#pragma once

#include <string>
#include <vector>

#include "core/torchrun.h"
#include "plan/spec.h"
#include "workload/training.h"

namespace fulcrum::plan {

// How a Megatron-Core job's script takes its layout as arguments:
// - kMegatronLm: a Megatron-LM entry point (pretrain_gpt.py, ...) without DeepSpeed (with
//   --use-megatron-fsdp too), Megatron-LM's options (MegatronLayoutOptions);
//   kMegatronLmTorchFsdp2 the same with --use-torch-fsdp2;
// - kNemo: NeMo's Hydra scripts (examples/.../megatron_*.py), Hydra overrides of their config
//   (NemoLayoutOptions);
// - kMegatronBridge: Megatron-Bridge's recipe launcher (scripts/training/run_recipe.py), Hydra
//   overrides of its ConfigContainer (MegatronBridgeLayoutOptions);
// - kNone: not known (any other script, `nemo llm`): the export says the layout is not set.
// - kHfTrainer: HF TrainingArguments (--per_device_train_batch_size given): the micro-batch, the
//   accumulation and gradient checkpointing (HfTrainerLayoutOptions), for any data-parallel
//   framework;
enum class LayoutArguments {
  kNone,
  kMegatronLm,
  kMegatronLmTorchFsdp2,
  kNemo,
  kMegatronBridge,
  kHfTrainer
};

struct JobFrameworks {
  workload::FrameworkMask allowed = workload::kEveryFramework;
  // Why these: "the spec's framework", "torchrun of train.py, a script fulcrum does not know",
  // ... (for the plan's notes); empty when every framework is searched for want of a command.
  std::string reason;
  bool from_command = false;  // read from the command (not given, not the default)
  // Only data-parallel layouts (tp, pp, cp and ep 1): the job's code is not known to shard the
  // model itself (a launcher of a script fulcrum does not know).
  bool data_parallel_only = false;
  // How the command's script takes the layout, which the export then sets (ScriptLayoutOptions).
  LayoutArguments layout_arguments = LayoutArguments::kNone;
  // What the command's own options or files fix, which the export cannot rewrite (a file the
  // job reads): the ZeRO stage (a DeepSpeed config's zero_optimization.stage; HF's --fsdp
  // full_shard / shard_grad_op / no_shard; an accelerate config's fsdp_sharding_strategy,
  // fsdp_reshard_after_forward, zero_stage or deepspeed_config_file) and the micro-batch (a
  // DeepSpeed config's train_micro_batch_size_per_gpu). -1 / 0: not fixed. The plan searches
  // only these.
  int zero_stage = -1;
  int micro_batch = 0;
  // A Megatron-LM command's own training choices, which the plan then estimates and the export
  // keeps: --recompute-modules under selective recompute (RecomputeModule bits; 0 = not given,
  // Megatron's core_attn) and the precision-aware optimizer's moment dtypes
  // (--use-precision-aware-optimizer --exp-avg-dtype / --exp-avg-sq-dtype), which need the
  // distributed optimizer (zero_stage then fixed to 1).
  uint32_t recompute_modules = 0;
  workload::MomentDtype exp_avg_dtype = workload::MomentDtype::kFp32;
  workload::MomentDtype exp_avg_sq_dtype = workload::MomentDtype::kFp32;
  // Megatron-Core's activation_func_fp8_input_store, set by a Megatron-Bridge or NeMo Hydra
  // override `model.activation_func_fp8_input_store=true` (Training::activation_fp8_input_store).
  bool activation_fp8_input_store = false;
  // Megatron-Core's expert-parallel all-to-all overlap: Megatron-LM
  // --overlap-moe-expert-parallel-comm, or the Megatron-Bridge override
  // comm_overlap.overlap_moe_expert_parallel_comm=true (Training::moe_a2a_overlap); the plan then
  // searches only the layouts Megatron runs it on (workload::MoeA2aOverlapRuns).
  bool moe_a2a_overlap = false;
  // The routed experts' tensor parallelism the command sets: Megatron-LM
  // --expert-tensor-parallel-size, Megatron-Bridge/NeMo model.expert_tensor_parallel_size (0 = not
  // set: tp; Training::expert_tp).
  int64_t expert_tp = 0;
  // The MoE token dispatcher and group-limited routing the command sets: Megatron-LM
  // --moe-token-dispatcher-type flex, --moe-router-num-groups N --moe-router-group-topk M, or the
  // Megatron-Bridge/NeMo overrides model.moe_token_dispatcher_type=flex,
  // model.moe_router_num_groups=N, model.moe_router_group_topk=M (Training::moe_dispatcher,
  // moe_router_groups, moe_router_group_topk; 0 = not set).
  workload::MoeDispatcher moe_dispatcher = workload::MoeDispatcher::kAllToAll;
  int64_t moe_router_groups = 0;
  int64_t moe_router_group_topk = 0;
  std::string fixed_by = {};  // where they were read, for the plan's notes ("" = none)
  // DeepSpeed's zero_optimization.overlap_comm as the job's DeepSpeed config sets it
  // (Training::overlap_comm; false where no config says: DeepSpeed's default below stage 3), and
  // the config it was read from ("" = none read).
  bool overlap_comm = false;
  std::string overlap_comm_from = {};
  // PyTorch FSDP1's backward_prefetch as the job's `accelerate launch` or HF Trainer --fsdp_config
  // runs it (Training::backward_prefetch; BACKWARD_PRE where the job is not FSDP1 or nothing
  // says), and what says so ("" = nothing read).
  workload::BackwardPrefetch backward_prefetch = workload::BackwardPrefetch::kPre;
  std::string backward_prefetch_from = {};
};

// The frameworks `command` (shell text, as the user runs it) can run:
// - Megatron-LM entry points (pretrain_gpt.py, pretrain_bert.py, pretrain_t5.py,
//   pretrain_mamba.py, pretrain_vlm.py, pretrain_retro.py) and NeMo (a script under a nemo/
//   directory, NeMo's megatron_*.py examples, `nemo llm`): megatron; with DeepSpeed
//   (`deepspeed` launcher or a --deepspeed argument): megatron-deepspeed; with
//   --use-megatron-fsdp or --use-torch-fsdp2: megatron-fsdp;
// - Megatron-Bridge's recipe launcher (scripts/training/run_recipe.py, or a run_recipe.py given
//   --recipe): megatron; with the override ddp.use_megatron_fsdp=true: megatron-fsdp;
// - torchtitan (torchtitan/train.py, -m torchtitan.train, --job.config_file): fsdp (FSDP2 with
//   tp, pp and cp);
// - the HF Trainer's --fsdp / --deepspeed arguments: fsdp / deepspeed;
// - `accelerate launch`: its --use_fsdp / --use_deepspeed / --use_megatron_lm / --multi_gpu, or
//   the distributed_type of its --config_file (FSDP, DEEPSPEED, MEGATRON_LM, MULTI_GPU);
// - the `deepspeed` launcher: deepspeed;
// - Lightning's strategy argument (--strategy / --trainer.strategy ddp|fsdp|deepspeed);
// - any other script under torchrun, python -m torch.distributed.run, accelerate launch,
//   deepspeed or Lightning: the data-parallel frameworks only (ddp, fsdp, deepspeed);
// - a command fulcrum does not recognise: every framework.
// `base_dir`: where a relative accelerate --config_file is looked for.
JobFrameworks FrameworksOfCommand(const std::string& command, const std::string& base_dir);

// The frameworks of `spec`: constraints.frameworks when given, else FrameworksOfCommand of its
// command (relative files from the spec file's directory), else every framework.
JobFrameworks JobFrameworksOf(const PlanSpec& spec);

// The Megatron-LM arguments that make pretrain_gpt.py (and the other entry points) run layout
// `t` of model `m` as planned: tensor, pipeline (with the interleaved schedule's virtual stages,
// its micro-batch group and uneven first / last stages), context and expert parallelism, the
// micro- and global batch and sequence length, sequence parallelism, the distributed optimizer
// (ZeRO-1), activation recompute and precision (bf16, fp16, fp8 with Transformer Engine's hybrid
// format); options that would contradict them are removed. Spellings as Megatron-LM's own
// examples and parser write them (NVIDIA/Megatron-LM@d98e8a64dd megatron/training/arguments.py;
// examples/llama/train_llama3_8b_h100_fp8.sh).
// A megatron-fsdp layout runs Megatron-FSDP (--use-megatron-fsdp with its sharding strategy)
// or, `torch_fsdp2`, PyTorch FSDP2 (the user's --use-torch-fsdp2 kept).
std::vector<ScriptOption> MegatronLayoutOptions(const workload::Model& m,
                                                const workload::Training& t,
                                                bool torch_fsdp2 = false);

// The same layout as Hydra overrides of NeMo's Megatron GPT config (NVIDIA/NeMo@8cfedd7203
// examples/nlp/language_modeling/conf/megatron_gpt_config.yaml, the keys NeMo reads with
// cfg.get in nemo/collections/nlp/models/language_modeling/megatron_base_model.py and
// megatron_gpt_model.py), with the trainer's devices per node and node count, which Lightning
// must be given to match the processes the launcher starts.
std::vector<ScriptOption> NemoLayoutOptions(const workload::Model& m, const workload::Training& t,
                                            int nodes, int gpus_per_node);

// The same layout as Hydra overrides of Megatron-Bridge's ConfigContainer, which
// scripts/training/run_recipe.py applies after its recipe (NVIDIA-NeMo/Megatron-Bridge@067f987df
// docs/megatron-lm-to-megatron-bridge.md, "Mapping Megatron-LM arguments to Megatron Bridge
// config"); its convenience options for the same fields (-tp, --micro_batch_size, ...) are
// removed, the overrides being what counts.
std::vector<ScriptOption> MegatronBridgeLayoutOptions(const workload::Model& m,
                                                      const workload::Training& t);

// HF TrainingArguments' options for layout `t`: --per_device_train_batch_size (the
// micro-batch), --gradient_accumulation_steps (the micro-batches per step) and
// --gradient_checkpointing (given for full recompute, removed otherwise; the HF Trainer has no
// selective recompute, which the plan then does not search), as transformers' TrainingArguments
// names them.
std::vector<ScriptOption> HfTrainerLayoutOptions(const workload::Training& t);

// The script options of `arguments` that set layout `t`: empty for kNone and where the dialect
// cannot express t's framework (Megatron-LM's arguments: megatron and megatron-fsdp; NeMo's and
// Megatron-Bridge's: megatron; HF Trainer's: the data-parallel frameworks).
std::vector<ScriptOption> ScriptLayoutOptions(LayoutArguments arguments, const workload::Model& m,
                                              const workload::Training& t, int nodes,
                                              int gpus_per_node);

}  // namespace fulcrum::plan
