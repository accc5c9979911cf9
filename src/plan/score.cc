#include "plan/score.h"

#include <algorithm>

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

Scores OfferScores(const catalog::Provider* p, PricingModel pricing, int nodes) {
  Scores s;
  // The catalog has no per-provider image information yet: always neutral and flagged.
  s.unknown |= kUnknownImages;
  if (p == nullptr) {
    s.unknown |= kUnknownProvider | kUnknownSla | kUnknownFailureRate | kUnknownBareMetal |
                 kUnknownGranularity | kUnknownSupportHours | kUnknownSupportResponse;
  }
  // --- stability: SLA uptime (99.0 % -> 0, 99.99 % -> 1), GPU failure rate (0 -> 1,
  // >= 10 %/year -> 0), bare metal (1) vs virtualised (0.6), interruption risk (spot 0.3).
  Mean stability;
  if (p && p->sla_uptime_pct) {
    stability.Add(Clamp01((*p->sla_uptime_pct - 99.0) / 0.99));
  } else {
    s.unknown |= kUnknownSla;
    stability.Add(kNeutralScore);
  }
  if (p && p->gpu_failure_rate_pct_per_year) {
    stability.Add(Clamp01(1.0 - *p->gpu_failure_rate_pct_per_year / 10.0));
  } else {
    s.unknown |= kUnknownFailureRate;
    stability.Add(kNeutralScore);
  }
  if (p && p->bare_metal) {
    stability.Add(*p->bare_metal ? 1.0 : 0.6);
  } else {
    s.unknown |= kUnknownBareMetal;
    stability.Add(kNeutralScore);
  }
  // Interruption risk: on-demand/reserved capacity is not reclaimed; spot is (AWS Spot Advisor
  // bands reach > 20 % per month). 0.3 until the spot simulator gives a per-offer figure.
  stability.Add(pricing == PricingModel::kSpot ? 0.3 : 1.0);
  s.stability = stability.Value();

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
  usability.Add(nodes > 1 ? 0.7 : 1.0);
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

void FinishScores(Scores& s, double seconds, double best_seconds, double usd, double best_usd,
                  const Weights& w) {
  s.performance = seconds > 0 ? Clamp01(best_seconds / seconds) : 0;
  s.cost = usd > 0 ? Clamp01(best_usd / usd) : 1;
  s.total = w.stability * s.stability + w.performance * s.performance + w.cost * s.cost +
            w.usability * s.usability + w.support * s.support;
}

}  // namespace fulcrum::plan
