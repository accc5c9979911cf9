#include "cluster/gpu_fault.h"

#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "cluster/slurm.h"
#include "core/parse.h"
#include "supervise/process.h"

namespace fulcrum::cluster {
namespace {

class SlurmGpuFaultSource final : public supervise::NoticeSource {
 public:
  explicit SlurmGpuFaultSource(GpuFaultWatchOptions options) : options_(std::move(options)) {
    if (!options_.drain) options_.drain = DrainNode;
  }
  std::string name() const override { return "gpu-fault"; }

  Result<std::optional<std::string>> Check() override {
    FULCRUM_ASSIGN_OR_RETURN(
        auto gpus, supervise::GpuHealthFromAgent(options_.agent_url, options_.timeout_seconds));
    if (!baseline_) baseline_ = gpus;
    auto lost = FindLostGpu(gpus, *baseline_);
    if (!lost) return std::optional<std::string>();
    std::string notice = "GPU fault on node " + options_.node + ": " + *lost;
    Status drained = options_.drain(options_.node, "fulcrum: " + *lost);
    notice += drained.ok() ? "; node drained" : "; drain failed: " + drained.message();
    return std::optional<std::string>(notice);
  }

 private:
  GpuFaultWatchOptions options_;
  std::optional<std::vector<supervise::AgentGpuHealth>> baseline_;  // the first answer
};

// Reads the node watchers' lines from their srun; see MakeNodeWatchFanOutSource.
class NodeWatchFanOutSource final : public supervise::NoticeSource {
 public:
  NodeWatchFanOutSource(std::vector<std::string> argv, double restart_seconds)
      : argv_(std::move(argv)), restart_seconds_(restart_seconds) {}
  ~NodeWatchFanOutSource() override {
    if (!runner_.running()) return;
    runner_.SignalGroup(SIGTERM);  // srun ends the step on every node
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    while (std::chrono::steady_clock::now() < deadline && !runner_.Wait(0.1, Ignore())) {
    }
  }  // the runner SIGKILLs what is left
  std::string name() const override { return "gpu-fault"; }

  Result<std::optional<std::string>> Check() override {
    const auto now = std::chrono::steady_clock::now();
    if (!runner_.running() &&
        (!started_ || now - *started_ >= std::chrono::duration<double>(restart_seconds_))) {
      started_ = now;
      supervise::ChildSpec spec;
      spec.argv = argv_;
      FULCRUM_RETURN_IF_ERROR(runner_.Start(spec));
    }
    std::optional<std::string> notice;
    auto exit = runner_.Wait(0, [&](supervise::Stream stream, std::string_view line) {
      if (stream == supervise::Stream::kStdout && !notice &&
          line.starts_with(kNodeFaultLinePrefix)) {
        notice = std::string(line.substr(std::string_view(kNodeFaultLinePrefix).size()));
      } else if (stream == supervise::Stream::kStderr) {
        last_error_ = std::string(line);
      }
    });
    if (notice) return notice;
    if (exit) {
      return Status::Unavailable("the node GPU watch (" + argv_[0] + ") ended (" +
                                 exit->Describe() + "): " + last_error_);
    }
    return std::optional<std::string>();
  }

 private:
  static supervise::LineSink Ignore() {
    return [](supervise::Stream, std::string_view) {};
  }
  std::vector<std::string> argv_;
  double restart_seconds_;
  supervise::PosixProcessRunner runner_;
  std::optional<std::chrono::steady_clock::time_point> started_;
  std::string last_error_;
};

}  // namespace

std::string WatchNodeUntilGpuFault(GpuFaultWatchOptions options, double poll_seconds,
                                   const std::function<void(double seconds)>& sleep) {
  auto source = MakeSlurmGpuFaultSource(std::move(options));
  while (true) {
    auto notice = source->Check();
    if (notice.ok() && notice->has_value()) return **notice;
    sleep(poll_seconds);
  }
}

std::vector<std::string> NodeWatchArgv(const std::string& fulcrum_binary,
                                       const std::string& agent_url, int nodes,
                                       double poll_seconds) {
  std::ostringstream poll;
  poll << poll_seconds << "s";
  return {"srun",
          "--overlap",
          "--gres=none",
          "--nodes=" + std::to_string(nodes),
          "--ntasks-per-node=1",
          "--kill-on-bad-exit=0",
          "--job-name=fulcrum-gpu-watch",
          fulcrum_binary,
          "submit",
          "--gpu-fault-watch",
          "--agent",
          agent_url,
          "--notice-poll",
          poll.str()};
}

std::unique_ptr<supervise::NoticeSource> MakeNodeWatchFanOutSource(std::vector<std::string> argv,
                                                                   double restart_seconds) {
  return std::make_unique<NodeWatchFanOutSource>(std::move(argv), restart_seconds);
}

std::optional<std::string> FindLostGpu(const std::vector<supervise::AgentGpuHealth>& gpus,
                                       const std::vector<supervise::AgentGpuHealth>& baseline) {
  for (const auto& gpu : gpus) {
    const supervise::AgentGpuHealth* before = nullptr;
    for (const auto& b : baseline) {
      if (b.index == gpu.index) before = &b;
    }
    const std::string id = "GPU " + std::to_string(gpu.index);
    if (gpu.last_xid == supervise::kXidFallenOffTheBus) return id + " XID 79 (fallen off the bus)";
    const bool new_xid = before == nullptr || before->last_xid != gpu.last_xid;
    if (new_xid && gpu.last_xid == supervise::kXidDoubleBitEcc)
      return id + " XID 48 (double-bit ECC error)";
    if (new_xid && gpu.last_xid == supervise::kXidUncontainedEcc)
      return id + " XID 95 (uncontained ECC error)";
    if (gpu.ecc_uncorrected) {
      const double old_count =
          before != nullptr && before->ecc_uncorrected ? *before->ecc_uncorrected : 0;
      if (*gpu.ecc_uncorrected > old_count) {
        return id + " uncorrectable ECC error (" + std::to_string(static_cast<int64_t>(old_count)) +
               " -> " + std::to_string(static_cast<int64_t>(*gpu.ecc_uncorrected)) + ")";
      }
    }
  }
  return std::nullopt;
}

std::unique_ptr<supervise::NoticeSource> MakeSlurmGpuFaultSource(GpuFaultWatchOptions options) {
  return std::make_unique<SlurmGpuFaultSource>(std::move(options));
}

std::vector<std::unique_ptr<supervise::NoticeSource>> SlurmJobNoticeSources(
    const supervise::ResolvedRun& run) {
  std::vector<std::unique_ptr<supervise::NoticeSource>> sources;
  const char* node = std::getenv("SLURMD_NODENAME");
  if (node == nullptr || *node == '\0' || run.agent_url.empty() || run.agent_url == "none")
    return sources;
  const char* nodes_text = std::getenv("SLURM_JOB_NUM_NODES");
  const auto nodes = ParseInt(nodes_text != nullptr ? nodes_text : "1");
  if (nodes.ok() && *nodes > 1) {
    std::error_code ec;
    const std::string self = std::filesystem::read_symlink("/proc/self/exe", ec).string();
    sources.push_back(MakeNodeWatchFanOutSource(NodeWatchArgv(
        ec ? "fulcrum" : self, run.agent_url, static_cast<int>(*nodes), run.notice_poll_seconds)));
    return sources;
  }
  GpuFaultWatchOptions watch;
  watch.agent_url = run.agent_url;
  watch.node = node;
  sources.push_back(MakeSlurmGpuFaultSource(std::move(watch)));
  return sources;
}

}  // namespace fulcrum::cluster
