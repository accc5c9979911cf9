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
  // A fault injected by a drill: when, and the supervisor event that shows it noticed.
  struct InjectedFault {
    double t0 = 0;
    std::string detect;  // a regex over the supervisor's event lines
    int lost_gpu = -1;   // gpu-lost: the GPU left out, and the sim agent that reports it lost
    std::unique_ptr<AgentChild> lost_gpu_agent;
  };
  // Why the drill of `fault` cannot run here ("" = it can).
  std::string DrillSkipReason(const std::string& fault) const;
  // Injects `fault` into the job's process `pid`; false (with `drill` filled) when it could not.
  bool InjectFault(const std::string& fault, int64_t pid, DrillResult& drill,
                   InjectedFault& injected);
  // gpu-lost: a sim agent reports XID 79 on the job's last GPU, then the process is killed.
  bool LoseGpu(int64_t pid, DrillResult& drill, InjectedFault& injected);
  // network-cut: true (with the verdict) when the job went on without a restart, or neither.
  bool RodeOutNetworkCut(DrillResult& drill, size_t starts_before, int64_t step_before);
  // gpu-lost: the restarted process sees every GPU but the lost one.
  void CheckGpuLeftOut(DrillResult& drill, int lost_gpu);
  // Waits until the job has a complete checkpoint written by its current process and a step
  // past it; "" when it has, else why not.
  std::string WaitForDrillable();
  // After a fault at `t0`: waits for the restarted process's first step and fills the result.
  void CheckResume(DrillResult& drill, double t0, size_t starts_before, int64_t step_before,
                   const std::string& checkpoint_before);
  // A `fulcrum run` that ended by a stop (exit 75) is run again, as a scheduler would.
  bool RestartStoppedRun(DrillResult& drill, double t0);
  PhaseResult Stress();
  // The stress phase's load for --duration: the job, the bench's stability kernel, or the sim's.
  void StressLoad(bool has_job, double start, PhaseResult& phase,
                  std::vector<std::string>& failures);
  // The job's steps per second in eight windows of [start, end] and their drift.
  void JudgeThroughput(double start, double end, double unix_start, PhaseResult& phase,
                       std::vector<std::string>& failures);
  // The agent's stored series since `unix_start`, judged per GPU and metric.
  void JudgeGpus(const AgentChild& agent, double unix_start, PhaseResult& phase,
                 std::vector<std::string>& failures, std::vector<std::string>& notes);
  void StopJob();
  void Say(const std::string& text) const;
  double Now() const { return clock_.MonotonicSeconds(); }
  bool Interrupted() const { return options_.interrupted && options_.interrupted(); }
  double CheckpointEvery() const;
  // The job's FULCRUM_CHECKPOINT_REQUEST_FILE, and a poll that sets request_taken_ once a
  // request made since the process's start is gone (the job took it).
  std::string RequestFile() const;
  // Adds the small run's reason for no checkpoint on request to `failures`.
  void CheckpointFailure(bool checkpoints_came, double every, std::vector<std::string>& failures);
  void WatchRequestFile();

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
  std::string job_failure_;      // why the job cannot go on ("" = it can)
  bool no_checkpoints_ = false;  // the small run saw no checkpoint written on request
  bool request_taken_ = false;   // the job deleted a checkpoint request file (it reads them)
  ValidateReport report_;
};

// Each figure of a `bench --json` result whose verdict is "low" (below 70 % of the datasheet)
// or "unstable" (the sustained GEMM swings), as "bench gpu.gemm bf16: low (60 % of spec)".
void ScanBenchVerdicts(const nlohmann::json& bench, const std::string& where,
                       std::vector<std::string>& failures);

// The step number in a checkpoint's file name (the last number in it), nullopt without one.
std::optional<int64_t> CheckpointStep(const std::string& path);

}  // namespace fulcrum::validate
