#include "alert/evaluator.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <unordered_map>
#include <utility>

namespace fulcrum::alert {
namespace {

constexpr int kMaxGpu = 1023;  // samples for larger indexes are ignored (bounded memory)

// Latest and previous value of one (metric, gpu) series.
struct Cell {
  double value = 0;
  double previous = 0;
  double time = 0;
  double monotonic = 0;  // the sample's monotonic_time, or its unix time when it had none
  bool has_value = false;
  bool has_previous = false;
  uint64_t stamp = 0;  // segment in which it was last written
};

// Evaluation state of one (rule, gpu).
struct Series {
  AlertStatus status = AlertStatus::kInactive;
  double started_at = 0;
  double fired_at = 0;
  double last_active_at = 0;
  // started_at and last_active_at on the samples' monotonic clock, for the durations.
  double started_monotonic = 0;
  double last_active_monotonic = 0;
  // Restored from wall-clock times (the only ones that survive a restart): placed on the
  // monotonic clock at its next sample.
  bool restored = false;
  double value = 0;
  bool conditions_held_before = false;  // swing/increase: conditions at the previous sample
};

}  // namespace

std::string_view ToString(AlertStatus status) {
  switch (status) {
    case AlertStatus::kInactive:
      return "inactive";
    case AlertStatus::kPending:
      return "pending";
    case AlertStatus::kFiring:
      return "firing";
    case AlertStatus::kResolved:
      return "resolved";
  }
  return "?";
}

bool Notifies(const Transition& transition) {
  return transition.to == AlertStatus::kFiring ||
         (transition.from == AlertStatus::kFiring && transition.to == AlertStatus::kResolved);
}

struct Evaluator::Impl {
  std::vector<Rule> rules;
  std::unordered_map<std::string, int> metric_ids;
  std::vector<std::vector<Cell>> cells;           // [metric id][gpu + 1]
  std::vector<std::vector<int>> rules_by_metric;  // [metric id] -> rule indexes
  std::vector<int> divide_by_ids;                 // [rule] -> metric id or -1
  std::vector<std::vector<int>> condition_ids;    // [rule][condition] -> metric id
  std::vector<std::vector<Series>> series;        // [rule][gpu + 1]
  std::vector<std::pair<int, int>> touched;       // (metric id, gpu) written in this segment
  uint64_t segment = 1;

  int Intern(const std::string& metric) {
    auto it = metric_ids.find(metric);
    if (it != metric_ids.end()) return it->second;
    int id = static_cast<int>(cells.size());
    metric_ids.emplace(metric, id);
    cells.emplace_back();
    rules_by_metric.emplace_back();
    return id;
  }

  Cell* Find(int metric_id, int gpu) {
    if (metric_id < 0) return nullptr;
    auto& row = cells[metric_id];
    size_t slot = static_cast<size_t>(gpu + 1);
    if (slot >= row.size() || !row[slot].has_value) return nullptr;
    return &row[slot];
  }

  // Latest value of a metric for a GPU, falling back to the host-wide series.
  const Cell* Latest(int metric_id, int gpu) {
    if (Cell* cell = Find(metric_id, gpu)) return cell;
    return gpu >= 0 ? Find(metric_id, -1) : nullptr;
  }

  void Build() {
    for (size_t r = 0; r < rules.size(); ++r) {
      const Rule& rule = rules[r];
      rules_by_metric[Intern(rule.metric)].push_back(static_cast<int>(r));
      divide_by_ids.push_back(rule.divide_by.empty() ? -1 : Intern(rule.divide_by));
      std::vector<int> ids;
      for (const Condition& condition : rule.when) ids.push_back(Intern(condition.metric));
      condition_ids.push_back(std::move(ids));
    }
    series.resize(rules.size());
  }

  void Store(const Sample& sample) {
    int id = Intern(sample.metric);
    auto& row = cells[id];
    size_t slot = static_cast<size_t>(sample.gpu + 1);
    if (slot >= row.size()) row.resize(slot + 1);
    Cell& cell = row[slot];
    if (cell.stamp == segment) {  // same series twice in one batch: evaluate what we have
      Flush();
    }
    cell.previous = cell.value;
    cell.has_previous = cell.has_value;
    cell.value = sample.value;
    cell.time = sample.unix_time;
    cell.monotonic = sample.monotonic_time >= 0 ? sample.monotonic_time : sample.unix_time;
    cell.has_value = true;
    cell.stamp = segment;
    touched.emplace_back(id, sample.gpu);
  }

  void Flush(std::vector<Transition>* out = nullptr) {
    if (out != nullptr) pending_out = out;
    for (const auto& [metric_id, gpu] : touched) {
      const Cell& cell = cells[metric_id][gpu + 1];
      for (int r : rules_by_metric[metric_id]) EvaluateRule(r, gpu, cell);
    }
    touched.clear();
    ++segment;
  }

  bool ConditionsHold(int r, int gpu) {
    const Rule& rule = rules[r];
    for (size_t c = 0; c < rule.when.size(); ++c) {
      const Cell* cell = Latest(condition_ids[r][c], gpu);
      if (cell == nullptr) return false;
      if (!Compare(rule.when[c].op, cell->value, rule.when[c].threshold, {})) return false;
    }
    return true;
  }

  // The rule's value for this cell, or nullopt when it has none (first sample, no divisor).
  std::optional<double> RuleValue(int r, int gpu, const Cell& cell) {
    const Rule& rule = rules[r];
    switch (rule.kind) {
      case RuleKind::kThreshold: {
        if (divide_by_ids[r] < 0) return cell.value;
        const Cell* divisor = Latest(divide_by_ids[r], gpu);
        if (divisor == nullptr || divisor->value == 0) return std::nullopt;
        return cell.value / divisor->value;
      }
      case RuleKind::kIncrease:
        if (!cell.has_previous) return std::nullopt;
        return cell.value - cell.previous;
      case RuleKind::kSwing:
        if (!cell.has_previous || cell.previous == 0) return std::nullopt;
        return std::fabs(cell.value - cell.previous) / std::fabs(cell.previous);
    }
    return std::nullopt;
  }

  Series& SeriesOf(int r, int gpu) {
    auto& row = series[r];
    size_t slot = static_cast<size_t>(gpu + 1);
    if (slot >= row.size()) row.resize(slot + 1);
    return row[slot];
  }

  void EvaluateRule(int r, int gpu, const Cell& cell) {
    const Rule& rule = rules[r];
    Series& s = SeriesOf(r, gpu);
    bool conditions = ConditionsHold(r, gpu);
    if (rule.kind != RuleKind::kThreshold) {
      bool both = conditions && s.conditions_held_before;
      s.conditions_held_before = conditions;
      conditions = both;
    }
    std::optional<double> value = RuleValue(r, gpu, cell);
    if (!value) return;  // no evidence: state unchanged
    const bool active = conditions && Compare(rule.op, *value, rule.threshold, rule.values);
    Step(r, gpu, s, active, *value, cell.time, cell.monotonic);
  }

  // `t` is the sample's wall-clock time (reported), `m` its monotonic time (durations).
  void Step(int r, int gpu, Series& s, bool active, double value, double t, double m) {
    const Rule& rule = rules[r];
    const AlertStatus before = s.status;
    if (s.restored) {
      s.started_monotonic = m - std::max(0.0, t - s.started_at);
      s.last_active_monotonic = m - std::max(0.0, t - s.last_active_at);
      s.restored = false;
    }
    if (active) {
      s.value = value;
      s.last_active_at = t;
      s.last_active_monotonic = m;
    }
    switch (s.status) {
      case AlertStatus::kInactive:
      case AlertStatus::kResolved:
        if (!active) return;
        s.started_at = t;
        s.started_monotonic = m;
        if (rule.for_seconds <= 0) {
          s.status = AlertStatus::kFiring;
          s.fired_at = t;
        } else {
          s.status = AlertStatus::kPending;
          s.fired_at = 0;
        }
        break;
      case AlertStatus::kPending:
        if (!active) {
          s.status = AlertStatus::kInactive;
        } else if (m - s.started_monotonic >= rule.for_seconds) {
          s.status = AlertStatus::kFiring;
          s.fired_at = t;
        }
        break;
      case AlertStatus::kFiring:
        if (active || m - s.last_active_monotonic < rule.keep_firing_for_seconds) return;
        s.status = AlertStatus::kResolved;
        break;
    }
    if (s.status == before) return;
    Emit(r, gpu, s, before, value, t);
    if (s.status == AlertStatus::kResolved) s.status = AlertStatus::kInactive;
  }

  void Emit(int r, int gpu, const Series& s, AlertStatus from, double value, double t) {
    const Rule& rule = rules[r];
    Transition tr;
    tr.rule_name = rule.name;
    tr.gpu = gpu;
    tr.from = from;
    tr.to = s.status;
    tr.value = value;
    tr.threshold = rule.threshold;
    tr.at = t;
    tr.started_at = s.started_at;
    tr.fired_at = s.fired_at;
    tr.resolved_at = s.status == AlertStatus::kResolved ? t : 0;
    tr.severity = rule.severity;
    tr.labels["alertname"] = rule.name;
    if (gpu >= 0) tr.labels["gpu"] = std::to_string(gpu);
    tr.labels["severity"] = rule.severity;
    for (const auto& [key, label] : rule.labels) tr.labels[key] = label;
    for (const auto& [key, text] : rule.annotations) {
      tr.annotations[key] = ExpandTemplate(text, value, rule.threshold, tr.labels);
    }
    tr.fingerprint = Fingerprint(rule.name, gpu);
    pending_out->push_back(std::move(tr));
  }

  std::vector<Transition>* pending_out = nullptr;
};

Evaluator::Evaluator(std::vector<Rule> rules) : impl_(std::make_unique<Impl>()) {
  impl_->rules = std::move(rules);
  impl_->Build();
}

Evaluator::~Evaluator() = default;
Evaluator::Evaluator(Evaluator&&) noexcept = default;
Evaluator& Evaluator::operator=(Evaluator&&) noexcept = default;

std::vector<Transition> Evaluator::Evaluate(std::span<const Sample> batch) {
  std::vector<Transition> out;
  impl_->pending_out = &out;
  for (const Sample& sample : batch) {
    if (sample.gpu < -1 || sample.gpu > kMaxGpu || !std::isfinite(sample.value)) continue;
    impl_->Store(sample);
  }
  impl_->Flush(&out);
  impl_->pending_out = nullptr;
  return out;
}

std::vector<AlertState> Evaluator::Snapshot() const {
  std::vector<AlertState> states;
  for (size_t r = 0; r < impl_->series.size(); ++r) {
    const auto& row = impl_->series[r];
    for (size_t slot = 0; slot < row.size(); ++slot) {
      const Series& s = row[slot];
      if (s.status != AlertStatus::kPending && s.status != AlertStatus::kFiring) continue;
      states.push_back({impl_->rules[r].name, static_cast<int>(slot) - 1, s.status, s.started_at,
                        s.fired_at, s.last_active_at, s.value});
    }
  }
  return states;
}

size_t Evaluator::Restore(std::span<const AlertState> states) {
  for (auto& row : impl_->series) row.clear();
  std::unordered_map<std::string, int> by_name;
  for (size_t r = 0; r < impl_->rules.size(); ++r) by_name[impl_->rules[r].name] = r;
  size_t restored = 0;
  for (const AlertState& state : states) {
    auto it = by_name.find(state.rule_name);
    if (it == by_name.end() || state.gpu < -1 || state.gpu > kMaxGpu) continue;
    if (state.status != AlertStatus::kPending && state.status != AlertStatus::kFiring) continue;
    Series& s = impl_->SeriesOf(it->second, state.gpu);
    s.status = state.status;
    s.started_at = state.started_at;
    s.fired_at = state.fired_at;
    s.last_active_at = state.last_active_at;
    s.value = state.value;
    s.restored = true;
    ++restored;
  }
  return restored;
}

std::string Evaluator::Fingerprint(const std::string& rule_name, int gpu) {
  // FNV-1a 64-bit (offset basis and prime from the FNV reference, isthe.com/chongo/tech/comp/fnv).
  uint64_t hash = 14695981039346656037ULL;
  auto mix = [&hash](unsigned char byte) {
    hash ^= byte;
    hash *= 1099511628211ULL;
  };
  for (char c : rule_name) mix(static_cast<unsigned char>(c));
  mix(0);
  for (char c : std::to_string(gpu)) mix(static_cast<unsigned char>(c));
  char buffer[17];
  std::snprintf(buffer, sizeof(buffer), "%016llx", static_cast<unsigned long long>(hash));
  return buffer;
}

const std::vector<Rule>& Evaluator::rules() const { return impl_->rules; }

}  // namespace fulcrum::alert
