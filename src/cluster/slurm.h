// Slurm, for jobs on more than one machine: writes an sbatch script that requests GPUs with
// --gres, sets --requeue and --signal=B:USR1@120, and runs the command under one `fulcrum run` on
// the batch host (the one supervisor that owns the checkpoint dir and the budget; more than one
// node: srun starts one launcher per node, torchrun with a c10d rendezvous on the first host,
// the others told the node count, their rank and the first host from Slurm's variables) so
// a requeued job resumes from its last checkpoint; submits it with sbatch; reads job states from
// squeue (live jobs) and sacct (finished ones); reads KillWait; drains a node. Commands run with
// argv through RunCapture (never a shell string), each with a timeout.
// Free functions; thread-compatible.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"

namespace fulcrum::cluster {

struct SbatchSpec {
  std::string job_name;
  int nodes = 1;
  int gpus_per_node = 0;
  std::string partition;   // "" = the cluster's default
  std::string time_limit;  // "" = partition default; Slurm time format ("2:00:00")
  // sbatch passthrough, each emitted as `#SBATCH --<name>=<value>` when set.
  std::string account;
  std::string qos;
  std::string constraint;  // node features, e.g. "h100&ib"
  std::string mem;         // per node, e.g. "64G"; "0" = all of the node's memory
  bool exclusive = false;  // whole nodes
  // A share of one GPU instead of gpus_per_node: "shard:3" or "mps:25" (cluster/gpu_share_slurm.h),
  // emitted as `#SBATCH --gres=<gres>`.
  std::string gres;
  std::string output_path;  // sbatch --output
  std::string workdir;
  std::string fulcrum_binary;         // absolute path of fulcrum on the nodes
  std::vector<std::string> run_args;  // `fulcrum run` options (before --)
  // The training command, as argv words. With gpus_per_node > 0 it is rewritten to start one
  // process per GPU of each node (core/torchrun.h RewriteLaunch with SlurmNodeLaunch: torchrun's
  // --nproc-per-node, accelerate's --num_processes, deepspeed's --num_gpus, the node count,
  // rank and first host); each change is stated in the script's header.
  std::vector<std::string> command;
  // Instead of `command`: shell text each node runs as it is (`bash -c`), already rewritten for
  // the node (plan --export slurm: exports of the command's variables, then the command).
  std::string node_command;
  // Shell lines run on the batch host before `fulcrum run` (plan --export slurm: installing
  // fulcrum when it is not on PATH).
  std::vector<std::string> setup;
  int notice_seconds = 120;                // --signal=B:USR1@N
  std::map<std::string, std::string> env;  // exported in the script
  // More than one node: the c10d rendezvous port on the first host (torchrun's default for
  // --rdzv-endpoint without a port is 29400: PyTorch "torchrun (Elastic Launch)" docs).
  int rendezvous_port = 29400;
  std::string comment;  // extra "# ..." lines at the top (where the stop grace came from)
  std::string written_by = "fulcrum submit --slurm";  // the script's first comment names it
};

// One of SbatchSpec's passthrough values that would break the script: a newline or a character
// that ends the #SBATCH word. kInvalidInput naming `flag`; Ok for "".
Status CheckSbatchValue(const std::string& flag, const std::string& value);

// True when `command` starts torchrun: `torchrun ...` or `python[3] -m torch.distributed.run`.
bool IsTorchrun(const std::vector<std::string>& command);

// POSIX shell single-quoting of one word: abc -> 'abc', it's -> 'it'\''s'.
std::string ShellQuote(const std::string& word);

// The script text. The batch shell forwards USR1 and TERM to `fulcrum run`, which takes either as
// a notice (checkpoint, then stop with exit 75). After exit 75 the script requeues the job with
// `scontrol requeue` unless Slurm is already ending it (scancel, its own requeue or preemption:
// the job is no longer RUNNING).
std::string GenerateSbatch(const SbatchSpec& spec);

// Slurm's KillWait (slurm.conf(5), 22.05: "The interval, in seconds, given to a job's processes
// between the SIGTERM and SIGKILL signals ... The default value is 30 seconds";
// https://slurm.schedmd.com/slurm.conf.html#OPT_KillWait).
inline constexpr double kSlurmDefaultKillWaitSeconds = 30;

// KillWait from `scontrol show config` ("KillWait = 30 sec"); kUnavailable without an answer.
Result<double> QueryKillWaitSeconds();
// Parses the text of `scontrol show config`; nullopt when it has no KillWait line.
std::optional<double> ParseKillWaitSeconds(const std::string& show_config);

// How `fulcrum run` stops inside KillWait: the wait for the checkpoint, then SIGTERM to the job
// and SIGKILL `kill_after` later, leaving `margin` for the batch script's own requeue.
struct StopBudget {
  double kill_wait_seconds = kSlurmDefaultKillWaitSeconds;
  double margin_seconds = 0;
  double stop_grace_seconds = 0;
  double kill_after_seconds = 0;
};
// margin = min(5 s, KillWait/4); kill_after = min(10 s, a third of the rest), at least 1 s;
// stop_grace = the rest, at least 1 s.
StopBudget StopBudgetFor(double kill_wait_seconds);

// `scontrol update nodename=NODE state=drain reason=REASON` (scontrol(1): "State=DRAIN" needs a
// "Reason=", keywords case-insensitive; https://slurm.schedmd.com/scontrol.html).
Status DrainNode(const std::string& node, const std::string& reason);

// Runs `sbatch --parsable SCRIPT` and returns the job id.
Result<std::string> SubmitSbatch(const std::string& script_path);

struct SlurmJobState {
  std::string job_id;
  std::string state;            // PENDING, RUNNING, COMPLETED, FAILED, CANCELLED, REQUEUED...
  std::string exit_code;        // sacct "0:0"; "" while running
  std::string reason;           // squeue %r (why pending)
  std::optional<int> restarts;  // sacct/scontrol restart count when known
};

// States of `job_ids` from squeue, then sacct for the ones squeue no longer lists. A missing
// Slurm (no squeue) is kUnavailable.
Result<std::vector<SlurmJobState>> QuerySlurm(const std::vector<std::string>& job_ids);

}  // namespace fulcrum::cluster
