// The memory model against its published anchors (data/calibration/
// formula_anchors.csv): ZeRO Table 1, Megatron's distributed-optimizer bytes per parameter,
// DeepSpeed's estimator examples, HF accelerate's 4x rule and Korthikanti's activation formulas.
// Expected values are the published numbers, never values printed by this code.
#include "estimate/memory.h"

#include <gtest/gtest.h>

namespace fulcrum::estimate {
namespace {

using workload::Framework;
using workload::GradPrecision;
using workload::Model;
using workload::Precision;
using workload::Recompute;
using workload::Training;

constexpr double kGiB = 1073741824.0;
constexpr double kGB = 1e9;

double States(const ModelStateBytes& s) {
  return s.weights_bytes + s.gradients_bytes + s.optimizer_bytes;
}

// ZeRO paper arithmetic: 16-bit params and grads, K = 12 (Megatron conventions with the
// gradient dtype overridden to bf16 give exactly 2 + 2 + 12).
Training ZeroPaperTraining(int stage, int dp) {
  Training t;
  t.framework = Framework::kMegatron;
  t.precision = Precision::kBf16Mixed;
  t.grad_precision = GradPrecision::kBf16;
  t.zero_stage = stage;
  t.dp = dp;
  return t;
}

TEST(ZeroAnchorTest, Table1For7point5B) {
  const double psi = 7.5e9;
  EXPECT_DOUBLE_EQ(States(FullModelStates(psi, 0, ZeroPaperTraining(0, 64))), 120 * kGB);
  // The paper prints 3 significant digits: 31.4, 16.6, 1.88.
  EXPECT_NEAR(States(FullModelStates(psi, 0, ZeroPaperTraining(1, 64))) / kGB, 31.4, 0.05);
  EXPECT_NEAR(States(FullModelStates(psi, 0, ZeroPaperTraining(2, 64))) / kGB, 16.6, 0.05);
  EXPECT_NEAR(States(FullModelStates(psi, 0, ZeroPaperTraining(3, 64))) / kGB, 1.88, 0.005);
}

TEST(ZeroAnchorTest, Table1For128BAnd1T) {
  EXPECT_DOUBLE_EQ(States(FullModelStates(128e9, 0, ZeroPaperTraining(1, 64))), 536 * kGB);
  EXPECT_DOUBLE_EQ(States(FullModelStates(128e9, 0, ZeroPaperTraining(2, 64))), 284 * kGB);
  EXPECT_DOUBLE_EQ(States(FullModelStates(128e9, 0, ZeroPaperTraining(3, 64))), 32 * kGB);
  // The paper truncates: 4011.7 -> 4011, 2013.7 -> 2013, 15.625 -> 15.6.
  EXPECT_NEAR(States(FullModelStates(1e12, 0, ZeroPaperTraining(1, 1024))) / kGB, 4011, 1.0);
  EXPECT_NEAR(States(FullModelStates(1e12, 0, ZeroPaperTraining(2, 1024))) / kGB, 2013, 1.0);
  EXPECT_NEAR(States(FullModelStates(1e12, 0, ZeroPaperTraining(3, 1024))) / kGB, 15.6, 0.05);
}

Training MegatronTraining(Precision p, int zero, int dp) {
  Training t;
  t.framework = Framework::kMegatron;
  t.precision = p;
  t.zero_stage = zero;
  t.dp = dp;
  return t;
}

TEST(MegatronAnchorTest, DistributedOptimizerBytesPerParameter) {
  const double d = 8;
  EXPECT_DOUBLE_EQ(States(FullModelStates(1, 0, MegatronTraining(Precision::kBf16Mixed, 0, 8))),
                   18);
  EXPECT_DOUBLE_EQ(States(FullModelStates(1, 0, MegatronTraining(Precision::kBf16Mixed, 1, 8))),
                   6 + 12 / d);
  EXPECT_DOUBLE_EQ(States(FullModelStates(1, 0, MegatronTraining(Precision::kFp16Mixed, 0, 8))),
                   20);
  EXPECT_DOUBLE_EQ(States(FullModelStates(1, 0, MegatronTraining(Precision::kFp16Mixed, 1, 8))),
                   4 + 16 / d);
  EXPECT_DOUBLE_EQ(States(FullModelStates(1, 0, MegatronTraining(Precision::kFp32, 0, 8))), 16);
  EXPECT_DOUBLE_EQ(States(FullModelStates(1, 0, MegatronTraining(Precision::kFp32, 1, 8))),
                   8 + 8 / d);
}

// Megatron's precision-aware optimizer (--exp-avg-dtype / --exp-avg-sq-dtype): the fp32 master
// (4) stays, the moments take their dtypes' bytes, sharded by the distributed optimizer. BF16
// moments: 4 + 2 + 2 instead of 4 + 4 + 4 per parameter before sharding; fp8 / bf16: 4 + 1 + 2.
TEST(MegatronAnchorTest, PrecisionAwareOptimizerStoresTheMomentsInTheirDtypes) {
  const double d = 8;
  Training t = MegatronTraining(Precision::kBf16Mixed, 1, 8);
  t.exp_avg_dtype = workload::MomentDtype::kBf16;
  t.exp_avg_sq_dtype = workload::MomentDtype::kBf16;
  EXPECT_DOUBLE_EQ(OptimizerStateBytesPerParam(t), 4);
  EXPECT_DOUBLE_EQ(States(FullModelStates(1, 0, t)), 6 + 8 / d);
  t.exp_avg_dtype = workload::MomentDtype::kFp8;
  EXPECT_DOUBLE_EQ(States(FullModelStates(1, 0, t)), 6 + 7 / d);
  // Only under Megatron's distributed optimizer with AdamW.
  workload::Model m;
  m.layers = 2, m.hidden = 64, m.heads = 4, m.kv_heads = 4, m.ffn_hidden = 256, m.vocab = 128;
  t.global_batch = 8;
  EXPECT_TRUE(workload::Validate(m, t).ok()) << workload::Validate(m, t).message();
  for (const auto& change :
       {+[](Training& x) { x.zero_stage = 0; },
        +[](Training& x) { x.framework = Framework::kDeepSpeed; },
        +[](Training& x) { x.optimizer = workload::Optimizer::kSgdMomentum; }}) {
    Training other = t;
    change(other);
    const Status s = workload::Validate(m, other);
    EXPECT_FALSE(s.ok());
    EXPECT_NE(s.message().find("precision-aware optimizer"), std::string::npos) << s.message();
  }
}

// t5-3b: 2851 M parameters; largest layer = the shared embedding, vocab 32128 x d_model 1024
// (google-t5/t5-3b config.json), which DeepSpeed's docs round to "32M".
constexpr double kT5Params = 2851e6;
constexpr double kT5Largest = 32128.0 * 1024;

Training DeepSpeedTraining(int stage, bool offload) {
  Training t;
  t.framework = Framework::kDeepSpeed;
  t.precision = Precision::kFp16Mixed;
  t.zero_stage = stage;
  t.dp = 8;
  t.offload_optimizer = offload;
  return t;
}

TEST(DeepSpeedAnchorTest, EstimatorExamplesForT5_3b) {
  // DeepSpeed memory.rst prints GB meaning GiB: 15.93, 5.31 (offload), 6.10 (ZeRO-3).
  EXPECT_NEAR(States(FullModelStates(kT5Params, kT5Largest, DeepSpeedTraining(2, false))) / kGiB,
              15.93, 0.005);
  EXPECT_NEAR(States(FullModelStates(kT5Params, kT5Largest, DeepSpeedTraining(2, true))) / kGiB,
              5.31, 0.005);
  ModelStateBytes z3 = FullModelStates(kT5Params, kT5Largest, DeepSpeedTraining(3, false));
  EXPECT_NEAR((States(z3) + z3.buffer_bytes) / kGiB, 6.10, 0.005);
  // The estimator's offload branches: 4 * largest + 2P/N (optimizer offload), 4 * largest
  // (parameters offloaded too).
  Training offload = DeepSpeedTraining(3, true);
  ModelStateBytes z3o = FullModelStates(kT5Params, kT5Largest, offload);
  EXPECT_DOUBLE_EQ(States(z3o) + z3o.buffer_bytes, 4 * kT5Largest + 2 * kT5Params / 8);
  offload.offload_params = true;
  ModelStateBytes z3p = FullModelStates(kT5Params, kT5Largest, offload);
  EXPECT_DOUBLE_EQ(States(z3p) + z3p.buffer_bytes, 4 * kT5Largest);
}

TEST(AccelerateAnchorTest, TrainingIsFourTimesTheFp32Model) {
  // bert-base-cased: 413.18 MB (MiB) in float32; training with Adam: 1.61 GB (GiB).
  const double params = 413.18 * 1048576 / 4;
  Training t;
  t.framework = Framework::kHf;
  t.precision = Precision::kFp32;
  EXPECT_NEAR(States(FullModelStates(params, 0, t)) / kGiB, 1.61, 0.005);
}

// Korthikanti et al. 2022 Figure 1 configurations (values as in calculon's validation.py).
Model Gpt(int64_t layers, int64_t hidden, int64_t heads) {
  Model m;
  m.layers = layers;
  m.hidden = hidden;
  m.heads = heads;
  m.kv_heads = heads;
  m.ffn_hidden = 4 * hidden;
  m.vocab = 51200;
  m.max_seq_len = 2048;
  m.dropout = true;
  m.position = workload::PositionKind::kLearned;
  return m;
}

// A run of `framework` in `precision`: micro-batch, global batch (sequences) and sequence length.
Training TrainingRun(Framework framework, Precision precision, int64_t micro_batch,
                     int64_t global_batch, int64_t seq_len) {
  Training t;
  t.framework = framework;
  t.precision = precision;
  t.micro_batch = micro_batch;
  t.global_batch = global_batch;
  t.seq_len = seq_len;
  return t;
}

// TF1's graph optimizer with gradient accumulation keeps an fp32 accum_var per trainable
// variable beside the micro-batch's gradients (NVIDIA/DeepLearningExamples@729963dd47
// TensorFlow/LanguageModeling/BERT/optimization.py, create_optimizer); without accumulation it
// has none.
TEST(Tf1GraphMemoryTest, AccumulationAddsAnFp32BufferPerParameter) {
  Model m = Gpt(4, 1024, 16);
  Training t = TrainingRun(Framework::kHf, Precision::kFp32, 2, 8, 512);
  Training graph = t;
  graph.optimizer_kernels = workload::OptimizerKernels::kTf1Graph;
  const double params = static_cast<double>(workload::CountModel(m).parameters);
  EXPECT_NEAR(EstimateMemory(m, graph).gradients_bytes - EstimateMemory(m, t).gradients_bytes,
              4 * params, 1e-6 * params);
  t.global_batch = graph.global_batch = 2;
  EXPECT_DOUBLE_EQ(EstimateMemory(m, graph).gradients_bytes, EstimateMemory(m, t).gradients_bytes);
}

// flash-attn's fused cross entropy keeps the 16-bit logits and writes one 16-bit gradient: 4 bytes
// a logit where PyTorch's cross entropy on fp32 logits (torchtitan/FSDP, HF) keeps 12; 8 when the
// run stores fp32. Only the logits change.
TEST(CrossEntropyMemoryTest, FusedKeepsTheSixteenBitLogitsAndOneGradient) {
  const Model m = Gpt(4, 1024, 16);
  for (const Precision precision : {Precision::kBf16Mixed, Precision::kFp32}) {
    for (const Framework framework : {Framework::kFsdp, Framework::kHf}) {
      const Training t = TrainingRun(framework, precision, 4, 4, 1024);
      Training fused = t;
      fused.cross_entropy = workload::CrossEntropy::kFused;
      const double logits = 4.0 * 1024 * static_cast<double>(m.vocab);
      const bool fp32 = workload::IsFp32Storage(precision);
      const double per_logit = fp32 ? 8 : 4;
      // PyTorch's: 12 bytes a logit; torchtitan's fp32 run keeps its fp32 logits' copy too (+2).
      const double framework_bytes = fp32 && framework == Framework::kFsdp ? 14 : 12;
      const MemoryBreakdown a = EstimateMemory(m, t), b = EstimateMemory(m, fused);
      EXPECT_NEAR(a.logits_bytes - b.logits_bytes, (framework_bytes - per_logit) * logits,
                  1e-6 * logits);
      EXPECT_DOUBLE_EQ(a.activations_bytes, b.activations_bytes);
      EXPECT_DOUBLE_EQ(a.gradients_bytes, b.gradients_bytes);
    }
  }
  // Megatron runs its own vocab-parallel loss whatever a plan's job says.
  Training megatron;
  megatron.framework = Framework::kMegatron;
  Training fused = megatron;
  fused.cross_entropy = workload::CrossEntropy::kFused;
  EXPECT_DOUBLE_EQ(EstimateMemory(m, fused).logits_bytes, EstimateMemory(m, megatron).logits_bytes);
}

Training KorthikantiTraining(int tp, int pp, int vpp, int micro, bool sp_selective) {
  Training t;
  t.framework = Framework::kMegatron;
  t.precision = Precision::kFp16Mixed;
  t.tp = tp;
  t.pp = pp;
  t.vpp = vpp;
  t.micro_batch = micro;
  t.global_batch = 64 * micro;
  t.seq_len = 2048;
  t.flash_attention = false;
  t.sequence_parallel = sp_selective;
  t.recompute = sp_selective ? Recompute::kSelective : Recompute::kNone;
  return t;
}

TEST(KorthikantiAnchorTest, Gpt22BActivationsAndStates) {
  const Model m = Gpt(48, 6144, 64);
  EXPECT_DOUBLE_EQ(PipelineActivationBytes(m, KorthikantiTraining(8, 1, 1, 4, false)),
                   59.25 * kGiB);
  EXPECT_DOUBLE_EQ(PipelineActivationBytes(m, KorthikantiTraining(8, 1, 1, 4, true)),
                   9.5625 * kGiB);
  // params + optimizer: 18 bytes per parameter (bf16 + fp32 grads + K = 12) of 12 L h^2 / t.
  const double layer_params = 12.0 * 48 * 6144 * 6144 / 8;
  EXPECT_DOUBLE_EQ(
      States(FullModelStates(layer_params, 0, MegatronTraining(Precision::kBf16Mixed, 0, 1))),
      45.5625 * kGiB);
}

TEST(KorthikantiAnchorTest, Gpt175BInterleavedPipeline) {
  const Model m = Gpt(96, 12288, 96);
  EXPECT_DOUBLE_EQ(PipelineActivationBytes(m, KorthikantiTraining(8, 8, 3, 1, false)),
                   66.84375 * kGiB);
  EXPECT_DOUBLE_EQ(PipelineActivationBytes(m, KorthikantiTraining(8, 8, 3, 1, true)),
                   12.3515625 * kGiB);
}

// The 12-layer GPT (h 512, 8 heads, GPT-2 vocabulary padded to 50304, tied embeddings) of
// Megatron-LM's nightly functional tests on 8 A100s, micro-batch 4 x 1024 tokens, global batch 32,
// unfused attention (--transformer-impl local); mem-max-allocated-bytes as the last rank logs it.
Model MegatronCiGpt() {
  Model m = Gpt(12, 512, 8);
  m.vocab = 50304;
  m.max_seq_len = 1024;
  m.tied_embeddings = true;
  return m;
}

Training MegatronCiTraining(Precision precision, int pp, int vpp) {
  Training t = MegatronTraining(precision, 0, 8 / pp);
  t.pp = pp;
  t.vpp = vpp;
  t.micro_batch = 4;
  t.global_batch = 32;
  t.seq_len = 1024;
  t.flash_attention = false;
  return t;
}

// gpt3_345m_nightly_dgx_a100_1N8G_mcore_tp1_pp4 (NVIDIA/Megatron-LM@23e2e09edd
// golden_values_dev.json: 2748673024 bytes; model_config.yaml@3bf9b874c3, bf16) and
// gpt3_345m_nightly_dgx_a100_1N8G_tp1_pp4_vp1_overlap_grad_reduce (@13f8f526be: 4114758144 bytes;
// model_config.yaml@653cf809bc, fp16, one layer per virtual stage: 3 chunks per rank). With 4
// micro-batches the interleaved schedule's last rank runs 2 x 4 = 8 chunk forwards of warm-up
// before its first backward and so holds 9 chunks (layers) of activations, three times what
// plain 1F1B's last rank holds (one micro-batch of its 3 layers).
TEST(PipelineMemoryTest, LastRankOfInterleavedScheduleHoldsItsWarmUpChunks) {
  const Model m = MegatronCiGpt();
  const Training plain = MegatronCiTraining(Precision::kBf16Mixed, 4, 1);
  const Training interleaved = MegatronCiTraining(Precision::kFp16Mixed, 4, 3);
  EXPECT_NEAR(EstimateLastStageMemory(m, plain).allocated_bytes, 2748673024.0, 2748673024.0 * 0.08);
  EXPECT_NEAR(EstimateLastStageMemory(m, interleaved).allocated_bytes, 4114758144.0,
              4114758144.0 * 0.05);
  const double per_layer = LayerActivationBytes(m, interleaved);
  EXPECT_NEAR(EstimateLastStageMemory(m, interleaved).activations_bytes, 9 * per_layer,
              1e-6 * per_layer);
  EXPECT_NEAR(EstimateLastStageMemory(m, plain).activations_bytes,
              3 * LayerActivationBytes(m, plain), 1e-6 * per_layer);
}

// Megatron-LM's interleaved schedule runs 2 (pp - rank - 1) + (vpp - 1) g chunk forwards before
// its first backward, g = microbatch_group_size_per_vp_stage (pp unless set; NVIDIA/Megatron-LM@
// d98e8a64dd megatron/core/pipeline_parallel/schedules.py), and one more chunk is in flight when
// the backward starts. pp 4, vpp 2, 16 micro-batches, 8 layers: the first stage holds
// 2 x 3 + 1 x g + 1 chunks of one layer each: 11 with g = 4 (the default), 15 with g = 8.
TEST(PipelineMemoryTest, MicrobatchGroupSizeSetsTheInterleavedWarmUp) {
  const Model m = Gpt(8, 1024, 16);
  Training t = KorthikantiTraining(1, 4, 2, 1, false);
  t.global_batch = 16;
  const double per_layer = LayerActivationBytes(m, t);
  EXPECT_DOUBLE_EQ(PipelineActivationBytes(m, t), 11 * per_layer);
  t.microbatch_group_size = 4;
  EXPECT_DOUBLE_EQ(PipelineActivationBytes(m, t), 11 * per_layer);
  t.microbatch_group_size = 8;
  EXPECT_DOUBLE_EQ(PipelineActivationBytes(m, t), 15 * per_layer);
  // The last stage: (vpp - 1) g + 1 chunks.
  EXPECT_DOUBLE_EQ(StageActivationBytes(m, t, 2, 1), (8 + 1) * per_layer);
  EXPECT_TRUE(workload::Validate(m, t, 4).ok());
}

// Megatron-LM refuses a group size outside [pp, micro-batches per step] (schedules.py: "The number
// of contiguous micro-batches in a virtual pipeline stage should range in [PP, M]"), and a group
// size means nothing without interleaving.
TEST(PipelineMemoryTest, MicrobatchGroupSizeOutsideMegatronsRangeIsRefused) {
  const Model m = Gpt(8, 1024, 16);
  Training t = KorthikantiTraining(1, 4, 2, 1, false);
  t.global_batch = 16;
  for (int64_t g : {3, 17}) {
    t.microbatch_group_size = g;
    const Status s = workload::Validate(m, t, 4);
    EXPECT_FALSE(s.ok()) << g;
    EXPECT_NE(s.message().find("--microbatch-group-size"), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("4 .. 16"), std::string::npos) << s.message();
  }
  t.vpp = 1;
  t.microbatch_group_size = 4;
  EXPECT_NE(workload::Validate(m, t, 4).message().find("--vpp > 1"), std::string::npos);
}

// Transformer Engine FP8 weights (NeMo fp8_params, Megatron-LM --fp8-param-gather): each linear
// weight is 1 byte of FP8 data plus its 1-byte FP8 transpose, with no 16-bit copy beside it.
// Without them TE keeps the bf16 weight and its FP8 cast and transpose: 2 bytes more per layer
// parameter. The fp32 master weights and Adam states stay in the optimizer either way.
TEST(Fp8ParamsTest, TransformerEngineFp8WeightsDropTheSixteenBitCopy) {
  const Model m = Gpt(4, 1024, 16);
  Training t = MegatronTraining(Precision::kFp8, 1, 8);
  t.grad_precision = GradPrecision::kBf16;
  const MemoryBreakdown cast = EstimateMemory(m, t);
  t.fp8_params = true;
  const MemoryBreakdown fp8 = EstimateMemory(m, t);
  const double layer_params = 4 * workload::LayerParameterCount(m);
  EXPECT_DOUBLE_EQ(cast.weights_bytes - fp8.weights_bytes, 2 * layer_params);
  // 2 bytes per parameter in all: 1 + 1 for the layers' weights, 16-bit embeddings and head.
  EXPECT_DOUBLE_EQ(fp8.weights_bytes, 2 * workload::ParameterCount(m));
  EXPECT_DOUBLE_EQ(fp8.optimizer_bytes, cast.optimizer_bytes);
  EXPECT_DOUBLE_EQ(fp8.optimizer_bytes, workload::ParameterCount(m) * (4 + 8) / 8);
  EXPECT_DOUBLE_EQ(fp8.gradients_bytes, 2 * workload::ParameterCount(m));
}

// Megatron-Core's selective recompute runs core attention inside tensor_parallel.checkpoint,
// which saves Q, K and V only; the attention's output is then kept by the output projection alone,
// and under Transformer Engine FP8 that is its 1-byte cast: the 16-bit output (2 bytes per
// element) goes. In BF16 the projection keeps the 16-bit output itself, so nothing changes.
TEST(MemoryTest, Fp8RecomputedCoreAttentionKeepsOnlyTheProjectionsCast) {
  Model m = Gpt(1, 2048, 16);
  m.dropout = false;
  Training t = MegatronTraining(Precision::kFp8, 1, 1);
  t.seq_len = 2048;
  t.flash_attention = true;
  const double kept = LayerActivationBytes(m, t);
  t.recompute = Recompute::kSelective;
  EXPECT_DOUBLE_EQ(kept - LayerActivationBytes(m, t), 2.0 * 2048 * 2048);
  t.precision = Precision::kBf16Mixed;
  const double bf16_recomputed = LayerActivationBytes(m, t);
  t.recompute = Recompute::kNone;
  EXPECT_DOUBLE_EQ(LayerActivationBytes(m, t), bf16_recomputed);
}

// apex DistributedFusedAdam's param remainders (NeMo's default for a bf16 model): the fp32 master
// is 2 bytes beside the bf16 weight, so the sharded optimizer keeps 2 + 4 + 4 bytes a parameter
// where Megatron's distributed optimizer keeps 4 + 4 + 4; weights and gradients are unchanged.
TEST(MemoryTest, ParamRemaindersKeepTwoBytesOfMaster) {
  const Model m = Gpt(4, 1024, 16);
  for (Precision p : {Precision::kBf16Mixed, Precision::kFp8}) {
    Training t = MegatronTraining(p, 1, 8);
    t.grad_precision = GradPrecision::kBf16;
    const MemoryBreakdown full = EstimateMemory(m, t);
    t.store_param_remainders = true;
    const MemoryBreakdown remainders = EstimateMemory(m, t);
    const double params = workload::ParameterCount(m);
    EXPECT_DOUBLE_EQ(full.optimizer_bytes, params * 12 / 8);
    EXPECT_DOUBLE_EQ(remainders.optimizer_bytes, params * 10 / 8);
    EXPECT_DOUBLE_EQ(remainders.weights_bytes, full.weights_bytes);
    EXPECT_DOUBLE_EQ(remainders.gradients_bytes, full.gradients_bytes);
  }
}

TEST(MemoryTest, ParamRemaindersNeedBf16WeightsUnderMegatron) {
  const Model m = Gpt(4, 1024, 16);
  Training t = MegatronTraining(Precision::kBf16Mixed, 1, 8);
  t.global_batch = 8;
  t.store_param_remainders = true;
  EXPECT_TRUE(workload::Validate(m, t, 8).ok()) << workload::Validate(m, t, 8).message();
  t.precision = Precision::kFp16Mixed;
  EXPECT_NE(workload::Validate(m, t, 8).message().find("--store-param-remainders"),
            std::string::npos);
  t.precision = Precision::kFp8;
  t.fp8_params = true;
  EXPECT_NE(workload::Validate(m, t, 8).message().find("--fp8-params"), std::string::npos);
  t.fp8_params = false;
  EXPECT_TRUE(workload::Validate(m, t, 8).ok());
  t.framework = Framework::kFsdp;
  t.zero_stage = 3;
  EXPECT_NE(workload::Validate(m, t, 8).message().find("--store-param-remainders"),
            std::string::npos);
}

TEST(Fp8ParamsTest, RefusedOutsideTransformerEngineFp8) {
  const Model m = Gpt(4, 1024, 16);
  Training t = MegatronTraining(Precision::kBf16Mixed, 1, 8);
  t.global_batch = 8;
  t.fp8_params = true;
  EXPECT_NE(workload::Validate(m, t, 8).message().find("--fp8-params"), std::string::npos);
  t.precision = Precision::kFp8;
  EXPECT_TRUE(workload::Validate(m, t, 8).ok()) << workload::Validate(m, t, 8).message();
  t.framework = Framework::kFsdp;
  t.zero_stage = 3;
  EXPECT_NE(workload::Validate(m, t, 8).message().find("--fp8-params"), std::string::npos);
}

TEST(KorthikantiAnchorTest, TableTwoVariantsPerLayer) {
  // No parallelism: sbh(34 + 5as/h); full recompute: 2sbh.
  const Model m = Gpt(1, 1024, 16);
  Training t = KorthikantiTraining(1, 1, 1, 2, false);
  t.seq_len = 1024;
  const double s = 1024, b = 2, h = 1024, a = 16;
  EXPECT_DOUBLE_EQ(LayerActivationBytes(m, t), s * b * h * (34 + 5 * a * s / h));
  t.recompute = Recompute::kFull;
  EXPECT_DOUBLE_EQ(LayerActivationBytes(m, t), 2 * s * b * h);
}

TEST(MemoryTest, FlashAttentionRemovesTheQuadraticTerm) {
  const Model m = Gpt(1, 1024, 16);
  Training t = KorthikantiTraining(1, 1, 1, 1, false);
  const double without = LayerActivationBytes(m, t);
  t.flash_attention = true;
  const double with = LayerActivationBytes(m, t);
  const double s = 2048, h = 1024, a = 16;
  // 34sbh plus the fp32 log-sum-exp per head and row.
  EXPECT_DOUBLE_EQ(with, s * h * 34 + 4 * a * s);
  EXPECT_GT(without, with);
}

TEST(MemoryTest, GqaAndSwigluCountEverySavedTensor) {
  Model m = Gpt(1, 4096, 32);
  m.kv_heads = 8;
  m.ffn_hidden = 14336;
  m.mlp = workload::MlpKind::kSwiglu;
  m.dropout = false;
  Training t = KorthikantiTraining(1, 1, 1, 1, false);
  t.flash_attention = true;
  const double s = 2048, h = 4096, f = 14336, a = 32, r = 0.25;
  // norms' inputs, QKV and MLP inputs (4 x 2sbh), Q + K + V + attention output (2sbh(2 + 2r)),
  // log-sum-exp (4as). Megatron's fused SwiGLU keeps gate and up plus the down-projection input
  // (3 x 2sbf); eager PyTorch also keeps SiLU(gate) (4 x 2sbf).
  const double common = 8 * s * h + 2 * s * h * (2 + 2 * r) + 4 * a * s;
  EXPECT_DOUBLE_EQ(LayerActivationBytes(m, t), common + 6 * s * f);
  t.framework = Framework::kFsdp;
  EXPECT_DOUBLE_EQ(LayerActivationBytes(m, t), common + 8 * s * f);
  // torchtitan's op-level selective checkpointing: layer input, attention output + LSE, and the
  // outputs of wq, wv, w1, w2.
  t.recompute = Recompute::kSelective;
  EXPECT_DOUBLE_EQ(LayerActivationBytes(m, t),
                   2 * s * h + 2 * s * h + 4 * a * s + 2 * s * h * (2 + r) + 2 * s * f);
}

TEST(MemoryTest, BreakdownAddsUpAndVerdicts) {
  Model m = Gpt(24, 2048, 16);
  Training t;
  t.seq_len = 2048;
  const MemoryBreakdown b = EstimateMemory(m, t);
  EXPECT_DOUBLE_EQ(b.other_bytes, b.logits_bytes + b.comm_buffer_bytes + b.cuda_context_bytes +
                                      b.allocator_reserve_bytes);
  EXPECT_DOUBLE_EQ(b.peak_bytes_per_gpu, b.weights_bytes + b.gradients_bytes + b.optimizer_bytes +
                                             b.activations_bytes + b.other_bytes);
  EXPECT_EQ(ClassifyFit(95, 90, 100), FitVerdict::kTight);
  EXPECT_EQ(ClassifyFit(80, 76, 100), FitVerdict::kFits);
  EXPECT_EQ(ClassifyFit(106, 101, 100), FitVerdict::kDoesNotFit);
}

// Over the GPU only by the allocator's reserve (fulcrum's assumption; PyTorch's allocator gives
// its cache back before it raises out-of-memory) is tight, not "does not fit"; over without it,
// or with under 10 % free with it, is what it was.
TEST(MemoryTest, TheAllocatorReserveAloneDoesNotDecideDoesNotFit) {
  EXPECT_EQ(ClassifyFit(101, 99, 100), FitVerdict::kTight);
  EXPECT_EQ(ClassifyFit(101, 100.5, 100), FitVerdict::kDoesNotFit);
  EXPECT_EQ(ClassifyFit(91, 87, 100), FitVerdict::kTight);
  EXPECT_EQ(ClassifyFit(89, 85, 100), FitVerdict::kFits);
}

// The loss's logits are of the tokens and width the head runs: a masked-LM head on 256 gathered
// positions of 2048 keeps 256 tokens' logits and head inputs (torchtitan/FSDP loss: 12 bytes a
// logit, LogitBytesPerElement); a 2-wide span head keeps 2 logits a token.
TEST(MemoryTest, LogitsAreOfTheHeadsTokensAndWidth) {
  const Model m = Gpt(24, 2048, 16);
  Training t;
  t.seq_len = 2048;
  const double all = EstimateMemory(m, t).logits_bytes;
  Training masked = t;
  masked.head_tokens = 256;
  const double gathered = 2048 - 256;
  EXPECT_DOUBLE_EQ(all - EstimateMemory(m, masked).logits_bytes,
                   12 * gathered * 51200 + 2 * gathered * 2048);
  Training span = t;
  span.head_width = 2;
  EXPECT_DOUBLE_EQ(all - EstimateMemory(m, span).logits_bytes, 12 * 2048 * (51200 - 2));
}

TEST(MemoryTest, ShardingRecomputeAndLoraReduceThePeak) {
  Model m = Gpt(32, 4096, 32);
  Training t;
  t.dp = 8;
  t.global_batch = 8;
  const double base = EstimateMemory(m, t).peak_bytes_per_gpu;
  Training z3 = t;
  z3.zero_stage = 3;
  EXPECT_LT(EstimateMemory(m, z3).peak_bytes_per_gpu, base);
  Training full = t;
  full.recompute = Recompute::kFull;
  EXPECT_LT(EstimateMemory(m, full).activations_bytes, EstimateMemory(m, t).activations_bytes);
  Training lora = t;
  lora.method = workload::Method::kLora;
  Training qlora = t;
  qlora.method = workload::Method::kQlora;
  EXPECT_LT(EstimateMemory(m, lora).peak_bytes_per_gpu, base);
  EXPECT_LT(EstimateMemory(m, qlora).weights_bytes, EstimateMemory(m, lora).weights_bytes);
}

}  // namespace
}  // namespace fulcrum::estimate
