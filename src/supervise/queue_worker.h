// The local queue's worker: one process per data dir (a JobLock named ".queue-worker") that
// places queued jobs on free GPUs (supervise/queue.h) and runs each under its own `fulcrum run`
// child until the queue is empty and its children have ended; a child that ends while its job
// still looks active marks the job failed. `fulcrum submit` starts it detached
// (StartQueueWorker). Jobs that share a GPU by memory (store/gpu_shares.h) get their GPU or MIG
// instance in CUDA_VISIBLE_DEVICES (and the MPS limits under MPS); under time-slicing a job whose
// measured peak (its supervisor's per-process figure from the agent, in jobs.db) passes its
// reservation gets a `gpu-memory-over` alert and, with --enforce, SIGTERM to its own supervisor
// (checkpoint, then stop): never another job's. The Clock, ProcessRunner factory and sleep seams
// let tests drive it without processes. One thread.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/status.h"
#include "store/jobs.h"
#include "supervise/gpu_share.h"
#include "supervise/process.h"

namespace fulcrum::supervise {

struct QueueWorkerOptions {
  std::string data_dir;        // absolute
  std::string fulcrum_binary;  // what runs each job: `<binary> run --quiet --name ID ...`
  int node_gpus = 0;           // whole GPUs of unknown memory, used when `gpus` is empty
  std::vector<NodeGpu> gpus;   // the node's GPUs (--node-gpus NxSIZE, $FULCRUM_NODE_GPUS)
  // Whether an MPS control daemon runs (default: MpsControlRunning()).
  std::function<bool()> mps_running;
  // Started (argv, short, with a timeout) before the first MPS job when no daemon runs: NVIDIA's
  // MPS documentation starts the control daemon with `nvidia-cuda-mps-control -d`.
  std::vector<std::string> mps_control_argv = {"nvidia-cuda-mps-control", "-d"};
  double poll_seconds = 0.3;
  int lock_attempts = 30;  // another worker may be finishing: retry the lock this often
};

using RunnerFactory = std::function<std::unique_ptr<ProcessRunner>()>;
using Sleeper = std::function<void(double seconds)>;

class QueueWorker {
 public:
  QueueWorker(QueueWorkerOptions options, Clock& clock, RunnerFactory make_runner, Sleeper sleep);
  // Serves the queue until it is empty and every job it started has ended. Ok at once when another
  // worker holds the queue.
  Status Run();

 private:
  using Children = std::map<std::string, std::unique_ptr<ProcessRunner>>;
  // Places what fits now and starts each placed job's `fulcrum run`.
  Status StartPlaced(store::JobsDb& db, const std::vector<store::JobRecord>& jobs,
                     Children& children);
  // Alerts on (and with --enforce stops) running time-sliced jobs over their reservation.
  void EnforceShares(store::JobsDb& db, const std::vector<store::JobRecord>& jobs,
                     Children& children);
  // Starts the MPS control daemon once when none runs.
  void EnsureMpsControl();
  QueueWorkerOptions options_;
  bool mps_control_started_ = false;
  Clock& clock_;
  RunnerFactory make_runner_;
  Sleeper sleep_;
};

// Starts `<fulcrum_binary> submit --queue-worker --data-dir DIR` detached (own session, output to
// <data_dir>/logs/queue-worker.log), with `env` added to its environment.
Status StartQueueWorker(ProcessRunner& runner, const std::string& fulcrum_binary,
                        const std::string& data_dir, const std::map<std::string, std::string>& env);

}  // namespace fulcrum::supervise
