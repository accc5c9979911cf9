#include "cluster/slurm.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "core/parse.h"
#include "core/subprocess.h"
#include "core/torchrun.h"

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

Status CheckSbatchValue(const std::string& flag, const std::string& value) {
  for (char c : value) {
    if (c == '\n' || c == '\r' || c == ' ' || c == '\t' || c == '#') {
      return Status::InvalidInput(flag +
                                  ": expected one sbatch word (no spaces, newlines or '#'), "
                                  "found '" +
                                  value + "'")
          .WithDetail({"", std::nullopt, flag, "one sbatch word", value, {}});
    }
  }
  return Status::Ok();
}

namespace {

// The user's `words` with the edits of `rewrite` (core/torchrun.h): each user word shell-quoted,
// fulcrum's words as written (shell text).
std::string RenderWords(const std::vector<std::string>& words, const LaunchRewrite& rewrite,
                        const std::vector<bool>& ours) {
  std::string out;
  size_t e = 0;
  for (size_t i = 0; i <= words.size(); ++i) {
    bool replaced = false;
    for (; e < rewrite.edits.size() && rewrite.edits[e].at == i; ++e) {
      replaced = replaced || rewrite.edits[e].replace;
      for (const std::string& w : rewrite.edits[e].words) out += " " + w;
    }
    if (i < words.size() && !replaced) out += " " + (ours[i] ? words[i] : ShellQuote(words[i]));
  }
  return out;
}

// The argv command as a node of the job runs it (shell text, leading space), and what changed.
// With GPUs per node known, RewriteLaunch makes it start one process per GPU on each node
// (SlurmNodeLaunch); on more than one node a torchrun without a rendezvous of the user's first
// gets --nnodes and a c10d rendezvous on the first host (torchrun's elastic launch; its default
// --rdzv-endpoint port is 29400: PyTorch "torchrun (Elastic Launch)" docs).
std::string CommandOnNode(const SbatchSpec& spec, LaunchRewrite& rewrite) {
  std::vector<std::string> words = spec.command;
  std::vector<bool> ours(words.size(), false);
  const size_t options_at = spec.nodes > 1 ? TorchrunOptionsAt(words) : 0;
  if (options_at != 0 && !HasTorchrunRendezvous(words)) {
    std::vector<std::string> added;
    if (!HasTorchrunOption(words, "--nnodes")) added = {"--nnodes", "\"$SLURM_JOB_NUM_NODES\""};
    for (const char* w : {"--rdzv-backend", "c10d", "--rdzv-endpoint"}) added.push_back(w);
    added.push_back("\"$MASTER_ADDR:" + std::to_string(spec.rendezvous_port) + "\"");
    added.push_back("--rdzv-id");
    added.push_back("\"$SLURM_JOB_ID\"");
    words.insert(words.begin() + static_cast<long>(options_at), added.begin(), added.end());
    ours.insert(ours.begin() + static_cast<long>(options_at), added.size(), true);
  }
  if (spec.gpus_per_node > 0) {
    rewrite = RewriteLaunch(words, SlurmNodeLaunch(spec.nodes, spec.gpus_per_node));
  }
  return RenderWords(words, rewrite, ours);
}

// The launch words after `fulcrum run ... --`, as shell text. One node: the command itself.
// More: srun starts one task per node. A node's rank is known only on that node (SLURM_NODEID):
// a command that names it runs through a shell there (`bash -c`), as `node_command` always does.
std::string LaunchWords(const SbatchSpec& spec, LaunchRewrite& rewrite) {
  std::string srun = spec.nodes > 1 ? " srun --ntasks-per-node=1 --kill-on-bad-exit=1" : "";
  if (!spec.node_command.empty()) return srun + " bash -c " + ShellQuote(spec.node_command);
  const std::string words = CommandOnNode(spec, rewrite);
  if (spec.nodes > 1 && words.find("$SLURM_NODEID") != std::string::npos) {
    return srun + " bash -c " + ShellQuote("exec" + words);
  }
  return srun + words;
}

}  // namespace

bool IsTorchrun(const std::vector<std::string>& command) { return TorchrunOptionsAt(command) != 0; }

std::string GenerateSbatch(const SbatchSpec& spec) {
  LaunchRewrite rewrite;
  const std::string launch = LaunchWords(spec, rewrite);
  std::ostringstream s;
  s << "#!/bin/bash\n";
  s << "# Written by " << spec.written_by << ". Runs the command under `fulcrum run` so that a\n";
  s << "# requeued job resumes from its last complete checkpoint.\n";
  for (const auto& line : Split(spec.comment, '\n')) {
    if (!line.empty()) s << "# " << line << "\n";
  }
  if (!rewrite.changes.empty()) {
    s << "# The command is changed for " << spec.gpus_per_node << " GPU(s) per node x "
      << spec.nodes << " node(s):\n";
    for (const std::string& change : rewrite.changes) s << "#   " << change << "\n";
  }
  s << "#SBATCH --job-name=" << spec.job_name << "\n";
  s << "#SBATCH --nodes=" << spec.nodes << "\n";
  s << "#SBATCH --ntasks-per-node=1\n";
  if (spec.gpus_per_node > 0) s << "#SBATCH --gres=gpu:" << spec.gpus_per_node << "\n";
  if (!spec.gres.empty()) s << "#SBATCH --gres=" << spec.gres << "\n";
  const std::pair<const char*, const std::string*> passthrough[] = {
      {"partition", &spec.partition},   {"account", &spec.account}, {"qos", &spec.qos},
      {"constraint", &spec.constraint}, {"mem", &spec.mem},         {"time", &spec.time_limit},
      {"output", &spec.output_path},    {"chdir", &spec.workdir}};
  for (const auto& [name, value] : passthrough) {
    if (!value->empty()) s << "#SBATCH --" << name << "=" << *value << "\n";
  }
  if (spec.exclusive) s << "#SBATCH --exclusive\n";
  s << "#SBATCH --requeue\n";
  s << "#SBATCH --open-mode=append\n";
  s << "#SBATCH --signal=B:USR1@" << spec.notice_seconds << "\n\n";
  for (const auto& [key, value] : spec.env)
    s << "export " << key << "=" << ShellQuote(value) << "\n";
  s << "export FULCRUM_QUEUE=slurm\n";
  if (spec.nodes > 1) {
    s << "# One launcher per node (srun); one supervisor, here on the batch host, owns the\n";
    s << "# checkpoint dir and the budget. The rendezvous runs on the first host.\n";
  }
  // The first host of the job's node list (sbatch(1): SLURM_JOB_NODELIST "List of nodes
  // allocated to the job"; scontrol(1) `show hostnames` "writes a list of individual host names
  // to standard output (one per line)"); srun's tasks inherit both (--export=ALL by default).
  s << "head=$(scontrol show hostnames \"$SLURM_JOB_NODELIST\" | head -n 1)\n";
  s << "export MASTER_ADDR=\"$head\" MASTER_PORT=" << spec.rendezvous_port << "\n";
  for (const std::string& line : spec.setup) s << line << "\n";
  s << "\ncmd=(" << ShellQuote(spec.fulcrum_binary) << " run";
  for (const auto& a : spec.run_args) s << " " << ShellQuote(a);
  s << " --" << launch << ")\n";
  s << "\"${cmd[@]}\" &\n";
  s << "pid=$!\n";
  // Slurm's advance notice (--signal=B:USR1@N) and its SIGTERM (preemption, requeue, scancel,
  // time limit) are both notices to fulcrum run: checkpoint, stop, exit 75.
  s << "trap 'kill -USR1 $pid' USR1\n";
  s << "trap 'kill -TERM $pid' TERM\n";
  s << "rc=0\n";
  s << "while true; do\n";
  s << "  wait $pid; rc=$?\n";
  s << "  kill -0 $pid 2>/dev/null || break  # wait returned for a trapped signal\n";
  s << "done\n";
  // Requeue when the job is still RUNNING: an advance notice, a SIGTERM to the batch shell alone,
  // a GPU fault or a cloud notice. scancel, Slurm's own requeue and preemption end the job
  // (COMPLETING): Slurm decides then, and a cancelled job stays cancelled.
  s << "if [ \"$rc\" -eq 75 ] && [ -n \"$SLURM_JOB_ID\" ]; then\n";
  s << "  state=$(squeue -h -j \"$SLURM_JOB_ID\" -o %T 2>/dev/null)\n";
  s << "  if [ \"$state\" = RUNNING ]; then\n";
  s << "    echo \"fulcrum: stopped for a notice; requeueing job $SLURM_JOB_ID\"\n";
  // The requeue ends this very job: Slurm's SIGTERM would kill scontrol itself; ignored here and
  // in scontrol, SIGKILL only comes after KillWait. Slurm holds the requeued job back for
  // AuthInfo cred_expire (120 s by default) once this script has ended; nothing inside the job
  // can shorten that (a StartTime=now from here is overwritten when the requeue completes).
  s << "    trap '' TERM\n";
  s << "    scontrol requeue \"$SLURM_JOB_ID\"\n";
  s << "  else\n";
  s << "    echo \"fulcrum: Slurm is ending job $SLURM_JOB_ID (${state:-gone}); not requeueing\"\n";
  s << "  fi\n";
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

std::optional<double> ParseKillWaitSeconds(const std::string& show_config) {
  for (const auto& line : Split(show_config, '\n')) {
    auto eq = line.find('=');
    if (eq == std::string::npos || Trim(std::string_view(line).substr(0, eq)) != "KillWait")
      continue;
    // "KillWait                = 30 sec"
    const std::string value(Trim(std::string_view(line).substr(eq + 1)));
    char* end = nullptr;
    const double seconds = std::strtod(value.c_str(), &end);
    if (end == value.c_str() || !std::isfinite(seconds) || seconds < 0) return std::nullopt;
    return seconds;
  }
  return std::nullopt;
}

Result<double> QueryKillWaitSeconds() {
  FULCRUM_ASSIGN_OR_RETURN(CaptureResult out, RunSlurmCommand({"scontrol", "show", "config"}));
  if (out.exit_code != 0) {
    return Status::Unavailable("scontrol show config failed (exit " +
                               std::to_string(out.exit_code) + "): " + std::string(Trim(out.err)));
  }
  auto seconds = ParseKillWaitSeconds(out.out);
  if (!seconds) return Status::Unavailable("scontrol show config printed no KillWait");
  return *seconds;
}

StopBudget StopBudgetFor(double kill_wait_seconds) {
  StopBudget b;
  b.kill_wait_seconds = kill_wait_seconds;
  b.margin_seconds = std::min(5.0, std::floor(kill_wait_seconds / 4));
  const double rest = kill_wait_seconds - b.margin_seconds;
  b.kill_after_seconds = std::max(1.0, std::min(10.0, std::floor(rest / 3)));
  b.stop_grace_seconds = std::max(1.0, rest - b.kill_after_seconds);
  return b;
}

Status DrainNode(const std::string& node, const std::string& reason) {
  FULCRUM_ASSIGN_OR_RETURN(CaptureResult out,
                           RunSlurmCommand({"scontrol", "update", "nodename=" + node, "state=drain",
                                            "reason=" + reason}));
  if (out.exit_code != 0) {
    return Status::IoError("scontrol update nodename=" + node + " state=drain failed (exit " +
                           std::to_string(out.exit_code) + "): " + std::string(Trim(out.err)));
  }
  return Status::Ok();
}

}  // namespace fulcrum::cluster
