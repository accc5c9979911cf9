// Multi-head latent attention (DeepSeek-V2 / V3) read from HF configs: the fields, the refusals,
// the parameter totals against the published ones, and the attention widths every estimator
// reads (QDim, KDim, VDim, AttentionOutDim, MlaLatentDim).
#include <gtest/gtest.h>

#include <string>

#include "workload/model.h"
#include "workload/model_io.h"
#include "workload/published_shapes_test_util.h"

namespace fulcrum::workload {
namespace {

using testing::kDeepSeekV2Config;
using testing::kDeepSeekV2LiteConfig;
using testing::kDeepSeekV3Config;
using testing::kMixtralConfig;

Model Parsed(const char* config, const std::string& origin) {
  const Result<Model> m = ParseHfConfig(config, origin);
  EXPECT_TRUE(m.ok()) << m.status().message();
  return m.ok() ? *m : Model{};
}

// `config` with `field`'s value replaced by `value` (a JSON literal); the field must be present.
std::string WithField(const std::string& config, const std::string& field,
                      const std::string& value) {
  const std::string key = "\"" + field + "\": ";
  const size_t at = config.find(key);
  EXPECT_NE(at, std::string::npos) << field;
  const size_t start = at + key.size();
  const size_t end = config.find_first_of(",}", start);
  return config.substr(0, start) + value + config.substr(end);
}

TEST(MlaConfigTest, ReadsTheLatentShapes) {
  const Model v3 = Parsed(kDeepSeekV3Config, "DeepSeek-V3/config.json");
  EXPECT_TRUE(IsMla(v3));
  EXPECT_EQ(v3.q_lora_rank, 1536);
  EXPECT_EQ(v3.kv_lora_rank, 512);
  EXPECT_EQ(v3.qk_nope_head_dim, 128);
  EXPECT_EQ(v3.qk_rope_head_dim, 64);
  EXPECT_EQ(v3.v_head_dim, 128);
  EXPECT_EQ(v3.dense_layers, 3);
  EXPECT_EQ(v3.experts, 256);
  EXPECT_EQ(v3.shared_experts, 1);
  EXPECT_EQ(QkHeadDim(v3), 192);
  EXPECT_EQ(QDim(v3), 128 * 192);
  EXPECT_EQ(KDim(v3), 128 * 192);  // K is materialised per head from the latent
  EXPECT_EQ(VDim(v3), 128 * 128);
  EXPECT_EQ(AttentionOutDim(v3), 128 * 128);
  EXPECT_EQ(MlaLatentDim(v3), 576);
  // V2-Lite: "q_lora_rank": null, no query compression.
  const Model lite = Parsed(kDeepSeekV2LiteConfig, "DeepSeek-V2-Lite/config.json");
  EXPECT_TRUE(IsMla(lite));
  EXPECT_EQ(lite.q_lora_rank, 0);
  // model_type alone names the architecture.
  std::string typed = kDeepSeekV3Config;
  typed = WithField(typed, "architectures", "[]");
  EXPECT_TRUE(ParseHfConfig(typed, "v3/config.json").ok());
}

TEST(MlaConfigTest, BadOrMissingFieldsAreNamed) {
  std::string missing = kDeepSeekV3Config;
  missing = WithField(missing, "kv_lora_rank", "null");
  Result<Model> m = ParseHfConfig(missing, "v3/config.json");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().message(),
            "v3/config.json: kv_lora_rank: missing (required for DeepseekV3ForCausalLM)");
  m = ParseHfConfig(WithField(kDeepSeekV2Config, "v_head_dim", "\"128\""), "v2/config.json");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().message(),
            "v2/config.json: v_head_dim: expected a positive integer, found \"128\"");
  m = ParseHfConfig(WithField(kDeepSeekV2Config, "qk_rope_head_dim", "-64"), "v2/config.json");
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("qk_rope_head_dim: expected a positive integer"),
            std::string::npos);
  m = ParseHfConfig(WithField(kDeepSeekV2Config, "moe_layer_freq", "2"), "v2/config.json");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().message(),
            "v2/config.json: moe_layer_freq: expected 1 (a MoE MLP in every layer) for "
            "DeepseekV2ForCausalLM, found 2");
  // A preset with latent head sizes but no latent is inconsistent.
  Model partial = Parsed(kMixtralConfig, "mixtral/config.json");
  partial.v_head_dim = 128;
  EXPECT_NE(ValidateModel(partial).message().find("need kv_lora_rank"), std::string::npos);
}

// Totals against the papers (published_shapes_test_util.h). DeepSeek's activated counts match
// ActiveParameterCount less the input embedding (a lookup, no compute): 2.45 B, 20.9 B, 36.6 B
// with it left out against 2.4, 21, 37; 2.66, 21.4, 37.6 B with it.
TEST(MlaParametersTest, TotalsMatchThePublishedOnes) {
  struct Case {
    const char* config;
    double total;
    double activated;
  };
  for (const Case& c :
       {Case{kDeepSeekV2LiteConfig, 15.7e9, 2.4e9}, Case{kDeepSeekV2Config, 236e9, 21e9},
        Case{kDeepSeekV3Config, 671e9, 37e9}}) {
    const Model m = Parsed(c.config, "config.json");
    EXPECT_NEAR(ParameterCount(m), c.total, c.total * 0.005) << c.total;
    const double token_embedding = static_cast<double>(m.vocab) * static_cast<double>(m.hidden);
    EXPECT_NEAR(ActiveParameterCount(m) - token_embedding, c.activated, c.activated * 0.025)
        << c.total;
  }
}

// One DeepSeek-V3 layer's attention, counted from modeling_deepseek_v3.py's modules: q_a_proj,
// q_a_layernorm, q_b_proj, kv_a_proj_with_mqa, kv_a_layernorm, kv_b_proj, o_proj.
TEST(MlaParametersTest, AttentionProjectionsOfOneLayer) {
  const Model v3 = Parsed(kDeepSeekV3Config, "DeepSeek-V3/config.json");
  const double projections = 7168.0 * 1536 + 1536.0 * 128 * 192 + 7168.0 * (512 + 64) +
                             512.0 * 128 * (128 + 128) + 128.0 * 128 * 7168;
  EXPECT_EQ(AttentionProjectionParameterCount(v3), projections);
  Model no_q_lora = v3;
  no_q_lora.q_lora_rank = 0;  // q_proj: hidden -> heads x 192 instead of q_a + q_b
  EXPECT_EQ(AttentionProjectionParameterCount(no_q_lora),
            projections - 7168.0 * 1536 - 1536.0 * 128 * 192 + 7168.0 * 128 * 192);
  // Layer parameters = attention (+ the two latent norms) + 2 norms + the mean MLP.
  Model dense = v3;
  dense.experts = dense.experts_per_token = dense.shared_experts = dense.dense_layers = 0;
  EXPECT_EQ(LayerParameterCount(dense), projections + 1536 + 512 + 2 * 7168.0 + 3.0 * 7168 * 18432);
  // The largest tensor: the embedding (129280 x 7168), above o_proj and q_b_proj.
  EXPECT_EQ(LargestTensorParameterCount(v3), 129280.0 * 7168);
}

// The shipped presets (catalog/models/deepseek-*.yaml) carry the HF configs' shapes.
TEST(MlaParametersTest, PresetsAgreeWithTheHfConfigs) {
  const std::string catalog = std::string(FULCRUM_SOURCE_DIR) + "/catalog";
  for (const auto& [name, config] : {std::pair{"deepseek-v2-lite", kDeepSeekV2LiteConfig},
                                     {"deepseek-v2", kDeepSeekV2Config},
                                     {"deepseek-v3", kDeepSeekV3Config}}) {
    const Result<Model> preset = LoadModelPreset(catalog, name);
    ASSERT_TRUE(preset.ok()) << preset.status().message();
    const Model hf = Parsed(config, "config.json");
    EXPECT_EQ(ParameterCount(*preset), ParameterCount(hf)) << name;
    EXPECT_EQ(ActiveParameterCount(*preset), ActiveParameterCount(hf)) << name;
    EXPECT_EQ(MlaLatentDim(*preset), MlaLatentDim(hf)) << name;
    EXPECT_EQ(preset->q_lora_rank, hf.q_lora_rank) << name;
  }
}

// Standard attention keeps its widths: Q and the output are hidden, K and V kv_heads x head_dim.
TEST(MlaParametersTest, StandardAttentionWidthsUnchanged) {
  const Model m = Parsed(kMixtralConfig, "mixtral/config.json");
  EXPECT_FALSE(IsMla(m));
  EXPECT_EQ(QDim(m), 4096);
  EXPECT_EQ(KDim(m), 1024);
  EXPECT_EQ(VDim(m), 1024);
  EXPECT_EQ(KvDim(m), 1024);
  EXPECT_EQ(AttentionOutDim(m), 4096);
  EXPECT_EQ(MlaLatentDim(m), 0);
  EXPECT_EQ(AttentionProjectionParameterCount(m), 4096.0 * (4096 + 2 * 1024) + 4096.0 * 4096);
}

}  // namespace
}  // namespace fulcrum::workload
