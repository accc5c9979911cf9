// Which frameworks a training job can run, so that the planner only offers layouts the job's own
// code runs: `framework:` in the spec or `--framework` wins; otherwise it is read from the command
// (the launcher and the script or module it starts, with the arguments that name a framework);
// without either, every framework. Read-only: at most the accelerate config file the command
// names is read. Thread-safe.
#pragma once

#include <string>

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

}  // namespace fulcrum::plan
