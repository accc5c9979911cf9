// Memory and step time of the layouts real runs use -- uneven pipeline stages, context
// parallelism, HSDP and SHARD_GRAD_OP, mixture of experts with expert parallelism, FP8, and the
// time every recompute policy costs -- each against a published figure (cited per test).
#include <cmath>

#include <gtest/gtest.h>

#include "estimate/compute.h"
#include "estimate/estimate.h"
#include "estimate/memory.h"
#include "workload/model_io.h"
#include "workload/published_shapes_test_util.h"

namespace fulcrum::estimate {
namespace {

using workload::Framework;
using workload::Model;
using workload::Precision;
using workload::Recompute;
using workload::Training;

constexpr double kGB = 1e9;

// An 8-GPU node: A100-SXM4-80GB (312 TFLOP/s bf16 dense, 2039 GB/s, NVLink 600 GB/s
// bidirectional; NVIDIA A100 datasheet) or H100-SXM (989 bf16 / 1979 fp8 TFLOP/s dense,
// 3350 GB/s, NVLink 900 GB/s; NVIDIA H100 datasheet), `network_gbps` per node.
Hardware Node(bool hopper, bool fp8, double network_gbps) {
  Hardware hw;
  hw.peak_flops_16bit = hopper ? 989e12 : 312e12;
  hw.peak_flops = fp8 ? 1979e12 : hw.peak_flops_16bit;
  hw.memory_bytes_per_second = hopper ? 3350e9 : 2039e9;
  hw.intra_node_bytes_per_second = hopper ? 450e9 : 300e9;
  hw.nvlink = true;
  hw.gpus_per_node = 8;
  hw.network_bytes_per_second_per_node = network_gbps * 1e9 / 8;
  hw.efficiency = hopper ? DefaultTimeCalibration().hopper : DefaultTimeCalibration().ampere;
  return hw;
}

// BLOOM-176B as trained (workload/published_shapes_test_util.h; BigScience, arXiv 2211.05100,
// section 3.4) on nodes of 8 GPUs with 4 Omni-Path 100 Gbit/s links (section 3.3.2). The paper
// reports 156 TFLOP/s per GPU in the fastest configuration (Megatron-DeepSpeed's count, recompute
// included, so HFU x 312).
using workload::testing::Bloom176b;
using workload::testing::BloomTraining;
using workload::testing::Llama31_8b;

TEST(UnevenPipelineTest, Bloom176bIsEstimatedAtItsPublishedThroughput) {
  const Model m = Bloom176b();
  Training t = BloomTraining();
  // BLOOM predates flash attention in Megatron-DeepSpeed: plain attention with Megatron's fused
  // scale-mask-softmax (arXiv 2211.05100 section 3.4.2, "fused CUDA kernels").
  t.flash_attention = false;
  ASSERT_TRUE(workload::Validate(m, t, 384).ok()) << workload::Validate(m, t, 384).message();
  EXPECT_NEAR(workload::ParameterCount(m), 176.2e9, 176.2e9 * 0.005);
  const MemoryBreakdown mem = EstimateMemory(m, t);
  EXPECT_LT(mem.peak_bytes_per_gpu, 80.0 * (1u << 30));  // it ran on A100-80GB
  const StepTime st = EstimateStepTime(m, t, Node(false, false, 400));
  ASSERT_TRUE(std::isfinite(st.step_seconds));
  // Within 20 %: the Megatron kernel counts and overlaps that make Megatron-LM's own step times
  // (Korthikanti et al.) come out right leave BLOOM's Megatron-DeepSpeed run about 17 % slower
  // than estimated (docs/ACCURACY.md, family bloom).
  EXPECT_NEAR(st.hfu * 312, 156, 156 * 0.20);
}

// Memory and the bubble follow the most loaded stage: 70 layers on 12 stages behave like 6-layer
// stages (not 70/12), and loading the first stage with more layers raises its peak. With BLOOM's
// 250880-token vocabulary the last stage (5 layers + the logits, about 1.1 layers of work under
// full recompute) is the slowest whatever the split; a 32k vocabulary lets the 6-layer middle
// stages decide.
TEST(UnevenPipelineTest, MostLoadedStageSetsMemoryAndBubble) {
  Model m = Bloom176b();
  m.vocab = 32768;
  Training t = BloomTraining();
  const Hardware hw = Node(false, false, 400);
  const StepTime uneven = EstimateStepTime(m, t, hw);
  Model sixty = m;
  sixty.layers = 60;  // 5 per stage
  const StepTime five = EstimateStepTime(sixty, t, hw);
  Model seventy_two = m;
  seventy_two.layers = 72;  // 6 per stage, logits on a 6-layer last stage
  const StepTime six = EstimateStepTime(seventy_two, t, hw);
  EXPECT_GT(uneven.bubble_seconds, five.bubble_seconds);
  EXPECT_LE(uneven.bubble_seconds, six.bubble_seconds);
  Training heavy_first = t;
  heavy_first.first_stage_layers = 15;  // 15 + 10 x 5 + 5
  heavy_first.last_stage_layers = 5;
  ASSERT_TRUE(workload::Validate(m, heavy_first).ok())
      << workload::Validate(m, heavy_first).message();
  EXPECT_GT(EstimateMemory(m, heavy_first).peak_bytes_per_gpu,
            EstimateMemory(m, t).peak_bytes_per_gpu);
  EXPECT_GT(EstimateStepTime(m, heavy_first, hw).step_seconds, uneven.step_seconds);
}

// A last stage slowed by the logits (Korthikanti et al. 2022's 1T: 128 layers on 64 stages, 2
// layers each, the 51200-token output layer on the last) costs its extra time on every
// micro-batch, but not in the fill and drain: the first forward reaches it through the other
// stages and the last backward leaves through them, so the bubble is p - 1 of their times (equal
// stages: (p - 1) / m of the ideal time, Narayanan et al. 2021, arXiv 2104.04473, section 2.2).
TEST(UnevenPipelineTest, HeavyLastStageAddsToEveryMicroBatchButNotToTheBubble) {
  Model m = Bloom176b();
  m.layers = 64;  // 4 per stage on 16
  Training t = BloomTraining();
  t.pp = 16;
  t.dp = 1;
  t.global_batch = t.micro_batch * 64;  // 64 micro-batches
  ASSERT_TRUE(workload::Validate(m, t).ok()) << workload::Validate(m, t).message();
  const Hardware hw = Node(false, false, 1600);
  Model small_vocab = m, large_vocab = m;
  small_vocab.vocab = 65536;
  large_vocab.vocab = 4 * 65536;  // the last stage is the slowest with either
  const StepTime small = EstimateStepTime(small_vocab, t, hw);
  const StepTime large = EstimateStepTime(large_vocab, t, hw);
  ASSERT_GT(large.compute_seconds, small.compute_seconds);
  EXPECT_NEAR(large.bubble_seconds, small.bubble_seconds, 1e-3 * small.bubble_seconds);
  // The bubble is 15 of the 4-layer stages' micro-batch time, below 15 of the last's.
  Model no_head = m;
  no_head.vocab = 8;
  const StepTime even = EstimateStepTime(no_head, t, hw);
  const double even_stage = (even.compute_seconds + even.exposed_seconds) / 64;
  EXPECT_NEAR(small.bubble_seconds, 15 * even_stage, 0.01 * small.bubble_seconds);
  const double last_stage = (small.compute_seconds + small.exposed_seconds) / 64;
  EXPECT_LT(small.bubble_seconds, 15 * last_stage * 0.99);
}

// The interleaved schedule with uneven first and last stages (Llama 3 405B, arXiv 2407.21783,
// section 3.3.2): v model chunks per rank cut the bubble to (p - 1) / (v m) of the ideal time of
// m micro-batches (Narayanan et al. 2021, arXiv 2104.04473, section 2.2.2), at the pace of the
// slowest stage (the 8-layer middle ones); with the pipeline sends made free the bubble is 1/v
// of the non-interleaved one. The published run reached 43 % BF16 MFU on 8,192 H100 (Table 4);
// without interleaving (vpp 1, a 15/32 bubble) the estimate was 31 %.
TEST(InterleavedPipelineTest, BubbleIsPMinusOneOverVmOfTheSlowestStage) {
  const Model m = workload::testing::Llama3_405b();
  const Training t = workload::testing::Llama3_405bTraining();
  ASSERT_TRUE(workload::Validate(m, t, 8192).ok()) << workload::Validate(m, t, 8192).message();
  Hardware free_sends = Node(true, false, 3200);
  free_sends.network_bytes_per_second_per_node = 1e18;
  free_sends.intra_node_bytes_per_second = 1e18;
  Training flat = t;
  flat.vpp = 1;
  const StepTime v8 = EstimateStepTime(m, t, free_sends);
  const StepTime v1 = EstimateStepTime(m, flat, free_sends);
  ASSERT_GT(v8.bubble_seconds, 0);
  EXPECT_NEAR(v1.bubble_seconds / v8.bubble_seconds, 8.0, 8.0 * 0.01);
  // m = 2048 / 64 = 32 micro-batches: the bubble is 15 / (8 x 32) of the micro-batches' time.
  const double per_micro_batch = (v8.compute_seconds + v8.exposed_seconds) / 32;
  EXPECT_NEAR(v8.bubble_seconds, 15.0 / 8.0 * per_micro_batch, 0.05 * v8.bubble_seconds);
  const StepTime published = EstimateStepTime(m, t, Node(true, false, 3200));
  EXPECT_NEAR(published.mfu, 0.43, 0.43 * 0.10);
  EXPECT_LT(EstimateStepTime(m, flat, Node(true, false, 3200)).mfu, 0.35);
}

// The end stages' activations under the interleaved schedule with Llama 3 405B's split (arXiv
// 2407.21783, section 3.3.2: "the first model chunk on the first stage has only the embedding, and
// the last model chunk on the last stage has only output projection and loss"): 7 layers in 8
// chunks, one per chunk but the embedding's (the loss's). The first stage runs 2 (p - 1) + (v - 1)
// g = 142 forwards before its first backward and one more (Megatron-LM schedules.py,
// get_pp_rank_microbatches), in the order of Megatron's schedule table (get_schedule_table:
// micro-batches 0-15 on chunks 0-7, then 16-30 on chunk 0): 16 + 15 of the 143 on the
// embedding's chunk, 112 layers. The last stage runs (v - 1) g = 112 forwards and one more, the
// loss chunk of micro-batch 0: 112 layers. The 8-layer second stage holds 141 one-layer chunks.
TEST(InterleavedPipelineTest, EndStagesHoldNoLayerForTheEmbeddingAndLossChunks) {
  const Model m = workload::testing::Llama3_405b();
  const Training t = workload::testing::Llama3_405bTraining();
  ASSERT_EQ(workload::MicroBatchesPerStep(t), 32);
  const double per_layer = LayerActivationBytes(m, t);
  const int64_t p = t.pp, v = t.vpp, g = p;
  const double first_chunks = 2 * (p - 1) + (v - 1) * g + 1;
  const double embedding_chunks = g + (first_chunks - v * g);
  EXPECT_NEAR(StageActivationBytes(m, t, 7, p), (first_chunks - embedding_chunks) * per_layer,
              1e-9 * per_layer);
  EXPECT_NEAR(StageActivationBytes(m, t, 7, 1), ((v - 1) * g) * per_layer, 1e-9 * per_layer);
  EXPECT_NEAR(StageActivationBytes(m, t, 8, p - 1), (2 * (p - 2) + (v - 1) * g + 1) * per_layer,
              1e-9 * per_layer);
  // With 16 micro-batches (the 16,384-GPU row) every forward runs before the first backward:
  // 16 x 8 chunks, 16 of them the embedding's.
  Training half = t;
  half.dp = 2 * t.dp;
  ASSERT_EQ(workload::MicroBatchesPerStep(half), 16);
  EXPECT_NEAR(StageActivationBytes(m, half, 7, p), (16 * 8 - 16) * per_layer, 1e-9 * per_layer);
  // A split whose layers fill the chunks evenly keeps stage_layers / v per chunk.
  EXPECT_NEAR(StageActivationBytes(m, t, 16, p), first_chunks * 2 * per_layer, 1e-9 * per_layer);
}

// Llama 3.1 8B at 131072 tokens, FSDP2 + cp 4 on 8 H100, fp8, full AC: torchtitan measured
// 84.00 GiB reserved (pytorch/torchtitan@31a17bfd benchmarks/llama3_h100_202412_torchtitan.md;
// data/calibration/measured.csv tt-h100-t2-8b-fsdp2-cp4-mem).
Training TorchtitanCp4() {
  Training t;
  t.precision = Precision::kFp8;
  t.cp = 4;
  t.dp = 2;
  t.zero_stage = 3;
  t.micro_batch = 1;
  t.global_batch = 2;
  t.seq_len = 131072;
  t.recompute = Recompute::kFull;
  t.framework = Framework::kFsdp;
  return t;
}

// The loss's backward holds three fp32 copies of the 32768 x 128256 logits (the saved
// log-softmax, nll_loss's dense gradient, log_softmax's input gradient; memory.cc
// LogitBytesPerElement): without the third the row came out 12 % low.
TEST(ContextParallelTest, TorchtitanLongContextRowWithinFivePercent) {
  const Model m = Llama31_8b();
  const Training t = TorchtitanCp4();
  ASSERT_TRUE(workload::Validate(m, t, 8).ok()) << workload::Validate(m, t, 8).message();
  const double measured = 84.00 * (1u << 30);
  EXPECT_NEAR(EstimateMemory(m, t).reserved_bytes, measured, measured * 0.05);
}

// Activations are split along the sequence: exactly 1/cp of a layer's (flash attention keeps
// only per-row statistics); attention work per rank is 1/cp too, and the K/V ring adds traffic.
TEST(ContextParallelTest, ActivationsAndWorkScaleWithCp) {
  const Model m = Llama31_8b();
  Training one = TorchtitanCp4();
  one.cp = 1;
  one.dp = 8;
  one.global_batch = 8;
  one.recompute = Recompute::kNone;
  Training four = one;
  four.cp = 4;
  four.dp = 2;
  four.global_batch = 2;
  EXPECT_NEAR(LayerActivationBytes(m, four), LayerActivationBytes(m, one) / 4, 1e-6);
  const Hardware hw = Node(true, true, 3200);
  const StepTime st1 = EstimateStepTime(m, one, hw);
  const StepTime st4 = EstimateStepTime(m, four, hw);
  // Same 8 GPUs, a quarter of the sequences per step, each quarter-sequence per rank: the step
  // is shorter but not by more than 4x, and tokens/s per GPU stay within 25 % (ring traffic and
  // smaller GEMMs cost a little).
  EXPECT_LT(st4.step_seconds, st1.step_seconds);
  EXPECT_NEAR(st4.tokens_per_second_per_gpu, st1.tokens_per_second_per_gpu,
              0.25 * st1.tokens_per_second_per_gpu);
  EXPECT_GT(st4.communication_seconds, 0);
  // Over PCIe the K/V ring is slower, so the step is longer.
  Hardware pcie = hw;
  pcie.nvlink = false;
  pcie.intra_node_bytes_per_second = 31.5e9;
  EXPECT_GT(EstimateStepTime(m, four, pcie).communication_seconds, st4.communication_seconds);
}

// Data parallel over 8 ranks at 4096 tokens a sequence.
Training DataParallelEight(Framework f, int64_t zero, int64_t global_batch) {
  Training t;
  t.framework = f;
  t.zero_stage = zero;
  t.dp = 8;
  t.global_batch = global_batch;
  t.seq_len = 4096;
  return t;
}

// Gradient accumulation under ZeRO-2: FSDP SHARD_GRAD_OP gathers the parameters before each
// micro-batch's forward and reduce-scatters its gradients after its backward (8 micro-batches: 8
// times one step's gather and reduce-scatter; ZeRO-3 gathers once more, for the backward);
// DeepSpeed ZeRO-2 reduces every micro-batch and gathers once, after the step; Megatron's
// distributed optimizer reduces once per step, whatever the micro-batches.
TEST(DataParallelTest, ZeroTwoReducesEveryMicroBatchWhereTheFrameworkDoes) {
  const Model m = Llama31_8b();
  const Hardware hw = Node(false, false, 0);
  const auto comm = [&](Framework f, int64_t zero, int64_t global_batch) {
    return EstimateStepTime(m, DataParallelEight(f, zero, global_batch), hw).communication_seconds;
  };
  const double fsdp_one = comm(Framework::kFsdp, 2, 8);
  ASSERT_GT(fsdp_one, 0);
  EXPECT_NEAR(comm(Framework::kFsdp, 2, 64), 8 * fsdp_one, 1e-9 * fsdp_one);
  EXPECT_NEAR(comm(Framework::kFsdp, 3, 64), 1.5 * comm(Framework::kFsdp, 2, 64), 1e-9 * fsdp_one);
  const double deepspeed_one = comm(Framework::kDeepSpeed, 2, 8);
  EXPECT_NEAR(comm(Framework::kDeepSpeed, 2, 64), 4.5 * deepspeed_one, 1e-9 * deepspeed_one);
  EXPECT_NEAR(comm(Framework::kDeepSpeed, 1, 64), comm(Framework::kDeepSpeed, 1, 8),
              1e-9 * deepspeed_one);
  EXPECT_NEAR(comm(Framework::kMegatron, 1, 64), comm(Framework::kMegatron, 1, 8),
              1e-9 * deepspeed_one);
}

// DeepSpeed's ZeRO 0-2 without zero_optimization.overlap_comm (its default below stage 3)
// reduce on the compute stream after the backward, and stages 1-2 all-gather the updated
// parameters in the step: all of it exposed. With overlap_comm the reduction hides behind the
// backward as FSDP's and Megatron's do, the gather after the step still exposed; stage 3 and the
// other frameworks do not read the option.
TEST(DataParallelTest, DeepSpeedHidesItsReductionOnlyWithOverlapComm) {
  const Model m = Llama31_8b();
  const Hardware hw = Node(false, false, 0);
  const auto time = [&](Framework f, int64_t zero, bool overlap_comm) {
    Training t = DataParallelEight(f, zero, 64);
    t.overlap_comm = overlap_comm;
    return EstimateStepTime(m, t, hw);
  };
  for (int64_t zero : {0, 1, 2}) {
    const StepTime off = time(Framework::kDeepSpeed, zero, false);
    ASSERT_GT(off.communication_seconds, 0) << zero;
    EXPECT_NEAR(off.exposed_seconds, off.communication_seconds, 1e-12) << zero;
  }
  for (int64_t zero : {1, 2}) {
    const StepTime off = time(Framework::kDeepSpeed, zero, false);
    const StepTime on = time(Framework::kDeepSpeed, zero, true);
    EXPECT_EQ(on.communication_seconds, off.communication_seconds) << zero;
    EXPECT_LT(on.exposed_seconds, off.exposed_seconds) << zero;
    EXPECT_LT(on.step_seconds, off.step_seconds) << zero;
  }
  // Stage 1 with overlap_comm: the all-gather after the step (the same bytes as the
  // reduce-scatter, one ring each) stays exposed, so at least half of the traffic is.
  const StepTime z1 = time(Framework::kDeepSpeed, 1, true);
  EXPECT_GE(z1.exposed_seconds, 0.5 * z1.communication_seconds - 1e-12);
  // FSDP's SHARD_GRAD_OP and stage 3 overlap whatever the flag.
  EXPECT_EQ(time(Framework::kFsdp, 2, false).exposed_seconds,
            time(Framework::kFsdp, 2, true).exposed_seconds);
  EXPECT_EQ(time(Framework::kDeepSpeed, 3, false).exposed_seconds,
            time(Framework::kDeepSpeed, 3, true).exposed_seconds);
  EXPECT_LT(time(Framework::kDeepSpeed, 3, false).exposed_seconds,
            time(Framework::kDeepSpeed, 3, false).communication_seconds);
}

// FSDP1's backward prefetching under FULL_SHARD: all collectives share one NCCL stream, so
// BACKWARD_POST (the next all-gather issued after the current gradients) leaves the backward's
// all-gathers (a third of FULL_SHARD's traffic: forward and backward gathers, one reduce-scatter,
// the same bytes each) serialized with it, and NO_PREFETCH the reduce-scatters too: "no
// communication and computation overlap in the backward pass" (FullyShardedDataParallel's
// backward_prefetch docstring). The forward's gathers still hide; SHARD_GRAD_OP has no backward
// gather and does not read the option.
TEST(DataParallelTest, FsdpWithoutBackwardPrefetchExposesTheBackwardsCollectives) {
  const Model m = Llama31_8b();
  const Hardware hw = Node(false, false, 0);
  const auto time = [&](int64_t zero, workload::BackwardPrefetch p) {
    Training t = DataParallelEight(Framework::kFsdp, zero, 64);
    t.backward_prefetch = p;
    return EstimateStepTime(m, t, hw);
  };
  const StepTime pre = time(3, workload::BackwardPrefetch::kPre);
  const StepTime post = time(3, workload::BackwardPrefetch::kPost);
  const StepTime none = time(3, workload::BackwardPrefetch::kNone);
  ASSERT_GT(pre.communication_seconds, 0);
  EXPECT_EQ(post.communication_seconds, pre.communication_seconds);
  EXPECT_EQ(none.communication_seconds, pre.communication_seconds);
  const double third = pre.communication_seconds / 3;
  EXPECT_GE(post.exposed_seconds, pre.exposed_seconds + 0.5 * third);
  EXPECT_GE(post.exposed_seconds, third - 1e-12);
  EXPECT_GE(none.exposed_seconds, 2 * third - 1e-12);
  EXPECT_LT(none.exposed_seconds, pre.communication_seconds);  // the forward's gathers hide
  EXPECT_LT(pre.step_seconds, post.step_seconds);
  EXPECT_LT(post.step_seconds, none.step_seconds);
  EXPECT_EQ(time(2, workload::BackwardPrefetch::kNone).exposed_seconds,
            time(2, workload::BackwardPrefetch::kPre).exposed_seconds);
}

// The HF Trainer's --gradient_checkpointing wraps each FSDP unit in torch.utils.checkpoint, so
// under FULL_SHARD its recomputed forward gathers the parameters a third time per micro-batch
// (transformers' warning, issue 30404): with the gathers and the reduce-scatter of equal bytes,
// 4/3 of the traffic of FSDP's own activation checkpointing; nothing changes without full
// recompute or at SHARD_GRAD_OP.
TEST(DataParallelTest, HfGradientCheckpointingGathersEachFsdpUnitOnceMore) {
  const Model m = Llama31_8b();
  const Hardware hw = Node(false, false, 0);
  const auto comm = [&](int64_t zero, Recompute rc, bool hf) {
    Training t = DataParallelEight(Framework::kFsdp, zero, 64);
    t.recompute = rc;
    t.hf_gradient_checkpointing = hf;
    return EstimateStepTime(m, t, hw).communication_seconds;
  };
  const double fsdp_own = comm(3, Recompute::kFull, false);
  ASSERT_GT(fsdp_own, 0);
  EXPECT_NEAR(comm(3, Recompute::kFull, true), fsdp_own * 4 / 3, 1e-9 * fsdp_own);
  EXPECT_EQ(comm(3, Recompute::kNone, true), comm(3, Recompute::kNone, false));
  EXPECT_EQ(comm(2, Recompute::kFull, true), comm(2, Recompute::kFull, false));
}

Training FsdpStates(int64_t zero, int64_t dp, int64_t dp_shard) {
  Training t;
  t.framework = Framework::kFsdp;
  t.precision = Precision::kBf16Mixed;
  t.grad_precision = workload::GradPrecision::kBf16;
  t.zero_stage = zero;
  t.dp = dp;
  t.dp_shard = dp_shard;
  return t;
}

// FSDP SHARD_GRAD_OP shards its fp32 flat parameters (the master copy) with the gradients and
// optimizer states and keeps the 16-bit parameters unsharded: 2 psi + 14 psi / N with bf16
// gradients, the ZeRO paper's P_os+g: 16.6 GB for psi = 7.5 B at N = 64 (Rajbhandari et al.,
// arXiv 1910.02054, Figure 1).
TEST(ShardingTest, ShardGradOpKeepsTheMasterSharded) {
  const ModelStateBytes s = FullModelStates(7.5e9, 0, FsdpStates(2, 64, 0));
  EXPECT_NEAR((s.weights_bytes + s.gradients_bytes + s.optimizer_bytes + s.buffer_bytes) / kGB,
              16.6, 0.05);
  EXPECT_NEAR(s.weights_bytes, 7.5e9 * 4 / 64, 1);
}

// HYBRID_SHARD over 256 GPUs with shard groups of 64: states as FULL_SHARD over 64 (ZeRO paper
// Figure 1, P_os+g+p at N = 64: 1.9 GB for 7.5 B), not over 256.
TEST(ShardingTest, HybridShardShardsWithinTheGroup) {
  // fp32 gradients (FSDP's default with bf16 compute): 4 + 4 + 8 = 16 bytes, ZeRO's 2 + 2 + 12.
  Training hybrid = FsdpStates(3, 256, 64);
  hybrid.grad_precision = workload::GradPrecision::kDefault;
  const ModelStateBytes hsdp = FullModelStates(7.5e9, 0, hybrid);
  EXPECT_NEAR((hsdp.weights_bytes + hsdp.gradients_bytes + hsdp.optimizer_bytes) / kGB, 1.875,
              0.01);
  Training full_shard = hybrid;
  full_shard.dp_shard = 0;
  const ModelStateBytes full = FullModelStates(7.5e9, 0, full_shard);
  EXPECT_NEAR(full.optimizer_bytes * 4, hsdp.optimizer_bytes, 1);
}

// Across 4 nodes on a slow network, HSDP keeps the per-micro-batch gathers inside the node and
// reduces across nodes once per step: faster than FULL_SHARD over all 32 GPUs (Zhao et al. 2023,
// PyTorch FSDP, arXiv 2304.11277, section 3.2.2 hybrid sharding).
TEST(ShardingTest, HybridShardIsFasterOnSlowNetworks) {
  const Model m = Llama31_8b();
  Training full = FsdpStates(3, 32, 0);
  full.grad_precision = workload::GradPrecision::kDefault;
  full.micro_batch = 2;
  full.global_batch = 32 * 2 * 4;
  full.seq_len = 4096;
  Training hsdp = full;
  hsdp.dp_shard = 8;
  const Hardware slow = Node(true, false, 100);
  EXPECT_LT(EstimateStepTime(m, hsdp, slow).step_seconds,
            EstimateStepTime(m, full, slow).step_seconds);
  EXPECT_GT(EstimateMemory(m, hsdp).peak_bytes_per_gpu, EstimateMemory(m, full).peak_bytes_per_gpu);
}

// Mixtral 8x7B (mistralai/Mixtral-8x7B-v0.1 config.json; 46.7 B total, 12.9 B active per token,
// Mistral AI "Mixtral of experts").
Model Mixtral() {
  const Result<Model> m =
      workload::ParseHfConfig(workload::testing::kMixtralConfig, "mixtral/config.json");
  EXPECT_TRUE(m.ok()) << m.status().message();
  return m.ok() ? *m : Model{};
}

// Megatron on dp data-parallel ranks with ep expert-parallel ones carved out of them, global_batch
// sequences of 4096 tokens per step.
Training MegatronExperts(int64_t dp, int64_t ep, int64_t global_batch) {
  Training t;
  t.framework = Framework::kMegatron;
  t.dp = dp;
  t.ep = ep;
  t.global_batch = global_batch;
  t.seq_len = 4096;
  return t;
}

TEST(MixtureOfExpertsTest, ExpertParallelDividesOnlyTheExperts) {
  const Model m = Mixtral();
  Training t;
  t.framework = Framework::kMegatron;
  t.precision = Precision::kBf16Mixed;
  t.dp = 8;
  t.global_batch = 8;
  t.seq_len = 4096;
  Training ep8 = t;
  ep8.ep = 8;
  // Megatron bf16 weights: 2 bytes per parameter held; the routed experts split over ep.
  const double routed = workload::RoutedExpertParameterCount(m);
  const double total = workload::ParameterCount(m);
  EXPECT_NEAR(EstimateMemory(m, t).weights_bytes, 2 * total, 1e3);
  EXPECT_NEAR(EstimateMemory(m, ep8).weights_bytes, 2 * (total - routed + routed / 8), 1e3);
  // Model FLOPs count the active parameters: 6 x 12.9 B per token plus attention (12 L h s).
  const double attention = 12.0 * 32 * 4096 * 4096;
  EXPECT_NEAR(ModelFlopsPerToken(m, t), 6 * 12.9e9 + attention, (6 * 12.9e9 + attention) * 0.03);
}

TEST(MixtureOfExpertsTest, AllToAllCostsMoreAcrossNodes) {
  const Model m = Mixtral();
  Training t;
  t.framework = Framework::kMegatron;
  t.dp = 16;
  t.ep = 8;
  t.global_batch = 64;
  t.seq_len = 4096;
  t.recompute = Recompute::kFull;
  const Hardware node = Node(true, false, 3200);
  const StepTime within = EstimateStepTime(m, t, node);
  Training across = t;  // tp 2 pushes the 8 expert ranks over two nodes
  across.tp = 2;
  across.dp = 8;
  across.global_batch = 32;
  const StepTime wide = EstimateStepTime(m, across, Node(true, false, 100));
  ASSERT_TRUE(std::isfinite(within.step_seconds));
  EXPECT_GT(within.communication_seconds, 0);
  EXPECT_GT(wide.exposed_seconds / wide.step_seconds, within.exposed_seconds / within.step_seconds);
}

// An all-to-all across nodes leaves each GPU through its share of its node's network, not through
// all of the node's NICs as a ring's boundary crossing does: 32 ranks on 4 nodes of 8 H100s with
// 8 x 400 Gbit/s send the 24/32 of their bytes meant for other nodes at 50 GB/s (times the network
// efficiency), while the 7/32 for their node's peers go over NVLink at the same time; ranks 2
// apart (Megatron's ep ranks under etp 2) have 4 of the group on a node, so 28/32 leave it. Within
// a node it is the ring formula over NVLink.
TEST(MixtureOfExpertsTest, AllToAllAcrossNodesLeavesThroughEachGpusShareOfTheNetwork) {
  TimeCalibration c = DefaultTimeCalibration();
  c.inter_node_latency_seconds = 0;
  c.intra_node_latency_seconds = 0;
  const Hardware hw = Node(true, false, 3200);
  const double bytes = 1e9;
  const double nic = 400e9 * c.network_efficiency / 8;
  const double nvlink = 450e9 * c.nvlink_efficiency;
  EXPECT_NEAR(AllToAllGroupSeconds(bytes, 32, 1, hw, c), 24.0 / 32 * bytes / nic, 1e-12);
  EXPECT_NEAR(AllToAllGroupSeconds(bytes, 32, 2, hw, c), 28.0 / 32 * bytes / nic, 1e-12);
  EXPECT_NEAR(AllToAllGroupSeconds(bytes, 8, 1, hw, c), 7.0 / 8 * bytes / nvlink, 1e-12);
  // Twice the network, half the time across nodes; a single node does not use it.
  const Hardware fast = Node(true, false, 6400);
  EXPECT_NEAR(AllToAllGroupSeconds(bytes, 32, 1, fast, c),
              AllToAllGroupSeconds(bytes, 32, 1, hw, c) / 2, 1e-12);
  EXPECT_DOUBLE_EQ(AllToAllGroupSeconds(bytes, 8, 1, fast, c),
                   AllToAllGroupSeconds(bytes, 8, 1, hw, c));
  EXPECT_DOUBLE_EQ(AllToAllGroupSeconds(bytes, 1, 1, hw, c), 0);
}

Model DeepSeekV3() {
  const Result<Model> m =
      workload::ParseHfConfig(workload::testing::kDeepSeekV3Config, "deepseek-v3/config.json");
  EXPECT_TRUE(m.ok()) << m.status().message();
  return m.ok() ? *m : Model{};
}

// The chance that a token reaches a given node, DeepSeek-V3 (256 routed experts, top 8) over 8
// nodes of 32 experts: a balanced router misses a node with C(224, 8) / C(256, 8); with its
// node-limited routing (8 groups, 4 chosen: the groups are the nodes) a node is chosen with
// C(7, 3) / C(8, 4) = 1/2 and then missed by the 8 experts drawn from the chosen 128 with
// C(96, 8) / C(128, 8): about 3.6 nodes per token of the 4 allowed. Groups that are not whole
// nodes' experts do not limit the nodes.
TEST(MixtureOfExpertsTest, NodeLimitedRoutingBoundsTheNodesATokenReaches) {
  const Model m = DeepSeekV3();
  Training t = MegatronExperts(512, 64, 512);
  const auto misses = [](double pool, double held) {
    double p = 1;
    for (int i = 0; i < 8; ++i) p *= (pool - held - i) / (pool - i);
    return p;
  };
  EXPECT_NEAR(NodeReachProbability(m, t, 8), 1 - misses(256, 32), 1e-12);
  t.moe_router_groups = 8;
  t.moe_router_group_topk = 4;
  EXPECT_NEAR(NodeReachProbability(m, t, 8), 0.5 * (1 - misses(128, 32)), 1e-12);
  EXPECT_NEAR(8 * NodeReachProbability(m, t, 8), 3.62, 0.01);
  // 16 groups on 8 nodes, 8 chosen: two groups a node; the same 4-of-8-nodes share of experts.
  t.moe_router_groups = 16;
  t.moe_router_group_topk = 8;
  EXPECT_LT(NodeReachProbability(m, t, 8), 1 - misses(256, 32));
  t.moe_router_groups = 4;  // groups of two nodes each: no node limit modelled
  t.moe_router_group_topk = 2;
  EXPECT_NEAR(NodeReachProbability(m, t, 8), 1 - misses(256, 32), 1e-12);
}

// The flex dispatcher sends a token once to each other node it has experts on, where the
// all-to-all sends each of its k copies: DeepSeek-V3 on ep 64 over 8 nodes, 4096 tokens of 7168
// BF16 elements per GPU, crosses the network with 7 x reach copies per token instead of 8 x 56 / 64
// (the NVLink forwarding, 8 x 7/8 copies at NVLink's rate, takes less); inside one node both are
// the same all-to-all.
TEST(MixtureOfExpertsTest, FlexDispatchSendsEachTokenOncePerNode) {
  const Model m = DeepSeekV3();
  TimeCalibration c = DefaultTimeCalibration();
  c.inter_node_latency_seconds = 0;
  c.intra_node_latency_seconds = 0;
  const Hardware hw = Node(true, true, 3200);
  Training t = MegatronExperts(512, 64, 512);
  t.moe_dispatcher = workload::MoeDispatcher::kFlex;
  t.moe_router_groups = 8;
  t.moe_router_group_topk = 4;
  const double tokens = 4096, token_bytes = 7168 * 2;
  const double nic = 400e9 * c.network_efficiency / 8;
  const double flex = FlexDispatchSeconds(tokens, token_bytes, m, t, hw, c);
  EXPECT_NEAR(flex, tokens * 7 * NodeReachProbability(m, t, 8) * token_bytes / nic, 1e-12);
  const double all_to_all = AllToAllGroupSeconds(tokens * 8 * token_bytes, 64, 1, hw, c);
  EXPECT_NEAR(all_to_all, tokens * 8 * 56.0 / 64 * token_bytes / nic, 1e-12);
  EXPECT_NEAR(all_to_all / flex, 7.0 / (7 * 0.4526), 0.01);
  t.ep = 8;
  EXPECT_DOUBLE_EQ(FlexDispatchSeconds(tokens, token_bytes, m, t, hw, c),
                   AllToAllGroupSeconds(tokens * 8 * token_bytes, 8, 1, hw, c));
}

// What the flex dispatcher and routing groups are refused on, with exit-2 messages: a dense
// model, a framework without Megatron-Core's dispatchers, groups that do not split the experts
// or cannot hold a token's experts, one of the pair alone.
TEST(MixtureOfExpertsTest, DispatcherAndRoutingGroupsAreChecked) {
  const Model m = DeepSeekV3();
  Training t = MegatronExperts(512, 64, 512);
  t.moe_dispatcher = workload::MoeDispatcher::kFlex;
  t.moe_router_groups = 8;
  t.moe_router_group_topk = 4;
  EXPECT_TRUE(workload::Validate(m, t, 512).ok()) << workload::Validate(m, t, 512).message();
  const auto refused = [&](const Training& bad, const std::string& text) {
    const Status s = workload::Validate(m, bad, 512);
    EXPECT_NE(s.message().find(text), std::string::npos) << s.message();
  };
  Training fsdp = t;
  fsdp.framework = Framework::kFsdp;
  fsdp.zero_stage = 3;
  refused(fsdp, "Megatron-Core's dispatcher");
  Training uneven = t;
  uneven.moe_router_groups = 7;
  refused(uneven, "do not split into equal groups");
  Training narrow = t;
  narrow.moe_router_groups = 128;
  narrow.moe_router_group_topk = 2;  // 2 groups of 2 experts: 4 < top 8
  refused(narrow, "fewer than the 8");
  Training alone = t;
  alone.moe_router_group_topk = 0;
  refused(alone, "expected both set");
  EXPECT_EQ(workload::ParseMoeDispatcher("allgather").status().message().find("not modelled") !=
                std::string::npos,
            true);
}

// Megatron-Core's expert-parallel all-to-all overlap (--overlap-moe-expert-parallel-comm): the
// all-to-all of a paired micro-batch runs under the other's compute (Megatron-LM@d98e8a64dd
// megatron/core/pipeline_parallel/combined_1f1b.py), so the same traffic is sent and less of it is
// exposed; what stays exposed is the unpaired first forward and last backward, the remainder where
// a direction's all-to-all outlasts the other micro-batch's compute, and the slowdown of the
// compute that hides it. Memory: one more layer (pp 1) or one more warm-up chunk (interleaved).
TEST(MixtureOfExpertsTest, AllToAllOverlapHidesTheDispatchBehindTheOtherMicroBatch) {
  const Model m = Mixtral();
  Training t = MegatronExperts(16, 8, 64);
  t.zero_stage = 1;
  const Hardware node = Node(true, false, 3200);
  Training overlap = t;
  overlap.moe_a2a_overlap = true;
  ASSERT_TRUE(workload::Validate(m, overlap, 16).ok())
      << workload::Validate(m, overlap, 16).message();
  const StepTime plain = EstimateStepTime(m, t, node);
  const StepTime hidden = EstimateStepTime(m, overlap, node);
  ASSERT_TRUE(std::isfinite(plain.step_seconds));
  EXPECT_NEAR(hidden.communication_seconds, plain.communication_seconds,
              1e-9 * plain.communication_seconds);
  EXPECT_NEAR(hidden.compute_seconds, plain.compute_seconds, 1e-9 * plain.compute_seconds);
  EXPECT_LT(hidden.exposed_seconds, plain.exposed_seconds);
  // The all-to-all of the 4 micro-batches' first forward and last backward stays exposed: at least
  // a quarter of what the plain schedule exposes of it, and the step no shorter than the compute.
  EXPECT_GT(hidden.step_seconds, plain.compute_seconds);
  TimeCalibration free = DefaultTimeCalibration();
  free.overlapped_comm_slowdown = 0;
  const StepTime free_step = EstimateStepTime(m, overlap, node, free);
  EXPECT_LT(free_step.exposed_seconds, hidden.exposed_seconds);
  // More micro-batches per step: a smaller unpaired share, less exposed per token.
  Training many = overlap;
  many.global_batch = 256;
  const StepTime long_step = EstimateStepTime(m, many, node);
  EXPECT_LT(long_step.exposed_seconds / 4, hidden.exposed_seconds);
  // pp 1: micro-batch i + 1's layer j runs beside micro-batch i's layer L - 1 - j, one layer more.
  const MemoryBreakdown a = EstimateMemory(m, t), b = EstimateMemory(m, overlap);
  const double layer = LayerActivationBytes(m, workload::CountModel(m), t);
  EXPECT_NEAR(b.activations_bytes - a.activations_bytes, layer, 1e-6 * layer);
  // Interleaved: one more warm-up chunk of L / (pp v) layers on the first stage.
  Training pipe = t;
  pipe.pp = 4;
  pipe.vpp = 2;
  pipe.dp = 4;
  pipe.ep = 4;
  pipe.global_batch = 32;
  Training pipe_overlap = pipe;
  pipe_overlap.moe_a2a_overlap = true;
  ASSERT_TRUE(workload::Validate(m, pipe_overlap, 16).ok());
  const double chunk = layer * static_cast<double>(m.layers) / 8;
  EXPECT_NEAR(
      EstimateMemory(m, pipe_overlap).activations_bytes - EstimateMemory(m, pipe).activations_bytes,
      chunk, 1e-6 * chunk);
}

// What Megatron-Core's TransformerConfig refuses with the overlap (Megatron-LM@d98e8a64dd
// transformer_config.py __post_init__), fulcrum refuses too.
TEST(MixtureOfExpertsTest, AllToAllOverlapNeedsWhatMegatronNeeds) {
  const Model m = Mixtral();
  Training t = MegatronExperts(8, 8, 8);
  t.moe_a2a_overlap = true;
  ASSERT_TRUE(workload::Validate(m, t, 8).ok());
  Training no_ep = t;
  no_ep.ep = 1;
  EXPECT_NE(workload::Validate(m, no_ep, 8).message().find("--ep > 1"), std::string::npos);
  Training pipe = t;
  pipe.pp = 2;
  pipe.dp = 4;
  pipe.ep = 4;
  EXPECT_NE(workload::Validate(m, pipe, 8).message().find("--vpp > 1"), std::string::npos);
  Training full = t;
  full.recompute = Recompute::kFull;
  EXPECT_NE(workload::Validate(m, full, 8).message().find("full recompute"), std::string::npos);
  Training moe = t;
  moe.recompute = Recompute::kSelective;
  moe.recompute_modules = workload::kRecomputeMoe;
  EXPECT_NE(workload::Validate(m, moe, 8).message().find("moe in"), std::string::npos);
  Training fsdp = t;
  fsdp.framework = Framework::kFsdp;
  EXPECT_NE(workload::Validate(m, fsdp, 8).message().find("megatron or megatron-fsdp"),
            std::string::npos);
  Training fp32 = t;
  fp32.precision = Precision::kFp32;
  EXPECT_NE(workload::Validate(m, fp32, 8).message().find("bf16 or fp16"), std::string::npos);
}

// Whole experts (--expert-tp 1, Megatron-Core --expert-tensor-parallel-size 1, as Megatron-Bridge's
// MoE recipes run): each GPU holds experts / ep whole experts, not split over tp, so ep can span
// the tp ranks (ep x etp divides tp x cp x dp); the expert FLOPs per GPU are the same, the MoE
// layers' MLP runs no tensor-parallel collective, and the expert states are replicated over tp x cp
// x dp / ep ranks.
TEST(MixtureOfExpertsTest, WholeExpertsSpanTheTensorParallelRanks) {
  const Model m = Mixtral();
  Training t = MegatronExperts(4, 4, 32);
  t.tp = 2;
  t.sequence_parallel = true;
  t.zero_stage = 1;
  Training whole = t;
  whole.expert_tp = 1;
  ASSERT_TRUE(workload::Validate(m, whole, 8).ok()) << workload::Validate(m, whole, 8).message();
  const double routed = workload::RoutedExpertParameterCount(m);
  // Megatron bf16 weights: the experts / ep on a GPU whole (not / tp), the rest over tp.
  EXPECT_NEAR(EstimateMemory(m, whole).weights_bytes - EstimateMemory(m, t).weights_bytes,
              2 * (routed / 4 - routed / 8), 1e-3 * routed);
  const Hardware node = Node(true, false, 3200);
  const StepTime split = EstimateStepTime(m, t, node), unsplit = EstimateStepTime(m, whole, node);
  EXPECT_LT(unsplit.communication_seconds, split.communication_seconds);
  EXPECT_NEAR(unsplit.compute_seconds, split.compute_seconds, 0.05 * split.compute_seconds);
  // ep 8 over tp 2 x dp 4: only with whole experts.
  Training wide = whole;
  wide.ep = 8;
  EXPECT_TRUE(workload::Validate(m, wide, 8).ok()) << workload::Validate(m, wide, 8).message();
  Training split_wide = t;
  split_wide.ep = 8;
  EXPECT_NE(workload::Validate(m, split_wide, 8).message().find("must divide the data-parallel"),
            std::string::npos);
  Training no_sp = whole;
  no_sp.sequence_parallel = false;
  EXPECT_NE(workload::Validate(m, no_sp, 8).message().find("--sequence-parallel"),
            std::string::npos);
  Training two = whole;
  two.tp = 4;
  two.dp = 2;
  two.ep = 2;
  two.expert_tp = 2;
  EXPECT_NE(workload::Validate(m, two, 8).message().find("whole experts (1)"), std::string::npos);
  Training fsdp = whole;
  fsdp.framework = Framework::kFsdp;
  fsdp.zero_stage = 3;
  EXPECT_NE(workload::Validate(m, fsdp, 8).message().find("megatron or megatron-fsdp"),
            std::string::npos);
}

// The token permutation Megatron-Core's alltoall dispatcher runs around the experts, per token
// per MoE layer (token_dispatcher.py@d98e8a64dd): permute k h read and written, the sort by local
// expert and its inverse 2 k h each (with more than one local expert), unpermute k h read and h
// written; averaged over the layers, dense ones moving none.
TEST(MixtureOfExpertsTest, PermutationTrafficIsMegatronsDispatchers) {
  Model m = Mixtral();  // 8 experts, top-2, hidden 4096, every layer MoE
  Training t;
  t.ep = 2;  // 4 local experts: sorted
  EXPECT_DOUBLE_EQ(MoePermutationElements(m, t), 7 * 2 * 4096.0 + 4096);
  t.ep = 8;  // one local expert: no sort
  EXPECT_DOUBLE_EQ(MoePermutationElements(m, t), 3 * 2 * 4096.0 + 4096);
  m.dense_layers = 8;  // 8 of 32 layers dense
  EXPECT_DOUBLE_EQ(MoePermutationElements(m, t), (3 * 2 * 4096.0 + 4096) * 24 / 32);
  EXPECT_EQ(MoePermutationElements(Llama31_8b(), t), 0);
}

// DualPipe and DualPipeV (deepseek-ai/DualPipe@3da1bbe README's table): the same compute and
// traffic as 1F1B on the same pp ranks, a bubble of (PP/2 - 1)(F&B + B - 3W) for DualPipe's pp
// stages and (pp - 1)(F&B + B - 3W) for DualPipeV's 2 pp stages of half the size -- so DualPipe's
// is (pp/2 - 1) x 2 / (pp - 1) of DualPipeV's -- twice the weights (DualPipe) and PP + 1 stage
// micro-batches of activations in flight.
TEST(PipelineScheduleTest, DualPipeBubblesWeightsAndActivations) {
  const Model m = Llama31_8b();  // 32 layers
  Training t;
  t.framework = Framework::kMegatron;
  t.pp = 8;
  t.dp = 2;
  t.tp = 1;
  t.zero_stage = 1;
  t.global_batch = 64;  // 32 micro-batches per step, at least 2 per rank
  t.seq_len = 2048;
  Training dual = t, vee = t;
  dual.pipeline_schedule = workload::PipelineSchedule::kDualPipe;
  vee.pipeline_schedule = workload::PipelineSchedule::kDualPipeV;
  ASSERT_TRUE(workload::Validate(m, dual, 16).ok()) << workload::Validate(m, dual, 16).message();
  ASSERT_TRUE(workload::Validate(m, vee, 16).ok());
  const Hardware node = Node(false, false, 1600);
  const StepTime a = EstimateStepTime(m, t, node);
  const StepTime d = EstimateStepTime(m, dual, node);
  const StepTime v = EstimateStepTime(m, vee, node);
  ASSERT_GT(a.bubble_seconds, 0);
  EXPECT_NEAR(d.compute_seconds, a.compute_seconds, 1e-9 * a.compute_seconds);
  EXPECT_NEAR(d.communication_seconds, a.communication_seconds, 1e-9 * a.communication_seconds);
  EXPECT_NEAR(d.bubble_seconds / v.bubble_seconds, (8.0 / 2 - 1) * 2 / (8 - 1), 1e-9);
  // F + 2B - 3W over 2 (F + B): at least 1/3 (B = 2F, W = F) and at most 5/6 (W = 0).
  EXPECT_GE(v.bubble_seconds / a.bubble_seconds, 1.0 / 3 - 1e-9);
  EXPECT_LE(v.bubble_seconds / a.bubble_seconds, 5.0 / 6);
  EXPECT_LE(d.exposed_seconds, a.exposed_seconds);  // the pipeline sends overlap too
  // Two stages of 4 layers on every rank: DualPipe's first rank holds 8 layers with the embedding
  // and the head, its middle ranks 8; DualPipeV's two stages of 2 layers are 1F1B's 4, with the
  // head beside the embedding on the first rank (1F1B's first stage: 4 layers and the embedding).
  const MemoryBreakdown ma = EstimateMemory(m, t), md = EstimateMemory(m, dual),
                        mv = EstimateMemory(m, vee);
  const double head = 2.0 * static_cast<double>(m.vocab) * static_cast<double>(m.hidden);
  EXPECT_GT(md.weights_bytes, 1.8 * ma.weights_bytes);
  EXPECT_NEAR(mv.weights_bytes, ma.weights_bytes + head, 0.01 * ma.weights_bytes);
  // 1F1B's first stage keeps pp = 8 micro-batches of its 4 layers; DualPipe pp + 1 = 9 of its
  // 4-layer stages; DualPipeV 2 pp + 1 = 17 of its 2-layer ones.
  const double layer = LayerActivationBytes(m, workload::CountModel(m), t);
  EXPECT_NEAR(ma.activations_bytes, 32 * layer, 1e-6 * ma.activations_bytes);
  EXPECT_NEAR(md.activations_bytes, 36 * layer, 1e-6 * md.activations_bytes);
  EXPECT_NEAR(mv.activations_bytes, 34 * layer, 1e-6 * mv.activations_bytes);
  // DualPipe on 2 ranks: (2/2 - 1) = no bubble.
  Training two = dual;
  two.pp = 2;
  two.dp = 8;
  ASSERT_TRUE(workload::Validate(m, two, 16).ok());
  EXPECT_EQ(EstimateStepTime(m, two, node).bubble_seconds, 0);
}

// A MoE model's all-to-all under DualPipe runs beside the paired chunk's compute, as Megatron's
// all-to-all overlap does, all but the unpaired chunks' (1.5 pp - 1 of the first rank's m).
TEST(PipelineScheduleTest, DualPipeHidesTheAllToAll) {
  const Model m = Mixtral();
  Training t = MegatronExperts(8, 8, 64);
  t.pp = 4;
  t.zero_stage = 1;
  Training dual = t;
  dual.pipeline_schedule = workload::PipelineSchedule::kDualPipe;
  ASSERT_TRUE(workload::Validate(m, dual, 32).ok()) << workload::Validate(m, dual, 32).message();
  const Hardware node = Node(true, false, 400);
  const StepTime a = EstimateStepTime(m, t, node), d = EstimateStepTime(m, dual, node);
  EXPECT_NEAR(d.communication_seconds, a.communication_seconds, 1e-9 * a.communication_seconds);
  EXPECT_LT(d.exposed_seconds, a.exposed_seconds);
}

// What deepseek-ai/DualPipe@3da1bbe asserts, and what fulcrum estimates them under.
TEST(PipelineScheduleTest, DualPipeNeedsWhatTheLibraryNeeds) {
  const Model m = Llama31_8b();  // 32 layers
  Training t;
  t.framework = Framework::kMegatron;
  t.pp = 4;
  t.dp = 2;
  t.global_batch = 16;  // 8 micro-batches: 2 per rank
  t.pipeline_schedule = workload::PipelineSchedule::kDualPipe;
  ASSERT_TRUE(workload::Validate(m, t, 8).ok()) << workload::Validate(m, t, 8).message();
  Training odd = t;
  odd.pp = 3;
  odd.dp = 2;
  EXPECT_NE(workload::Validate(m, odd, 6).message().find("even"), std::string::npos);
  Training few = t;
  few.global_batch = 12;  // 6 micro-batches for 4 ranks
  EXPECT_NE(workload::Validate(m, few, 8).message().find("at least 2 micro-batches per rank"),
            std::string::npos);
  Training interleaved = t;
  interleaved.vpp = 2;
  EXPECT_NE(workload::Validate(m, interleaved, 8).message().find("--vpp 1"), std::string::npos);
  Training ds = t;
  ds.framework = Framework::kDeepSpeed;
  EXPECT_NE(workload::Validate(m, ds, 8).message().find("megatron or fsdp"), std::string::npos);
  Training vee = odd;  // DualPipeV runs on any pp >= 2
  vee.pipeline_schedule = workload::PipelineSchedule::kDualPipeV;
  vee.global_batch = 12;
  EXPECT_TRUE(workload::Validate(m, vee, 6).ok()) << workload::Validate(m, vee, 6).message();
  Training thin = vee;  // 2 x 32 stages of a 32-layer model: not one layer each
  thin.pp = 32;
  thin.dp = 1;
  thin.global_batch = 64;
  EXPECT_NE(workload::Validate(m, thin, 32).message().find("at least one layer each"),
            std::string::npos)
      << workload::Validate(m, thin, 32).message();
  EXPECT_EQ(workload::ParsePipelineSchedule("DualPipeV").value(),
            workload::PipelineSchedule::kDualPipeV);
  EXPECT_NE(
      workload::ParsePipelineSchedule("zb").status().message().find("1f1b, dualpipe or dualpipev"),
      std::string::npos);
}

// FP8 (Transformer Engine) on H100: GEMMs at the 2x FP8 peak (at a lower fraction of it); under
// Megatron an fp8 copy and an fp8 transpose of every layer weight (NVIDIA/TransformerEngine issue
// #1261: Hopper FP8 GEMMs are TN-only, TE caches both), embeddings and head 16-bit; optimizer
// states as bf16; linear inputs saved as FP8 casts under Transformer Engine.
// llm-foundry measured MPT-3B fp8 on 8 H100 at 8192 tokens: 19146 tokens/s/GPU
// (mosaicml/llm-foundry@8c8dd48f72 scripts/train/benchmarking/README.md).
TEST(Fp8Test, FasterGemmsMoreWeightsSameActivations) {
  Model m;
  m.name = "mpt-3b";
  m.layers = 32;
  m.hidden = 2560;
  m.heads = 20;
  m.kv_heads = 20;
  m.ffn_hidden = 10240;
  m.vocab = 50368;
  m.tied_embeddings = true;
  m.position = workload::PositionKind::kAlibi;
  m.norm = workload::NormKind::kLayerNormNoBias;
  Training t;
  t.precision = Precision::kFp8;
  t.framework = Framework::kFsdp;
  t.zero_stage = 3;
  t.dp = 8;
  t.micro_batch = 3;
  t.global_batch = 144;
  t.seq_len = 8192;
  const StepTime fp8 = EstimateStepTime(m, t, Node(true, true, 3200));
  EXPECT_NEAR(fp8.tokens_per_second_per_gpu, 19146, 19146 * 0.20);
  Training bf16 = t;
  bf16.precision = Precision::kBf16Mixed;
  EXPECT_GT(fp8.tokens_per_second_per_gpu,
            EstimateStepTime(m, bf16, Node(true, false, 3200)).tokens_per_second_per_gpu);
  Training megatron = t;
  megatron.framework = Framework::kMegatron;
  megatron.zero_stage = 1;
  Training megatron_bf16 = megatron;
  megatron_bf16.precision = Precision::kBf16Mixed;
  const MemoryBreakdown a = EstimateMemory(m, megatron);
  const MemoryBreakdown b = EstimateMemory(m, megatron_bf16);
  EXPECT_NEAR(a.weights_bytes - b.weights_bytes,
              2 * static_cast<double>(m.layers) * workload::LayerParameterCount(m), 1);
  EXPECT_EQ(a.optimizer_bytes, b.optimizer_bytes);
  // Transformer Engine keeps each linear's input as its 1-byte FP8 cast (estimate/memory.cc
  // LinearInputBytes): per token and layer the two norm outputs (QKV and fc1 inputs, 2h) and the
  // fc2 input (f) take 1 byte instead of 2, and the output projection keeps a 1-byte cast (h)
  // beside the attention's 16-bit output: h + f bytes fewer.
  const double tokens = static_cast<double>(t.micro_batch * t.seq_len);
  EXPECT_NEAR(b.activations_bytes - a.activations_bytes,
              static_cast<double>(m.layers) * tokens * static_cast<double>(m.hidden + m.ffn_hidden),
              1);
  // torchao's float8 training (FSDP) casts per use and saves the 16-bit tensors.
  Training fsdp_bf16 = t;
  fsdp_bf16.precision = Precision::kBf16Mixed;
  EXPECT_EQ(EstimateMemory(m, t).activations_bytes, EstimateMemory(m, fsdp_bf16).activations_bytes);
}

// Every recompute policy costs the FLOPs it re-runs, so HFU > MFU: torchtitan's selective
// ("op") policy re-runs the matmuls it does not save (torchtitan/models/llama/
// parallelize_llama.py _save_list); Megatron's selective re-runs core attention (Korthikanti et
// al. 2022, section 5; megatron/core/transformer/attention.py checkpoint_core_attention), flash
// or not; full recompute re-runs the whole forward: HFU / MFU ~ 4/3 (Chowdhery et al. 2022, PaLM,
// appendix B).
TEST(RecomputeTest, EveryPolicyCostsTime) {
  const Model m = Llama31_8b();
  Training t;
  t.framework = Framework::kFsdp;
  t.zero_stage = 3;
  t.dp = 8;
  t.micro_batch = 2;
  t.global_batch = 16;
  t.seq_len = 8192;
  const Hardware hw = Node(true, false, 3200);
  const StepTime none = EstimateStepTime(m, t, hw);
  Training selective = t;
  selective.recompute = Recompute::kSelective;
  const StepTime sel = EstimateStepTime(m, selective, hw);
  Training full = t;
  full.recompute = Recompute::kFull;
  const StepTime all = EstimateStepTime(m, full, hw);
  EXPECT_DOUBLE_EQ(none.hfu, none.mfu);
  EXPECT_GT(sel.step_seconds, none.step_seconds);
  EXPECT_GT(all.step_seconds, sel.step_seconds);
  EXPECT_GT(sel.hfu, sel.mfu * 1.02);
  EXPECT_LT(sel.hfu / sel.mfu, all.hfu / all.mfu);
  EXPECT_NEAR(all.hfu / all.mfu, 4.0 / 3.0, 0.05);
  Training megatron = t;
  megatron.framework = Framework::kMegatron;
  megatron.zero_stage = 1;
  Training megatron_selective = megatron;
  megatron_selective.recompute = Recompute::kSelective;
  ASSERT_TRUE(megatron.flash_attention);
  EXPECT_GT(EstimateStepTime(m, megatron_selective, hw).step_seconds,
            EstimateStepTime(m, megatron, hw).step_seconds);
}

// Activation offload (torch.autograd.graph.save_on_cpu; Megatron-Core --cpu-offloading): the GPU
// keeps two layers' saved activations, the rest crosses PCIe twice per step, hidden behind the
// layers' compute while the link keeps up (16 GB/s of PCIe gen 3 x16 does not for long
// sequences of a small model).
TEST(ActivationOffloadTest, KeepsTwoLayersAndPaysThePcieCopies) {
  const Model m = Llama31_8b();
  Training t;
  t.framework = Framework::kFsdp;
  t.zero_stage = 3;
  t.dp = 8;
  t.micro_batch = 4;
  t.global_batch = 32;
  t.seq_len = 8192;
  Training offload = t;
  offload.offload_activations = true;
  EXPECT_NEAR(EstimateMemory(m, offload).activations_bytes, 2 * LayerActivationBytes(m, t), 1);
  EXPECT_LT(EstimateMemory(m, offload).peak_bytes_per_gpu, EstimateMemory(m, t).peak_bytes_per_gpu);
  Hardware gen5 = Node(true, false, 3200);
  gen5.host_bytes_per_second = 63e9 * 0.6;
  Hardware gen3 = gen5;
  gen3.host_bytes_per_second = 15.75e9 * 0.6;
  const StepTime fast = EstimateStepTime(m, offload, gen5);
  const StepTime slow = EstimateStepTime(m, offload, gen3);
  EXPECT_GT(fast.communication_seconds, EstimateStepTime(m, t, gen5).communication_seconds);
  EXPECT_GE(slow.step_seconds, fast.step_seconds);
  EXPECT_GE(fast.step_seconds, EstimateStepTime(m, t, gen5).step_seconds);
}

// GPT 530B of Korthikanti et al. 2022 (arXiv 2205.05198) Table 5: 105 layers, h 20480, 128
// heads, on 280 A100 (tp 8, pp 35, interleaved 3), batch 280, sequence 2048; full recompute
// without sequence parallelism measured 49.05 s per step, selective with it 37.83 s.
// Without sequence parallelism Megatron still sends 1/t of each pipeline boundary per tp rank
// and all-gathers it over NVLink (scatter/gather, Narayanan et al. 2021, arXiv 2104.04473,
// section 4.1); sending the whole tensor from every rank over the network made this row 20 %
// slow.
TEST(PipelineTest, ScatterGatherKeepsPipelineTrafficSplitWithoutSequenceParallelism) {
  Model m;
  m.name = "gpt-530b";
  m.layers = 105;
  m.hidden = 20480;
  m.heads = 128;
  m.kv_heads = 128;
  m.ffn_hidden = 4 * 20480;
  m.vocab = 51200;
  m.max_seq_len = 2048;
  m.position = workload::PositionKind::kLearned;
  m.linear_bias = true;
  m.dropout = true;
  Training t;
  t.precision = Precision::kFp16Mixed;
  t.framework = Framework::kMegatron;
  t.tp = 8;
  t.pp = 35;
  t.vpp = 3;
  t.dp = 1;
  t.micro_batch = 1;
  t.global_batch = 280;
  t.seq_len = 2048;
  t.flash_attention = false;
  Training full = t;
  full.recompute = Recompute::kFull;
  Training selective = t;
  selective.recompute = Recompute::kSelective;
  selective.sequence_parallel = true;
  const Hardware hw = Node(false, false, 1600);
  EXPECT_NEAR(EstimateStepTime(m, full, hw).step_seconds, 49.05, 49.05 * 0.10);
  EXPECT_NEAR(EstimateStepTime(m, selective, hw).step_seconds, 37.83, 37.83 * 0.10);
  // The full-recompute overhead: measured 1.30x; 1.41x here, 1.50x with the whole tensor sent.
  EXPECT_LT(
      EstimateStepTime(m, full, hw).step_seconds / EstimateStepTime(m, selective, hw).step_seconds,
      1.45);
}

// Llama 3.1 405B (meta-llama/Llama-3.1-405B config.json) as torchtitan trains it in its H100
// benchmark, 3D: FSDP 8 x TP 8 (sequence parallel) x PP 8 1F1B on 512 H100-80GB, local batch 32
// in 8 micro-batches of 4 x 8192, full activation checkpointing, torch.compile + Float8
// (pytorch/torchtitan@31a17bfd benchmarks/llama3_h100_202412_torchtitan.md Table 5: 82.50 GiB
// max reserved memory).
Model Llama31_405b() {
  Model m = Llama31_8b();
  m.name = "llama-3.1-405b";
  m.layers = 126;
  m.hidden = 16384;
  m.heads = 128;
  m.kv_heads = 8;
  m.ffn_hidden = 53248;
  return m;
}

// The same torchtitan FSDP2 + Float8 + full-AC setup as TorchtitanCp4, in 3D.
Training TorchtitanTable5() {
  Training t = TorchtitanCp4();
  t.cp = 1;
  t.tp = 8;
  t.pp = 8;
  t.dp = 8;
  t.micro_batch = 4;
  t.global_batch = 256;
  t.seq_len = 8192;
  t.sequence_parallel = true;
  return t;
}

// torchtitan runs FSDP2 on the dp_shard dimension of a tensor-parallel, pipeline-split model, so
// the layout is accepted (it was refused: "--framework fsdp cannot run --tp 8 --pp 8") and its
// peak lands within 20 % of the published 82.50 GiB (ACCURACY.md: -16.5 %, fitted or not; the
// stage's unsharded bf16 parameters and fp32 accumulated gradients are 35.6 GiB of it: without
// them the estimate is 62 % low).
TEST(FsdpTensorPipelineTest, TorchtitanTable5RowWithinTwentyPercent) {
  const Model m = Llama31_405b();
  const Training t = TorchtitanTable5();
  ASSERT_TRUE(workload::Validate(m, t, 512).ok()) << workload::Validate(m, t, 512).message();
  EXPECT_TRUE(workload::FrameworkRunsLayout(Framework::kFsdp, t));
  const double measured = 82.50 * (1u << 30);
  EXPECT_NEAR(EstimateMemory(m, t).reserved_bytes, measured, measured * 0.20);
}

// Under pipeline parallelism torchtitan does not reshard after forward and the schedule skips the
// gradient sync until the last backward: the stage keeps its parameters unsharded (bf16, 2 bytes)
// and accumulates unsharded fp32 gradients (4 bytes), 6 bytes per stage parameter on this GPU,
// where FULL_SHARD without PP holds only 6 bytes per parameter of its largest unit (memory.cc
// TorchBuffers).
TEST(FsdpTensorPipelineTest, PipelineKeepsTheStageUnsharded) {
  Training t = TorchtitanTable5();
  t.precision = Precision::kBf16Mixed;
  const double stage_params = 6.3e9, largest = 0.4e9;
  EXPECT_NEAR(FullModelStates(stage_params, largest, t).buffer_bytes, 6 * stage_params, 1);
  t.pp = 1;
  EXPECT_NEAR(FullModelStates(stage_params, largest, t).buffer_bytes, 6 * largest, 1);
}

// torchtitan's sequence parallelism shards the norms' inputs over tp but saves the all-gathered
// inputs of attention and MLP whole (PrepareModuleInput Shard(1) -> Replicate; memory.cc
// LayerActivationBytes): of a dropout-free layer's 4 sbh non-tp-split tensors, 2 sbh shrink by
// tp, where Megatron's sequence parallelism shrinks all 4 (Korthikanti et al. 2022, Table 2).
TEST(FsdpTensorPipelineTest, SequenceParallelKeepsTheGatheredInputsWhole) {
  const Model m = Llama31_8b();
  Training sp = TorchtitanTable5();
  sp.precision = Precision::kBf16Mixed;
  sp.recompute = Recompute::kNone;
  sp.micro_batch = 1;
  Training no_sp = sp;
  no_sp.sequence_parallel = false;
  const double sbh = 8192.0 * 4096.0;
  EXPECT_NEAR(LayerActivationBytes(m, no_sp) - LayerActivationBytes(m, sp),
              2 * 2 * sbh * (1 - 1.0 / 8), 1);
  Training megatron_sp = sp, megatron_no_sp = no_sp;
  megatron_sp.framework = megatron_no_sp.framework = Framework::kMegatron;
  EXPECT_NEAR(LayerActivationBytes(m, megatron_no_sp) - LayerActivationBytes(m, megatron_sp),
              4 * 2 * sbh * (1 - 1.0 / 8), 1);
}

// FSDP's gathers are per step under PP (once per stage), per micro-batch without it: doubling the
// micro-batches doubles everything per micro-batch and leaves the data-parallel part alone, so
// twice the 8-micro-batch communication exceeds the 16-micro-batch one by that part. Tensor-
// parallel collectives and the pipeline p2p are there too, and the 1F1B bubble is
// (pp - 1) x the slowest stage's micro-batch time.
TEST(FsdpTensorPipelineTest, GathersOncePerStepAndPaysTensorAndPipelineTraffic) {
  const Model m = Llama31_405b();
  const Training eight = TorchtitanTable5();
  Training sixteen = eight;
  sixteen.global_batch = 2 * eight.global_batch;
  const Hardware hw = Node(true, true, 3200);
  const StepTime st8 = EstimateStepTime(m, eight, hw);
  const StepTime st16 = EstimateStepTime(m, sixteen, hw);
  const double data_parallel = 2 * st8.communication_seconds - st16.communication_seconds;
  EXPECT_GT(data_parallel, 0.05 * st8.communication_seconds);
  EXPECT_GT(st8.communication_seconds - data_parallel, 0);  // tp collectives and pp sends
  EXPECT_GT(st8.bubble_seconds, 0);
  EXPECT_NEAR(st16.bubble_seconds, st8.bubble_seconds, 1e-9);  // one bubble per step
}

}  // namespace
}  // namespace fulcrum::estimate
