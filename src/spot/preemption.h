// Preemption models for the spot simulator, seen as an alternating availability process:
// spot capacity is available, then not, then available again... A running spot instance is
// preempted when availability ends. Two models: exponential (available periods ~ Exp(mean time
// to interruption), unavailable periods ~ Exp(outage mean), 0 = capacity is back at once; a job
// starts in an available period) and trace-driven (ticks of a Trace; count 0 = unavailable; the
// start is drawn uniformly over the trace, which wraps). A PreemptionModel is immutable and
// shared between threads; each trial walks it with its own AvailabilityCursor. Times in seconds.
#pragma once

#include <limits>
#include <memory>
#include <vector>

#include "core/status.h"
#include "spot/rng.h"
#include "spot/trace.h"

namespace fulcrum::spot {

inline constexpr double kNever = std::numeric_limits<double>::infinity();
// The longest job (work, deadline or any other duration) the simulator accepts: 10 years, far
// beyond any published training run; its run time grows with the preemptions, so it is bounded.
inline constexpr double kMaxJobSeconds = 10 * 8760 * 3600.0;

// A trace compressed into runs of equal availability over one period.
struct TraceRuns {
  double period_seconds = 0;
  std::vector<double> run_end_seconds;  // end offset of each run, increasing, last = period
  std::vector<bool> run_available;      // availability of each run (neighbours differ)
};

class PreemptionModel {
 public:
  // InvalidInput unless mtti > 0 and outage >= 0 (both finite).
  static Result<PreemptionModel> Exponential(double mtti_seconds, double outage_mean_seconds = 0);
  static PreemptionModel FromTrace(const Trace& trace);

  bool is_trace() const { return runs_ != nullptr; }
  double mtti_seconds() const { return mtti_seconds_; }
  double outage_mean_seconds() const { return outage_mean_seconds_; }
  const TraceRuns* runs() const { return runs_.get(); }

  // Mean length of an available period: the MTTI, or for a trace the available time over the
  // number of available->unavailable transitions in one period (kNever when there are none; 0
  // when the trace has no capacity at all).
  double MeanTimeToInterruptionSeconds() const;
  // Long-run fraction of time spot capacity is available.
  double AvailableFraction() const;

 private:
  double mtti_seconds_ = kNever;
  double outage_mean_seconds_ = 0;
  std::shared_ptr<const TraceRuns> runs_;
};

// One trial's walk through the availability process, starting at t = 0.
class AvailabilityCursor {
 public:
  // Draws the trial's start (trace) or first period (exponential) from `rng`, which the cursor
  // keeps using; `model` and `rng` must outlive the cursor.
  AvailabilityCursor(const PreemptionModel& model, SplitMix64& rng);

  bool available() const { return available_; }
  // Time of the next change of availability (kNever if none).
  double next_change_seconds() const { return next_change_; }
  // Moves to the next period (call when time reaches next_change_seconds()).
  void Advance();

 private:
  void ScheduleExponential();
  void ScheduleTrace();  // next_change_ = end of the stretch of runs that starts at run_

  const PreemptionModel& model_;
  SplitMix64& rng_;
  bool available_ = true;
  double next_change_ = kNever;
  // Trace walk: the last run of the current stretch, and the trial time at which that run's
  // period starts (offset 0).
  size_t run_ = 0;
  double period_origin_ = 0;
};

}  // namespace fulcrum::spot
