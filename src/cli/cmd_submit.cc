// `fulcrum submit`: queue a job on this node (placed on free GPUs by a queue worker, honouring
// --not-before), or hand it to Slurm with an sbatch script that runs it under `fulcrum run`.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "cli/command.h"
#include "cluster/slurm.h"
#include "core/clock.h"
#include "core/parse.h"
#include "store/jobs.h"
#include "supervise/lock.h"
#include "supervise/queue.h"
#include "supervise/run_flags.h"

namespace fulcrum::cli {
namespace {
namespace fs = std::filesystem;

struct SubmitArgs {
  std::string name;
  std::string data_dir;
  int gpus = 1;
  std::string not_before;
  int node_gpus = -1;
  bool json = false;
  bool queue_worker = false;
  // Slurm.
  bool slurm = false;
  int nodes = 1;
  int gpus_per_node = 0;
  std::string partition;
  std::string time_limit;
  std::string script_out;
  bool dry_run = false;
  supervise::RunFlags flags;
  std::vector<std::string> command;
};

std::string SelfExe() {
  std::error_code ec;
  auto p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? "fulcrum" : p.string();
}

// Output of a detached process goes to `log_path`; stdin is /dev/null.
void RedirectOutput(const std::string& log_path) {
  int in = open("/dev/null", O_RDONLY);
  int out = open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (in >= 0) dup2(in, STDIN_FILENO);
  if (out >= 0) {
    dup2(out, STDOUT_FILENO);
    dup2(out, STDERR_FILENO);
  }
}

void ExecArgv(const std::vector<std::string>& argv) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  execv(args[0], args.data());
  _exit(127);
}

// Starts `argv` fully detached (its own session, reparented to init), output to `log_path`.
Status SpawnDetached(const std::vector<std::string>& argv, const std::string& log_path,
                     const std::map<std::string, std::string>& env) {
  pid_t pid = fork();
  if (pid < 0) return Status::IoError("fork failed");
  if (pid == 0) {
    setsid();
    if (fork() != 0) _exit(0);
    for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
    RedirectOutput(log_path);
    ExecArgv(argv);
  }
  waitpid(pid, nullptr, 0);
  return Status::Ok();
}

// The queue worker: places queued local jobs on free GPUs until the queue is empty.
Status RunQueueWorker(const std::string& data_dir) {
  std::optional<supervise::JobLock> lock;
  for (int attempt = 0; attempt < 30 && !lock; ++attempt) {
    auto acquired = supervise::JobLock::Acquire(data_dir, ".queue-worker");
    if (acquired.ok()) {
      lock.emplace(std::move(*acquired));
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  if (!lock) return Status::Ok();  // another worker serves the queue
  FULCRUM_ASSIGN_OR_RETURN(store::JobsDb db, store::JobsDb::OpenInDataDir(data_dir));
  const int node_gpus = supervise::DetectNodeGpuCount();
  const std::string self = SelfExe();
  SystemClock clock;
  std::map<pid_t, std::string> children;
  while (true) {
    int status = 0;
    pid_t done;
    while ((done = waitpid(-1, &status, WNOHANG)) > 0) {
      auto it = children.find(done);
      if (it == children.end()) continue;
      auto job = db.GetJob(it->second);
      if (job.ok() && job->has_value() && store::IsActiveState((*job)->state)) {
        (void)db.UpdateState(it->second, "failed",
                             "its supervisor exited (status " + std::to_string(status) + ")");
      }
      children.erase(it);
    }
    FULCRUM_ASSIGN_OR_RETURN(auto jobs, db.ListJobs());
    bool waiting = false;
    for (const auto& j : jobs) waiting = waiting || (j.state == "queued" && j.queue == "local");
    if (!waiting && children.empty()) return Status::Ok();
    for (const auto& p : supervise::PlaceQueuedJobs(jobs, node_gpus, clock.UnixSeconds())) {
      auto job = db.GetJob(p.job_id);
      if (!job.ok() || !job->has_value()) continue;
      store::JobRecord row = **job;
      row.gpus = p.gpus;
      row.state = "starting";
      FULCRUM_RETURN_IF_ERROR(db.UpsertJob(row));
      std::string gpu_list;
      for (int g : p.gpus) gpu_list += (gpu_list.empty() ? "" : ",") + std::to_string(g);
      std::vector<std::string> argv = {self,   "run",        "--quiet", "--name",
                                       row.id, "--data-dir", data_dir};
      if (!gpu_list.empty()) argv.insert(argv.end(), {"--gpus", gpu_list});
      argv.insert(argv.end(), row.run_options.begin(), row.run_options.end());
      argv.push_back("--");
      argv.insert(argv.end(), row.argv.begin(), row.argv.end());
      const std::string log_path = data_dir + "/logs/" + row.id + ".out";
      pid_t pid = fork();
      if (pid == 0) {
        setenv("FULCRUM_QUEUE", "local", 1);
        if (!row.workdir.empty() && chdir(row.workdir.c_str()) != 0) _exit(126);
        RedirectOutput(log_path);
        ExecArgv(argv);
      }
      if (pid > 0) children[pid] = row.id;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
}

store::JobRecord NewJob(const SubmitArgs& a, const std::string& queue, double now) {
  store::JobRecord job;
  job.id = a.name;
  job.name = a.name;
  job.queue = queue;
  job.state = "queued";
  job.argv = a.command;
  job.gpus_requested = queue == "slurm" ? a.nodes * a.gpus_per_node : a.gpus;
  job.created_at = now;
  job.workdir = fs::current_path().string();
  job.run_options = supervise::RunFlagsToArgs(a.flags);
  return job;
}

Status SubmitSlurm(CliContext& ctx, SubmitArgs& a, const std::string& data_dir, store::JobsDb& db,
                   double now) {
  if (a.nodes < 1)
    return Status::InvalidInput("--nodes: expected 1 or more, found " + std::to_string(a.nodes));
  fs::create_directories(data_dir + "/slurm");
  cluster::SbatchSpec spec;
  spec.job_name = a.name;
  spec.nodes = a.nodes;
  spec.gpus_per_node = a.gpus_per_node;
  spec.partition = a.partition;
  spec.time_limit = a.time_limit;
  spec.output_path = data_dir + "/slurm/" + a.name + ".out";
  spec.workdir = fs::current_path().string();
  spec.fulcrum_binary = SelfExe();
  spec.run_args = {"--name", a.name, "--data-dir", data_dir};
  auto extra = supervise::RunFlagsToArgs(a.flags);
  spec.run_args.insert(spec.run_args.end(), extra.begin(), extra.end());
  spec.command = a.command;
  const std::string script = cluster::GenerateSbatch(spec);
  const std::string path =
      a.script_out.empty() ? data_dir + "/slurm/" + a.name + ".sbatch" : a.script_out;
  if (a.dry_run) {
    ctx.out << script;
    return Status::Ok();
  }
  {
    std::ofstream f(path);
    f << script;
    if (!f) return Status::IoError(path + ": cannot write the sbatch script");
  }
  FULCRUM_ASSIGN_OR_RETURN(std::string slurm_id, cluster::SubmitSbatch(path));
  store::JobRecord job = NewJob(a, "slurm", now);
  job.slurm_job_id = slurm_id;
  FULCRUM_RETURN_IF_ERROR(db.UpsertJob(job));
  if (a.json) {
    PrintJson(ctx, {{"submit",
                     {{"job", a.name},
                      {"queue", "slurm"},
                      {"slurm_job_id", slurm_id},
                      {"script", path},
                      {"output", spec.output_path}}}});
  } else {
    ctx.out << "Submitted " << a.name << " to Slurm as job " << slurm_id << " (" << a.nodes
            << " node(s) x " << a.gpus_per_node << " GPU(s)); script " << path << ", output "
            << spec.output_path << "\n";
  }
  return Status::Ok();
}

Status Submit(CliContext& ctx, SubmitArgs& a) {
  const std::string data_dir =
      fs::absolute(store::ResolveDataDir(a.data_dir)).lexically_normal().string();
  if (a.queue_worker) return RunQueueWorker(data_dir);
  if (a.command.empty()) {
    return Status::InvalidInput(
        "no command: put it after --, e.g. fulcrum submit --gpus 2 -- python train.py");
  }
  SystemClock clock;
  const double now = clock.UnixSeconds();
  if (a.name.empty()) {
    a.name = fs::path(a.command[0]).filename().string() + "-" +
             std::to_string(static_cast<int64_t>(now));
  }
  FULCRUM_RETURN_IF_ERROR(supervise::ValidateJobName(a.name));
  // Check the run options now rather than when the job starts.
  FULCRUM_RETURN_IF_ERROR(supervise::ResolveRunFlags(a.flags, data_dir, a.name).status());
  FULCRUM_ASSIGN_OR_RETURN(store::JobsDb db, store::JobsDb::OpenInDataDir(data_dir));
  FULCRUM_ASSIGN_OR_RETURN(auto existing, db.GetJob(a.name));
  if (existing && store::IsActiveState(existing->state)) {
    return Status::InvalidInput("a job named '" + a.name + "' is " + existing->state +
                                "; choose another --name");
  }
  if (a.slurm) return SubmitSlurm(ctx, a, data_dir, db, now);

  if (a.gpus < 0)
    return Status::InvalidInput("--gpus: expected 0 or more, found " + std::to_string(a.gpus));
  store::JobRecord job = NewJob(a, "local", now);
  if (!a.not_before.empty()) {
    FULCRUM_ASSIGN_OR_RETURN(double at, supervise::ParseNotBefore(a.not_before, now));
    job.not_before = at;
  }
  std::map<std::string, std::string> env;
  const int node_gpus = a.node_gpus >= 0 ? a.node_gpus : supervise::DetectNodeGpuCount();
  if (a.node_gpus >= 0) env["FULCRUM_NODE_GPUS"] = std::to_string(a.node_gpus);
  if (job.gpus_requested > node_gpus) {
    return Status::InvalidInput("--gpus " + std::to_string(job.gpus_requested) +
                                ": this node has " + std::to_string(node_gpus) +
                                " GPU(s) (set --node-gpus or FULCRUM_NODE_GPUS)");
  }
  FULCRUM_RETURN_IF_ERROR(db.UpsertJob(job));
  fs::create_directories(data_dir + "/logs");
  FULCRUM_RETURN_IF_ERROR(
      SpawnDetached({SelfExe(), "submit", "--queue-worker", "--data-dir", data_dir},
                    data_dir + "/logs/queue-worker.log", env));
  if (a.json) {
    PrintJson(
        ctx, {{"submit",
               {{"job", a.name},
                {"queue", "local"},
                {"state", "queued"},
                {"gpus_requested", job.gpus_requested},
                {"not_before", job.not_before ? nlohmann::json(*job.not_before) : nlohmann::json()},
                {"log", data_dir + "/logs/" + a.name + ".log"}}}});
  } else {
    ctx.out << "Queued " << a.name << " (" << job.gpus_requested << " GPU(s) of " << node_gpus
            << ")";
    if (job.not_before) ctx.out << ", not before " << a.not_before;
    ctx.out << "; see fulcrum status. Log: " << data_dir << "/logs/" << a.name << ".log\n";
  }
  return Status::Ok();
}

}  // namespace

void RegisterSubmit(CLI::App* cmd, CliContext& ctx) {
  auto a = std::make_shared<SubmitArgs>();
  cmd->description(
      "Queue a job on this node, or hand it to Slurm.\n\n"
      "Local queue: the job waits until --gpus GPUs are free (jobs already running hold theirs;\n"
      "several small jobs share a server) and until --not-before, then runs under `fulcrum run`\n"
      "with CUDA_VISIBLE_DEVICES set to the GPUs it got.\n\n"
      "Slurm (--slurm): writes an sbatch script that asks for --nodes x --gpus-per-node GPUs\n"
      "(--gres), sets --requeue and --signal=B:USR1@120, and runs the command under `fulcrum run`\n"
      "so that a requeued job resumes from its last checkpoint. `fulcrum status` reads squeue and\n"
      "sacct for it. The options of `fulcrum run` (checkpoints, restarts, budget) apply to both.");
  cmd->footer(
      "Examples:\n"
      "  fulcrum submit --gpus 2 --not-before 22:00 --checkpoint-dir ckpt -- python train.py\n"
      "  fulcrum submit --slurm --nodes 2 --gpus-per-node 8 --partition gpu \\\n"
      "      --checkpoint-dir /shared/ckpt -- torchrun --nproc-per-node 8 train.py");
  cmd->add_option("--name", a->name, "Job name (default: the command's file name and the time)")
      ->type_name("NAME");
  cmd->add_option("--data-dir", a->data_dir, "Shared data dir holding jobs.db (as for fulcrum run)")
      ->type_name("DIR");
  cmd->add_option("--gpus", a->gpus, "Local queue: number of GPUs the job needs (default 1)")
      ->type_name("N");
  cmd->add_option("--not-before", a->not_before,
                  "Local queue: start no earlier than HH:MM (next occurrence, local time), "
                  "YYYY-MM-DDTHH:MM or +DURATION — e.g. an off-peak window")
      ->type_name("TIME");
  cmd->add_option(
         "--node-gpus", a->node_gpus,
         "Local queue: GPUs on this node (default $FULCRUM_NODE_GPUS, else /dev/nvidiaN count)")
      ->type_name("N");
  cmd->add_flag("--json", a->json, "Print {\"submit\": {job, queue, ...}}");
  cmd->add_flag("--slurm", a->slurm, "Submit to Slurm instead of the local queue")->group("Slurm");
  cmd->add_option("--nodes", a->nodes, "Slurm: nodes (default 1)")->type_name("N")->group("Slurm");
  cmd->add_option("--gpus-per-node", a->gpus_per_node,
                  "Slurm: GPUs per node, requested with --gres=gpu:N")
      ->type_name("N")
      ->group("Slurm");
  cmd->add_option("--partition", a->partition, "Slurm: partition (default: the cluster's default)")
      ->type_name("P")
      ->group("Slurm");
  cmd->add_option("--time", a->time_limit, "Slurm: time limit, e.g. 24:00:00")
      ->type_name("LIMIT")
      ->group("Slurm");
  cmd->add_option("--script-out", a->script_out,
                  "Slurm: where to write the sbatch script "
                  "(default <data-dir>/slurm/<name>.sbatch)")
      ->type_name("PATH")
      ->group("Slurm");
  cmd->add_flag("--dry-run", a->dry_run, "Slurm: print the sbatch script, submit nothing")
      ->group("Slurm");
  cmd->add_flag("--queue-worker", a->queue_worker,
                "Internal: serve the local queue until it is empty")
      ->group("");
  supervise::AddRunFlags(*cmd, a->flags);
  cmd->add_option("command", a->command, "The command and its arguments, after --")
      ->type_name("-- CMD ARGS...");
  cmd->callback([&ctx, a] {
    Status s = Submit(ctx, *a);
    if (!s.ok()) ReportError(ctx, s);
  });
}

}  // namespace fulcrum::cli
