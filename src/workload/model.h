// A model architecture as the estimators see it: a decoder or encoder transformer described by
// its shape (layers, hidden, heads, kv-heads, FFN, vocab, MLP kind, biases, norms, positions), or
// a generic model given by parameter count, forward FLOPs and activation bytes per sample (CNNs).
// Plain value types; the counting functions are pure, allocation-free and thread-safe. Parameter
// counts are exact for the HF implementations named in each preset (catalog/models/*.yaml).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.h"

namespace fulcrum::workload {

enum class ModelKind { kDecoder, kEncoder, kGeneric };
// kGelu: two matrices h->f->h with an elementwise activation (GPT, BERT, MPT, GPT-NeoX).
// kSwiglu: gate and up h->f, SiLU(gate)*up, down f->h (LLaMA, Mistral, Qwen2).
// kGelu and kSquaredRelu: one up projection, an elementwise activation, one down projection
// (h -> f -> h): GELU, or ReLU squared (Nemotron's activation: NeMo-Framework-Launcher@0b1a110c
// launcher_scripts/conf/training/nemotron/*.yaml, activation: squared-relu), which the estimators
// treat alike. kSwiglu: gated (gate and up, h -> 2f, then f -> h).
enum class MlpKind { kGelu, kSwiglu, kSquaredRelu };
// kLayerNorm: weight + bias (2h); kLayerNormNoBias: weight only (MPT); kRmsNorm: weight (h).
enum class NormKind { kLayerNorm, kLayerNormNoBias, kRmsNorm };
// kLearned adds a max_seq_len x hidden table (GPT-2/3, BERT); rotary/ALiBi add no parameters.
enum class PositionKind { kLearned, kRotary, kAlibi };

struct Model {
  std::string name;    // preset or config name, e.g. "llama-2-7b"
  std::string source;  // where the numbers come from (HF repo / paper)
  ModelKind kind = ModelKind::kDecoder;

  // --- transformer shape (kDecoder / kEncoder) ---
  int64_t layers = 0;
  int64_t hidden = 0;
  int64_t heads = 0;
  int64_t kv_heads = 0;  // grouped-query attention; == heads for multi-head attention
  // One attention head's width where it is not hidden / heads (HF `head_dim`: Qwen3, whose 32B
  // has 64 heads of 128 on a hidden of 5120; Mistral-Nemo); 0 = hidden / heads.
  int64_t head_dim = 0;
  int64_t ffn_hidden = 0;  // intermediate size f
  int64_t vocab = 0;
  int64_t max_seq_len = 0;  // context length; also the learned position table size
  // Sliding-window attention: each token attends to the last sliding_window tokens, so the KV
  // cache keeps at most that many per sequence (HF `sliding_window`; 0 = full attention).
  int64_t sliding_window = 0;
  bool tied_embeddings = false;  // output projection shares the input embedding matrix
  MlpKind mlp = MlpKind::kGelu;
  NormKind norm = NormKind::kLayerNorm;
  PositionKind position = PositionKind::kRotary;
  bool linear_bias = false;  // every linear layer has a bias (GPT-2/3, BERT, GPT-NeoX)
  bool qkv_bias = false;     // only q/k/v have biases (Qwen2); ignored when linear_bias
  bool dropout = false;      // dropout active in training (Korthikanti's mask bytes count)
  int64_t type_vocab = 0;    // BERT token-type embeddings (2), 0 for decoders

  // --- mixture of experts (experts == 0: a dense model) ---
  // A MoE layer replaces the MLP by `experts` routed experts (each an MLP of expert_ffn_hidden,
  // ffn_hidden when 0) of which each token uses experts_per_token (top-k), plus shared_experts
  // that every token uses (DeepSeekMoE), and a router (hidden x experts, no bias). The first
  // dense_layers layers keep a dense MLP of ffn_hidden (DeepSeek first_k_dense_replace).
  int64_t experts = 0;
  int64_t experts_per_token = 0;
  int64_t shared_experts = 0;
  int64_t expert_ffn_hidden = 0;
  int64_t dense_layers = 0;

  // --- multi-head latent attention (kv_lora_rank == 0: standard attention) ---
  // DeepSeek-V2/V3 (arXiv 2405.04434 section 2.1; HF transformers DeepseekV3Attention,
  // huggingface/transformers@f5a9ec512f src/transformers/models/deepseek_v3/
  // modeling_deepseek_v3.py): the query is hidden -> q_lora_rank (q_a_proj, RMSNorm) ->
  // heads x (qk_nope + qk_rope) (q_b_proj), or hidden -> heads x (qk_nope + qk_rope) directly
  // (q_proj) when q_lora_rank is 0 (DeepSeek-V2-Lite); keys and values come from one latent:
  // hidden -> kv_lora_rank + qk_rope (kv_a_proj_with_mqa; the rope part is one key head shared by
  // all heads), RMSNorm, kv_lora_rank -> heads x (qk_nope + v_head) (kv_b_proj); o_proj maps
  // heads x v_head -> hidden. Attention runs with query/key heads of qk_nope + qk_rope and value
  // heads of v_head_dim.
  int64_t q_lora_rank = 0;
  int64_t kv_lora_rank = 0;
  int64_t qk_nope_head_dim = 0;
  int64_t qk_rope_head_dim = 0;
  int64_t v_head_dim = 0;

  // --- generic models (kGeneric) ---
  double generic_parameters = 0;
  double generic_forward_flops_per_sample = 0;     // FLOPs (2 x multiply-adds) of one forward pass
  double generic_activation_bytes_per_sample = 0;  // saved for backward, 16-bit activations
  // What the step-time roofline needs (estimate/compute.cc; 0 = unknown, not charged): elements
  // of every tensor the forward pass writes per sample (convolution, normalisation, activation,
  // pooling, residual-add and squeeze-excitation outputs), the forward FLOPs of the depthwise
  // convolutions (part of generic_forward_flops_per_sample; they run on the CUDA cores), and the
  // layers with weights (convolutions + linear). At the input resolution image_size (pixels per
  // side; 0 = n/a).
  double generic_forward_elements_per_sample = 0;
  double generic_depthwise_flops_per_sample = 0;
  int64_t generic_weighted_layers = 0;
  int64_t generic_image_size = 0;
};

// Size of one head of standard attention: head_dim where given, else hidden / heads.
inline int64_t HeadDim(const Model& m) {
  if (m.head_dim > 0) return m.head_dim;
  return m.heads > 0 ? m.hidden / m.heads : 0;
}

// Multi-head latent attention (DeepSeek-V2/V3).
inline bool IsMla(const Model& m) { return m.kv_lora_rank > 0; }
// Width of one query/key head (MLA: qk_nope + qk_rope) and of one value head.
inline int64_t QkHeadDim(const Model& m) {
  return IsMla(m) ? m.qk_nope_head_dim + m.qk_rope_head_dim : HeadDim(m);
}
inline int64_t VHeadDim(const Model& m) { return IsMla(m) ? m.v_head_dim : HeadDim(m); }
// Heads of K and V as the attention kernel sees them: kv_heads (GQA); MLA materialises K and V
// for every head from the latent (kv_b_proj) in training and prefill.
inline int64_t AttentionKvHeads(const Model& m) {
  return IsMla(m) || m.kv_heads <= 0 ? m.heads : m.kv_heads;
}
// Widths per token of the attention kernel's operands: Q, K, V and the output that o_proj reads
// (hidden, kv_dim, kv_dim, hidden for standard attention).
inline int64_t QDim(const Model& m) { return m.heads * QkHeadDim(m); }
inline int64_t KDim(const Model& m) { return AttentionKvHeads(m) * QkHeadDim(m); }
inline int64_t VDim(const Model& m) { return AttentionKvHeads(m) * VHeadDim(m); }
inline int64_t AttentionOutDim(const Model& m) { return m.heads * VHeadDim(m); }
// The widths a layer's attention operands take per token (the planner reads it from
// ModelCounts, computed once per model).
inline int64_t AttentionOperandWidth(const Model& m) {
  return QDim(m) + KDim(m) + VDim(m) + AttentionOutDim(m);
}
// The mean width of K and V, so that 2 x KvDim is the K + V width a token adds (kv_heads x
// head_dim for standard attention).
inline int64_t KvDim(const Model& m) { return (KDim(m) + VDim(m)) / 2; }
// What an MLA engine caches per token and layer: the latent kv_lora_rank + qk_rope_head_dim
// (vLLM MLACommonBackend, vllm-project/vllm@37fa5c0940 vllm/v1/attention/backends/mla/common.py:
// one KV "head" of 576 = 512 + 64 for DeepSeek-V3). 0 for standard attention.
inline int64_t MlaLatentDim(const Model& m) {
  return IsMla(m) ? m.kv_lora_rank + m.qk_rope_head_dim : 0;
}

inline bool IsMoe(const Model& m) { return m.experts > 0; }
// One expert's intermediate size (expert_ffn_hidden, or ffn_hidden when unset).
inline int64_t ExpertFfnHidden(const Model& m) {
  return m.expert_ffn_hidden > 0 ? m.expert_ffn_hidden : m.ffn_hidden;
}
// Layers with a MoE MLP (0 for a dense model).
inline int64_t MoeLayerCount(const Model& m) { return IsMoe(m) ? m.layers - m.dense_layers : 0; }

// One weight matrix of a layer's attention projections (in x out), in the order the forward
// pass runs them. kKeyValue: MLA's kv_a_proj_with_mqa and kv_b_proj, which produce K and V
// together. tp_split: the matrix is divided over tensor parallelism (column-parallel, o_proj
// row-parallel); MLA's down-projections (q_a_proj, kv_a_proj_with_mqa) run duplicated on every
// rank (Megatron-LM@d98e8a64dd megatron/core/transformer/multi_latent_attention.py
// linear_q_down_proj / linear_kv_down_proj, parallel_mode 'duplicated').
enum class AttentionRole { kQuery, kKey, kValue, kKeyValue, kOutput };
struct AttentionMatrix {
  AttentionRole role = AttentionRole::kQuery;
  int64_t in = 0;
  int64_t out = 0;
  bool tp_split = true;
};
struct AttentionMatrices {
  std::array<AttentionMatrix, 5> items{};
  int count = 0;
};
// Standard attention: q (hidden -> QDim), k (-> KDim), v (-> VDim), o (AttentionOutDim ->
// hidden). MLA (modeling_deepseek_v3.py DeepseekV3Attention.forward, torchtitan's Attention
// alike): q_proj (hidden -> QDim) or q_a_proj (hidden -> q_lora_rank) and q_b_proj (q_lora_rank
// -> QDim); kv_a_proj_with_mqa (hidden -> MlaLatentDim); kv_b_proj (kv_lora_rank -> heads x
// (qk_nope + v_head)); o_proj. None for generic models.
AttentionMatrices AttentionProjectionMatrices(const Model& m);
// Weights of one layer's attention projections, biases and norms excepted: the sum of in x out
// over AttentionProjectionMatrices. A token's forward pass through them costs 2 x this FLOPs.
double AttentionProjectionParameterCount(const Model& m);
// Parameters of one transformer layer (attention + MLP + norms, with biases); for MoE models the
// mean over the layers (dense and MoE), so that layers x this + embeddings + head = the total.
double LayerParameterCount(const Model& m);
// Parameters one token uses in the mean layer: as LayerParameterCount, counting only the top-k
// routed experts (plus shared experts and the router) of a MoE layer. Dense models: the same.
double ActiveLayerParameterCount(const Model& m);
// Parameters of all routed experts in all layers: what expert parallelism divides.
double RoutedExpertParameterCount(const Model& m);
// Weights of the matrix multiplications a token runs through in the mean layer (the "matmul
// parameters" of PaLM's FLOPs count, arXiv 2204.02311 Appendix B): the attention projections
// and the MLP's matrices, the dense MLP's or, in a MoE layer, only the top-k routed and the
// shared experts' plus the router's, weighted over the dense and MoE layers. Biases and norms
// excepted (estimate::ModelFlopsPerToken counts 6 x this per token and layer).
double ActiveLayerMatmulParameterCount(const Model& m);
// Parameters one token uses (Mixtral 8x7B: 12.9 B of 46.7 B). Dense models: ParameterCount.
double ActiveParameterCount(const Model& m);
// Parameters of the input embeddings (token + learned positions + token types + embedding norm).
double EmbeddingParameterCount(const Model& m);
// Parameters after the last layer: final norm, untied output projection, BERT's MLM head.
double HeadParameterCount(const Model& m);
// All parameters (exact for transformers; generic_parameters for kGeneric).
double ParameterCount(const Model& m);
// Parameters in the largest single tensor (what ZeRO-3 gathers at once; DeepSpeed's
// "largest_layer"): the embedding or the largest weight matrix.
double LargestTensorParameterCount(const Model& m);

// The per-model figures the estimators read, computed once by CountModel: the planner estimates
// thousands of layouts of one model per search and passes these down instead of recounting them
// per layout (and per pipeline stage). Each field is the function named beside it, evaluated on
// the same model; plain values (thread-safe to share).
struct ModelCounts {
  double parameters = 0;                       // ParameterCount
  double active_parameters = 0;                // ActiveParameterCount
  double layer_parameters = 0;                 // LayerParameterCount
  double embedding_parameters = 0;             // EmbeddingParameterCount
  double head_parameters = 0;                  // HeadParameterCount
  double routed_expert_parameters = 0;         // RoutedExpertParameterCount
  double largest_tensor_parameters = 0;        // LargestTensorParameterCount
  double attention_projection_parameters = 0;  // AttentionProjectionParameterCount
  double active_layer_matmul_parameters = 0;   // ActiveLayerMatmulParameterCount
  AttentionMatrices attention_matrices;        // AttentionProjectionMatrices
  int64_t attention_operand_width = 0;         // AttentionOperandWidth
};
ModelCounts CountModel(const Model& m);

// `m` (kGeneric with a known image_size) at another input resolution: FLOPs, activation bytes
// and forward elements scale with the pixel count (exact for the convolutions; the classifier
// head after global pooling, < 0.1 % of the FLOPs of the presets, is scaled too). Other models,
// or image_size unknown or equal: unchanged.
Model AtImageSize(const Model& m, int64_t image_size);

// Structural checks (positive sizes, heads divide hidden (standard attention), kv_heads divide
// heads, 1 <= top-k <= experts, dense_layers < layers, MLA head dims); names the field.
Status ValidateModel(const Model& m);

std::string_view ModelKindName(ModelKind kind);
Result<MlpKind> ParseMlpKind(std::string_view text);

}  // namespace fulcrum::workload
