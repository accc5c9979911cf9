// The queue worker without processes: fake runners (one per job), a ManualClock, jobs.db in a
// temp data dir. It places queued jobs, passes their identity to `fulcrum run`, and marks a job
// whose supervisor ended without a word as failed.
#include "supervise/queue_worker.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "store/jobs.h"
#include "supervise/fake_process_runner.h"

namespace fulcrum::supervise {
namespace {
namespace fs = std::filesystem;

// The worker owns (and drops) its runners; the test keeps the fakes alive to inspect them.
class Forwarder final : public ProcessRunner {
 public:
  explicit Forwarder(std::shared_ptr<FakeRunner> fake) : fake_(std::move(fake)) {}
  Status Start(const ChildSpec& spec) override { return fake_->Start(spec); }
  bool running() const override { return fake_->running(); }
  int64_t pid() const override { return fake_->pid(); }
  void SignalGroup(int signal) override { fake_->SignalGroup(signal); }
  void Signal(int signal, SignalTarget target) override { fake_->Signal(signal, target); }
  std::optional<ChildExit> Wait(double timeout, const LineSink& sink) override {
    return fake_->Wait(timeout, sink);
  }

 private:
  std::shared_ptr<FakeRunner> fake_;
};

TEST(QueueWorkerTest, RunsQueuedJobsAndMarksOnesWhoseSupervisorDiedFailed) {
  const std::string dir =
      (fs::path(FULCRUM_BUILD_DIR) / "Testing" / "tmp" / "queue-worker").string();
  fs::remove_all(dir);
  {
    auto db = store::JobsDb::OpenInDataDir(dir);
    ASSERT_TRUE(db.ok());
    for (const std::string name : {"a", "b"}) {
      store::JobRecord job;
      job.id = job.name = name;
      job.queue = "local";
      job.state = store::JobState::kQueued;
      job.gpus_requested = 1;
      job.argv = {"python", "train.py"};
      job.created_at = name == "a" ? 1 : 2;
      ASSERT_TRUE(db->UpsertJob(job).ok());
    }
  }
  ManualClock clock;
  std::vector<std::shared_ptr<FakeRunner>> runners;
  QueueWorkerOptions options;
  options.data_dir = dir;
  options.fulcrum_binary = "/opt/fulcrum";
  options.node_gpus = 1;
  QueueWorker worker(
      options, clock,
      [&]() -> std::unique_ptr<ProcessRunner> {
        runners.push_back(std::make_shared<FakeRunner>(clock));
        return std::make_unique<Forwarder>(runners.back());
      },
      [&](double seconds) {
        clock.Advance(seconds);
        // The first job's supervisor dies (kill -9) without updating jobs.db; the second one
        // finishes and records its own state, as `fulcrum run` does.
        if (runners.size() == 1 && runners[0]->running()) {
          ChildExit killed;
          killed.signal = SIGKILL;
          runners[0]->Exit(killed);
        }
        if (runners.size() == 2 && runners[1]->running()) {
          auto db = store::JobsDb::OpenInDataDir(dir);
          ASSERT_TRUE(db.ok());
          ASSERT_TRUE(db->UpdateState("b", store::JobState::kSucceeded, "exit 0").ok());
          ChildExit done;
          done.exit_code = 0;
          runners[1]->Exit(done);
        }
      });
  ASSERT_TRUE(worker.Run().ok());
  ASSERT_EQ(runners.size(), 2u) << "one GPU: one after the other";
  const ChildSpec& first = runners[0]->starts.at(0);
  EXPECT_EQ(first.argv.front(), "/opt/fulcrum");
  EXPECT_EQ(first.env.at("FULCRUM_QUEUE"), "local");
  EXPECT_EQ(first.output_file, dir + "/logs/a.out");
  EXPECT_NE(std::find(first.argv.begin(), first.argv.end(), "--gpus"), first.argv.end());
  auto db = store::JobsDb::OpenInDataDir(dir, true);
  ASSERT_TRUE(db.ok());
  auto a = db->GetJob("a");
  ASSERT_TRUE(a.ok() && a->has_value());
  EXPECT_EQ((*a)->state, store::JobState::kFailed);
  EXPECT_NE((*a)->reason.find("killed by SIGKILL"), std::string::npos) << (*a)->reason;
  EXPECT_EQ((*db->GetJob("b"))->state, store::JobState::kSucceeded);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace fulcrum::supervise
