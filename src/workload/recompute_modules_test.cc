// Megatron-LM's --recompute-modules as a Training field: the names parse to bits and back, and
// Validate refuses what Megatron refuses (transformer_config.py@d98e8a64dd __post_init__) or what
// would recompute nothing, naming the flag.
#include <gtest/gtest.h>

#include <string>

#include "workload/model_io.h"
#include "workload/published_shapes_test_util.h"
#include "workload/training.h"

namespace fulcrum::workload {
namespace {

Model Parsed(const char* config) {
  const Result<Model> m = ParseHfConfig(config, "config.json");
  EXPECT_TRUE(m.ok()) << m.status().message();
  return m.ok() ? *m : Model{};
}

TEST(RecomputeModulesTest, NamesParseToBitsAndBack) {
  const Result<uint32_t> modules = ParseRecomputeModules("moe_act, Layernorm,mla_up_proj");
  ASSERT_TRUE(modules.ok()) << modules.status().message();
  EXPECT_EQ(*modules, kRecomputeMoeAct | kRecomputeLayernorm | kRecomputeMlaUpProj);
  EXPECT_EQ(RecomputeModulesName(*modules), "moe_act,layernorm,mla_up_proj");
  const Result<uint32_t> typo = ParseRecomputeModules("core_attn,layernrm");
  ASSERT_FALSE(typo.ok());
  EXPECT_NE(typo.status().message().find("did you mean layernorm"), std::string::npos)
      << typo.status().message();
  EXPECT_NE(typo.status().message().find("shared_experts"), std::string::npos);
  EXPECT_FALSE(ParseRecomputeModules(",").ok());
  const Result<uint32_t> other_family = ParseRecomputeModules("mhc");
  ASSERT_FALSE(other_family.ok());
  EXPECT_NE(other_family.status().message().find("mhc"), std::string::npos);
}

TEST(RecomputeModulesTest, ValidateRefusesWhatMegatronRefuses) {
  const Model lite = Parsed(testing::kDeepSeekV2LiteConfig);
  const Model mixtral = Parsed(testing::kMixtralConfig);
  Training t;
  t.framework = Framework::kMegatron;
  t.recompute = Recompute::kSelective;
  t.recompute_modules = kRecomputeLayernorm | kRecomputeMlaUpProj | kRecomputeMoeAct;
  EXPECT_TRUE(Validate(lite, t).ok()) << Validate(lite, t).message();
  const auto refused = [](const Model& m, const Training& x, const char* needle) {
    const Status s = Validate(m, x);
    EXPECT_FALSE(s.ok());
    EXPECT_NE(s.message().find(needle), std::string::npos) << s.message();
  };
  refused(mixtral, t, "mla_up_proj needs multi-latent attention");
  Training dense_moe = t;
  dense_moe.recompute_modules = kRecomputeMoe;
  Model dense = lite;
  dense.experts = 0;
  refused(dense, dense_moe, "recompute MoE layers");
  dense_moe.recompute_modules = kRecomputeSharedExperts;
  refused(mixtral, dense_moe, "no shared experts");
  // Under none or full Megatron reads no modules: they are ignored, not refused.
  Training full = t;
  full.recompute = Recompute::kFull;
  full.framework = Framework::kFsdp;
  EXPECT_TRUE(Validate(mixtral, full).ok()) << Validate(mixtral, full).message();
  for (const Framework f :
       {Framework::kFsdp, Framework::kDeepSpeed, Framework::kMegatronDeepSpeed, Framework::kHf}) {
    Training other = t;
    other.framework = f;
    refused(lite, other, "megatron or megatron-fsdp");
  }
  // Megatron's default (core_attn) stays valid everywhere selective recompute is.
  Training fsdp = t;
  fsdp.framework = Framework::kFsdp;
  fsdp.recompute_modules = kRecomputeCoreAttn;
  EXPECT_TRUE(Validate(lite, fsdp).ok()) << Validate(lite, fsdp).message();
}

}  // namespace
}  // namespace fulcrum::workload
