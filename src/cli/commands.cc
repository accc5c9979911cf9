// The command table: every subcommand, once, in the order and groups `fulcrum --help` lists them.
#include "cli/commands.h"

namespace fulcrum::cli {

// Each Register* is defined in cmd_<name>.cc.
void RegisterPlan(CLI::App* cmd, CliContext& ctx);
void RegisterFit(CLI::App* cmd, CliContext& ctx);
void RegisterEstimate(CLI::App* cmd, CliContext& ctx);
void RegisterServeEstimate(CLI::App* cmd, CliContext& ctx);
void RegisterServePlan(CLI::App* cmd, CliContext& ctx);
void RegisterOffers(CLI::App* cmd, CliContext& ctx);
void RegisterGpus(CLI::App* cmd, CliContext& ctx);
void RegisterProviders(CLI::App* cmd, CliContext& ctx);
void RegisterSpot(CLI::App* cmd, CliContext& ctx);
void RegisterCatalog(CLI::App* cmd, CliContext& ctx);
void RegisterAgent(CLI::App* cmd, CliContext& ctx);
void RegisterQuery(CLI::App* cmd, CliContext& ctx);
void RegisterRun(CLI::App* cmd, CliContext& ctx);
void RegisterSubmit(CLI::App* cmd, CliContext& ctx);
void RegisterStatus(CLI::App* cmd, CliContext& ctx);
void RegisterSlurm(CLI::App* cmd, CliContext& ctx);
void RegisterCost(CLI::App* cmd, CliContext& ctx);
void RegisterBench(CLI::App* cmd, CliContext& ctx);
void RegisterDoctor(CLI::App* cmd, CliContext& ctx);
void RegisterEnv(CLI::App* cmd, CliContext& ctx);
void RegisterValidate(CLI::App* cmd, CliContext& ctx);
void RegisterVersion(CLI::App* cmd, CliContext& ctx);
void RegisterCompletion(CLI::App* cmd, CliContext& ctx);

const std::vector<CommandEntry>& CommandTable() {
  static const std::vector<CommandEntry> kCommands = {
      {"plan", "Choose",
       "Rank the GPU offers, layouts and pricing models for a training job by time, cost and "
       "a weighted score",
       RegisterPlan},
      {"fit", "Choose", "Will a training fit in GPU memory? Breakdown, verdict and ways out",
       RegisterFit},
      {"estimate", "Choose",
       "Evaluate one training configuration: per-GPU memory breakdown and step time",
       RegisterEstimate},
      {"serve-estimate", "Choose",
       "Size inference for one configuration: memory, max concurrency, TTFT, TPOT, throughput",
       RegisterServeEstimate},
      {"serve-plan", "Choose",
       "Rank the GPU offers that serve a model within latency targets by $ per million tokens",
       RegisterServePlan},
      {"offers", "Choose", "List and rank the instance offers of the catalog", RegisterOffers},
      {"gpus", "Choose", "List the GPU models of the catalog with their specs", RegisterGpus},
      {"providers", "Choose", "Evaluate the GPU cloud providers of the catalog", RegisterProviders},
      {"spot", "Choose", "Risk-adjusted cost of a job on spot capacity, per policy (Monte Carlo)",
       RegisterSpot},
      {"catalog", "Choose", "Import price lists into, and validate, a catalog", RegisterCatalog},
      {"agent", "Watch",
       "Run the node agent: GPU telemetry, alerts, idle release, /v1, /metrics, dashboard",
       RegisterAgent},
      {"query", "Watch", "Print a metric's samples from the agent's store (agent.db)",
       RegisterQuery},
      {"run", "Survive",
       "Run a training command under supervision: checkpoints, restarts, preemption, budget",
       RegisterRun},
      {"submit", "Survive", "Queue a job on this node, or hand it to Slurm", RegisterSubmit},
      {"status", "Survive",
       "List supervised jobs: state, GPUs, restarts, checkpoint and heartbeat age, spend",
       RegisterStatus},
      {"slurm", "Survive",
       "Slurm helpers: gres lines for shared GPUs; power saving that follows the queue",
       RegisterSlurm},
      {"cost", "Survive", "Spend per job and per UTC day, from the ledger of fulcrum run",
       RegisterCost},
      {"bench", "Validate", "Measure this server's GPUs and disk against their datasheet",
       RegisterBench},
      {"doctor", "Validate", "Check the GPU software stack of this server", RegisterDoctor},
      {"env", "Validate",
       "Write this node's set-up: Dockerfile, Ansible playbook, compose file with an image the "
       "driver runs",
       RegisterEnv},
      {"validate", "Validate", "Test procedure before a long job: small run, fault drills, stress",
       RegisterValidate},
      {"version", "Shell", "Print fulcrum's version", RegisterVersion},
      {"completion", "Shell", "Print a completion script for bash, zsh or fish",
       RegisterCompletion},
  };
  return kCommands;
}

}  // namespace fulcrum::cli
