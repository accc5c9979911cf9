#include "supervise/plan_file.h"

#include <gtest/gtest.h>

#include <string>

namespace fulcrum::supervise {
namespace {

// The shape of `fulcrum plan --json` (README "plan"), cut to the fields the run reads.
constexpr const char* kPlan = R"({
  "work": {"amount": 500000000.0, "units": "tokens", "seq_len": 2048},
  "candidates": [
    {"rank": 1, "provider": "hyperbolic", "instance_type": "1x-H100", "nodes": 1,
     "pricing": "on_demand", "gpu": "H100-SXM5-80GB", "gpus_per_node": 1,
     "parallel": {"tp": 1, "pp": 1, "dp": 1, "zero": 0, "micro_batch": 2, "framework": "hf",
                  "global_batch": 64},
     "time": {"step_seconds": 9.3215, "step_seconds_p90": 12.3044, "total_hours": 10.046,
              "p90_hours": 13.208, "expected_interruptions": 0.0,
              "checkpoint_interval_seconds": null},
     "memory": {"peak_bytes_per_gpu": 51084901581.0},
     "cost": {"expected_usd": 12.96, "p90_usd": 17.05, "usd_per_hour": 1.29}},
    {"rank": 2, "provider": "lambda", "instance_type": "8x-H100", "nodes": 2,
     "pricing": "spot",
     "parallel": {"tp": 8, "pp": 1, "dp": 2, "zero": 1, "micro_batch": 1, "framework": "megatron",
                  "global_batch": 128},
     "time": {"step_seconds": 1.5, "expected_interruptions": 2.5,
              "checkpoint_interval_seconds": 1200}, "cost": {}}
  ]})";

TEST(PlanFileTest, ReadsThePickedCandidate) {
  auto first = ParsePlanJson(kPlan, "plan.json", 1);
  ASSERT_TRUE(first.ok()) << first.status().message();
  const store::JobPlan& p = first->plan;
  EXPECT_EQ(p.layout, "hyperbolic/1x-H100 x1 on_demand: tp1 pp1 dp1 zero0 mb2 (hf)");
  EXPECT_EQ(p.step_seconds, 9.3215);
  EXPECT_EQ(p.step_seconds_p90, 12.3044);
  EXPECT_EQ(p.tokens_per_step, 64.0 * 2048);
  EXPECT_EQ(p.total_steps, 3815) << "ceil(500M / 131072)";
  EXPECT_EQ(p.peak_bytes_per_gpu, 51084901581.0);
  EXPECT_EQ(p.total_hours, 10.046);
  EXPECT_EQ(p.total_hours_p90, 13.208);
  EXPECT_EQ(p.cost_usd, 12.96);
  EXPECT_EQ(p.cost_p90_usd, 17.05);
  EXPECT_EQ(first->usd_per_hour, 1.29);
  EXPECT_FALSE(p.deadline_at);
  EXPECT_EQ(p.provider, "hyperbolic");
  EXPECT_EQ(p.instance_type, "1x-H100");
  EXPECT_EQ(p.gpu, "H100-SXM5-80GB");
  EXPECT_EQ(p.gpus_per_node, 1);
  EXPECT_EQ(p.nodes, 1);
  EXPECT_EQ(p.pricing, "on_demand");
  EXPECT_EQ(p.interruptions, 0.0) << "on demand: the model expects none";
  EXPECT_FALSE(p.checkpoint_interval_seconds) << "null in the file: unknown";

  auto second = ParsePlanJson(kPlan, "plan.json", 2);
  ASSERT_TRUE(second.ok()) << second.status().message();
  EXPECT_EQ(second->plan.step_seconds, 1.5);
  EXPECT_EQ(second->plan.total_steps, 1908) << "ceil(500M / (128 x 2048))";
  EXPECT_FALSE(second->plan.cost_usd) << "unknown is not zero";
  EXPECT_FALSE(second->usd_per_hour);
  EXPECT_EQ(second->plan.nodes, 2);
  EXPECT_EQ(second->plan.pricing, "spot");
  EXPECT_EQ(second->plan.gpu, "") << "a field the file lacks stays unknown";
  EXPECT_FALSE(second->plan.gpus_per_node);
  EXPECT_EQ(second->plan.interruptions, 2.5);
  EXPECT_EQ(second->plan.checkpoint_interval_seconds, 1200);
}

TEST(PlanFileTest, ReadsTheSpecsConstraints) {
  auto none = ParsePlanJson(kPlan, "plan.json", 1);
  ASSERT_TRUE(none.ok()) << none.status().message();
  EXPECT_FALSE(none->deadline_seconds) << "a plan written before constraints: none";
  EXPECT_FALSE(none->budget_usd);

  std::string with = kPlan;
  with.insert(1, R"("constraints": {"deadline_seconds": 259200, "budget_usd": 5000},)");
  auto both = ParsePlanJson(with, "plan.json", 2);
  ASSERT_TRUE(both.ok()) << both.status().message();
  EXPECT_EQ(both->deadline_seconds, 259200.0);
  EXPECT_EQ(both->budget_usd, 5000.0);

  std::string nulls = kPlan;
  nulls.insert(1, R"("constraints": {"deadline_seconds": null, "budget_usd": 20},)");
  auto budget_only = ParsePlanJson(nulls, "plan.json", 1);
  ASSERT_TRUE(budget_only.ok()) << budget_only.status().message();
  EXPECT_FALSE(budget_only->deadline_seconds);
  EXPECT_EQ(budget_only->budget_usd, 20.0);

  std::string bad = kPlan;
  bad.insert(1, R"("constraints": {"deadline_seconds": "3d"},)");
  auto refused = ParsePlanJson(bad, "plan.json", 1);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().message(),
            "plan.json: constraints.deadline_seconds: expected a positive number or null, found "
            "\"3d\"");
}

TEST(PlanFileTest, SamplesCountStepsBySamples) {
  auto r = ParsePlanJson(R"({"work": {"amount": 1000, "units": "samples"},
      "candidates": [{"rank": 1, "parallel": {"global_batch": 256},
                      "time": {"step_seconds": 0.5}}]})",
                         "p.json", 1);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->plan.total_steps, 4);
  EXPECT_FALSE(r->plan.tokens_per_step);
}

TEST(PlanFileTest, ErrorsNameTheFileTheFieldAndWhatWasExpected) {
  auto pick = ParsePlanJson(kPlan, "plan.json", 3);
  ASSERT_FALSE(pick.ok());
  EXPECT_EQ(pick.status().code(), StatusCode::kInvalidInput);
  EXPECT_EQ(pick.status().message(), "plan.json: --pick: expected a rank from 1 to 2, found 3");
  ASSERT_TRUE(pick.status().detail());
  EXPECT_EQ(pick.status().detail()->file, "plan.json");
  EXPECT_EQ(pick.status().detail()->field, "--pick");

  auto text = ParsePlanJson("rank,gpu\n1,H100\n", "plan.csv", 1);
  ASSERT_FALSE(text.ok());
  EXPECT_NE(text.status().message().find("plan.csv"), std::string::npos);

  auto no_step = ParsePlanJson(R"({"candidates": [{"rank": 1, "time": {}}]})", "p.json", 1);
  ASSERT_FALSE(no_step.ok());
  EXPECT_NE(no_step.status().message().find("time.step_seconds: expected a positive number"),
            std::string::npos)
      << no_step.status().message();

  EXPECT_EQ(ReadPlanFile("/nonexistent/plan.json", 1).status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace fulcrum::supervise
