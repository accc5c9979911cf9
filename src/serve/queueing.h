// Latency percentiles of one continuous-batching replica under an offered request rate: a
// state-dependent M/G/c approximation. The number of requests at the replica is a birth-death
// chain (arrivals at the offered rate, at most `max_concurrency` running, the rest queued FCFS)
// whose completion rate with m running is m / (output_len x step(m)), step(m) being the forward
// pass that decodes the m sequences with their prompts interleaved (StepModel), its count made
// more peaked (Hayward's approximation) by the prompts' feedback on the step time. Queue waits
// take the Allen-Cunneen correction (c_a^2 + c_s^2) / 2 of the M/M/c wait, its shape exponential.
// Checked against a discrete-event simulation of the engine in queueing_test.cc. Seconds. A
// ReplicaQueue fills caches (step times, the last state whose TTFT percentiles it was asked for) as
// it is asked: one per thread, not thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "serve/serve.h"
#include "serve/spec.h"

namespace fulcrum::serve {

// The request mix one replica sees: mean lengths, and the variability that corrects the wait.
struct RequestMix {
  double input_len = 512, output_len = 128;  // mean tokens per request
  double arrival_scv = 1;  // squared coefficient of variation of inter-arrival times (Poisson 1)
  double output_scv = 0;   // of the output length (service time); 0 = fixed lengths
};

// The chain solved at one offered rate and concurrency cap.
struct QueueState {
  bool stable = false;     // offered rate below the capacity at the cap
  double utilization = 0;  // offered rate / capacity at the cap
  double capacity_requests_per_second = 0;
  double wait_probability = 0;       // of an arriving request finding every slot busy
  double mean_conditional_wait = 0;  // of those that wait
  // pi[n], n = 0..cap: probability of n requests at the replica (the last: cap or more).
  std::vector<double> pi;
};

class ReplicaQueue {
 public:
  // Steps tabulated for 1..max_concurrency running sequences of `step`'s layout;
  // `step_budget_tokens` = the engine's token budget per step (prefill chunks + decodes).
  ReplicaQueue(const StepModel& step, const workload::Model& model, const RequestMix& mix,
               int64_t max_concurrency, int64_t step_budget_tokens);

  int64_t max_concurrency() const { return static_cast<int64_t>(mean_step_.size()) - 1; }
  // The mean step with m running (1 <= m <= max_concurrency): the decodes, and the prompts that
  // join (Poisson, m / output_len a step on average) in the same pass.
  double StepSeconds(int64_t running) const { return mean_step_[static_cast<size_t>(running)]; }

  // The chain at `requests_per_second` with at most `concurrency` (clamped to 1..max) running.
  QueueState Solve(double requests_per_second, int64_t concurrency) const;
  // The same into `out`, its vector's capacity kept (no allocation once it has grown).
  void Solve(double requests_per_second, int64_t concurrency, QueueState& out) const;
  // The `quantile` (0 < q < 1) over requests of `metric` in `state` at `requests_per_second`;
  // +inf when unstable. E2E is the TTFT quantile plus output_len - 1 steps at the TPOT quantile
  // (an upper bound).
  double Quantile(const QueueState& state, double requests_per_second, LatencyMetric metric,
                  double quantile) const;
  // TTFT quantiles at several levels at once (sharing the per-state work); +inf when unstable.
  std::vector<double> TtftQuantiles(const QueueState& state, double requests_per_second,
                                    const std::vector<double>& quantiles) const;
  // The same into out[i] for quantiles[i] (out.size() == quantiles.size()), allocating nothing
  // once this queue has been asked about as many pooled states before.
  void TtftQuantiles(const QueueState& state, double requests_per_second,
                     std::span<const double> quantiles, std::span<double> out) const;
  // The queue wait's quantile alone (0 when fewer than 1 - q of the requests wait).
  double WaitQuantile(const QueueState& state, double quantile) const;
  // true: TtftQuantiles evaluates the whole tail at every step of its bisection (the
  // straightforward search, kept for the tests). false (default): the same bisection, each step
  // decided from bounds, or from the tail's estimate (TailEstimate) where it clears the threshold
  // by far more than its rounding, the sum taken only where neither settles it (see TtftSearch
  // in queueing.cc); the same answers to the last bit.
  void UseStraightforwardSearch(bool on) { straightforward_ = on; }
  // Exact tail sums the default search has taken so far (only where the tail's estimate is
  // within the search's margin of a level's threshold).
  int64_t ttft_sums() const { return ttft_sums_; }
  // For tests: P(TTFT > t) in `state` at `requests_per_second` as the default search sums it
  // (first; bit for bit the straightforward search's sum) and its estimate (second), which
  // decides the default search's steps where it clears the threshold by the margin (1e-9).
  std::pair<double, double> TtftTailAndEstimate(const QueueState& state, double requests_per_second,
                                                double t) const;

 private:
  // Poisson terms kept per step table: until 1e-4 of the probability is left, at most this many.
  static constexpr size_t kMaxKinds = 24;
  // A step that k prompts join, its probability among steps and its time.
  struct StepKind {
    double probability = 0, seconds = 0;
  };
  // The first-token time of a request that finds n running, as a distribution: the rest of the
  // step under way (uniform over a step drawn by length: length-biased), the wait for the
  // prompts ahead (M/D/1 in the prompt work: probability busy, exponential tail), and its own
  // step(s) with the prompts that arrive beside it.
  struct FirstToken {
    // Per kind i < kinds of the step under way (kinds_[n]; one kind when n = 0): the request's
    // own step(s) with j = 0, 1, ... other prompts that arrived in that step (Poisson):
    // own_count[i] terms, their probabilities at own_probability[i x kMaxKinds + j] (0 past the
    // last) and their times own_seconds[j < own] (the same for every kind). first_kind[j]: the
    // kinds before it have no term j (0 unless own_count rises with i).
    size_t kinds = 0, own = 0;
    std::array<size_t, kMaxKinds> own_count{}, first_kind{};
    std::array<double, kMaxKinds * kMaxKinds> own_probability{};
    std::array<double, kMaxKinds> own_seconds{};
    double busy = 0, busy_mean = 0;  // prompt-queue wait: P(wait > 0), conditional mean
    double longest = 0;              // bound for the quantile search
    // What TtftTail computes per kind of step under way, whatever the time: its length, its
    // weight (probability x length: length-biased), exp(length / busy_mean) and
    // busy_mean / length; the weights' sum; the longest step under way plus own step(s).
    std::array<double, kMaxKinds> width{}, weight{}, spread{}, scale{};
    double total_weight = 0, deterministic_longest = 0, max_width = 0;
    // The same terms, weighted, summed by own step j, for TailEstimate (rows_sorted: own_seconds
    // and widths ascend, every kind's spread finite): the rows j >= K whose own step(s) outlast
    // t (every term 1) add row_const[K]; the rows j < J that every kind's step under way has
    // passed (each term busy x scale x (spread - 1) x exp(-(t - own_j) / busy_mean)) add
    // row_decay[J - 1] x exp(-(t - own_seconds[J - 1]) / busy_mean). A row between, with the
    // kinds k < u shorter than x = t - own_j: at cell j x (kMaxKinds + 1) + u, the kinds k < u's
    // busy x scale x (spread - 1) (decay_weight, times exp(-x / busy_mean)), the others' weight
    // (uniform_weight) and weight / width (uniform_rate), their terms being
    // 1 - x / width + busy x busy_mean / width x (1 - exp(-x / busy_mean)).
    bool rows_sorted = false;
    bool estimate_ready = false;  // PrepareTailEstimate has run since FirstTokenAt
    std::array<double, kMaxKinds + 1> row_const{};
    std::array<double, kMaxKinds> row_decay{};
    // exp(-(own_seconds[j] - own_seconds[j - 1]) / busy_mean) (j >= 1; 0 without a wait).
    std::array<double, kMaxKinds> row_step{};
    // Written for j < own and u <= kinds before they are read; not cleared (a context's
    // first-token distributions are allocated per queue).
    std::array<double, kMaxKinds*(kMaxKinds + 1)> decay_weight, uniform_weight, uniform_rate;
    FirstToken() {}  // NOLINT(modernize-use-equals-default): "= default" would clear the tables
  };
  // The kinds of step under way with n running (one of length 0 when idle).
  std::span<const StepKind> KindsAt(size_t running) const;
  void FirstTokenAt(int64_t running, double rate, FirstToken& f) const;
  // P(TTFT > t) for one arrival state (n running) with `extra` wait already added.
  double TtftTail(int64_t running, const FirstToken& f, double t) const;
  // The same figure from FirstToken's per-kind constants, its terms' branches taken once
  // (bit-identical to TtftTail: queueing_test.cc holds TtftQuantiles to the straightforward
  // search, which sums TtftTail).
  static double FastTtftTail(const FirstToken& f, double t);
  // FastTtftTail's value in exact arithmetic (but for the terms it skips past 40 busy means),
  // its terms summed in another order (rounding apart, ~1e-13): whole rows of terms from
  // FirstToken's row sums, by kind only the rows whose x = t - own step falls inside a step
  // under way, one exp a call. It decides a search step only where it clears the threshold by
  // the search's margin, 1e-9 (as the sum would decide it).
  static double TailEstimate(const FirstToken& f, double t);
  static void PrepareTailEstimate(FirstToken& f);  // its tables, before the first estimate
  // An upper bound of TtftTail at t from its slowest terms (1 before the longest own step).
  static double TtftTailBound(const FirstToken& f, double t);
  struct TtftSearch;
  // A tail value TtftSearch has summed at time t (whole: all terms; else a partial sum, a lower
  // bound).
  struct KnownTail {
    double t = 0, value = 0;
    bool whole = false;
  };
  // What TtftSearch knows of the tail's estimate at time t: per term of the mixture (the pooled
  // states, then the slot wait's points) an interval holding the term's estimate, at
  // bounds[at + k] (lower) and bounds[at + terms + k] (upper), and the mixture's interval
  // [lower, upper] they give (one point where every term was estimated).
  struct EstimateBracket {
    double t = 0, lower = 0, upper = 0;
    size_t at = 0;
  };
  // What TtftQuantiles works from for one state at one rate: the pooled arrival states (n,
  // probability), their first-token distributions (first[i] for states[i]; the state a waiting
  // arrival joins, c - 1, at first[waiting]), the bisection's bracket, and the tail values summed
  // so far. Refilled in place: no allocation once its vectors have grown.
  struct TtftContext {
    bool valid = false;
    double rate = 0, wait_probability = 0, wait_mean = 0;
    std::vector<double> pi;
    std::vector<std::pair<size_t, double>> states;
    std::vector<size_t> significant;  // PrepareTtft's scratch
    std::vector<FirstToken> first;
    size_t waiting = 0;
    double low = 0, high = 0;
    std::vector<KnownTail> known;
    std::vector<EstimateBracket> estimated;  // what the estimates so far say
    std::vector<double> bounds;              // their terms' intervals
    bool Matches(const QueueState& s, double rate) const;
  };
  void PrepareTtft(const QueueState& s, double rate, TtftContext& ctx) const;
  // Time of the request's own step(s) with j others beside n running; the extra time one prompt
  // adds to the decodes' steps (cached).
  double OwnSeconds(size_t running, size_t others) const;
  double ExtraSeconds(size_t running) const;
  double TpotQuantile(const QueueState& state, double quantile) const;

  StepModel step_;
  RequestMix mix_;
  double budget_ = 8192, context_ = 0, prompt_context_ = 0;
  std::vector<double> mean_step_;         // [m] E[T], m = 0..max (0: unused)
  std::vector<double> biased_mean_step_;  // [m] E[T^2] / E[T]: a step an arrival lands in
  // The kinds of step with m running: kinds_[kind_begin_[m] .. kind_begin_[m + 1]).
  std::vector<StepKind> kinds_;
  std::vector<size_t> kind_begin_;
  std::vector<double> rate_;      // completion rate with m running
  std::vector<double> log_rate_;  // log(rate_[m])
  // [m] the step time one more joining prompt adds with m running (Solve's peakedness).
  std::vector<double> prompt_seconds_;
  // OwnSeconds(n, j) at own_seconds_[n x kMaxKinds + j], j < own_count_[n]: filled on demand
  // (not cleared when allocated: only what is filled is read).
  mutable std::unique_ptr<double[]> own_seconds_;
  mutable std::vector<size_t> own_count_;
  mutable std::vector<double> extra_seconds_;  // [n], < 0 until computed
  bool straightforward_ = false;
  mutable TtftContext ttft_context_;  // the last state TtftQuantiles was asked about
  mutable int64_t ttft_sums_ = 0;
};

}  // namespace fulcrum::serve
