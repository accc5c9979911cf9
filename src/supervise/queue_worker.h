// The local queue's worker: one process per data dir (a JobLock named ".queue-worker") that
// places queued jobs on free GPUs (supervise/queue.h) and runs each under its own `fulcrum run`
// child until the queue is empty and its children have ended; a child that ends while its job
// still looks active marks the job failed. `fulcrum submit` starts it detached
// (StartQueueWorker). The Clock, ProcessRunner factory and sleep seams let tests drive it without
// processes. One thread.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/status.h"
#include "supervise/process.h"

namespace fulcrum::supervise {

struct QueueWorkerOptions {
  std::string data_dir;        // absolute
  std::string fulcrum_binary;  // what runs each job: `<binary> run --quiet --name ID ...`
  int node_gpus = 0;
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
  QueueWorkerOptions options_;
  Clock& clock_;
  RunnerFactory make_runner_;
  Sleeper sleep_;
};

// Starts `<fulcrum_binary> submit --queue-worker --data-dir DIR` detached (own session, output to
// <data_dir>/logs/queue-worker.log), with `env` added to its environment.
Status StartQueueWorker(ProcessRunner& runner, const std::string& fulcrum_binary,
                        const std::string& data_dir, const std::map<std::string, std::string>& env);

}  // namespace fulcrum::supervise
