// Slurm, for jobs on more than one machine: writes an sbatch script that requests GPUs with
// --gres, sets --requeue and --signal=B:USR1@120, and runs the command under `fulcrum run` so a
// requeued job resumes from its last checkpoint; submits it with sbatch; reads job states from
// squeue (live jobs) and sacct (finished ones). Commands run with argv through RunCapture (never a
// shell string), each with a timeout.
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
  std::string partition;    // "" = the cluster's default
  std::string time_limit;   // "" = partition default; Slurm time format ("2:00:00")
  std::string output_path;  // sbatch --output
  std::string workdir;
  std::string fulcrum_binary;              // absolute path of fulcrum on the nodes
  std::vector<std::string> run_args;       // `fulcrum run` options (before --)
  std::vector<std::string> command;        // the training command
  int notice_seconds = 120;                // --signal=B:USR1@N
  std::map<std::string, std::string> env;  // exported in the script
};

// POSIX shell single-quoting of one word: abc -> 'abc', it's -> 'it'\''s'.
std::string ShellQuote(const std::string& word);

// The script text. The batch shell forwards USR1/TERM to `fulcrum run`, and when fulcrum stops
// the job for a notice (exit 75) the script requeues itself with `scontrol requeue`.
std::string GenerateSbatch(const SbatchSpec& spec);

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
