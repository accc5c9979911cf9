// The step-time model: FLOPs per transformer layer (incl. attention), matrix multiplies at a
// size-dependent fraction of the GPU's dense peak, memory-bound operations at achievable memory
// bandwidth, flash vs plain attention, recompute, tensor-parallel collectives per layer, the
// pipeline bubble (p-1)/(m*v), data-parallel gradient reduction and ZeRO-3 parameter gathers with
// overlap, inter-node traffic over the offer's network. Inputs are flat numeric structs so the
// planner's inner loop stays allocation-free; all functions are pure and thread-safe.
// Every efficiency constant lives in TimeCalibration below, fitted on
// ../shared/data/calibration/measured.csv only (docs/ACCURACY.md).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "catalog/catalog.h"
#include "workload/model.h"
#include "workload/training.h"

namespace fulcrum::estimate {

// All efficiency constants of the time model, in one place. Values are the defaults fitted on
// measured.csv (throughput and step-time rows; see docs/ACCURACY.md "Step time" for the fit and
// the error per row). Nothing else in the code holds a tuning constant.
struct ArchitectureEfficiency {
  // Large-GEMM fraction of the dense peak. Fitted per architecture: Hopper reaches a smaller
  // fraction of its (much higher) peak than Ampere with the kernels of the measured frameworks.
  double gemm_max_efficiency = 0.80;
  // Flash attention (fused kernel, forward + backward, causal half executed) as a fraction of the
  // 16-bit dense peak. FlashAttention-2 reaches ~50-70 % of peak on A100 but ~35 % on H100
  // (Dao 2023, arXiv 2307.08691, Fig. 4-7); fitted.
  double flash_attention_efficiency = 0.45;
};

struct TimeCalibration {
  // Per GPU architecture (catalog::Gpu::architecture); `other` for any architecture not listed.
  ArchitectureEfficiency ampere{0.78, 0.28};
  ArchitectureEfficiency hopper{0.56, 0.19};
  ArchitectureEfficiency other{0.56, 0.19};  // conservative: as Hopper
  // GEMM efficiency = architecture max * prod over the GEMM's three dims d of
  // d / (d + gemm_half_dim): large GEMMs approach the max, small ones fall off (wave
  // quantisation, launch overhead). Fitted.
  double gemm_half_dim = 177;
  // FP8 GEMMs reach a lower fraction of the (2x) FP8 peak than BF16 of its peak. Fitted.
  double fp8_gemm_relative_efficiency = 0.64;
  // Achievable fraction of the datasheet memory bandwidth for elementwise kernels (STREAM-like
  // copies reach 0.8-0.9 of peak on A100/H100). Fitted.
  double memory_bandwidth_efficiency = 0.80;
  // Elementwise traffic per token per layer in the forward pass, in activation elements:
  // elementwise_hidden_elements * h (norms, residuals, dropout, rotary) + elementwise_ffn_elements
  // * ffn (activation function). Backward moves twice as much. Fitted.
  double elementwise_hidden_elements = 17;
  double elementwise_ffn_elements = 2.8;
  // Plain (non-flash) attention materialises the a*s*s score matrix: elements read/written per
  // score in the forward pass beyond the two batched GEMMs. The fit drives it to ~0 on the
  // Megatron rows (their fused scale-mask-softmax kernel); kept as a knob, fitted.
  double attention_score_elements = 0;
  // Achievable fraction of link bandwidth for NCCL collectives (bus bandwidth / wire). NVLink and
  // network fitted (the rows are mostly insensitive: communication is largely hidden); PCIe
  // has no measured row: 0.60 is an assumption (NCCL all-reduce on PCIe gen4 servers reaches
  // ~10-20 GB/s bus bandwidth of 31.5 wire, nccl-tests reports).
  double nvlink_efficiency = 0.95;
  double pcie_efficiency = 0.60;
  double network_efficiency = 0.90;
  // Latency per ring step (seconds): NVLink/PCIe and inter-node.
  double intra_node_latency_seconds = 8e-6;
  double inter_node_latency_seconds = 20e-6;
  // Fraction of the backward (and for ZeRO-3, forward) compute that hides data-parallel
  // communication (bucketed overlap). Fitted.
  double dp_overlap_fraction = 0.85;
  // Fixed framework/kernel-launch overhead per layer per micro-batch (forward+backward). Fitted.
  double per_layer_overhead_seconds = 22e-6;
  // Models given only by FLOPs per sample (kGeneric: CNNs such as ResNet-50): fraction of the
  // 16-bit dense peak reached. NOT fitted (measured.csv has no such row): 0.22 is what NVIDIA's
  // ResNet-50 v1.5 PyTorch AMP result implies on A100 (~2,800 images/s x 3 x 8.2 GFLOPs of
  // forward / 312 TFLOP/s; NVIDIA/DeepLearningExamples PyTorch/Classification/ConvNets README).
  double generic_model_efficiency = 0.22;
  // QLoRA de-quantises 4-bit base weights to 16 bits for every use (forward, backward,
  // recompute): bytes moved per base parameter per use (0.5 read + 2 written).
  double qlora_dequant_bytes_per_param = 2.5;
  // Optimizer step: bytes moved per locally-held parameter (fp32 master + m + v read and
  // written, grads read, bf16 weights written: 4*3*2 + 4 + 2 ~ 30).
  double optimizer_bytes_per_param = 30;
};

// The default calibration (the fitted values above).
const TimeCalibration& DefaultTimeCalibration();

// The efficiencies for an architecture name ("Ampere", "Hopper", ...; case-insensitive).
const ArchitectureEfficiency& EfficiencyFor(std::string_view architecture,
                                            const TimeCalibration& calibration);

// The machine as the model needs it (derived from catalog::Gpu + catalog::Offer).
struct Hardware {
  double peak_flops = 0;               // dense FLOP/s for the layout's number format (matmuls)
  double peak_flops_16bit = 0;         // dense BF16/FP16 FLOP/s (attention, when matmuls are FP8)
  double memory_bytes_per_second = 0;  // datasheet
  double intra_node_bytes_per_second = 0;  // per GPU per direction, wire (NVLink or PCIe)
  bool nvlink = false;
  int gpus_per_node = 8;
  double network_bytes_per_second_per_node = 0;  // inter-node, wire; 0 = single node only
  ArchitectureEfficiency efficiency;             // EfficiencyFor(gpu.architecture, calibration)
};

struct StepTime {
  double step_seconds = 0;
  double tokens_per_second_per_gpu = 0;
  double mfu = 0;  // model FLOPs (6N + 12 L h s per token, PaLM App. B) / (step * peak * gpus)
  double hfu = 0;  // as mfu but counting recomputed FLOPs too
  double compute_seconds = 0;        // matmuls + attention + memory-bound ops + optimizer
  double communication_seconds = 0;  // all collectives, hidden or not
  double bubble_seconds = 0;         // pipeline fill/drain
  double exposed_seconds = 0;        // communication not hidden behind compute
};

// Model FLOPs per token for training (forward + backward, no recompute), PaLM App. B style:
// 6 * (matmul parameters) + 12 * L * h * s + 6 * h * vocab (logits). LoRA/QLoRA skip the
// frozen weights' gradient GEMMs: 4 instead of 6. Generic models: 3 x forward FLOPs per sample
// (the "token" is then a sample).
double ModelFlopsPerToken(const workload::Model& model, const workload::Training& training);

// Parameters that receive gradients and optimizer updates (all of them, or the LoRA adapters).
double TrainableParameterCount(const workload::Model& model, const workload::Training& training);

// Step time of one optimizer step of (model, training) on `hardware`. Assumes
// workload::Validate() passed; degenerate inputs give step_seconds = +inf. For kGeneric models
// tokens_per_second_per_gpu counts samples.
StepTime EstimateStepTime(const workload::Model& model, const workload::Training& training,
                          const Hardware& hardware,
                          const TimeCalibration& calibration = DefaultTimeCalibration());

// The Hardware of one node of `offer` for `precision`: dense peak of that precision (FP8 falls
// back to BF16 where the GPU has no FP8), memory bandwidth, NVLink (per direction = half the
// catalog's bidirectional figure) or PCIe, the offer's network. nullopt when the GPU lacks a
// sourced peak for the precision.
std::optional<Hardware> HardwareFor(const catalog::Gpu& gpu, const catalog::Offer& offer,
                                    workload::Precision precision,
                                    const TimeCalibration& calibration = DefaultTimeCalibration());

// Bytes per activation element (fp32: 4; 16-bit and fp8 training keep 16-bit activations: 2).
double ActivationBytes(workload::Precision precision);

}  // namespace fulcrum::estimate
