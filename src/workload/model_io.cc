#include "workload/model_io.h"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "core/parse.h"
#include "core/text_file.h"
#include "core/yaml.h"

namespace fulcrum::workload {
namespace {

// ---------------------------------------------------------------------------- preset YAML ---

// Whole numbers of a preset: layer counts, widths, vocabularies (2^53: exact in a double).
constexpr int64_t kMaxPresetInteger = int64_t{1} << 53;

const std::vector<std::string> kPresetKeys = {"name",
                                              "source",
                                              "kind",
                                              "layers",
                                              "hidden",
                                              "heads",
                                              "kv_heads",
                                              "head_dim",
                                              "ffn_hidden",
                                              "vocab",
                                              "max_seq_len",
                                              "sliding_window",
                                              "tied_embeddings",
                                              "mlp",
                                              "norm",
                                              "position",
                                              "linear_bias",
                                              "qkv_bias",
                                              "dropout",
                                              "type_vocab",
                                              "experts",
                                              "experts_per_token",
                                              "shared_experts",
                                              "expert_ffn_hidden",
                                              "dense_layers",
                                              "q_lora_rank",
                                              "kv_lora_rank",
                                              "qk_nope_head_dim",
                                              "qk_rope_head_dim",
                                              "v_head_dim",
                                              "parameters",
                                              "forward_flops_per_sample",
                                              "activation_bytes_per_sample",
                                              "forward_elements_per_sample",
                                              "depthwise_flops_per_sample",
                                              "weighted_layers",
                                              "image_size"};

template <typename Enum>
Result<Enum> YamlChoice(const YamlNode& node,
                        std::initializer_list<std::pair<const char*, Enum>> choices) {
  std::string expected;
  for (const auto& [name, value] : choices) {
    if (node.IsScalar() && ToLower(node.raw().Scalar()) == name) return value;
    expected += expected.empty() ? name : std::string(" | ") + name;
  }
  return node.Error(expected);
}

Status ApplyYamlKey(const std::string& key, const YamlNode& v, Model& m) {
  auto set_int = [&](int64_t& field) -> Status {
    FULCRUM_ASSIGN_OR_RETURN(field, v.Integer(0, kMaxPresetInteger, "a non-negative integer"));
    return Status::Ok();
  };
  auto set_bool = [&](bool& field) -> Status {
    FULCRUM_ASSIGN_OR_RETURN(field, v.Bool());
    return Status::Ok();
  };
  auto set_number = [&](double& field) -> Status {
    FULCRUM_ASSIGN_OR_RETURN(field, v.Number("a non-negative number", 0));
    return Status::Ok();
  };
  if (key == "name") {
    FULCRUM_ASSIGN_OR_RETURN(m.name, v.Text());
  } else if (key == "source") {
    FULCRUM_ASSIGN_OR_RETURN(m.source, v.Text());
  } else if (key == "kind") {
    FULCRUM_ASSIGN_OR_RETURN(m.kind, YamlChoice<ModelKind>(v, {{"decoder", ModelKind::kDecoder},
                                                               {"encoder", ModelKind::kEncoder},
                                                               {"generic", ModelKind::kGeneric}}));
  } else if (key == "mlp") {
    FULCRUM_ASSIGN_OR_RETURN(m.mlp,
                             YamlChoice<MlpKind>(v, {{"gelu", MlpKind::kGelu},
                                                     {"swiglu", MlpKind::kSwiglu},
                                                     {"squared-relu", MlpKind::kSquaredRelu}}));
  } else if (key == "norm") {
    FULCRUM_ASSIGN_OR_RETURN(
        m.norm, YamlChoice<NormKind>(v, {{"layernorm", NormKind::kLayerNorm},
                                         {"layernorm-no-bias", NormKind::kLayerNormNoBias},
                                         {"rmsnorm", NormKind::kRmsNorm}}));
  } else if (key == "position") {
    FULCRUM_ASSIGN_OR_RETURN(m.position,
                             YamlChoice<PositionKind>(v, {{"learned", PositionKind::kLearned},
                                                          {"rotary", PositionKind::kRotary},
                                                          {"alibi", PositionKind::kAlibi}}));
  } else if (key == "layers") {
    return set_int(m.layers);
  } else if (key == "hidden") {
    return set_int(m.hidden);
  } else if (key == "heads") {
    return set_int(m.heads);
  } else if (key == "kv_heads") {
    return set_int(m.kv_heads);
  } else if (key == "head_dim") {
    return set_int(m.head_dim);
  } else if (key == "ffn_hidden") {
    return set_int(m.ffn_hidden);
  } else if (key == "vocab") {
    return set_int(m.vocab);
  } else if (key == "max_seq_len") {
    return set_int(m.max_seq_len);
  } else if (key == "sliding_window") {
    return set_int(m.sliding_window);
  } else if (key == "type_vocab") {
    return set_int(m.type_vocab);
  } else if (key == "experts") {
    return set_int(m.experts);
  } else if (key == "experts_per_token") {
    return set_int(m.experts_per_token);
  } else if (key == "shared_experts") {
    return set_int(m.shared_experts);
  } else if (key == "expert_ffn_hidden") {
    return set_int(m.expert_ffn_hidden);
  } else if (key == "dense_layers") {
    return set_int(m.dense_layers);
  } else if (key == "q_lora_rank") {
    return set_int(m.q_lora_rank);
  } else if (key == "kv_lora_rank") {
    return set_int(m.kv_lora_rank);
  } else if (key == "qk_nope_head_dim") {
    return set_int(m.qk_nope_head_dim);
  } else if (key == "qk_rope_head_dim") {
    return set_int(m.qk_rope_head_dim);
  } else if (key == "v_head_dim") {
    return set_int(m.v_head_dim);
  } else if (key == "tied_embeddings") {
    return set_bool(m.tied_embeddings);
  } else if (key == "linear_bias") {
    return set_bool(m.linear_bias);
  } else if (key == "qkv_bias") {
    return set_bool(m.qkv_bias);
  } else if (key == "dropout") {
    return set_bool(m.dropout);
  } else if (key == "parameters") {
    return set_number(m.generic_parameters);
  } else if (key == "forward_flops_per_sample") {
    return set_number(m.generic_forward_flops_per_sample);
  } else if (key == "activation_bytes_per_sample") {
    return set_number(m.generic_activation_bytes_per_sample);
  } else if (key == "forward_elements_per_sample") {
    return set_number(m.generic_forward_elements_per_sample);
  } else if (key == "depthwise_flops_per_sample") {
    return set_number(m.generic_depthwise_flops_per_sample);
  } else if (key == "weighted_layers") {
    return set_int(m.generic_weighted_layers);
  } else if (key == "image_size") {
    return set_int(m.generic_image_size);
  }
  return Status::Ok();  // CheckKeys refused every other key
}

Result<Model> ParseModelYamlNode(const YamlNode& root, const std::string& origin) {
  FULCRUM_RETURN_IF_ERROR(root.CheckKeys(kPresetKeys, "a mapping of model fields"));
  Model m;
  FULCRUM_ASSIGN_OR_RETURN(auto entries, root.Entries());
  for (const auto& [key, value] : entries) FULCRUM_RETURN_IF_ERROR(ApplyYamlKey(key, value, m));
  if (m.name.empty()) return Status::InvalidInput(origin + ": name: missing");
  if (m.source.empty())
    return Status::InvalidInput(origin + ": source: missing (every preset names its source)");
  if (m.kv_heads == 0) m.kv_heads = m.heads;
  Status valid = ValidateModel(m);
  if (!valid.ok()) return Status::InvalidInput(origin + ": " + valid.message());
  return m;
}

// ---------------------------------------------------------------------------- HF config ----

class HfReader {
 public:
  HfReader(const nlohmann::json& doc, std::string origin, std::string arch)
      : doc_(doc), origin_(std::move(origin)), arch_(std::move(arch)) {}

  Result<int64_t> Int(const char* key) const {
    auto it = doc_.find(key);
    if (it == doc_.end() || it->is_null()) {
      return Status::InvalidInput(origin_ + ": " + key + ": missing (required for " + arch_ + ")");
    }
    if (!it->is_number_integer() || it->get<int64_t>() <= 0 ||
        it->get<int64_t>() > (int64_t{1} << 40)) {
      return Status::InvalidInput(origin_ + ": " + key + ": expected a positive integer, found " +
                                  it->dump());
    }
    return it->get<int64_t>();
  }
  Result<int64_t> IntOr(const char* key, int64_t fallback) const {
    auto it = doc_.find(key);
    if (it == doc_.end() || it->is_null()) return fallback;
    return Int(key);
  }
  Result<bool> BoolOr(const char* key, bool fallback) const {
    auto it = doc_.find(key);
    if (it == doc_.end() || it->is_null()) return fallback;
    if (!it->is_boolean()) {
      return Status::InvalidInput(origin_ + ": " + key + ": expected true or false, found " +
                                  it->dump());
    }
    return it->get<bool>();
  }
  Status Unsupported(const char* key, const char* expected) const {
    auto it = doc_.find(key);
    return Status::InvalidInput(origin_ + ": " + key + ": expected " + expected + " for " + arch_ +
                                ", found " +
                                (it == doc_.end() ? std::string("nothing") : it->dump()));
  }
  double NumberOr(const char* key, double fallback) const {
    auto it = doc_.find(key);
    return it != doc_.end() && it->is_number() ? it->get<double>() : fallback;
  }
  // Whether `key` is a list with at least one entry.
  bool NonEmptyList(const char* key) const {
    auto it = doc_.find(key);
    return it != doc_.end() && it->is_array() && !it->empty();
  }

 private:
  const nlohmann::json& doc_;
  std::string origin_;
  std::string arch_;
};

// Which LLaMA-like config: Llama and Mistral, Qwen2 (q/k/v biases always), Qwen3 (per-head
// q/k RMSNorms of head_dim, not counted: 2 x 128 weights a layer).
enum class LlamaFlavor { kLlama, kQwen2, kQwen3 };

// LLaMA-family configs (LlamaConfig, MistralConfig, Qwen2Config, Qwen3Config in transformers):
// gated MLP, RMSNorm, rotary positions, untied embeddings by default. The dimensions that LLaMA-,
// NeoX- and BERT-style configs name alike: num_hidden_layers, hidden_size, num_attention_heads,
// intermediate_size, vocab_size; kv heads from `kv_heads_field` when given (default: one per
// attention head).
Status ReadTransformerDims(const HfReader& r, const char* kv_heads_field, Model& m) {
  FULCRUM_ASSIGN_OR_RETURN(m.layers, r.Int("num_hidden_layers"));
  FULCRUM_ASSIGN_OR_RETURN(m.hidden, r.Int("hidden_size"));
  FULCRUM_ASSIGN_OR_RETURN(m.heads, r.Int("num_attention_heads"));
  m.kv_heads = m.heads;
  if (*kv_heads_field != '\0') {
    FULCRUM_ASSIGN_OR_RETURN(m.kv_heads, r.IntOr(kv_heads_field, m.heads));
  }
  FULCRUM_ASSIGN_OR_RETURN(m.ffn_hidden, r.Int("intermediate_size"));
  FULCRUM_ASSIGN_OR_RETURN(m.vocab, r.Int("vocab_size"));
  return Status::Ok();
}

Result<Model> LlamaLike(const HfReader& r, LlamaFlavor flavor) {
  const bool qwen = flavor != LlamaFlavor::kLlama;
  Model m;
  m.mlp = MlpKind::kSwiglu;
  m.norm = NormKind::kRmsNorm;
  m.position = PositionKind::kRotary;
  FULCRUM_RETURN_IF_ERROR(ReadTransformerDims(r, "num_key_value_heads", m));
  // head_dim (LlamaConfig, MistralConfig and Qwen3Config name it; null or absent = hidden /
  // heads): Qwen3-32B's 64 heads of 128 on a hidden of 5120, Mistral-Nemo's 32 of 128 on 5120.
  FULCRUM_ASSIGN_OR_RETURN(const int64_t head_dim, r.IntOr("head_dim", 0));
  if (m.heads > 0 && head_dim != m.hidden / m.heads) m.head_dim = head_dim;
  FULCRUM_ASSIGN_OR_RETURN(m.max_seq_len, r.IntOr("max_position_embeddings", 0));
  FULCRUM_ASSIGN_OR_RETURN(m.tied_embeddings, r.BoolOr("tie_word_embeddings", false));
  FULCRUM_ASSIGN_OR_RETURN(bool attention_bias, r.BoolOr("attention_bias", false));
  // Qwen2 always has q/k/v biases; Qwen3 has them only with attention_bias, as Llama
  // (transformers Qwen3Config: attention_bias=False).
  m.qkv_bias = flavor == LlamaFlavor::kQwen2 || attention_bias;
  m.dropout = r.NumberOr("attention_dropout", 0) > 0;
  // Mistral sets sliding_window (null = full attention); Qwen2 and Qwen3 carry one that applies
  // only with use_sliding_window (transformers Qwen2Config, Qwen3Config).
  FULCRUM_ASSIGN_OR_RETURN(const bool use_window, r.BoolOr("use_sliding_window", !qwen));
  if (use_window) {
    FULCRUM_ASSIGN_OR_RETURN(m.sliding_window, r.IntOr("sliding_window", 0));
  }
  return m;
}

// Mixtral (transformers MixtralConfig): LLaMA-like attention, num_local_experts experts of
// intermediate_size, top-k num_experts_per_tok, in every layer.
Result<Model> Mixtral(const HfReader& r) {
  FULCRUM_ASSIGN_OR_RETURN(Model m, LlamaLike(r, LlamaFlavor::kLlama));
  FULCRUM_ASSIGN_OR_RETURN(m.experts, r.Int("num_local_experts"));
  FULCRUM_ASSIGN_OR_RETURN(m.experts_per_token, r.Int("num_experts_per_tok"));
  return m;
}

// DeepSeekMoE (deepseek-ai/deepseek-moe-16b-base configuration_deepseek.py, DeepseekForCausalLM):
// n_routed_experts experts and n_shared_experts shared ones of moe_intermediate_size, top-k
// num_experts_per_tok; the first first_k_dense_replace layers keep a dense MLP of
// intermediate_size.
Result<Model> DeepSeekMoe(const HfReader& r) {
  FULCRUM_ASSIGN_OR_RETURN(Model m, LlamaLike(r, LlamaFlavor::kLlama));
  FULCRUM_ASSIGN_OR_RETURN(m.experts, r.Int("n_routed_experts"));
  FULCRUM_ASSIGN_OR_RETURN(m.experts_per_token, r.Int("num_experts_per_tok"));
  FULCRUM_ASSIGN_OR_RETURN(m.shared_experts, r.IntOr("n_shared_experts", 0));
  FULCRUM_ASSIGN_OR_RETURN(m.expert_ffn_hidden, r.Int("moe_intermediate_size"));
  FULCRUM_ASSIGN_OR_RETURN(m.dense_layers, r.IntOr("first_k_dense_replace", 0));
  return m;
}

// DeepSeek-V2 / V3 (HF transformers DeepseekV2Config, DeepseekV3Config: huggingface/
// transformers@43e8548fef configuration_deepseek_v2.py, @0fc683d1cd configuration_deepseek_v3.py):
// DeepSeekMoE's experts with multi-head latent attention (q_lora_rank null = no query
// compression, DeepSeek-V2-Lite). A MoE MLP in every layer after the dense ones (moe_layer_freq
// 1; other frequencies are refused). n_group / topk_group (V3's node-limited routing) are not read
// here: they bound the nodes a token reaches only where the groups are the layout's nodes, which
// `estimate --moe-router-num-groups / --moe-router-group-topk` says. Not modelled: V3's sigmoid
// scoring and the e_score_correction_bias of n_routed_experts per layer (router parameters are
// counted as hidden x experts), and the multi-token-prediction
// modules (num_nextn_predict_layers: DeepSeek-V3's 14 B MTP weights, arXiv 2412.19437 section
// 2.2, are neither counted nor trained here; the published 671 B excludes them).
Result<Model> DeepSeekMla(const HfReader& r) {
  FULCRUM_ASSIGN_OR_RETURN(Model m, DeepSeekMoe(r));
  FULCRUM_ASSIGN_OR_RETURN(const int64_t frequency, r.IntOr("moe_layer_freq", 1));
  if (frequency != 1) return r.Unsupported("moe_layer_freq", "1 (a MoE MLP in every layer)");
  FULCRUM_ASSIGN_OR_RETURN(m.q_lora_rank, r.IntOr("q_lora_rank", 0));
  FULCRUM_ASSIGN_OR_RETURN(m.kv_lora_rank, r.Int("kv_lora_rank"));
  FULCRUM_ASSIGN_OR_RETURN(m.qk_nope_head_dim, r.Int("qk_nope_head_dim"));
  FULCRUM_ASSIGN_OR_RETURN(m.qk_rope_head_dim, r.Int("qk_rope_head_dim"));
  FULCRUM_ASSIGN_OR_RETURN(m.v_head_dim, r.Int("v_head_dim"));
  return m;
}

// Qwen's MoE configs (Qwen2MoeConfig, Qwen3MoeConfig) name the routed experts alike.
Result<Model> QwenMoeExperts(const HfReader& r, LlamaFlavor flavor) {
  FULCRUM_ASSIGN_OR_RETURN(Model m, LlamaLike(r, flavor));
  FULCRUM_ASSIGN_OR_RETURN(m.experts, r.Int("num_experts"));
  FULCRUM_ASSIGN_OR_RETURN(m.experts_per_token, r.Int("num_experts_per_tok"));
  FULCRUM_ASSIGN_OR_RETURN(m.expert_ffn_hidden, r.Int("moe_intermediate_size"));
  return m;
}

// Qwen2-MoE (transformers Qwen2MoeConfig): num_experts of moe_intermediate_size, top-k
// num_experts_per_tok, one shared expert of shared_expert_intermediate_size, counted as that
// many moe_intermediate_size experts (Qwen1.5-MoE-A2.7B: 5632 = 4 x 1408); its 1 x hidden gate
// is ignored.
Result<Model> Qwen2Moe(const HfReader& r) {
  FULCRUM_ASSIGN_OR_RETURN(Model m, QwenMoeExperts(r, LlamaFlavor::kQwen2));
  FULCRUM_ASSIGN_OR_RETURN(const int64_t shared, r.IntOr("shared_expert_intermediate_size", 0));
  m.shared_experts = shared / m.expert_ffn_hidden;
  return m;
}

// Qwen3-MoE (transformers Qwen3MoeConfig): Qwen3's attention, num_experts of
// moe_intermediate_size, top-k num_experts_per_tok, no shared expert, in every layer
// (decoder_sparse_step 1 and no mlp_only_layers, as Qwen3-30B-A3B and Qwen3-235B-A22B ship;
// other layouts are refused).
Result<Model> Qwen3Moe(const HfReader& r) {
  FULCRUM_ASSIGN_OR_RETURN(Model m, QwenMoeExperts(r, LlamaFlavor::kQwen3));
  FULCRUM_ASSIGN_OR_RETURN(const int64_t step, r.IntOr("decoder_sparse_step", 1));
  if (step != 1) return r.Unsupported("decoder_sparse_step", "1 (a MoE MLP in every layer)");
  if (r.NonEmptyList("mlp_only_layers")) {
    return r.Unsupported("mlp_only_layers", "[] (a MoE MLP in every layer)");
  }
  return m;
}

Result<Model> Gpt2(const HfReader& r) {
  Model m;
  m.norm = NormKind::kLayerNorm;
  m.position = PositionKind::kLearned;
  m.linear_bias = true;
  m.tied_embeddings = true;
  FULCRUM_ASSIGN_OR_RETURN(m.layers, r.Int("n_layer"));
  FULCRUM_ASSIGN_OR_RETURN(m.hidden, r.Int("n_embd"));
  FULCRUM_ASSIGN_OR_RETURN(m.heads, r.Int("n_head"));
  m.kv_heads = m.heads;
  FULCRUM_ASSIGN_OR_RETURN(m.ffn_hidden, r.IntOr("n_inner", 4 * m.hidden));
  FULCRUM_ASSIGN_OR_RETURN(m.vocab, r.Int("vocab_size"));
  FULCRUM_ASSIGN_OR_RETURN(m.max_seq_len, r.Int("n_positions"));
  FULCRUM_ASSIGN_OR_RETURN(m.tied_embeddings, r.BoolOr("tie_word_embeddings", true));
  m.dropout = r.NumberOr("resid_pdrop", 0.1) > 0;
  return m;
}

Result<Model> GptNeoX(const HfReader& r) {
  Model m;
  m.norm = NormKind::kLayerNorm;
  m.position = PositionKind::kRotary;
  m.linear_bias = true;
  FULCRUM_RETURN_IF_ERROR(ReadTransformerDims(r, "", m));
  FULCRUM_ASSIGN_OR_RETURN(m.max_seq_len, r.IntOr("max_position_embeddings", 0));
  FULCRUM_ASSIGN_OR_RETURN(m.tied_embeddings, r.BoolOr("tie_word_embeddings", false));
  m.dropout = r.NumberOr("hidden_dropout", 0) > 0;
  return m;
}

Result<Model> Bert(const HfReader& r) {
  Model m;
  m.kind = ModelKind::kEncoder;
  m.norm = NormKind::kLayerNorm;
  m.position = PositionKind::kLearned;
  m.linear_bias = true;
  m.tied_embeddings = true;
  FULCRUM_RETURN_IF_ERROR(ReadTransformerDims(r, "", m));
  FULCRUM_ASSIGN_OR_RETURN(m.max_seq_len, r.Int("max_position_embeddings"));
  FULCRUM_ASSIGN_OR_RETURN(m.type_vocab, r.IntOr("type_vocab_size", 2));
  m.dropout = r.NumberOr("hidden_dropout_prob", 0.1) > 0;
  return m;
}

// MPT (mosaicml/mpt-7b configuration_mpt.py): no biases by default, LayerNorm without bias,
// ALiBi, tied embeddings, MLP width d_model * expansion_ratio.
Result<Model> Mpt(const HfReader& r) {
  Model m;
  m.position = PositionKind::kAlibi;
  m.tied_embeddings = true;
  FULCRUM_ASSIGN_OR_RETURN(m.layers, r.Int("n_layers"));
  FULCRUM_ASSIGN_OR_RETURN(m.hidden, r.Int("d_model"));
  FULCRUM_ASSIGN_OR_RETURN(m.heads, r.Int("n_heads"));
  m.kv_heads = m.heads;
  FULCRUM_ASSIGN_OR_RETURN(int64_t expansion, r.IntOr("expansion_ratio", 4));
  m.ffn_hidden = expansion * m.hidden;
  FULCRUM_ASSIGN_OR_RETURN(m.vocab, r.Int("vocab_size"));
  FULCRUM_ASSIGN_OR_RETURN(m.max_seq_len, r.IntOr("max_seq_len", 2048));
  FULCRUM_ASSIGN_OR_RETURN(bool no_bias, r.BoolOr("no_bias", true));
  m.linear_bias = !no_bias;
  m.norm = no_bias ? NormKind::kLayerNormNoBias : NormKind::kLayerNorm;
  return m;
}

constexpr const char* kSupported =
    "LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM, MixtralForCausalLM, "
    "DeepseekForCausalLM, DeepseekV2ForCausalLM, DeepseekV3ForCausalLM, Qwen2MoeForCausalLM, "
    "Qwen3MoeForCausalLM, "
    "GPT2LMHeadModel, GPTNeoXForCausalLM, "
    "BertForMaskedLM, MptForCausalLM";

Result<std::string> Architecture(const nlohmann::json& doc, const std::string& origin) {
  auto it = doc.find("architectures");
  if (it != doc.end() && it->is_array() && !it->empty() && (*it)[0].is_string()) {
    return (*it)[0].get<std::string>();
  }
  auto type = doc.find("model_type");
  if (type != doc.end() && type->is_string()) {
    const std::string t = type->get<std::string>();
    if (t == "llama") return std::string("LlamaForCausalLM");
    if (t == "mistral") return std::string("MistralForCausalLM");
    if (t == "qwen2") return std::string("Qwen2ForCausalLM");
    if (t == "mixtral") return std::string("MixtralForCausalLM");
    if (t == "deepseek") return std::string("DeepseekForCausalLM");
    if (t == "deepseek_v2") return std::string("DeepseekV2ForCausalLM");
    if (t == "deepseek_v3") return std::string("DeepseekV3ForCausalLM");
    if (t == "qwen2_moe") return std::string("Qwen2MoeForCausalLM");
    if (t == "qwen3") return std::string("Qwen3ForCausalLM");
    if (t == "qwen3_moe") return std::string("Qwen3MoeForCausalLM");
    if (t == "gpt2") return std::string("GPT2LMHeadModel");
    if (t == "gpt_neox") return std::string("GPTNeoXForCausalLM");
    if (t == "bert") return std::string("BertForMaskedLM");
    if (t == "mpt") return std::string("MptForCausalLM");
  }
  return Status::InvalidInput(origin + ": architectures: missing (expected a list naming one of " +
                              kSupported + ", or a known model_type)");
}

}  // namespace

Result<Model> ParseModelYaml(std::string_view text, const std::string& origin) {
  FULCRUM_ASSIGN_OR_RETURN(YamlNode root, LoadYaml(text, origin));
  return ParseModelYamlNode(root, origin);
}

Result<Model> ParseHfConfig(std::string_view text, const std::string& origin) {
  const nlohmann::json doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return Status::InvalidInput(origin + ": not valid JSON");
  if (!doc.is_object()) return Status::InvalidInput(origin + ": expected a JSON object");
  FULCRUM_ASSIGN_OR_RETURN(std::string arch, Architecture(doc, origin));
  const HfReader reader(doc, origin, arch);
  Result<Model> model = Status::Internal("unset");
  // Hub repositories with custom code spell some classes differently (mosaicml: MPTForCausalLM).
  if (EqualsIgnoreCase(arch, "MptForCausalLM")) arch = "MptForCausalLM";
  if (arch == "LlamaForCausalLM" || arch == "MistralForCausalLM") {
    model = LlamaLike(reader, LlamaFlavor::kLlama);
  } else if (arch == "Qwen2ForCausalLM") {
    model = LlamaLike(reader, LlamaFlavor::kQwen2);
  } else if (arch == "Qwen3ForCausalLM") {
    model = LlamaLike(reader, LlamaFlavor::kQwen3);
  } else if (arch == "Qwen3MoeForCausalLM") {
    model = Qwen3Moe(reader);
  } else if (arch == "MixtralForCausalLM") {
    model = Mixtral(reader);
  } else if (arch == "DeepseekForCausalLM") {
    model = DeepSeekMoe(reader);
  } else if (arch == "DeepseekV2ForCausalLM" || arch == "DeepseekV3ForCausalLM") {
    model = DeepSeekMla(reader);
  } else if (arch == "Qwen2MoeForCausalLM") {
    model = Qwen2Moe(reader);
  } else if (arch == "GPT2LMHeadModel") {
    model = Gpt2(reader);
  } else if (arch == "GPTNeoXForCausalLM") {
    model = GptNeoX(reader);
  } else if (arch == "BertForMaskedLM") {
    model = Bert(reader);
  } else if (arch == "MptForCausalLM") {
    model = Mpt(reader);
  } else {
    return Status::InvalidInput(origin + ": architectures: '" + arch +
                                "' is not supported; expected one of " + kSupported);
  }
  if (!model.ok()) return model.status();
  auto name = doc.find("_name_or_path");
  model->name = name != doc.end() && name->is_string() && !name->get<std::string>().empty()
                    ? name->get<std::string>()
                    : std::filesystem::path(origin).parent_path().filename().string();
  if (model->name.empty()) model->name = "hf-config";
  model->source = origin + " (" + arch + ")";
  Status valid = ValidateModel(*model);
  if (!valid.ok()) return Status::InvalidInput(origin + ": " + valid.message());
  return model;
}

Result<Model> LoadHfConfigFile(const std::string& path) {
  FULCRUM_ASSIGN_OR_RETURN(std::string text, ReadTextFile(path, "an HF config file (JSON)"));
  return ParseHfConfig(text, path);
}

std::vector<std::string> ListModelPresets(const std::string& catalog_dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(catalog_dir + "/models", ec)) {
    if (entry.path().extension() == ".yaml") names.push_back(entry.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

Result<Model> LoadModelPreset(const std::string& catalog_dir, std::string_view name) {
  const std::vector<std::string> names = ListModelPresets(catalog_dir);
  for (const std::string& candidate : names) {
    if (!EqualsIgnoreCase(candidate, name)) continue;
    const std::string path = catalog_dir + "/models/" + candidate + ".yaml";
    FULCRUM_ASSIGN_OR_RETURN(std::string text, ReadTextFile(path, "a model preset (YAML)"));
    return ParseModelYaml(text, path);
  }
  std::string list;
  for (const std::string& candidate : names) list += (list.empty() ? "" : ", ") + candidate;
  return Status::NotFound("no model preset '" + std::string(name) + "' in " + catalog_dir +
                          "/models; known: " + (list.empty() ? "(none)" : list) +
                          " (or use --hf-config FILE, or --layers/--hidden/--heads)");
}

}  // namespace fulcrum::workload
