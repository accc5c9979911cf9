// Published model shapes and layouts the workload and estimate tests share (tests only; header
// only). Each names its source.
#pragma once

#include "workload/model.h"
#include "workload/training.h"

namespace fulcrum::workload::testing {

// BLOOM-176B (BigScience, arXiv 2211.05100, section 3.4 and its Megatron-DeepSpeed config):
// 70 layers, hidden 14336, 112 heads, vocabulary 250880, ALiBi, tied embeddings.
inline Model Bloom176b() {
  Model m;
  m.name = "bloom-176b";
  m.layers = 70;
  m.hidden = 14336;
  m.heads = 112;
  m.kv_heads = 112;
  m.ffn_hidden = 4 * 14336;
  m.vocab = 250880;
  m.position = PositionKind::kAlibi;
  m.tied_embeddings = true;
  m.linear_bias = true;
  return m;
}

// How BLOOM was trained: 384 A100-80GB, tp 4, pp 12, dp 8, ZeRO-1, full activation
// checkpointing, bf16, global batch 2048 sequences of 2048 tokens, micro-batch 2.
inline Training BloomTraining() {
  Training t;
  t.tp = 4;
  t.pp = 12;
  t.dp = 8;
  t.zero_stage = 1;
  t.micro_batch = 2;
  t.global_batch = 2048;
  t.seq_len = 2048;
  t.recompute = Recompute::kFull;
  t.framework = Framework::kMegatron;
  return t;
}

// Llama 3.1 8B (meta-llama/Llama-3.1-8B config.json).
inline Model Llama31_8b() {
  Model m;
  m.name = "llama-3.1-8b";
  m.layers = 32;
  m.hidden = 4096;
  m.heads = 32;
  m.kv_heads = 8;
  m.ffn_hidden = 14336;
  m.vocab = 128256;
  m.mlp = MlpKind::kSwiglu;
  m.norm = NormKind::kRmsNorm;
  return m;
}

// Llama 3.1 405B (meta-llama/Llama-3.1-405B config.json; Llama Team 2024, arXiv 2407.21783,
// Table 3).
inline Model Llama3_405b() {
  Model m;
  m.name = "llama-3-405b";
  m.layers = 126;
  m.hidden = 16384;
  m.heads = 128;
  m.kv_heads = 8;
  m.ffn_hidden = 53248;
  m.vocab = 128256;
  m.mlp = MlpKind::kSwiglu;
  m.norm = NormKind::kRmsNorm;
  return m;
}

// Its 8K-context pre-training on 8,192 H100 (arXiv 2407.21783, Table 4 and section 3.3.2): tp 8,
// pp 16, dp 64, 16M tokens per batch (2048 sequences of 8192), micro-batch 1, bf16, no activation
// checkpointing, the interleaved schedule with one layer fewer on the first and the last stage
// (the first model chunk holds only the embedding, the last only the output layer and loss: one
// layer per chunk, 128 chunks on 16 stages, so 8 virtual stages per rank).
inline Training Llama3_405bTraining() {
  Training t;
  t.tp = 8;
  t.pp = 16;
  t.vpp = 8;
  t.dp = 64;
  t.zero_stage = 1;
  t.first_stage_layers = 7;
  t.last_stage_layers = 7;
  t.micro_batch = 1;
  t.global_batch = 2048;
  t.seq_len = 8192;
  t.sequence_parallel = true;
  t.framework = Framework::kMegatron;
  return t;
}

// mistralai/Mixtral-8x7B-v0.1 config.json; Mistral AI, "Mixtral of experts" (2023-12-11): 46.7 B
// parameters in total, 12.9 B used per token.
inline constexpr const char* kMixtralConfig = R"({
  "architectures": ["MixtralForCausalLM"], "hidden_size": 4096, "intermediate_size": 14336,
  "max_position_embeddings": 32768, "model_type": "mixtral", "num_attention_heads": 32,
  "num_experts_per_tok": 2, "num_hidden_layers": 32, "num_key_value_heads": 8,
  "num_local_experts": 8, "rms_norm_eps": 1e-05, "tie_word_embeddings": false,
  "vocab_size": 32000})";

// Multi-head latent attention models (HF config.json of deepseek-ai/DeepSeek-V2-Lite,
// deepseek-ai/DeepSeek-V2 and deepseek-ai/DeepSeek-V3 on the HF Hub, fields as in transformers'
// DeepseekV2Config / DeepseekV3Config). The shapes are the papers': DeepSeek-V2 (arXiv 2405.04434)
// section 3.1.2 (60 layers, hidden 5120, 128 heads of 128, d_c 512, d'_c 1536, rope 64; 2 shared
// + 160 routed experts of 1536, 6 activated, first layer dense): 236 B total, 21 B activated;
// appendix B (V2-Lite: 27 layers, hidden 2048, 16 heads, no query compression; 2 shared + 64
// routed of 1408, 6 activated): 15.7 B total, 2.4 B activated. DeepSeek-V3 (arXiv 2412.19437)
// section 4.2 (61 layers, hidden 7168, 128 heads, d_c 512, d'_c 1536, rope 64; 1 shared + 256
// routed of 2048, 8 activated, first three layers dense): 671 B total, 37 B activated (abstract).
inline constexpr const char* kDeepSeekV2LiteConfig = R"({
  "architectures": ["DeepseekV2ForCausalLM"], "model_type": "deepseek_v2", "hidden_size": 2048,
  "intermediate_size": 10944, "num_hidden_layers": 27, "num_attention_heads": 16,
  "num_key_value_heads": 16, "vocab_size": 102400, "max_position_embeddings": 163840,
  "tie_word_embeddings": false, "q_lora_rank": null, "kv_lora_rank": 512,
  "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128, "n_routed_experts": 64,
  "num_experts_per_tok": 6, "n_shared_experts": 2, "moe_intermediate_size": 1408,
  "first_k_dense_replace": 1, "moe_layer_freq": 1, "attention_bias": false})";
inline constexpr const char* kDeepSeekV2Config = R"({
  "architectures": ["DeepseekV2ForCausalLM"], "model_type": "deepseek_v2", "hidden_size": 5120,
  "intermediate_size": 12288, "num_hidden_layers": 60, "num_attention_heads": 128,
  "num_key_value_heads": 128, "vocab_size": 102400, "max_position_embeddings": 163840,
  "tie_word_embeddings": false, "q_lora_rank": 1536, "kv_lora_rank": 512,
  "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128, "n_routed_experts": 160,
  "num_experts_per_tok": 6, "n_shared_experts": 2, "moe_intermediate_size": 1536,
  "first_k_dense_replace": 1, "moe_layer_freq": 1, "n_group": 8, "topk_group": 3})";
inline constexpr const char* kDeepSeekV3Config = R"({
  "architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3", "hidden_size": 7168,
  "intermediate_size": 18432, "num_hidden_layers": 61, "num_attention_heads": 128,
  "num_key_value_heads": 128, "vocab_size": 129280, "max_position_embeddings": 163840,
  "tie_word_embeddings": false, "q_lora_rank": 1536, "kv_lora_rank": 512,
  "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128, "n_routed_experts": 256,
  "num_experts_per_tok": 8, "n_shared_experts": 1, "moe_intermediate_size": 2048,
  "first_k_dense_replace": 3, "moe_layer_freq": 1, "n_group": 8, "topk_group": 4,
  "scoring_func": "sigmoid", "num_nextn_predict_layers": 1})";

}  // namespace fulcrum::workload::testing
