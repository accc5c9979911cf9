// The node fields of a plan candidate that `bench --expect` reads (supervise/plan_file.h).
#include <gtest/gtest.h>

#include "supervise/plan_file.h"

namespace fulcrum::supervise {
namespace {

TEST(PlanFileNodeTest, ReadsTheCandidatesNode) {
  constexpr const char* kPlan = R"({"work": {}, "candidates": [
    {"rank": 1, "provider": "nebius", "instance_type": "gpu-h100-sxm_8gpu-128vcpu-1600gb",
     "region": "eu-north1", "gpu": "H100-SXM5-80GB", "gpus_per_node": 8, "nodes": 2,
     "parallel": {"precision": "bf16", "global_batch": 512}, "time": {"step_seconds": 2.5}},
    {"rank": 2, "time": {"step_seconds": 3}}]})";
  auto first = ParsePlanJson(kPlan, "plan.json", 1);
  ASSERT_TRUE(first.ok()) << first.status().message();
  EXPECT_EQ(first->provider, "nebius");
  EXPECT_EQ(first->instance_type, "gpu-h100-sxm_8gpu-128vcpu-1600gb");
  EXPECT_EQ(first->region, "eu-north1");
  EXPECT_EQ(first->gpu, "H100-SXM5-80GB");
  EXPECT_EQ(first->gpus_per_node, 8);
  EXPECT_EQ(first->precision, "bf16");
  auto second = ParsePlanJson(kPlan, "plan.json", 2);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->gpu, "") << "not in the file: empty, not invented";
  EXPECT_EQ(second->gpus_per_node, 0);
}

}  // namespace
}  // namespace fulcrum::supervise
