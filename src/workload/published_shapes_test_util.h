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

}  // namespace fulcrum::workload::testing
