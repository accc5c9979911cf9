// Test fixture for the dashboard's browser test: writes two supervised jobs into
// <data-dir>/jobs.db through the real store (store::JobsDb), as `fulcrum run` would, so that the
// agent's /v1/jobs and the page's jobs table show real rows. Usage: dashboard_seed_jobs DATA_DIR
#include <chrono>
#include <cstdio>
#include <string>

#include "store/jobs.h"

namespace {

double NowUnixSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

fulcrum::Status Seed(const std::string& data_dir) {
  using fulcrum::store::JobRecord;
  FULCRUM_ASSIGN_OR_RETURN(auto db, fulcrum::store::JobsDb::OpenInDataDir(data_dir));
  const double now = NowUnixSeconds();

  JobRecord running;
  running.id = running.name = "llama-8b-sft";
  running.state = fulcrum::store::JobState::kRunning;
  running.queue = "run";
  running.argv = {"torchrun", "--nproc-per-node", "2", "train.py"};
  running.gpus = {0, 1};
  running.gpus_requested = 2;
  running.step = 12840;
  running.budget_usd = 120;
  running.price_per_hour_usd = 4.8;
  running.created_at = running.started_at = now - 8 * 3600;
  running.heartbeat_at = now;
  // The record carries the counters /v1/jobs shows; the history rows below go with them.
  running.restarts = 1;
  running.last_checkpoint_at = now - 412;
  running.last_checkpoint_path = "/ckpt/llama-8b-sft/step-12800";
  FULCRUM_RETURN_IF_ERROR(db.UpsertJob(running));
  FULCRUM_RETURN_IF_ERROR(db.AddRestart({running.id, now - 3 * 3600, 1, std::nullopt, "exit 1"}));
  FULCRUM_RETURN_IF_ERROR(
      db.AddCheckpoint({running.id, "/ckpt/llama-8b-sft/step-12800", now - 412, 38.0}));
  FULCRUM_RETURN_IF_ERROR(db.AddSpend(running.id, now - 60, 8 * 3600, 38.4));

  JobRecord stopped;
  stopped.id = stopped.name = "eval-sweep";
  stopped.state = fulcrum::store::JobState::kStopped;
  stopped.queue = "local";
  stopped.argv = {"python", "eval.py"};
  stopped.gpus = {1};
  stopped.gpus_requested = 1;
  stopped.step = 310;
  stopped.budget_usd = 10;
  stopped.created_at = stopped.started_at = now - 5 * 3600;
  stopped.finished_at = now - 3 * 3600;
  stopped.reason = "budget";
  FULCRUM_RETURN_IF_ERROR(db.UpsertJob(stopped));
  // The supervisor's alert at the stop, as `fulcrum run` records it (the jobs panel shows it).
  FULCRUM_RETURN_IF_ERROR(
      db.AddAlert({0, stopped.id, "budget_exhausted", "critical",
                   "spent $10.02 of $10.00; checkpointing and stopping", now - 3 * 3600})
          .status());
  return db.AddSpend(stopped.id, now - 3 * 3600, 2 * 3600, 10.02);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: dashboard_seed_jobs DATA_DIR\n");
    return 2;
  }
  const fulcrum::Status status = Seed(argv[1]);
  if (!status.ok()) {
    std::fprintf(stderr, "dashboard_seed_jobs: %s\n", status.message().c_str());
    return 1;
  }
  return 0;
}
