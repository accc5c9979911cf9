// `fulcrum validate`: the selection guides' test procedure before trusting a rented server with a
// long job, as one composition (like agent::Agent and supervise::RunJob): the environment
// (`fulcrum doctor` and a short `fulcrum bench`, against the datasheet and a plan), a small run of
// the user's command under `fulcrum run`, fault drills on that run (crash, preemption notice,
// SIGTERM, lost GPU, network cut), each checked to resume from the last complete checkpoint, and
// a stress phase watched by a `fulcrum agent`. Every process is a child of this binary (doctor,
// bench, run, agent) through core/subprocess and supervise's process runner; nothing outside the
// machine is touched. Blocking, one thread; times in seconds.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/status.h"
#include "validate/report.h"

namespace fulcrum::validate {

inline constexpr const char* kPhaseNames[] = {"environment", "small-run", "fault-drill", "stress"};
inline constexpr const char* kDrillNames[] = {"crash", "preemption-notice", "sigterm", "gpu-lost",
                                              "network-cut"};

struct ValidateOptions {
  std::vector<std::string> command;  // the training command; empty = phases 2-3 skipped
  std::string fulcrum_binary;        // this program (doctor, bench, run and agent are its commands)
  std::string catalog_dir;      // the global --catalog, passed on to doctor and bench ("" = none)
  std::string source = "nvml";  // nvml | sim: the GPUs that bench and the agent read
  // With --source sim, as `bench`/`doctor --source sim` take them: the catalog GPU simulated,
  // how many, the fraction of its datasheet it delivers, its GEMM swing, and a fault scenario
  // (the agent's format) that the bench sim and the stress phase's sim agent both play.
  int sim_gpus = 2;
  std::string sim_gpu = "H100-SXM5-80GB";
  double sim_fraction = 1.0;
  double sim_swing = 0;
  std::string sim_scenario;
  double duration_seconds = 600;  // the stress phase
  double small_run_seconds = 120;
  std::optional<double> checkpoint_every_seconds;  // nullopt = min(30 s, small run / 4)
  double drill_timeout_seconds = 120;              // each wait for a reaction or a resume
  double network_cut_seconds = 5;
  double max_drift = 0.30;  // the stress phase's throughput swing limit, (max - min) / median
  std::vector<std::string> drills;       // subset of kDrillNames, in that order; empty = all
  std::vector<std::string> skip_phases;  // of kPhaseNames: reported as skipped (by request)
  std::string progress_regex = R"(^step[ =:]*(\d+))";  // first group = the step
  std::string expect_plan;  // plan.json (`fulcrum plan --json`); "" = none
  std::string gpus;         // GPU list of the job; "" = every GPU of the source
  std::string work_dir;     // "" = a fresh directory under $TMPDIR, removed at the end
  // Progress messages for the user ("fault drill crash: ..."), and each line of the job's run.
  std::function<void(const std::string&)> progress;
  std::function<void(const std::string&)> job_output;
  // Polled: true = the user interrupted (SIGINT): the phase under way fails as unfinished, the
  // rest are skipped, and the job is stopped cleanly (checkpoint first). May be empty.
  std::function<bool()> interrupted;
};

// The names the options take, with checks: kInvalidInput naming the flag for bad values.
Status CheckValidateOptions(const ValidateOptions& options);

// Runs the phases. kInvalidInput for bad options or a command that is not found; a phase that
// fails is a verdict in the report, not an error.
Result<ValidateReport> RunValidate(const ValidateOptions& options, const Clock& clock);

}  // namespace fulcrum::validate
