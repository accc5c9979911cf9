#include "nodecheck/compat_probe.h"

#include <gtest/gtest.h>

namespace fulcrum::nodecheck {
namespace {

TEST(CompatProbeTest, ParsesTheTorchProbeLine) {
  auto probe = ParseTorchProbe(
      "some warning on stdout\n"
      R"({"version": "2.5.1+cu124", "cuda": "12.4", "arch_list": ["sm_80", "sm_90"], )"
      R"("cudnn": 90100, "nccl": "2.21.5", "capability": [9, 0]})"
      "\n");
  ASSERT_TRUE(probe.ok()) << probe.status().ToString();
  EXPECT_EQ(probe->version, "2.5.1+cu124");
  EXPECT_EQ(probe->cuda, "12.4");
  EXPECT_EQ(probe->arch_list, (std::vector<std::string>{"sm_80", "sm_90"}));
  EXPECT_EQ(probe->cudnn, "90100");
  EXPECT_EQ(probe->nccl, "2.21.5");
  EXPECT_EQ(probe->capability, std::make_pair(9, 0));

  probe = ParseTorchProbe(R"({"version": "2.4.1+cpu", "cuda": null, "arch_list": []})");
  ASSERT_TRUE(probe.ok());
  EXPECT_FALSE(probe->cuda.has_value());
  EXPECT_FALSE(probe->capability.has_value());

  probe = ParseTorchProbe(R"({"error": "import torch failed: No module named 'torch'"})");
  ASSERT_FALSE(probe.ok());
  EXPECT_EQ(probe.status().code(), StatusCode::kUnavailable);
  EXPECT_FALSE(ParseTorchProbe("Traceback (most recent call last):").ok());
}

TEST(CompatProbeTest, ProbedInputFeedsTheVerdict) {
  TorchProbe torch;
  torch.version = "2.1.0+cu121";
  torch.cuda = "12.1";
  NvmlIdentity nvml{"470.86", {"NVIDIA GeForce RTX 3090", "NVIDIA GeForce RTX 3090"}};
  CompatInput in = InputFromProbes(nvml, torch, std::nullopt);
  EXPECT_EQ(in.driver, "470.86");
  EXPECT_EQ(in.gpu, "NVIDIA GeForce RTX 3090");
  EXPECT_TRUE(in.probed);
  EXPECT_FALSE(in.offline);
  EXPECT_EQ(in.probed_cuda, "12.1");
}

TEST(CompatProbeTest, ReadsTheImagesCudaFromDockerInspect) {
  auto image = ParseDockerInspect(
      R"([{"RepoTags": ["nvcr.io/nvidia/pytorch:24.05-py3"], "Config": {"Env": [)"
      R"("CUDA_VERSION=12.4.1.003", "NVIDIA_REQUIRE_CUDA=cuda>=9.0"]}}])",
      "x.json");
  ASSERT_TRUE(image.ok()) << image.status().ToString();
  EXPECT_EQ(image->image, "nvcr.io/nvidia/pytorch:24.05-py3");
  EXPECT_EQ(image->cuda_version, "12.4.1.003");
  // Without CUDA_VERSION: the cuda>=X.Y of NVIDIA_REQUIRE_CUDA.
  image = ParseDockerInspect(
      R"({"Config": {"Env": ["NVIDIA_REQUIRE_CUDA=cuda>=12.1 brand=tesla,driver>=470,driver<471"]}})",
      "y.json");
  ASSERT_TRUE(image.ok());
  EXPECT_EQ(image->cuda_version, "12.1");
  image = ParseDockerInspect(R"([{"Config": {"Env": ["PATH=/bin"]}}])", "z.json");
  ASSERT_FALSE(image.ok());
  EXPECT_NE(image.status().message().find("z.json: expected CUDA_VERSION or NVIDIA_REQUIRE_CUDA"),
            std::string::npos);
  EXPECT_FALSE(ParseDockerInspect("not json", "w.json").ok());
}

}  // namespace
}  // namespace fulcrum::nodecheck
