#include "spot/simulator.h"

#include <gtest/gtest.h>

#include <cmath>

namespace fulcrum::spot {
namespace {

constexpr double kMinute = 60;
constexpr double kHour = 3600;

// The Can't Be Late example (calibration README): 48 h job, p3.2xlarge $3.06 / $0.9731, d = 0.2 h.
JobParams PaperJob() {
  JobParams job;
  job.work_seconds = 48 * kHour;
  job.deadline_seconds = 52 * kHour;
  job.changeover_seconds = 12 * kMinute;
  job.checkpoint_interval_seconds = 40 * kMinute;
  job.checkpoint_cost_seconds = 2 * kMinute;
  job.notice = {120, 5, 10};
  job.on_demand_usd_per_hour = 3.06;
  job.spot_usd_per_hour = 0.9731;
  job.billing_granularity_seconds = 1;
  job.minimum_billed_seconds = 60;
  return job;
}

PreemptionModel Exp(double mtti, double outage = 0) {
  auto model = PreemptionModel::Exponential(mtti, outage);
  EXPECT_TRUE(model.ok());
  return *model;
}

SimulationOptions Trials(int n, uint64_t seed = 1, int threads = 1) {
  SimulationOptions o;
  o.trials = n;
  o.seed = seed;
  o.threads = threads;
  return o;
}

TEST(BillingTest, RoundsUpToGranularityAndMinimum) {
  EXPECT_DOUBLE_EQ(BilledSeconds(1000.5, 60, 0), 1020);
  EXPECT_DOUBLE_EQ(BilledSeconds(30, 1, 60), 60);
  EXPECT_DOUBLE_EQ(BilledSeconds(3600.0000000001, 3600, 0), 3600);
  EXPECT_DOUBLE_EQ(BilledSeconds(3601, 3600, 0), 7200);
}

TEST(SimulatorTest, OnDemandCostIsWorkTimesPrice) {
  JobParams job = PaperJob();
  auto s = Simulate(job, Exp(6 * kHour), Policy::kOnDemand, Trials(50));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_NEAR(s->mean_cost_usd, 48 * 3.06, 1e-9);
  EXPECT_NEAR(s->p90_cost_usd, 48 * 3.06, 1e-9);
  EXPECT_NEAR(s->mean_hours, 48, 1e-9);
  EXPECT_DOUBLE_EQ(s->deadline_met_fraction, 1);
  EXPECT_DOUBLE_EQ(s->spot_hours, 0);
  EXPECT_DOUBLE_EQ(s->preemptions_mean, 0);
}

TEST(SimulatorTest, OnDemandCostUsesBillingRounding) {
  JobParams job = PaperJob();
  job.work_seconds = 1000.5;
  job.billing_granularity_seconds = 60;
  auto s = Simulate(job, Exp(6 * kHour), Policy::kOnDemand, Trials(3));
  ASSERT_TRUE(s.ok());
  EXPECT_NEAR(s->mean_cost_usd, 1020.0 / 3600 * 3.06, 1e-12);
  job.work_seconds = 100;
  job.minimum_billed_seconds = 3600;
  s = Simulate(job, Exp(6 * kHour), Policy::kOnDemand, Trials(3));
  ASSERT_TRUE(s.ok());
  EXPECT_NEAR(s->mean_cost_usd, 3.06, 1e-12);
}

TEST(SimulatorTest, SameSeedSameNumbersWhateverTheThreads) {
  JobParams job = PaperJob();
  PreemptionModel model = Exp(6 * kHour, 30 * kMinute);
  for (Policy p : {Policy::kGreedy, Policy::kUniformProgress}) {
    auto a = Simulate(job, model, p, Trials(3000, 9, 1));
    auto b = Simulate(job, model, p, Trials(3000, 9, 2));
    auto c = Simulate(job, model, p, Trials(3000, 9, 3));
    auto d = Simulate(job, model, p, Trials(3000, 10, 1));
    ASSERT_TRUE(a.ok() && b.ok() && c.ok() && d.ok());
    for (const auto* other : {&*b, &*c}) {
      EXPECT_EQ(a->mean_cost_usd, other->mean_cost_usd);
      EXPECT_EQ(a->p90_cost_usd, other->p90_cost_usd);
      EXPECT_EQ(a->p90_hours, other->p90_hours);
      EXPECT_EQ(a->preemptions_mean, other->preemptions_mean);
    }
    EXPECT_NE(a->mean_cost_usd, d->mean_cost_usd) << "another seed must give other draws";
  }
}

// Deadline safety: for many random jobs with D >= W, greedy and Uniform Progress meet the
// deadline in every trial, under exponential and trace preemptions.
TEST(SimulatorTest, SafetyNetMeetsEveryFeasibleDeadline) {
  SplitMix64 rng(2024);
  for (int config = 0; config < 60; ++config) {
    JobParams job = PaperJob();
    job.work_seconds = (1 + 60 * rng.Uniform()) * kHour;
    job.deadline_seconds = job.work_seconds * (1 + 0.5 * rng.Uniform());
    job.changeover_seconds = 30 * kMinute * rng.Uniform();
    job.restart_seconds = 10 * kMinute * rng.Uniform();
    job.checkpoint_cost_seconds = 10 * kMinute * rng.Uniform();
    job.checkpoint_interval_seconds = (5 + 120 * rng.Uniform()) * kMinute;
    job.notice.notice_seconds = config % 3 == 0 ? 1800 : 120;
    PreemptionModel model = config % 2 == 0
                                ? Exp((0.2 + 8 * rng.Uniform()) * kHour, 2 * kHour * rng.Uniform())
                                : PreemptionModel::FromTrace(Trace{
                                      600, {1, 1, 0, 1, 0, 0, 0, 2, 3, 1, 0, 1, 1, 1, 0, 0}, "t"});
    for (Policy p : {Policy::kGreedy, Policy::kUniformProgress}) {
      auto s = Simulate(job, model, p, Trials(400, config));
      ASSERT_TRUE(s.ok()) << s.status().ToString();
      EXPECT_DOUBLE_EQ(s->deadline_met_fraction, 1)
          << PolicyName(p) << " config " << config << " W=" << job.work_seconds / kHour
          << " D=" << job.deadline_seconds / kHour;
    }
  }
}

// Spot-only never buys on-demand, whatever the deadline: it waits through outages (and misses
// a tight deadline that greedy's safety net meets).
TEST(SimulatorTest, SpotOnlyNeverSwitchesToOnDemand) {
  JobParams job = PaperJob();
  const PreemptionModel model = Exp(3 * kHour, 3 * kHour);
  auto only = Simulate(job, model, Policy::kSpotOnly, Trials(200));
  auto greedy = Simulate(job, model, Policy::kGreedy, Trials(200));
  ASSERT_TRUE(only.ok()) << only.status().ToString();
  ASSERT_TRUE(greedy.ok());
  EXPECT_DOUBLE_EQ(only->on_demand_hours, 0);
  EXPECT_GT(greedy->on_demand_hours, 0);
  EXPECT_LT(only->deadline_met_fraction, greedy->deadline_met_fraction);
  EXPECT_GT(only->mean_hours, greedy->mean_hours);
  // The deadline does not change what spot-only does.
  JobParams later = job;
  later.deadline_seconds = 500 * kHour;
  auto only_later = Simulate(later, model, Policy::kSpotOnly, Trials(200));
  ASSERT_TRUE(only_later.ok());
  EXPECT_DOUBLE_EQ(only_later->mean_hours, only->mean_hours);
  EXPECT_EQ(PolicyName(Policy::kSpotOnly), "spot-only");
  EXPECT_EQ(*ParsePolicy("spot-only"), Policy::kSpotOnly);
}

TEST(SimulatorTest, TightDeadlinesAtTheEdgesAreMet) {
  // D = W, W + d, W + 2d (the safety net's threshold) and just around it.
  JobParams job = PaperJob();
  const double d = job.changeover_seconds;
  for (double slack : {0.0, d, 2 * d - 1, 2 * d, 2 * d + 1, 3 * d, 2 * d + 150}) {
    job.deadline_seconds = job.work_seconds + slack;
    for (const PreemptionModel& model :
         {Exp(1 * kHour), Exp(2 * kHour, 1 * kHour),
          PreemptionModel::FromTrace(Trace{300, {1, 0, 1, 1, 0, 0, 1}, "t"})}) {
      for (Policy p : {Policy::kGreedy, Policy::kUniformProgress}) {
        auto s = Simulate(job, model, p, Trials(500, 11));
        ASSERT_TRUE(s.ok());
        EXPECT_DOUBLE_EQ(s->deadline_met_fraction, 1) << PolicyName(p) << " slack " << slack;
      }
    }
  }
}

TEST(SimulatorTest, InfeasibleDeadlineIsReportedMissed) {
  JobParams job = PaperJob();
  job.deadline_seconds = 40 * kHour;
  for (Policy p : {Policy::kOnDemand, Policy::kGreedy, Policy::kUniformProgress}) {
    auto s = Simulate(job, Exp(6 * kHour), p, Trials(20));
    ASSERT_TRUE(s.ok());
    EXPECT_DOUBLE_EQ(s->deadline_met_fraction, 0) << PolicyName(p);
    EXPECT_NEAR(s->mean_hours, 48, 1e-9) << PolicyName(p);  // on-demand from the start
  }
}

TEST(SimulatorTest, NoCapacityTraceFallsBackAtTheSafetyNet) {
  // Greedy waits until R = C + 2d, then launches on-demand (paying d): it finishes at D - d.
  JobParams job = PaperJob();
  PreemptionModel none = PreemptionModel::FromTrace(Trace{600, {0, 0, 0}, "t"});
  auto s = Simulate(job, none, Policy::kGreedy, Trials(10));
  ASSERT_TRUE(s.ok());
  EXPECT_NEAR(s->mean_hours, 52 - 0.2, 1e-6);
  EXPECT_NEAR(s->on_demand_hours, 48 + 0.2, 1e-6);
  EXPECT_NEAR(s->mean_cost_usd, 48.2 * 3.06, 1e-6);
  // Uniform Progress is behind at once and takes on-demand at t = 0.
  auto up = Simulate(job, none, Policy::kUniformProgress, Trials(10));
  ASSERT_TRUE(up.ok());
  EXPECT_NEAR(up->mean_hours, 48, 1e-6);
}

TEST(SimulatorTest, AlwaysAvailableSpotCostsWorkTimesSpotPrice) {
  JobParams job = PaperJob();
  job.checkpoint_interval_seconds = kNever;
  job.checkpoint_cost_seconds = 60;  // fits in the notice: spot progress counts as safe
  PreemptionModel always = PreemptionModel::FromTrace(Trace{600, {4, 4}, "t"});
  auto s = Simulate(job, always, Policy::kGreedy, Trials(10));
  ASSERT_TRUE(s.ok());
  EXPECT_NEAR(s->mean_cost_usd, 48 * 0.9731, 1e-9);
  EXPECT_DOUBLE_EQ(s->preemptions_mean, 0);
}

// Expected wall time of a segment of s seconds of work under Poisson failures of rate lambda,
// with a restart phase of r seconds (itself interruptible) after each failure:
// E = e^(lambda r) (e^(lambda s) - 1) / lambda. Derived here: E = p s + (1 - p)(E[x | x < s] +
// restart phase + E) with p = e^(-lambda s), and a restart phase of mean (e^(lambda r) - 1) /
// lambda; the same result underlies Daly (2006).
double SegmentSeconds(double s, double r, double lambda) {
  return std::exp(lambda * r) * std::expm1(lambda * s) / lambda;
}

TEST(ClosedFormTest, ExpectedTimeMatchesRenewalFormula) {
  JobParams job = PaperJob();
  job.deadline_seconds = kNever;  // no deadline pressure: greedy stays on spot
  job.checkpoint_interval_seconds = 1 * kHour;
  job.checkpoint_cost_seconds = 5 * kMinute;
  const double mtti = 6 * kHour, lambda = 1 / mtti;
  std::vector<TrialResult> trials;
  auto s = Simulate(job, Exp(mtti), Policy::kGreedy, Trials(20000, 3, 2), &trials);
  ASSERT_TRUE(s.ok());
  const double tau = job.checkpoint_interval_seconds, delta = job.checkpoint_cost_seconds;
  const double d = job.changeover_seconds;
  const double expected =
      47 * SegmentSeconds(tau + delta, d, lambda) + SegmentSeconds(tau, d, lambda);
  double sum_sq = 0;
  for (const auto& t : trials) sum_sq += std::pow(t.finish_seconds - s->mean_hours * kHour, 2);
  const double standard_error = std::sqrt(sum_sq / (trials.size() - 1) / trials.size());
  EXPECT_NEAR(s->mean_hours * kHour, expected, 4 * standard_error)
      << "simulated " << s->mean_hours << " h, formula " << expected / kHour << " h";
}

TEST(ClosedFormTest, OverheadFractionMatchesFirstOrderFormula) {
  // At Daly's interval for M = 24 h the first-order overhead delta/tau + (tau/2 + R)/M is 6 %
  // below the exact renewal value (0.0917 vs 0.0973): allow 10 %.
  JobParams job = PaperJob();
  job.deadline_seconds = kNever;
  job.checkpoint_cost_seconds = 5 * kMinute;
  const double mtti = 24 * kHour;
  job.checkpoint_interval_seconds = DalyIntervalSeconds(job.checkpoint_cost_seconds, mtti);
  auto s = Simulate(job, Exp(mtti), Policy::kGreedy, Trials(20000, 4, 2));
  ASSERT_TRUE(s.ok());
  const double overhead = s->mean_hours * kHour / job.work_seconds - 1;
  const double first_order = OverheadFraction(
      job.checkpoint_interval_seconds, job.checkpoint_cost_seconds, job.changeover_seconds, mtti);
  EXPECT_NEAR(overhead, first_order, 0.1 * first_order)
      << "simulated " << overhead << ", first-order " << first_order;
}

// E[min(x, tau) | x < s] for x ~ Exp(lambda): the work lost by a preemption inside a segment of
// tau compute + delta checkpoint (s = tau + delta).
double LostPerPreemption(double tau, double s, double lambda) {
  const double below = (1 - std::exp(-lambda * tau) * (1 + lambda * tau)) / lambda;
  return (below + tau * (std::exp(-lambda * tau) - std::exp(-lambda * s))) /
         (1 - std::exp(-lambda * s));
}

TEST(ClosedFormTest, LostWorkPerPreemptionMatchesFormula) {
  JobParams job = PaperJob();
  job.deadline_seconds = kNever;
  job.changeover_seconds = 0;  // no restart phase: every failure falls inside a segment
  job.checkpoint_interval_seconds = 1 * kHour;
  job.checkpoint_cost_seconds = 5 * kMinute;
  const double mtti = 6 * kHour, lambda = 1 / mtti;
  auto s = Simulate(job, Exp(mtti), Policy::kGreedy, Trials(20000, 5, 2));
  ASSERT_TRUE(s.ok());
  const double tau = job.checkpoint_interval_seconds, seg = tau + job.checkpoint_cost_seconds;
  // 47 full segments (e^(lambda s) - 1 failures each on average) and a last one of tau alone.
  const double n_full = 47 * std::expm1(lambda * seg), n_last = std::expm1(lambda * tau);
  const double lost = (n_full * LostPerPreemption(tau, seg, lambda) +
                       n_last * LostPerPreemption(tau, tau, lambda)) /
                      (n_full + n_last);
  EXPECT_NEAR(s->preemptions_mean, n_full + n_last, 0.03 * (n_full + n_last));
  EXPECT_NEAR(s->lost_work_per_preemption_hours * kHour, lost, 0.02 * lost)
      << "formula " << lost / kMinute << " min";
  // First order (Young): about half an interval.
  EXPECT_NEAR(s->lost_work_per_preemption_hours * kHour, tau / 2, 0.15 * tau / 2);
}

TEST(ClosedFormTest, NoticeThatFitsACheckpointLosesOnlyTheTail) {
  JobParams job = PaperJob();
  job.deadline_seconds = kNever;
  job.checkpoint_interval_seconds = kNever;
  job.checkpoint_cost_seconds = 60;  // fits in 120 - 5 - 10 s
  auto s = Simulate(job, Exp(2 * kHour), Policy::kGreedy, Trials(2000));
  ASSERT_TRUE(s.ok());
  EXPECT_GT(s->preemptions_mean, 10);
  EXPECT_LE(s->lost_work_per_preemption_hours * kHour, 115 + 1e-6);
  EXPECT_GT(s->lost_work_per_preemption_hours * kHour, 100);
}

TEST(SimulatorTest, SkippingRoutineCyclesChangesNothing) {
  SplitMix64 rng(77);
  for (int config = 0; config < 30; ++config) {
    JobParams job = PaperJob();
    job.deadline_seconds = config % 3 == 0 ? kNever : job.work_seconds * (1 + 0.3 * rng.Uniform());
    job.checkpoint_interval_seconds = (5 + 90 * rng.Uniform()) * kMinute;
    job.checkpoint_cost_seconds = 10 * kMinute * rng.Uniform();
    PreemptionModel model = Exp((1 + 10 * rng.Uniform()) * kHour, kHour * rng.Uniform());
    for (Policy p : {Policy::kGreedy, Policy::kUniformProgress}) {
      job.skip_routine_cycles = true;
      auto fast = Simulate(job, model, p, Trials(300, config));
      job.skip_routine_cycles = false;
      auto slow = Simulate(job, model, p, Trials(300, config));
      ASSERT_TRUE(fast.ok() && slow.ok());
      EXPECT_NEAR(fast->mean_cost_usd, slow->mean_cost_usd, 1e-6 * slow->mean_cost_usd)
          << "config " << config;
      EXPECT_NEAR(fast->mean_hours, slow->mean_hours, 1e-6 * slow->mean_hours);
      EXPECT_EQ(fast->preemptions_mean, slow->preemptions_mean);
      EXPECT_EQ(fast->deadline_met_fraction, slow->deadline_met_fraction);
    }
  }
}

TEST(PolicyTest, UniformProgressUsesOnDemandWhenBehind) {
  // Long outages: Uniform Progress keeps pace with on-demand, greedy waits for spot.
  JobParams job = PaperJob();
  job.deadline_seconds = 60 * kHour;
  PreemptionModel model = Exp(3 * kHour, 3 * kHour);
  auto greedy = Simulate(job, model, Policy::kGreedy, Trials(2000, 1));
  auto up = Simulate(job, model, Policy::kUniformProgress, Trials(2000, 1));
  ASSERT_TRUE(greedy.ok() && up.ok());
  EXPECT_GT(up->on_demand_hours, 0);
  EXPECT_LT(up->mean_hours, greedy->mean_hours);
  EXPECT_DOUBLE_EQ(up->deadline_met_fraction, 1);
  EXPECT_DOUBLE_EQ(greedy->deadline_met_fraction, 1);
}

TEST(PolicyTest, ParsesNames) {
  EXPECT_EQ(*ParsePolicy("greedy"), Policy::kGreedy);
  EXPECT_EQ(*ParsePolicy("Uniform-Progress"), Policy::kUniformProgress);
  EXPECT_EQ(*ParsePolicy("on-demand"), Policy::kOnDemand);
  auto bad = ParsePolicy("cheap");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("'cheap'"), std::string::npos);
}

TEST(ValidateTest, NamesTheBadField) {
  JobParams job = PaperJob();
  job.changeover_seconds = -1;
  Status s = ValidateJob(job);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message().rfind("changeover:", 0), 0u) << s.message();
  job = PaperJob();
  job.checkpoint_interval_seconds = 0;
  EXPECT_FALSE(ValidateJob(job).ok());
}

}  // namespace
}  // namespace fulcrum::spot
