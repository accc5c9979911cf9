#include "supervise/queue_worker.h"

#include <signal.h>

#include <filesystem>
#include <optional>

#include "core/parse.h"
#include "core/subprocess.h"
#include "store/gpu_shares.h"
#include "store/jobs.h"
#include "supervise/lock.h"
#include "supervise/queue.h"

namespace fulcrum::supervise {
namespace {

void MarkFailed(store::JobsDb& db, const std::string& id, const std::string& why) {
  auto job = db.GetJob(id);
  if (job.ok() && job->has_value() && store::IsActiveState((*job)->state)) {
    (void)db.UpdateState(id, store::JobState::kFailed, why);
  }
}

}  // namespace

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
  Children children;  // by job id
  while (true) {
    for (auto it = children.begin(); it != children.end();) {
      auto exit = it->second->Wait(0, [](Stream, std::string_view) {});
      if (!exit) {
        ++it;
        continue;
      }
      MarkFailed(db, it->first, "its supervisor exited (" + exit->Describe() + ")");
      it = children.erase(it);
    }
    FULCRUM_ASSIGN_OR_RETURN(auto jobs, db.ListJobs());
    bool waiting = false;
    for (const auto& j : jobs)
      waiting = waiting || (j.state == store::JobState::kQueued && j.queue == "local");
    if (!waiting && children.empty()) return Status::Ok();
    EnforceShares(db, jobs, children);
    FULCRUM_RETURN_IF_ERROR(StartPlaced(db, jobs, children));
    sleep_(options_.poll_seconds);
  }
}

Status QueueWorker::StartPlaced(store::JobsDb& db, const std::vector<store::JobRecord>& jobs,
                                Children& children) {
  FULCRUM_ASSIGN_OR_RETURN(auto share_rows, store::ListGpuShares(db.db()));
  std::map<std::string, store::GpuShareRecord> shares;
  for (auto& row : share_rows) shares[row.job_id] = std::move(row);
  std::vector<NodeGpu> gpus = options_.gpus;
  if (gpus.empty()) {
    for (int g = 0; g < options_.node_gpus; ++g) gpus.push_back({g, std::nullopt, {}});
  }
  bool mps_running = false;
  if (!shares.empty())
    mps_running = options_.mps_running ? options_.mps_running() : MpsControlRunning();
  const std::string& data_dir = options_.data_dir;
  for (const auto& p : PlaceQueuedJobs(jobs, shares, gpus, mps_running, clock_.UnixSeconds())) {
    auto job = db.GetJob(p.job_id);
    if (!job.ok() || !job->has_value()) continue;
    store::JobRecord row = **job;
    row.gpus = p.gpus;
    row.state = store::JobState::kStarting;
    std::map<std::string, std::string> env;
    std::string gpu_list;
    for (int g : p.gpus) gpu_list += (gpu_list.empty() ? "" : ",") + std::to_string(g);
    if (p.share) {
      store::GpuShareRecord share = shares[row.id];
      share.gpu = p.share->gpu;
      share.reservation_bytes = p.share->reservation_bytes;
      share.mode = p.share->mode;
      share.mig_uuid = p.share->mig_uuid;
      share.mig_profile = p.share->mig_profile;
      share.over_at.reset();
      FULCRUM_RETURN_IF_ERROR(store::UpsertGpuShare(db.db(), share));
      for (const NodeGpu& g : gpus) {
        if (g.index == p.share->gpu) env = ShareEnv(*p.share, ShareRequestOf(share), g);
      }
      // A MIG instance is named by its UUID: `fulcrum run` gets no --gpus index.
      if (p.share->mode == "mig") gpu_list.clear();
      if (p.share->mode == "mps" && !mps_running) EnsureMpsControl();
    }
    FULCRUM_RETURN_IF_ERROR(db.UpsertJob(row));
    ChildSpec spec;
    spec.argv = {
        options_.fulcrum_binary, "run", "--quiet", "--name", row.id, "--data-dir", data_dir};
    if (!gpu_list.empty()) spec.argv.insert(spec.argv.end(), {"--gpus", gpu_list});
    spec.argv.insert(spec.argv.end(), row.run_options.begin(), row.run_options.end());
    spec.argv.push_back("--");
    spec.argv.insert(spec.argv.end(), row.argv.begin(), row.argv.end());
    spec.env = env;
    spec.env["FULCRUM_QUEUE"] = "local";
    spec.cwd = row.workdir;
    spec.output_file = data_dir + "/logs/" + row.id + ".out";
    auto runner = make_runner_();
    Status started = runner->Start(spec);
    if (!started.ok()) {
      MarkFailed(db, row.id, "cannot start its supervisor: " + started.message());
      continue;
    }
    children[row.id] = std::move(runner);
  }
  return Status::Ok();
}

void QueueWorker::EnforceShares(store::JobsDb& db, const std::vector<store::JobRecord>& jobs,
                                Children& children) {
  for (const store::JobRecord& job : jobs) {
    auto child = children.find(job.id);
    if (child == children.end() || !job.measured.peak_bytes_per_gpu) continue;
    auto found = store::GetGpuShare(db.db(), job.id);
    if (!found.ok() || !found->has_value()) continue;
    store::GpuShareRecord share = **found;
    // MPS and MIG enforce the limit themselves; time-slicing has only this watch.
    if (share.mode != "time" || share.over_at || !share.reservation_bytes) continue;
    const double peak = *job.measured.peak_bytes_per_gpu;
    if (peak <= *share.reservation_bytes) continue;
    const double now = clock_.UnixSeconds();
    share.over_at = now;
    (void)store::UpsertGpuShare(db.db(), share);
    std::string summary = "job " + job.id + " holds " + FormatBytes(peak) + " on GPU " +
                          std::to_string(share.gpu.value_or(-1)) + ", over its reservation of " +
                          FormatBytes(*share.reservation_bytes) +
                          (share.enforce ? "; asking it to checkpoint, then stopping it (--enforce)"
                                         : "; other jobs on the GPU may run out of memory");
    store::AlertRecord alert;
    alert.job_id = job.id;
    alert.name = "gpu-memory-over";
    alert.severity = share.enforce ? "critical" : "warning";
    alert.summary = summary;
    alert.at = now;
    (void)db.AddAlert(alert);
    // SIGTERM to the job's own `fulcrum run` (not its group): a notice, so it checkpoints, then
    // stops the job (state stopped); the jobs beside it are not touched.
    if (share.enforce) child->second->Signal(SIGTERM, SignalTarget::kLeader);
  }
}

void QueueWorker::EnsureMpsControl() {
  if (mps_control_started_ || options_.mps_control_argv.empty()) return;
  mps_control_started_ = true;
  CaptureOptions capture;
  capture.timeout_seconds = 10;
  (void)RunCapture(options_.mps_control_argv, capture);
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
