#include "plan/spec.h"

#include <gtest/gtest.h>

namespace fulcrum::plan {
namespace {

TEST(SpecTest, ParsesAFullSpec) {
  const char* yaml = R"(model: llama-2-7b
tokens: 20B
seq_len: 4096
global_batch: 256
precision: bf16
method: lora
lora_rank: 8
checkpointing: false
command: "torchrun train.py"
constraints:
  deadline: 7d
  budget_usd: 20000
  max_gpus: 64
  providers: [aws, gcp]
  regions: us-east-1
  pricing: [on_demand, reserved_1y]
  interruptible: no
  min_headroom: 0.2
weights: {cost: 0.5}
costs: {egress_gb: 10, egress_usd_per_gb: 0.09}
top: 5
)";
  Result<PlanSpec> spec = ParsePlanYaml(yaml, "x.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->model_preset, "llama-2-7b");
  EXPECT_DOUBLE_EQ(*spec->tokens, 20e9);
  EXPECT_EQ(spec->training.seq_len, 4096);
  EXPECT_EQ(spec->training.global_batch, 256);
  EXPECT_TRUE(spec->global_batch_given);
  EXPECT_EQ(spec->training.method, workload::Method::kLora);
  EXPECT_EQ(spec->training.lora_rank, 8);
  EXPECT_FALSE(spec->checkpointing);
  EXPECT_EQ(spec->command, "torchrun train.py");
  EXPECT_DOUBLE_EQ(*spec->constraints.deadline_seconds, 7 * 86400);
  EXPECT_DOUBLE_EQ(*spec->constraints.budget_usd, 20000);
  EXPECT_EQ(spec->constraints.max_gpus, 64);
  EXPECT_EQ(spec->constraints.providers, (std::vector<std::string>{"aws", "gcp"}));
  EXPECT_EQ(spec->constraints.regions, (std::vector<std::string>{"us-east-1"}));
  EXPECT_EQ(spec->constraints.pricing,
            (std::vector<PricingModel>{PricingModel::kOnDemand, PricingModel::kReserved1y}));
  EXPECT_FALSE(spec->constraints.interruptible);
  EXPECT_DOUBLE_EQ(spec->constraints.min_headroom, 0.2);
  EXPECT_DOUBLE_EQ(spec->weights.cost, 0.5);
  EXPECT_DOUBLE_EQ(spec->weights.stability, 0.30);
  EXPECT_DOUBLE_EQ(spec->extra.egress_gb, 10);
  EXPECT_EQ(spec->top, 5);
  EXPECT_TRUE(ValidateSpec(*spec).ok());
}

// rank_unconfirmed: last (the default) or mixed (docs/RANKING.md); anything else names the line.
TEST(SpecTest, RankUnconfirmedIsLastOrMixed) {
  Result<PlanSpec> spec = ParsePlanYaml("model: x\ntokens: 1B\n", "r.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  EXPECT_TRUE(spec->unconfirmed_last);
  spec = ParsePlanYaml("model: x\ntokens: 1B\nrank_unconfirmed: mixed\n", "r.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  EXPECT_FALSE(spec->unconfirmed_last);
  spec = ParsePlanYaml("model: x\ntokens: 1B\nrank_unconfirmed: first\n", "r.yaml");
  ASSERT_FALSE(spec.ok());
  EXPECT_NE(spec.status().message().find("r.yaml:3"), std::string::npos) << spec.status().message();
  EXPECT_NE(spec.status().message().find("last or mixed"), std::string::npos)
      << spec.status().message();
}

TEST(SpecTest, DuplicateKeysRefused) {
  Result<PlanSpec> spec = ParsePlanYaml(
      "model: x\ntokens: 1B\nconstraints:\n  budget_usd: 10\n  budget_usd: 20\n", "dup.yaml");
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().message(),
            "dup.yaml:5: constraints.budget_usd: expected each key once in a mapping, found "
            "\"budget_usd\" again (first on line 4)");
  spec = ParsePlanYaml("model: x\ntokens: 1B\ntokens: 2B\n", "dup.yaml");
  ASSERT_FALSE(spec.ok());
  EXPECT_NE(spec.status().message().find("dup.yaml:3: tokens:"), std::string::npos);
}

TEST(SpecTest, NonFiniteNumbersRefused) {
  for (const char* bad : {"1e400", ".inf", "nan", "-.inf", "inf"}) {
    Result<PlanSpec> spec =
        ParsePlanYaml(std::string("model: x\ntokens: ") + bad + "\n", "nf.yaml");
    ASSERT_FALSE(spec.ok()) << bad;
    EXPECT_EQ(spec.status().message(), std::string("nf.yaml:2: tokens: expected a token count "
                                                   "such as 20B, found \"") +
                                           bad + "\"");
    spec = ParsePlanYaml(
        std::string("model: x\ntokens: 1B\nconstraints: {budget_usd: ") + bad + "}\n", "nf.yaml");
    ASSERT_FALSE(spec.ok()) << bad;
    EXPECT_NE(spec.status().message().find("constraints.budget_usd"), std::string::npos);
  }
}

TEST(SpecTest, ParsesObjectiveStorageAndLayoutConstraints) {
  const char* yaml = R"(model: llama-2-7b
tokens: 2B
objective: cheapest
storage: {disk_gb: 500, checkpoint_gb: 200, keep_days: 30}
egress_gb: 100
constraints: {max_nodes: 2, framework: fsdp, strict_batch: true}
)";
  Result<PlanSpec> spec = ParsePlanYaml(yaml, "x.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->objective, Objective::kCheapest);
  EXPECT_DOUBLE_EQ(spec->storage.disk_gb, 500);
  EXPECT_DOUBLE_EQ(spec->storage.checkpoint_gb, 200);
  EXPECT_DOUBLE_EQ(spec->storage.keep_days, 30);
  EXPECT_DOUBLE_EQ(spec->storage.egress_gb, 100);
  EXPECT_EQ(spec->constraints.max_nodes, 2);
  EXPECT_EQ(spec->constraints.frameworks, workload::FrameworkBit(workload::Framework::kFsdp));
  EXPECT_TRUE(spec->constraints.strict_batch);
  EXPECT_FALSE(ParsePlanYaml("model: x\ntokens: 1B\nobjective: quickest\n", "x.yaml").ok());
  EXPECT_FALSE(ParsePlanYaml("model: x\ntokens: 1B\nstorage: {disks: 1}\n", "x.yaml").ok());
}

TEST(SpecTest, StrictHostAndCheckpointEveryAreSpecKeys) {
  // Issue 25: --strict-host and --checkpoint-every had no spec keys; a spec naming them was
  // refused as an unknown field.
  Result<PlanSpec> spec = ParsePlanYaml(
      "model: llama-2-7b\ntokens: 2B\ncheckpoint_every: 45m\nconstraints: {strict_host: true}\n",
      "x.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_TRUE(spec->constraints.strict_host);
  ASSERT_TRUE(spec->checkpoint_every_seconds.has_value());
  EXPECT_DOUBLE_EQ(*spec->checkpoint_every_seconds, 45 * 60);
  spec = ParsePlanYaml("model: llama-2-7b\ntokens: 2B\nstrict_host: yes\n", "x.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_TRUE(spec->constraints.strict_host);
  spec = ParsePlanYaml("model: llama-2-7b\ntokens: 2B\n", "x.yaml");
  ASSERT_TRUE(spec.ok());
  EXPECT_FALSE(spec->constraints.strict_host);
  EXPECT_FALSE(spec->checkpoint_every_seconds.has_value());
  for (const char* bad :
       {"checkpoint_every: 0s", "checkpoint_every: often", "strict_host: maybe"}) {
    Result<PlanSpec> refused =
        ParsePlanYaml(std::string("model: x\ntokens: 1B\n") + bad + "\n", "bad.yaml");
    ASSERT_FALSE(refused.ok()) << bad;
    const std::string key = std::string(bad).substr(0, std::string(bad).find(':'));
    EXPECT_NE(refused.status().message().find("bad.yaml:3: " + key), std::string::npos)
        << refused.status().message();
  }
}

TEST(SpecTest, CrossEntropyIsASpecKey) {
  // The job's loss (estimate --cross-entropy): llm-foundry's fused cross entropy.
  Result<PlanSpec> spec =
      ParsePlanYaml("model: llama-2-7b\ntokens: 2B\ncross_entropy: fused\n", "x.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->training.cross_entropy, workload::CrossEntropy::kFused);
  spec = ParsePlanYaml("model: llama-2-7b\ntokens: 2B\n", "x.yaml");
  ASSERT_TRUE(spec.ok());
  EXPECT_EQ(spec->training.cross_entropy, workload::CrossEntropy::kFramework);
  Result<PlanSpec> refused =
      ParsePlanYaml("model: x\ntokens: 1B\ncross_entropy: liger\n", "bad.yaml");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("bad.yaml:3: cross_entropy"), std::string::npos)
      << refused.status().message();
  EXPECT_NE(refused.status().message().find("framework or fused"), std::string::npos)
      << refused.status().message();
}

TEST(SpecTest, ImpossibleWorkIsRefused) {
  // Issue 19: tokens 1e19 hung the planner; 1e400 parsed as infinity and printed -nan.
  for (const char* tokens : {"1e19", "1e400", "2e15"}) {
    Result<PlanSpec> spec =
        ParsePlanYaml(std::string("model: x\ntokens: ") + tokens + "\n", "x.yaml");
    if (!spec.ok()) continue;  // refused by the parser already
    Status s = ValidateSpec(*spec);
    EXPECT_FALSE(s.ok()) << tokens;
    EXPECT_NE(s.message().find("1e15"), std::string::npos) << s.message();
  }
  Result<PlanSpec> ok = ParsePlanYaml("model: x\ntokens: 1e15\n", "x.yaml");
  ASSERT_TRUE(ok.ok());
  EXPECT_TRUE(ValidateSpec(*ok).ok());
}

TEST(SpecTest, ErrorsNameTheLineAndField) {
  Result<PlanSpec> spec =
      ParsePlanYaml("model: x\ntokens: 1B\nconstraints:\n  deadline: soon\n", "bad.yaml");
  ASSERT_FALSE(spec.ok());
  EXPECT_NE(spec.status().message().find("bad.yaml:4: constraints.deadline"), std::string::npos)
      << spec.status().message();
  EXPECT_NE(spec.status().message().find("\"soon\""), std::string::npos);
  spec = ParsePlanYaml("model: x\ntokenz: 1B\n", "typo.yaml");
  ASSERT_FALSE(spec.ok());
  EXPECT_NE(spec.status().message().find("typo.yaml:2: tokenz: expected a known field ("),
            std::string::npos)
      << spec.status().message();
  EXPECT_NE(spec.status().message().find("found unknown field \"tokenz\"; did you mean tokens?"),
            std::string::npos)
      << spec.status().message();
  ASSERT_NE(spec.status().detail(), nullptr);
  EXPECT_EQ(spec.status().detail()->nearest, std::vector<std::string>{"tokens"});
  spec = ParsePlanYaml("model: [a\n", "broken.yaml");
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().code(), StatusCode::kInvalidInput);
}

TEST(SpecTest, ValidateNeedsModelAndWork) {
  PlanSpec spec;
  spec.origin = "flags";
  EXPECT_FALSE(ValidateSpec(spec).ok());
  spec.model_preset = "llama-2-7b";
  EXPECT_FALSE(ValidateSpec(spec).ok());  // no work
  spec.tokens = 1e9;
  EXPECT_TRUE(ValidateSpec(spec).ok());
  spec.samples = 1e6;
  EXPECT_FALSE(ValidateSpec(spec).ok());  // both
}

TEST(SpecTest, Weights) {
  Result<Weights> w = ParseWeights("cost=0.4, performance=0.1");
  ASSERT_TRUE(w.ok());
  EXPECT_DOUBLE_EQ(w->cost, 0.4);
  EXPECT_DOUBLE_EQ(w->performance, 0.1);
  EXPECT_DOUBLE_EQ(w->stability, 0.30);
  EXPECT_FALSE(ParseWeights("speed=1").ok());
  EXPECT_FALSE(ParseWeights("cost=-1").ok());
  EXPECT_FALSE(ParseWeights("stability=0,performance=0,cost=0,usability=0,support=0").ok());
}

TEST(SpecTest, PricingModels) {
  EXPECT_EQ(*ParsePricingModel("on-demand"), PricingModel::kOnDemand);
  EXPECT_EQ(*ParsePricingModel("Reserved_3y"), PricingModel::kReserved3y);
  EXPECT_EQ(*ParsePricingModel("spot"), PricingModel::kSpot);
  EXPECT_FALSE(ParsePricingModel("cheap").ok());
  EXPECT_EQ(PricingModelName(PricingModel::kReserved1y), "reserved_1y");
}

}  // namespace
}  // namespace fulcrum::plan
