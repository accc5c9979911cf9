#include "estimate/compute.h"

#include <cmath>
#include <string>

#include <gtest/gtest.h>

#include "catalog/catalog.h"
#include "estimate/comm.h"
#include "workload/model_io.h"

namespace fulcrum::estimate {
namespace {

// GPT 22B of Korthikanti et al. 2022 (arXiv 2205.05198, Table 3): h 6144, a 64, L 48.
workload::Model Gpt22b() {
  workload::Model m;
  m.name = "gpt-22b";
  m.layers = 48;
  m.hidden = 6144;
  m.heads = 64;
  m.kv_heads = 64;
  m.ffn_hidden = 4 * 6144;
  m.vocab = 51200;
  m.max_seq_len = 2048;
  m.mlp = workload::MlpKind::kGelu;
  m.dropout = true;  // GPT-3 style, dropout 0.1 (the paper's Table 2 counts its masks)
  return m;
}

// An A100-SXM4-80GB node: 312 TFLOP/s bf16 dense, 2039 GB/s, NVLink 600 GB/s bidirectional
// (NVIDIA A100 datasheet), 8 GPUs, 8 x 200 Gbit/s.
Hardware A100Node() {
  Hardware hw;
  hw.peak_flops = hw.peak_flops_16bit = 312e12;
  hw.memory_bytes_per_second = 2039e9;
  hw.intra_node_bytes_per_second = 300e9;
  hw.nvlink = true;
  hw.gpus_per_node = 8;
  hw.network_bytes_per_second_per_node = 1600e9 / 8;
  hw.efficiency = DefaultTimeCalibration().ampere;
  return hw;
}

workload::Training Tp8() {
  workload::Training t;
  t.precision = workload::Precision::kFp16Mixed;
  t.tp = 8;
  t.micro_batch = 4;
  t.global_batch = 4;
  t.seq_len = 2048;
  t.flash_attention = false;
  t.sequence_parallel = true;
  t.recompute = workload::Recompute::kSelective;
  t.framework = workload::Framework::kMegatron;
  return t;
}

TEST(CommTest, RingFormulas) {
  const Link link{100e9, 0};
  // 2 (n-1)/n * S / B with n = 4, S = 1 GB, B = 100 GB/s -> 15 ms.
  EXPECT_NEAR(AllReduceSeconds(1e9, 4, link), 0.015, 1e-12);
  EXPECT_NEAR(ReduceScatterSeconds(1e9, 4, link), 0.0075, 1e-12);
  EXPECT_NEAR(AllGatherSeconds(1e9, 4, link), 0.0075, 1e-12);
  EXPECT_EQ(AllReduceSeconds(1e9, 1, link), 0);
  EXPECT_NEAR(SendSeconds(1e9, Link{100e9, 1e-3}), 0.011, 1e-12);
}

TEST(CommTest, PcieBandwidthPerGeneration) {
  EXPECT_NEAR(PcieGbytesPerSecond(3), 15.75, 0.02);
  EXPECT_NEAR(PcieGbytesPerSecond(4), 31.5, 0.01);
  EXPECT_NEAR(PcieGbytesPerSecond(5), 63.0, 0.02);
  EXPECT_NEAR(PcieGbytesPerSecond(std::nullopt), 31.5, 0.01);
}

TEST(ComputeTest, ModelFlopsMatchPalmFormula) {
  const workload::Model m = Gpt22b();
  workload::Training t = Tp8();
  // 6 * 12 L h^2 (GELU MLP 4h) + 12 L h s + 6 h V, by hand.
  const double h = 6144, L = 48, s = 2048, V = 51200;
  const double expected = 6 * 12 * L * h * h + 12 * L * h * s + 6 * h * V;
  EXPECT_NEAR(ModelFlopsPerToken(m, t), expected, expected * 1e-12);
  t.method = workload::Method::kLora;
  EXPECT_NEAR(ModelFlopsPerToken(m, t), expected * 4 / 6, expected * 1e-12);
}

TEST(ComputeTest, LoraTrainableParameters) {
  workload::Model m = Gpt22b();
  workload::Training t;
  t.method = workload::Method::kLora;
  t.lora_rank = 8;
  t.lora_targets = workload::kLoraQ | workload::kLoraV;
  // Per layer: r (h + h) for q + r (h + kv) for v, kv = h here.
  EXPECT_DOUBLE_EQ(TrainableParameterCount(m, t), 48.0 * (8 * 2 * 6144 + 8 * 2 * 6144));
}

TEST(ComputeTest, BreakdownAddsUpAndMfuIsConsistent) {
  const StepTime st = EstimateStepTime(Gpt22b(), Tp8(), A100Node());
  ASSERT_TRUE(std::isfinite(st.step_seconds));
  EXPECT_NEAR(st.step_seconds, st.compute_seconds + st.bubble_seconds + st.exposed_seconds, 1e-9);
  EXPECT_LE(st.exposed_seconds, st.communication_seconds + 1e-12);
  EXPECT_EQ(st.bubble_seconds, 0);  // pp = 1
  // Tokens per step 4 x 2048 on 8 GPUs.
  EXPECT_NEAR(st.tokens_per_second_per_gpu, 8192 / st.step_seconds / 8, 1e-6);
  const double flops = ModelFlopsPerToken(Gpt22b(), Tp8()) * 8192;
  EXPECT_NEAR(st.mfu, flops / (st.step_seconds * 312e12 * 8), 1e-9);
  EXPECT_GT(st.mfu, 0.2);
  EXPECT_LT(st.mfu, 0.8);
}

TEST(ComputeTest, FullRecomputeCostsAboutOneForwardMore) {
  workload::Training none = Tp8();
  none.recompute = workload::Recompute::kNone;
  workload::Training full = Tp8();
  full.recompute = workload::Recompute::kFull;
  const StepTime a = EstimateStepTime(Gpt22b(), none, A100Node());
  const StepTime b = EstimateStepTime(Gpt22b(), full, A100Node());
  EXPECT_GT(b.step_seconds / a.step_seconds, 1.2);
  EXPECT_LT(b.step_seconds / a.step_seconds, 1.45);
  EXPECT_NEAR(a.mfu / b.mfu, b.step_seconds / a.step_seconds, 1e-9);
  EXPECT_GT(b.hfu, b.mfu);
}

// Time of one transformer layer (forward + backward, one micro-batch) of the 22B model on its
// 8-way tensor-parallel node: the step-time difference of one more layer, minus that layer's
// share of the optimizer step.
double LayerMilliseconds(workload::Recompute recompute, bool sequence_parallel) {
  workload::Training t = Tp8();
  t.recompute = recompute;
  t.sequence_parallel = sequence_parallel;
  workload::Model more = Gpt22b();
  more.layers += 1;
  return 1e3 * (EstimateStepTime(more, t, A100Node()).step_seconds -
                EstimateStepTime(Gpt22b(), t, A100Node()).step_seconds);
}

// Korthikanti et al. 2022 (arXiv 2205.05198) Table 4: forward + backward time of one layer of
// the 22B model on 8 A100s (tp 8, micro-batch 4, seq 2048): no recompute 19.6 ms, sequence
// parallelism 19.0, full recompute 27.2, selective recompute 20.9, selective + sequence 20.3.
// The ratios to the baseline hold within 3 % (they test what sequence parallelism saves in the
// elementwise kernels and costs in its repeated all-gathers, what recompute re-runs, and that
// Megatron hides the column-parallel layers' backward collectives behind their weight-gradient
// GEMMs: charged fully, full recompute would cost 1.45x, not 1.39x); the times within 15 %.
TEST(ComputeTest, LayerTimesFollowKorthikantiTable4) {
  using workload::Recompute;
  const double none = LayerMilliseconds(Recompute::kNone, false);
  EXPECT_NEAR(none, 19.6, 19.6 * 0.15);
  EXPECT_NEAR(LayerMilliseconds(Recompute::kNone, true) / none, 19.0 / 19.6, 0.03);
  EXPECT_NEAR(LayerMilliseconds(Recompute::kFull, false) / none, 27.2 / 19.6, 0.03);
  EXPECT_NEAR(LayerMilliseconds(Recompute::kSelective, false) / none, 20.9 / 19.6, 0.03);
  EXPECT_NEAR(LayerMilliseconds(Recompute::kSelective, true) / none, 20.3 / 19.6, 0.03);
}

// Megatron overlaps the backward all-reduces of its column-parallel layers with their
// weight-gradient GEMMs (megatron/core/tensor_parallel/layers.py); the same layout under a
// framework without that overlap exposes all four all-reduces of a layer.
TEST(ComputeTest, MegatronHidesColumnParallelBackwardCollectives) {
  workload::Training megatron = Tp8();
  megatron.sequence_parallel = false;
  megatron.recompute = workload::Recompute::kNone;
  workload::Training deepspeed = megatron;
  deepspeed.framework = workload::Framework::kDeepSpeed;
  const StepTime a = EstimateStepTime(Gpt22b(), megatron, A100Node());
  const StepTime b = EstimateStepTime(Gpt22b(), deepspeed, A100Node());
  EXPECT_NEAR(a.communication_seconds, b.communication_seconds, 1e-12);
  EXPECT_NEAR(b.exposed_seconds, b.communication_seconds, 1e-9);
  // Half the collectives hidden, each still slowing the GEMMs it overlaps by
  // overlapped_comm_slowdown of its time.
  const double s = DefaultTimeCalibration().overlapped_comm_slowdown;
  EXPECT_NEAR(a.exposed_seconds, a.communication_seconds * (0.5 + 0.5 * s),
              1e-6 * a.communication_seconds);
}

// Under FP8, Transformer Engine casts before it gathers: sequence parallelism's all-gathers (the
// norm output before QKV and the MLP's first GEMM, its regather in backward, the output gradient
// before the row-parallel GEMMs' backward) move 1-byte elements, the reduce-scatters 2-byte ones
// (NVIDIA/TransformerEngine@3ec998e96c layernorm_linear.py, base.py grad_output_preprocess). Per
// layer without recompute: 4 gathers + 4 scatters + 2 regathers, 10 units at 16 bits, 7 in FP8.
TEST(ComputeTest, Fp8SequenceParallelGathersMoveOneByteElements) {
  Hardware h100 = A100Node();
  h100.peak_flops_16bit = 989e12;  // H100 SXM dense BF16 and FP8 (NVIDIA H100 datasheet)
  h100.peak_flops = 1979e12;
  h100.efficiency = DefaultTimeCalibration().hopper;
  workload::Training bf16 = Tp8();
  bf16.precision = workload::Precision::kBf16Mixed;
  bf16.recompute = workload::Recompute::kNone;
  bf16.micro_batch = bf16.global_batch = 32;  // 800 MB messages: the rings' latency negligible
  workload::Training fp8 = bf16;
  fp8.precision = workload::Precision::kFp8;
  const StepTime a = EstimateStepTime(Gpt22b(), bf16, h100);
  const StepTime b = EstimateStepTime(Gpt22b(), fp8, h100);
  EXPECT_NEAR(b.communication_seconds / a.communication_seconds, 0.7, 0.01);
  // Without sequence parallelism the all-reduces carry the GEMMs' 16-bit outputs either way; and
  // outside Megatron-Core's TE layers nothing changes.
  bf16.sequence_parallel = fp8.sequence_parallel = false;
  EXPECT_NEAR(EstimateStepTime(Gpt22b(), fp8, h100).communication_seconds,
              EstimateStepTime(Gpt22b(), bf16, h100).communication_seconds, 1e-12);
  bf16.sequence_parallel = fp8.sequence_parallel = true;
  bf16.framework = fp8.framework = workload::Framework::kDeepSpeed;
  EXPECT_NEAR(EstimateStepTime(Gpt22b(), fp8, h100).communication_seconds,
              EstimateStepTime(Gpt22b(), bf16, h100).communication_seconds, 1e-12);
}

// Communication hidden behind compute is charged overlapped_comm_slowdown of its time
// (Calculon, Isaev et al. SC'23: "processor_usage" of a network): ZeRO-3 on one node hides its
// gathers, and a zero slowdown makes the step faster, by at most that charge.
TEST(ComputeTest, OverlappedCommunicationSlowsTheComputeItHides) {
  workload::Training t = Tp8();  // the same node, as 8 FSDP ranks instead of 8-way tp
  t.tp = 1;
  t.dp = 8;
  t.zero_stage = 3;
  t.global_batch = 32;
  t.sequence_parallel = false;
  t.framework = workload::Framework::kFsdp;
  workload::Model m = Gpt22b();
  m.layers = 8;
  TimeCalibration free = DefaultTimeCalibration();
  free.overlapped_comm_slowdown = 0;
  const StepTime charged = EstimateStepTime(m, t, A100Node());
  const StepTime hidden = EstimateStepTime(m, t, A100Node(), free);
  EXPECT_GT(charged.step_seconds, hidden.step_seconds);
  EXPECT_LT(
      charged.step_seconds - hidden.step_seconds,
      DefaultTimeCalibration().overlapped_comm_slowdown * charged.communication_seconds + 1e-12);
}

TEST(ComputeTest, PipelineBubbleFollowsPMinusOneOverMV) {
  workload::Training t = Tp8();
  t.pp = 4;
  t.global_batch = 32;  // m = 32 / (4 x 1) = 8 micro-batches
  const StepTime plain = EstimateStepTime(Gpt22b(), t, A100Node());
  t.vpp = 2;
  const StepTime interleaved = EstimateStepTime(Gpt22b(), t, A100Node());
  EXPECT_GT(plain.bubble_seconds, 0);
  // bubble / (m * stage) = (p-1)/(m v): with v = 2 about half (p2p doubles with v).
  EXPECT_NEAR(interleaved.bubble_seconds / plain.bubble_seconds, 0.5, 0.02);
  const double stage = (plain.step_seconds - plain.bubble_seconds) / 8;  // one micro-batch
  EXPECT_NEAR(plain.bubble_seconds / (8 * stage), 3.0 / 8.0, 0.02);
}

TEST(ComputeTest, PcieTensorParallelIsSlowerThanNvlink) {
  Hardware pcie = A100Node();
  pcie.nvlink = false;
  pcie.intra_node_bytes_per_second = PcieGbytesPerSecond(4) * 1e9;
  const StepTime nv = EstimateStepTime(Gpt22b(), Tp8(), A100Node());
  const StepTime pc = EstimateStepTime(Gpt22b(), Tp8(), pcie);
  EXPECT_GT(pc.exposed_seconds, 5 * nv.exposed_seconds);
  EXPECT_GT(pc.step_seconds, nv.step_seconds);
}

TEST(ComputeTest, InterNodeDataParallelUsesTheNetwork) {
  workload::Training t = Tp8();
  t.tp = 1;
  t.sequence_parallel = false;
  t.dp = 16;  // two nodes of 8
  t.zero_stage = 3;
  t.micro_batch = 1;
  t.global_batch = 16;
  Hardware fast = A100Node();
  Hardware slow = A100Node();
  slow.network_bytes_per_second_per_node = 25e9 / 8;  // 25 Gbit/s
  const StepTime a = EstimateStepTime(Gpt22b(), t, fast);
  const StepTime b = EstimateStepTime(Gpt22b(), t, slow);
  EXPECT_GT(b.communication_seconds, 10 * a.communication_seconds);
  EXPECT_GT(b.exposed_seconds, a.exposed_seconds);
}

TEST(ComputeTest, DegenerateInputIsInfinite) {
  workload::Training t = Tp8();
  t.micro_batch = 0;
  EXPECT_TRUE(std::isinf(EstimateStepTime(Gpt22b(), t, A100Node()).step_seconds));
  Hardware none;
  EXPECT_TRUE(std::isinf(EstimateStepTime(Gpt22b(), Tp8(), none).step_seconds));
}

// A shipped preset (catalog/models/<name>.yaml): ResNet-50 v1.5 at 224x224 is 25.6 M parameters,
// 4.09 GMACs (torchvision ResNet50_Weights) with the activation counts of tools/cnn_shapes.py.
workload::Model Preset(const std::string& name) {
  const Result<workload::Model> m =
      workload::LoadModelPreset(std::string(FULCRUM_SOURCE_DIR) + "/catalog", name);
  EXPECT_TRUE(m.ok()) << m.status().message();
  return m.ok() ? *m : workload::Model{};
}
workload::Model ResNet50() { return Preset("resnet-50"); }

// One GPU of an 8-GPU node of `gpu` from the shipped catalog, for `precision`.
Hardware CatalogNode(const std::string& gpu, workload::Precision precision,
                     const TimeCalibration& calibration = DefaultTimeCalibration()) {
  catalog::LoadOptions load;
  load.include_user_offers = false;
  const Result<catalog::Catalog> cat =
      catalog::Catalog::Load(std::string(FULCRUM_SOURCE_DIR) + "/catalog", load);
  EXPECT_TRUE(cat.ok()) << cat.status().message();
  const catalog::Gpu* g = cat->FindGpu(gpu);
  EXPECT_NE(g, nullptr) << gpu;
  catalog::Offer node;
  node.gpu = g->name;
  node.gpu_count = 8;
  node.interconnect = catalog::Interconnect::kNvlink;
  return HardwareFor(*g, node, precision, calibration).value();
}

double ImagesPerSecond(const workload::Model& model, const std::string& gpu,
                       workload::Precision precision, int64_t micro_batch,
                       const TimeCalibration& calibration = DefaultTimeCalibration()) {
  workload::Training t;
  t.precision = precision;
  t.micro_batch = micro_batch;
  t.global_batch = micro_batch;
  return EstimateStepTime(model, t, CatalogNode(gpu, precision), calibration)
      .tokens_per_second_per_gpu;
}

double ImagesPerSecond(workload::Precision precision, int64_t micro_batch) {
  return ImagesPerSecond(ResNet50(), "A100-SXM4-80GB", precision, micro_batch);
}

TEST(ComputeTest, Tf32UsesTheTensorCoreRateWhereTheGpuHasIt) {
  // A100: 156 TFLOP/s TF32 dense vs 19.5 FP32 (NVIDIA A100 datasheet, catalog/gpus.csv).
  const Hardware a100 = CatalogNode("A100-SXM4-80GB", workload::Precision::kTf32);
  EXPECT_DOUBLE_EQ(a100.peak_flops, 156e12);
  EXPECT_FALSE(a100.simt_fp32);
  // V100 has no TF32: PyTorch's allow_tf32 has no effect, the matmuls run in FP32 (15.7).
  const Hardware v100 = CatalogNode("V100-SXM2-16GB", workload::Precision::kTf32);
  EXPECT_DOUBLE_EQ(v100.peak_flops, 15.7e12);
  EXPECT_TRUE(v100.simt_fp32);
  EXPECT_EQ(ActivationBytes(workload::Precision::kTf32), 4.0);
}

TEST(ComputeTest, ResNet50Tf32AgainstAmpAsPublished) {
  // NVIDIA/DeepLearningExamples@729963dd47 PyTorch/Classification/ConvNets/resnet50v1.5/README.md,
  // "Training performance: NVIDIA DGX A100 (8x A100 80GB)", 1 GPU, batch 256: TF32 938 img/s,
  // mixed precision 2470 img/s (ratio 2.63). Counted as plain FP32 (19.5 TFLOP/s) TF32 would be
  // several times slower than that; at the TF32 rate the ratio stays near the published one.
  const double tf32 = ImagesPerSecond(workload::Precision::kTf32, 256);
  const double amp = ImagesPerSecond(workload::Precision::kFp16Mixed, 256);
  const double fp32 = ImagesPerSecond(workload::Precision::kFp32, 256);
  EXPECT_GT(tf32, fp32);
  EXPECT_NEAR(amp / tf32, 2470.0 / 938.0, 0.4 * 2470.0 / 938.0);
  // Each within 40 % of the published figure (in-sample: these rows are in the fit; the
  // leave-one-family-out error of the family is in docs/ACCURACY.md).
  EXPECT_NEAR(amp, 2470, 0.4 * 2470);
  EXPECT_NEAR(tf32, 938, 0.4 * 938);
}

TEST(ComputeTest, CnnThroughputFallsAtSmallMicroBatches) {
  // Batch 1 must not run at batch-256 speed: every micro-batch pays a fixed time per weighted
  // layer and pass (TimeCalibration::generic_seconds_per_layer), which batch 1 cannot spread.
  // Published: NVIDIA's ResNet-50 v1.5 PyTorch on one V100 16GB, mixed precision, runs 78 img/s
  // at batch 1 and 3382 img/s at batch 256 (2.3 %), its latency flat at 12.8-14.0 ms from
  // batch 1 to 16 (NVIDIA/DeepLearningExamples@291f0d02e8 PyTorch/Classification/ConvNets/
  // resnet50v1.5/README.md, "Inference performance: NVIDIA DGX-1 (1x V100 16GB)"). That is
  // inference; training runs three passes of both the fixed and the per-sample work, so the
  // ratio carries over: within a factor 2.5 of it.
  const workload::Model resnet = ResNet50();
  const workload::Precision amp = workload::Precision::kFp16Mixed;
  const double b1 = ImagesPerSecond(resnet, "V100-SXM2-16GB", amp, 1);
  const double b16 = ImagesPerSecond(resnet, "V100-SXM2-16GB", amp, 16);
  const double b256 = ImagesPerSecond(resnet, "V100-SXM2-16GB", amp, 256);
  EXPECT_LT(b1, b16);
  EXPECT_LT(b16, b256);
  const double published = 78.0 / 3382.0;
  EXPECT_GT(b1 / b256, published / 2.5);
  EXPECT_LT(b1 / b256, published * 2.5);
  // Near-flat latency over small batches: batch 16 takes well under 16x batch 1's step.
  EXPECT_GT(b16 / b1, 3.0);
}

TEST(ComputeTest, DepthwiseNetworksAreNotPricedByTheirFlops) {
  // NVIDIA/DeepLearningExamples@729963dd47 PyTorch/Classification/ConvNets README tables,
  // "Training performance: NVIDIA DGX A100 (8x A100 80GB)", 1 GPU, mixed precision:
  // EfficientNet-B0 2489 img/s (batch 256) and ResNet-50 2470 img/s (batch 256), although B0 has
  // 10.5x fewer FLOPs (0.39 vs 4.09 GMACs): depthwise convolutions on the CUDA cores and the
  // activation traffic price it, not its FLOPs. A FLOPs-only model puts B0 ~10x faster.
  const workload::Model b0 = Preset("efficientnet-b0");
  const workload::Precision amp = workload::Precision::kFp16Mixed;
  const double ratio = ImagesPerSecond(b0, "A100-SXM4-80GB", amp, 256) /
                       ImagesPerSecond(ResNet50(), "A100-SXM4-80GB", amp, 256);
  EXPECT_NEAR(ratio, 2489.0 / 2470.0, 0.5);
  // Depthwise convolutions run on the CUDA cores: a network of nothing else speeds up from
  // V100 to A100 by their FP32 rate, 19.5 / 15.7 TFLOP/s (NVIDIA A100 and V100 datasheets,
  // catalog/gpus.csv), not by the tensor-core peak (312 / 125).
  workload::Model depthwise_only = b0;
  depthwise_only.generic_forward_flops_per_sample = b0.generic_depthwise_flops_per_sample;
  depthwise_only.generic_forward_elements_per_sample = 0;
  depthwise_only.generic_weighted_layers = 0;
  depthwise_only.generic_parameters = 1;
  const double gain = ImagesPerSecond(depthwise_only, "A100-SXM4-80GB", amp, 256) /
                      ImagesPerSecond(depthwise_only, "V100-SXM2-16GB", amp, 256);
  EXPECT_NEAR(gain, 19.5 / 15.7, 0.01);
}

TEST(ComputeTest, CnnTrafficScalesWithActivationBytes) {
  // The elementwise traffic moves 4-byte activations in fp32/TF32 and 2-byte ones under AMP: a
  // network whose step is all traffic (no FLOPs to speak of) runs twice as fast under AMP
  // (without the TF32 layout transposes, which the next test prices).
  workload::Model traffic_only = ResNet50();
  traffic_only.generic_forward_flops_per_sample = 1;
  traffic_only.generic_weighted_layers = 0;
  TimeCalibration no_transposes = DefaultTimeCalibration();
  no_transposes.generic_nchw_transpose_elements = 0;
  const double tf32 = ImagesPerSecond(traffic_only, "A100-SXM4-80GB", workload::Precision::kTf32,
                                      256, no_transposes);
  const double amp = ImagesPerSecond(traffic_only, "A100-SXM4-80GB",
                                     workload::Precision::kFp16Mixed, 256, no_transposes);
  EXPECT_NEAR(amp / tf32, 2.0, 0.05);
}

TEST(ComputeTest, Tf32CnnsPayTheNchwTransposesOnlyOnTheTensorCores) {
  // TF32 convolutions run on the tensor cores in NHWC while the activations stay NCHW: cuDNN
  // transposes around each convolution (TimeCalibration::generic_nchw_transpose_elements moves
  // per forward-written element, 4 bytes each, at the achievable bandwidth). Published: TF32
  // reaches half the 16-bit tensor-core peak (156 vs 312 TFLOP/s) and moves twice the bytes, yet
  // ResNet-50 runs 2.63x slower than under AMP, not 2x (938 vs 2470 img/s, 1 A100 80GB, batch
  // 256, NVIDIA/DeepLearningExamples@729963dd47 PyTorch/Classification/ConvNets/resnet50v1.5/
  // README.md): the transposes are the difference.
  const workload::Model resnet = ResNet50();
  const TimeCalibration& fitted = DefaultTimeCalibration();
  TimeCalibration none = fitted;
  none.generic_nchw_transpose_elements = 0;
  const workload::Precision tf32 = workload::Precision::kTf32;
  const double with = ImagesPerSecond(resnet, "A100-SXM4-80GB", tf32, 256, fitted);
  const double without = ImagesPerSecond(resnet, "A100-SXM4-80GB", tf32, 256, none);
  const Hardware a100 = CatalogNode("A100-SXM4-80GB", tf32);
  const double transposes_per_image =
      fitted.generic_nchw_transpose_elements * resnet.generic_forward_elements_per_sample * 4.0 /
      (a100.memory_bytes_per_second * fitted.memory_bandwidth_efficiency);
  EXPECT_GT(fitted.generic_nchw_transpose_elements, 0);
  EXPECT_NEAR(1.0 / with - 1.0 / without, transposes_per_image, 1e-3 * transposes_per_image);
  // Mixed precision (channels-last) and plain FP32 on the CUDA cores (V100: no TF32) pay none.
  for (const auto& [gpu, precision] : {std::pair{"A100-SXM4-80GB", workload::Precision::kFp16Mixed},
                                       std::pair{"A100-SXM4-80GB", workload::Precision::kFp32},
                                       std::pair{"V100-SXM2-16GB", workload::Precision::kTf32}}) {
    EXPECT_DOUBLE_EQ(ImagesPerSecond(resnet, gpu, precision, 256, fitted),
                     ImagesPerSecond(resnet, gpu, precision, 256, none))
        << gpu;
  }
}

TEST(ComputeTest, Fp32CnnsRunAtTheSgemmFractionOfTheCudaCorePeak) {
  // Issue 31: plain FP32 convolutions were charged the tensor-core convolution fraction
  // (generic_model_efficiency) times a factor only V100 rows constrained, so V100 FP32 CNNs came
  // out 25-50 % slow. On the CUDA cores they are compute-bound: generic_simt_efficiency of the
  // FP32 peak, whatever the tensor-core fraction is. Published (NVIDIA/DeepLearningExamples
  // @729963dd47 PyTorch/Classification/ConvNets/resnet50v1.5/README.md, DGX-1 16GB, 1 GPU):
  // ResNet-50 runs 1200 img/s in mixed precision (batch 256) and 367 in FP32 (batch 112).
  const workload::Model resnet = ResNet50();
  const std::string v100 = "V100-SXM2-16GB";
  const double fp32 = ImagesPerSecond(resnet, v100, workload::Precision::kFp32, 112);
  const double amp = ImagesPerSecond(resnet, v100, workload::Precision::kFp16Mixed, 256);
  EXPECT_NEAR(amp / fp32, 1200.0 / 367.0, 0.15 * 1200.0 / 367.0);
  TimeCalibration other = DefaultTimeCalibration();
  other.generic_model_efficiency /= 2;
  EXPECT_DOUBLE_EQ(ImagesPerSecond(resnet, v100, workload::Precision::kFp32, 112, other), fp32);
  EXPECT_LT(ImagesPerSecond(resnet, v100, workload::Precision::kFp16Mixed, 256, other), amp);
}

TEST(ComputeTest, DepthwiseConvolutionsTakeTwiceAsLongWithFourByteActivations) {
  // Issue 31: EfficientNet in TF32 ran 25-60 % slower than a precision-blind depthwise charge
  // predicts (B0 on one A100 80GB: 1078 img/s TF32 vs 2489 mixed precision, NVIDIA/
  // DeepLearningExamples@729963dd47 PyTorch/Classification/ConvNets/efficientnet/README.md).
  // Depthwise kernels are bound by the SMs' load path: 4-byte activations take twice the time.
  workload::Model depthwise_only = Preset("efficientnet-b0");
  depthwise_only.generic_forward_flops_per_sample =
      depthwise_only.generic_depthwise_flops_per_sample;
  depthwise_only.generic_forward_elements_per_sample = 0;
  depthwise_only.generic_weighted_layers = 0;
  depthwise_only.generic_parameters = 1;
  const std::string a100 = "A100-SXM4-80GB";
  const double amp = ImagesPerSecond(depthwise_only, a100, workload::Precision::kFp16Mixed, 256);
  const double tf32 = ImagesPerSecond(depthwise_only, a100, workload::Precision::kTf32, 256);
  EXPECT_NEAR(amp / tf32, 2.0, 0.01);
}

TEST(ComputeTest, UnfusedAttentionOutsideMegatronPaysForTheScores) {
  // Megatron fuses scale, mask and softmax (MegatronScoreElements); eager BERT runs them as
  // separate passes over the a*s*s scores (unfused_attention_score_elements), a cost that grows
  // with s^2 per sequence. Published: NVIDIA's TF1 BERT-large pre-training on one V100 16GB,
  // mixed precision: 134.3 sequences/s at seq 128 (batch 16) and 28.72 at seq 512 (batch 4), a
  // ratio of 4.68 for 4x the tokens (NVIDIA/DeepLearningExamples@729963dd47
  // TensorFlow/LanguageModeling/BERT/README.md, "Pre-training training performance: single-node
  // on DGX-1 16GB"), with gradient accumulation 4096 and 8192 (that table's column), so the
  // optimizer step is amortised.
  const workload::Model bert = Preset("bert-large");
  auto sequences_per_second = [&](int64_t seq, int64_t batch, int64_t accumulation,
                                  workload::Framework framework) {
    workload::Training t;
    t.precision = workload::Precision::kFp16Mixed;
    t.framework = framework;
    t.flash_attention = false;
    t.seq_len = seq;
    t.micro_batch = batch;
    t.global_batch = batch * accumulation;
    const Hardware hw = CatalogNode("V100-SXM2-16GB", t.precision);
    return EstimateStepTime(bert, t, hw).tokens_per_second_per_gpu / static_cast<double>(seq);
  };
  const workload::Framework hf = workload::Framework::kHf;
  const double ratio =
      sequences_per_second(128, 16, 4096, hf) / sequences_per_second(512, 4, 8192, hf);
  EXPECT_NEAR(ratio, 134.3 / 28.72, 0.15 * 134.3 / 28.72);
  EXPECT_LT(sequences_per_second(512, 4, 8192, hf),
            sequences_per_second(512, 4, 8192, workload::Framework::kMegatron));
}

// The masked-LM head of NVIDIA's BERT recipes runs on the gathered masked positions only
// (TF1 run_pretraining.py gather_indexes of max_predictions_per_seq = 20 positions at seq 128;
// PyTorch modeling.py BertPreTrainingHeads with a dense sequence output,
// NVIDIA/DeepLearningExamples@729963dd47), and SQuAD's span head is 2 wide (qa_outputs =
// Linear(hidden, 2)). The head's FLOPs fall to its share of the tokens (or of the width), and the
// step time saved is that share of the whole head's time.
// A DeepLearningExamples-style BERT run: mixed fp16 in eager PyTorch (hf conventions), no fused
// attention, `micro_batch` sequences of `seq_len`, 128 micro-batches a step.
workload::Training BertFp16(int64_t seq_len, int64_t micro_batch) {
  workload::Training t;
  t.precision = workload::Precision::kFp16Mixed;
  t.framework = workload::Framework::kHf;
  t.flash_attention = false;
  t.seq_len = seq_len;
  t.micro_batch = micro_batch;
  t.global_batch = micro_batch * 128;
  return t;
}

TEST(ComputeTest, OutputHeadOnMaskedPositionsCostsItsShareOfTheTokens) {
  const workload::Model bert = Preset("bert-large");
  const workload::Training all = BertFp16(128, 64);
  workload::Training masked = all;
  masked.head_tokens = 20;
  workload::Training span = all;
  span.head_width = 2;
  workload::Training no_head = all;
  no_head.head_width = 1;
  const double h = static_cast<double>(bert.hidden), vocab = static_cast<double>(bert.vocab);
  EXPECT_NEAR(ModelFlopsPerToken(bert, all) - ModelFlopsPerToken(bert, masked),
              6 * h * vocab * (1 - 20.0 / 128), 1e-6 * ModelFlopsPerToken(bert, all));
  EXPECT_NEAR(ModelFlopsPerToken(bert, all) - ModelFlopsPerToken(bert, span), 6 * h * (vocab - 2),
              1e-6 * ModelFlopsPerToken(bert, all));
  const Hardware hw = CatalogNode("A100-SXM4-80GB", all.precision);
  auto step = [&](const workload::Training& t) {
    return EstimateStepTime(bert, t, hw).step_seconds;
  };
  const double head_seconds = step(all) - step(no_head);
  ASSERT_GT(head_seconds, 0);
  // GEMM efficiency at 64 x 20 = 1280 rows is a little below that at 8192: within 3 %.
  EXPECT_NEAR((step(all) - step(masked)) / head_seconds, 1 - 20.0 / 128, 0.03);
  EXPECT_LT(step(span), step(masked));
}

// TF1's optimizers as NVIDIA's TF1 BERT recipe builds them (NVIDIA/DeepLearningExamples@729963dd47
// TensorFlow/LanguageModeling/BERT/optimization.py): AdamWeightDecay's step as per-tensor ops
// (156 bytes per fp32 parameter in place of a fused step's 30), the gradients normed and clipped
// (12) once per step, or with accumulation on every micro-batch with the add into the fp32
// buffer (12), and under mixed precision unscaled and checked (14) on each such pass. The
// counts are compute.h's; what the test holds is where they are charged: per step, per
// micro-batch, at the achievable bandwidth, on the parameters this GPU updates.
TEST(ComputeTest, Tf1GraphOptimizerMovesItsBytesPerStepAndPerMicroBatch) {
  const workload::Model bert = Preset("bert-large");
  const TimeCalibration c = DefaultTimeCalibration();
  const double params = workload::CountModel(bert).parameters;
  auto extra_seconds = [&](workload::Precision precision, int64_t accumulation) {
    workload::Training t = BertFp16(128, 8);
    t.precision = precision;
    t.global_batch = 8 * accumulation;
    const Hardware hw = CatalogNode("V100-SXM2-16GB", precision);
    workload::Training graph = t;
    graph.optimizer_kernels = workload::OptimizerKernels::kTf1Graph;
    const StepTime fused = EstimateStepTime(bert, t, hw, c);
    const StepTime unfused = EstimateStepTime(bert, graph, hw, c);
    EXPECT_DOUBLE_EQ(unfused.communication_seconds, fused.communication_seconds);
    return (unfused.step_seconds - fused.step_seconds) * hw.memory_bytes_per_second *
           c.memory_bandwidth_efficiency / params;  // bytes per parameter
  };
  const double step = c.tf1_optimizer_bytes_per_param - c.optimizer_bytes_per_param;
  const double clip = c.tf1_clip_bytes_per_param, add = c.tf1_accumulate_bytes_per_param;
  const double amp = c.tf1_loss_scale_bytes_per_param;
  EXPECT_NEAR(extra_seconds(workload::Precision::kFp32, 1), step + clip, 1e-6 * step);
  EXPECT_NEAR(extra_seconds(workload::Precision::kFp32, 4), step + 4 * (clip + add), 1e-6 * step);
  EXPECT_NEAR(extra_seconds(workload::Precision::kFp16Mixed, 1), step + clip + amp, 1e-6 * step);
  EXPECT_NEAR(extra_seconds(workload::Precision::kFp16Mixed, 4), step + 4 * (clip + add + amp),
              1e-6 * step);
}

// Sequence binning (NVIDIA LDDL, bin size 64 in DeepLearningExamples' BERT phase 2) pads each
// batch to its longest sequence, not to seq_len: the GPUs run mean_seq_len tokens per sequence.
// The step is that of sequences of that length; memory (not here) stays sized for seq_len.
TEST(ComputeTest, MeanSeqLenRunsSequencesOfThatLength) {
  const workload::Model bert = Preset("bert-large");
  workload::Training binned = BertFp16(512, 32);
  binned.mean_seq_len = 288;
  binned.head_tokens = 38;
  workload::Training short_seq = binned;
  short_seq.seq_len = 288;
  short_seq.mean_seq_len = 0;
  workload::Training full = binned;
  full.mean_seq_len = 0;
  const Hardware hw = CatalogNode("A100-SXM4-80GB", binned.precision);
  const StepTime a = EstimateStepTime(bert, binned, hw);
  const StepTime b = EstimateStepTime(bert, short_seq, hw);
  EXPECT_DOUBLE_EQ(a.step_seconds, b.step_seconds);
  EXPECT_DOUBLE_EQ(a.tokens_per_second_per_gpu, b.tokens_per_second_per_gpu);
  EXPECT_DOUBLE_EQ(ModelFlopsPerToken(bert, binned), ModelFlopsPerToken(bert, short_seq));
  // Attention grows with the sequence: a full-length step costs more than 512 / 288 of it.
  EXPECT_GT(EstimateStepTime(bert, full, hw).step_seconds / a.step_seconds, 512.0 / 288);
}

TEST(ComputeTest, FlashAttentionRunsTheWholeSquareWithoutACausalMask) {
  // FlashAttention-2 skips the key blocks above the diagonal under a causal mask, about halving
  // the attention work (Dao 2023, arXiv 2307.08691, section 3.1.1 and Fig. 4-7: causal runs at
  // ~1.7-2x the time-per-FLOP advantage); an encoder's bidirectional attention has no mask and
  // runs all of it. Same shape, decoder vs encoder: the attention time doubles.
  workload::Model decoder = Preset("bert-large");
  decoder.kind = workload::ModelKind::kDecoder;
  const workload::Model encoder = Preset("bert-large");
  workload::Training t;
  t.precision = workload::Precision::kBf16Mixed;
  t.flash_attention = true;
  t.seq_len = 4096;
  t.micro_batch = 1;
  t.global_batch = 1;
  const Hardware hw = CatalogNode("A100-SXM4-80GB", t.precision);
  workload::Training short_seq = t;
  short_seq.seq_len = 2048;
  short_seq.micro_batch = 2;
  short_seq.global_batch = 2;
  // Same tokens, half the sequence: the attention part of the step is what differs.
  auto attention = [&](const workload::Model& m) {
    return EstimateStepTime(m, t, hw).compute_seconds -
           EstimateStepTime(m, short_seq, hw).compute_seconds;
  };
  EXPECT_GT(attention(decoder), 0);
  EXPECT_NEAR(attention(encoder) / attention(decoder), 2.0, 0.02);
}

TEST(ComputeTest, EfficiencyForArchitecture) {
  const TimeCalibration& c = DefaultTimeCalibration();
  EXPECT_EQ(&EfficiencyFor("Hopper", c), &c.hopper);
  EXPECT_EQ(&EfficiencyFor("ampere", c), &c.ampere);
  EXPECT_EQ(&EfficiencyFor("Volta", c), &c.volta);
  EXPECT_EQ(&EfficiencyFor("Blackwell", c), &c.other);
}

// Llama 2 7B, 8 GPUs data parallel in FP8 (or `precision`) on one 8-GPU H100 node: the NeMo
// 24.07 benchmark layout (data/calibration/published_runs.csv nemo-2407-llama2-7b-8).
double Llama2TokensPerSecond(workload::Framework framework, const TimeCalibration& c,
                             workload::Precision precision = workload::Precision::kFp8) {
  workload::Training t;
  t.precision = precision;
  t.framework = framework;
  t.dp = 8;
  t.zero_stage = framework == workload::Framework::kFsdp ? 3 : 1;
  t.micro_batch = 1;
  t.global_batch = 128;
  t.seq_len = 4096;
  return EstimateStepTime(Preset("llama-2-7b"), t, CatalogNode("H100-80GB", precision, c), c)
      .tokens_per_second_per_gpu;
}

TEST(ComputeTest, Fp8GemmRateIsTheFrameworks) {
  // Megatron-Core's Transformer Engine layers run FP8 GEMMs at the architecture's
  // fp8_gemm_max_efficiency; a framework that swaps nn.Linear for te.Linear at
  // fp8_te_linear_relative_efficiency of it.
  TimeCalibration base = DefaultTimeCalibration(), fp8_faster = base, linear_faster = base;
  fp8_faster.hopper.fp8_gemm_max_efficiency *= 1.2;
  linear_faster.fp8_te_linear_relative_efficiency *= 1.5;
  const auto megatron = workload::Framework::kMegatron;
  const auto fsdp = workload::Framework::kFsdp;
  EXPECT_GT(Llama2TokensPerSecond(megatron, fp8_faster),
            1.05 * Llama2TokensPerSecond(megatron, base));
  EXPECT_GT(Llama2TokensPerSecond(fsdp, fp8_faster), 1.05 * Llama2TokensPerSecond(fsdp, base));
  EXPECT_DOUBLE_EQ(Llama2TokensPerSecond(megatron, linear_faster),
                   Llama2TokensPerSecond(megatron, base));
  EXPECT_GT(Llama2TokensPerSecond(fsdp, linear_faster), 1.1 * Llama2TokensPerSecond(fsdp, base));
}

TEST(ComputeTest, Fp8AndBf16GemmRatesAreApart) {
  // Seen (issue 31): the FP8 rate was a factor on the BF16 one, so the two Megatron FP8 rows, the
  // only Megatron rows on Hopper, set the BF16 rate of every framework there (fitted without the
  // MPT rows, 0.632 where the MPT rows fit 0.589). Now a BF16 run does not depend on the FP8
  // rate, and the FP8 GEMMs not on the BF16 rate.
  TimeCalibration base = DefaultTimeCalibration(), fp8_faster = base, bf16_faster = base;
  fp8_faster.hopper.fp8_gemm_max_efficiency *= 1.2;
  bf16_faster.hopper.gemm_max_efficiency *= 1.2;
  const auto megatron = workload::Framework::kMegatron;
  const auto bf16 = workload::Precision::kBf16Mixed;
  EXPECT_DOUBLE_EQ(Llama2TokensPerSecond(megatron, fp8_faster, bf16),
                   Llama2TokensPerSecond(megatron, base, bf16));
  EXPECT_GT(Llama2TokensPerSecond(megatron, bf16_faster, bf16),
            1.05 * Llama2TokensPerSecond(megatron, base, bf16));
  // An FP8 run keeps some 16-bit GEMMs (the output layer), so it moves, but by far less.
  const double fp8_base = Llama2TokensPerSecond(megatron, base);
  EXPECT_LT(Llama2TokensPerSecond(megatron, bf16_faster) / fp8_base,
            1 + 0.25 * (Llama2TokensPerSecond(megatron, fp8_faster) / fp8_base - 1));
}

TEST(ComputeTest, NemoFp8BenchmarkIsNotAThirdSlow) {
  // Seen (issue 31): NeMo 24.07's FP8 Llama 2 7B on 8 H100 (NVIDIA/NeMo@070a0bb168
  // docs/source/performance/performance_summary.md: 16847 tokens/s/GPU) came out at 12281, 27 %
  // slow, with the one FP8 efficiency llm-foundry's rows fitted. The row is a test of the fit
  // (published runs), not in it.
  const double predicted =
      Llama2TokensPerSecond(workload::Framework::kMegatron, DefaultTimeCalibration());
  EXPECT_NEAR(predicted / 16847, 1.0, 0.15) << predicted;
}

TEST(ComputeTest, GemmFallOffFollowsMemoryTraffic) {
  // A GEMM's time is its math plus its operands and result moved through memory
  // (gemm_traffic_factor): the traffic weighs more where a dimension is small, so a narrow model
  // slows down more than a wide one when the traffic is charged.
  TimeCalibration math_only = DefaultTimeCalibration(), with_traffic = math_only;
  math_only.gemm_traffic_factor = 0;
  with_traffic.gemm_traffic_factor = 1;
  auto slowdown = [&](int64_t hidden) {
    workload::Model m = Gpt22b();
    m.hidden = hidden;
    m.heads = hidden / 128;
    m.kv_heads = m.heads;
    m.ffn_hidden = 4 * hidden;
    workload::Training t = Tp8();
    t.tp = 1;
    t.sequence_parallel = false;
    return EstimateStepTime(m, t, A100Node(), with_traffic).step_seconds /
           EstimateStepTime(m, t, A100Node(), math_only).step_seconds;
  };
  EXPECT_GT(slowdown(1024), 1.0);
  EXPECT_GT(slowdown(1024), slowdown(8192));
  EXPECT_GT(slowdown(8192), 1.0);
}

}  // namespace
}  // namespace fulcrum::estimate
