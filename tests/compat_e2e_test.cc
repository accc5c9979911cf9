// End-to-end checks of `fulcrum doctor`'s compatibility verdict through the real binary: on a
// node (the fake libnvidia-ml.so.1 of tests/fake_nvml for the driver and the GPU, a stand-in
// `python` that prints what the torch probe prints), offline (--driver/--torch/--gpu), from a
// saved `docker inspect` JSON, and its bad input.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <fstream>

#include <nlohmann/json.hpp>

#include "support/run_binary.h"

namespace fulcrum::testing {
namespace {

void Write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

// A node with one GPU `gpu` on driver `driver` whose Python has torch 2.1.0+cu121. The stand-in
// checks that it is run as `python -c <script>` and prints what torch prints where CUDA cannot
// start (get_arch_list() is [] then; the verdict uses the table's row for cu121).
struct FakeNode {
  std::string dir, python;
  RunOptions options;
  FakeNode(const std::string& gpu, const std::string& driver) {
    dir = MakeTempDir("compat");
    Write(dir + "/nvml.txt", "count 1\ngpu 0 name " + gpu + "\ndriver " + driver + "\n");
    python = dir + "/python";
    Write(python,
          "#!/bin/sh\n[ \"$1\" = -c ] || exit 9\n"
          "echo '{\"version\": \"2.1.0+cu121\", \"cuda\": \"12.1\", \"arch_list\": [], "
          "\"cudnn\": \"8902\", \"nccl\": \"2.18.1\", \"capability\": null}'\n");
    chmod(python.c_str(), 0700);
    options.env = {{"LD_LIBRARY_PATH", FAKE_NVML_DIR}, {"FAKE_NVML_SCRIPT", dir + "/nvml.txt"}};
  }
  RunOutput Doctor() const {
    return RunFulcrum({"doctor", "--json", "--checkpoint-dir", dir, "--python", python}, options);
  }
};

// What was seen: a cu121 wheel on a 470 driver was not caught before a run. On a GeForce card
// the verdict is fail (exit 3) with the cu118 wheel or a 530 driver as the fix.
TEST(CompatE2eTest, OnNodeCu121On470GeForceFails) {
  FakeNode node("NVIDIA GeForce RTX 3050 Laptop GPU", "470.86");
  RunOutput r = node.Doctor();
  ASSERT_EQ(r.exit_code, 3) << r.err << r.out;
  auto doc = nlohmann::json::parse(r.out);
  EXPECT_TRUE(doc["checks"].is_array());
  const auto& compat = doc["compat"];
  EXPECT_EQ(compat["verdict"], "fail");
  EXPECT_EQ(compat["driver"], "470.86");
  EXPECT_EQ(compat["gpu"], "NVIDIA GeForce RTX 3050 Laptop GPU");
  EXPECT_EQ(compat["gpu_arch"], "sm_86");
  EXPECT_EQ(compat["wheel_cuda"], "12.1");
  EXPECT_EQ(compat["cuda_runtime"], "12.1");
  EXPECT_EQ(compat["probed_torch"]["nccl"], "2.18.1");
  EXPECT_EQ(compat["probed_torch"]["cudnn"], "8902");
  const std::string fix = compat["fix"];
  EXPECT_NE(fix.find("--index-url https://download.pytorch.org/whl/cu118"), std::string::npos)
      << fix;
  EXPECT_NE(fix.find("530.30.02"), std::string::npos) << fix;
}

TEST(CompatE2eTest, OnNodeCu121On470A100IsForwardCompat) {
  FakeNode node("NVIDIA A100-SXM4-80GB", "470.182.03");
  RunOutput r = node.Doctor();
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  auto compat = nlohmann::json::parse(r.out)["compat"];
  EXPECT_EQ(compat["verdict"], "forward-compat");
  EXPECT_NE(compat["fix"].get<std::string>().find("cuda-compat-12-1"), std::string::npos);
  // The table view says the same.
  RunOutput table =
      RunFulcrum({"doctor", "--checkpoint-dir", node.dir, "--python", node.python}, node.options);
  EXPECT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("compat: forward-compat (driver 470.182.03, CUDA runtime 12.1, GPU "
                           "sm_80)"),
            std::string::npos)
      << table.out;
}

TEST(CompatE2eTest, PythonWithoutTorchIsANoteNotAFailure) {
  FakeNode node("NVIDIA H100 80GB HBM3", "550.54.15");
  Write(node.python,
        "#!/bin/sh\necho '{\"error\": \"import torch failed: No module named torch\"}'\n");
  RunOutput r = node.Doctor();
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto doc = nlohmann::json::parse(r.out);
  EXPECT_TRUE(doc["compat"].is_null());
  EXPECT_NE(doc["compat_notes"].dump().find("No module named torch"), std::string::npos)
      << doc.dump();
}

TEST(CompatE2eTest, OfflineVerdictsAndExitCodes) {
  RunOutput ok = RunFulcrum(
      {"doctor", "--driver", "550.54.15", "--torch", "2.2.0", "--gpu", "H100", "--json"});
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  auto doc = nlohmann::json::parse(ok.out);
  EXPECT_FALSE(doc.contains("checks"));
  EXPECT_EQ(doc["compat"]["verdict"], "ok");
  EXPECT_TRUE(doc["compat"]["fix"].is_null());

  RunOutput minor =
      RunFulcrum({"doctor", "--driver", "535.161.08", "--torch", "2.5.1+cu124", "--gpu", "H100"});
  EXPECT_EQ(minor.exit_code, 0) << minor.err;
  EXPECT_NE(minor.out.find("compat: minor-version"), std::string::npos) << minor.out;

  RunOutput fail = RunFulcrum(
      {"doctor", "--driver", "570.124.04", "--torch", "2.6.0+cu124", "--gpu", "RTX-5090"});
  EXPECT_EQ(fail.exit_code, 3) << fail.err;
  EXPECT_NE(fail.out.find("no kernel image is available"), std::string::npos) << fail.out;
  EXPECT_NE(fail.out.find("https://download.pytorch.org/whl/cu128"), std::string::npos);
}

TEST(CompatE2eTest, SavedDockerInspectJson) {
  const std::string dir = MakeTempDir("compat_image");
  Write(dir + "/inspect.json",
        R"([{"RepoTags": ["nvidia/cuda:12.1.1-runtime-ubuntu22.04"], "Config": {"Env": [)"
        R"("PATH=/usr/local/cuda/bin", "NVIDIA_REQUIRE_CUDA=cuda>=12.1 brand=tesla,driver>=470,)"
        R"(driver<471", "CUDA_VERSION=12.1.1"]}}])");
  RunOutput r =
      RunFulcrum({"doctor", "--driver", "450.80.02", "--image", dir + "/inspect.json", "--json"});
  ASSERT_EQ(r.exit_code, 3) << r.err << r.out;
  auto compat = nlohmann::json::parse(r.out)["compat"];
  EXPECT_EQ(compat["cuda_runtime"], "12.1.1");
  EXPECT_EQ(compat["image"]["ref"], "nvidia/cuda:12.1.1-runtime-ubuntu22.04");
  EXPECT_NE(compat["fix"].get<std::string>().find("530.30.02"), std::string::npos);

  Write(dir + "/bad.json", R"({"Id": "sha256:00"})");
  RunOutput bad = RunFulcrum({"doctor", "--driver", "450.80.02", "--image", dir + "/bad.json"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("expected `docker inspect` output"), std::string::npos) << bad.err;
}

TEST(CompatE2eTest, BadInputExits2WithTheNearestKnown) {
  RunOutput r = RunFulcrum({"doctor", "--torch", "2.10.0+cu130", "--json"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("torch 2.10 is not in the table (data as of 2025-10-15"), std::string::npos)
      << r.err;
  r = RunFulcrum({"doctor", "--torch", "2.4.1+cu117", "--json"});
  EXPECT_EQ(r.exit_code, 2);
  auto error = nlohmann::json::parse(r.err)["error"];
  EXPECT_EQ(error["nearest"][0], "cu118") << r.err;
  r = RunFulcrum({"doctor", "--driver", "55O", "--torch", "2.4.1"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("expected a driver version such as 550.54.15"), std::string::npos) << r.err;
  r = RunFulcrum({"doctor", "--gpu", "H1OO", "--torch", "2.4.1"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("did you mean H100"), std::string::npos) << r.err;
  r = RunFulcrum({"doctor", "--gpu", "H100"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("expected --torch VER[+cuXYZ] or --image too"), std::string::npos) << r.err;
}

// validate's environment phase runs doctor and fails on its verdict, with the fix as the reason.
TEST(CompatE2eTest, ValidateEnvironmentPhaseUsesTheVerdict) {
  FakeNode node("NVIDIA GeForce RTX 3090", "470.86");
  std::rename(node.python.c_str(), (node.dir + "/python3").c_str());  // the python3 on PATH
  RunOptions options = node.options;
  options.env["PATH"] = node.dir + ":" + std::getenv("PATH");
  RunOutput r = RunFulcrum({"validate", "--skip", "small-run,fault-drill,stress", "--work-dir",
                            node.dir, "--json", "--", "true"},
                           options);
  ASSERT_EQ(r.exit_code, 3) << r.err;
  auto env = nlohmann::json::parse(r.out)["phases"][0];
  ASSERT_EQ(env["name"], "environment");
  EXPECT_EQ(env["verdict"], "fail");
  const std::string first = env["reasons"][0];
  EXPECT_EQ(first.rfind("doctor compat: fail: driver 470.86 is too old for CUDA 12.1", 0), 0u)
      << first;
  EXPECT_NE(first.find("--index-url https://download.pytorch.org/whl/cu118"), std::string::npos);
  EXPECT_EQ(env["metrics"]["compat"]["verdict"], "fail");
}

TEST(CompatE2eTest, GlobalHelpDocumentsExit3) {
  RunOutput r = RunFulcrum({"--help"});
  EXPECT_NE(r.out.find("3 `doctor`'s compatibility verdict is fail"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace fulcrum::testing
