// Resolution of one configuration from the user's request: model sources, derived dp and
// global batch, defaults, and the refusals; plus the ways out of a configuration that does not fit.
#include "estimate/estimate.h"

#include <algorithm>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "estimate/fit.h"

namespace fulcrum::estimate {
namespace {

const std::string kCatalogDir = std::string(FULCRUM_SOURCE_DIR) + "/catalog";

catalog::Catalog ShippedCatalog() {
  catalog::LoadOptions options;
  options.include_user_offers = false;
  auto loaded = catalog::Catalog::Load(kCatalogDir, options);
  if (!loaded.ok()) ADD_FAILURE() << loaded.status().message();
  return loaded.ok() ? std::move(loaded).value() : catalog::Catalog();
}

TEST(ResolveTest, DerivesDpGlobalBatchAndSequence) {
  EstimateRequest r;
  r.model = "gpt2";
  r.gpu = "A100-80GB";
  r.gpus = 16;
  r.tp = 2;
  r.micro_batch = 4;
  Result<EstimateInput> in = ResolveEstimateInput(r, ShippedCatalog(), kCatalogDir);
  ASSERT_TRUE(in.ok()) << in.status().message();
  EXPECT_EQ(in->training.dp, 8);
  EXPECT_EQ(in->training.global_batch, 32);
  EXPECT_EQ(in->training.seq_len, 1024);  // GPT-2's 1024 learned positions
  EXPECT_EQ(in->gpus, 16);
  EXPECT_EQ(in->interconnect, catalog::Interconnect::kNvlink);
}

// --mean-seq-len, --head-tokens and --head-width reach the training setup and the flags that
// reproduce it; out-of-range values are refused (InvalidInput: exit 2), naming the flag.
TEST(ResolveTest, RunShapeOptions) {
  EstimateRequest r;
  r.model = "bert-large";
  r.gpu = "A100-80GB";
  r.precision = "fp16";
  r.seq_len = 512;
  r.mean_seq_len = 288;
  r.head_tokens = 38;
  r.head_width = 2;
  Result<EstimateInput> in = ResolveEstimateInput(r, ShippedCatalog(), kCatalogDir);
  ASSERT_TRUE(in.ok()) << in.status().message();
  EXPECT_EQ(in->training.mean_seq_len, 288);
  EXPECT_EQ(workload::RunSeqLen(in->training), 288);
  EXPECT_EQ(in->training.head_tokens, 38);
  EXPECT_EQ(in->training.head_width, 2);
  EXPECT_NE(DescribeSetup(*in).find("--mean-seq-len 288 --head-tokens 38 --head-width 2"),
            std::string::npos)
      << DescribeSetup(*in);
  auto refused = [&](EstimateRequest bad, const std::string& message) {
    Result<EstimateInput> out = ResolveEstimateInput(bad, ShippedCatalog(), kCatalogDir);
    ASSERT_FALSE(out.ok());
    EXPECT_EQ(out.status().code(), StatusCode::kInvalidInput);
    EXPECT_NE(out.status().message().find(message), std::string::npos) << out.status().message();
  };
  EstimateRequest bad = r;
  bad.mean_seq_len = 600;
  refused(bad, "--mean-seq-len 600 exceeds --seq-len 512");
  bad = r;
  bad.mean_seq_len = -1;
  refused(bad, "--mean-seq-len: expected an integer >= 0, found -1");
  bad = r;
  bad.head_tokens = 300;
  refused(bad, "--head-tokens 300 exceeds the tokens per sequence (288)");
  bad = r;
  bad.head_width = -2;
  refused(bad, "--head-width: expected an integer >= 0, found -2");
  bad = r;
  bad.model = "resnet-50";
  bad.seq_len = 0;
  bad.mean_seq_len = 0;
  bad.head_tokens = 0;
  refused(bad, "--head-width need a transformer");
}

TEST(ResolveTest, RefusesAmbiguousOrMissingModel) {
  EstimateRequest r;
  r.gpu = "H100-SXM";
  EXPECT_FALSE(ResolveEstimateInput(r, ShippedCatalog(), kCatalogDir).ok());
  r.model = "gpt2";
  r.layers = 4;
  Result<EstimateInput> both = ResolveEstimateInput(r, ShippedCatalog(), kCatalogDir);
  ASSERT_FALSE(both.ok());
  EXPECT_NE(both.status().message().find("only one"), std::string::npos);
}

TEST(ResolveTest, GpusNotDivisibleByModelParallelism) {
  EstimateRequest r;
  r.model = "llama-2-7b";
  r.gpu = "H100-SXM";
  r.gpus = 6;
  r.tp = 4;
  Result<EstimateInput> in = ResolveEstimateInput(r, ShippedCatalog(), kCatalogDir);
  ASSERT_FALSE(in.ok());
  EXPECT_EQ(in.status().code(), StatusCode::kInvalidInput);
}

// `model` on `gpu` with every other setting at its default, resolved against `cat`.
Result<EstimateInput> Resolved(const std::string& model, const std::string& gpu,
                               const catalog::Catalog& cat) {
  EstimateRequest r;
  r.model = model;
  r.gpu = gpu;
  return ResolveEstimateInput(r, cat, kCatalogDir);
}

TEST(WaysOutTest, EveryWayOutFitsAndChangesSomething) {
  const catalog::Catalog cat = ShippedCatalog();
  Result<EstimateInput> in = Resolved("llama-2-13b", "A100-40GB", cat);
  ASSERT_TRUE(in.ok()) << in.status().message();
  ASSERT_EQ(Evaluate(*in).verdict, FitVerdict::kDoesNotFit);
  const std::vector<WayOut> ways = FindWaysOut(*in, cat);
  ASSERT_FALSE(ways.empty());
  for (const WayOut& w : ways) {
    EXPECT_NE(w.result.verdict, FitVerdict::kDoesNotFit) << w.change;
    EXPECT_LE(w.result.memory.peak_bytes_per_gpu, w.result.capacity_bytes) << w.change;
    EXPECT_FALSE(w.flags.empty());
  }
}

// A GPU whose memory lies between the run's peak without and with the allocator's reserve: the
// run is tight (it fits once the allocator gives back its cache), the JSON says so with both
// bounds, and the text names the margin; a GPU below the unreserved peak does not fit.
TEST(EvaluateTest, OverOnlyByTheAllocatorReserveIsTight) {
  const catalog::Catalog cat = ShippedCatalog();
  Result<EstimateInput> in = Resolved("llama-2-13b", "A100-80GB", cat);
  ASSERT_TRUE(in.ok()) << in.status().message();
  const EstimateResult as_is = Evaluate(*in);
  const double peak = FitPeakBytes(as_is.memory, as_is.resume);
  ASSERT_GT(peak, as_is.unreserved_peak_bytes);
  EXPECT_DOUBLE_EQ(as_is.unreserved_peak_bytes, FitUnreservedPeakBytes(as_is.memory, as_is.resume));
  EstimateInput between = *in;
  between.gpu.memory_gib = (peak + as_is.unreserved_peak_bytes) / 2 / 1073741824.0;
  const EstimateResult tight = Evaluate(between);
  EXPECT_EQ(tight.verdict, FitVerdict::kTight);
  EXPECT_LT(tight.headroom_fraction, 0);
  nlohmann::json doc;
  AppendEstimateJson(tight, doc);
  EXPECT_TRUE(doc["memory"]["fits"].get<bool>());
  EXPECT_EQ(doc["memory"]["verdict"], "tight");
  EXPECT_DOUBLE_EQ(doc["memory"]["unreserved_peak_bytes_per_gpu"].get<double>(),
                   as_is.unreserved_peak_bytes);
  EXPECT_NE(
      RenderMemoryTable(tight).find("fits only if the caching allocator gives back its cache"),
      std::string::npos)
      << RenderMemoryTable(tight);
  EstimateInput below = *in;
  below.gpu.memory_gib = as_is.unreserved_peak_bytes * 0.99 / 1073741824.0;
  const EstimateResult over = Evaluate(below);
  EXPECT_EQ(over.verdict, FitVerdict::kDoesNotFit);
  AppendEstimateJson(over, doc);
  EXPECT_FALSE(doc["memory"]["fits"].get<bool>());
}

// The framework settings a published recipe states reach the training and the reproducing flags.
TEST(ResolveTest, Fp8ParamsGradPrecisionAndGroupSize) {
  EstimateRequest r;
  r.model = "llama-2-70b";
  r.gpu = "H100-80GB";
  r.gpus = 64;
  r.tp = 4;
  r.pp = 4;
  r.vpp = 5;
  r.zero = 1;
  r.framework = "megatron";
  r.precision = "fp8";
  r.grad_precision = "bf16";
  r.fp8_params = true;
  r.microbatch_group_size = 8;
  r.global_batch = 128;
  r.seq_len = 4096;
  const catalog::Catalog cat = ShippedCatalog();
  Result<EstimateInput> in = ResolveEstimateInput(r, cat, kCatalogDir);
  ASSERT_TRUE(in.ok()) << in.status().message();
  EXPECT_TRUE(in->training.fp8_params);
  EXPECT_EQ(in->training.microbatch_group_size, 8);
  const std::string flags = DescribeSetup(*in);
  for (const char* flag : {"--fp8-params", "--microbatch-group-size 8", "--grad-precision bf16"}) {
    EXPECT_NE(flags.find(flag), std::string::npos) << flag << " in " << flags;
  }
  // FP8 weights take less than the bf16 weight with its FP8 cast beside it.
  EstimateRequest cast = r;
  cast.fp8_params = false;
  Result<EstimateInput> cast_in = ResolveEstimateInput(cast, cat, kCatalogDir);
  ASSERT_TRUE(cast_in.ok());
  EXPECT_LT(Evaluate(*in).memory.weights_bytes, Evaluate(*cast_in).memory.weights_bytes);
  r.microbatch_group_size = 2;  // below pp
  EXPECT_NE(ResolveEstimateInput(r, cat, kCatalogDir).status().message().find("4 .. 32"),
            std::string::npos);
}

// Megatron-Core's activation_func_fp8_input_store: echoed in the setup, less activation memory,
// refused for a GELU model or outside Megatron-Core (as Megatron's own __post_init__ refuses it).
TEST(ResolveTest, ActivationFp8InputStore) {
  EstimateRequest r;
  r.model = "llama-3-8b";
  r.gpu = "H100-80GB";
  r.gpus = 8;
  r.tp = 2;
  r.framework = "megatron";
  r.zero = 1;
  r.activation_fp8_input_store = true;
  const catalog::Catalog cat = ShippedCatalog();
  Result<EstimateInput> in = ResolveEstimateInput(r, cat, kCatalogDir);
  ASSERT_TRUE(in.ok()) << in.status().message();
  EXPECT_NE(DescribeSetup(*in).find("--activation-func-fp8-input-store"), std::string::npos);
  EstimateRequest plain = r;
  plain.activation_fp8_input_store = false;
  Result<EstimateInput> plain_in = ResolveEstimateInput(plain, cat, kCatalogDir);
  ASSERT_TRUE(plain_in.ok());
  EXPECT_LT(Evaluate(*in).memory.activations_bytes, Evaluate(*plain_in).memory.activations_bytes);
  EstimateRequest fsdp = r;
  fsdp.framework = "fsdp";
  fsdp.tp = 1;
  fsdp.zero = 3;
  EXPECT_NE(ResolveEstimateInput(fsdp, cat, kCatalogDir).status().message().find("Megatron-Core"),
            std::string::npos);
  EstimateRequest gelu = r;
  gelu.model = "gpt3-175b";
  gelu.gpus = 64;
  gelu.tp = 8;
  EXPECT_NE(ResolveEstimateInput(gelu, cat, kCatalogDir).status().message().find("SwiGLU only"),
            std::string::npos);
}

// --moe-a2a-overlap: echoed in the setup and its JSON (its time: parallel_test.cc), one more layer
// of activations.
TEST(ResolveTest, MoeAllToAllOverlap) {
  EstimateRequest r;
  r.model = "qwen3-30b-a3b";
  r.gpu = "H100-80GB";
  r.gpus = 16;
  r.ep = 16;
  r.framework = "megatron";
  r.zero = 1;
  r.global_batch = 64;
  r.seq_len = 4096;
  const catalog::Catalog cat = ShippedCatalog();
  EstimateRequest overlap = r;
  overlap.moe_a2a_overlap = true;
  Result<EstimateInput> plain_in = ResolveEstimateInput(r, cat, kCatalogDir);
  Result<EstimateInput> in = ResolveEstimateInput(overlap, cat, kCatalogDir);
  ASSERT_TRUE(in.ok()) << in.status().message();
  ASSERT_TRUE(plain_in.ok()) << plain_in.status().message();
  EXPECT_NE(DescribeSetup(*in).find("--moe-a2a-overlap"), std::string::npos);
  EXPECT_EQ(DescribeSetup(*plain_in).find("--moe-a2a-overlap"), std::string::npos);
  const EstimateResult with = Evaluate(*in), without = Evaluate(*plain_in);
  EXPECT_GT(with.memory.activations_bytes, without.memory.activations_bytes);
  nlohmann::json doc, plain_doc;
  AppendEstimateJson(with, doc);
  AppendEstimateJson(without, plain_doc);
  EXPECT_TRUE(doc["setup"]["moe_a2a_overlap"].get<bool>());
  EXPECT_FALSE(plain_doc["setup"].contains("moe_a2a_overlap"));
}

// --pipeline-schedule: echoed in the setup and its JSON; an unknown name lists the known ones.
TEST(ResolveTest, PipelineSchedule) {
  EstimateRequest r;
  r.model = "llama-3-70b";
  r.gpu = "H100-80GB";
  r.gpus = 64;
  r.tp = 4;
  r.pp = 8;
  r.framework = "megatron";
  r.zero = 1;
  r.global_batch = 64;
  r.seq_len = 4096;
  r.pipeline_schedule = "dualpipe";
  const catalog::Catalog cat = ShippedCatalog();
  Result<EstimateInput> in = ResolveEstimateInput(r, cat, kCatalogDir);
  ASSERT_TRUE(in.ok()) << in.status().message();
  EXPECT_NE(DescribeSetup(*in).find("--pipeline-schedule dualpipe"), std::string::npos);
  nlohmann::json doc;
  AppendEstimateJson(Evaluate(*in), doc);
  EXPECT_EQ(doc["setup"]["pipeline_schedule"], "dualpipe");
  EstimateRequest zb = r;
  zb.pipeline_schedule = "zero-bubble";
  EXPECT_NE(ResolveEstimateInput(zb, cat, kCatalogDir)
                .status()
                .message()
                .find("1f1b, dualpipe or dualpipev"),
            std::string::npos);
}

TEST(ResolveTest, OffloadParts) {
  EstimateRequest r;
  r.model = "gpt2";
  r.gpu = "A100-80GB";
  r.offload = "optimizer+activations";
  const catalog::Catalog cat = ShippedCatalog();
  Result<EstimateInput> in = ResolveEstimateInput(r, cat, kCatalogDir);
  ASSERT_TRUE(in.ok()) << in.status().message();
  EXPECT_TRUE(in->training.offload_optimizer);
  EXPECT_TRUE(in->training.offload_activations);
  EXPECT_FALSE(in->training.offload_params);
  EXPECT_NE(DescribeSetup(*in).find("--offload optimizer+activations"), std::string::npos);
  r.offload = "params";
  EXPECT_NE(ResolveEstimateInput(r, cat, kCatalogDir).status().message().find("needs optimizer"),
            std::string::npos);
  r.offload = "gradients";
  EXPECT_NE(ResolveEstimateInput(r, cat, kCatalogDir).status().message().find("activations"),
            std::string::npos);
  r.offload = "all";
  Result<EstimateInput> all = ResolveEstimateInput(r, cat, kCatalogDir);
  ASSERT_TRUE(all.ok());
  EXPECT_TRUE(all->training.offload_params);
}

// Llama 3 8B at 65536 tokens on 8 H100 does not fit (its logits alone, 65536 x 128256 x 10
// bytes under FSDP, exceed 80 GB); context parallelism over the same 8 GPUs splits them
// (torchtitan trains Llama 3.1 8B at 128k with cp 4 on 8 H100: pytorch/torchtitan@31a17bfd
// benchmarks/llama3_h100_202412_torchtitan.md).
TEST(WaysOutTest, LongSequencesGetContextParallelism) {
  EstimateRequest r;
  r.model = "llama-3-8b";
  r.gpu = "H100-SXM";
  r.gpus = 8;
  r.zero = 3;
  r.seq_len = 65536;
  r.recompute = "full";
  const catalog::Catalog cat = ShippedCatalog();
  Result<EstimateInput> in = ResolveEstimateInput(r, cat, kCatalogDir);
  ASSERT_TRUE(in.ok()) << in.status().message();
  ASSERT_EQ(Evaluate(*in).verdict, FitVerdict::kDoesNotFit);
  const std::vector<WayOut> ways = FindWaysOut(*in, cat);
  const auto cp = std::find_if(ways.begin(), ways.end(),
                               [](const WayOut& w) { return w.kind == "context-parallel"; });
  ASSERT_NE(cp, ways.end());
  EXPECT_GT(cp->result.input.training.cp, 1);
  EXPECT_EQ(cp->result.input.gpus, 8);
  EXPECT_EQ(workload::GpuCount(cp->result.input.training), 8);
  EXPECT_NE(cp->flags.find("--cp"), std::string::npos);
}

}  // namespace
}  // namespace fulcrum::estimate
