#include "plan/score.h"

#include <algorithm>
#include <cmath>

namespace fulcrum::plan {
namespace {

double Clamp01(double v) { return std::clamp(v, 0.0, 1.0); }

// Mean of the known components; unknown ones count as neutral.
struct Mean {
  double sum = 0;
  int n = 0;
  void Add(double v) {
    sum += v;
    ++n;
  }
  double Value() const { return n > 0 ? sum / n : kNeutralScore; }
};

}  // namespace

std::vector<std::string> UnknownAttributeNames(uint32_t mask) {
  static const char* const kNames[kUnknownAttributeCount] = {
      "stability.sla_uptime", "stability.gpu_failure_rate",
      "stability.bare_metal", "usability.billing_granularity",
      "support.24x7",         "support.response_time",
      "provider.terms",       "usability.images"};
  std::vector<std::string> out;
  for (int bit = 0; bit < kUnknownAttributeCount; ++bit) {
    if (mask & (1u << bit)) out.emplace_back(kNames[bit]);
  }
  return out;
}

// The pricing model does not enter here: spot's risk is its expected preemptions (FinishScores).
Scores OfferScores(const catalog::Provider* p, PricingModel, int nodes) {
  Scores s;
  // The catalog has no per-provider image information yet: always neutral and flagged.
  s.unknown |= kUnknownImages;
  if (p == nullptr) {
    s.unknown |= kUnknownProvider | kUnknownSla | kUnknownFailureRate | kUnknownBareMetal |
                 kUnknownGranularity | kUnknownSupportHours | kUnknownSupportResponse;
  }
  // --- stability, provider part: SLA uptime (99.0 % -> 0, 99.99 % -> 1), bare metal (1) vs
  // virtualised (0.6). The run part (expected interruptions of this run, which use the
  // provider's failure rate or the fleet rate, and node capacity) is added by FinishScores.
  Mean stability;
  if (p && p->sla_uptime_pct) {
    stability.Add(Clamp01((*p->sla_uptime_pct - 99.0) / 0.99));
  } else {
    s.unknown |= kUnknownSla;
    stability.Add(kNeutralScore);
  }
  if (!(p && p->gpu_failure_rate_pct_per_year)) s.unknown |= kUnknownFailureRate;
  if (p && p->bare_metal) {
    stability.Add(*p->bare_metal ? 1.0 : 0.6);
  } else {
    s.unknown |= kUnknownBareMetal;
    stability.Add(kNeutralScore);
  }
  s.provider_stability = stability.Value();
  s.stability = s.provider_stability;

  // --- usability: billing granularity (per second 1, per minute 0.9, per hour 0.6), images
  // (unknown: neutral), single node simpler than multi-node (1 vs 0.7).
  Mean usability;
  if (p && p->billing_granularity_seconds) {
    const double g = *p->billing_granularity_seconds;
    usability.Add(g <= 1 ? 1.0 : g <= 60 ? 0.9 : g <= 600 ? 0.75 : 0.6);
  } else {
    s.unknown |= kUnknownGranularity;
    usability.Add(kNeutralScore);
  }
  usability.Add(kNeutralScore);  // images
  usability.Add(NodeCountScore(nodes));
  s.usability = usability.Value();

  // --- support: 24x7 (1 / 0.3), response time (<= 60 min 1, <= 240 0.7, else 0.4), SLA terms.
  Mean support;
  if (p && p->support_24x7) {
    support.Add(*p->support_24x7 ? 1.0 : 0.3);
  } else {
    s.unknown |= kUnknownSupportHours;
    support.Add(kNeutralScore);
  }
  if (p && p->support_response_minutes) {
    const double m = *p->support_response_minutes;
    support.Add(m <= 60 ? 1.0 : m <= 240 ? 0.7 : 0.4);
  } else {
    s.unknown |= kUnknownSupportResponse;
    support.Add(kNeutralScore);
  }
  support.Add(p && p->sla_uptime_pct ? 1.0 : kNeutralScore);  // a published SLA at all
  s.support = support.Value();
  return s;
}

double SaturationSeconds(std::optional<double> deadline_seconds, double fastest_p90_seconds) {
  if (deadline_seconds) return *deadline_seconds / 2.0;
  return std::max(fastest_p90_seconds, kSaturationWithoutDeadlineSeconds);
}

double NodeCountScore(int nodes) { return 1.0 / (1.0 + std::log2(std::max(1, nodes))); }

void FinishScores(Scores& s, const RunFacts& run, const ScoreReference& ref, const Weights& w) {
  const double interruptions = 1.0 / (1.0 + std::max(0.0, run.expected_interruptions));
  s.stability = (2.0 * s.provider_stability + interruptions + NodeCountScore(run.nodes)) / 4.0;
  s.performance = run.p90_seconds > 0 ? Clamp01(ref.saturation_seconds / run.p90_seconds) : 0;
  // Cost falls with the excess over the cheapest feasible candidate as exp(1 - own/cheapest):
  // at the cheapest as steeply as a linear rule (paying 30 % more costs 0.26 of the criterion,
  // not the 0.23 a ratio would), and it never reaches 0, so a dearer row never ties a cheaper
  // one (a linear rule clamped at twice the cheapest scored 8 H100 at $320 and at $684 alike).
  const double own = std::max(run.expected_usd, run.p90_usd);
  const double cheapest = std::max(ref.cheapest_usd, ref.cheapest_p90_usd);
  s.cost = cheapest > 0 ? Clamp01(std::exp(1.0 - own / cheapest)) : 1;
  s.total = w.stability * s.stability + w.performance * s.performance + w.cost * s.cost +
            w.usability * s.usability + w.support * s.support;
}

}  // namespace fulcrum::plan
