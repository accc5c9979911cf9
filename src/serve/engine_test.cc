#include "serve/engine.h"

#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "catalog/catalog.h"
#include "serve/shipped_catalog_testing.h"
#include "workload/model_io.h"

namespace fulcrum::serve {
namespace {

using testing::Cat;
using testing::Gpu;
using testing::kCatalogDir;

EngineProfile Engine(const std::string& name) {
  Result<EngineProfile> e = LoadEngine(kCatalogDir, name);
  EXPECT_TRUE(e.ok()) << e.status().ToString();
  return e.ok() ? *e : EngineProfile{};
}

ServeRequest Request(const std::string& engine, const std::string& model, const std::string& gpu,
                     Precision precision, int64_t batch) {
  ServeRequest r;
  r.engine = Engine(engine);
  Result<workload::Model> m = workload::LoadModelPreset(kCatalogDir, model);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  if (m.ok()) r.model = *m;
  r.gpu = Gpu(gpu);
  r.interconnect =
      r.gpu.nvlink_gbps ? catalog::Interconnect::kNvlink : catalog::Interconnect::kPcie;
  r.precision = precision;
  r.kv_precision = KvPrecision::kFp16;
  r.batching = r.engine.batching.front();
  if (r.engine.prefill_chunk > 0) r.max_batched_tokens = r.engine.prefill_chunk;
  r.batch = batch;
  r.input_len = 512;
  r.output_len = 128;
  return r;
}

ServeEstimate Estimate(const ServeRequest& r) {
  Result<ServeEstimate> e = EstimateServing(r);
  EXPECT_TRUE(e.ok()) << e.status().ToString();
  return e.ok() ? *e : ServeEstimate{};
}

bool Has(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

TEST(EngineTableTest, EveryEngineHasItsSchedulerPrecisionsAndSource) {
  Result<std::vector<EngineProfile>> table = LoadEngineTable(kCatalogDir);
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  ASSERT_EQ(table->size(), kEngineCount);
  for (const EngineProfile& p : *table) {
    EXPECT_FALSE(p.scheduler.empty()) << EngineName(p.engine);
    EXPECT_FALSE(p.source.empty()) << EngineName(p.engine);
    EXPECT_FALSE(p.precisions.empty()) << EngineName(p.engine);
    EXPECT_FALSE(p.batching.empty()) << EngineName(p.engine);
  }
  // hf generate is static batching only; the others default to continuous batching.
  EXPECT_EQ(Engine("hf").batching, std::vector<Batching>{Batching::kStatic});
  for (const char* name : {"vllm", "sglang", "trtllm", "llama.cpp"}) {
    EXPECT_EQ(Engine(name).batching.front(), Batching::kContinuous) << name;
  }
  // TensorRT-LLM runs on NVIDIA GPUs only.
  EXPECT_EQ(Engine("trtllm").vendors, std::vector<std::string>{"NVIDIA"});
  // vLLM and SGLang reduce across tensor-parallel GPUs with their own kernel; TensorRT-LLM's
  // calibration rows keep NCCL's ring.
  EXPECT_TRUE(Engine("vllm").custom_allreduce);
  EXPECT_TRUE(Engine("sglang").custom_allreduce);
  EXPECT_FALSE(Engine("trtllm").custom_allreduce);
}

TEST(EngineTableTest, TpAllreduceIsRingOrCustomAndRingWhenAbsent) {
  const std::string header =
      "engine,scheduler,batching,prefill_chunk,precisions,vendors,source,tp_allreduce\n";
  std::string rows;
  for (const char* name : {"sglang", "trtllm", "hf", "llama.cpp"}) {
    rows += std::string(name) + ",s,static,0,bf16,NVIDIA,src,\n";
  }
  Result<std::vector<EngineProfile>> custom =
      ParseEngineTable(header + "vllm,s,static,0,bf16,NVIDIA,src,custom\n" + rows, "e.csv");
  ASSERT_TRUE(custom.ok()) << custom.status().ToString();
  EXPECT_TRUE((*custom)[static_cast<size_t>(*ParseEngine("vllm"))].custom_allreduce);
  EXPECT_FALSE((*custom)[static_cast<size_t>(*ParseEngine("hf"))].custom_allreduce);
  Result<std::vector<EngineProfile>> bad =
      ParseEngineTable(header + "vllm,s,static,0,bf16,NVIDIA,src,oneshot\n" + rows, "e.csv");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("tp_allreduce"), std::string::npos)
      << bad.status().message();
}

TEST(EngineTableTest, TensorParallelIsYesOrNoAndYesWhenAbsent) {
  const std::string header =
      "engine,scheduler,batching,prefill_chunk,precisions,vendors,source,tensor_parallel\n";
  std::string rows;
  for (const char* name : {"sglang", "trtllm", "llama.cpp"}) {
    rows += std::string(name) + ",s,static,0,bf16,NVIDIA,src,\n";
  }
  Result<std::vector<EngineProfile>> table = ParseEngineTable(
      header + "vllm,s,static,0,bf16,NVIDIA,src,yes\nhf,s,static,0,bf16,NVIDIA,src,no\n" + rows,
      "e.csv");
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  EXPECT_TRUE((*table)[static_cast<size_t>(*ParseEngine("vllm"))].tensor_parallel);
  EXPECT_FALSE((*table)[static_cast<size_t>(*ParseEngine("hf"))].tensor_parallel);
  EXPECT_TRUE((*table)[static_cast<size_t>(*ParseEngine("llama.cpp"))].tensor_parallel);
  Result<std::vector<EngineProfile>> bad = ParseEngineTable(
      header + "vllm,s,static,0,bf16,NVIDIA,src,sometimes\nhf,s,static,0,bf16,NVIDIA,src,no\n" +
          rows,
      "e.csv");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("tensor_parallel"), std::string::npos)
      << bad.status().message();
  // The shipped table: hf and llama.cpp run whole layers one GPU after another.
  Result<EngineProfile> hf = LoadEngine(kCatalogDir, "hf");
  ASSERT_TRUE(hf.ok());
  EXPECT_FALSE(hf->tensor_parallel);
  EXPECT_FALSE(CheckTensorParallel(*hf, 2).ok());
  EXPECT_TRUE(CheckTensorParallel(*hf, 1).ok());
}

TEST(EngineTableTest, MalformedRowsNameTheLineAndTheNearestName) {
  const std::string header = "engine,scheduler,batching,prefill_chunk,precisions,vendors,source\n";
  Result<std::vector<EngineProfile>> bad_precision = ParseEngineTable(
      header + "vllm,continuous,continuous,8192,bf16;q4km,NVIDIA,src\n", "engines.csv");
  ASSERT_FALSE(bad_precision.ok());
  EXPECT_NE(bad_precision.status().message().find("engines.csv:2"), std::string::npos)
      << bad_precision.status().message();
  EXPECT_NE(bad_precision.status().message().find("q4_k_m"), std::string::npos)
      << bad_precision.status().message();
  Result<std::vector<EngineProfile>> missing =
      ParseEngineTable(header + "vllm,continuous,continuous,8192,bf16,NVIDIA,src\n", "engines.csv");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("sglang"), std::string::npos)
      << missing.status().message();
}

TEST(EngineSupportTest, LlamaCppCannotRunFp8AndNamesItsGgufTypes) {
  const Status s =
      CheckSupport(Gpu("H100-SXM"), Precision::kFp8, KvPrecision::kFp16, Engine("llama.cpp"));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kInvalidInput);
  ASSERT_TRUE(s.detail() != nullptr);
  EXPECT_EQ(s.detail()->field, "precision");
  for (const char* name : {"q4_k_m", "q5_k_m", "q8_0", "f16"}) {
    EXPECT_TRUE(Has(s.detail()->nearest, name)) << name;
    EXPECT_NE(s.message().find(name), std::string::npos) << s.message();
  }
  EXPECT_FALSE(Has(s.detail()->nearest, "fp8"));
}

TEST(EngineSupportTest, HfCannotRunFp4EvenOnAGpuWithFp4TensorCores) {
  const catalog::Gpu b200 = Gpu("B200");
  ASSERT_TRUE(b200.fp4_tflops.has_value());  // the GPU could; the engine cannot
  const Status s = CheckSupport(b200, Precision::kFp4, KvPrecision::kBf16, Engine("hf"));
  ASSERT_FALSE(s.ok());
  ASSERT_TRUE(s.detail() != nullptr);
  EXPECT_EQ(s.detail()->field, "precision");
  EXPECT_TRUE(Has(s.detail()->nearest, "bnb-nf4"));
  EXPECT_TRUE(Has(s.detail()->nearest, "bnb-int8"));
  // vLLM runs FP4 on FP4 tensor cores.
  EXPECT_TRUE(CheckSupport(b200, Precision::kFp4, KvPrecision::kBf16, Engine("vllm")).ok());
}

TEST(EngineSupportTest, TrtllmRefusesAnAmdGpuAndVllmRunsThere) {
  const catalog::Gpu mi300x = Gpu("MI300X");
  ASSERT_EQ(mi300x.vendor, "AMD");
  const Status s = CheckSupport(mi300x, Precision::kBf16, KvPrecision::kBf16, Engine("trtllm"));
  ASSERT_FALSE(s.ok());
  ASSERT_TRUE(s.detail() != nullptr);
  EXPECT_EQ(s.detail()->field, "engine");
  EXPECT_NE(s.message().find("NVIDIA"), std::string::npos) << s.message();
  EXPECT_TRUE(CheckSupport(mi300x, Precision::kBf16, KvPrecision::kBf16, Engine("vllm")).ok());
}

TEST(EngineSupportTest, HfRefusesContinuousBatching) {
  ServeRequest r = Request("hf", "llama-3-8b", "L4", Precision::kBf16, 4);
  r.batching = Batching::kContinuous;
  Result<ServeEstimate> e = EstimateServing(r);
  ASSERT_FALSE(e.ok());
  ASSERT_TRUE(e.status().detail() != nullptr);
  EXPECT_EQ(e.status().detail()->field, "batching");
  EXPECT_TRUE(Has(e.status().detail()->nearest, "static"));
}

// Whole-model sizes printed by llama-bench / llama-quantize for meta-llama Llama-3(.1)-8B
// (8.03 B parameters): F16 14.96 GiB, Q8_0 7.95 GiB, Q5_K_M 5.33 GiB, Q4_K_M 4.58 GiB
// (ggml-org/llama.cpp@311c2c9f0ebd6e08f5b20e8827c654cebb7a41d6 tools/quantize/README.md; the
// same Q4_K_M and F16 sizes in XiongjieDai/GPU-Benchmarks-on-LLM-Inference's llama-bench runs).
TEST(EngineWeightsTest, GgufWeightBytesMatchTheFileSizesLlamaCppPrints) {
  Result<workload::Model> m = workload::LoadModelPreset(kCatalogDir, "llama-3-8b");
  ASSERT_TRUE(m.ok());
  const double gib = 1024.0 * 1024 * 1024;
  const std::vector<std::pair<Precision, double>> sizes = {{Precision::kGgufF16, 14.96},
                                                           {Precision::kGgufQ8_0, 7.95},
                                                           {Precision::kGgufQ5KM, 5.33},
                                                           {Precision::kGgufQ4KM, 4.58}};
  for (const auto& [precision, file_gib] : sizes) {
    EXPECT_NEAR(WeightBytes(*m, precision) / gib, file_gib, 0.02 * file_gib)
        << PrecisionName(precision);
  }
}

// bitsandbytes: LLM.int8 stores 1 byte a weight; NF4/FP4 4 bits plus one fp32 absmax per block
// of 64 weights (QLoRA, sec. 3: 0.5 bits a parameter), the embeddings and the head unquantised.
TEST(EngineWeightsTest, BitsandbytesWeightBytesFollowTheirBlockFormats) {
  Result<workload::Model> m = workload::LoadModelPreset(kCatalogDir, "llama-3-8b");
  ASSERT_TRUE(m.ok());
  const double bf16 = WeightBytes(*m, Precision::kBf16);
  const double int8 = WeightBytes(*m, Precision::kBnbInt8);
  const double nf4 = WeightBytes(*m, Precision::kBnbNf4);
  EXPECT_EQ(nf4, WeightBytes(*m, Precision::kBnbFp4));
  // bf16 - int8 = 1 byte for each quantised weight; int8 - nf4 = 1 - 4.5 / 8 bytes for each.
  const double quantised = bf16 - int8;
  EXPECT_NEAR(int8 - nf4, quantised * (1 - 4.5 / 8), 1e-6 * bf16);
  EXPECT_GT(nf4, WeightBytes(*m, Precision::kInt4WeightOnly));  // AWQ groups of 128 are leaner
}

TEST(EngineSpeedTest, HfGenerateIsSlowerThanVllmOnTheSameLayout) {
  for (int64_t batch : {1, 16}) {
    const ServeEstimate hf =
        Estimate(Request("hf", "llama-3-8b", "A100-80GB", Precision::kBf16, batch));
    const ServeEstimate vllm =
        Estimate(Request("vllm", "llama-3-8b", "A100-80GB", Precision::kBf16, batch));
    EXPECT_GT(hf.speed.tpot_seconds, vllm.speed.tpot_seconds) << batch;
    EXPECT_LT(hf.speed.output_tokens_per_second, vllm.speed.output_tokens_per_second) << batch;
  }
}

// llama.cpp: one stream reads every weight each token, so its rate stays under the bandwidth
// roofline; -np slots share one batch (the weights read once a step), so 4 slots serve more
// tokens per second in all and fewer per stream.
TEST(EngineSpeedTest, LlamaCppOneStreamIsUnderTheRooflineAndSlotsShareABatch) {
  const ServeRequest one = Request("llama.cpp", "llama-3-8b", "RTX-4090", Precision::kGgufQ4KM, 1);
  const ServeEstimate single = Estimate(one);
  const double roofline = one.gpu.memory_bandwidth_gbps * 1e9 / single.memory.weights_bytes;
  EXPECT_LT(single.speed.output_tokens_per_second, roofline);
  const ServeEstimate slots =
      Estimate(Request("llama.cpp", "llama-3-8b", "RTX-4090", Precision::kGgufQ4KM, 4));
  EXPECT_GT(slots.speed.output_tokens_per_second, single.speed.output_tokens_per_second);
  EXPECT_LT(slots.speed.output_tokens_per_second / 4, single.speed.output_tokens_per_second);
  // A smaller GGUF type reads fewer bytes a token: q4_k_m streams faster than f16.
  const ServeEstimate f16 =
      Estimate(Request("llama.cpp", "llama-3-8b", "RTX-4090", Precision::kGgufF16, 1));
  EXPECT_GT(single.speed.output_tokens_per_second, f16.speed.output_tokens_per_second);
}

// bitsandbytes 4-bit dequantises each weight to a 16-bit copy for a pass of more than one token:
// at batch 16 its decode step is slower than bf16's, though it reads a quarter of the bytes.
TEST(EngineSpeedTest, Bnb4BitPaysADequantisationPassAboveOneToken) {
  const ServeEstimate nf4 =
      Estimate(Request("hf", "llama-3-8b", "A100-80GB", Precision::kBnbNf4, 16));
  const ServeEstimate bf16 =
      Estimate(Request("hf", "llama-3-8b", "A100-80GB", Precision::kBf16, 16));
  EXPECT_GT(nf4.speed.tpot_seconds, bf16.speed.tpot_seconds);
  EXPECT_LT(nf4.memory.weights_bytes, bf16.memory.weights_bytes / 2);
}

}  // namespace
}  // namespace fulcrum::serve
