#include "serve/queueing.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

namespace fulcrum::serve {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();
// Poisson terms kept per step table: until this much probability is left, at most kMaxKinds.
constexpr double kPoissonTail = 1e-4;
constexpr size_t kMaxKinds = 24;
// Groups of arrival states the first-token distribution is evaluated at.
constexpr size_t kMaxStates = 40;

// The variance of a Poisson count averaged over a window of its own length is 2/3 of the
// count's (M/D/infinity: an arrival overlapping the window by a fraction w in [0, 1] weighs w,
// and the integral of w^2 over the two-sided window is 2/3 of its length). A request's time per
// output token is the mean step over its lifetime, so its spread around the mean is the running
// count's spread times sqrt(2/3). (Derivation, no source: standard Poisson shot-noise algebra.)
const double kLifetimeSmoothing = std::sqrt(2.0 / 3.0);

// P(U + E > x): U uniform on [0, width], E = 0 with probability 1 - busy, else exponential
// with mean `mean`. `decay` = exp(-x / mean) and `spread` = exp(width / mean) (0 when too large
// to hold), passed in because the caller shares them between terms.
double UniformPlusWaitTail(double x, double width, double busy, double mean, double decay,
                           double spread) {
  if (x <= 0) return 1;
  const double uniform = width > 0 ? std::max(0.0, (width - x) / width) : 0.0;
  if (busy <= 0 || mean <= 0) return uniform;
  if (x - width > 40 * mean) return (1 - busy) * uniform;  // the exponential part is < e^-40
  // (1 / width) integral over u in [0, width] of P(E > x - u).
  double both = 0;
  if (width <= 0) {
    both = decay;
  } else if (x >= width) {
    const double shifted = spread > 0 ? decay * spread : std::exp(-(x - width) / mean);
    both = mean / width * (shifted - decay);
  } else {
    both = (width - x) / width + mean / width * (1 - decay);
  }
  return (1 - busy) * uniform + busy * both;
}

}  // namespace

ReplicaQueue::ReplicaQueue(const StepModel& step, const workload::Model& model,
                           const RequestMix& mix, int64_t max_concurrency,
                           int64_t step_budget_tokens)
    : step_(step),
      mix_(mix),
      budget_(static_cast<double>(std::max<int64_t>(step_budget_tokens, 1))) {
  const size_t cap = static_cast<size_t>(std::max<int64_t>(max_concurrency, 1));
  mix_.input_len = std::max(1.0, mix.input_len);
  mix_.output_len = std::max(1.0, mix.output_len);
  const double input = mix_.input_len, output = mix_.output_len;
  context_ = static_cast<double>(
      CachedTokens(model, static_cast<int64_t>(std::llround(input + output / 2))));
  prompt_context_ =
      static_cast<double>(CachedTokens(model, static_cast<int64_t>(std::llround(input))));
  mean_step_.assign(cap + 1, 0);
  biased_mean_step_.assign(cap + 1, 0);
  rate_.assign(cap + 1, 0);
  kinds_.assign(cap + 1, {});
  own_seconds_.assign(cap + 1, {});
  extra_seconds_.assign(cap + 1, -1);
  for (size_t m = 1; m <= cap; ++m) {
    // Prompts join a step as completions free slots: m / output a step in steady state, a
    // Poisson count (arrivals are).
    const double running = static_cast<double>(m);
    const double joins = running / output;
    double p = std::exp(-joins), left = 1, sum = 0, sum_sq = 0;
    for (size_t k = 0; k < kMaxKinds && left > kPoissonTail; ++k) {
      const double seconds =
          step_.Seconds(running, context_, static_cast<double>(k) * input, prompt_context_);
      kinds_[m].push_back({p, seconds});
      sum += p * seconds;
      sum_sq += p * seconds * seconds;
      left -= p;
      p *= joins / static_cast<double>(k + 1);
    }
    const double covered = 1 - std::max(left, 0.0);
    mean_step_[m] = sum / covered;
    biased_mean_step_[m] = sum_sq / sum;
    rate_[m] = running / (output * mean_step_[m]);
  }
}

QueueState ReplicaQueue::Solve(double rate, int64_t concurrency) const {
  QueueState out;
  const size_t c = static_cast<size_t>(std::clamp<int64_t>(concurrency, 1, max_concurrency()));
  out.capacity_requests_per_second = rate_[c];
  out.utilization = rate / rate_[c];
  const double rho = out.utilization;
  if (!(rho < 1) || !(rate > 0)) {
    out.stable = rate == 0;
    out.pi.assign(c + 1, 0);
    out.pi[0] = 1;  // no traffic: always empty
    return out;
  }
  out.stable = true;
  // Birth-death: pi_n / pi_0 = prod rate / rate_k, rescaled when it grows large.
  std::vector<double>& pi = out.pi;
  pi.assign(c + 1, 0);
  pi[0] = 1;
  for (size_t n = 1; n <= c; ++n) {
    pi[n] = pi[n - 1] * rate / rate_[n];
    if (pi[n] > 1e200) {
      for (size_t k = 0; k <= n; ++k) pi[k] *= 1e-200;
    }
  }
  pi[c] /= 1 - rho;  // n >= c: the geometric tail of the queue
  double total = 0;
  for (double p : pi) total += p;
  for (double& p : pi) p /= total;
  out.wait_probability = pi[c];
  // M/M/c: a waiting request waits Exp(rate_c (1 - rho)); Allen-Cunneen scales it by
  // (c_a^2 + c_s^2) / 2 for general arrivals and service (Allen, "Probability, Statistics and
  // Queueing Theory", 2nd ed., 1990, eq. 6.110).
  out.mean_conditional_wait = (mix_.arrival_scv + mix_.output_scv) / 2 / (rate_[c] * (1 - rho));
  return out;
}

double ReplicaQueue::WaitQuantile(const QueueState& s, double quantile) const {
  if (!s.stable) return kInfinity;
  if (s.wait_probability <= 1 - quantile) return 0;
  return s.mean_conditional_wait * std::log(s.wait_probability / (1 - quantile));
}

double ReplicaQueue::OwnSeconds(size_t running, size_t others) const {
  std::vector<double>& own = own_seconds_[running];
  const double n = static_cast<double>(running);
  const double budget = std::max(1.0, budget_ - n);
  while (own.size() <= others) {
    const double tokens = mix_.input_len * static_cast<double>(own.size() + 1);
    own.push_back(step_.ChunkedPrefillSeconds(n, context_, tokens, budget, prompt_context_));
  }
  return own[others];
}

double ReplicaQueue::ExtraSeconds(size_t running) const {
  if (extra_seconds_[running] >= 0) return extra_seconds_[running];
  const double n = static_cast<double>(running);
  const double budget = std::max(1.0, budget_ - n);
  const double decode_only = running > 0 ? step_.Seconds(n, context_, 0, 0) : 0;
  extra_seconds_[running] =
      std::max(0.0, OwnSeconds(running, 0) - std::ceil(mix_.input_len / budget) * decode_only);
  return extra_seconds_[running];
}

ReplicaQueue::FirstToken ReplicaQueue::FirstTokenAt(int64_t running, double rate) const {
  FirstToken f;
  const size_t n = static_cast<size_t>(running);
  // The prompts that arrive while the step under way runs (Poisson in its length) share the
  // request's next step(s).
  const std::vector<StepKind> idle = {{1, 0}};
  const std::vector<StepKind>& under_way = running > 0 ? kinds_[n] : idle;
  for (const StepKind& k : under_way) {
    std::vector<StepKind> own;
    const double arrivals = rate * k.seconds;
    double p = std::exp(-arrivals), left = 1;
    for (size_t j = 0; j < kMaxKinds && left > kPoissonTail; ++j) {
      own.push_back({p, OwnSeconds(n, j)});
      f.longest = std::max(f.longest, k.seconds + own.back().seconds);
      left -= p;
      p *= arrivals / static_cast<double>(j + 1);
    }
    f.own.push_back(std::move(own));
  }
  // Prompt work beyond what the decodes' steps hide is a single server (M/D/1): busy with
  // probability rho_p = rate x the extra time of one prompt; a waiting prompt waits on average
  // extra / (2 (1 - rho_p)) (Pollaczek-Khinchine for deterministic service), exponential tail.
  const double extra = ExtraSeconds(n);
  const double rho = std::min(0.999, rate * extra);
  f.busy = rho;
  f.busy_mean = extra / (2 * (1 - rho));
  f.longest += f.busy_mean * 12;
  return f;
}

double ReplicaQueue::TtftTail(int64_t running, const FirstToken& f, double t) const {
  const std::vector<StepKind> idle = {{1, 0}};
  const std::vector<StepKind>& under_way =
      running > 0 ? kinds_[static_cast<size_t>(running)] : idle;
  const bool waits = f.busy > 0 && f.busy_mean > 0;
  // exp(-(t - own_j) / busy_mean) per j: the own times are the same for every kind.
  std::array<double, kMaxKinds> decay{};
  size_t known = 0;
  // The step under way, drawn by its length among the step kinds (any, when idle).
  double weight = 0, tail = 0;
  for (size_t i = 0; i < under_way.size() && i < f.own.size(); ++i) {
    const StepKind& k = under_way[i];
    const double w = running > 0 ? k.probability * k.seconds : 1;
    weight += w;
    const double ratio = waits ? k.seconds / f.busy_mean : 0;
    const double spread = ratio < 500 ? std::exp(ratio) : 0;
    double kind_tail = 0;
    for (size_t j = 0; j < f.own[i].size(); ++j) {
      const StepKind& own = f.own[i][j];
      const double x = t - own.seconds;
      for (; waits && known <= j; ++known) {
        const double xk = t - f.own[i][known].seconds;
        decay[known] = xk > 0 ? std::exp(-xk / f.busy_mean) : 1;
      }
      kind_tail += own.probability *
                   UniformPlusWaitTail(x, k.seconds, f.busy, f.busy_mean, decay[j], spread);
    }
    tail += w * kind_tail;
  }
  return weight > 0 ? tail / weight : 0;
}

std::vector<double> ReplicaQueue::TtftQuantiles(const QueueState& s, double rate,
                                                const std::vector<double>& quantiles) const {
  std::vector<double> out(quantiles.size(), kInfinity);
  if (!s.stable) return out;
  const std::vector<double>& pi = s.pi;
  const size_t c = pi.size() - 1;
  // An arrival that finds n < c running joins at the next step; one that finds every slot busy
  // waits for a slot (the queue's wait), then joins c - 1 running. States below 1e-5 of the most
  // likely one are left out; neighbouring states are pooled into at most kMaxStates groups,
  // each at its most likely state (the first-token time changes slowly with n).
  const double top = *std::max_element(pi.begin(), pi.end());
  std::vector<size_t> significant;
  for (size_t n = 0; n < c; ++n) {
    if (pi[n] >= 1e-5 * top) significant.push_back(n);
  }
  const size_t stride = (significant.size() + kMaxStates - 1) / kMaxStates;
  std::vector<std::pair<size_t, double>> states;  // representative, pooled probability
  for (size_t i = 0; i < significant.size(); i += std::max<size_t>(stride, 1)) {
    size_t best = significant[i];
    double pooled = 0;
    for (size_t k = i; k < std::min(significant.size(), i + stride); ++k) {
      pooled += pi[significant[k]];
      if (pi[significant[k]] > pi[best]) best = significant[k];
    }
    states.emplace_back(best, pooled);
  }
  std::vector<FirstToken> first(c);
  double low = kInfinity, high = 0;
  auto prepare = [&](size_t n) {
    first[n] = FirstTokenAt(static_cast<int64_t>(n), rate);
    low = std::min(low, OwnSeconds(n, 0));
    high = std::max(high, first[n].longest);
  };
  for (const auto& [n, weight] : states) prepare(n);
  if (s.wait_probability > 0 && first[c - 1].own.empty()) prepare(c - 1);
  const double wait_mean = s.mean_conditional_wait;
  high += wait_mean * 12;
  auto tail = [&](double t) {
    double p = 0;
    for (const auto& [n, weight] : states) {
      p += weight * TtftTail(static_cast<int64_t>(n), first[n], t);
    }
    if (s.wait_probability > 0) {
      // Waiting arrivals: the slot wait's mean added to the time of a joiner of c - 1.
      p += s.wait_probability * TtftTail(static_cast<int64_t>(c - 1), first[c - 1], t - wait_mean);
    }
    return p;
  };
  for (size_t i = 0; i < quantiles.size(); ++i) {
    double a = low, b = high;
    for (int k = 0; k < 30 && b - a > 2e-3 * b; ++k) {
      const double mid = (a + b) / 2;
      (tail(mid) > 1 - quantiles[i] ? a : b) = mid;
    }
    out[i] = b;
  }
  return out;
}

double ReplicaQueue::TpotQuantile(const QueueState& s, double quantile) const {
  if (!s.stable) return kInfinity;
  const std::vector<double>& pi = s.pi;
  // Running sequences as a decoding request sees them: state m weighs m pi_m.
  double weight = 0, mean = 0;
  for (size_t m = 1; m < pi.size(); ++m) {
    weight += static_cast<double>(m) * pi[m];
    mean += static_cast<double>(m) * static_cast<double>(m) * pi[m];
  }
  if (weight <= 0) return mean_step_[1];
  mean /= weight;
  double cumulative = 0, at_quantile = static_cast<double>(pi.size() - 1);
  for (size_t m = 1; m < pi.size(); ++m) {
    cumulative += static_cast<double>(m) * pi[m] / weight;
    if (cumulative >= quantile) {
      at_quantile = static_cast<double>(m);
      break;
    }
  }
  const double running = std::clamp(mean + kLifetimeSmoothing * (at_quantile - mean), 1.0,
                                    static_cast<double>(pi.size() - 1));
  const size_t below = static_cast<size_t>(std::floor(running));
  const size_t above = std::min(below + 1, pi.size() - 1);
  const double frac = running - static_cast<double>(below);
  return mean_step_[below] * (1 - frac) + mean_step_[above] * frac;
}

double ReplicaQueue::Quantile(const QueueState& s, double rate, LatencyMetric metric,
                              double quantile) const {
  switch (metric) {
    case LatencyMetric::kTtft:
      return TtftQuantiles(s, rate, {quantile})[0];
    case LatencyMetric::kTpot:
      return TpotQuantile(s, quantile);
    case LatencyMetric::kE2e:
      break;
  }
  return TtftQuantiles(s, rate, {quantile})[0] + (mix_.output_len - 1) * TpotQuantile(s, quantile);
}

}  // namespace fulcrum::serve
