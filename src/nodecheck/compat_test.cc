#include "nodecheck/compat.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace fulcrum::nodecheck {
namespace {

const CompatTables& Tables() {
  static const CompatTables tables = [] {
    auto loaded = LoadCompatTables(FULCRUM_SOURCE_DIR "/catalog");
    EXPECT_TRUE(loaded.ok()) << loaded.status().ToString();
    return loaded.ok() ? *loaded : CompatTables{};
  }();
  return tables;
}

CompatInput Offline(std::optional<std::string> driver, std::optional<std::string> torch,
                    std::optional<std::string> gpu) {
  CompatInput in;
  in.driver = std::move(driver);
  in.torch = std::move(torch);
  in.gpu = std::move(gpu);
  in.offline = true;
  return in;
}

// One compatibility case from a public bug report: the facts the reporter gave, the verdict and
// the parts of the fix they needed.
struct ReportCase {
  const char* url;
  const char* error;  // as the reporter quoted it (shortened)
  CompatInput input;
  CompatVerdictKind verdict;
  std::vector<std::string> fix_has;  // substrings of the fix; empty = no fix
};

std::vector<ReportCase> Reports() {
  std::vector<ReportCase> cases;
  // 470 + cu121 on a GeForce card: the compat package is for data-center GPUs only (on a
  // GeForce it is error 804, https://github.com/pytorch/pytorch/issues/40671); the cu118 wheel
  // runs on 470 under minor-version compatibility, or a 530 driver runs cu121.
  cases.push_back(
      {"https://github.com/lllyasviel/Fooocus/issues/1313",
       "RuntimeError: The NVIDIA driver on your system is too old (found version 11040)",
       Offline("470.86", "2.1.0+cu121", "NVIDIA GeForce RTX 3050 Laptop GPU"),
       CompatVerdictKind::kFail,
       {"cu118 wheel of torch 2.1", "https://download.pytorch.org/whl/cu118",
        "upgrade the driver to 530.30.02"}});
  // The same pair on a data-center GPU (GKE's GPUs are; the case uses an A100): forward-compat.
  cases.push_back({"https://github.com/pytorch/pytorch/issues/112553",
                   "The NVIDIA driver on your system is too old (found version 11040) "
                   "[torch 2.1.0+cu121, driver 470.182.03]",
                   Offline("470.182.03", "2.1.0+cu121", "NVIDIA A100-SXM4-40GB"),
                   CompatVerdictKind::kForwardCompat,
                   {"apt install cuda-compat-12-1", "LD_LIBRARY_PATH=/usr/local/cuda-12.1/compat",
                    "cu118 wheel of torch 2.1"}});
  // The H100 fix the reporter needed: torch 2.2 (PyPI's cu121 wheel) on a 550 driver: ok.
  cases.push_back({"https://github.com/mistralai/mistral-inference/pull/43",
                   "NVIDIA H100 PCIe with CUDA capability sm_90 is not compatible with the current "
                   "PyTorch installation (fixed by torch 2.2)",
                   Offline("550.54.15", "2.2.0", "NVIDIA H100 PCIe"),
                   CompatVerdictKind::kOk,
                   {}});
  // 535 (CUDA 12.2) + cu124: minor-version compatibility.
  cases.push_back(
      {"https://github.com/Azure/azhpc-images/issues/343",
       "The GPU Driver is using CUDA 12.2 but the CUDA runtime installed (nvcc) is 12.4",
       Offline("535.161.08", "2.5.1+cu124", "NVIDIA H100 80GB HBM3"),
       CompatVerdictKind::kMinorVersion,
       {"none needed", "550.54.14"}});
  CompatInput eessi = Offline("535", std::nullopt, std::nullopt);
  eessi.image_cuda = "12.4.0";
  cases.push_back({"https://github.com/EESSI/software-layer/issues/1491",
                   "Your driver CUDA version is 12.2 but the module you want to load requires CUDA "
                   "12.4.0.",
                   eessi,
                   CompatVerdictKind::kMinorVersion,
                   {"550.54.14"}});
  // Minor-version compatibility excludes PTX JIT: what the reporter hit; the fix is the driver.
  CompatInput jax = Offline("535", std::nullopt, "NVIDIA GH200 480GB");
  jax.image_cuda = "12.5";
  cases.push_back({"https://github.com/NVIDIA/JAX-Toolbox/issues/1022",
                   "fused_attention in transformer engine raise exception of unsupported PTX "
                   "[driver 12.2, container CUDA 12.5]",
                   jax,
                   CompatVerdictKind::kMinorVersion,
                   {"PTX JIT", "555.42.02"}});
  // sm_120 and sm_100 with cu124 wheels: no kernel image; torch 2.7's cu128 wheel carries both.
  cases.push_back({"https://github.com/Hellod035/LeggedLab/issues/26",
                   "NVIDIA GeForce RTX 5090 with CUDA capability sm_120 is not compatible with the "
                   "current PyTorch installation. ... supports CUDA capabilities sm_50 sm_60 sm_70 "
                   "sm_75 sm_80 sm_86 sm_90.",
                   Offline("570.124.04", "2.6.0+cu124", "NVIDIA GeForce RTX 5090"),
                   CompatVerdictKind::kFail,
                   {"cu128 wheel of torch 2.7", "https://download.pytorch.org/whl/cu128"}});
  cases.push_back({"https://github.com/ovg-project/kvcached/issues/111",
                   "NVIDIA B200 with CUDA capability sm_100 is not compatible with the current "
                   "PyTorch installation. ... supports CUDA capabilities sm_50 ... sm_90.",
                   Offline("570.133.20", "2.5.1+cu124", "NVIDIA B200"),
                   CompatVerdictKind::kFail,
                   {"cu128 wheel of torch 2.7"}});
  // torch 1.12 cu113 / 1.13 cu117 / 2.0 cu117 on an H100: no sm_90; torch 2.0's cu118 has it.
  cases.push_back({"https://github.com/pytorch/pytorch/issues/90761",
                   "NVIDIA H100 PCIe with CUDA capability sm_90 is not compatible with the current "
                   "PyTorch installation. ... supports CUDA capabilities sm_37 sm_50 sm_60 sm_70 "
                   "sm_75 sm_80 sm_86.",
                   Offline("525.60.13", "1.12.1+cu113", "NVIDIA H100 PCIe"),
                   CompatVerdictKind::kFail,
                   {"cu118 wheel of torch 2.0"}});
  cases.push_back({"https://github.com/pytorch/pytorch/issues/110153",
                   "NVIDIA H100 PCIe with CUDA capability sm_90 is not compatible ... [PyTorch "
                   "version: 2.0.1+cu117, Nvidia driver version: 535.104.12]",
                   Offline("535.104.12", "2.0.1+cu117", "NVIDIA H100 PCIe"),
                   CompatVerdictKind::kFail,
                   {"cu118 wheel of torch 2.0"}});
  cases.push_back({"https://github.com/PKU-YuanGroup/Open-Sora-Plan/issues/39",
                   "NVIDIA H100 PCIe with CUDA capability sm_90 is not compatible ... "
                   "[torch==1.13.1+cu117]",
                   Offline(std::nullopt, "1.13.1+cu117", "NVIDIA H100 PCIe"),
                   CompatVerdictKind::kFail,
                   {"cu118 wheel of torch 2.0"}});
  cases.push_back({"https://github.com/pBFSLab/DeepPrep/issues/233",
                   "NVIDIA GeForce RTX 5090 with CUDA capability sm_120 is not compatible ... "
                   "supports CUDA capabilities sm_37 ... sm_90 [torch 2.0.1, cuda 11.8]",
                   Offline(std::nullopt, "2.0.1+cu118", "NVIDIA GeForce RTX 5090"),
                   CompatVerdictKind::kFail,
                   {"cu128 wheel of torch 2.7"}});
  // Probed on the node (torch 1.8.1 is older than the table: the probe is the truth).
  CompatInput old;
  old.gpu = "NVIDIA GeForce RTX 4090";
  old.torch = "1.8.1+cu102";
  old.probed = true;
  old.probed_cuda = "10.2";
  old.probed_arch_list = {"sm_37", "sm_50", "sm_60", "sm_70"};
  cases.push_back({"https://github.com/MIC-DKFZ/BodyPartRegression/issues/7",
                   "NVIDIA GeForce RTX 4090 with CUDA capability sm_89 is not compatible with the "
                   "current PyTorch installation. ... supports CUDA capabilities sm_37 sm_50 "
                   "sm_60 sm_70.",
                   old,
                   CompatVerdictKind::kFail,
                   {"torch 1.11"}});
  // Minor-version compatibility within CUDA 11: what the maintainers answered.
  cases.push_back({"https://github.com/pytorch/pytorch/issues/77528",
                   "Driver Version: 460.32.03 CUDA Version: 11.2 ... Version: 1.11.0+cu113 (the "
                   "binary is compiled for a newer CUDA than the driver's)",
                   Offline("460.32.03", "1.11.0+cu113", "Tesla T4"),
                   CompatVerdictKind::kMinorVersion,
                   {"465.19.01"}});
  cases.push_back({"https://github.com/pytorch/pytorch/issues/82913",
                   "updating the toolkit to CUDA-11.7 should not require one to update driver "
                   "[validated on 470.82.01]",
                   Offline("470.82.01", "1.13.1+cu117", std::nullopt),
                   CompatVerdictKind::kMinorVersion,
                   {"515.43.04"}});
  // cu130 wheels on a 550 driver: torch 2.9's cu128 wheel runs under minor-version
  // compatibility, or the 580 driver runs cu130.
  cases.push_back({"https://github.com/sgl-project/sglang/issues/11395",
                   "CUDA initialization: The NVIDIA driver on your system is too old (found "
                   "version 12040) [upgrading to CUDA 13]",
                   Offline("550", "2.9.0+cu130", std::nullopt),
                   CompatVerdictKind::kFail,
                   {"cu128 wheel of torch 2.9", "upgrade the driver to 580.65.06"}});
  // A CUDA 12.1 image on a CUDA 11.0 (R450) driver: no forward-compat row for 12 on R450.
  CompatInput yuan = Offline("450.80.02", std::nullopt, std::nullopt);
  yuan.image_cuda = "12.1.1";
  cases.push_back({"https://github.com/IEIT-Yuan/Yuan-2.0/issues/65",
                   "The NVIDIA driver on your system is too old (found version 11000) [container "
                   "CUDA 12.1; the maintainers: update the driver to 535]",
                   yuan,
                   CompatVerdictKind::kFail,
                   {"upgrade the driver to 530.30.02"}});
  return cases;
}

TEST(CompatTest, FifteenOrMoreCasesFromPublicBugReports) {
  const auto cases = Reports();
  ASSERT_GE(cases.size(), 15u);
  for (const ReportCase& c : cases) {
    auto verdict = JudgeCompat(Tables(), c.input);
    ASSERT_TRUE(verdict.ok()) << c.url << ": " << verdict.status().ToString();
    EXPECT_STREQ(CompatVerdictName(verdict->verdict), CompatVerdictName(c.verdict))
        << c.url << " (" << c.error << "): " << ::testing::PrintToString(verdict->reasons);
    if (c.fix_has.empty()) {
      EXPECT_EQ(verdict->fix, "") << c.url;
    }
    for (const std::string& part : c.fix_has)
      EXPECT_NE(verdict->fix.find(part), std::string::npos)
          << c.url << ": fix \"" << verdict->fix << "\" lacks \"" << part << "\"";
    EXPECT_FALSE(verdict->reasons.empty()) << c.url;
  }
}

TEST(CompatTest, VerdictNamesTheFacts) {
  auto v = JudgeCompat(Tables(), Offline("470.86", "2.6.0+cu124", "RTX-5090"));
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(v->gpu_arch, "sm_120");
  EXPECT_EQ(v->gpu, "RTX-5090");
  EXPECT_EQ(v->gpu_row, "GeForce RTX 50 series");
  EXPECT_EQ(v->wheel_cuda, "12.4");
  EXPECT_EQ(v->cuda_runtime, "12.4");
  EXPECT_EQ(v->driver, "470.86");
  ASSERT_GE(v->reasons.size(), 2u);
  EXPECT_NE(v->reasons[0].find("no kernel image is available"), std::string::npos) << v->reasons[0];
  // A --torch without +cuXYZ is PyPI's default wheel of that release.
  v = JudgeCompat(Tables(), Offline("550.54.15", "2.4.1", "H100"));
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->wheel_cuda, "12.1");
  EXPECT_NE(v->torch->find("PyPI's default: +cu121"), std::string::npos) << *v->torch;
}

TEST(CompatTest, PtxOnlyCodeNeedsTheToolkitsDriver) {
  // torch 2.7 cu128 has sm_120 kernels and compute_120 PTX; a GPU of compute capability 12.1
  // (sm_121) runs the sm_120 kernels (same major); a hypothetical 13.0 GPU would need the PTX.
  CompatInput in = Offline("570.86", "2.7.0+cu128", std::nullopt);
  in.compute_capability = std::make_pair(13, 0);
  auto v = JudgeCompat(Tables(), in);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->verdict, CompatVerdictKind::kOk);
  EXPECT_NE(v->reasons.back().find("PTX"), std::string::npos);
  in.driver = "535.54.03";  // CUDA 12.8 on 535: minor-version, where PTX JIT is excluded
  v = JudgeCompat(Tables(), in);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->verdict, CompatVerdictKind::kFail);
  EXPECT_NE(v->reasons[0].find("PTX JIT is not available under minor-version"), std::string::npos)
      << v->reasons[0];
}

TEST(CompatTest, CpuBuildFails) {
  CompatInput in;
  in.torch = "2.4.1+cpu";
  in.probed = true;
  in.gpu = "NVIDIA A100-SXM4-80GB";
  auto v = JudgeCompat(Tables(), in);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->verdict, CompatVerdictKind::kFail);
  EXPECT_NE(v->reasons[0].find("CPU-only"), std::string::npos);
}

TEST(CompatTest, BadInputNamesTheNearestKnown) {
  auto v = JudgeCompat(Tables(), Offline("55O.54", std::nullopt, std::nullopt));
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().code(), StatusCode::kInvalidInput);
  EXPECT_NE(v.status().message().find("--driver: expected a driver version"), std::string::npos)
      << v.status().message();

  v = JudgeCompat(Tables(), Offline(std::nullopt, "2.4.1+cu117", std::nullopt));
  ASSERT_FALSE(v.ok());
  EXPECT_NE(v.status().message().find("cu118, cu121, cu124"), std::string::npos)
      << v.status().message();
  ASSERT_NE(v.status().detail(), nullptr);
  EXPECT_EQ(v.status().detail()->nearest.front(), "cu118");

  v = JudgeCompat(Tables(), Offline(std::nullopt, "1.5.0", std::nullopt));
  ASSERT_FALSE(v.ok());
  EXPECT_NE(v.status().message().find("1.11 to 2.9"), std::string::npos) << v.status().message();

  v = JudgeCompat(Tables(), Offline(std::nullopt, std::nullopt, "H1OO"));
  ASSERT_FALSE(v.ok());
  ASSERT_NE(v.status().detail(), nullptr);
  EXPECT_EQ(v.status().detail()->nearest.front(), "H100") << v.status().message();
}

TEST(CompatTest, NewerThanTheDataIsNotAGuess) {
  auto v = JudgeCompat(Tables(), Offline("580.65.06", "2.10.0+cu130", "B200"));
  ASSERT_FALSE(v.ok());
  EXPECT_NE(v.status().message().find("torch 2.10 is not in the table (data as of " +
                                      Tables().torch_as_of + ")"),
            std::string::npos)
      << v.status().message();
  // On the node a newer torch is judged from what the probe says; a CUDA newer than the driver
  // table is still not guessed.
  CompatInput in;
  in.driver = "590.44.01";
  in.torch = "2.10.0+cu131";
  in.probed = true;
  in.probed_cuda = "13.1";
  in.probed_arch_list = {"sm_90"};
  v = JudgeCompat(Tables(), in);
  ASSERT_FALSE(v.ok());
  EXPECT_NE(v.status().message().find("CUDA 13.1 is not in the table (data as of " +
                                      Tables().driver_as_of + ")"),
            std::string::npos)
      << v.status().message();
}

TEST(CompatTest, GpuNamesMatchWholeWords) {
  EXPECT_EQ(FindGpu(Tables(), "NVIDIA A100-SXM4-80GB")->gpu, "A100");
  EXPECT_EQ(FindGpu(Tables(), "NVIDIA A10")->gpu, "A10");
  EXPECT_EQ(FindGpu(Tables(), "NVIDIA L40S")->gpu, "L40");
  EXPECT_EQ(FindGpu(Tables(), "NVIDIA L4")->gpu, "L4");
  EXPECT_EQ(FindGpu(Tables(), "H20")->gpu, "H200");
  EXPECT_EQ(FindGpu(Tables(), "NVIDIA GH200 480GB")->gpu, "GH200");
  EXPECT_EQ(FindGpu(Tables(), "MI300X"), nullptr);
  EXPECT_EQ(TorchRelease("2.4.1+cu121"), "2.4");
  EXPECT_EQ(TorchRelease("2.10.0a0+git"), "2.10");
}

// Every table of the verdict loads through the one loader: a bad cell names file, line, column.
TEST(CompatTest, TablesLoadThroughTheTableLoader) {
  const std::string dir = std::string(FULCRUM_BUILD_DIR) + "/Testing/compat_table";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::filesystem::copy(FULCRUM_SOURCE_DIR "/catalog", dir,
                        std::filesystem::copy_options::recursive);
  std::ofstream(dir + "/torch_wheels.csv")
      << "torch,variant,cuda,pypi_default,arch_list,index_url,source\n"
      << "2.4,cu118,12.1,yes,sm_90,https://x,y\n";
  auto tables = LoadCompatTables(dir);
  ASSERT_FALSE(tables.ok());
  EXPECT_EQ(tables.status().message(),
            dir + "/torch_wheels.csv:2: variant: expected cu121 (from cuda 12.1), found \"cu118\"");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace fulcrum::nodecheck
