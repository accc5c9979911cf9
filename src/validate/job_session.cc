// GCC 12 reports a false -Wmaybe-uninitialized inside std::regex's std::function under
// -fsanitize (the asan preset); it must be silenced before any header is read.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include "validate/job_session.h"

#include <chrono>
#include <filesystem>

#include "core/parse.h"
#include "supervise/supervisor.h"

namespace fulcrum::validate {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kRunPrefix = "fulcrum run: ";
constexpr size_t kTailLines = 40;

bool StartsWith(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

}  // namespace

JobSession::JobSession(std::vector<std::string> run_argv, const std::string& progress_regex,
                       std::string heartbeat_file, const Clock& clock,
                       std::function<void(const std::string&)> log)
    : run_argv_(std::move(run_argv)),
      progress_text_(progress_regex),
      heartbeat_file_(std::move(heartbeat_file)),
      clock_(clock),
      log_(std::move(log)) {}

Status JobSession::Start() {
  if (!progress_) {
    try {
      progress_.emplace(progress_text_);
    } catch (const std::regex_error& e) {
      return Status::InvalidInput("--progress-regex: not a regular expression: '" + progress_text_ +
                                  "' (" + e.what() + ")");
    }
  }
  supervise::ChildSpec spec;
  spec.argv = run_argv_;
  run_exit_.reset();
  return runner_.Start(spec);
}

void JobSession::SignalSupervisor(int signal) {
  runner_.Signal(signal, supervise::SignalTarget::kLeader);
}

bool JobSession::PumpUntil(const std::function<bool()>& done, double seconds) {
  const double deadline = Now() + seconds;
  auto sink = [this](supervise::Stream s, std::string_view line) { OnLine(s, line); };
  while (!done()) {
    const double left = deadline - Now();
    if (left <= 0 || Interrupted()) return done();
    if (!runner_.running()) return done();
    if (auto exit = runner_.Wait(std::min(left, 0.05), sink)) run_exit_ = exit;
    PollHeartbeat();
  }
  return true;
}

void JobSession::Pump(double seconds) {
  const double deadline = Now() + seconds;
  auto sink = [this](supervise::Stream s, std::string_view line) { OnLine(s, line); };
  while (Now() < deadline && !Interrupted()) {
    if (!runner_.running()) {
      runner_.Wait(std::min(deadline - Now(), 0.05), sink);  // no child: just waits
      continue;
    }
    if (auto exit = runner_.Wait(std::min(deadline - Now(), 0.05), sink)) run_exit_ = exit;
    PollHeartbeat();
  }
}

void JobSession::PollHeartbeat() {
  if (heartbeat_file_.empty() || progress_lines_ > 0) return;
  std::error_code ec;
  const auto mtime = fs::last_write_time(heartbeat_file_, ec);
  if (ec) return;
  const double at = std::chrono::duration<double>(mtime.time_since_epoch()).count();
  if (at == heartbeat_mtime_) return;
  heartbeat_mtime_ = at;
  const std::optional<supervise::HeartbeatFigures> figures =
      supervise::ReadHeartbeatFigures(heartbeat_file_);
  if (!figures) return;
  const int64_t step = figures->step;
  if (!steps_.empty() && steps_.back().step == step) return;
  RecordStep(Now(), step, true);
}

void JobSession::RecordStep(double at, int64_t step, bool sampled) {
  // A step not after the last one seen, while the current start already has its first step: a
  // restarted job whose "started" line has not been read yet.
  const bool restarted = !steps_.empty() && step <= steps_.back().step && !starts_.empty() &&
                         starts_.back().first_step && !unclaimed_restart_;
  if (restarted && !sampled) unclaimed_restart_ = steps_.size();
  steps_.push_back({at, step});
  if (!starts_.empty() && !starts_.back().first_step) {
    starts_.back().first_step = step;
    starts_.back().first_step_at = at;
    starts_.back().first_step_sampled = sampled;
    unclaimed_restart_.reset();
  }
}

std::optional<int64_t> JobSession::last_step() const {
  if (steps_.empty()) return std::nullopt;
  return steps_.back().step;
}

std::string JobSession::Tail(size_t lines) const {
  std::string out;
  const size_t from = tail_.size() > lines ? tail_.size() - lines : 0;
  for (size_t i = from; i < tail_.size(); ++i) out += tail_[i] + "\n";
  return out;
}

void JobSession::OnLine(supervise::Stream stream, std::string_view line) {
  const double now = Now();
  if (log_) log_(std::string(line));
  tail_.emplace_back(line);
  if (tail_.size() > kTailLines) tail_.pop_front();
  if (stream == supervise::Stream::kStderr && StartsWith(line, kRunPrefix)) {
    const std::string text(line.substr(kRunPrefix.size()));
    events_.push_back({now, text});
    static const std::regex started(R"(^started pid (\d+)(?: resuming from (.*))?)");
    static const std::regex complete(
        R"(^checkpoint complete: (.*?)( \([0-9.]+ s after the request\))?$)");
    static const std::regex latest(R"(^latest complete checkpoint: (.*)$)");
    std::smatch m;
    if (std::regex_search(text, m, started)) {
      TrainingStart start;
      start.at = now;
      auto pid = ParseInt(m[1].str());
      start.pid = pid.ok() ? *pid : 0;
      if (m[2].matched) start.resumed_from = m[2].str();
      if (unclaimed_restart_) {  // its first steps came before this line
        const StepSeen& first = steps_[*unclaimed_restart_];
        start.first_step = first.step;
        start.first_step_at = first.at;
        unclaimed_restart_.reset();
      }
      starts_.push_back(start);
    } else if (std::regex_search(text, m, complete)) {
      checkpoints_.push_back({now, m[1].str(), m[2].matched});
      latest_checkpoint_ = m[1].str();
    } else if (std::regex_search(text, m, latest)) {
      latest_checkpoint_ = m[1].str();
    }
    return;
  }
  std::match_results<std::string_view::const_iterator> m;
  if (progress_ && std::regex_search(line.begin(), line.end(), m, *progress_) && m.size() > 1 &&
      m[1].matched) {
    auto step = ParseInt(std::string(m[1].first, m[1].second));
    if (!step.ok()) return;
    ++progress_lines_;
    RecordStep(now, *step, false);
  }
}

}  // namespace fulcrum::validate
