// The queue worker without processes: fake runners (one per job), a ManualClock, jobs.db in a
// temp data dir. It places queued jobs, passes their identity to `fulcrum run`, and marks a job
// whose supervisor ended without a word as failed.
#include "supervise/queue_worker.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "store/gpu_shares.h"
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

constexpr double kGiB = 1024.0 * 1024 * 1024;

class ShareWorkerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (fs::path(FULCRUM_BUILD_DIR) / "Testing" / "tmp" /
            ::testing::UnitTest::GetInstance()->current_test_info()->name())
               .string();
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  void Queue(const std::string& name, double gib, bool enforce, const std::string& share = "auto") {
    auto db = store::JobsDb::OpenInDataDir(dir_);
    ASSERT_TRUE(db.ok());
    store::GpuShareRecord row;
    row.job_id = name;
    row.memory_bytes = gib * kGiB;
    row.enforce = enforce;
    row.share = share;
    ASSERT_TRUE(store::UpsertGpuShare(db->db(), row).ok());
    store::JobRecord job;
    job.id = job.name = name;
    job.queue = "local";
    job.state = store::JobState::kQueued;
    job.gpus_requested = 1;
    job.argv = {"python", "train.py"};
    job.created_at = ++created_;
    ASSERT_TRUE(db->UpsertJob(job).ok());
  }

  QueueWorkerOptions Options(const std::string& node_gpus) {
    QueueWorkerOptions options;
    options.data_dir = dir_;
    options.fulcrum_binary = "/opt/fulcrum";
    options.gpus = *ParseNodeGpus(node_gpus);
    options.mps_running = [] { return false; };
    return options;
  }

  // Runs the worker; `tick` is called at each of its sleeps with the runners so far (by job).
  void Serve(QueueWorkerOptions options,
             const std::function<void(std::map<std::string, std::shared_ptr<FakeRunner>>&)>& tick) {
    QueueWorker worker(
        options, clock_,
        [&]() -> std::unique_ptr<ProcessRunner> {
          all_.push_back(std::make_shared<FakeRunner>(clock_));
          return std::make_unique<Forwarder>(all_.back());
        },
        [&](double seconds) {
          clock_.Advance(seconds);
          for (const auto& r : all_) {
            if (r->starts.empty()) continue;
            const ChildSpec& spec = r->starts.front();
            runners_[spec.argv.at(4)] = r;  // `<binary> run --quiet --name ID ...`
          }
          tick(runners_);
          ASSERT_LT(++ticks_, 10000) << "the worker never finished";
        });
    ASSERT_TRUE(worker.Run().ok());
  }

  void Finish(std::shared_ptr<FakeRunner>& runner, const std::string& id) {
    if (!runner->running()) return;
    auto db = store::JobsDb::OpenInDataDir(dir_);
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE(db->UpdateState(id, store::JobState::kSucceeded, "exit 0").ok());
    ChildExit done;
    done.exit_code = 0;
    runner->Exit(done);
  }

  std::string dir_;
  double created_ = 0;
  int ticks_ = 0;
  ManualClock clock_;
  std::vector<std::shared_ptr<FakeRunner>> all_;
  std::map<std::string, std::shared_ptr<FakeRunner>> runners_;
};

TEST_F(ShareWorkerTest, AJobOverItsReservationIsStoppedAndTheOthersKeepRunning) {
  Queue("hog", 30, true);
  Queue("calm", 30, true);
  bool measured = false;
  int calm_ticks_after_stop = 0;
  Serve(Options("1x80GiB"), [&](auto& runners) {
    if (runners.size() < 2) return;
    auto db = store::JobsDb::OpenInDataDir(dir_);
    ASSERT_TRUE(db.ok());
    if (!measured) {
      measured = true;
      // Both started side by side on GPU 0; the supervisors record the agent's figures.
      store::JobMeasure over, under;
      over.peak_bytes_per_gpu = 41 * kGiB;
      under.peak_bytes_per_gpu = 29 * kGiB;
      ASSERT_TRUE(db->SetMeasure("hog", over).ok());
      ASSERT_TRUE(db->SetMeasure("calm", under).ok());
      // The hog's supervisor takes SIGTERM as a notice: checkpoint, then stop.
      runners["hog"]->on_signal = [this](int) {
        auto db = store::JobsDb::OpenInDataDir(dir_);
        ASSERT_TRUE(db->UpdateState("hog", store::JobState::kStopped, "notice").ok());
      };
      return;
    }
    if (!runners["hog"]->running() && ++calm_ticks_after_stop > 3) Finish(runners["calm"], "calm");
  });
  ASSERT_EQ(runners_.size(), 2u);
  const ChildSpec& hog = runners_["hog"]->starts.at(0);
  EXPECT_EQ(hog.env.at("CUDA_VISIBLE_DEVICES"), "0");
  EXPECT_EQ(runners_["calm"]->starts.at(0).env.at("CUDA_VISIBLE_DEVICES"), "0");
  ASSERT_EQ(runners_["hog"]->signals.size(), 1u);
  EXPECT_EQ(runners_["hog"]->signals[0].first, SIGTERM);
  EXPECT_EQ(runners_["hog"]->targets.at(0), SignalTarget::kLeader) << "its own supervisor only";
  EXPECT_TRUE(runners_["calm"]->signals.empty()) << "never another job's";
  auto db = store::JobsDb::OpenInDataDir(dir_, true);
  ASSERT_TRUE(db.ok());
  EXPECT_EQ((*db->GetJob("hog"))->state, store::JobState::kStopped);
  EXPECT_EQ((*db->GetJob("calm"))->state, store::JobState::kSucceeded);
  auto alerts = db->ListAlerts(0);
  ASSERT_TRUE(alerts.ok());
  ASSERT_EQ(alerts->size(), 1u) << "one alert, for the hog only";
  EXPECT_EQ((*alerts)[0].name, "gpu-memory-over");
  EXPECT_EQ((*alerts)[0].job_id, "hog");
  EXPECT_NE((*alerts)[0].summary.find("41.0 GiB"), std::string::npos) << (*alerts)[0].summary;
  auto share = store::GetGpuShare(db->db(), "hog");
  ASSERT_TRUE(share.ok() && share->has_value());
  EXPECT_TRUE((*share)->over_at.has_value());
}

TEST_F(ShareWorkerTest, WithoutEnforceAnOverJobIsOnlyAlerted) {
  Queue("hog", 30, false);
  bool measured = false;
  int ticks = 0;
  Serve(Options("1x80GiB"), [&](auto& runners) {
    if (runners.empty()) return;
    if (!measured) {
      measured = true;
      store::JobMeasure over;
      over.peak_bytes_per_gpu = 41 * kGiB;
      auto db = store::JobsDb::OpenInDataDir(dir_);
      ASSERT_TRUE(db->SetMeasure("hog", over).ok());
      return;
    }
    if (++ticks > 3) Finish(runners["hog"], "hog");
  });
  EXPECT_TRUE(runners_["hog"]->signals.empty());
  auto db = store::JobsDb::OpenInDataDir(dir_, true);
  auto alerts = db->ListAlerts(0);
  ASSERT_EQ(alerts->size(), 1u) << "raised once, not at every poll";
  EXPECT_EQ((*alerts)[0].severity, "warning");
}

TEST_F(ShareWorkerTest, MpsClientsGetTheirLimitsAndTheControlDaemonIsStartedOnce) {
  Queue("a", 20, false, "mps");
  Queue("b", 40, false, "mps");
  QueueWorkerOptions options = Options("1x80GiB");
  const std::string log = dir_ + "/mps.log";
  options.mps_control_argv = {FULCRUM_SOURCE_DIR "/tests/support/fake-nvidia-cuda-mps-control",
                              "-d"};
  setenv("FAKE_MPS_LOG", log.c_str(), 1);
  int ticks = 0;
  Serve(options, [&](auto& runners) {
    if (runners.size() < 2 || ++ticks < 2) return;
    Finish(runners["a"], "a");
    Finish(runners["b"], "b");
  });
  unsetenv("FAKE_MPS_LOG");
  const auto& a = runners_["a"]->starts.at(0).env;
  const auto& b = runners_["b"]->starts.at(0).env;
  EXPECT_EQ(a.at("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"), "0=20480MB");
  EXPECT_EQ(a.at("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"), "25");
  EXPECT_EQ(b.at("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"), "0=40960MB");
  EXPECT_EQ(b.at("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"), "50");
  std::ifstream f(log);
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "argv: -d\n") << "started once, before the first MPS client";
}

TEST_F(ShareWorkerTest, MigJobsGetAnInstanceUuidAndNoGpuIndex) {
  Queue("small", 8, false);
  Queue("mid", 15, false);
  QueueWorkerOptions options = Options("1x80GiB");
  options.gpus[0].mig = {{"1g.10gb", 10 * kGiB, "MIG-1111"}, {"2g.20gb", 20 * kGiB, "MIG-2222"}};
  int ticks = 0;
  Serve(options, [&](auto& runners) {
    if (runners.size() < 2 || ++ticks < 2) return;
    Finish(runners["small"], "small");
    Finish(runners["mid"], "mid");
  });
  const ChildSpec& small = runners_["small"]->starts.at(0);
  EXPECT_EQ(small.env.at("CUDA_VISIBLE_DEVICES"), "MIG-1111");
  EXPECT_EQ(std::find(small.argv.begin(), small.argv.end(), "--gpus"), small.argv.end());
  EXPECT_EQ(runners_["mid"]->starts.at(0).env.at("CUDA_VISIBLE_DEVICES"), "MIG-2222");
  auto db = store::JobsDb::OpenInDataDir(dir_, true);
  auto share = store::GetGpuShare(db->db(), "small");
  EXPECT_EQ((*share)->mode, "mig");
  EXPECT_EQ((*share)->mig_profile, "1g.10gb");
}

}  // namespace
}  // namespace fulcrum::supervise
