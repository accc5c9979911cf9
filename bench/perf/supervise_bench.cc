// Reaction times of the supervisor with real processes (the test trainer) and the real loop:
//  * crash -> restarted child: from the child's last line before abort() to the restarted child's
//    first line, both as the supervisor reads them from the pipes (backoff set to 0 so only the
//    supervisor's own latency is measured; the default backoff adds 1 s on purpose);
//  * preemption notice -> checkpoint signal: from the moment a fake AWS metadata server on
//    127.0.0.1 starts answering instance-action to the trainer's "checkpoint begin" line (it
//    prints it when it finds the checkpoint request file, the default channel), with the
//    default 0.5 s notice poll and 50 ms loop tick.
// Each iteration is one supervised run; the reported time is the manual latency.
#include <benchmark/benchmark.h>
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <thread>

#include "core/clock.h"
#include "supervise/notice.h"
#include "supervise/process.h"
#include "supervise/supervisor.h"
#include "support/fake_http_server.h"

namespace fulcrum::supervise {
namespace {

using Steady = std::chrono::steady_clock;

double Seconds(Steady::time_point a, Steady::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

void BM_CrashToRestartedChild(benchmark::State& state) {
  std::vector<double> samples;
  for (auto _ : state) {
    SupervisorOptions o;
    o.job_id = "bench";
    o.argv = {FULCRUM_TRAINER,   "--steps", "100000000",     "--step-ms", "1",
              "--crash-at-step", "1",       "--crash-times", "1"};
    o.restart.backoff_initial_seconds = 0;
    o.stop_grace_seconds = 0;
    Steady::time_point crashed{}, restarted{};
    int starts = 0;
    o.on_output = [&](Stream, std::string_view line) {
      if (line.rfind("crashing at step", 0) == 0) crashed = Steady::now();
      if (line.rfind("trainer pid", 0) == 0 && ++starts == 2) restarted = Steady::now();
    };
    o.stop_notice = [&]() -> std::optional<std::string> {
      if (starts >= 2) return "benchmark done";
      return std::nullopt;
    };
    SystemClock clock;
    PosixProcessRunner runner;
    Supervisor supervisor(o, clock, runner, nullptr);
    supervisor.Run();
    const double latency = Seconds(crashed, restarted);
    samples.push_back(latency);
    state.SetIterationTime(latency);
  }
  state.counters["max_ms"] = *std::max_element(samples.begin(), samples.end()) * 1e3;
}
BENCHMARK(BM_CrashToRestartedChild)->UseManualTime()->Iterations(20)->Unit(benchmark::kMillisecond);

void BM_NoticeToCheckpointSignal(benchmark::State& state) {
  std::atomic<bool> notice{false};
  fulcrum::testing::FakeHttpServer fake;
  httplib::Server& server = fake.server();
  server.Put("/latest/api/token", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("t", "text/plain");
  });
  server.Get("/latest/meta-data/spot/instance-action", [&](const httplib::Request&,
                                                           httplib::Response& res) {
    if (!notice) {
      res.status = 404;
      return;
    }
    res.set_content(R"({"action":"terminate","time":"2026-11-30T06:00:00Z"})", "application/json");
  });
  fake.Start();
  const std::string ckpt =
      std::filesystem::temp_directory_path() / ("fulcrum-bench-ckpt-" + std::to_string(getpid()));
  std::vector<double> samples;
  for (auto _ : state) {
    notice = false;
    std::filesystem::remove_all(ckpt);
    std::filesystem::create_directories(ckpt);
    std::vector<std::unique_ptr<NoticeSource>> sources;
    sources.push_back(MakeAwsNoticeSource(fake.url(), 1));
    NoticeWatcher watcher(std::move(sources), 0.5);  // the default --notice-poll
    watcher.Start();
    SupervisorOptions o;
    o.job_id = "bench";
    o.argv = {FULCRUM_TRAINER, "--steps", "100000000", "--step-ms", "1"};
    o.checkpoints.dir = ckpt;
    // The default channel: the request file the trainer polls (no signal).
    o.checkpoint_request_file = ckpt + "/.checkpoint-request";
    o.checkpoint_every_seconds = 3600;
    o.stop_grace_seconds = 5;
    Steady::time_point noticed{}, signalled{};
    int steps = 0;
    o.on_output = [&](Stream, std::string_view line) {
      // Raise the notice at a random point of the poll cycle: after a varying number of steps.
      if (line.rfind("step ", 0) == 0 &&
          ++steps == 50 + static_cast<int>(samples.size()) * 37 % 400) {
        noticed = Steady::now();
        notice = true;
      }
      if (line.rfind("checkpoint begin", 0) == 0 && signalled == Steady::time_point{})
        signalled = Steady::now();
    };
    o.stop_notice = [&watcher]() { return watcher.Notice(); };
    SystemClock clock;
    PosixProcessRunner runner;
    Supervisor supervisor(o, clock, runner, nullptr);
    supervisor.Run();
    watcher.Stop();
    const double latency = Seconds(noticed, signalled);
    samples.push_back(latency);
    state.SetIterationTime(latency);
  }
  fake.Stop();
  std::filesystem::remove_all(ckpt);
  state.counters["max_ms"] = *std::max_element(samples.begin(), samples.end()) * 1e3;
}
BENCHMARK(BM_NoticeToCheckpointSignal)
    ->UseManualTime()
    ->Iterations(20)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace fulcrum::supervise
