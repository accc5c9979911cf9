// End-to-end checks of `fulcrum spot` and `fulcrum spot interval` through the real binary.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "support/run_binary.h"

namespace fulcrum::testing {
namespace {

using nlohmann::json;

std::vector<std::string> PaperArgs(std::vector<std::string> extra) {
  std::vector<std::string> args = {
      "spot", "--work",       "48h",    "--deadline",   "52h", "--on-demand-price",
      "3.06", "--spot-price", "0.9731", "--changeover", "12m"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

std::string Fixture(const std::string& name) { return SourcePath("tests/fixtures/spot/" + name); }

TEST(SpotIntervalE2E, JsonMatchesDalyTestNumbers) {
  RunOutput r = RunFulcrum({"spot", "interval", "--checkpoint-cost", "5m", "--restart-cost", "10m",
                            "--mtbf", "24h", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json doc = json::parse(r.out);
  EXPECT_NEAR(doc["young_minutes"].get<double>(), 120, 1e-9);
  EXPECT_NEAR(doc["daly_minutes"].get<double>(), 117, 0.5);
  // First-order overhead at Daly's interval: 5/tau + (tau/2 + 10)/1440 (minutes).
  const double tau = doc["daly_minutes"].get<double>();
  EXPECT_NEAR(doc["overhead_fraction"].get<double>(), 5 / tau + (tau / 2 + 10) / 1440, 1e-12);
  for (auto [mtbf, daly] : {std::pair{"6h", 57.0}, {"15m", 9.1}}) {
    RunOutput o = RunFulcrum({"spot", "interval", "--checkpoint-cost", "5m", "--restart-cost",
                              "10m", "--mtbf", mtbf, "--json"});
    ASSERT_EQ(o.exit_code, 0) << o.err;
    EXPECT_NEAR(json::parse(o.out)["daly_minutes"].get<double>(), daly, 0.5) << mtbf;
  }
}

TEST(SpotIntervalE2E, TableAndErrors) {
  RunOutput r = RunFulcrum({"spot", "interval", "--checkpoint-cost", "5m", "--mtbf", "6h"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Daly (2006)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("60.0"), std::string::npos) << r.out;  // Young: sqrt(2 * 5 * 360)
  RunOutput missing = RunFulcrum({"spot", "interval", "--checkpoint-cost", "5m"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("--mtbf"), std::string::npos) << missing.err;
  RunOutput bad = RunFulcrum({"spot", "interval", "--checkpoint-cost", "soon", "--mtbf", "6h"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--checkpoint-cost"), std::string::npos) << bad.err;
}

TEST(SpotIntervalE2E, CheckpointCostFromModelAndStorage) {
  // 7 B x 14 bytes on gp3's 125 MiB/s baseline (catalog/storage.csv).
  RunOutput r = RunFulcrum(
      {"spot", "interval", "--params", "7B", "--storage", "ebs-gp3", "--mtbf", "24h", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NEAR(json::parse(r.out)["checkpoint_cost_minutes"].get<double>(),
              7e9 * 14 / (125.0 * 1024 * 1024) / 60, 1e-9);
  RunOutput measured = RunFulcrum({"spot", "interval", "--params", "7B", "--write-bandwidth", "1GB",
                                   "--mtbf", "24h", "--json"});
  ASSERT_EQ(measured.exit_code, 0) << measured.err;
  EXPECT_NEAR(json::parse(measured.out)["checkpoint_cost_minutes"].get<double>(), 98.0 / 60, 1e-9);
}

TEST(SpotE2E, DurationsBeyondTenYearsAreRefused) {
  // Issue 19: --work 10000000h ran for minutes (the simulation grows with the work).
  RunOutput r = RunFulcrum({"spot", "--work", "10000000h", "--deadline", "20000000h",
                            "--on-demand-price", "3", "--spot-price", "1", "--changeover", "10m"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--work"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("10 years"), std::string::npos) << r.err;
  // 10 years itself is accepted.
  EXPECT_EQ(RunFulcrum(PaperArgs({"--mtti", "6h", "--policy", "on-demand"})).exit_code, 0);
}

TEST(SpotE2E, OnDemandCostIsExact) {
  RunOutput r = RunFulcrum(PaperArgs({"--mtti", "6h", "--policy", "on-demand", "--json"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json p = json::parse(r.out)["policies"][0];
  EXPECT_EQ(p["policy"], "on-demand");
  EXPECT_NEAR(p["mean_cost_usd"].get<double>(), 48 * 3.06, 1e-9);
  EXPECT_NEAR(p["p90_cost_usd"].get<double>(), 48 * 3.06, 1e-9);
  EXPECT_DOUBLE_EQ(p["deadline_met_fraction"].get<double>(), 1);
}

TEST(SpotE2E, AllPoliciesMeetTheDeadlineAndRepeatExactly) {
  auto args = PaperArgs(
      {"--mtti", "6h", "--outage-mean", "1h", "--trials", "3000", "--seed", "7", "--json"});
  RunOutput a = RunFulcrum(args);
  ASSERT_EQ(a.exit_code, 0) << a.err;
  args.insert(args.end(), {"--threads", "1"});
  RunOutput b = RunFulcrum(args);
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_EQ(a.out, b.out) << "same seed, same numbers, whatever the threads";
  json doc = json::parse(a.out);
  ASSERT_EQ(doc["policies"].size(), 3u);
  for (const json& p : doc["policies"]) {
    for (const char* key :
         {"policy", "mean_cost_usd", "p50_cost_usd", "p90_cost_usd", "mean_hours", "p90_hours",
          "deadline_met_fraction", "spot_hours", "on_demand_hours", "preemptions_mean"}) {
      EXPECT_TRUE(p.contains(key)) << key;
    }
    EXPECT_DOUBLE_EQ(p["deadline_met_fraction"].get<double>(), 1) << p["policy"];
    EXPECT_LE(p["p90_hours"].get<double>(), 52 + 1e-6) << p["policy"];
    EXPECT_LE(p["mean_cost_usd"].get<double>(), 48 * 3.06 + 1) << p["policy"];
  }
  EXPECT_GT(doc["policies"][1]["spot_hours"].get<double>(), 0);
  EXPECT_TRUE(doc["checkpoint_interval_minutes"].is_number());
}

TEST(SpotE2E, TraceDrivenRun) {
  RunOutput r = RunFulcrum(
      PaperArgs({"--trace", Fixture("three_days_outages.json"), "--trials", "500", "--json"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json doc = json::parse(r.out);
  EXPECT_EQ(doc["preemption_model"]["kind"], "trace");
  for (const json& p : doc["policies"]) {
    EXPECT_DOUBLE_EQ(p["deadline_met_fraction"].get<double>(), 1) << p["policy"];
  }
  EXPECT_GT(doc["policies"][1]["preemptions_mean"].get<double>(), 0);
}

TEST(SpotE2E, AlwaysAvailableTraceCostsSpotPrice) {
  RunOutput r = RunFulcrum(
      PaperArgs({"--trace", Fixture("always_available.json"), "--policy", "greedy",
                 "--checkpoint-cost", "60s", "--json"}));  // fits the notice: no checkpoints
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json p = json::parse(r.out)["policies"][0];
  EXPECT_NEAR(p["mean_cost_usd"].get<double>(), 48 * 0.9731, 1e-9);
  EXPECT_DOUBLE_EQ(p["preemptions_mean"].get<double>(), 0);
}

TEST(SpotE2E, TraceErrorsAreInputErrors) {
  RunOutput count = RunFulcrum(PaperArgs({"--trace", Fixture("bad_count.json")}));
  EXPECT_EQ(count.exit_code, 2);
  EXPECT_NE(count.err.find("bad_count.json: data[3]: expected a non-negative integer count, "
                           "found number -2"),
            std::string::npos)
      << count.err;
  RunOutput gap = RunFulcrum(PaperArgs({"--trace", Fixture("bad_gap.json")}));
  EXPECT_EQ(gap.exit_code, 2);
  EXPECT_NE(gap.err.find("metadata.gap_seconds: expected a positive number of seconds, found "
                         "string \"ten minutes\""),
            std::string::npos)
      << gap.err;
  RunOutput syntax = RunFulcrum(PaperArgs({"--trace", Fixture("bad_syntax.json")}));
  EXPECT_EQ(syntax.exit_code, 2);
  EXPECT_NE(syntax.err.find("bad_syntax.json:3:2: not valid JSON"), std::string::npos)
      << syntax.err;
  RunOutput missing = RunFulcrum(PaperArgs({"--trace", Fixture("no_such.json")}));
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("no_such.json"), std::string::npos) << missing.err;
}

TEST(SpotE2E, UsageErrors) {
  RunOutput no_work = RunFulcrum({"spot", "--deadline", "52h"});
  EXPECT_EQ(no_work.exit_code, 2);
  EXPECT_NE(no_work.err.find("--work"), std::string::npos) << no_work.err;
  RunOutput both = RunFulcrum(PaperArgs({"--mtti", "6h", "--trace", Fixture("bad_gap.json")}));
  EXPECT_EQ(both.exit_code, 2);
  RunOutput policy = RunFulcrum(PaperArgs({"--policy", "cheapest"}));
  EXPECT_EQ(policy.exit_code, 2);
  EXPECT_NE(policy.err.find("'cheapest'"), std::string::npos) << policy.err;
}

TEST(SpotE2E, TableAndHelp) {
  RunOutput r = RunFulcrum(PaperArgs({"--mtti", "6h", "--trials", "200"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("uniform-progress"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("146.88"), std::string::npos) << r.out;
  RunOutput help = RunFulcrum({"spot", "--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("fulcrum spot --work 48h"), std::string::npos) << help.out;
  EXPECT_NE(help.out.find("--checkpoint-interval"), std::string::npos);
}

}  // namespace
}  // namespace fulcrum::testing

namespace fulcrum::testing {
namespace {

TEST(SpotE2E, DefaultBandComesFromTheCatalog) {
  RunOutput r = RunFulcrum(PaperArgs({"--policy", "greedy", "--trials", "200", "--json"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json model = nlohmann::json::parse(r.out)["preemption_model"];
  EXPECT_EQ(model["kind"], "exponential");
  // catalog/spot_bands.csv default: >20 %/month, 25 % assumed -> 730 h / -ln(0.75).
  EXPECT_NEAR(model["mtti_hours"].get<double>(), 730 / -std::log(0.75), 1e-6);
  RunOutput band = RunFulcrum(PaperArgs({"--band", "under-5", "--trials", "200", "--json"}));
  ASSERT_EQ(band.exit_code, 0) << band.err;
  EXPECT_NEAR(nlohmann::json::parse(band.out)["preemption_model"]["mtti_hours"].get<double>(),
              730 / -std::log(0.975), 1e-6);
  RunOutput unknown = RunFulcrum(PaperArgs({"--band", "rare"}));
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("over-20"), std::string::npos) << unknown.err;
}

}  // namespace
}  // namespace fulcrum::testing
