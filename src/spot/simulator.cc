#include "spot/simulator.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/parallel.h"
#include "core/parse.h"
#include "spot/short_number.h"

namespace fulcrum::spot {

namespace {

// Tolerance for comparing event times and progress (seconds); far below any real duration.
constexpr double kEps = 1e-6;

enum class Mode { kIdle, kSpot, kOnDemand };
enum class Phase { kSetup, kCompute, kCheckpoint };

// The state of one job run and the rules that move it from event to event. Events: a phase
// ends (set-up, compute until the next checkpoint or the end, checkpoint write), spot
// availability changes, or a policy threshold is crossed (safety net, Uniform Progress lines).
class JobRun {
 public:
  JobRun(const JobParams& job, Policy policy, AvailabilityCursor& availability)
      : job_(job),
        policy_(policy),
        availability_(availability),
        relaunch_seconds_(job.changeover_seconds + job.restart_seconds),
        progress_slope_(
            std::isfinite(job.deadline_seconds) ? job.work_seconds / job.deadline_seconds : 0.0),
        notice_covers_(NoticeCoversCheckpoint(job.notice, job.checkpoint_cost_seconds)),
        notice_tail_seconds_(
            std::max(0.0, job.notice.notice_seconds - job.notice.poll_interval_seconds)) {}

  TrialResult Run() {
    while (progress_ < job_.work_seconds - kEps) {
      ++result_.events;
      Decide();
      if (job_.skip_routine_cycles) SkipRoutineCycles();
      const double phase_end = mode_ == Mode::kIdle ? kNever : now_ + phase_left_;
      const double change = availability_.next_change_seconds();
      const double next = std::min({phase_end, change, PolicyTimer()});
      if (next == kNever) {  // idle forever: no capacity and no deadline to force on-demand
        result_.finish_seconds = kNever;
        return result_;
      }
      AdvanceTo(next);
      if (mode_ != Mode::kIdle && next == phase_end) {
        phase_left_ = 0;
        EndPhase();
      }
      // Every change due now, in order (an outage of length 0 flips twice at once).
      while (availability_.next_change_seconds() <= now_) {
        availability_.Advance();
        if (mode_ == Mode::kSpot && !availability_.available()) Preempt();
      }
    }
    if (mode_ != Mode::kIdle) Stop(0);
    result_.finish_seconds = now_;
    result_.deadline_met = now_ <= job_.deadline_seconds + kEps;
    return result_;
  }

 private:
  // Progress that survives a preemption right now.
  double SafeProgress() const {
    if (mode_ != Mode::kSpot || phase_ == Phase::kSetup) return progress_;
    if (!notice_covers_) return committed_;
    if (phase_ == Phase::kCheckpoint) return progress_;
    return std::max(committed_, progress_ - notice_tail_seconds_);
  }

  // Time left minus work left (counting only safe progress).
  double SafetyGap() const {
    return (job_.deadline_seconds - now_) - (job_.work_seconds - SafeProgress());
  }

  // Uniform Progress: behind the straight line from (0, 0) to (D, W) at time t.
  bool BehindAt(double t) const {
    return progress_slope_ > 0 && progress_ - progress_slope_ * t < kEps;
  }

  void Decide() {
    if (policy_ == Policy::kOnDemand || forced_on_demand_) {
      if (mode_ != Mode::kOnDemand) {
        if (mode_ == Mode::kSpot) Stop(VoluntaryStopSeconds());
        Start(Mode::kOnDemand);
      }
      return;
    }
    if (policy_ == Policy::kSpotOnly) {  // no safety net: wait for spot, whatever the deadline
      if (mode_ == Mode::kIdle && availability_.available()) Start(Mode::kSpot);
      return;
    }
    // Safety net (Wu et al.): R < C + 2d -> on-demand for good.
    if (mode_ != Mode::kOnDemand && SafetyGap() - 2 * relaunch_seconds_ < -kEps) {
      forced_on_demand_ = true;
      if (mode_ == Mode::kSpot) Stop(VoluntaryStopSeconds());
      Start(Mode::kOnDemand);
      return;
    }
    if (NeedsDeadlineCheckpoint()) {
      phase_ = Phase::kCheckpoint;
      phase_left_ = job_.checkpoint_cost_seconds;
      return;
    }
    if (mode_ == Mode::kIdle) {
      if (availability_.available()) {
        Start(Mode::kSpot);
      } else if (policy_ == Policy::kUniformProgress && BehindAt(now_)) {
        Start(Mode::kOnDemand);
      }
      return;
    }
    if (policy_ == Policy::kUniformProgress && mode_ == Mode::kOnDemand && CanLeaveOnDemand()) {
      Stop(VoluntaryStopSeconds());
      Start(Mode::kSpot);
    }
  }

  // Fast path: on spot right after a checkpoint, whole compute + checkpoint cycles that end
  // before the next availability change, before the last segment and before any safety-net or
  // deadline-checkpoint threshold involve no decision: jump over them in one step. The margin
  // keeps the jump clear of events that fall on a cycle boundary.
  void SkipRoutineCycles() {
    const double tau = job_.checkpoint_interval_seconds;
    if (mode_ != Mode::kSpot || phase_ != Phase::kCompute || progress_ != committed_ ||
        notice_covers_ || !std::isfinite(tau)) {
      return;
    }
    constexpr double kMargin = 1.0;
    const double delta = job_.checkpoint_cost_seconds;
    const double cycle = tau + delta;
    double cycles = std::floor((job_.work_seconds - progress_ - kMargin) / tau) - 1;
    const double change = availability_.next_change_seconds();
    if (std::isfinite(change)) {
      cycles = std::min(cycles, std::floor((change - now_ - kMargin) / cycle));
    }
    if (std::isfinite(job_.deadline_seconds) && policy_ != Policy::kSpotOnly) {
      // Cycle j (from 0) ends its checkpoint with the gap at gap0 - j delta - cycle; it must
      // stay above the deadline-checkpoint threshold 2d + delta.
      const double room = SafetyGap() - cycle - 2 * relaunch_seconds_ - delta - kMargin;
      if (room <= 0) return;
      if (delta > 0) cycles = std::min(cycles, std::floor(room / delta) + 1);
    }
    if (cycles < 1) return;
    now_ += cycles * cycle;
    progress_ += cycles * tau;
    committed_ = progress_;
    EnterCompute();
  }

  // Progress not yet in a checkpoint, on spot without a notice that covers a checkpoint.
  double UnsavedSeconds() const {
    const bool exposed = mode_ == Mode::kSpot && phase_ == Phase::kCompute && !notice_covers_;
    return exposed ? progress_ - committed_ : 0.0;
  }

  // A checkpoint ahead of schedule when the unsaved work, not the deadline, is about to trip
  // the safety net: worth it once it saves at least its own cost.
  bool NeedsDeadlineCheckpoint() const {
    const double unsaved = UnsavedSeconds();
    return unsaved > 0 &&
           SafetyGap() - 2 * relaunch_seconds_ - job_.checkpoint_cost_seconds < kEps &&
           unsaved - job_.checkpoint_cost_seconds > -kEps;
  }

  // Uniform Progress hysteresis: leave on-demand for spot only once progress >= ep(t + 2d),
  // and only when the changeover cannot trip the safety net.
  bool CanLeaveOnDemand() const {
    return availability_.available() && phase_ == Phase::kCompute &&
           progress_ - progress_slope_ * (now_ + 2 * relaunch_seconds_) > -kEps &&
           SafetyGap() - 3 * relaunch_seconds_ > -kEps;
  }

  // The next time a policy rule could fire with no other event in between (kNever if none).
  // Firing early is harmless (Decide re-checks); it must never be late.
  double PolicyTimer() const {
    if (policy_ == Policy::kOnDemand || policy_ == Policy::kSpotOnly || forced_on_demand_) {
      return kNever;
    }
    double timer = kNever;
    if (mode_ != Mode::kOnDemand) {
      const bool gap_constant = mode_ == Mode::kSpot && phase_ == Phase::kCompute &&
                                notice_covers_ && progress_ - notice_tail_seconds_ >= committed_;
      // Just past the crossing, so that a checkpoint ending exactly then commits first.
      if (!gap_constant) timer = now_ + (SafetyGap() - 2 * relaunch_seconds_) + 2 * kEps;
      if (mode_ == Mode::kSpot && phase_ == Phase::kCompute && !notice_covers_) {
        // Deadline checkpoint: the gap falls and the unsaved work grows, both at rate 1.
        const double gap_wait = SafetyGap() - 2 * relaunch_seconds_ - job_.checkpoint_cost_seconds;
        const double unsaved_wait = job_.checkpoint_cost_seconds - UnsavedSeconds();
        timer = std::min(timer, now_ + std::max({gap_wait, unsaved_wait, 0.0}));
      }
    }
    if (policy_ != Policy::kUniformProgress || progress_slope_ <= 0) return timer;
    if (mode_ == Mode::kIdle && !availability_.available()) {
      timer = std::min(timer, std::max(now_, progress_ / progress_slope_));
    } else if (mode_ == Mode::kOnDemand && phase_ == Phase::kCompute && availability_.available() &&
               progress_slope_ < 1 && SafetyGap() - 3 * relaunch_seconds_ > -kEps) {
      // Progress grows at rate 1, the line ep(t + 2d) at rate W/D < 1; the gap is constant on
      // on-demand, so only the line can still change the decision.
      const double behind = progress_slope_ * (now_ + 2 * relaunch_seconds_) - progress_;
      if (behind > 0) timer = std::min(timer, now_ + behind / (1 - progress_slope_));
    }
    return timer;
  }

  void AdvanceTo(double t) {
    const double dt = t - now_;
    now_ = t;
    if (mode_ == Mode::kIdle) return;
    phase_left_ -= dt;
    if (phase_ == Phase::kCompute) {
      progress_ += dt;
      if (mode_ == Mode::kOnDemand) committed_ = progress_;
    }
  }

  void Start(Mode mode) {
    mode_ = mode;
    session_start_ = now_;
    committed_ = progress_;
    if (now_ == 0 && !launched_) {
      EnterCompute();  // the first instance is ready at t = 0
    } else {
      phase_ = Phase::kSetup;
      phase_left_ = job_.changeover_seconds + (progress_ > 0 ? job_.restart_seconds : 0.0);
    }
    launched_ = true;
  }

  void EnterCompute() {
    phase_ = Phase::kCompute;
    const double left = job_.work_seconds - progress_;
    phase_left_ = mode_ == Mode::kOnDemand
                      ? left
                      : std::min(left, job_.checkpoint_interval_seconds - (progress_ - committed_));
  }

  void EndPhase() {
    switch (phase_) {
      case Phase::kSetup:
        EnterCompute();
        break;
      case Phase::kCompute:
        if (progress_ >= job_.work_seconds - kEps) {
          progress_ = job_.work_seconds;
          return;  // Run() stops the instance
        }
        phase_ = Phase::kCheckpoint;
        phase_left_ = job_.checkpoint_cost_seconds;
        break;
      case Phase::kCheckpoint:
        committed_ = progress_;
        EnterCompute();
        break;
    }
  }

  void Preempt() {
    ++result_.preemptions;
    double saved = committed_;
    if (notice_covers_ && phase_ == Phase::kCheckpoint) saved = progress_;
    if (notice_covers_ && phase_ == Phase::kCompute) {
      saved = std::max(committed_, progress_ - notice_tail_seconds_);
    }
    result_.lost_work_seconds += progress_ - saved;
    progress_ = saved;
    committed_ = saved;
    Stop(0);
  }

  // A voluntary switch keeps the old instance for one checkpoint write while the next one
  // launches (assumes delta <= d); nothing to save during set-up.
  double VoluntaryStopSeconds() const {
    return phase_ == Phase::kSetup ? 0.0 : job_.checkpoint_cost_seconds;
  }

  void Stop(double extra_seconds) {
    const double run_seconds = now_ - session_start_ + extra_seconds;
    const double billed =
        BilledSeconds(run_seconds, job_.billing_granularity_seconds, job_.minimum_billed_seconds);
    if (mode_ == Mode::kSpot) {
      result_.spot_seconds += run_seconds;
      result_.cost_usd += billed / 3600.0 * job_.spot_usd_per_hour;
    } else {
      result_.on_demand_seconds += run_seconds;
      result_.cost_usd += billed / 3600.0 * job_.on_demand_usd_per_hour;
    }
    mode_ = Mode::kIdle;
  }

  const JobParams& job_;
  const Policy policy_;
  AvailabilityCursor& availability_;
  const double relaunch_seconds_;  // d + R: what a switch costs before work resumes
  const double progress_slope_;    // W / D
  const bool notice_covers_;
  const double notice_tail_seconds_;  // compute lost between a seen notice and the preemption

  double now_ = 0;
  double progress_ = 0;   // work done, including uncommitted
  double committed_ = 0;  // work saved in a checkpoint (or done on on-demand)
  Mode mode_ = Mode::kIdle;
  Phase phase_ = Phase::kSetup;
  double phase_left_ = 0;
  double session_start_ = 0;
  bool launched_ = false;
  bool forced_on_demand_ = false;
  TrialResult result_;
};

Status RequireNonNegative(double value, const char* field) {
  if (std::isfinite(value) && value >= 0) return Status::Ok();
  return Status::InvalidInput(std::string(field) + ": expected a finite value >= 0, found " +
                              ShortNumber(value));
}

double Percentile(std::vector<double>& values, double fraction) {
  // Nearest rank: the smallest value with at least `fraction` of the values at or below it.
  size_t rank = static_cast<size_t>(std::ceil(fraction * static_cast<double>(values.size())));
  rank = std::clamp<size_t>(rank, 1, values.size()) - 1;
  std::nth_element(values.begin(), values.begin() + static_cast<long>(rank), values.end());
  return values[rank];
}

void RunTrials(const JobParams& job, const PreemptionModel& model, Policy policy, uint64_t seed,
               size_t begin, size_t end, TrialResult* out) {
  for (size_t i = begin; i < end; ++i) {
    SplitMix64 rng(TrialSeed(seed, i));
    AvailabilityCursor cursor(model, rng);
    out[i] = SimulateTrial(job, policy, cursor);
  }
}

PolicySummary Summarize(Policy policy, const std::vector<TrialResult>& trials) {
  PolicySummary s;
  s.policy = policy;
  s.trials = static_cast<int>(trials.size());
  std::vector<double> costs, hours;
  costs.reserve(trials.size());
  hours.reserve(trials.size());
  double met = 0, lost = 0, preemptions = 0;
  for (const TrialResult& t : trials) {  // in trial order: sums do not depend on threads
    costs.push_back(t.cost_usd);
    hours.push_back(t.finish_seconds / 3600.0);
    s.mean_cost_usd += t.cost_usd;
    s.mean_hours += t.finish_seconds / 3600.0;
    s.spot_hours += t.spot_seconds / 3600.0;
    s.on_demand_hours += t.on_demand_seconds / 3600.0;
    met += t.deadline_met ? 1 : 0;
    lost += t.lost_work_seconds / 3600.0;
    preemptions += t.preemptions;
  }
  const double n = static_cast<double>(trials.size());
  s.mean_cost_usd /= n;
  s.mean_hours /= n;
  s.spot_hours /= n;
  s.on_demand_hours /= n;
  s.deadline_met_fraction = met / n;
  s.preemptions_mean = preemptions / n;
  s.lost_work_hours_mean = lost / n;
  s.lost_work_per_preemption_hours = preemptions > 0 ? lost / preemptions : 0;
  s.p50_cost_usd = Percentile(costs, 0.5);
  s.p90_cost_usd = Percentile(costs, 0.9);
  s.p90_hours = Percentile(hours, 0.9);
  return s;
}

}  // namespace

std::string_view PolicyName(Policy policy) {
  switch (policy) {
    case Policy::kOnDemand:
      return "on-demand";
    case Policy::kGreedy:
      return "greedy";
    case Policy::kUniformProgress:
      return "uniform-progress";
    case Policy::kSpotOnly:
      return "spot-only";
  }
  return "?";
}

Result<Policy> ParsePolicy(std::string_view name) {
  for (Policy p :
       {Policy::kOnDemand, Policy::kGreedy, Policy::kUniformProgress, Policy::kSpotOnly}) {
    if (EqualsIgnoreCase(name, PolicyName(p))) return p;
  }
  return Status::InvalidInput(
      "policy: expected on-demand, greedy, uniform-progress or spot-only, found '" +
      std::string(name) + "'");
}

Status ValidateJob(const JobParams& job) {
  if (!(std::isfinite(job.work_seconds) && job.work_seconds > 0)) {
    return Status::InvalidInput("work: expected a positive duration, found " +
                                ShortNumber(job.work_seconds) + " s");
  }
  if (!(job.deadline_seconds > 0) || std::isnan(job.deadline_seconds)) {
    return Status::InvalidInput("deadline: expected a positive duration, found " +
                                ShortNumber(job.deadline_seconds) + " s");
  }
  if (!(job.checkpoint_interval_seconds > 0) || std::isnan(job.checkpoint_interval_seconds)) {
    return Status::InvalidInput("checkpoint interval: expected a positive duration, found " +
                                ShortNumber(job.checkpoint_interval_seconds) + " s");
  }
  if (!(std::isfinite(job.billing_granularity_seconds) && job.billing_granularity_seconds > 0)) {
    return Status::InvalidInput("billing granularity: expected a positive duration, found " +
                                ShortNumber(job.billing_granularity_seconds) + " s");
  }
  FULCRUM_RETURN_IF_ERROR(RequireNonNegative(job.changeover_seconds, "changeover"));
  FULCRUM_RETURN_IF_ERROR(RequireNonNegative(job.restart_seconds, "restart cost"));
  FULCRUM_RETURN_IF_ERROR(RequireNonNegative(job.checkpoint_cost_seconds, "checkpoint cost"));
  FULCRUM_RETURN_IF_ERROR(RequireNonNegative(job.notice.notice_seconds, "notice"));
  FULCRUM_RETURN_IF_ERROR(RequireNonNegative(job.notice.poll_interval_seconds, "poll interval"));
  FULCRUM_RETURN_IF_ERROR(RequireNonNegative(job.notice.margin_seconds, "notice margin"));
  FULCRUM_RETURN_IF_ERROR(RequireNonNegative(job.on_demand_usd_per_hour, "on-demand price"));
  FULCRUM_RETURN_IF_ERROR(RequireNonNegative(job.spot_usd_per_hour, "spot price"));
  FULCRUM_RETURN_IF_ERROR(RequireNonNegative(job.minimum_billed_seconds, "billing minimum"));
  return Status::Ok();
}

double BilledSeconds(double run_seconds, double granularity_seconds, double minimum_seconds) {
  // The tolerance keeps 3600.0000000001 s from being billed one more granule.
  const double granules = std::ceil(run_seconds / granularity_seconds - 1e-9);
  return std::max(granules * granularity_seconds, minimum_seconds);
}

TrialResult SimulateTrial(const JobParams& job, Policy policy, AvailabilityCursor& availability) {
  return JobRun(job, policy, availability).Run();
}

Result<PolicySummary> Simulate(const JobParams& job, const PreemptionModel& model, Policy policy,
                               const SimulationOptions& options,
                               std::vector<TrialResult>* results) {
  FULCRUM_RETURN_IF_ERROR(ValidateJob(job));
  if (options.trials <= 0) {
    return Status::InvalidInput("trials: expected a positive count, found " +
                                std::to_string(options.trials));
  }
  std::vector<TrialResult> local;
  std::vector<TrialResult>& trials = results != nullptr ? *results : local;
  trials.assign(static_cast<size_t>(options.trials), TrialResult{});
  const size_t n = trials.size();
  // Chunks of 256 trials: a small run stays on one thread. Each trial has its own seed
  // (TrialSeed), so the results do not depend on the threads.
  ParallelFor(n, options.threads, 256, [&](size_t begin, size_t end) {
    RunTrials(job, model, policy, options.seed, begin, end, trials.data());
  });
  for (const TrialResult& t : trials) {
    if (!std::isfinite(t.finish_seconds)) {
      return Status::InvalidInput(
          "the job never finishes: the trace has no spot capacity and there is no deadline to "
          "force on-demand");
    }
  }
  return Summarize(policy, trials);
}

}  // namespace fulcrum::spot
