#include "serve/queueing.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <limits>
#include <memory>

namespace fulcrum::serve {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();
// Poisson terms kept per step table: until this much probability is left, at most kMaxKinds.
constexpr double kPoissonTail = 1e-4;
// A waiting arrival's slot wait, exponential with the queue's conditional mean (the M/M/c
// wait's shape given a wait: Kleinrock, "Queueing Systems, Volume 1", 1975, section 3.5;
// Allen-Cunneen's mean), as kWaitPoints equally likely points: the mean times
// -log(1 - (k + 1/2) / kWaitPoints), the midpoints of its quantiles.
constexpr size_t kWaitPoints = 4;
constexpr std::array<double, kWaitPoints> kWaitFactor = {0.13353139262452263, 0.4700036292457356,
                                                         0.9808292530117262, 2.0794415416798357};
// Groups of arrival states the first-token distribution is evaluated at.
constexpr size_t kMaxStates = 32;
// The share of the engine's time the prompts' own work may take in the peakedness below: a
// guard (peakedness at most 10) for loads where the prompts alone nearly saturate the replica.
constexpr double kMaxPrefillShare = 0.9;

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
  log_rate_.assign(cap + 1, 0);
  prompt_seconds_.assign(cap + 1, 0);
  kinds_.reserve(cap * 8);
  kind_begin_.assign(cap + 2, 0);
  own_seconds_ = std::make_unique_for_overwrite<double[]>((cap + 1) * kMaxKinds);
  own_count_.assign(cap + 1, 0);
  extra_seconds_.assign(cap + 1, -1);
  for (size_t m = 1; m <= cap; ++m) {
    // Prompts join a step as completions free slots: m / output a step in steady state, a
    // Poisson count (arrivals are).
    const double running = static_cast<double>(m);
    const double joins = running / output;
    double p = std::exp(-joins), left = 1, sum = 0, sum_sq = 0;
    kind_begin_[m] = kinds_.size();
    for (size_t k = 0; k < kMaxKinds && left > kPoissonTail; ++k) {
      const double seconds =
          step_.Seconds(running, context_, static_cast<double>(k) * input, prompt_context_);
      kinds_.push_back({p, seconds});
      sum += p * seconds;
      sum_sq += p * seconds * seconds;
      left -= p;
      p *= joins / static_cast<double>(k + 1);
    }
    kind_begin_[m + 1] = kinds_.size();
    // The step time one more joining prompt adds, averaged over the Poisson count that joins:
    // d E[step] / d joins = sum_k P(k) (step(k + 1) - step(k)).
    double marginal = 0, weight = 0;
    for (size_t i = kind_begin_[m]; i + 1 < kinds_.size(); ++i) {
      marginal += kinds_[i].probability * (kinds_[i + 1].seconds - kinds_[i].seconds);
      weight += kinds_[i].probability;
    }
    prompt_seconds_[m] = weight > 0 ? marginal / weight : 0;
    const double covered = 1 - std::max(left, 0.0);
    mean_step_[m] = sum / covered;
    biased_mean_step_[m] = sum_sq / sum;
    rate_[m] = running / (output * mean_step_[m]);
    log_rate_[m] = std::log(rate_[m]);
  }
}

QueueState ReplicaQueue::Solve(double rate, int64_t concurrency) const {
  QueueState out;
  Solve(rate, concurrency, out);
  return out;
}

void ReplicaQueue::Solve(double rate, int64_t concurrency, QueueState& out) const {
  out.wait_probability = 0;
  out.mean_conditional_wait = 0;
  const size_t c = static_cast<size_t>(std::clamp<int64_t>(concurrency, 1, max_concurrency()));
  out.capacity_requests_per_second = rate_[c];
  out.utilization = rate / rate_[c];
  const double rho = out.utilization;
  if (!(rho < 1) || !(rate > 0)) {
    out.stable = rate == 0;
    out.pi.assign(c + 1, 0);
    out.pi[0] = 1;  // no traffic: always empty
    return;
  }
  out.stable = true;
  // Birth-death: pi_n / pi_0 = prod (rate / rate_k)^(1 / z_k), rescaled when it grows large.
  // The chain's completion rate follows n at once; the engine's prompts do not: a burst of
  // arrivals lengthens the steps that prefill it, which lets more arrive in the window a request
  // spends at the replica. Linearised, n - n* = noise + rate x e x (n - n*) + (the decodes' part
  // the chain has), e = prompt_seconds_ (the step time one prompt adds): the count's variance is
  // the chain's times z = 1 / (1 - rate x e), the share of time the prompts take (derivation, no
  // source: first-order noise algebra). A count z times as peaked as the chain's is taken as
  // Hayward's approximation takes it, the birth-death chain of c / z servers at load a / z
  // (Fredericks, "Congestion in blocking systems - a simple approximation technique", Bell
  // System Technical Journal 59(6), 805-827, 1980; Whitt, "Heavy-traffic approximations for service
  // systems with blocking", AT&T Bell Laboratories Technical Journal 63(5), 1984):
  // each ratio to the power 1 / z, which keeps the chain's mode and multiplies its variance by z.
  std::vector<double>& pi = out.pi;
  pi.assign(c + 1, 0);
  pi[0] = 1;
  const double log_rate = std::log(rate);
  auto inverse_peakedness = [&](size_t n) {
    return 1 - std::min(kMaxPrefillShare, rate * prompt_seconds_[n]);
  };
  for (size_t n = 1; n <= c; ++n) {
    pi[n] = pi[n - 1] * std::exp(inverse_peakedness(n) * (log_rate - log_rate_[n]));
    if (pi[n] > 1e200) {
      for (size_t k = 0; k <= n; ++k) pi[k] *= 1e-200;
    }
  }
  // n >= c: the geometric tail of the queue, its ratio rho^(1 / z) as well.
  pi[c] /= 1 - std::exp(inverse_peakedness(c) * std::log(rho));
  double total = 0;
  for (double p : pi) total += p;
  for (double& p : pi) p /= total;
  out.wait_probability = pi[c];
  // M/M/c: a waiting request waits Exp(rate_c (1 - rho)); Allen-Cunneen scales it by
  // (c_a^2 + c_s^2) / 2 for general arrivals and service (Allen, "Probability, Statistics and
  // Queueing Theory", 2nd ed., 1990, eq. 6.110).
  out.mean_conditional_wait = (mix_.arrival_scv + mix_.output_scv) / 2 / (rate_[c] * (1 - rho));
}

double ReplicaQueue::WaitQuantile(const QueueState& s, double quantile) const {
  if (!s.stable) return kInfinity;
  if (s.wait_probability <= 1 - quantile) return 0;
  return s.mean_conditional_wait * std::log(s.wait_probability / (1 - quantile));
}

double ReplicaQueue::OwnSeconds(size_t running, size_t others) const {
  double* own = &own_seconds_[running * kMaxKinds];
  size_t& count = own_count_[running];
  const double n = static_cast<double>(running);
  const double budget = std::max(1.0, budget_ - n);
  for (; count <= others; ++count) {
    const double tokens = mix_.input_len * static_cast<double>(count + 1);
    own[count] = step_.ChunkedPrefillSeconds(n, context_, tokens, budget, prompt_context_);
  }
  return own[others];
}

std::span<const ReplicaQueue::StepKind> ReplicaQueue::KindsAt(size_t running) const {
  static constexpr StepKind kIdle[] = {{1, 0}};
  if (running == 0) return kIdle;
  return {&kinds_[kind_begin_[running]], kind_begin_[running + 1] - kind_begin_[running]};
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

void ReplicaQueue::FirstTokenAt(int64_t running, double rate, FirstToken& f) const {
  const size_t n = static_cast<size_t>(running);
  // The prompts that arrive while the step under way runs (Poisson in its length) share the
  // request's next step(s). `f` is refilled in place (its vectors keep their capacity).
  const std::span<const StepKind> under_way = KindsAt(n);
  const size_t kinds = under_way.size();
  f.kinds = kinds;
  f.estimate_ready = false;
  f.own = 0;
  f.longest = 0;
  f.total_weight = 0;
  std::fill_n(f.own_count.begin(), kinds, 0);
  for (size_t i = 0; i < kinds; ++i) {
    const StepKind& k = under_way[i];
    const double arrivals = rate * k.seconds;
    double p = std::exp(-arrivals), left = 1;
    for (size_t j = 0; j < kMaxKinds && left > kPoissonTail; ++j) {
      if (j == f.own) f.own_seconds[f.own++] = OwnSeconds(n, j);
      const double seconds = f.own_seconds[j];
      f.own_probability[i * kMaxKinds + j] = p;
      f.own_count[i] = j + 1;
      f.longest = std::max(f.longest, k.seconds + seconds);
      left -= p;
      p *= arrivals / static_cast<double>(j + 1);
    }
  }
  // Kind i's probabilities past its count (up to the longest count) are 0.
  for (size_t i = 0; i < kinds; ++i) {
    double* row = f.own_probability.data() + i * kMaxKinds;
    std::fill(row + f.own_count[i], row + f.own, 0.0);
  }
  // Term j's kinds: from the first whose count passes j, when the counts rise with the kind.
  const bool rising = std::is_sorted(f.own_count.begin(), f.own_count.begin() + kinds);
  for (size_t j = 0, i = 0; j < f.own; ++j) {
    while (rising && i < kinds && f.own_count[i] <= j) ++i;
    f.first_kind[j] = rising ? i : 0;
  }
  // Prompt work beyond what the decodes' steps hide is a single server (M/D/1): busy with
  // probability rho_p = rate x the extra time of one prompt; a waiting prompt waits on average
  // extra / (2 (1 - rho_p)) (Pollaczek-Khinchine for deterministic service), exponential tail.
  const double extra = ExtraSeconds(n);
  const double rho = std::min(0.999, rate * extra);
  f.busy = rho;
  f.busy_mean = extra / (2 * (1 - rho));
  f.deterministic_longest = f.longest;
  f.longest += f.busy_mean * 12;
  // TtftTail's per-kind constants, each computed as it computes them.
  const bool waits = f.busy > 0 && f.busy_mean > 0;
  for (size_t i = 0; i < kinds; ++i) {
    const StepKind& k = under_way[i];
    const double w = running > 0 ? k.probability * k.seconds : 1;
    f.total_weight += w;
    const double ratio = waits ? k.seconds / f.busy_mean : 0;
    f.width[i] = k.seconds;
    f.weight[i] = w;
    f.spread[i] = ratio < 500 ? std::exp(ratio) : 0;
    f.scale[i] = f.busy_mean / k.seconds;
  }
  f.max_width = 0;
  for (const StepKind& k : under_way) f.max_width = std::max(f.max_width, k.seconds);
}

void ReplicaQueue::PrepareTailEstimate(FirstToken& f) {
  const size_t kinds = f.kinds;
  const bool waits = f.busy > 0 && f.busy_mean > 0;
  f.rows_sorted = std::is_sorted(f.own_seconds.begin(), f.own_seconds.begin() + f.own) &&
                  std::is_sorted(f.width.begin(), f.width.begin() + kinds);
  for (size_t i = 0; i < kinds; ++i) {
    if (waits && f.width[i] > 0 && !(f.spread[i] > 0)) f.rows_sorted = false;
  }
  if (!f.rows_sorted) return;
  // Per kind: busy x scale x (spread - 1) (busy for a step of length 0), 1 / width (0 for it).
  std::array<double, kMaxKinds> kind_decay{}, inverse_width{};
  for (size_t i = 0; i < kinds; ++i) {
    kind_decay[i] = !waits ? 0 : f.width[i] > 0 ? f.busy * f.scale[i] * (f.spread[i] - 1) : f.busy;
    inverse_width[i] = f.width[i] > 0 ? 1 / f.width[i] : 0;
  }
  for (size_t j = 0; j < f.own; ++j) {
    double* decay_weight = &f.decay_weight[j * (kMaxKinds + 1)];
    double* uniform_weight = &f.uniform_weight[j * (kMaxKinds + 1)];
    double* uniform_rate = &f.uniform_rate[j * (kMaxKinds + 1)];
    decay_weight[0] = 0;
    uniform_weight[kinds] = uniform_rate[kinds] = 0;
    for (size_t i = 0, r = kinds - 1; i < kinds; ++i, --r) {
      const double weight = f.weight[i] * f.own_probability[i * kMaxKinds + j];
      decay_weight[i + 1] = decay_weight[i] + weight * kind_decay[i];
      const double weight_r = f.weight[r] * f.own_probability[r * kMaxKinds + j];
      uniform_weight[r] = uniform_weight[r + 1] + weight_r;
      uniform_rate[r] = uniform_rate[r + 1] + weight_r * inverse_width[r];
    }
  }
  // Whole rows: every kind's term 1 (suffix sums), every kind's step passed (the decay terms,
  // carried from row to row relative to the latest own step).
  f.row_const[f.own] = 0;
  for (size_t j = f.own; j-- > 0;) {
    f.row_const[j] = f.row_const[j + 1] + f.uniform_weight[j * (kMaxKinds + 1)];
  }
  double decay = 0;
  for (size_t j = 0; j < f.own; ++j) {
    f.row_step[j] = 0;
    if (waits && j > 0) {
      f.row_step[j] = std::exp(-(f.own_seconds[j] - f.own_seconds[j - 1]) / f.busy_mean);
      decay *= f.row_step[j];
    }
    decay += f.decay_weight[j * (kMaxKinds + 1) + kinds];
    f.row_decay[j] = decay;
  }
}

// TtftTail's sum with UniformPlusWaitTail's branches resolved per term, the own steps outside
// and the kinds inside (each kind's sum still takes its terms in TtftTail's order, and a term
// UniformPlusWaitTail returns as (1 - busy) x 0, or a padding probability of 0, adds +0, which
// leaves a sum of non-negative terms as it is): the same operations on the same operands, with
// the kinds' sums independent of each other in the inner loop.
double ReplicaQueue::FastTtftTail(const FirstToken& f, double t) {
  const size_t kinds = f.kinds;
  const bool waits = f.busy > 0 && f.busy_mean > 0;
  const double mean = f.busy_mean, busy = f.busy, far = 40 * mean;
  std::array<double, kMaxKinds> kind_tail{};
  for (size_t j = 0; j < f.own; ++j) {
    const size_t from = f.first_kind[j];  // the kinds before it add 0 x term = +0
    const double x = t - f.own_seconds[j];
    const double* p = &f.own_probability[j];  // p[i * kMaxKinds]: kind i's
    if (x <= 0) {
      for (size_t i = from; i < kinds; ++i) kind_tail[i] += p[i * kMaxKinds] * 1.0;
      continue;
    }
    if (!waits) {
      if (x >= f.max_width) continue;  // every kind's uniform part is 0
      for (size_t i = from; i < kinds; ++i) {
        const double width = f.width[i];
        if (x < width) kind_tail[i] += p[i * kMaxKinds] * std::max(0.0, (width - x) / width);
      }
      continue;
    }
    if (x - f.max_width > far) continue;  // every kind's term is (1 - busy) x 0
    const double d = std::exp(-x / mean);
    for (size_t i = from; i < kinds; ++i) {
      const double width = f.width[i];
      double term = 0;
      if (x >= width) {
        if (x - width > far) continue;
        if (width <= 0) {
          term = busy * d;
        } else {
          const double shifted = f.spread[i] > 0 ? d * f.spread[i] : std::exp(-(x - width) / mean);
          term = busy * (f.scale[i] * (shifted - d));
        }
      } else {
        const double uniform = (width - x) / width;
        term = (1 - busy) * uniform + busy * (uniform + f.scale[i] * (1 - d));
      }
      kind_tail[i] += p[i * kMaxKinds] * term;
    }
  }
  double tail = 0;
  for (size_t i = 0; i < kinds; ++i) tail += f.weight[i] * kind_tail[i];
  return f.total_weight > 0 ? tail / f.total_weight : 0;
}

double ReplicaQueue::TailEstimate(const FirstToken& f, double t) {
  if (!f.rows_sorted) return FastTtftTail(f, t);
  const bool waits = f.busy > 0 && f.busy_mean > 0;
  // Rows [0, passed): x >= every width; [passed, ahead): inside some step; [ahead, own): x <= 0.
  size_t passed = 0;
  while (passed < f.own && t - f.own_seconds[passed] >= f.max_width) ++passed;
  size_t ahead = passed;
  while (ahead < f.own && t - f.own_seconds[ahead] > 0) ++ahead;
  double sum = f.row_const[ahead];
  // exp(-(t - own_j) / busy_mean) for j from ahead - 1 down: one exp, then row_step's ratios.
  double d = waits && ahead > 0 ? std::exp(-(t - f.own_seconds[ahead - 1]) / f.busy_mean) : 0;
  size_t shorter = 0;  // kinds shorter than x (x rises as j falls: more)
  for (size_t j = ahead; j-- > passed;) {
    const double x = t - f.own_seconds[j];
    while (shorter < f.kinds && f.width[shorter] <= x) ++shorter;
    const size_t cell = j * (kMaxKinds + 1) + shorter;
    sum += f.uniform_weight[cell] - x * f.uniform_rate[cell];
    if (waits) {
      sum += d * f.decay_weight[cell] + f.busy * f.busy_mean * (1 - d) * f.uniform_rate[cell];
      d *= f.row_step[j];
    }
  }
  if (waits && passed > 0) sum += f.row_decay[passed - 1] * d;
  return f.total_weight > 0 ? sum / f.total_weight : 0;
}

// Every term at t >= the longest step under way plus own step(s) is busy x at most
// exp(-(t - that) / busy_mean) (the uniform part is 0 there); before it a term is at most 1.
double ReplicaQueue::TtftTailBound(const FirstToken& f, double t) {
  if (t < f.deterministic_longest) return 1;
  if (!(f.busy > 0 && f.busy_mean > 0)) return 0;
  return f.busy * std::exp(-(t - f.deterministic_longest) / f.busy_mean);
}

double ReplicaQueue::TtftTail(int64_t running, const FirstToken& f, double t) const {
  const std::span<const StepKind> under_way = KindsAt(static_cast<size_t>(running));
  const bool waits = f.busy > 0 && f.busy_mean > 0;
  // exp(-(t - own_j) / busy_mean) per j: the own times are the same for every kind.
  std::array<double, kMaxKinds> decay{};
  size_t known = 0;
  // The step under way, drawn by its length among the step kinds (any, when idle).
  double weight = 0, tail = 0;
  for (size_t i = 0; i < under_way.size() && i < f.kinds; ++i) {
    const StepKind& k = under_way[i];
    const double w = running > 0 ? k.probability * k.seconds : 1;
    weight += w;
    const double ratio = waits ? k.seconds / f.busy_mean : 0;
    const double spread = ratio < 500 ? std::exp(ratio) : 0;
    double kind_tail = 0;
    for (size_t j = 0; j < f.own_count[i]; ++j) {
      const double x = t - f.own_seconds[j];
      for (; waits && known <= j; ++known) {
        const double xk = t - f.own_seconds[known];
        decay[known] = xk > 0 ? std::exp(-xk / f.busy_mean) : 1;
      }
      kind_tail += f.own_probability[i * kMaxKinds + j] *
                   UniformPlusWaitTail(x, k.seconds, f.busy, f.busy_mean, decay[j], spread);
    }
    tail += w * kind_tail;
  }
  return weight > 0 ? tail / weight : 0;
}

// TtftQuantiles' bisection step "P(TTFT > t) > threshold" with less work than the whole sum and
// the same answer. The tail falls with t, each of its terms (a pooled state's tail, or the slot
// wait's at one of its points) too, and TailEstimate is a term's sum in exact arithmetic (its
// parts summed by rows at an eighth of the cost; the parts the sum skips past 40 busy means add
// < e^-40): rounded, a sum, its estimate and the same at a later time keep that order but for
// ~1e-13 (ReplicaQueueTest.TailEstimateIsTheSumButForRounding holds the estimate within 1e-12),
// far under kMargin. So a step is settled, in this order, by a sum taken before at a time on its
// side that clears the threshold by the margin, the same from what the estimates so far say,
// TtftTailBound's "no" far above the quantile, then by the estimate at t: each term's estimate
// lies between its estimates at the nearest times either side that have them (between 0 and 1
// without one), and the terms are estimated, those of a wide interval (times its weight) first,
// until the mixture's interval clears the threshold by the margin. Only where every term is
// estimated and the estimate is within the margin of the threshold is the step settled by the sum,
// in the straightforward order (stopped once past the threshold: its terms are >= 0, so the rounded
// sum of the rest cannot bring it back under). Each step is answered as the straightforward
// search's sum answers it: the answers do not change.
struct ReplicaQueue::TtftSearch {
  static constexpr double kMargin = 1e-9;
  const std::vector<std::pair<size_t, double>>& states;  // representative state, probability
  std::vector<FirstToken>& first;                        // [i]: states[i]'s
  double wait_probability = 0, wait_mean = 0;
  size_t waiting_state = 0;  // first[]'s index of the state a waiting arrival joins
  std::vector<KnownTail>& known;
  std::vector<EstimateBracket>& estimated;  // what the estimates so far say
  std::vector<double>& bounds;              // their terms' intervals
  int64_t& sums;                            // ReplicaQueue::ttft_sums_

  // 1 / 0 / -1 as Above would say without a new estimate or sum: a sum at t' >= t above
  // threshold + margin, or a whole one at t' <= t below threshold - margin (at t itself, its
  // side); the same of the estimates' intervals; the bound.
  int Settled(double t, double threshold) const {
    for (const KnownTail& k : known) {
      if (k.whole && k.t == t) return k.value > threshold ? 1 : 0;
    }
    for (const KnownTail& k : known) {
      if (k.t >= t && k.value > threshold + kMargin) return 1;
      if (k.whole && k.t <= t && k.value < threshold - kMargin) return 0;
    }
    for (const EstimateBracket& e : estimated) {
      if (e.t >= t && e.lower > threshold + kMargin) return 1;
      if (e.t <= t && e.upper < threshold - kMargin) return 0;
    }
    double bound = 0;
    for (size_t i = 0; i < states.size(); ++i) {
      bound += states[i].second * TtftTailBound(first[i], t);
    }
    if (wait_probability > 0) {
      for (double factor : kWaitFactor) {
        bound += wait_probability / kWaitPoints *
                 TtftTailBound(first[waiting_state], t - wait_mean * factor);
      }
    }
    return bound < threshold - kMargin ? 0 : -1;
  }

  // The mixture's terms: the pooled states, then the slot wait's points.
  static constexpr size_t kMaxTerms = kMaxStates + kWaitPoints;
  size_t Terms() const { return states.size() + (wait_probability > 0 ? kWaitPoints : 0); }
  double Weight(size_t k) const {
    return k < states.size() ? states[k].second : wait_probability / kWaitPoints;
  }
  double TermEstimate(size_t k, double t) {
    FirstToken& f = first[k < states.size() ? k : waiting_state];
    if (!f.estimate_ready) {
      PrepareTailEstimate(f);
      f.estimate_ready = true;
    }
    if (k < states.size()) return TailEstimate(f, t);
    return TailEstimate(f, t - wait_mean * kWaitFactor[k - states.size()]);
  }

  // Estimates the terms at t, those whose interval (times its weight) is at least the mean
  // first, then the others, until the mixture's interval clears the threshold by the margin
  // (1: above, 0: below) or every term is estimated (-1: within the margin); kept in
  // `estimated`. (Picking the widest each time takes about as many estimates, 33,400 against
  // 34,400 for docs/BENCH.md's bf16 plan, and its selection costs more than that saves.)
  int EstimatedSide(double t, double threshold) {
    const size_t terms = Terms();
    const EstimateBracket* before = nullptr;  // the nearest each side
    const EstimateBracket* after = nullptr;
    for (const EstimateBracket& e : estimated) {
      if (e.t <= t && (before == nullptr || e.t > before->t)) before = &e;
      if (e.t >= t && (after == nullptr || e.t < after->t)) after = &e;
    }
    const size_t at = bounds.size();
    const size_t upper_at = before != nullptr ? before->at + terms : 0;
    const size_t lower_at = after != nullptr ? after->at : 0;
    if (bounds.capacity() < at + 2 * terms) bounds.reserve(2 * (at + 2 * terms) + 1024);
    bounds.resize(at + 2 * terms);
    double* lower = &bounds[at];
    double* upper = &bounds[at + terms];
    std::array<double, kMaxTerms> weight, width;  // width: weight x the interval's
    double low = 0, high = 0;
    for (size_t k = 0; k < terms; ++k) {
      lower[k] = after != nullptr ? bounds[lower_at + k] : 0;
      upper[k] = before != nullptr ? bounds[upper_at + k] : 1;
      weight[k] = Weight(k);
      low += weight[k] * lower[k];
      high += weight[k] * upper[k];
      width[k] = weight[k] * (upper[k] - lower[k]);
    }
    const double wide = (high - low) / static_cast<double>(terms);
    int side = -1;
    for (int pass = 0; pass < 2 && side < 0; ++pass) {
      for (size_t k = 0; k < terms; ++k) {
        if (low > threshold + kMargin) side = 1;
        if (high < threshold - kMargin) side = 0;
        if (side >= 0) break;
        if (!(width[k] > 0) || (pass == 0 && width[k] < wide)) continue;
        const double e = TermEstimate(k, t);
        low += weight[k] * (e - lower[k]);
        high += weight[k] * (e - upper[k]);
        lower[k] = upper[k] = e;
        width[k] = 0;
      }
    }
    if (side < 0 && low > threshold + kMargin) side = 1;
    if (side < 0 && high < threshold - kMargin) side = 0;
    estimated.push_back({t, low, high, at});
    return side;
  }

  // The straightforward order's sum at t; with `stop_above`, stopped once above it.
  double Sum(double t, double stop_above) {
    ++sums;
    return Mixture<FastTtftTail>(t, stop_above, known);
  }

  // The estimate of the whole mixture at t, in the sum's order (for the tests).
  double Estimated(double t) {
    double p = 0;
    for (size_t k = 0; k < Terms(); ++k) p += Weight(k) * TermEstimate(k, t);
    return p;
  }

  // The pooled states' tails and the slot wait's at t, each by `Tail`, stopped once above
  // `stop_above` (a lower bound then), kept in `into`.
  template <double (*Tail)(const FirstToken&, double)>
  double Mixture(double t, double stop_above, std::vector<KnownTail>& into) {
    double p = 0;
    for (size_t i = 0; i < states.size(); ++i) {
      p += states[i].second * Tail(first[i], t);
      if (p > stop_above) {
        into.push_back({t, p, false});
        return p;
      }
    }
    if (wait_probability > 0) {
      for (double factor : kWaitFactor) {
        p += wait_probability / kWaitPoints * Tail(first[waiting_state], t - wait_mean * factor);
      }
    }
    into.push_back({t, p, true});
    return p;
  }

  bool Above(double t, double threshold) {
    int side = Settled(t, threshold);
    if (side < 0) side = EstimatedSide(t, threshold);
    if (side >= 0) return side == 1;
    return Sum(t, threshold) > threshold;
  }
};

bool ReplicaQueue::TtftContext::Matches(const QueueState& s, double r) const {
  return valid && r == rate && s.pi == pi && s.wait_probability == wait_probability &&
         s.mean_conditional_wait == wait_mean;
}

void ReplicaQueue::PrepareTtft(const QueueState& s, double rate, TtftContext& ctx) const {
  const std::vector<double>& pi = s.pi;
  const size_t c = pi.size() - 1;
  ctx.valid = true;
  ctx.rate = rate;
  ctx.pi = pi;
  ctx.wait_probability = s.wait_probability;
  ctx.wait_mean = s.mean_conditional_wait;
  ctx.known.clear();
  ctx.estimated.clear();
  ctx.bounds.clear();
  // An arrival that finds n < c running joins at the next step; one that finds every slot busy
  // waits for a slot (the queue's wait), then joins c - 1 running. States below 1e-5 of the most
  // likely one are left out; neighbouring states are pooled into at most kMaxStates groups,
  // each at its most likely state (the first-token time changes slowly with n).
  const double top = *std::max_element(pi.begin(), pi.end());
  std::vector<size_t>& significant = ctx.significant;
  significant.clear();
  for (size_t n = 0; n < c; ++n) {
    if (pi[n] >= 1e-5 * top) significant.push_back(n);
  }
  const size_t stride = (significant.size() + kMaxStates - 1) / kMaxStates;
  ctx.states.clear();  // representative, pooled probability
  for (size_t i = 0; i < significant.size(); i += std::max<size_t>(stride, 1)) {
    size_t best = significant[i];
    double pooled = 0;
    for (size_t k = i; k < std::min(significant.size(), i + stride); ++k) {
      pooled += pi[significant[k]];
      if (pi[significant[k]] > pi[best]) best = significant[k];
    }
    ctx.states.emplace_back(best, pooled);
  }
  // One more for the state a waiting arrival joins when it is not among them.
  if (ctx.first.size() < ctx.states.size() + 1) {
    ctx.first.reserve(kMaxStates + 1);  // grown in place: no copies of the tables
    ctx.first.resize(ctx.states.size() + 1);
  }
  ctx.low = kInfinity;
  ctx.high = 0;
  auto prepare = [&](size_t n, size_t slot) {
    FirstTokenAt(static_cast<int64_t>(n), rate, ctx.first[slot]);
    ctx.low = std::min(ctx.low, OwnSeconds(n, 0));
    ctx.high = std::max(ctx.high, ctx.first[slot].longest);
  };
  ctx.waiting = ctx.states.size();
  for (size_t i = 0; i < ctx.states.size(); ++i) {
    prepare(ctx.states[i].first, i);
    if (ctx.states[i].first == c - 1) ctx.waiting = i;
  }
  if (s.wait_probability > 0 && ctx.waiting == ctx.states.size()) prepare(c - 1, ctx.waiting);
  ctx.high += ctx.wait_mean * (kWaitFactor.back() + 12);
}

std::vector<double> ReplicaQueue::TtftQuantiles(const QueueState& s, double rate,
                                                const std::vector<double>& quantiles) const {
  std::vector<double> out(quantiles.size());
  TtftQuantiles(s, rate, quantiles, out);
  return out;
}

void ReplicaQueue::TtftQuantiles(const QueueState& s, double rate,
                                 std::span<const double> quantiles, std::span<double> out) const {
  std::fill(out.begin(), out.end(), kInfinity);
  if (!s.stable || quantiles.empty()) return;
  // The straightforward search prepares afresh; the default one reuses the last state's
  // first-token distributions and the tail values it summed (the search asks the same state
  // again: the chosen cap's percentiles after the search's targets).
  TtftContext fresh;
  TtftContext& ctx = straightforward_ ? fresh : ttft_context_;
  if (straightforward_ || !ctx.Matches(s, rate)) PrepareTtft(s, rate, ctx);
  const size_t waiting = s.pi.size() - 2;  // c - 1
  auto tail = [&](double t) {
    double p = 0;
    for (size_t i = 0; i < ctx.states.size(); ++i) {
      const auto& [n, weight] = ctx.states[i];
      p += weight * TtftTail(static_cast<int64_t>(n), ctx.first[i], t);
    }
    if (s.wait_probability > 0) {
      // Waiting arrivals: the slot wait (kWaitPoints points) added to the time of a joiner of
      // c - 1.
      for (double factor : kWaitFactor) {
        p += s.wait_probability / kWaitPoints *
             TtftTail(static_cast<int64_t>(waiting), ctx.first[ctx.waiting],
                      t - ctx.wait_mean * factor);
      }
    }
    return p;
  };
  TtftSearch search{ctx.states, ctx.first,     s.wait_probability, ctx.wait_mean, ctx.waiting,
                    ctx.known,  ctx.estimated, ctx.bounds,         ttft_sums_};
  // The highest level first: its first estimates land in the far tail (the bounds settle the
  // steps above it), where they bracket the highest quantile, and the lower levels start from
  // those values. Each level's answer is its own bisection's, whatever the order.
  for (size_t done = 0; done < quantiles.size(); ++done) {
    size_t i = 0;
    for (size_t k = 0; k < quantiles.size(); ++k) {
      const bool open = out[k] == kInfinity;
      if (open && (out[i] != kInfinity || quantiles[k] > quantiles[i])) i = k;
    }
    double a = ctx.low, b = ctx.high;
    const double threshold = 1 - quantiles[i];
    for (int k = 0; k < 30 && b - a > 2e-3 * b; ++k) {
      const double mid = (a + b) / 2;
      const bool above = straightforward_ ? tail(mid) > threshold : search.Above(mid, threshold);
      (above ? a : b) = mid;
    }
    out[i] = b;
  }
}

std::pair<double, double> ReplicaQueue::TtftTailAndEstimate(const QueueState& s, double rate,
                                                            double t) const {
  if (!s.stable) return {1, 1};
  TtftContext ctx;
  PrepareTtft(s, rate, ctx);
  int64_t sums = 0;
  TtftSearch search{ctx.states, ctx.first,     s.wait_probability, ctx.wait_mean, ctx.waiting,
                    ctx.known,  ctx.estimated, ctx.bounds,         sums};
  return {search.Sum(t, kInfinity), search.Estimated(t)};
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
