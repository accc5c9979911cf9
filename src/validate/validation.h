// The state of one `fulcrum validate` run, shared by its phases (environment.cc: doctor and
// bench; validate.cc: the options, the job's start and stop, the small run; fault_drill.cc: the
// drills; stress.cc: the stress phase). Internal to src/validate; one thread.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "supervise/plan_file.h"
#include "validate/agent_child.h"
#include "validate/drill_network.h"
#include "validate/job_session.h"
#include "validate/notice_endpoint.h"
#include "validate/validate.h"

namespace fulcrum::validate {

class Validation {
 public:
  Validation(const ValidateOptions& options, const Clock& clock);
  ~Validation();
  Result<ValidateReport> Run();

 private:
  bool Wanted(const std::string& phase) const;
  PhaseResult Environment();
  // --source and the --sim-* flags for `fulcrum bench` and `doctor`.
  std::vector<std::string> SourceArgs() const;
  Status StartJob();
  PhaseResult SmallRun();
  PhaseResult FaultDrills();
  DrillResult Drill(const std::string& fault);
  // Waits until the job has a complete checkpoint written by its current process and a step
  // past it; "" when it has, else why not.
  std::string WaitForDrillable();
  // After a fault at `t0`: waits for the restarted process's first step and fills the result.
  void CheckResume(DrillResult& drill, double t0, size_t starts_before, int64_t step_before,
                   const std::string& checkpoint_before);
  // A `fulcrum run` that ended by a stop (exit 75) is run again, as a scheduler would.
  bool RestartStoppedRun(DrillResult& drill, double t0);
  PhaseResult Stress();
  void StopJob();
  void Say(const std::string& text) const;
  double Now() const { return clock_.MonotonicSeconds(); }
  bool Interrupted() const { return options_.interrupted && options_.interrupted(); }
  double CheckpointEvery() const;

  ValidateOptions options_;
  // --expect's first candidate, read once (the options check refused a file it cannot read).
  std::optional<Result<supervise::PlannedRun>> plan_;
  const Clock& clock_;
  std::string work_dir_;
  bool own_work_dir_ = false;
  std::vector<int> gpus_;
  int drill_agent_port_ = 0;
  std::unique_ptr<NoticeEndpoint> notice_;
  std::unique_ptr<DrillNetwork> network_;
  std::string network_unavailable_;  // why there is no drill network
  std::unique_ptr<JobSession> job_;
  std::string job_failure_;  // why the job cannot go on ("" = it can)
  ValidateReport report_;
};

// Each figure of a `bench --json` result whose verdict is "low" (below 70 % of the datasheet)
// or "unstable" (the sustained GEMM swings), as "bench gpu.gemm bf16: low (60 % of spec)".
void ScanBenchVerdicts(const nlohmann::json& bench, const std::string& where,
                       std::vector<std::string>& failures);

// The step number in a checkpoint's file name (the last number in it), nullopt without one.
std::optional<int64_t> CheckpointStep(const std::string& path);

}  // namespace fulcrum::validate
