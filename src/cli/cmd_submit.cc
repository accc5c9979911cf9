// `fulcrum submit`: queue a job on this node (placed on free GPUs by a queue worker, honouring
// --not-before), or hand it to Slurm with an sbatch script that runs it under `fulcrum run`.
#include <CLI/CLI.hpp>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "cli/command.h"
#include "cluster/gpu_fault.h"
#include "cluster/gpu_share_slurm.h"
#include "cluster/slurm.h"
#include "core/clock.h"
#include "core/parse.h"
#include "store/gpu_shares.h"
#include "store/jobs.h"
#include "supervise/gpu_share.h"
#include "supervise/lock.h"
#include "supervise/process.h"
#include "supervise/queue.h"
#include "supervise/queue_worker.h"
#include "supervise/run_flags.h"
#include "supervise/supervisor.h"

namespace fulcrum::cli {
namespace {
namespace fs = std::filesystem;

struct SubmitArgs {
  std::string name;
  std::string data_dir;
  int gpus = -1;  // -1: not given (1, or one GPU's share with --gpu-memory/--gpu-fraction)
  std::string not_before;
  std::string node_gpus;  // N or NxSIZE; "" = $FULCRUM_NODE_GPUS, else /dev/nvidiaN
  // Sharing a GPU by memory.
  std::string gpu_memory;
  std::optional<double> gpu_fraction;
  std::string reserve;
  std::string share = "auto";
  bool enforce = false;
  std::string shard_size = "10GiB";
  bool json = false;
  bool queue_worker = false;
  bool gpu_fault_watch = false;
  // Slurm.
  bool slurm = false;
  int nodes = 1;
  int gpus_per_node = 0;
  std::string partition;
  std::string time_limit;
  std::string account;
  std::string qos;
  std::string constraint;
  std::string mem;
  bool exclusive = false;
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

store::JobRecord NewJob(const SubmitArgs& a, const std::string& queue, double now,
                        const std::optional<store::JobRecord>& previous) {
  store::JobRecord job;
  // Identity as `fulcrum run` decides it: a stopped or lost previous run is continued.
  job.generation = 1;
  job.start = store::JobStart::kNew;
  if (previous && !supervise::PreparedBySubmit(*previous)) {
    job.start = supervise::DecideStart(*previous, supervise::StartMode::kAuto);
    if (job.start == store::JobStart::kContinued) {
      job.generation = std::max(1, previous->generation);
      job.restarts = previous->restarts;
      job.spend_usd = previous->spend_usd;
      job.step = previous->step;
    } else {
      job.generation = previous->generation + 1;
    }
  }
  job.id = a.name;
  job.name = a.name;
  job.queue = queue;
  job.state = store::JobState::kQueued;
  job.argv = a.command;
  job.gpus_requested = queue == "slurm" ? a.nodes * a.gpus_per_node : std::max(a.gpus, 1);
  if (queue == "local" && a.gpus == 0) job.gpus_requested = 0;
  job.created_at = now;
  job.workdir = fs::current_path().string();
  job.run_options = supervise::RunFlagsToArgs(a.flags);
  return job;
}

std::string Seconds(double seconds) {
  return std::to_string(static_cast<int64_t>(std::ceil(seconds))) + "s";
}

// The stop must fit inside Slurm's KillWait (its SIGTERM is followed by SIGKILL that long later):
// defaults for --stop-grace/--kill-after from KillWait, or exit 2 when the user's do not fit.
// Returns the comment that says where the figures came from.
Result<std::string> FitStopInKillWait(SubmitArgs& a, const supervise::ResolvedRun& resolved) {
  double kill_wait = cluster::kSlurmDefaultKillWaitSeconds;
  std::string source = "Slurm's default; scontrol show config did not answer";
  if (auto queried = cluster::QueryKillWaitSeconds(); queried.ok()) {
    kill_wait = *queried;
    source = "from scontrol show config";
  }
  const cluster::StopBudget budget = cluster::StopBudgetFor(kill_wait);
  const bool grace_given = a.flags.values.count("--stop-grace") > 0;
  const bool kill_after_given = a.flags.values.count("--kill-after") > 0;
  const double grace =
      grace_given ? resolved.supervisor.stop_grace_seconds : budget.stop_grace_seconds;
  const double kill_after =
      kill_after_given ? resolved.supervisor.kill_after_seconds : budget.kill_after_seconds;
  const double limit = kill_wait - budget.margin_seconds;
  if ((grace_given || kill_after_given) && grace + kill_after > limit) {
    const std::string found = Seconds(grace) + " + " + Seconds(kill_after);
    const std::string expected = "--stop-grace + --kill-after <= " + Seconds(limit);
    return Status::InvalidInput(
               "--stop-grace " + Seconds(grace) + " with --kill-after " + Seconds(kill_after) +
               " does not fit in Slurm's KillWait of " + Seconds(kill_wait) + " (" + source +
               "): Slurm sends SIGKILL that long after SIGTERM; expected " + expected +
               " (the script keeps " + Seconds(budget.margin_seconds) + " to requeue), found " +
               found + ". Omit them for " + Seconds(budget.stop_grace_seconds) + " + " +
               Seconds(budget.kill_after_seconds))
        .WithDetail(
            {"", std::nullopt, grace_given ? "--stop-grace" : "--kill-after", expected, found, {}});
  }
  a.flags.values["--stop-grace"] = Seconds(grace);
  a.flags.values["--kill-after"] = Seconds(kill_after);
  return "KillWait " + Seconds(kill_wait) + " (" + source + "): --stop-grace " + Seconds(grace) +
         " + --kill-after " + Seconds(kill_after) + " + " + Seconds(budget.margin_seconds) +
         " to requeue";
}

bool WantsShare(const SubmitArgs& a) { return !a.gpu_memory.empty() || a.gpu_fraction.has_value(); }

// The share request of --gpu-memory/--gpu-fraction/--reserve/--share/--enforce, checked.
Result<supervise::ShareRequest> ShareRequestFrom(const SubmitArgs& a) {
  supervise::ShareRequest request;
  if (!a.gpu_memory.empty() && a.gpu_fraction) {
    return Status::InvalidInput("--gpu-memory and --gpu-fraction: give one of them");
  }
  if (a.gpus > 0) {
    return Status::InvalidInput("--gpus " + std::to_string(a.gpus) +
                                " asks for whole GPUs; --gpu-memory/--gpu-fraction ask for part of "
                                "one: give one of them");
  }
  if (!a.gpu_memory.empty()) {
    auto bytes = ParseBytes(a.gpu_memory);
    if (!bytes.ok() || *bytes <= 0) {
      return Status::InvalidInput("--gpu-memory: expected a size such as 30GiB, found '" +
                                  a.gpu_memory + "'")
          .WithDetail({"", std::nullopt, "--gpu-memory", "SIZE", a.gpu_memory, {"30GiB", "10GB"}});
    }
    request.memory_bytes = *bytes;
  } else {
    FULCRUM_RETURN_IF_ERROR(supervise::CheckGpuFraction(*a.gpu_fraction));
    request.fraction = a.gpu_fraction;
  }
  if (!a.reserve.empty()) FULCRUM_RETURN_IF_ERROR(supervise::ParseReserve(a.reserve, request));
  FULCRUM_RETURN_IF_ERROR(supervise::CheckShareMode(a.share));
  request.share = a.share;
  request.enforce = a.enforce;
  return request;
}

Result<std::vector<supervise::NodeGpu>> NodeGpusFrom(const SubmitArgs& a,
                                                     const std::string& agent_url) {
  if (!a.node_gpus.empty()) return supervise::ParseNodeGpus(a.node_gpus);
  return supervise::DetectNodeGpus(agent_url);
}

// --gres=shard:N or mps:P for a shared Slurm job (cluster/gpu_share_slurm.h).
Result<std::string> SlurmShareGres(const SubmitArgs& a) {
  FULCRUM_ASSIGN_OR_RETURN(supervise::ShareRequest request, ShareRequestFrom(a));
  std::optional<double> gpu_bytes;
  if (!a.node_gpus.empty()) {
    FULCRUM_ASSIGN_OR_RETURN(auto gpus, supervise::ParseNodeGpus(a.node_gpus));
    if (!gpus.empty()) gpu_bytes = gpus.front().memory_bytes;
  }
  auto shard = ParseBytes(a.shard_size);
  if (!shard.ok() || *shard <= 0) {
    return Status::InvalidInput("--shard-size: expected a size such as 10GiB, found '" +
                                a.shard_size + "'");
  }
  cluster::SlurmShareRequest r;
  r.memory_bytes = request.memory_bytes;
  r.fraction = request.fraction;
  r.gpu_memory_bytes = gpu_bytes;
  r.shard_bytes = *shard;
  r.mps = a.share == "mps";
  return cluster::SlurmShareGres(r);
}

Status SubmitSlurm(CliContext& ctx, SubmitArgs& a, const std::string& data_dir, store::JobsDb& db,
                   double now, const std::optional<store::JobRecord>& previous,
                   const supervise::ResolvedRun& resolved) {
  if (a.nodes < 1)
    return Status::InvalidInput("--nodes: expected 1 or more, found " + std::to_string(a.nodes));
  for (const auto& [flag, value] :
       std::vector<std::pair<std::string, std::string>>{{"--partition", a.partition},
                                                        {"--account", a.account},
                                                        {"--qos", a.qos},
                                                        {"--constraint", a.constraint},
                                                        {"--mem", a.mem},
                                                        {"--time", a.time_limit}}) {
    FULCRUM_RETURN_IF_ERROR(cluster::CheckSbatchValue(flag, value));
  }
  std::string share_gres;
  if (WantsShare(a)) {
    FULCRUM_ASSIGN_OR_RETURN(share_gres, SlurmShareGres(a));
    if (a.gpus_per_node > 0 || a.nodes > 1) {
      return Status::InvalidInput(
          "--gpu-memory/--gpu-fraction ask for part of one GPU: give neither --gpus-per-node nor "
          "--nodes above 1 with them");
    }
  }
  FULCRUM_ASSIGN_OR_RETURN(std::string stop_comment, FitStopInKillWait(a, resolved));
  // The webhook URL is a secret: the script names the 0600 file that holds it.
  FULCRUM_RETURN_IF_ERROR(supervise::MoveReceiverToFile(a.flags, data_dir, a.name, !a.dry_run));
  fs::create_directories(data_dir + "/slurm");
  cluster::SbatchSpec spec;
  spec.job_name = a.name;
  spec.nodes = a.nodes;
  spec.gpus_per_node = a.gpus_per_node;
  spec.partition = a.partition;
  spec.time_limit = a.time_limit;
  spec.account = a.account;
  spec.qos = a.qos;
  spec.constraint = a.constraint;
  spec.mem = a.mem;
  spec.exclusive = a.exclusive;
  spec.gres = share_gres;
  spec.comment = stop_comment;
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
  store::JobRecord job = NewJob(a, "slurm", now, previous);
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

void SleepSeconds(double seconds) {
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
}

// One node's GPU watch of a multi-node Slurm job (started there by the job's supervisor through
// srun, cluster::NodeWatchArgv): until this node's agent reports a lost GPU, then the notice.
Status WatchThisNode(CliContext& ctx, const SubmitArgs& a, const std::string& data_dir) {
  FULCRUM_ASSIGN_OR_RETURN(supervise::ResolvedRun resolved,
                           supervise::ResolveRunFlags(a.flags, data_dir, "gpu-fault-watch"));
  const char* node = std::getenv("SLURMD_NODENAME");
  if (node == nullptr || *node == '\0') {
    return Status::InvalidInput(
        "--gpu-fault-watch: expected to run on a node of a Slurm job, found no $SLURMD_NODENAME");
  }
  cluster::GpuFaultWatchOptions watch;
  watch.agent_url = resolved.agent_url;
  watch.node = node;
  const std::string notice =
      cluster::WatchNodeUntilGpuFault(watch, resolved.notice_poll_seconds, SleepSeconds);
  ctx.out << cluster::kNodeFaultLinePrefix << notice << "\n" << std::flush;
  return Status::Ok();
}

Status Submit(CliContext& ctx, SubmitArgs& a) {
  const std::string data_dir =
      fs::absolute(store::ResolveDataDir(a.data_dir)).lexically_normal().string();
  if (a.gpu_fault_watch) return WatchThisNode(ctx, a, data_dir);
  if (a.queue_worker) {
    supervise::QueueWorkerOptions options;
    options.data_dir = data_dir;
    options.fulcrum_binary = SelfExe();
    options.gpus = supervise::DetectNodeGpus();
    options.node_gpus = static_cast<int>(options.gpus.size());
    SystemClock clock;
    supervise::QueueWorker worker(
        options, clock, [] { return std::make_unique<supervise::PosixProcessRunner>(); },
        SleepSeconds);
    return worker.Run();
  }
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
  FULCRUM_ASSIGN_OR_RETURN(supervise::ResolvedRun resolved,
                           supervise::ResolveRunFlags(a.flags, data_dir, a.name));
  FULCRUM_ASSIGN_OR_RETURN(store::JobsDb db, store::JobsDb::OpenInDataDir(data_dir));
  FULCRUM_ASSIGN_OR_RETURN(auto existing, db.GetJob(a.name));
  if (existing && store::IsActiveState(store::EffectiveState(*existing))) {
    return Status::InvalidInput("a job named '" + a.name + "' is " +
                                std::string(store::JobStateName(existing->state)) +
                                "; choose another --name");
  }
  if (a.slurm) return SubmitSlurm(ctx, a, data_dir, db, now, existing, resolved);

  if (a.gpus < -1)
    return Status::InvalidInput("--gpus: expected 0 or more, found " + std::to_string(a.gpus));
  std::map<std::string, std::string> env;
  FULCRUM_ASSIGN_OR_RETURN(std::vector<supervise::NodeGpu> gpus,
                           NodeGpusFrom(a, resolved.agent_url));
  const int node_gpus = static_cast<int>(gpus.size());
  if (!a.node_gpus.empty()) {
    env["FULCRUM_NODE_GPUS"] = a.node_gpus;
  } else if (const std::string found = supervise::FormatNodeGpus(gpus);
             found.find('x') != std::string::npos) {
    env["FULCRUM_NODE_GPUS"] = found;  // the agent's GPUs, for the queue worker
  }
  if (a.gpus > node_gpus) {
    return Status::InvalidInput("--gpus " + std::to_string(a.gpus) + ": this node has " +
                                std::to_string(node_gpus) +
                                " GPU(s) (set --node-gpus or FULCRUM_NODE_GPUS)");
  }
  std::optional<store::GpuShareRecord> share;
  if (WantsShare(a)) {
    FULCRUM_ASSIGN_OR_RETURN(supervise::ShareRequest request, ShareRequestFrom(a));
    FULCRUM_RETURN_IF_ERROR(supervise::CheckShareFits(request, gpus));
    share.emplace();
    share->job_id = a.name;
    share->memory_bytes = request.memory_bytes;
    share->fraction = request.fraction;
    share->reserve_fraction = request.reserve_fraction;
    share->reserve_bytes = request.reserve_bytes;
    share->share = request.share;
    share->enforce = request.enforce;
  }
  // The webhook URL is a secret: jobs.db and the run's argv name the 0600 file that holds it.
  FULCRUM_RETURN_IF_ERROR(supervise::MoveReceiverToFile(a.flags, data_dir, a.name, true));
  store::JobRecord job = NewJob(a, "local", now, existing);
  if (!a.not_before.empty()) {
    FULCRUM_ASSIGN_OR_RETURN(double at, supervise::ParseNotBefore(a.not_before, now));
    job.not_before = at;
  }
  // The share row first: a worker that sees the queued job must see it as a share.
  FULCRUM_RETURN_IF_ERROR(share ? store::UpsertGpuShare(db.db(), *share)
                                : store::DeleteGpuShare(db.db(), a.name));
  FULCRUM_RETURN_IF_ERROR(db.UpsertJob(job));
  supervise::PosixProcessRunner launcher;
  FULCRUM_RETURN_IF_ERROR(supervise::StartQueueWorker(launcher, SelfExe(), data_dir, env));
  if (a.json) {
    PrintJson(
        ctx,
        {{"submit",
          {{"job", a.name},
           {"queue", "local"},
           {"state", "queued"},
           {"gpus_requested", job.gpus_requested},
           {"gpu_memory_bytes",
            share && share->memory_bytes ? nlohmann::json(*share->memory_bytes) : nlohmann::json()},
           {"gpu_fraction",
            share && share->fraction ? nlohmann::json(*share->fraction) : nlohmann::json()},
           {"not_before", job.not_before ? nlohmann::json(*job.not_before) : nlohmann::json()},
           {"log", data_dir + "/logs/" + a.name + ".log"}}}});
  } else {
    ctx.out << "Queued " << a.name << " (";
    if (share && share->memory_bytes) {
      ctx.out << FormatBytes(*share->memory_bytes) << " of one GPU";
    } else if (share) {
      ctx.out << share->fraction.value_or(0) << " of one GPU";
    } else {
      ctx.out << job.gpus_requested << " GPU(s)";
    }
    ctx.out << " of " << (gpus.empty() ? "0" : supervise::FormatNodeGpus(gpus)) << ")";
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
      "so that a requeued job resumes from its last checkpoint. USR1 and SIGTERM are both notices\n"
      "(checkpoint, stop, requeue unless Slurm is ending the job); --stop-grace and --kill-after\n"
      "default to what fits in Slurm's KillWait (scontrol show config, else 30 s). With --nodes\n"
      "above 1, srun starts the command once per node and a torchrun gets --nnodes\n"
      "$SLURM_JOB_NUM_NODES and a c10d rendezvous on the first host: one job, one supervisor,\n"
      "which watches every node's agent (--agent) for a lost GPU. With --gpus-per-node the\n"
      "launcher starts one process per GPU of each node (torchrun --nproc-per-node, deepspeed\n"
      "--num_gpus, accelerate --num_processes over all nodes; each change listed in the\n"
      "script's header), and accelerate and deepspeed get this node's rank ($SLURM_NODEID) and\n"
      "the first host.\n"
      "`fulcrum status` reads squeue and sacct for it. The options of `fulcrum run`\n"
      "(checkpoints, restarts, budget) apply to both.");
  cmd->footer(
      "Examples:\n"
      "  fulcrum submit --gpus 2 --not-before 22:00 --checkpoint-dir ckpt -- python train.py\n"
      "  fulcrum submit --slurm --nodes 2 --gpus-per-node 8 --partition gpu \\\n"
      "      --checkpoint-dir /shared/ckpt -- torchrun --nproc-per-node 8 train.py");
  cmd->add_option("--name", a->name, "Job name (default: the command's file name and the time)")
      ->type_name("NAME");
  cmd->add_option("--data-dir", a->data_dir, "Shared data dir holding jobs.db (as for fulcrum run)")
      ->type_name("DIR");
  cmd->add_option("--gpus", a->gpus, "Local queue: number of whole GPUs the job needs (default 1)")
      ->type_name("N");
  cmd->add_option("--not-before", a->not_before,
                  "Local queue: start no earlier than HH:MM (next occurrence, local time), "
                  "YYYY-MM-DDTHH:MM or +DURATION — e.g. an off-peak window")
      ->type_name("TIME");
  cmd->add_option("--node-gpus", a->node_gpus,
                  "GPUs on this node: N, or NxSIZE for memory packing (e.g. 2x80GiB; default "
                  "$FULCRUM_NODE_GPUS, else the /dev/nvidiaN count, memory unknown). Slurm: the "
                  "size of the cluster's GPUs for --gpu-fraction and --share mps")
      ->type_name("N|NxSIZE");
  cmd->add_option("--gpu-memory", a->gpu_memory,
                  "Share one GPU: reserve SIZE of its memory (e.g. 30GiB). The queue packs jobs "
                  "first-fit-decreasing and never reserves more than a GPU's memory less --reserve")
      ->type_name("SIZE")
      ->group("Sharing a GPU");
  cmd->add_option("--gpu-fraction", a->gpu_fraction,
                  "Share one GPU: reserve this fraction (0, 1] of its memory (and, under MPS, "
                  "of its compute)")
      ->type_name("F")
      ->group("Sharing a GPU");
  cmd->add_option("--reserve", a->reserve,
                  "Memory of each GPU that no share may reserve: P% or SIZE (default 10%)")
      ->type_name("P%|SIZE")
      ->group("Sharing a GPU");
  cmd->add_option("--share", a->share,
                  "auto: MPS when nvidia-cuda-mps-control runs, MIG on a GPU in MIG mode, else "
                  "time-slicing; mps: MPS (the queue starts the control daemon when none runs; "
                  "Slurm: --gres=mps:P)")
      ->type_name("auto|mps")
      ->group("Sharing a GPU");
  cmd->add_flag("--enforce", a->enforce,
                "Time-slicing: a job over its reservation gets a gpu-memory-over alert, then a "
                "checkpoint request and a stop (without it: the alert only)")
      ->group("Sharing a GPU");
  cmd->add_option("--shard-size", a->shard_size,
                  "Slurm: memory one shard stands for (--gres=shard:N, N = the reservation / "
                  "this, rounded up; default 10GiB, as `fulcrum slurm conf` assumes)")
      ->type_name("SIZE")
      ->group("Slurm");
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
  cmd->add_option("--account", a->account, "Slurm: sbatch --account (charge the job to it)")
      ->type_name("ACCOUNT")
      ->group("Slurm");
  cmd->add_option("--qos", a->qos, "Slurm: sbatch --qos (quality of service)")
      ->type_name("QOS")
      ->group("Slurm");
  cmd->add_option("--constraint", a->constraint,
                  "Slurm: sbatch --constraint (node features, e.g. 'h100&ib')")
      ->type_name("FEATURES")
      ->group("Slurm");
  cmd->add_option("--mem", a->mem, "Slurm: sbatch --mem, memory per node (e.g. 64G; 0 = all)")
      ->type_name("SIZE")
      ->group("Slurm");
  cmd->add_flag("--exclusive", a->exclusive, "Slurm: sbatch --exclusive (whole nodes)")
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
  cmd->add_flag("--gpu-fault-watch", a->gpu_fault_watch,
                "Internal: on a node of a multi-node Slurm job, watch its agent (--agent) for a "
                "lost GPU; drain the node and print the notice")
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
