#include "supervise/queue_worker.h"

#include <filesystem>
#include <optional>

#include "store/jobs.h"
#include "supervise/lock.h"
#include "supervise/queue.h"

namespace fulcrum::supervise {

QueueWorker::QueueWorker(QueueWorkerOptions options, Clock& clock, RunnerFactory make_runner,
                         Sleeper sleep)
    : options_(std::move(options)),
      clock_(clock),
      make_runner_(std::move(make_runner)),
      sleep_(std::move(sleep)) {}

Status QueueWorker::Run() {
  const std::string& data_dir = options_.data_dir;
  std::optional<JobLock> lock;
  for (int attempt = 0; attempt < options_.lock_attempts && !lock; ++attempt) {
    auto acquired = JobLock::Acquire(data_dir, ".queue-worker");
    if (acquired.ok()) {
      lock.emplace(std::move(*acquired));
    } else {
      sleep_(0.1);
    }
  }
  if (!lock) return Status::Ok();  // another worker serves the queue
  FULCRUM_ASSIGN_OR_RETURN(store::JobsDb db, store::JobsDb::OpenInDataDir(data_dir));
  std::error_code ec;
  std::filesystem::create_directories(data_dir + "/logs", ec);
  std::map<std::string, std::unique_ptr<ProcessRunner>> children;  // by job id
  auto mark_failed = [&](const std::string& id, const std::string& why) {
    auto job = db.GetJob(id);
    if (job.ok() && job->has_value() && store::IsActiveState((*job)->state)) {
      (void)db.UpdateState(id, store::JobState::kFailed, why);
    }
  };
  while (true) {
    for (auto it = children.begin(); it != children.end();) {
      auto exit = it->second->Wait(0, [](Stream, std::string_view) {});
      if (!exit) {
        ++it;
        continue;
      }
      mark_failed(it->first, "its supervisor exited (" + exit->Describe() + ")");
      it = children.erase(it);
    }
    FULCRUM_ASSIGN_OR_RETURN(auto jobs, db.ListJobs());
    bool waiting = false;
    for (const auto& j : jobs)
      waiting = waiting || (j.state == store::JobState::kQueued && j.queue == "local");
    if (!waiting && children.empty()) return Status::Ok();
    for (const auto& p : PlaceQueuedJobs(jobs, options_.node_gpus, clock_.UnixSeconds())) {
      auto job = db.GetJob(p.job_id);
      if (!job.ok() || !job->has_value()) continue;
      store::JobRecord row = **job;
      row.gpus = p.gpus;
      row.state = store::JobState::kStarting;
      FULCRUM_RETURN_IF_ERROR(db.UpsertJob(row));
      std::string gpu_list;
      for (int g : p.gpus) gpu_list += (gpu_list.empty() ? "" : ",") + std::to_string(g);
      ChildSpec spec;
      spec.argv = {
          options_.fulcrum_binary, "run", "--quiet", "--name", row.id, "--data-dir", data_dir};
      if (!gpu_list.empty()) spec.argv.insert(spec.argv.end(), {"--gpus", gpu_list});
      spec.argv.insert(spec.argv.end(), row.run_options.begin(), row.run_options.end());
      spec.argv.push_back("--");
      spec.argv.insert(spec.argv.end(), row.argv.begin(), row.argv.end());
      spec.env["FULCRUM_QUEUE"] = "local";
      spec.cwd = row.workdir;
      spec.output_file = data_dir + "/logs/" + row.id + ".out";
      auto runner = make_runner_();
      Status started = runner->Start(spec);
      if (!started.ok()) {
        mark_failed(row.id, "cannot start its supervisor: " + started.message());
        continue;
      }
      children[row.id] = std::move(runner);
    }
    sleep_(options_.poll_seconds);
  }
}

Status StartQueueWorker(ProcessRunner& runner, const std::string& fulcrum_binary,
                        const std::string& data_dir,
                        const std::map<std::string, std::string>& env) {
  std::error_code ec;
  std::filesystem::create_directories(data_dir + "/logs", ec);
  ChildSpec spec;
  spec.argv = {fulcrum_binary, "submit", "--queue-worker", "--data-dir", data_dir};
  spec.env = env;
  spec.output_file = data_dir + "/logs/queue-worker.log";
  spec.detached = true;
  return runner.Start(spec);
}

}  // namespace fulcrum::supervise
