#include "cluster/slurm.h"

#include <sstream>

#include "core/parse.h"
#include "core/subprocess.h"

namespace fulcrum::cluster {

std::string ShellQuote(const std::string& word) {
  std::string out = "'";
  for (char c : word) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

std::string GenerateSbatch(const SbatchSpec& spec) {
  std::ostringstream s;
  s << "#!/bin/bash\n";
  s << "# Written by fulcrum submit --slurm. Runs the command under `fulcrum run` so that a\n";
  s << "# requeued job resumes from its last complete checkpoint.\n";
  s << "#SBATCH --job-name=" << spec.job_name << "\n";
  s << "#SBATCH --nodes=" << spec.nodes << "\n";
  s << "#SBATCH --ntasks-per-node=1\n";
  if (spec.gpus_per_node > 0) s << "#SBATCH --gres=gpu:" << spec.gpus_per_node << "\n";
  if (!spec.partition.empty()) s << "#SBATCH --partition=" << spec.partition << "\n";
  if (!spec.time_limit.empty()) s << "#SBATCH --time=" << spec.time_limit << "\n";
  if (!spec.output_path.empty()) s << "#SBATCH --output=" << spec.output_path << "\n";
  if (!spec.workdir.empty()) s << "#SBATCH --chdir=" << spec.workdir << "\n";
  s << "#SBATCH --requeue\n";
  s << "#SBATCH --open-mode=append\n";
  s << "#SBATCH --signal=B:USR1@" << spec.notice_seconds << "\n\n";
  for (const auto& [key, value] : spec.env)
    s << "export " << key << "=" << ShellQuote(value) << "\n";
  s << "export FULCRUM_QUEUE=slurm\n\n";
  s << "cmd=(" << ShellQuote(spec.fulcrum_binary) << " run";
  for (const auto& a : spec.run_args) s << " " << ShellQuote(a);
  s << " --";
  // More than one node: one task per node through srun; the command's launcher does the rest.
  if (spec.nodes > 1) s << " srun --ntasks-per-node=1";
  for (const auto& a : spec.command) s << " " << ShellQuote(a);
  s << ")\n";
  s << "\"${cmd[@]}\" &\n";
  s << "pid=$!\n";
  s << "notice=0\n";
  s << "trap 'notice=1; kill -USR1 $pid' USR1\n";
  s << "trap 'kill -TERM $pid' TERM\n";
  s << "rc=0\n";
  s << "while true; do\n";
  s << "  wait $pid; rc=$?\n";
  s << "  kill -0 $pid 2>/dev/null || break  # wait returned for a trapped signal\n";
  s << "done\n";
  // Requeue only after Slurm's own advance notice (time limit, preemption), not after scancel.
  s << "if [ \"$notice\" = 1 ] && [ \"$rc\" -eq 75 ] && [ -n \"$SLURM_JOB_ID\" ]; then\n";
  s << "  echo \"fulcrum: stopped for a notice; requeueing job $SLURM_JOB_ID\"\n";
  s << "  scontrol requeue \"$SLURM_JOB_ID\"\n";
  s << "fi\n";
  s << "exit $rc\n";
  return s.str();
}

namespace {

// Slurm's client commands answer in well under a second on a healthy controller; a controller
// that does not answer (slurmctld down, network) must not hang `fulcrum submit` or `status`.
constexpr double kSlurmCommandTimeoutSeconds = 30;

// Runs a Slurm client command through RunCapture. A missing command or one that times out is
// kUnavailable (Slurm not installed here, or its controller not answering).
Result<CaptureResult> RunSlurmCommand(const std::vector<std::string>& argv) {
  CaptureOptions options;
  options.timeout_seconds = kSlurmCommandTimeoutSeconds;
  auto out = RunCapture(argv, options);
  if (!out.ok()) {
    if (out.status().code() == StatusCode::kNotFound) {
      return Status::Unavailable(argv[0] + ": not found (is Slurm installed on this machine?)");
    }
    return out.status();
  }
  if (out->timed_out) {
    return Status::Unavailable(argv[0] + ": no answer within " +
                               std::to_string(static_cast<int>(kSlurmCommandTimeoutSeconds)) +
                               " s (is slurmctld reachable?)");
  }
  return out;
}

}  // namespace

Result<std::string> SubmitSbatch(const std::string& script_path) {
  FULCRUM_ASSIGN_OR_RETURN(CaptureResult out,
                           RunSlurmCommand({"sbatch", "--parsable", script_path}));
  if (out.exit_code != 0) {
    return Status::IoError("sbatch " + script_path + " failed (exit " +
                           std::to_string(out.exit_code) + "): " + std::string(Trim(out.err)));
  }
  // --parsable prints "jobid" or "jobid;cluster".
  std::string id(Trim(out.out));
  id = id.substr(0, id.find(';'));
  if (id.empty()) return Status::IoError("sbatch printed no job id: " + out.out);
  return id;
}

Result<std::vector<SlurmJobState>> QuerySlurm(const std::vector<std::string>& job_ids) {
  std::vector<SlurmJobState> states;
  if (job_ids.empty()) return states;
  std::string list;
  for (const auto& id : job_ids) list += (list.empty() ? "" : ",") + id;
  FULCRUM_ASSIGN_OR_RETURN(CaptureResult sq, RunSlurmCommand({"squeue", "-h", "-t", "all", "-j",
                                                              list, "-o", "%i|%T|%r"}));
  std::map<std::string, SlurmJobState> found;
  if (sq.exit_code == 0) {
    for (const auto& line : Split(sq.out, '\n')) {
      auto parts = Split(line, '|');
      if (parts.size() < 3) continue;
      found[parts[0]] = {parts[0], parts[1], "", parts[2] == "None" ? "" : parts[2], std::nullopt};
    }
  }
  std::string missing;
  for (const auto& id : job_ids) {
    if (!found.count(id)) missing += (missing.empty() ? "" : ",") + id;
  }
  if (!missing.empty()) {
    auto sa =
        RunSlurmCommand({"sacct", "-n", "-P", "-X", "-j", missing, "-o", "JobID,State,ExitCode"});
    if (sa.ok() && sa->exit_code == 0) {
      for (const auto& line : Split(sa->out, '\n')) {
        auto parts = Split(line, '|');
        if (parts.size() < 3 || found.count(parts[0])) continue;
        std::string state = parts[1].substr(0, parts[1].find(' '));  // "CANCELLED by 0"
        found[parts[0]] = {parts[0], state, parts[2], "", std::nullopt};
      }
    }
  }
  for (const auto& id : job_ids) {
    auto it = found.find(id);
    states.push_back(it != found.end() ? it->second
                                       : SlurmJobState{id, "UNKNOWN", "", "", std::nullopt});
  }
  return states;
}

}  // namespace fulcrum::cluster
