// End-to-end checks of `fulcrum bench` and `fulcrum doctor` through the real binary. The GPU
// half runs the real fulcrum-gpubench where one was built and a GPU exists; otherwise the
// contract is exercised with a stand-in program that prints a recorded fulcrum-gpubench result
// (tests/fixtures/bench/gpubench_h100.json), so the datasheet comparison is tested end to end.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "support/run_binary.h"

namespace fulcrum::testing {
namespace {

TEST(DoctorE2eTest, JsonListsChecksWithValidStatuses) {
  RunOutput r = RunFulcrum({"doctor", "--json", "--checkpoint-dir", FULCRUM_BUILD_DIR});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto doc = nlohmann::json::parse(r.out);
  ASSERT_TRUE(doc["checks"].is_array());
  ASSERT_GE(doc["checks"].size(), 8u);
  std::set<std::string> names;
  for (const auto& c : doc["checks"]) {
    names.insert(c["name"].get<std::string>());
    std::string status = c["status"];
    EXPECT_TRUE(status == "ok" || status == "warn" || status == "fail" || status == "skipped")
        << status;
    EXPECT_FALSE(c["finding"].get<std::string>().empty()) << c.dump();
  }
  for (const char* expected : {"nvidia-driver", "cuda-toolkit", "gpu-visibility",
                               "persistence-mode", "ecc-mode", "clocks", "disk-free", "nccl-env"}) {
    EXPECT_TRUE(names.count(expected)) << expected;
  }
}

TEST(DoctorE2eTest, EnvironmentProblemsAreReported) {
  RunOptions options;
  options.env["NCCL_P2P_DISABLE"] = "1";
  RunOutput r = RunFulcrum({"doctor", "--json"}, options);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto doc = nlohmann::json::parse(r.out);
  bool found = false;
  for (const auto& c : doc["checks"]) {
    if (c["name"] == "nccl-env") {
      found = true;
      EXPECT_EQ(c["status"], "warn");
      EXPECT_NE(c["finding"].get<std::string>().find("NCCL_P2P_DISABLE"), std::string::npos);
    }
  }
  EXPECT_TRUE(found);
}

TEST(DoctorE2eTest, TableAndBadInput) {
  RunOutput r = RunFulcrum({"doctor"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("nvidia-driver"), std::string::npos);
  EXPECT_NE(r.out.find(" ok, "), std::string::npos);
  RunOutput bad = RunFulcrum({"doctor", "--checkpoint-size", "lots"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("lots"), std::string::npos) << bad.err;
}

TEST(BenchE2eTest, DiskOnlyJsonAndCompare) {
  std::string dir = MakeTempDir("bench");
  std::string saved = dir + "/before.json";
  RunOutput r =
      RunFulcrum({"bench", "--quick", "--skip-gpu", "--disk-size", "8MiB", "--checkpoint-dir", dir,
                  "--checkpoint-size", "1GB", "--json", "--output", saved});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto doc = nlohmann::json::parse(r.out);
  EXPECT_TRUE(doc["gpu"].is_null());
  EXPECT_EQ(doc["gpu_skipped_reason"], "skipped by --skip-gpu");
  EXPECT_GT(doc["disk"]["write_bytes_per_second"].get<double>(), 0);
  EXPECT_NEAR(doc["disk"]["checkpoint_seconds"].get<double>(),
              1e9 / doc["disk"]["write_bytes_per_second"].get<double>(), 1e-6);
  EXPECT_TRUE(std::filesystem::exists(saved));

  RunOutput again = RunFulcrum({"bench", "--quick", "--skip-gpu", "--disk-size", "8MiB",
                                "--checkpoint-dir", dir, "--compare", saved});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.out.find("disk_write_bytes_per_second"), std::string::npos) << again.out;
  std::filesystem::remove_all(dir);
}

TEST(BenchE2eTest, GpuPartIsSkippedHonestlyOrMeasured) {
  std::string dir = MakeTempDir("bench-gpu");
  RunOutput r =
      RunFulcrum({"bench", "--quick", "--disk-size", "4MiB", "--checkpoint-dir", dir, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto doc = nlohmann::json::parse(r.out);
  if (doc["gpu"].is_null()) {
    EXPECT_FALSE(doc["gpu_skipped_reason"].get<std::string>().empty());
  } else {
    for (const auto& g : doc["gpu"]["gemm"]) EXPECT_TRUE(g["correct"].get<bool>());
  }
  std::filesystem::remove_all(dir);
}

TEST(BenchE2eTest, GpuReportComparesWithCatalogDatasheet) {
  std::string dir = MakeTempDir("bench-fake-gpu");
  std::string program = dir + "/gpubench.sh";
  {
    std::ofstream out(program);
    out << "#!/bin/sh\ncat " << SourcePath("tests/fixtures/bench/gpubench_h100.json") << "\n";
  }
  std::filesystem::permissions(program, std::filesystem::perms::owner_all);
  RunOptions options;
  options.env["FULCRUM_GPUBENCH"] = program;
  RunOutput r = RunFulcrum({"bench", "--quick", "--skip-disk", "--json"}, options);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto doc = nlohmann::json::parse(r.out);
  const auto& gpu = doc["gpu"];
  ASSERT_TRUE(gpu.is_object()) << r.out;
  EXPECT_EQ(gpu["datasheet_gpu"], "H100-SXM5-80GB");
  const auto& bf16 = gpu["gemm"][0];
  ASSERT_TRUE(bf16["spec"].is_number());
  EXPECT_NEAR(bf16["percent_of_spec"].get<double>(), 100.0 * 742.5 / bf16["spec"].get<double>(),
              1e-9);
  EXPECT_EQ(gpu["stability"]["verdict"], "unstable");  // 440..720 around 700: a 40 % swing

  RunOutput table = RunFulcrum({"bench", "--quick", "--skip-disk"}, options);
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("bf16 GEMM TFLOP/s"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("unstable"), std::string::npos);
  std::filesystem::remove_all(dir);
}

// The bench seam's sim through the binary: a sim node at 60 % of its datasheet reads "low" in the
// same datasheet comparison the real program's output gets; doctor reads the sim's GPU stack.
TEST(BenchE2eTest, SimSourceDeliversTheChosenFraction) {
  RunOutput r = RunFulcrum({"bench", "--source", "sim", "--sim-gpu", "A100-SXM4-80GB", "--sim-gpus",
                            "4", "--sim-fraction", "0.6", "--quick", "--skip-disk", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["source"], "sim");
  const auto& gpu = doc["gpu"];
  EXPECT_EQ(gpu["datasheet_gpu"], "A100-SXM4-80GB");
  EXPECT_EQ(gpu["device"]["gpu_count"], 4);
  EXPECT_NEAR(gpu["gemm"][0]["percent_of_spec"].get<double>(), 60, 1e-6);
  EXPECT_EQ(gpu["gemm"][0]["verdict"], "low");
  EXPECT_EQ(gpu["p2p"].size(), 3u);

  RunOutput doctor = RunFulcrum({"doctor", "--source", "sim", "--sim-gpus", "2", "--json",
                                 "--checkpoint-dir", FULCRUM_BUILD_DIR});
  ASSERT_EQ(doctor.exit_code, 0) << doctor.err;
  auto checks = nlohmann::json::parse(doctor.out)["checks"];
  for (const auto& c : checks) {
    if (c["name"] == "nvidia-driver" || c["name"] == "cuda-toolkit" ||
        c["name"] == "persistence-mode" || c["name"] == "gpu-visibility") {
      EXPECT_EQ(c["status"], "ok") << c.dump();
    }
  }
  RunOutput bad = RunFulcrum({"bench", "--source", "sim", "--sim-gpu", "H10", "--skip-disk"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("H100"), std::string::npos) << bad.err;  // nearest names
}

TEST(BenchE2eTest, BadInputExitsTwo) {
  EXPECT_EQ(RunFulcrum({"bench", "--quick", "--long"}).exit_code, 2);
  EXPECT_EQ(RunFulcrum({"bench", "--skip-gpu", "--compare", "/nonexistent.json"}).exit_code, 2);
  RunOutput r = RunFulcrum({"bench", "--skip-gpu", "--disk-size", "huge"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("huge"), std::string::npos);
  EXPECT_EQ(RunFulcrum({"bench", "--skip-gpu", "--checkpoint-dir", "/nonexistent/dir"}).exit_code,
            2);
}

}  // namespace
}  // namespace fulcrum::testing
