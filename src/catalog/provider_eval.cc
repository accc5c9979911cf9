#include "catalog/provider_eval.h"

#include "core/parse.h"
#include "core/table.h"

namespace fulcrum::catalog {
namespace {

std::string Figure(double value, const char* unit) {
  int decimals = value == static_cast<long long>(value) ? 0 : 2;
  return FormatNumber(value, decimals) + unit;
}

CriterionResult GpuFailureRate(const Provider& provider) {
  CriterionResult r{"gpu_failure_rate",
                    "< 0.5 %/year",
                    Verdict::kUnknown,
                    std::nullopt,
                    "pct_per_year",
                    "",
                    "",
                    ""};
  if (provider.gpu_failure_rate_pct_per_year) {
    r.value = *provider.gpu_failure_rate_pct_per_year;
    r.verdict = *r.value < kMaxGpuFailureRatePctPerYear ? Verdict::kMet : Verdict::kNotMet;
    r.detail = Figure(*r.value, " %/y");
    r.source = provider.source;
    return r;
  }
  // Nobody publishes one: say so, with the published fleet range as context.
  r.detail = "not published";
  r.context = "fleet studies: " + FormatNumber(kFleetGpuFailureRateLowPctPerYear, 0) + "-" +
              FormatNumber(kFleetGpuFailureRateHighPctPerYear, 0) + " % per GPU-year";
  r.source = kFleetGpuFailureRateSource;
  return r;
}

// The best inter-node network among the provider's offers.
CriterionResult InterNodeBandwidth(const Catalog& catalog, const Provider& provider) {
  CriterionResult r{"inter_node_bandwidth",
                    ">= 25 Gbit/s",
                    Verdict::kUnknown,
                    std::nullopt,
                    "gbit_per_second",
                    "not sourced",
                    "",
                    ""};
  const Offer* best = nullptr;
  for (const Offer& offer : catalog.offers()) {
    if (offer.provider != provider.name || !offer.network_gbps) continue;
    if (best == nullptr || *offer.network_gbps > *best->network_gbps) best = &offer;
  }
  if (best != nullptr) {
    r.value = *best->network_gbps;
    r.verdict = *r.value >= kMinInterNodeGbps ? Verdict::kMet : Verdict::kNotMet;
    r.detail = Figure(*r.value, " Gb/s");
    r.source = best->instance_type + ": " + best->source;
  }
  return r;
}

CriterionResult BillingGranularity(const Provider& provider) {
  CriterionResult r{"billing_granularity",
                    "<= 1 minute",
                    Verdict::kUnknown,
                    std::nullopt,
                    "seconds",
                    "not sourced",
                    "",
                    ""};
  if (provider.billing_granularity_seconds) {
    r.value = *provider.billing_granularity_seconds;
    r.verdict = *r.value <= kMaxBillingGranularitySeconds ? Verdict::kMet : Verdict::kNotMet;
    r.detail = FormatDuration(*r.value);
    r.source = provider.billing_source.empty() ? provider.source : provider.billing_source;
  }
  return r;
}

CriterionResult Support(const Provider& provider) {
  CriterionResult r{"support",
                    "24x7, < 15 min response",
                    Verdict::kUnknown,
                    std::nullopt,
                    "minutes",
                    "not sourced",
                    "",
                    ""};
  if (provider.support_response_minutes) r.value = *provider.support_response_minutes;
  if (provider.support_24x7 == false) {
    r.verdict = Verdict::kNotMet;
    r.detail = "not 24x7";
  } else if (r.value && *r.value >= kMaxSupportResponseMinutes) {
    r.verdict = Verdict::kNotMet;
    r.detail = Figure(*r.value, " min");
  } else if (provider.support_24x7 == true && r.value) {
    r.verdict = Verdict::kMet;
    r.detail = "24x7, " + Figure(*r.value, " min");
  } else if (provider.support_24x7 == true) {
    r.detail = "24x7, response ?";
  } else if (r.value) {
    r.detail = Figure(*r.value, " min, 24x7 ?");
  }
  if (provider.support_24x7 || r.value) {
    r.source = provider.support_source.empty() ? provider.source : provider.support_source;
  }
  return r;
}

}  // namespace

const char* VerdictName(Verdict verdict) {
  switch (verdict) {
    case Verdict::kMet:
      return "met";
    case Verdict::kNotMet:
      return "not met";
    case Verdict::kUnknown:
      break;
  }
  return "unknown";
}

ProviderEvaluation EvaluateProvider(const Catalog& catalog, const Provider& provider) {
  ProviderEvaluation evaluation;
  evaluation.provider = &provider;
  evaluation.criteria = {GpuFailureRate(provider), InterNodeBandwidth(catalog, provider),
                         BillingGranularity(provider), Support(provider)};
  return evaluation;
}

}  // namespace fulcrum::catalog
