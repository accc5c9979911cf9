// Slurm power saving that follows the queue (`fulcrum slurm resume|suspend|resume-fail|conf
// --cloud`): Slurm runs ResumeProgram with the nodes to power up and SuspendProgram with those
// idle for SuspendTime (https://slurm.schedmd.com/power_save.html); these run the user's
// provider argv per node (templates with {node}, {instance_type}, {region}, {provider}; never a
// shell string), record each node's offer, start and price in jobs.db (store/cloud_nodes.h),
// refuse a node whose hour would take the running spend past the budget, and mark a node DOWN
// at once on a capacity error so that Slurm moves the job to the next node type. Every outside
// effect goes through PowerEnv (commands, clock, log, detached timer), so tests use fakes.
// Free functions; thread-compatible.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "catalog/catalog.h"
#include "core/status.h"
#include "core/subprocess.h"
#include "store/sqlite.h"

namespace fulcrum::cluster {

// One node type: a catalog offer as the CLI resolved it.
struct CloudOffer {
  std::string offer;  // PROVIDER/INSTANCE/REGION
  std::string provider;
  std::string instance_type;
  std::string region;
  std::string gpu;  // catalog GPU name, the node's Features=
  int gpus = 0;
  std::optional<int> vcpus;
  std::optional<double> memory_gib;
  double usd_per_hour = 0;
  double billing_seconds = 1;  // the provider's billing granularity (3600: by the hour)
};

// The catalog offers named "PROVIDER/INSTANCE/REGION" (on-demand prices; the provider's billing
// granularity from providers.csv, per second when unknown). kInvalidInput naming the nearest
// offers for a name the catalog lacks.
Result<std::vector<CloudOffer>> ResolveCloudOffers(const catalog::Catalog& catalog,
                                                   const std::vector<std::string>& names);

// The node names of an offer: "<provider>-<instance type>" in lower case with every character
// but a-z and 0-9 turned into '-', then "-1" ... "-N".
std::string NodePrefix(const CloudOffer& offer);

// `fulcrum slurm` configuration (YAML):
//   data_dir: DIR                 # jobs.db and logs/slurm-power.log (default: fulcrum's)
//   budget_usd: 200               # running spend + a node's hour may not pass it
//   offers: [P/I/R, ...]          # node types, cheapest first is not required
//   max_nodes: 2                  # per offer
//   provision:
//     resume: [argv template]     # starts {node}; exit 0 = started
//     suspend: [argv template]    # ends {node}
//     capacity_errors: [text]     # output that means "no capacity" (e.g. a provider's code)
//     capacity_exit_codes: [N]
//     timeout: 5m                 # per provider command
//     end_before_hour: 2m         # hourly billing: end this long before the next billed hour
struct PowerConfig {
  std::string origin;  // the file
  std::string data_dir;
  std::optional<double> budget_usd;
  std::vector<std::string> offers;
  int max_nodes = 1;
  std::vector<std::string> resume_argv;
  std::vector<std::string> suspend_argv;
  std::vector<std::string> capacity_errors;
  std::vector<int> capacity_exit_codes;
  double timeout_seconds = 300;
  double end_before_hour_seconds = 120;
};
Result<PowerConfig> ParsePowerConfig(std::string_view text, const std::string& origin);

// Slurm's hostlist ("gpu-[1-3,5],cpu-07") as names; kInvalidInput for a malformed one.
Result<std::vector<std::string>> ExpandHostlist(std::string_view hostlist);
// The hostlist of the JSON file Slurm names in $SLURM_RESUME_FILE: "all_nodes" (22.05) or
// "all_nodes_resume" (later releases).
Result<std::string> ResumeFileHostlist(std::string_view json_text);

// {node}, {instance_type}, {region}, {provider} in each word.
std::vector<std::string> ExpandArgv(const std::vector<std::string>& templ, const std::string& node,
                                    const CloudOffer& offer);

struct PowerEnv {
  std::function<Result<CaptureResult>(const std::vector<std::string>& argv, double timeout)> run;
  std::function<double()> now;
  std::function<void(double seconds)> sleep;  // empty: never wait
  std::function<void(const std::string& line)> log;
  // Starts `argv` detached (the hourly-billing timer: `fulcrum slurm suspend --at T NODE`).
  std::function<Status(const std::vector<std::string>& argv)> start_detached;
  std::vector<std::string> self_argv;  // `fulcrum slurm suspend --config FILE` for the timer
};

// The real PowerEnv: RunCapture, the system clock, lines appended to `log_path` (0600) and to
// stderr, a detached child for the timer.
PowerEnv SystemPowerEnv(const std::string& log_path, std::vector<std::string> self_argv);

// What happened to one node.
struct NodeOutcome {
  std::string node;
  std::string result;  // started | reused | refused-budget | capacity | failed | ended | timer
  std::string detail;
};

// ResumeProgram: per node, find its offer, check the budget, run the provider's resume argv,
// record the start (a "NodeAddr=ADDRESS" in the provider's output is given to Slurm with
// `scontrol update nodename=X nodeaddr=ADDRESS nodehostname=X`); a budget refusal, a capacity error
// or a failure marks the node DOWN with the reason (`scontrol update nodename=X state=down
// reason=... nodeaddr=192.0.2.1`: Slurm sends a kill RPC for the node's jobs even though it never
// started, and a numeric address spares slurmctld a resolver lookup of the node's name). After a
// capacity error or a failure the jobs that waited for the node, which Slurm requeues and holds for
// cred_expire, are released (`scontrol update jobid=J starttime=now`) so that they go to the next
// node type at once; a budget refusal leaves them held.
std::vector<NodeOutcome> ResumeNodes(const PowerConfig& config,
                                     const std::vector<CloudOffer>& offers,
                                     const std::vector<std::string>& nodes, store::Database& db,
                                     PowerEnv& env);
// SuspendProgram: returns at once. Per-second billing: runs the suspend argv now. Hourly
// billing: starts a timer that ends the instance `end_before_hour` before its next billed hour.
std::vector<NodeOutcome> SuspendNodes(const PowerConfig& config,
                                      const std::vector<CloudOffer>& offers,
                                      const std::vector<std::string>& nodes, store::Database& db,
                                      PowerEnv& env);
// The timer's end: at `at`, ends the node unless it was resumed since (its row is running again).
NodeOutcome EndNodeAt(const PowerConfig& config, const std::vector<CloudOffer>& offers,
                      const std::string& node, int64_t row_id, store::Database& db, PowerEnv& env);
// ResumeFailProgram: ends whatever the provider started for the nodes and records the failure.
std::vector<NodeOutcome> ResumeFailNodes(const PowerConfig& config,
                                         const std::vector<CloudOffer>& offers,
                                         const std::vector<std::string>& nodes, store::Database& db,
                                         PowerEnv& env);

// `slurm conf --cloud`: the power-save part of slurm.conf.
struct CloudConf {
  std::vector<CloudOffer> offers;
  int max_nodes = 1;
  std::string resume_program, suspend_program, resume_fail_program;
  double suspend_time_seconds = 300;
  double resume_timeout_seconds = 600;
  double suspend_timeout_seconds = 30;  // Slurm's default SuspendTimeout
  std::string partition = "cloud";
};
std::vector<std::string> CloudConfLines(const CloudConf& conf);
// A 0755 wrapper's text: Slurm runs the program with the hostlist as its only argument.
// `catalog_dir` ("" = fulcrum's default) is passed as --catalog.
std::string ProgramWrapper(const std::string& fulcrum_binary, const std::string& config_path,
                           const std::string& subcommand, const std::string& catalog_dir = "");

}  // namespace fulcrum::cluster
