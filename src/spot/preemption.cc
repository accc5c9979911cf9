#include "spot/preemption.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "spot/short_number.h"

namespace fulcrum::spot {

Result<PreemptionModel> PreemptionModel::Exponential(double mtti_seconds,
                                                     double outage_mean_seconds) {
  if (!(std::isfinite(mtti_seconds) && mtti_seconds > 0)) {
    return Status::InvalidInput("mean time to interruption: expected a positive duration, found " +
                                ShortNumber(mtti_seconds) + " s");
  }
  if (!(std::isfinite(outage_mean_seconds) && outage_mean_seconds >= 0)) {
    return Status::InvalidInput("outage mean: expected a duration >= 0, found " +
                                ShortNumber(outage_mean_seconds) + " s");
  }
  PreemptionModel model;
  model.mtti_seconds_ = mtti_seconds;
  model.outage_mean_seconds_ = outage_mean_seconds;
  return model;
}

PreemptionModel PreemptionModel::FromTrace(const Trace& trace) {
  auto runs = std::make_shared<TraceRuns>();
  for (size_t i = 0; i < trace.counts.size(); ++i) {
    bool available = trace.counts[i] > 0;
    double end = static_cast<double>(i + 1) * trace.gap_seconds;
    if (!runs->run_available.empty() && runs->run_available.back() == available) {
      runs->run_end_seconds.back() = end;
    } else {
      runs->run_available.push_back(available);
      runs->run_end_seconds.push_back(end);
    }
  }
  runs->period_seconds = static_cast<double>(trace.counts.size()) * trace.gap_seconds;
  PreemptionModel model;
  model.runs_ = std::move(runs);
  return model;
}

double PreemptionModel::MeanTimeToInterruptionSeconds() const {
  if (!runs_) return mtti_seconds_;
  const TraceRuns& r = *runs_;
  double available_seconds = 0;
  int interruptions = 0;
  const size_t n = r.run_available.size();
  for (size_t i = 0; i < n; ++i) {
    if (!r.run_available[i]) continue;
    available_seconds += r.run_end_seconds[i] - (i == 0 ? 0.0 : r.run_end_seconds[i - 1]);
    if (!r.run_available[(i + 1) % n]) ++interruptions;  // the trace wraps
  }
  if (available_seconds == 0) return 0;
  return interruptions == 0 ? kNever : available_seconds / interruptions;
}

double PreemptionModel::AvailableFraction() const {
  if (!runs_) return mtti_seconds_ / (mtti_seconds_ + outage_mean_seconds_);
  double available_seconds = 0;
  for (size_t i = 0; i < runs_->run_available.size(); ++i) {
    if (!runs_->run_available[i]) continue;
    available_seconds += runs_->run_end_seconds[i] - (i == 0 ? 0.0 : runs_->run_end_seconds[i - 1]);
  }
  return available_seconds / runs_->period_seconds;
}

AvailabilityCursor::AvailabilityCursor(const PreemptionModel& model, SplitMix64& rng)
    : model_(model), rng_(rng) {
  const TraceRuns* runs = model.runs();
  if (runs == nullptr) {
    available_ = true;
    ScheduleExponential();
    return;
  }
  const double start = rng.Uniform() * runs->period_seconds;
  auto it = std::upper_bound(runs->run_end_seconds.begin(), runs->run_end_seconds.end(), start);
  run_ = std::min<size_t>(it - runs->run_end_seconds.begin(), runs->run_end_seconds.size() - 1);
  period_origin_ = -start;
  available_ = runs->run_available[run_];
  ScheduleTrace();
}

void AvailabilityCursor::ScheduleExponential() {
  const double now = next_change_ == kNever ? 0.0 : next_change_;
  const double mean = available_ ? model_.mtti_seconds() : model_.outage_mean_seconds();
  next_change_ = now + (mean > 0 ? rng_.Exponential(mean) : 0.0);
}

void AvailabilityCursor::ScheduleTrace() {
  const TraceRuns& runs = *model_.runs();
  const size_t n = runs.run_available.size();
  if (n == 1) {
    next_change_ = kNever;
    return;
  }
  // Neighbouring runs differ except across the wrap: extend over it at most once.
  size_t next = run_ + 1 == n ? 0 : run_ + 1;
  if (runs.run_available[next] == available_) {
    run_ = next;
    period_origin_ += runs.period_seconds;
  }
  next_change_ = period_origin_ + runs.run_end_seconds[run_];
}

void AvailabilityCursor::Advance() {
  available_ = !available_;
  const TraceRuns* runs = model_.runs();
  if (runs == nullptr) {
    ScheduleExponential();
    return;
  }
  if (runs->run_available.size() == 1) return;
  ++run_;
  if (run_ == runs->run_available.size()) {
    run_ = 0;
    period_origin_ += runs->period_seconds;
  }
  ScheduleTrace();
}

}  // namespace fulcrum::spot
