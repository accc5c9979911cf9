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

struct JobFrameworks {
  workload::FrameworkMask allowed = workload::kEveryFramework;
  // Why these: "the spec's framework", "torchrun of train.py, a script fulcrum does not know",
  // ... (for the plan's notes); empty when every framework is searched for want of a command.
  std::string reason;
  bool from_command = false;  // read from the command (not given, not the default)
  // Only data-parallel layouts (tp, pp, cp and ep 1): the job's code is not known to shard the
  // model itself (a launcher of a script fulcrum does not know).
  bool data_parallel_only = false;
  // The command runs a Megatron-LM entry point (pretrain_gpt.py, ...) without DeepSpeed or
  // Megatron-FSDP: the layout is its arguments (MegatronLayoutOptions), which the export sets.
  bool megatron_lm_arguments = false;
};

// The frameworks `command` (shell text, as the user runs it) can run:
// - Megatron-LM entry points (pretrain_gpt.py, pretrain_bert.py, pretrain_t5.py,
//   pretrain_mamba.py, pretrain_vlm.py, pretrain_retro.py) and NeMo (a script under a nemo/
//   directory, NeMo's megatron_*.py examples, `nemo llm`): megatron; with DeepSpeed
//   (`deepspeed` launcher or a --deepspeed argument): megatron-deepspeed; with
//   --use-megatron-fsdp or --use-torch-fsdp2: megatron-fsdp;
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
std::vector<ScriptOption> MegatronLayoutOptions(const workload::Model& m,
                                                const workload::Training& t);

}  // namespace fulcrum::plan
