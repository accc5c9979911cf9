#include "workload/model.h"

#include <algorithm>
#include <string>

namespace fulcrum::workload {
namespace {

double NormParams(const Model& m) {
  const double h = static_cast<double>(m.hidden);
  return m.norm == NormKind::kLayerNorm ? 2 * h : h;
}

// MLA's extra parameters beside the projection weights: the RMSNorms of the two latents
// (q_a_layernorm, kv_a_layernorm) and, with attention_bias, the biases of q_a_proj,
// kv_a_proj_with_mqa and o_proj (q_b_proj and kv_b_proj have none; modeling_deepseek_v3.py).
double MlaNormAndBiasParams(const Model& m) {
  const double q_lora = static_cast<double>(m.q_lora_rank);
  const double kv_lora = static_cast<double>(m.kv_lora_rank);
  double params = q_lora + kv_lora;
  if (m.qkv_bias || m.linear_bias) {
    params += (q_lora > 0 ? q_lora : 0) + static_cast<double>(MlaLatentDim(m)) +
              static_cast<double>(m.hidden);
  }
  return params;
}

// Sum of in x out over a layer's attention projection matrices (integer products below 2^53:
// exact in any order).
double ProjectionParams(const AttentionMatrices& matrices) {
  double params = 0;
  for (int i = 0; i < matrices.count; ++i) {
    const AttentionMatrix& a = matrices.items[static_cast<size_t>(i)];
    params += static_cast<double>(a.in) * static_cast<double>(a.out);
  }
  return params;
}

// A layer's attention parameters: the projection weights (`projection`,
// AttentionProjectionParameterCount) with their biases and MLA's latent norms.
double AttentionParams(const Model& m, double projection) {
  double params = projection;
  if (IsMla(m)) return params + MlaNormAndBiasParams(m);
  // Biases: q's of QDim (hidden unless head_dim says otherwise), k's and v's, o's of hidden.
  const double q = static_cast<double>(QDim(m));
  const double kv = static_cast<double>(KvDim(m));
  if (m.linear_bias) {
    params += q + 2 * kv + static_cast<double>(m.hidden);
  } else if (m.qkv_bias) {
    params += q + 2 * kv;
  }
  return params;
}

// One MLP of intermediate size `ffn`.
double MlpParams(const Model& m, int64_t ffn) {
  const double h = static_cast<double>(m.hidden);
  const double f = static_cast<double>(ffn);
  const bool gated = m.mlp == MlpKind::kSwiglu;
  double params = (gated ? 3 : 2) * h * f;
  if (m.linear_bias) params += (gated ? 2 : 1) * f + h;
  return params;
}

// A MoE layer's MLP part: `routed` of the routed experts + the shared experts + the router
// (Mixtral's gate and DeepSeek's gate: hidden x experts, no bias; HF modeling_mixtral.py,
// DeepSeekMoE modeling_deepseek.py MoEGate).
double MoeMlpParams(const Model& m, double routed) {
  const double expert = MlpParams(m, ExpertFfnHidden(m));
  return (routed + static_cast<double>(m.shared_experts)) * expert +
         static_cast<double>(m.hidden) * static_cast<double>(m.experts);
}

// Mean over the layers of `attention` (AttentionParams) + norms + `moe_mlp` (MoE layers) or the
// dense MLP.
double MeanLayerParams(const Model& m, double attention, double moe_mlp) {
  const double fixed = attention + 2 * NormParams(m);
  if (!IsMoe(m)) return fixed + MlpParams(m, m.ffn_hidden);
  const double layers = static_cast<double>(m.layers);
  const double dense = static_cast<double>(m.dense_layers);
  return fixed + (dense * MlpParams(m, m.ffn_hidden) + (layers - dense) * moe_mlp) / layers;
}

// The mean layer of a transformer whose MoE layers use `routed` of their routed experts (all of
// them: LayerParameterCount; top-k: ActiveLayerParameterCount).
double LayerParams(const Model& m, double attention, int64_t routed) {
  return MeanLayerParams(m, attention, IsMoe(m) ? MoeMlpParams(m, static_cast<double>(routed)) : 0);
}

// The MLP part of ActiveLayerMatmulParameterCount: weights only, of the experts a token is routed
// to (and the shared ones, and the router) in a MoE layer.
double ActiveMlpMatmulParams(const Model& m) {
  const double h = static_cast<double>(m.hidden);
  const double ffn_mats = m.mlp == MlpKind::kSwiglu ? 3 : 2;
  const double f = static_cast<double>(m.ffn_hidden);
  double mlp_params = ffn_mats * h * f;
  if (IsMoe(m)) {
    const double fe = static_cast<double>(ExpertFfnHidden(m));
    const double active =
        static_cast<double>(m.experts_per_token + m.shared_experts) * ffn_mats * h * fe +
        h * static_cast<double>(m.experts);
    const double w = static_cast<double>(m.dense_layers) / static_cast<double>(m.layers);
    mlp_params = w * mlp_params + (1 - w) * active;
  }
  return mlp_params;
}

// A transformer's parameters from its mean layer's, its embeddings' and its head's.
double TotalParams(const Model& m, double layer, double embedding, double head) {
  return static_cast<double>(m.layers) * layer + embedding + head;
}

}  // namespace

AttentionMatrices AttentionProjectionMatrices(const Model& m) {
  AttentionMatrices out;
  if (m.kind == ModelKind::kGeneric) return out;
  auto add = [&out](AttentionRole role, int64_t in, int64_t width, bool split) {
    out.items[static_cast<size_t>(out.count++)] = {role, in, width, split};
  };
  if (!IsMla(m)) {
    add(AttentionRole::kQuery, m.hidden, QDim(m), true);
    add(AttentionRole::kKey, m.hidden, KDim(m), true);
    add(AttentionRole::kValue, m.hidden, VDim(m), true);
  } else {
    if (m.q_lora_rank > 0) {
      add(AttentionRole::kQuery, m.hidden, m.q_lora_rank, false);
      add(AttentionRole::kQuery, m.q_lora_rank, QDim(m), true);
    } else {
      add(AttentionRole::kQuery, m.hidden, QDim(m), true);
    }
    add(AttentionRole::kKeyValue, m.hidden, MlaLatentDim(m), false);
    add(AttentionRole::kKeyValue, m.kv_lora_rank, m.heads * (m.qk_nope_head_dim + m.v_head_dim),
        true);
  }
  add(AttentionRole::kOutput, AttentionOutDim(m), m.hidden, true);
  return out;
}

double AttentionProjectionParameterCount(const Model& m) {
  return ProjectionParams(AttentionProjectionMatrices(m));  // none for generic models: 0
}

double LayerParameterCount(const Model& m) {
  if (m.kind == ModelKind::kGeneric) return 0;
  return LayerParams(m, AttentionParams(m, AttentionProjectionParameterCount(m)), m.experts);
}

double ActiveLayerParameterCount(const Model& m) {
  if (m.kind == ModelKind::kGeneric) return 0;
  return LayerParams(m, AttentionParams(m, AttentionProjectionParameterCount(m)),
                     m.experts_per_token);
}

double ActiveLayerMatmulParameterCount(const Model& m) {
  if (m.kind == ModelKind::kGeneric) return 0;
  return AttentionProjectionParameterCount(m) + ActiveMlpMatmulParams(m);
}

double RoutedExpertParameterCount(const Model& m) {
  if (!IsMoe(m) || m.kind == ModelKind::kGeneric) return 0;
  return static_cast<double>(MoeLayerCount(m)) * static_cast<double>(m.experts) *
         MlpParams(m, ExpertFfnHidden(m));
}

double ActiveParameterCount(const Model& m) {
  if (m.kind == ModelKind::kGeneric) return m.generic_parameters;
  return TotalParams(m, ActiveLayerParameterCount(m), EmbeddingParameterCount(m),
                     HeadParameterCount(m));
}

double EmbeddingParameterCount(const Model& m) {
  if (m.kind == ModelKind::kGeneric) return 0;
  const double h = static_cast<double>(m.hidden);
  double params = static_cast<double>(m.vocab) * h;
  if (m.position == PositionKind::kLearned) params += static_cast<double>(m.max_seq_len) * h;
  params += static_cast<double>(m.type_vocab) * h;
  if (m.kind == ModelKind::kEncoder) params += NormParams(m);  // BERT's embedding LayerNorm
  return params;
}

double HeadParameterCount(const Model& m) {
  if (m.kind == ModelKind::kGeneric) return 0;
  const double h = static_cast<double>(m.hidden);
  const double v = static_cast<double>(m.vocab);
  double params = m.tied_embeddings ? 0 : v * h;
  if (m.kind == ModelKind::kEncoder) {
    // BertForMaskedLM: post-LN layers (no final norm); MLM head = dense h*h + bias, LayerNorm,
    // decoder bias over the vocabulary (decoder weight tied to the word embeddings).
    params += h * h + h + NormParams(m) + v;
  } else {
    params += NormParams(m);  // final norm
  }
  return params;
}

double ParameterCount(const Model& m) {
  if (m.kind == ModelKind::kGeneric) return m.generic_parameters;
  return TotalParams(m, LayerParameterCount(m), EmbeddingParameterCount(m), HeadParameterCount(m));
}

double LargestTensorParameterCount(const Model& m) {
  if (m.kind == ModelKind::kGeneric) return m.generic_parameters;
  const double h = static_cast<double>(m.hidden);
  // The query projection (MLA: q_b_proj, or q_proj without q compression) and o_proj.
  const double q_in = m.q_lora_rank > 0 ? static_cast<double>(m.q_lora_rank) : h;
  const int64_t q = QDim(m);
  const int64_t out = IsMla(m) ? AttentionOutDim(m) : q;  // heads x head_dim both
  return std::max({static_cast<double>(m.vocab) * h, h * static_cast<double>(m.ffn_hidden),
                   q_in * static_cast<double>(q), h * static_cast<double>(out)});
}

ModelCounts CountModel(const Model& m) {
  ModelCounts c;
  c.attention_matrices = AttentionProjectionMatrices(m);
  c.attention_operand_width = AttentionOperandWidth(m);
  c.attention_projection_parameters = ProjectionParams(c.attention_matrices);
  c.embedding_parameters = EmbeddingParameterCount(m);
  c.head_parameters = HeadParameterCount(m);
  c.routed_expert_parameters = RoutedExpertParameterCount(m);
  c.largest_tensor_parameters = LargestTensorParameterCount(m);
  if (m.kind == ModelKind::kGeneric) {
    c.active_layer_matmul_parameters = ActiveLayerMatmulParameterCount(m);
    c.parameters = ParameterCount(m);
    c.active_parameters = ActiveParameterCount(m);
    return c;
  }
  // As the functions compute them, each part counted once.
  c.active_layer_matmul_parameters = c.attention_projection_parameters + ActiveMlpMatmulParams(m);
  const double attention = AttentionParams(m, c.attention_projection_parameters);
  c.layer_parameters = LayerParams(m, attention, m.experts);
  c.parameters = TotalParams(m, c.layer_parameters, c.embedding_parameters, c.head_parameters);
  c.active_parameters = TotalParams(m, LayerParams(m, attention, m.experts_per_token),
                                    c.embedding_parameters, c.head_parameters);
  return c;
}

Model AtImageSize(const Model& m, int64_t image_size) {
  if (m.kind != ModelKind::kGeneric || m.generic_image_size <= 0 || image_size <= 0 ||
      image_size == m.generic_image_size) {
    return m;
  }
  const double ratio = static_cast<double>(image_size) / static_cast<double>(m.generic_image_size);
  const double pixels = ratio * ratio;
  Model scaled = m;
  scaled.generic_forward_flops_per_sample *= pixels;
  scaled.generic_activation_bytes_per_sample *= pixels;
  scaled.generic_forward_elements_per_sample *= pixels;
  scaled.generic_depthwise_flops_per_sample *= pixels;
  scaled.generic_image_size = image_size;
  return scaled;
}

Status ValidateModel(const Model& m) {
  auto positive = [](const char* field, double value) -> Status {
    if (value > 0) return Status::Ok();
    return Status::InvalidInput(std::string("model: ") + field +
                                ": expected a positive number, found " +
                                std::to_string(static_cast<int64_t>(value)));
  };
  if (m.kind == ModelKind::kGeneric) {
    FULCRUM_RETURN_IF_ERROR(positive("parameters", m.generic_parameters));
    if (m.generic_forward_elements_per_sample < 0 || m.generic_depthwise_flops_per_sample < 0 ||
        m.generic_depthwise_flops_per_sample > m.generic_forward_flops_per_sample ||
        m.generic_weighted_layers < 0 || m.generic_image_size < 0) {
      return Status::InvalidInput(
          "model: forward_elements_per_sample, depthwise_flops_per_sample (at most "
          "forward_flops_per_sample), weighted_layers and image_size: expected >= 0");
    }
    return positive("forward_flops_per_sample", m.generic_forward_flops_per_sample);
  }
  FULCRUM_RETURN_IF_ERROR(positive("layers", static_cast<double>(m.layers)));
  FULCRUM_RETURN_IF_ERROR(positive("hidden", static_cast<double>(m.hidden)));
  FULCRUM_RETURN_IF_ERROR(positive("heads", static_cast<double>(m.heads)));
  FULCRUM_RETURN_IF_ERROR(positive("ffn_hidden", static_cast<double>(m.ffn_hidden)));
  FULCRUM_RETURN_IF_ERROR(positive("vocab", static_cast<double>(m.vocab)));
  if (m.kv_lora_rank < 0) {
    return Status::InvalidInput(
        "model: kv_lora_rank: expected >= 0 (0 = standard attention), found " +
        std::to_string(m.kv_lora_rank));
  }
  if (IsMla(m)) {
    if (m.q_lora_rank < 0 || m.qk_nope_head_dim < 0 || m.qk_rope_head_dim < 0 ||
        m.v_head_dim <= 0 || m.qk_nope_head_dim + m.qk_rope_head_dim <= 0) {
      return Status::InvalidInput(
          "model: multi-head latent attention: expected q_lora_rank >= 0, qk_nope_head_dim and "
          "qk_rope_head_dim >= 0 (not both 0), v_head_dim > 0; found " +
          std::to_string(m.q_lora_rank) + ", " + std::to_string(m.qk_nope_head_dim) + ", " +
          std::to_string(m.qk_rope_head_dim) + ", " + std::to_string(m.v_head_dim));
    }
  } else if (m.q_lora_rank != 0 || m.qk_nope_head_dim != 0 || m.qk_rope_head_dim != 0 ||
             m.v_head_dim != 0) {
    return Status::InvalidInput(
        "model: q_lora_rank, qk_nope_head_dim, qk_rope_head_dim and v_head_dim need kv_lora_rank "
        "(multi-head latent attention)");
  } else if (m.head_dim < 0) {
    return Status::InvalidInput(
        "model: head_dim: expected a positive width (0 = hidden / heads), "
        "found " +
        std::to_string(m.head_dim));
  } else if (m.head_dim == 0 && m.hidden % m.heads != 0) {
    return Status::InvalidInput("model: hidden (" + std::to_string(m.hidden) +
                                ") must be divisible by heads (" + std::to_string(m.heads) + ")");
  }
  if (m.kv_heads < 1 || m.kv_heads > m.heads || m.heads % m.kv_heads != 0) {
    return Status::InvalidInput("model: kv_heads: expected a divisor of heads (" +
                                std::to_string(m.heads) + "), found " + std::to_string(m.kv_heads));
  }
  if (IsMoe(m)) {
    if (m.experts_per_token < 1 || m.experts_per_token > m.experts) {
      return Status::InvalidInput(
          "model: experts_per_token: expected 1.." + std::to_string(m.experts) + " (top-k of " +
          std::to_string(m.experts) + " experts), found " + std::to_string(m.experts_per_token));
    }
    if (m.dense_layers < 0 || m.dense_layers >= m.layers || m.shared_experts < 0 ||
        m.expert_ffn_hidden < 0) {
      return Status::InvalidInput(
          "model: dense_layers: expected 0.." + std::to_string(m.layers - 1) + ", found " +
          std::to_string(m.dense_layers) + " (shared_experts and expert_ffn_hidden >= 0)");
    }
  }
  if (m.position == PositionKind::kLearned && m.max_seq_len <= 0) {
    return Status::InvalidInput("model: max_seq_len: learned positions need a positive table size");
  }
  return Status::Ok();
}

std::string_view ModelKindName(ModelKind kind) {
  switch (kind) {
    case ModelKind::kDecoder:
      return "decoder";
    case ModelKind::kEncoder:
      return "encoder";
    case ModelKind::kGeneric:
      return "generic";
  }
  return "?";
}

Result<MlpKind> ParseMlpKind(std::string_view text) {
  if (text == "gelu") return MlpKind::kGelu;
  if (text == "swiglu") return MlpKind::kSwiglu;
  if (text == "squared-relu") return MlpKind::kSquaredRelu;
  return Status::InvalidInput("--mlp: expected gelu, swiglu or squared-relu, found '" +
                              std::string(text) + "'");
}

}  // namespace fulcrum::workload
