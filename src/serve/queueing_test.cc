// The queueing approximation of serve-plan checked against a discrete-event simulation of a
// continuous-batching engine: seeded Poisson (or constant) arrivals, at most `concurrency`
// sequences running, admission only while the KV cache holds every running sequence's
// input + output tokens, each step decoding every running sequence and filling the rest of its
// token budget with prompt chunks (FCFS), the step's time from the same StepModel. 10^4 requests
// per run, the first tenth left out as warm-up. The plan and the simulation must agree within
// 10 % on replicas and on P90 time to first token for five traffic mixes, with vLLM's and
// TensorRT-LLM's fitted constants.
#include "serve/queueing.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <deque>
#include <iostream>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "catalog/catalog.h"
#include "catalog/offer_query.h"
#include "serve/plan.h"
#include "workload/model_io.h"

namespace fulcrum::serve {
namespace {

const std::string kCatalogDir = std::string(FULCRUM_SOURCE_DIR) + "/catalog";
constexpr int kRequests = 10000;
constexpr uint64_t kSeeds = 8;  // runs pooled for the P90 at the plan

struct SimLatency {
  std::vector<double> ttft, tpot;
  double Ttft(double q) const { return At(ttft, q); }
  double Tpot(double q) const { return At(tpot, q); }
  static double At(std::vector<double> v, double q) {
    if (v.empty()) return 0;
    const size_t i = std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())));
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(i), v.end());
    return v[i];
  }
};

struct SimRequest {
  double arrival = 0, first_token = 0;
  int64_t output = 1, prefill_left = 0, generated = 0;
};

struct SimConfig {
  double rate = 1;
  bool constant_arrivals = false;
  int64_t input = 512;
  double output_mean = 128, output_scv = 0;  // log-normal output lengths when scv > 0
  int64_t concurrency = 1, budget = 8192, kv_tokens = 1 << 30;
  uint64_t seed = 1;
};

// Arrival times and output lengths, from the seed (own transforms of mt19937_64's integers, so
// the run does not depend on the standard library's distributions).
std::vector<SimRequest> Workload(const SimConfig& c) {
  std::mt19937_64 rng(c.seed);
  auto uniform = [&] { return (static_cast<double>(rng() >> 11) + 0.5) / 9007199254740992.0; };
  const double sigma2 = std::log(1 + c.output_scv);
  const double mu = std::log(c.output_mean) - sigma2 / 2;
  std::vector<SimRequest> out(kRequests);
  double t = 0;
  for (SimRequest& r : out) {
    t += c.constant_arrivals ? 1 / c.rate : -std::log(uniform()) / c.rate;
    r.arrival = t;
    r.prefill_left = c.input;
    if (c.output_scv > 0) {
      const double normal =
          std::sqrt(-2 * std::log(uniform())) * std::cos(2 * 3.14159265358979 * uniform());
      r.output = std::max<int64_t>(1, std::llround(std::exp(mu + std::sqrt(sigma2) * normal)));
    } else {
      r.output = static_cast<int64_t>(c.output_mean);
    }
  }
  return out;
}

SimLatency Simulate(const StepModel& step, const workload::Model& model, const SimConfig& c) {
  std::vector<SimRequest> reqs = Workload(c);
  const double prompt_context = static_cast<double>(CachedTokens(model, c.input));
  std::deque<size_t> queue;
  std::vector<size_t> running;
  size_t next = 0;
  int64_t kv_used = 0;
  double t = 0;
  SimLatency out;
  const size_t warmup = kRequests / 10;
  size_t done = 0;
  while (done < reqs.size()) {
    if (running.empty() && queue.empty()) t = std::max(t, reqs[next].arrival);
    while (next < reqs.size() && reqs[next].arrival <= t) queue.push_back(next++);
    while (!queue.empty() && static_cast<int64_t>(running.size()) < c.concurrency &&
           kv_used + c.input + reqs[queue.front()].output <= c.kv_tokens) {
      kv_used += c.input + reqs[queue.front()].output;
      running.push_back(queue.front());
      queue.pop_front();
    }
    // The step: every decoding sequence one token; prompt chunks fill the rest of the budget.
    double decodes = 0, context = 0, prefill = 0;
    std::vector<int64_t> chunk(running.size(), 0);
    for (size_t i = 0; i < running.size(); ++i) {
      const SimRequest& r = reqs[running[i]];
      if (r.prefill_left == 0) {
        decodes += 1;
        context += static_cast<double>(CachedTokens(model, c.input + r.generated));
      }
    }
    double budget = static_cast<double>(c.budget) - decodes;
    for (size_t i = 0; i < running.size() && budget >= 1; ++i) {
      const SimRequest& r = reqs[running[i]];
      if (r.prefill_left == 0) continue;
      chunk[i] = std::min<int64_t>(r.prefill_left, static_cast<int64_t>(budget));
      budget -= static_cast<double>(chunk[i]);
      prefill += static_cast<double>(chunk[i]);
    }
    t += step.Seconds(decodes, decodes > 0 ? context / decodes : 0, prefill, prompt_context);
    std::vector<size_t> still;
    for (size_t i = 0; i < running.size(); ++i) {
      SimRequest& r = reqs[running[i]];
      if (r.prefill_left == 0) {
        ++r.generated;
      } else if (chunk[i] > 0) {
        r.prefill_left -= chunk[i];
        if (r.prefill_left == 0) {
          r.first_token = t;
          r.generated = 1;
        }
      }
      if (r.prefill_left == 0 && r.generated >= r.output) {
        kv_used -= c.input + r.output;
        ++done;
        if (running[i] >= warmup) {
          out.ttft.push_back(r.first_token - r.arrival);
          if (r.output > 1)
            out.tpot.push_back((t - r.first_token) / static_cast<double>(r.output - 1));
        }
      } else {
        still.push_back(running[i]);
      }
    }
    running.swap(still);
  }
  return out;
}

struct Mix {
  std::string name;
  std::string model = "llama-3-8b";
  int64_t input = 512, output = 256;
  double output_scv = 0;
  double requests_per_second = 10;
  bool constant_arrivals = false;
  double ttft_p90 = 1, tpot_p90 = 0.05;
  // > 0: the TPOT target is this multiple of the engine's own unloaded time per token (one
  // sequence decoding at the mix's mean context on the GPU), so the mix asks the same of any
  // engine's constants; tpot_p90 is then unused.
  double tpot_over_batch1 = 0;
};

class QueueingTest : public ::testing::TestWithParam<std::tuple<Mix, Engine>> {
 protected:
  void SetUp() override {
    catalog::LoadOptions load;
    load.include_user_offers = false;
    Result<catalog::Catalog> c = catalog::Catalog::Load(kCatalogDir, load);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    catalog_ = std::make_unique<catalog::Catalog>(std::move(*c));
  }
  std::unique_ptr<catalog::Catalog> catalog_;
};

// Whether the simulated replica meets the mix's P90 targets.
bool Meets(const SimLatency& s, const Mix& m) {
  return s.Ttft(0.9) <= m.ttft_p90 && s.Tpot(0.9) <= m.tpot_p90;
}

TEST_P(QueueingTest, PlanAgreesWithTheSimulationOnReplicasAndP90Ttft) {
  Mix mix = std::get<0>(GetParam());
  const Engine engine = std::get<1>(GetParam());
  Result<workload::Model> model = workload::LoadModelPreset(kCatalogDir, mix.model);
  ASSERT_TRUE(model.ok());
  constexpr const char* kGpu = "H100-SXM";
  if (mix.tpot_over_batch1 > 0) {
    Result<const catalog::Gpu*> gpu = catalog_->ResolveGpu(kGpu);
    ASSERT_TRUE(gpu.ok());
    ServeRequest one;
    one.engine.engine = engine;
    one.model = *model;
    one.gpu = **gpu;
    Result<StepModel> unloaded = StepModel::Make(one);
    ASSERT_TRUE(unloaded.ok());
    const double context = static_cast<double>(CachedTokens(*model, mix.input + mix.output / 2));
    mix.tpot_p90 = mix.tpot_over_batch1 * unloaded->Seconds(1, context, 0, 0);
  }
  ServePlanRequest r;
  r.model = *model;
  r.input_len = mix.input;
  r.output_len = mix.output;
  r.output_scv = mix.output_scv;
  r.arrival_scv = mix.constant_arrivals ? 0 : 1;
  r.requests_per_second = mix.requests_per_second;
  r.targets.ttft_p90_seconds = mix.ttft_p90;
  r.targets.tpot_p90_seconds = mix.tpot_p90;
  r.band = ServeLatencyBand{};  // the model's own percentiles: the simulation has no error band
  r.tp = {1};
  r.engine.engine = engine;  // its fitted constants: the step model's and the simulation's
  catalog::OfferFilter filter;
  filter.gpus = {kGpu};
  filter.pricing = {catalog::Pricing::kOnDemand};
  Result<catalog::ResolvedFilter> offers = catalog::ResolveOfferFilter(*catalog_, filter);
  ASSERT_TRUE(offers.ok());
  Result<std::vector<ServeCandidate>> plan = PlanServing(*catalog_, *offers, r);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  const ServeCandidate& c = plan->front();

  ServeRequest layout;
  layout.engine = r.engine;
  layout.model = *model;
  layout.gpu = *c.gpu;
  layout.interconnect = c.offer->interconnect;
  layout.input_len = mix.input;
  layout.output_len = mix.output;
  Result<StepModel> step = StepModel::Make(layout);
  ASSERT_TRUE(step.ok());
  SimConfig sim;
  sim.constant_arrivals = mix.constant_arrivals;
  sim.input = mix.input;
  sim.output_mean = static_cast<double>(mix.output);
  sim.output_scv = mix.output_scv;
  sim.concurrency = c.concurrency;
  sim.budget = layout.max_batched_tokens;
  sim.kv_tokens = c.estimate.memory.kv_cache_capacity_tokens;
  const uint64_t seed = 20260 + static_cast<uint64_t>(mix.requests_per_second);
  auto run = [&](int64_t replicas, uint64_t run_seed) {
    sim.rate = mix.requests_per_second / static_cast<double>(replicas);
    sim.seed = run_seed;
    return Simulate(*step, *model, sim);
  };

  // P90 TTFT at the planned replicas, over kSeeds runs of 10^4 requests pooled: near saturation
  // (chat under vLLM at utilization 0.93) a run now and then meets a congestion episode (every
  // slot busy for seconds: slots free only as the requests that filled them finish), which
  // moves one run's P90 up to 5x (3 runs of 40: 0.10, 0.16, 0.37 s against ~0.07 s), so one
  // run measures the episode, not the model.
  SimLatency at_plan;
  for (uint64_t k = 0; k < kSeeds; ++k) {
    const SimLatency one = run(c.replicas, seed + 1000 * k);
    at_plan.ttft.insert(at_plan.ttft.end(), one.ttft.begin(), one.ttft.end());
    at_plan.tpot.insert(at_plan.tpot.end(), one.tpot.begin(), one.tpot.end());
  }
  // Issue 26: within 10 % of the simulation's, every mix and engine (docs/SERVING.md's table).
  EXPECT_NEAR(c.ttft_p90_seconds, at_plan.Ttft(0.9), 0.10 * at_plan.Ttft(0.9))
      << mix.name << ": replicas " << c.replicas << ", concurrency " << c.concurrency
      << ", simulated TPOT p90 " << at_plan.Tpot(0.9) << " vs planned " << c.tpot_p90_seconds;
  // The fewest replicas whose simulation meets the targets.
  int64_t simulated = std::max<int64_t>(1, c.replicas - c.replicas / 5 - 1);
  while (!Meets(run(simulated, seed), mix) && simulated < 2 * c.replicas + 2) ++simulated;
  // The figures docs/SERVING.md quotes.
  std::cout << "mix " << mix.name << " " << EngineName(engine) << ": replicas plan " << c.replicas
            << " simulation " << simulated << "; P90 TTFT plan " << c.ttft_p90_seconds
            << " s simulation " << at_plan.Ttft(0.9) << " s; P90 TPOT plan " << c.tpot_p90_seconds
            << " s simulation " << at_plan.Tpot(0.9) << " s (target " << mix.tpot_p90
            << " s); concurrency " << c.concurrency << ", utilization " << c.utilization << "\n";
  EXPECT_LE(std::abs(static_cast<double>(simulated - c.replicas)),
            0.1 * static_cast<double>(simulated))
      << mix.name << ": planned " << c.replicas << " replicas, the simulation needs " << simulated;
}

INSTANTIATE_TEST_SUITE_P(
    FiveMixes, QueueingTest,
    ::testing::Combine(
        ::testing::Values(
            // Chat: short prompts and answers, interactive targets.
            Mix{"chat", "llama-3-8b", 512, 256, 0, 200, false, 0.5, 0.03},
            // Long-prompt RAG: 4k-token prompts, short answers.
            Mix{"rag", "llama-3-8b", 4096, 256, 0, 40, false, 0.4, 0.04},
            // Long outputs: short prompts, 2k-token answers.
            Mix{"long_output", "llama-3-8b", 256, 2048, 0, 12, false, 1, 0.02},
            // Batch-1 latency: a time per token that only a few sequences per replica meet.
            Mix{"batch1_latency", "llama-3-8b", 256, 256, 0, 30, false, 0.05, 0, 1.15},
            // Bursty: Poisson arrivals with heavy-tailed answers (log-normal, mean 256, P90 ~600).
            Mix{"bursty", "llama-3-8b", 512, 256, 0.9, 150, false, 0.5, 0.03}),
        // vLLM: serve-plan's default engine; TensorRT-LLM: the reference tables'.
        ::testing::Values(Engine::kVllm, Engine::kTrtllm)),
    [](const ::testing::TestParamInfo<std::tuple<Mix, Engine>>& info) {
      return std::get<0>(info.param).name + "_" + std::string(EngineName(std::get<1>(info.param)));
    });

}  // namespace
}  // namespace fulcrum::serve

namespace fulcrum::serve {
namespace {

// llama-3-8b in bf16 at tp 1 on an H100 and an L4, each with a chat mix (512 / 256 tokens,
// Poisson) and a long-prompt one (4096 / 64, constant arrivals, spread outputs): the cases the
// TTFT search tests sweep.
struct SweptLayout {
  const char* gpu;
  StepModel step;
  RequestMix mix;
};

void SweptLayouts(workload::Model& model, std::vector<SweptLayout>& out) {
  catalog::LoadOptions load;
  load.include_user_offers = false;
  Result<catalog::Catalog> cat = catalog::Catalog::Load(kCatalogDir, load);
  ASSERT_TRUE(cat.ok());
  Result<workload::Model> m = workload::LoadModelPreset(kCatalogDir, "llama-3-8b");
  ASSERT_TRUE(m.ok());
  model = *m;
  for (const char* gpu : {"H100-SXM", "L4"}) {
    Result<const catalog::Gpu*> g = cat->ResolveGpu(gpu);
    ASSERT_TRUE(g.ok());
    ServeRequest layout;
    layout.model = model;
    layout.gpu = **g;
    Result<StepModel> step = StepModel::Make(layout);
    ASSERT_TRUE(step.ok());
    for (const RequestMix& mix : {RequestMix{512, 256, 1, 0}, RequestMix{4096, 64, 0, 0.8}}) {
      out.push_back({gpu, *step, mix});
    }
  }
}

// TtftQuantiles' default search (bounds, reused sums and first-token distributions) against the
// straightforward one, level for level and bit for bit: loads from idle to saturation, caps from
// 1 to 256, the same state asked twice (the reuse) and then another.
TEST(ReplicaQueueTest, FastTtftSearchEqualsTheStraightforwardOneExactly) {
  workload::Model model;
  std::vector<SweptLayout> layouts;
  SweptLayouts(model, layouts);
  ASSERT_EQ(layouts.size(), 4u);
  for (const SweptLayout& swept : layouts) {
    const char* gpu = swept.gpu;
    const StepModel& step = swept.step;
    const RequestMix& mix = swept.mix;
    ReplicaQueue fast(step, model, mix, 256, 8192);
    ReplicaQueue reference(step, model, mix, 256, 8192);
    reference.UseStraightforwardSearch(true);
    // The fast search takes the highest level first and starts each from the sums of the
    // others: the levels asked in another order, or alone, give the same answers.
    const std::vector<std::vector<double>> level_sets = {
        {0.5, 0.9, 0.95, 0.99}, {0.99, 0.5}, {0.9}, {0.95, 0.95, 0.75}};
    int compared = 0;
    for (int64_t cap : {1, 8, 64, 256}) {
      const double capacity = fast.Solve(0, cap).capacity_requests_per_second;
      for (double load_share : {0.0, 0.3, 0.8, 0.97}) {
        const double rate = load_share * capacity;
        const QueueState state = fast.Solve(rate, cap);
        for (const std::vector<double>& levels : level_sets) {
          for (int again = 0; again < 2; ++again) {
            const std::vector<double> a = fast.TtftQuantiles(state, rate, levels);
            const std::vector<double> b = reference.TtftQuantiles(state, rate, levels);
            ASSERT_EQ(a.size(), b.size());
            for (size_t i = 0; i < a.size(); ++i) {
              EXPECT_EQ(a[i], b[i])
                  << gpu << " cap " << cap << " load " << load_share << " P" << levels[i] * 100;
              ++compared;
            }
          }
        }
      }
    }
    EXPECT_EQ(compared, 4 * 4 * 2 * (4 + 2 + 1 + 3));
  }
}

// The premise of the default search: the tail's estimate is its sum but for rounding, far
// within the 1e-9 margin by which an estimate decides a bisection step (a step the estimate
// decides is then decided as the sum decides it). Over the swept layouts, loads from idle to
// saturation, caps from 1 to 256, and times across each state's distribution: around its
// quantiles from P5 to P99.9 (where the search's steps are decided) and on a grid to twice
// the P99.9.
TEST(ReplicaQueueTest, TailEstimateIsTheSumButForRounding) {
  workload::Model model;
  std::vector<SweptLayout> layouts;
  SweptLayouts(model, layouts);
  ASSERT_EQ(layouts.size(), 4u);
  const std::vector<double> levels = {0.05, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 0.999};
  double worst = 0;
  int compared = 0;
  for (const SweptLayout& swept : layouts) {
    ReplicaQueue q(swept.step, model, swept.mix, 256, 8192);
    for (int64_t cap : {1, 8, 64, 256}) {
      const double capacity = q.Solve(0, cap).capacity_requests_per_second;
      for (double load_share : {0.0, 0.3, 0.8, 0.97}) {
        const double rate = load_share * capacity;
        const QueueState state = q.Solve(rate, cap);
        const std::vector<double> quantiles = q.TtftQuantiles(state, rate, levels);
        std::vector<double> times;
        for (double quantile : quantiles) {
          for (int k = -3; k <= 3; ++k) times.push_back(quantile * (1 + 1e-3 * k));
        }
        for (int k = 0; k <= 40; ++k) times.push_back(quantiles.back() * k / 20.0);
        for (double t : times) {
          const auto [sum, estimate] = q.TtftTailAndEstimate(state, rate, t);
          EXPECT_NEAR(estimate, sum, 1e-12)
              << swept.gpu << " cap " << cap << " load " << load_share << " t " << t;
          worst = std::max(worst, std::abs(estimate - sum));
          ++compared;
        }
      }
    }
  }
  std::cout << "largest |estimate - sum| over " << compared << " times: " << worst << "\n";
  EXPECT_EQ(compared, 4 * 4 * 4 * (8 * 7 + 41));
}

// The default search sums the tail only where the estimate is within the margin of a level's
// threshold: next to no sums (the search it replaced took about two a level, one each side of
// the bisection's final bracket, docs/BENCH.md), over loads, caps and level sets as above.
TEST(ReplicaQueueTest, FastTtftSearchSumsOnlyWhereTheEstimateIsWithinTheMargin) {
  workload::Model model;
  std::vector<SweptLayout> layouts;
  SweptLayouts(model, layouts);
  ASSERT_EQ(layouts.size(), 4u);
  for (const SweptLayout& swept : layouts) {
    const char* gpu = swept.gpu;
    const StepModel& step = swept.step;
    const RequestMix& mix = swept.mix;
    int64_t levels = 0;
    ReplicaQueue q(step, model, mix, 256, 8192);
    for (int64_t cap : {8, 64, 256}) {
      const double capacity = q.Solve(0, cap).capacity_requests_per_second;
      for (double load_share : {0.3, 0.8, 0.95}) {
        const double rate = load_share * capacity;
        for (const std::vector<double>& asked :
             std::vector<std::vector<double>>{{0.5, 0.9, 0.95, 0.99}, {0.9}}) {
          q.TtftQuantiles(q.Solve(rate, cap), rate, asked);
          levels += static_cast<int64_t>(asked.size());
        }
      }
    }
    std::cout << gpu << " mix " << mix.input_len << "/" << mix.output_len << ": " << q.ttft_sums()
              << " sums for " << levels << " levels\n";
    EXPECT_LE(q.ttft_sums(), levels / 10) << gpu << " " << mix.input_len;
  }
}

// Solve into a reused state (the planner's search keeps one per choice) gives what a fresh
// Solve gives: nothing of the previous, larger or loaded, state is left over.
TEST(ReplicaQueueTest, SolveIntoAReusedStateEqualsAFreshOne) {
  Result<workload::Model> model = workload::LoadModelPreset(kCatalogDir, "llama-3-8b");
  ASSERT_TRUE(model.ok());
  catalog::LoadOptions load;
  load.include_user_offers = false;
  Result<catalog::Catalog> cat = catalog::Catalog::Load(kCatalogDir, load);
  ASSERT_TRUE(cat.ok());
  Result<const catalog::Gpu*> g = cat->ResolveGpu("L4");
  ASSERT_TRUE(g.ok());
  ServeRequest layout;
  layout.model = *model;
  layout.gpu = **g;
  Result<StepModel> step = StepModel::Make(layout);
  ASSERT_TRUE(step.ok());
  ReplicaQueue q(*step, *model, RequestMix{512, 256, 1, 0.5}, 128, 8192);
  const double capacity = q.Solve(0, 128).capacity_requests_per_second;
  QueueState reused;
  const std::vector<std::pair<double, int64_t>> asks = {
      {0.9 * capacity, 128}, {0, 8}, {0.5 * capacity, 64}, {2 * capacity, 128}, {0.1, 1}};
  for (const auto& [rate, cap] : asks) {
    q.Solve(rate, cap, reused);
    const QueueState fresh = q.Solve(rate, cap);
    EXPECT_EQ(reused.stable, fresh.stable) << rate << " " << cap;
    EXPECT_EQ(reused.utilization, fresh.utilization) << rate << " " << cap;
    EXPECT_EQ(reused.capacity_requests_per_second, fresh.capacity_requests_per_second);
    EXPECT_EQ(reused.wait_probability, fresh.wait_probability) << rate << " " << cap;
    EXPECT_EQ(reused.mean_conditional_wait, fresh.mean_conditional_wait) << rate << " " << cap;
    EXPECT_EQ(reused.pi, fresh.pi) << rate << " " << cap;
  }
}

}  // namespace
}  // namespace fulcrum::serve
