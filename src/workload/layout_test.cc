// Parallel layouts beyond tp x pp x dp: uneven pipeline stages, context and expert parallelism,
// HSDP shard groups, and mixture-of-experts shapes read from HF configs, each against a
// published configuration.
#include <gtest/gtest.h>

#include "workload/model.h"
#include "workload/model_io.h"
#include "workload/published_shapes_test_util.h"
#include "workload/training.h"

namespace fulcrum::workload {
namespace {

using testing::Bloom176b;
using testing::kMixtralConfig;

// BLOOM's layout without the recompute (irrelevant to the split).
Training BloomLayout() {
  Training t = testing::BloomTraining();
  t.recompute = Recompute::kNone;
  return t;
}

// 70 layers on 12 stages: ten stages of 6 and two of 5, the first and last (embedding, loss)
// taking the 5 -- the split BLOOM ran (Megatron-DeepSpeed partition_method
// "type:transformer|embedding": the embedding counts as a layer on each end, 72 / 12 = 6).
TEST(StageLayersTest, BloomSplitsSeventyLayersOverTwelveStages) {
  const Model m = Bloom176b();
  const Training t = BloomLayout();
  ASSERT_TRUE(Validate(m, t, 384).ok()) << Validate(m, t, 384).message();
  const StageLayers s = PipelineStageLayers(m, t);
  EXPECT_EQ(s.first, 5);
  EXPECT_EQ(s.middle, 6);
  EXPECT_EQ(s.last, 5);
  EXPECT_EQ(MaxStageLayers(s), 6);
  EXPECT_EQ(s.first + 10 * s.middle + s.last, m.layers);
}

TEST(StageLayersTest, EvenSplitsAndOneFloorStage) {
  Model m = Bloom176b();
  Training t = BloomLayout();
  m.layers = 72;
  StageLayers even = PipelineStageLayers(m, t);
  EXPECT_EQ(even.first, 6);
  EXPECT_EQ(even.middle, 6);
  EXPECT_EQ(even.last, 6);
  // 7 layers on 4 stages: 2, 2, 2, 1 as floor/ceiling; only one stage can take the floor, the
  // first.
  m.layers = 7;
  t.pp = 4;
  const StageLayers one = PipelineStageLayers(m, t);
  EXPECT_EQ(one.first, 1);
  EXPECT_EQ(one.middle, 2);
  EXPECT_EQ(one.last, 2);
}

// Megatron's --decoder-first/last-pipeline-num-layers: the named stages take what is given, the
// others share the rest evenly; splits that do not add up are refused with the numbers.
TEST(StageLayersTest, ExplicitFirstAndLastStages) {
  const Model m = Bloom176b();
  Training t = BloomLayout();
  t.first_stage_layers = 4;
  t.last_stage_layers = 6;
  ASSERT_TRUE(Validate(m, t).ok()) << Validate(m, t).message();
  const StageLayers s = PipelineStageLayers(m, t);
  EXPECT_EQ(s.first, 4);
  EXPECT_EQ(s.middle, 6);
  EXPECT_EQ(s.last, 6);
  t.first_stage_layers = 3;
  const Status bad = Validate(m, t);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.message().find("remaining 61"), std::string::npos) << bad.message();
  Training flat = t;
  flat.pp = 1;
  flat.dp = 96;
  flat.global_batch = 192;
  flat.first_stage_layers = 0;
  EXPECT_NE(Validate(m, flat).message().find("need pipeline parallelism"), std::string::npos);
}

// Llama 3 405B's interleaved pipeline (arXiv 2407.21783, section 3.3.2): 126 layers on 16
// stages of 8 model chunks, one layer per chunk, the first and last stage one layer short (their
// first / last chunk holds only the embedding / the output layer). Accepted with --vpp; a split
// whose middle stages have fewer layers than chunks, or an end stage short of more than one
// chunk, is refused with the numbers.
TEST(StageLayersTest, UnevenStagesWithAnInterleavedSchedule) {
  const Model m = testing::Llama3_405b();
  Training t = testing::Llama3_405bTraining();
  ASSERT_TRUE(Validate(m, t, 8192).ok()) << Validate(m, t, 8192).message();
  const StageLayers s = PipelineStageLayers(m, t);
  EXPECT_EQ(s.first, 7);
  EXPECT_EQ(s.middle, 8);
  EXPECT_EQ(s.last, 7);
  Training short_end = t;
  short_end.first_stage_layers = 6;  // two chunks without a layer
  short_end.last_stage_layers = 8;   // 126 - 14 = 112 = 14 x 8 on the others
  const Status ends = Validate(m, short_end);
  ASSERT_FALSE(ends.ok());
  EXPECT_NE(ends.message().find("at least --vpp - 1 = 7"), std::string::npos) << ends.message();
  Training thin = t;
  thin.vpp = 16;  // 8 layers per middle stage cannot fill 16 chunks
  thin.first_stage_layers = 15;
  thin.last_stage_layers = 15;  // 96 = 14 x 6.86: not even either
  EXPECT_FALSE(Validate(m, thin).ok());
  thin.first_stage_layers = 14;
  thin.last_stage_layers = 14;  // 98 = 14 x 7 < 16 per stage
  const Status few = Validate(m, thin);
  ASSERT_FALSE(few.ok());
  EXPECT_NE(few.message().find("at least 16 each"), std::string::npos) << few.message();
}

// Llama 3.1 8B at 131072 tokens with cp 4 on 8 GPUs (pytorch/torchtitan@31a17bfd
// benchmarks/llama3_h100_202412_torchtitan.md): tp x pp x cp x dp = 8.
TEST(ContextParallelTest, CountsInTheGpusAndNeedsEvenChunks) {
  const Model m = testing::Llama31_8b();
  Training t;
  t.cp = 4;
  t.dp = 2;
  t.zero_stage = 3;
  t.seq_len = 131072;
  t.global_batch = 2;
  EXPECT_EQ(GpuCount(t), 8);
  EXPECT_EQ(StateShards(t), 8);  // FSDP shards over dp_shard x cp
  EXPECT_TRUE(Validate(m, t, 8).ok()) << Validate(m, t, 8).message();
  EXPECT_NE(Validate(m, t, 2).message().find("--cp"), std::string::npos);
  t.seq_len = 131070;
  EXPECT_NE(Validate(m, t).message().find("divisible by 2 x --cp"), std::string::npos);
  t.seq_len = 131072;
  t.framework = Framework::kHf;
  EXPECT_FALSE(Validate(m, t).ok());
  EXPECT_FALSE(FrameworkRunsLayout(Framework::kDeepSpeed, t));
}

// deepseek-ai/deepseek-moe-16b-base config.json; Dai et al. 2024, DeepSeekMoE (arXiv 2401.06066)
// Table 2: 16.4 B total, 2.8 B activated.
constexpr const char* kDeepSeekMoeConfig = R"({
  "architectures": ["DeepseekForCausalLM"], "first_k_dense_replace": 1, "hidden_size": 2048,
  "intermediate_size": 10944, "max_position_embeddings": 4096, "model_type": "deepseek",
  "moe_intermediate_size": 1408, "moe_layer_freq": 1, "n_routed_experts": 64,
  "n_shared_experts": 2, "num_attention_heads": 16, "num_experts_per_tok": 6,
  "num_hidden_layers": 28, "num_key_value_heads": 16, "tie_word_embeddings": false,
  "vocab_size": 102400})";

TEST(MixtureOfExpertsTest, MixtralTotalAndActiveParameters) {
  const Result<Model> m = ParseHfConfig(kMixtralConfig, "mixtral/config.json");
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->experts, 8);
  EXPECT_EQ(m->experts_per_token, 2);
  EXPECT_NEAR(ParameterCount(*m), 46.7e9, 46.7e9 * 0.005);
  EXPECT_NEAR(ActiveParameterCount(*m), 12.9e9, 12.9e9 * 0.01);
  // Expert parallelism splits exactly the routed experts: 32 layers x 8 x 3 x 4096 x 14336.
  EXPECT_EQ(RoutedExpertParameterCount(*m), 32.0 * 8 * 3 * 4096 * 14336);
}

TEST(MixtureOfExpertsTest, DeepSeekMoeSharedExpertsAndDenseFirstLayer) {
  const Result<Model> m = ParseHfConfig(kDeepSeekMoeConfig, "deepseek-moe/config.json");
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->shared_experts, 2);
  EXPECT_EQ(m->dense_layers, 1);
  EXPECT_EQ(MoeLayerCount(*m), 27);
  EXPECT_NEAR(ParameterCount(*m), 16.4e9, 16.4e9 * 0.01);
  EXPECT_NEAR(ActiveParameterCount(*m), 2.8e9, 2.8e9 * 0.02);
}

TEST(MixtureOfExpertsTest, ExpertParallelIsCarvedOutOfDp) {
  const Result<Model> m = ParseHfConfig(kMixtralConfig, "mixtral/config.json");
  ASSERT_TRUE(m.ok());
  Training t;
  t.dp = 8;
  t.ep = 8;
  t.global_batch = 8;
  t.framework = Framework::kMegatron;
  EXPECT_TRUE(Validate(*m, t, 8).ok()) << Validate(*m, t, 8).message();
  t.ep = 3;
  const Status ep3 = Validate(*m, t);
  EXPECT_NE(ep3.message().find("must divide the data-parallel degree"), std::string::npos);
  ASSERT_NE(ep3.detail(), nullptr);  // --json errors name the field, expected and found
  EXPECT_EQ(ep3.detail()->field, "ep");
  EXPECT_EQ(ep3.detail()->found, "3");
  t.dp = 16;
  t.ep = 16;
  t.global_batch = 16;
  EXPECT_NE(Validate(*m, t).message().find("must divide the 8 routed experts"), std::string::npos);
  Model dense = *m;
  dense.experts = 0;
  dense.experts_per_token = 0;
  t.ep = 2;
  EXPECT_NE(Validate(dense, t).message().find("needs a mixture-of-experts model"),
            std::string::npos);
  Model topk = *m;
  topk.experts_per_token = 9;
  EXPECT_NE(ValidateModel(topk).message().find("experts_per_token"), std::string::npos);
}

// HSDP (torch FSDP ShardingStrategy.HYBRID_SHARD): shard within a node of 8, replicate across.
TEST(HybridShardTest, ShardGroupDividesDpAndNeedsSharding) {
  Model m;
  m.name = "m";
  m.layers = 32;
  m.hidden = 4096;
  m.heads = 32;
  m.kv_heads = 32;
  m.ffn_hidden = 11008;
  m.vocab = 32000;
  Training t;
  t.dp = 32;
  t.dp_shard = 8;
  t.zero_stage = 3;
  t.global_batch = 32;
  EXPECT_TRUE(Validate(m, t, 32).ok()) << Validate(m, t, 32).message();
  EXPECT_EQ(StateShards(t), 8);
  EXPECT_EQ(GradientReplicas(t), 32);
  EXPECT_EQ(DefaultFrameworkFor(t), Framework::kFsdp);
  t.dp_shard = 5;
  EXPECT_NE(Validate(m, t).message().find("must divide"), std::string::npos);
  t.dp_shard = 8;
  t.zero_stage = 1;
  t.framework = Framework::kMegatron;
  EXPECT_FALSE(Validate(m, t).ok());
}

// Megatron-LM's own FSDP and Megatron-DeepSpeed were refused (issue 31); each now runs the layouts
// its framework has: BLOOM's tp 4 pp 12 with ZeRO-1 under Megatron-DeepSpeed, Megatron-FSDP's
// optim_grads_params with tp and ep but no pipeline.
TEST(FrameworkLayoutTest, MegatronFsdpAndMegatronDeepSpeed) {
  Training bloom = BloomLayout();
  bloom.framework = Framework::kMegatronDeepSpeed;
  EXPECT_TRUE(Validate(Bloom176b(), bloom).ok()) << Validate(Bloom176b(), bloom).message();
  bloom.zero_stage = 2;
  EXPECT_FALSE(FrameworkRunsLayout(Framework::kMegatronDeepSpeed, bloom));
  bloom.zero_stage = 1;
  bloom.cp = 2;
  EXPECT_FALSE(FrameworkRunsLayout(Framework::kMegatronDeepSpeed, bloom));

  Training fsdp;
  fsdp.framework = Framework::kMegatronFsdp;
  fsdp.tp = 2;
  fsdp.dp = 4;
  fsdp.zero_stage = 3;
  fsdp.sequence_parallel = true;
  fsdp.global_batch = 4;
  EXPECT_TRUE(FrameworkRunsLayout(Framework::kMegatronFsdp, fsdp));
  fsdp.zero_stage = 1;  // the distributed optimizer alone is plain Megatron-LM
  EXPECT_FALSE(FrameworkRunsLayout(Framework::kMegatronFsdp, fsdp));
  fsdp.zero_stage = 3;
  fsdp.pp = 2;
  EXPECT_FALSE(FrameworkRunsLayout(Framework::kMegatronFsdp, fsdp));

  EXPECT_EQ(ParseFramework("megatron-fsdp").value(), Framework::kMegatronFsdp);
  EXPECT_EQ(ParseFramework("Megatron-DeepSpeed").value(), Framework::kMegatronDeepSpeed);
  EXPECT_EQ(FrameworkName(Framework::kMegatronDeepSpeed), "megatron-deepspeed");
  const Result<Framework> bad = ParseFramework("megatron-ds");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("megatron-deepspeed"), std::string::npos);
  EXPECT_TRUE(UsesMegatronModel(Framework::kMegatronFsdp));
  EXPECT_FALSE(UsesMegatronModel(Framework::kFsdp));
}

}  // namespace
}  // namespace fulcrum::workload
