// Agent footprint: runs the real `fulcrum agent --source sim --sim-gpus 8 --interval 1s` for
// FULCRUM_BENCH_SECONDS (default 60) and reports its resident memory (VmRSS, peak VmHWM) and
// CPU use (utime + stime over wall time, % of one core) from /proc. Goals: < 20 MB, < 1 %.
// Run: build/agent_footprint_bench (figures in docs/BENCH.md, "Agent").
#include <benchmark/benchmark.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

namespace {

double StatusKib(pid_t pid, const std::string& key) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key + ":", 0) == 0) return std::stod(line.substr(key.size() + 1));
  }
  return 0;
}

double CpuSeconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::istringstream fields(text.substr(text.rfind(')') + 2));
  std::string field;
  double utime = 0, stime = 0;
  for (int i = 3; fields >> field; ++i) {  // field 3 is the state; utime 14, stime 15
    if (i == 14) utime = std::stod(field);
    if (i == 15) {
      stime = std::stod(field);
      break;
    }
  }
  return (utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

void BM_AgentFootprint8SimGpus(benchmark::State& state) {
  const char* env = std::getenv("FULCRUM_BENCH_SECONDS");
  double seconds = env != nullptr ? std::atof(env) : 60;
  namespace fs = std::filesystem;
  std::string dir =
      (fs::temp_directory_path() / ("fulcrum-footprint-" + std::to_string(getpid()))).string();
  for (auto _ : state) {
    fs::remove_all(dir);
    pid_t pid = fork();
    if (pid == 0) {
      freopen("/dev/null", "w", stdout);
      freopen("/dev/null", "w", stderr);
      execl(FULCRUM_BINARY, FULCRUM_BINARY, "agent", "--source", "sim", "--sim-gpus", "8",
            "--interval", "1s", "--listen", "127.0.0.1:0", "--data-dir", dir.c_str(), nullptr);
      _exit(127);
    }
    std::this_thread::sleep_for(std::chrono::seconds(2));  // startup excluded
    double cpu0 = CpuSeconds(pid);
    auto t0 = std::chrono::steady_clock::now();
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
    double cpu = CpuSeconds(pid) - cpu0;
    double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    state.counters["rss_MiB"] = StatusKib(pid, "VmRSS") / 1024;
    state.counters["peak_rss_MiB"] = StatusKib(pid, "VmHWM") / 1024;
    state.counters["cpu_pct_of_core"] = 100 * cpu / wall;
    state.counters["threads"] = StatusKib(pid, "Threads");
    state.SetIterationTime(wall);
    kill(pid, SIGTERM);
    waitpid(pid, nullptr, 0);
  }
  fs::remove_all(dir);
}
BENCHMARK(BM_AgentFootprint8SimGpus)->Iterations(1)->UseManualTime()->Unit(benchmark::kSecond);

}  // namespace
