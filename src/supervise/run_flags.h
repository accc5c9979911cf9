// The options of `fulcrum run` that `fulcrum submit` also accepts and passes on (to the local
// queue's `fulcrum run`, or into an sbatch script): one table of flags, kept as the user's text so
// they can be re-emitted verbatim, and turned into SupervisorOptions in one place with messages
// that name the flag. Not thread-safe (a value filled by CLI11).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "catalog/catalog.h"
#include "core/status.h"
#include "supervise/notice.h"
#include "supervise/supervisor.h"

namespace CLI {
class App;
}

namespace fulcrum::supervise {

struct RunFlags {
  std::map<std::string, std::string> values;  // "--stop-grace" -> "60s"; absent = default
  std::map<std::string, bool> switches;       // "--restart-on-stall" -> true
  std::vector<std::string> final_exit_codes;  // --final-exit-code, repeatable
  std::vector<std::string> preemption;        // --preemption, repeatable / comma list
  // Not a flag: the DMI file `--preemption auto` reads to tell an Alibaba Cloud ECS instance
  // (notice.h OnAlibabaEcs); tests point it elsewhere.
  std::string dmi_product_name_path = kDmiProductNamePath;
};

// Adds the shared flags to `app`, storing into `flags` (which must outlive parsing).
void AddRunFlags(CLI::App& app, RunFlags& flags);
// The flags as command-line words ("--stop-grace", "60s", ...), for re-running them.
std::vector<std::string> RunFlagsToArgs(const RunFlags& flags);

// Where `fulcrum submit` keeps a job's --receiver URL: <data_dir>/secrets/<job_id>.receiver.
std::string ReceiverSecretPath(const std::string& data_dir, const std::string& job_id);
// A secret stays out of what is stored and shown: `--receiver URL` becomes `--receiver-file
// ReceiverSecretPath(...)`, the URL written there (mode 0600, its new directory 0700) unless
// `write` is false (a dry run), so that jobs.db, the sbatch script and the argv of the runs (ps)
// never hold it. No-op without --receiver.
Status MoveReceiverToFile(RunFlags& flags, const std::string& data_dir, const std::string& job_id,
                          bool write);
// The webhook of a job's stored `fulcrum run` options as it may be shown: scheme and host only
// (alert::RedactUrl, "https://hooks.slack.com/<redacted>"), read from its --receiver-file;
// nullopt when the job has none.
std::optional<std::string> ShownReceiver(const std::vector<std::string>& run_options);

struct ResolvedRun {
  SupervisorOptions supervisor;
  std::vector<std::string> preemption_sources;  // "aws", "gcp", "azure", "alibaba"; empty = none
  bool preemption_auto = false;  // probe the sources, watch those that answer (alibaba: on ECS)
  std::string aws_url, gcp_url, azure_url, alibaba_url;
  double notice_poll_seconds = 0.5;
  std::string agent_url;
  std::string nccl_ras;  // NCCL's RAS socket address, "off" = hangs not watched
  double nccl_ras_interval_seconds = 10;
  std::string receiver_url;     // SECRET (may embed a token); "" = no delivery of its own
  std::string receiver_format;  // alert::ReceiverFormat name, validated
  std::string log_dir;
  double log_max_bytes = 0;
  int log_files = 0;
  std::string offer;  // PROVIDER/INSTANCE[/REGION] for the price, resolved by the CLI
  bool offer_spot = false;
  std::optional<double> plan_usd_per_hour;  // the --plan candidate's price, if it has one
};

// Parses the flags; `data_dir` and `job_id` fill defaults (heartbeat file, log dir).
Result<ResolvedRun> ResolveRunFlags(const RunFlags& flags, const std::string& data_dir,
                                    const std::string& job_id);

// The hourly price of the catalog offer named "PROVIDER/INSTANCE[/REGION]" (case-insensitive):
// spot when `spot`, else on-demand. Without a region, every matching region must agree on it.
Result<double> ResolveOfferPrice(const catalog::Catalog& catalog, const std::string& offer,
                                 bool spot);

// "SIGUSR1", "USR1" or "10" -> 10.
Result<int> ParseSignal(const std::string& text);
// "0,1,3" -> {0,1,3}.
Result<std::vector<int>> ParseGpuList(const std::string& text);

}  // namespace fulcrum::supervise
