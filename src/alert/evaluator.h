// The rule evaluator: fed with samples (metric, gpu, value, unix time), one batch per sampling
// tick, it keeps per (rule, gpu) state inactive -> pending -> firing -> resolved and returns the
// transitions as plain structs. Semantics follow Prometheus: an active rule is pending until it
// has been active for `for` seconds, then firing; once the condition clears it keeps firing for
// `keep_firing_for` seconds (re-activating inside that window keeps it firing, no new
// notification), then resolves. A series absent from a batch keeps its state (a GPU that fell
// off the bus must not resolve its XID alert). State can be exported and restored (Snapshot /
// Restore) so alerts survive agent restarts.
// Durations (`for`, `keep_firing_for`) run on the samples' monotonic time when they carry one,
// so that a wall-clock step neither holds a firing alert unresolved (a step back: the cleared
// samples look older than the last hot one) nor fires a pending one early (a step forward); the
// times reported in transitions stay wall-clock, for humans.
// Conditions (`when`, `divide_by`) see the batch's values, whatever their order in the batch.
// Cost: one hash lookup per sample (metric name -> id), then only the rules on that metric
// (O(samples + matching rules)); no allocation in steady state except for emitted transitions.
// Measured in bench/perf/alert_evaluator_bench.cc, see docs/BENCH.md "Alert evaluator".
// Not thread-safe: one owner (the agent's sampling thread) calls it.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "alert/rule.h"
#include "core/status.h"

namespace fulcrum::alert {

// One reading. gpu = -1 for host-wide series (e.g. job_running for the whole machine).
struct Sample {
  std::string metric;  // as on /metrics without the `fulcrum_` prefix
  int gpu = -1;
  double value = 0;
  double unix_time = 0;  // seconds
  // Seconds on a monotonic clock (Clock::MonotonicSeconds) for `for` / `keep_firing_for`;
  // negative = none: durations then run on unix_time. Give it to every sample or to none.
  double monotonic_time = -1;
};

enum class AlertStatus { kInactive, kPending, kFiring, kResolved };
std::string_view ToString(AlertStatus status);  // "inactive", "pending", "firing", "resolved"

// A change of one alert (rule x gpu). Emitted kinds: inactive->pending, pending->inactive
// (cleared before `for` elapsed; no notification), pending->firing, inactive->firing (for: 0),
// firing->resolved. Only ->firing and ->resolved are notified (see Notifies()).
struct Transition {
  std::string rule_name;
  int gpu = -1;
  AlertStatus from = AlertStatus::kInactive;
  AlertStatus to = AlertStatus::kInactive;
  double value = 0;  // the rule's value at this sample (the current, cleared value for resolved)
  double threshold = 0;
  double at = 0;           // unix seconds of the sample that caused the change
  double started_at = 0;   // unix seconds the condition first held (pending start)
  double fired_at = 0;     // unix seconds it began firing; 0 if it never fired
  double resolved_at = 0;  // unix seconds of resolution; 0 unless to == kResolved
  std::string severity;
  // alertname, gpu (when >= 0), severity, then the rule's labels (which may override).
  std::map<std::string, std::string> labels;
  // The rule's annotations with templates expanded at this sample.
  std::map<std::string, std::string> annotations;
  // Stable id of the alert series (rule name + gpu), 16 hex digits, like Alertmanager's.
  std::string fingerprint;
};

// Whether a transition is sent to receivers (to firing, or firing -> resolved).
bool Notifies(const Transition& transition);

// Persistent state of one non-inactive alert, for the store (restore after restart).
struct AlertState {
  std::string rule_name;
  int gpu = -1;
  AlertStatus status = AlertStatus::kPending;  // kPending or kFiring
  double started_at = 0;                       // condition first held
  double fired_at = 0;                         // 0 while pending
  double last_active_at = 0;  // last sample where the condition held (for keep_firing_for)
  double value = 0;           // last value
};

class Evaluator {
 public:
  explicit Evaluator(std::vector<Rule> rules);
  ~Evaluator();
  Evaluator(Evaluator&&) noexcept;
  Evaluator& operator=(Evaluator&&) noexcept;

  // Evaluates one tick's samples (all GPUs, all metrics of that tick; the batch may also be a
  // single sample). Samples are applied in order; rules are evaluated for each (rule, gpu)
  // whose metric appears in the batch, at that sample's time. Returns the transitions, in
  // order. Samples with unknown metrics are ignored (they may still feed `when` conditions).
  std::vector<Transition> Evaluate(std::span<const Sample> batch);

  // All pending and firing alerts (for the store and /v1/alerts).
  std::vector<AlertState> Snapshot() const;

  // Replaces the state with `states` (from Snapshot(), possibly of an earlier run). States of
  // rules that no longer exist are dropped; returns how many were restored. Previous values
  // for increase/swing rules are not restored: their first sample after restart has no value.
  size_t Restore(std::span<const AlertState> states);

  // Fingerprint of (rule name, gpu): FNV-1a 64, 16 lowercase hex digits.
  static std::string Fingerprint(const std::string& rule_name, int gpu);

  const std::vector<Rule>& rules() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace fulcrum::alert
