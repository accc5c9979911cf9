// Parameter counting against published sizes, the shipped presets and HF config.json parsing.
#include "workload/model.h"

#include <gtest/gtest.h>

#include "workload/model_io.h"
#include "workload/training.h"

namespace fulcrum::workload {
namespace {

const std::string kCatalog = std::string(FULCRUM_SOURCE_DIR) + "/catalog";
const std::string kFixtures = std::string(FULCRUM_SOURCE_DIR) + "/tests/fixtures/hf/";

Model Preset(const std::string& name) {
  Result<Model> m = LoadModelPreset(kCatalog, name);
  EXPECT_TRUE(m.ok()) << m.status().message();
  return m.ok() ? *m : Model{};
}

// Published sizes (issue #3; model cards): within 0.5 %.
TEST(ParameterCountTest, PublishedSizesWithinHalfAPercent) {
  const std::pair<const char*, double> cases[] = {
      {"llama-2-7b", 6.74e9}, {"llama-2-70b", 68.98e9}, {"llama-3-8b", 8.03e9},
      {"mistral-7b", 7.24e9}, {"gpt3-175b", 174.6e9},
  };
  for (const auto& [name, expected] : cases) {
    EXPECT_NEAR(ParameterCount(Preset(name)), expected, expected * 0.005) << name;
  }
}

// Exact counts of the HF implementations (model.num_parameters() as printed on model cards
// and in the transformers docs).
TEST(ParameterCountTest, ExactCountsOfHfModels) {
  EXPECT_EQ(ParameterCount(Preset("gpt2")), 124439808.0);         // openai-community/gpt2
  EXPECT_EQ(ParameterCount(Preset("llama-2-7b")), 6738415616.0);  // meta-llama/Llama-2-7b-hf
  EXPECT_EQ(ParameterCount(Preset("bert-large")), 335174458.0);   // BertForMaskedLM large
}

// Nemotron's squared-ReLU MLP is not gated: one up and one down projection, as GELU's (NeMo
// nemotron_8b.yaml@0b1a110c: 32 layers of 4096, ffn 16384, no biases, LayerNorm1p weight and bias,
// untied 256000-token embeddings).
TEST(ParameterCountTest, SquaredReluMlpHasTwoMatrices) {
  ASSERT_TRUE(ParseMlpKind("squared-relu").ok());
  EXPECT_EQ(*ParseMlpKind("squared-relu"), MlpKind::kSquaredRelu);
  EXPECT_NE(ParseMlpKind("relu2").status().message().find("squared-relu"), std::string::npos);
  const double h = 4096, f = 16384, v = 256000;
  const double layer = 4 * h * h + 2 * h * f + 2 * (2 * h);  // attention, MLP, two norms
  EXPECT_DOUBLE_EQ(ParameterCount(Preset("nemotron-8b")), 32 * layer + 2 * h + 2 * v * h);
}

TEST(ParameterCountTest, OtherPresetsHaveTheirNominalSize) {
  const std::pair<const char*, double> cases[] = {
      {"gpt2-xl", 1.56e9},
      {"llama-2-13b", 13.0e9},
      {"llama-3-70b", 70.6e9},
      {"llama-3-405b", 405.9e9},
      {"qwen2-7b", 7.62e9},
      {"qwen2-72b", 72.7e9},
      {"mpt-7b", 6.65e9},
      {"mpt-30b", 29.96e9},
      {"resnet-50", 25.56e6},
      // OPT paper Table 1 (175B); LLaMA paper Table 2 (65.2B).
      {"opt-175b", 175e9},
      {"llama-65b", 65.2e9},
      // Qwen3 model cards (Qwen/Qwen3-32B, Qwen/Qwen3-30B-A3B, Qwen/Qwen3-235B-A22B).
      {"qwen3-32b", 32.8e9},
      {"qwen3-30b-a3b", 30.5e9},
      {"qwen3-235b-a22b", 235e9},
  };
  for (const auto& [name, expected] : cases) {
    EXPECT_NEAR(ParameterCount(Preset(name)), expected, expected * 0.01) << name;
  }
}

TEST(PresetTest, EveryPresetLoadsAndNamesItsSource) {
  const std::vector<std::string> names = ListModelPresets(kCatalog);
  EXPECT_GE(names.size(), 16u);
  for (const std::string& name : names) {
    Model m = Preset(name);
    EXPECT_EQ(m.name, name);
    EXPECT_FALSE(m.source.empty()) << name;
  }
}

// CountModel computes each part once for the planner; every field must be what its function
// returns on the same model (dense, MoE, MLA, encoder and generic presets alike).
TEST(ModelCountsTest, EveryFieldIsItsFunctionOnEveryPreset) {
  for (const std::string& name : ListModelPresets(kCatalog)) {
    const Model m = Preset(name);
    const ModelCounts c = CountModel(m);
    EXPECT_EQ(c.parameters, ParameterCount(m)) << name;
    EXPECT_EQ(c.active_parameters, ActiveParameterCount(m)) << name;
    EXPECT_EQ(c.layer_parameters, LayerParameterCount(m)) << name;
    EXPECT_EQ(c.embedding_parameters, EmbeddingParameterCount(m)) << name;
    EXPECT_EQ(c.head_parameters, HeadParameterCount(m)) << name;
    EXPECT_EQ(c.routed_expert_parameters, RoutedExpertParameterCount(m)) << name;
    EXPECT_EQ(c.largest_tensor_parameters, LargestTensorParameterCount(m)) << name;
    EXPECT_EQ(c.attention_projection_parameters, AttentionProjectionParameterCount(m)) << name;
    EXPECT_EQ(c.active_layer_matmul_parameters, ActiveLayerMatmulParameterCount(m)) << name;
    EXPECT_EQ(c.attention_operand_width, AttentionOperandWidth(m)) << name;
    const AttentionMatrices matrices = AttentionProjectionMatrices(m);
    ASSERT_EQ(c.attention_matrices.count, matrices.count) << name;
    for (int i = 0; i < matrices.count; ++i) {
      const AttentionMatrix& a = c.attention_matrices.items[static_cast<size_t>(i)];
      const AttentionMatrix& b = matrices.items[static_cast<size_t>(i)];
      EXPECT_TRUE(a.role == b.role && a.in == b.in && a.out == b.out && a.tp_split == b.tp_split)
          << name << " matrix " << i;
    }
  }
}

TEST(PresetTest, CnnPresetsCarryTheirRooflineShapes) {
  // tools/cnn_shapes.py derives these from the architecture tables; its GMACs reproduce the
  // published ones the presets cite (EfficientNet-B0 0.39 GMACs, Tan & Le 2019 Table 2).
  for (const char* name : {"resnet-50", "resnext101-32x4d", "se-resnext101-32x4d",
                           "efficientnet-b0", "efficientnet-b4", "efficientnetv2-s"}) {
    const Model m = Preset(name);
    EXPECT_GT(m.generic_forward_elements_per_sample, 0) << name;
    EXPECT_GT(m.generic_weighted_layers, 0) << name;
    EXPECT_GT(m.generic_image_size, 0) << name;
  }
  EXPECT_EQ(Preset("resnet-50").generic_depthwise_flops_per_sample, 0);
  const Model b0 = Preset("efficientnet-b0");
  EXPECT_GT(b0.generic_depthwise_flops_per_sample, 0);
  EXPECT_LT(b0.generic_depthwise_flops_per_sample, 0.2 * b0.generic_forward_flops_per_sample);
}

TEST(PresetTest, AnotherImageSizeScalesWithThePixelCount) {
  // EfficientNetV2-S: 8.37 GMACs at 384 px (torchvision); DeepLearningExamples' TF2 benchmark
  // trains its last progressive-resize stage at 300 px: (300 / 384)^2 of the FLOPs.
  const Model v2 = Preset("efficientnetv2-s");
  const Model at300 = AtImageSize(v2, 300);
  const double pixels = (300.0 / 384.0) * (300.0 / 384.0);
  EXPECT_DOUBLE_EQ(at300.generic_forward_flops_per_sample,
                   v2.generic_forward_flops_per_sample * pixels);
  EXPECT_DOUBLE_EQ(at300.generic_forward_elements_per_sample,
                   v2.generic_forward_elements_per_sample * pixels);
  EXPECT_DOUBLE_EQ(at300.generic_depthwise_flops_per_sample,
                   v2.generic_depthwise_flops_per_sample * pixels);
  EXPECT_EQ(at300.generic_image_size, 300);
  EXPECT_EQ(at300.generic_parameters, v2.generic_parameters);
  // Unknown sizes and transformers are left alone.
  EXPECT_EQ(AtImageSize(v2, 0).generic_forward_flops_per_sample,
            v2.generic_forward_flops_per_sample);
  const Model bert = Preset("bert-large");
  EXPECT_EQ(AtImageSize(bert, 300).hidden, bert.hidden);
}

TEST(PresetTest, UnknownPresetListsKnownOnes) {
  Result<Model> m = LoadModelPreset(kCatalog, "llama-9");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kNotFound);
  EXPECT_NE(m.status().message().find("llama-2-7b"), std::string::npos) << m.status().message();
}

TEST(PresetTest, BadYamlNamesLineAndField) {
  Result<Model> m = ParseModelYaml("name: x\nsource: y\nlayers: many\n", "m.yaml");
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("m.yaml:3: layers"), std::string::npos)
      << m.status().message();
  Result<Model> unknown = ParseModelYaml("name: x\nsource: y\nlayerz: 3\n", "m.yaml");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("layerz"), std::string::npos);
  EXPECT_NE(unknown.status().message().find("did you mean layers?"), std::string::npos)
      << unknown.status().message();
  EXPECT_FALSE(ParseModelYaml("name: [unclosed\n", "m.yaml").ok());
}

TEST(PresetTest, DuplicateKeysRefused) {
  Result<Model> m = ParseModelYaml("name: x\nsource: y\nlayers: 2\nlayers: 32\n", "m.yaml");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().message(),
            "m.yaml:4: layers: expected each key once in a mapping, found \"layers\" again "
            "(first on line 3)");
}

TEST(PresetTest, NonFiniteNumbersRefused) {
  for (const char* bad : {"1e400", ".inf", ".nan", "nan", "inf"}) {
    Result<Model> m = ParseModelYaml(
        std::string("name: x\nsource: y\nkind: generic\nparameters: ") + bad + "\n", "m.yaml");
    ASSERT_FALSE(m.ok()) << bad;
    EXPECT_EQ(m.status().message(), std::string("m.yaml:4: parameters: expected a non-negative "
                                                "number, found \"") +
                                        bad + "\"");
    m = ParseModelYaml(std::string("name: x\nsource: y\nlayers: ") + bad + "\n", "m.yaml");
    ASSERT_FALSE(m.ok()) << bad;
    EXPECT_NE(m.status().message().find("m.yaml:3: layers: expected"), std::string::npos);
  }
}

TEST(HfConfigTest, ArchitecturesMatchThePresets) {
  const std::pair<const char*, const char*> cases[] = {
      {"llama-2-7b.json", "llama-2-7b"},
      {"mistral-7b.json", "mistral-7b"},
      {"qwen2-7b.json", "qwen2-7b"},
      {"gpt2.json", "gpt2"},
      {"bert-large-uncased.json", "bert-large"},
      {"mpt-7b.json", "mpt-7b"},
  };
  for (const auto& [file, preset] : cases) {
    Result<Model> m = LoadHfConfigFile(kFixtures + file);
    ASSERT_TRUE(m.ok()) << file << ": " << m.status().message();
    EXPECT_EQ(ParameterCount(*m), ParameterCount(Preset(preset))) << file;
  }
}

TEST(HfConfigTest, GptNeoXPythia1b) {
  Result<Model> m = LoadHfConfigFile(kFixtures + "pythia-1b.json");
  ASSERT_TRUE(m.ok()) << m.status().message();
  // EleutherAI/pythia-1b: 1,011,781,632 parameters (Biderman et al. 2023, Table 1: 1.01 B).
  EXPECT_EQ(ParameterCount(*m), 1011781632.0);
}

// head_dim where it is not hidden / heads: the published sizes of Qwen3 (model cards of
// Qwen/Qwen3-32B: 32.8 B, 31.2 B without embeddings; Qwen/Qwen3-30B-A3B: 30.5 B, 3.3 B activated,
// 29.9 B without embeddings; Qwen/Qwen3-235B-A22B: 235 B, 22 B activated, 234 B without
// embeddings; the fixtures are their config.json fields) and Mistral-Nemo (12 B: mistralai/
// Mistral-Nemo-Base-2407, 32 heads of 128 on a hidden of 5120). Read as hidden / heads, Qwen3-32B
// would come out at 30.5 B.
TEST(HfConfigTest, HeadDimWiderThanHiddenOverHeads) {
  struct Case {
    const char* file;
    double total, active, non_embedding;  // billions, as published (rounded)
  };
  for (const Case& c :
       {Case{"qwen3-32b.json", 32.8, 32.8, 31.2}, Case{"qwen3-30b-a3b.json", 30.5, 3.3, 29.9},
        Case{"qwen3-235b-a22b.json", 235, 22, 234},
        Case{"mistral-nemo-12b.json", 12.2, 12.2, 10.9}}) {
    Result<Model> m = LoadHfConfigFile(kFixtures + c.file);
    ASSERT_TRUE(m.ok()) << c.file << ": " << m.status().message();
    EXPECT_EQ(HeadDim(*m), 128) << c.file;
    const double embeddings = 2.0 * static_cast<double>(m->vocab * m->hidden);  // untied
    // The cards round to 0.1 B (1 B above 100 B); 3.35 B active is the 30B-A3B's "3.3B".
    const double tolerance = c.total >= 100 ? 0.5 : 0.06;
    EXPECT_NEAR(ParameterCount(*m) / 1e9, c.total, tolerance) << c.file;
    EXPECT_NEAR(ActiveParameterCount(*m) / 1e9, c.active, tolerance) << c.file;
    EXPECT_NEAR((ParameterCount(*m) - embeddings) / 1e9, c.non_embedding, tolerance) << c.file;
  }
  // The same Qwen3-32B read as hidden / heads (no head_dim): q and o of 5120 x 5120.
  Result<Model> narrow = LoadHfConfigFile(kFixtures + "qwen3-32b.json");
  ASSERT_TRUE(narrow.ok());
  narrow->head_dim = 0;
  EXPECT_NEAR(ParameterCount(*narrow) / 1e9, 30.5, 0.05);
  // Qwen3-MoE layouts it does not model are refused, naming the field.
  Result<Model> sparse =
      ParseHfConfig(R"({"architectures": ["Qwen3MoeForCausalLM"], "hidden_size": 64,
        "num_hidden_layers": 2, "num_attention_heads": 2, "num_key_value_heads": 1,
        "head_dim": 32, "intermediate_size": 128, "moe_intermediate_size": 128,
        "vocab_size": 1000, "num_experts": 8, "num_experts_per_tok": 2,
        "decoder_sparse_step": 2})",
                    "c.json");
  ASSERT_FALSE(sparse.ok());
  EXPECT_NE(sparse.status().message().find("decoder_sparse_step"), std::string::npos)
      << sparse.status().message();
}

TEST(HfConfigTest, MissingFieldIsNamed) {
  Result<Model> m = LoadHfConfigFile(kFixtures + "missing-layers.json");
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("num_hidden_layers: missing"), std::string::npos)
      << m.status().message();
  EXPECT_NE(m.status().message().find("LlamaForCausalLM"), std::string::npos);
}

TEST(HfConfigTest, UnknownArchitectureIsNamed) {
  Result<Model> m = LoadHfConfigFile(kFixtures + "unknown-arch.json");
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("T5ForConditionalGeneration"), std::string::npos);
  Result<Model> none = ParseHfConfig("{\"hidden_size\": 4}", "c.json");
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("architectures: missing"), std::string::npos);
  EXPECT_FALSE(ParseHfConfig("{not json", "c.json").ok());
  EXPECT_FALSE(ParseHfConfig("[1,2]", "c.json").ok());
}

TEST(ValidateTest, RefusesInconsistentLayouts) {
  const Model m = Preset("llama-2-7b");
  Training t;
  t.tp = 2;
  t.dp = 4;
  t.global_batch = 8;
  t.framework = Framework::kMegatron;
  EXPECT_TRUE(Validate(m, t, 8).ok());
  // Frameworks only get the sharding they have: no ZeRO-1 under FSDP, no ZeRO-2 under
  // Megatron-LM. FSDP with tp (and pp) runs as torchtitan composes them.
  Training fsdp = t;
  fsdp.framework = Framework::kFsdp;
  EXPECT_TRUE(Validate(m, fsdp, 8).ok()) << Validate(m, fsdp, 8).message();
  fsdp.zero_stage = 1;
  EXPECT_NE(Validate(m, fsdp, 8).message().find("--framework fsdp cannot run"), std::string::npos);
  Training fsdp_3d = fsdp;
  fsdp_3d.zero_stage = 3;
  fsdp_3d.pp = 2;
  fsdp_3d.dp = 2;
  fsdp_3d.global_batch = 4;
  EXPECT_TRUE(Validate(m, fsdp_3d, 8).ok()) << Validate(m, fsdp_3d, 8).message();
  EXPECT_EQ(DefaultFrameworkFor(fsdp_3d), Framework::kFsdp);
  Training megatron_z2 = t;
  megatron_z2.zero_stage = 2;
  EXPECT_FALSE(Validate(m, megatron_z2, 8).ok());
  EXPECT_FALSE(FrameworkRunsLayout(Framework::kDeepSpeed, t));
  EXPECT_EQ(DefaultFrameworkFor(t), Framework::kMegatron);
  Status gpus = Validate(m, t, 16);
  EXPECT_NE(gpus.message().find("--gpus is 16"), std::string::npos) << gpus.message();
  Training heads = t;
  heads.tp = 3;
  heads.dp = 1;
  heads.global_batch = 1;
  EXPECT_NE(Validate(m, heads).message().find("must divide the attention heads"),
            std::string::npos);
  Training batch = t;
  batch.global_batch = 6;
  EXPECT_NE(Validate(m, batch).message().find("multiple of --micro-batch"), std::string::npos);
  // Uneven stages are accepted (layout_test.cc); an interleaved pipeline still needs pp x vpp to
  // divide the layers.
  Training layers = t;
  layers.pp = 3;
  layers.vpp = 2;
  layers.dp = 1;
  layers.global_batch = 1;
  EXPECT_NE(Validate(m, layers).message().find("divisible by --pp x --vpp"), std::string::npos);
  Training zero = t;
  zero.zero_stage = 4;
  EXPECT_FALSE(Validate(m, zero).ok());
}

TEST(ValidateTest, LearnedPositionsLimitTheSequence) {
  Training t;
  t.seq_len = 4096;
  EXPECT_NE(Validate(Preset("gpt2"), t).message().find("position table"), std::string::npos);
}

TEST(PrecisionTest, Tf32IsItsOwnPrecisionWithFp32Storage) {
  const Result<Precision> tf32 = ParsePrecision("TF32");
  ASSERT_TRUE(tf32.ok()) << tf32.status().message();
  EXPECT_EQ(*tf32, Precision::kTf32);
  EXPECT_EQ(PrecisionName(*tf32), "tf32");
  EXPECT_TRUE(IsFp32Storage(Precision::kTf32));
  EXPECT_TRUE(IsFp32Storage(Precision::kFp32));
  EXPECT_FALSE(IsFp32Storage(Precision::kBf16Mixed));
  EXPECT_NE(ParsePrecision("tf16").status().message().find("tf32"), std::string::npos);
}

}  // namespace
}  // namespace fulcrum::workload
