// The composition of `fulcrum run`, as agent::Agent is the agent's: from the parsed flags it
// resolves the options (price from the catalog, GPUs), takes the job's lock, opens jobs.db, sets up
// the rotating job log, the preemption watchers, the agent's GPU health query and (with
// --receiver) a delivery worker for the job's alerts, ends a process group that an earlier
// supervisor of the name left running, and drives one Supervisor to the end. The CLI parses
// flags, installs the signal edge (`stop_requested`) and prints the result; the Clock and
// ProcessRunner seams let tests run it without the binary. One thread drives it (the delivery
// worker has its own); the runner and clock must outlive Run().
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.h"
#include "core/status.h"
#include "store/jobs.h"
#include "supervise/notice.h"
#include "supervise/process.h"
#include "supervise/run_flags.h"
#include "supervise/supervisor.h"

namespace fulcrum::supervise {

struct RunJobRequest {
  std::string name;         // "" = the command's file name
  std::string data_dir;     // resolved (store::ResolveDataDir)
  std::string catalog_dir;  // resolved; read only for --offer
  std::string cwd;          // the job's working directory
  std::string gpus;         // --gpus text, "" = inherit CUDA_VISIBLE_DEVICES
  std::string queue;        // "" = "run"; "local" / "slurm" from $FULCRUM_QUEUE
  StartMode start_mode = StartMode::kAuto;
  RunFlags flags;
  std::vector<std::string> command;
};

struct RunJobHooks {
  // Each line of the job's output (already in the log file); may be empty.
  std::function<void(Stream, std::string_view)> output;
  // The supervisor's events (already in the log file); may be empty.
  std::function<void(const std::string&)> event;
  // Polled every tick: a reason means "stop cleanly" (the CLI's signal edge); may be empty.
  std::function<std::optional<std::string>()> stop_requested;
  // More notice sources watched beside the cloud ones, made from the resolved flags (the Slurm
  // node's GPU fault watch, cluster/gpu_fault.h); may be empty.
  std::function<std::vector<std::unique_ptr<NoticeSource>>(const ResolvedRun&)> notice_sources;
  // Made from the resolved flags at start: SupervisorOptions::hang_evidence (under Slurm, the
  // drain of a node whose hung rank's GPU shows an XID, cluster/nccl_hang_drain.h); may be
  // empty, and may return an empty function (no evidence to look for).
  std::function<std::function<std::optional<std::string>(
      const std::vector<telemetry::NcclLaggingRank>&)>(const ResolvedRun&)>
      hang_evidence;
};

struct RunJobResult {
  std::string job_id;
  std::string uid;
  store::JobStart start = store::JobStart::kNew;
  SupervisorOutcome outcome;
  std::optional<double> spend_usd;  // nullopt without a price
  std::string log_file;
};

class RunJob {
 public:
  RunJob(RunJobRequest request, Clock& clock, ProcessRunner& runner, RunJobHooks hooks = {});

  // Bad input (flags, a command that is not found, --continue with nothing to continue) is
  // kInvalidInput/kNotFound before anything starts; a held lock is kUnavailable.
  Result<RunJobResult> Run();

 private:
  RunJobRequest request_;
  Clock& clock_;
  ProcessRunner& runner_;
  RunJobHooks hooks_;
};

}  // namespace fulcrum::supervise
