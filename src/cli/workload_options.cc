#include "cli/workload_options.h"

#include <CLI/CLI.hpp>

namespace fulcrum::cli {

namespace {

// The model: a preset, a HuggingFace config or a custom shape.
void AddModelOptions(CLI::App* cmd, estimate::EstimateRequest& r) {
  const char* model = "Model (one of --model, --hf-config, --layers/--hidden/--heads)";
  cmd->add_option("--model", r.model,
                  "Model preset from the catalog (catalog/models/NAME.yaml), e.g. llama-2-7b")
      ->type_name("NAME")
      ->group(model);
  cmd->add_option("--hf-config", r.hf_config,
                  "A HuggingFace config.json (Llama, Mistral, Qwen2, Qwen3, Mixtral, Qwen2-MoE, "
                  "Qwen3-MoE, DeepSeek, DeepSeek-V2/V3, GPT-2, GPT-NeoX, BERT, MPT)")
      ->type_name("FILE")
      ->group(model);
  cmd->add_option("--layers", r.layers, "Custom model: transformer layers")->group(model);
  cmd->add_option("--hidden", r.hidden, "Custom model: hidden size")->group(model);
  cmd->add_option("--heads", r.heads, "Custom model: attention heads")->group(model);
  cmd->add_option("--kv-heads", r.kv_heads, "Custom model: key/value heads (default: --heads)")
      ->group(model);
  cmd->add_option(
         "--head-dim", r.head_dim,
         "Custom model: one attention head's width, where it is not hidden / heads (Qwen3, "
         "Mistral-Nemo: 128; default: hidden / heads)")
      ->group(model);
  cmd->add_option("--ffn-hidden", r.ffn_hidden, "Custom model: MLP width (default: 4 x hidden)")
      ->group(model);
  cmd->add_option("--vocab", r.vocab, "Custom model: vocabulary size (default: 50257)")
      ->group(model);
  cmd->add_option("--mlp", r.mlp, "Custom model: gelu|swiglu|squared-relu (default: gelu)")
      ->group(model);
  cmd->add_option("--experts", r.experts,
                  "Custom model: routed experts per layer, mixture of experts (default: 0, dense)")
      ->group(model);
  cmd->add_option("--experts-per-token", r.experts_per_token,
                  "Custom model: experts each token is routed to, top-k (default: 2)")
      ->group(model);
  cmd->add_flag("--tied-embeddings", r.tied_embeddings,
                "Custom model: output layer shares the embedding")
      ->group(model);
}

void AddHardwareOptions(CLI::App* cmd, estimate::EstimateRequest& r) {
  const char* hw = "Hardware";
  cmd->add_option("--gpu", r.gpu,
                  "GPU name or alias from the catalog (see fulcrum gpus), e.g. A100-80GB")
      ->type_name("NAME")
      ->group(hw);
  cmd->add_option("--gpus", r.gpus, "Number of GPUs (default: tp x pp x dp)")
      ->type_name("N")
      ->group(hw);
  cmd->add_option("--gpus-per-node", r.gpus_per_node, "GPUs per node (default: 8)")
      ->type_name("N")
      ->group(hw);
  cmd->add_option("--interconnect", r.interconnect,
                  "Intra-node link: nvlink|pcie (default: nvlink when the GPU has NVLink)")
      ->group(hw);
  cmd->add_option("--network-gbps", r.network_gbps,
                  "Inter-node network per node, Gbit/s (default: 400, AWS p4d EFA)")
      ->type_name("X")
      ->group(hw);
}

// What a framework's own settings change (gradient dtype, Transformer Engine's FP8 tensors, the
// interleaved schedule's group, Megatron-Core's all-to-all overlap), in the Training group.
void AddFrameworkSettingOptions(CLI::App* cmd, estimate::EstimateRequest& r, const char* tr) {
  cmd->add_option("--grad-precision", r.grad_precision,
                  "fp16|bf16|fp32: override the framework's gradient dtype")
      ->group(tr);
  cmd->add_flag("--fp8-params", r.fp8_params,
                "With --precision fp8 under megatron or megatron-fsdp: the layers' weights are "
                "Transformer Engine FP8 tensors with no 16-bit copy (NeMo fp8_params, Megatron-LM "
                "--fp8-param-gather; the optimizer keeps fp32 master weights)")
      ->group(tr);
  cmd->add_flag("--activation-func-fp8-input-store", r.activation_fp8_input_store,
                "SwiGLU models under megatron or megatron-fsdp: the activation's input, which it "
                "keeps for backward, is stored in FP8 and cast back in backward (Megatron-Core's "
                "activation_func_fp8_input_store; Megatron-Bridge "
                "model.activation_func_fp8_input_store=true)")
      ->group(tr);
  cmd->add_flag("--store-param-remainders", r.store_param_remainders,
                "Under megatron with bf16 weights: the optimizer keeps the fp32 master weights as "
                "the 16 bits the bf16 weights lack (apex DistributedFusedAdam's "
                "store_param_remainders, NeMo's default for a bf16 model without fp8_params): 2 "
                "bytes a parameter instead of 4")
      ->group(tr);
  cmd->add_flag("--fp8-activation-cache", r.fp8_activation_cache,
                "With --precision fp8 under megatron or megatron-fsdp: DeepSeek-V3's activation "
                "caching (its report, arXiv 2412.19437 section 3.3.3), which Megatron-Core does "
                "not offer: the attention output kept once in E5M6 (12 bits) instead of 16 bits "
                "plus the output projection's FP8 cast, and the MoE layers' SwiGLU inputs kept in "
                "FP8 with their outputs recomputed in backward")
      ->group(tr);
  cmd->add_option("--microbatch-group-size", r.microbatch_group_size,
                  "Interleaved pipeline (--vpp > 1): micro-batches run back to back on one model "
                  "chunk (Megatron-LM --microbatch-group-size-per-virtual-pipeline-stage, from pp "
                  "to the micro-batches per step); sets the warm-up and so the activations in "
                  "flight (default: pp)")
      ->group(tr);
  cmd->add_flag("--moe-a2a-overlap", r.moe_a2a_overlap,
                "MoE models with --ep > 1 under megatron or megatron-fsdp, pp 1 or --vpp > 1: "
                "Megatron-Core's expert-parallel all-to-all overlap (Megatron-LM "
                "--overlap-moe-expert-parallel-comm; Megatron-Bridge "
                "comm_overlap.overlap_moe_expert_parallel_comm=true): one micro-batch's forward "
                "runs beside another's backward, layer by layer, each one's dispatch and combine "
                "under the other's compute; one more micro-batch chunk in flight")
      ->group(tr);
  cmd->add_flag("--overlap-comm", r.overlap_comm,
                "--framework deepspeed (or megatron-deepspeed in fp16) with --zero 1 or 2: "
                "DeepSpeed's zero_optimization.overlap_comm, the gradients reduced on a stream of "
                "their own behind the backward. Without it (DeepSpeed's default below stage 3) "
                "they are reduced on the compute stream after the backward, and the step time "
                "counts all of it; the updated parameters' all-gather after the step counts "
                "either way")
      ->group(tr);
  cmd->add_option("--backward-prefetch", r.backward_prefetch,
                  "BACKWARD_PRE|BACKWARD_POST|NO_PREFETCH: PyTorch FSDP's backward_prefetch "
                  "(--framework fsdp --zero 3, FULL_SHARD): BACKWARD_PRE gathers the next unit's "
                  "parameters behind the current unit's backward, as FSDP2 always does; "
                  "BACKWARD_POST after it, its reduce-scatter behind the next unit's backward; "
                  "NO_PREFETCH after that reduce-scatter, so the backward's all-gathers and "
                  "reduce-scatters overlap nothing. accelerate's FSDP1 default is NO_PREFETCH "
                  "(default: BACKWARD_PRE, PyTorch's)")
      ->group(tr);
  cmd->add_flag("--hf-gradient-checkpointing", r.hf_gradient_checkpointing,
                "--framework fsdp --zero 3 --recompute full: the recompute is the HF Trainer's "
                "--gradient_checkpointing (torch.utils.checkpoint around each FSDP unit), whose "
                "recomputed forward gathers the layer's parameters once more: three all-gathers "
                "per micro-batch instead of two (transformers warns of it; fsdp_config "
                "activation_checkpointing avoids it)")
      ->group(tr);
  cmd->add_option("--moe-token-dispatcher-type", r.moe_dispatcher,
                  "alltoall|flex: how MoE tokens reach experts on other GPUs (Megatron-Core "
                  "--moe-token-dispatcher-type; megatron or megatron-fsdp for flex): alltoall, an "
                  "NCCL all-to-all of every routed copy; flex (DeepEP / HybridEP), each token sent "
                  "once to each other node it has experts on and forwarded there over NVLink "
                  "(default: alltoall)")
      ->group(tr);
  cmd->add_option("--moe-router-num-groups", r.moe_router_groups,
                  "MoE group-limited routing (Megatron-Core --moe-router-num-groups; HF n_group): "
                  "the experts in this many equal groups, with --moe-router-group-topk; groups "
                  "that are the expert-parallel group's nodes limit the nodes a token reaches, "
                  "which the flex dispatcher sends over the network (default: none)")
      ->group(tr);
  cmd->add_option("--moe-router-group-topk", r.moe_router_group_topk,
                  "Groups each token is routed within (Megatron-Core --moe-router-group-topk; HF "
                  "topk_group; DeepSeek-V3: 4 of 8)")
      ->group(tr);
}

}  // namespace

void AddWorkloadOptions(CLI::App* cmd, estimate::EstimateRequest& r) {
  // A repeated flag takes its last value, so a suggested change can be appended to a command.
  cmd->option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  AddModelOptions(cmd, r);

  AddHardwareOptions(cmd, r);

  const char* tr = "Training";
  cmd->add_option("--precision", r.precision,
                  "bf16|fp16 (mixed, fp32 master weights)|fp8|fp32|tf32 (fp32 with TF32 "
                  "matmuls)|pure-bf16 (default: bf16)")
      ->group(tr);
  cmd->add_option("--optimizer", r.optimizer, "adamw|sgd (momentum)|adam8bit (default: adamw)")
      ->group(tr);
  cmd->add_option("--method", r.method, "full|lora|qlora (default: full)")->group(tr);
  cmd->add_option("--optimizer-kernels", r.optimizer_kernels,
                  "fused|tf1-graph: how the optimizer step runs. fused: one pass over each "
                  "parameter's states per step (apex or PyTorch fused Adam, Megatron-LM, "
                  "DeepSpeed). tf1-graph: TensorFlow 1's optimizers as NVIDIA's TF1 BERT recipe "
                  "runs them, a graph of per-tensor elementwise ops, with the gradients unscaled, "
                  "clipped by their global norm and (with accumulation) added into an fp32 buffer "
                  "by ops of their own on every micro-batch (default: fused)")
      ->group(tr);
  cmd->add_option("--cross-entropy", r.cross_entropy,
                  "framework|fused: how the loss over the vocabulary runs, which sets the memory "
                  "the logits take at the loss. framework: the framework's own (Megatron's "
                  "vocab-parallel cross entropy; PyTorch's cross entropy on fp32 logits under "
                  "fsdp, hf, deepspeed and ddp). fused: flash-attn's fused cross entropy on the "
                  "16-bit logits, which keeps them and writes one gradient of their size "
                  "(MosaicML llm-foundry's default loss; not under the Megatron frameworks) "
                  "(default: framework)")
      ->group(tr);
  cmd->add_option("--exp-avg-dtype", r.exp_avg_dtype,
                  "fp32|fp16|bf16|fp8: AdamW's first moment under Megatron-LM's "
                  "--use-precision-aware-optimizer (--framework megatron --zero 1; default: fp32)")
      ->group(tr);
  cmd->add_option("--exp-avg-sq-dtype", r.exp_avg_sq_dtype,
                  "fp32|fp16|bf16|fp8: AdamW's second moment, as --exp-avg-dtype (default: fp32)")
      ->group(tr);
  cmd->add_option("--lora-rank", r.lora_rank,
                  "LoRA rank, adapters on every linear layer (default: 16)")
      ->group(tr);
  cmd->add_option("--tp", r.tp, "Tensor-parallel degree (default: 1)")->group(tr);
  cmd->add_option("--pp", r.pp, "Pipeline-parallel degree (default: 1)")->group(tr);
  cmd->add_option("--vpp", r.vpp, "Virtual pipeline stages per rank, interleaved 1F1B (default: 1)")
      ->group(tr);
  cmd->add_option("--pipeline-schedule", r.pipeline_schedule,
                  "1f1b|dualpipe|dualpipev: 1F1B (interleaved with --vpp > 1); DeepSeek's "
                  "bidirectional DualPipe (DeepSeek-V3; deepseek-ai/DualPipe: each rank holds two "
                  "of the --pp stages, twice the weights, pp + 1 stage micro-batches in flight, "
                  "bubble (pp/2 - 1)(F&B + B - 3W)); or its cut-in-half DualPipeV (PyTorch's "
                  "ScheduleDualPipeV, torchtitan: 2 pp stages on --pp ranks, 1F1B's weights). Both "
                  "run each forward chunk beside another micro-batch's backward with the "
                  "all-to-all and pipeline sends overlapped; under megatron or fsdp, --pp >= 2 "
                  "(even for dualpipe), --vpp 1, at least 2 x pp micro-batches per step "
                  "(default: 1f1b)")
      ->group(tr);
  cmd->add_option(
         "--first-stage-layers", r.first_stage_layers,
         "Layers of the first pipeline stage (Megatron --decoder-first-pipeline-num-layers; "
         "default: layers / pp, the floor when uneven)")
      ->group(tr);
  cmd->add_option("--last-stage-layers", r.last_stage_layers,
                  "Layers of the last pipeline stage (Megatron --decoder-last-pipeline-num-layers; "
                  "default: layers / pp, the floor when uneven)")
      ->group(tr);
  cmd->add_option("--cp", r.cp,
                  "Context-parallel degree: each GPU holds seq-len / cp tokens (default: 1)")
      ->group(tr);
  cmd->add_option("--dp", r.dp, "Data-parallel degree (default: gpus / (tp x pp x cp))")->group(tr);
  cmd->add_option("--ep", r.ep,
                  "Expert-parallel degree for mixture-of-experts models, carved out of dp (divides "
                  "dp; default: 1)")
      ->group(tr);
  cmd->add_option("--expert-tp", r.expert_tp,
                  "1 or --tp: the routed experts' tensor parallelism (Megatron-Core "
                  "--expert-tensor-parallel-size). 1: whole experts, --ep then divides tp x cp x "
                  "dp (megatron or megatron-fsdp, with --sequence-parallel when --tp > 1; "
                  "Megatron-Bridge's MoE recipes set 1) (default: --tp, experts split like the "
                  "dense layers)")
      ->group(tr);
  cmd->add_option("--dp-shard", r.dp_shard,
                  "HSDP / FSDP HYBRID_SHARD: shard model states within groups of N data-parallel "
                  "ranks, replicate across them (e.g. GPUs per node; default: all of dp)")
      ->group(tr);
  cmd->add_option("--zero", r.zero, "ZeRO stage 0|1|2|3 over dp; 3 = FSDP full shard (default: 0)")
      ->group(tr);
  cmd->add_flag("--sequence-parallel", r.sequence_parallel,
                "Megatron sequence parallelism (needs --tp > 1)")
      ->group(tr);
  cmd->add_option("--micro-batch", r.micro_batch, "Sequences per GPU per forward pass (default: 1)")
      ->group(tr);
  cmd->add_option(
         "--global-batch", r.global_batch,
         "Sequences per optimizer step; a multiple of micro-batch x dp (default: micro-batch x dp)")
      ->group(tr);
  cmd->add_option("--seq-len", r.seq_len, "Tokens per sequence (default: min(2048, model context))")
      ->group(tr);
  cmd->add_option("--mean-seq-len", r.mean_seq_len,
                  "Tokens per sequence the GPUs run on average when batches are padded to less "
                  "than --seq-len (sequence binning such as NVIDIA LDDL's, or padding each batch "
                  "to its longest sequence): step time and throughput use it, memory stays "
                  "sized for --seq-len (default: --seq-len)")
      ->group(tr);
  cmd->add_option("--head-tokens", r.head_tokens,
                  "Tokens per sequence the output head runs on: a masked-LM recipe that gathers "
                  "the masked positions first (BERT: max_predictions_per_seq, or 15 % of the "
                  "tokens) runs it on those only; 1 for a head on the first token (default: "
                  "every token)")
      ->group(tr);
  cmd->add_option("--head-width", r.head_width,
                  "Outputs per token of the output head: 2 for an extractive question-answering "
                  "span head (SQuAD start/end logits), the class count for a classifier "
                  "(default: the model's vocabulary)")
      ->group(tr);
  cmd->add_option("--recompute", r.recompute,
                  "Activation recompute none|selective|full (default: none)")
      ->group(tr);
  cmd->add_option("--recompute-modules", r.recompute_modules,
                  "With --recompute selective under megatron or megatron-fsdp: Megatron-LM's "
                  "--recompute-modules, a comma list of core_attn, moe_act, layernorm, "
                  "mla_up_proj, mlp, moe, shared_experts (default: core_attn; ignored under "
                  "--recompute none or full, as Megatron-LM does)")
      ->type_name("LIST")
      ->group(tr);
  cmd->add_option("--flash-attention", r.flash_attention, "on|off (default: on)")->group(tr);
  cmd->add_option("--framework", r.framework,
                  "megatron, deepspeed, fsdp, hf, ddp, megatron-fsdp or megatron-deepspeed: "
                  "gradient dtype, buffers and allocator conventions (default: fsdp; see "
                  "docs/ACCURACY.md)")
      ->group(tr);
  cmd->add_option(
         "--checkpoint-format", r.checkpoint_format,
         "torch_dist, torch, fsdp_dtensor, dcp, fsdp_full, deepspeed or safetensors: the format "
         "the run resumes from, which sets memory.peak_at_resume_bytes_per_gpu "
         "(default: the framework's own: megatron torch_dist, megatron-fsdp "
         "fsdp_dtensor, deepspeed and megatron-deepspeed deepspeed, fsdp dcp, hf and ddp "
         "safetensors)")
      ->group(tr);
  AddFrameworkSettingOptions(cmd, r, tr);
  cmd->add_option("--offload", r.offload,
                  "CPU offload: none|optimizer|optimizer+params|activations, or parts joined by + "
                  "(e.g. optimizer+activations; default: none)")
      ->group(tr);
}

}  // namespace fulcrum::cli
