#include "nodecheck/doctor_checks.h"

#include <gtest/gtest.h>

namespace fulcrum::nodecheck {
namespace {

DriverTable Table() {
  auto table = LoadDriverTable(FULCRUM_SOURCE_DIR "/catalog");
  EXPECT_TRUE(table.ok()) << table.status().ToString();
  return table.ok() ? *table : DriverTable{};
}

const DoctorCheck& Find(const std::vector<DoctorCheck>& checks, const std::string& name) {
  for (const auto& c : checks) {
    if (c.name == name) return c;
  }
  static DoctorCheck missing{"<missing>", CheckStatus::kSkipped, "", ""};
  ADD_FAILURE() << "no check named " << name;
  return missing;
}

SystemFacts GpuMachine(const std::string& driver) {
  SystemFacts facts;
  facts.driver_version = driver;
  facts.nvidia_device_files = {"/dev/nvidia0", "/dev/nvidiactl"};
  GpuFacts gpu;
  gpu.name = "NVIDIA H100 80GB HBM3";
  gpu.driver_version = driver;
  gpu.persistence_mode = true;
  gpu.ecc_enabled = true;
  gpu.max_sm_clock_mhz = 1980;
  gpu.application_sm_clock_mhz = 1980;
  facts.gpus = {gpu, gpu};
  facts.disk_path = "/ckpt";
  facts.disk_free_bytes = 2e12;
  facts.shm_total_bytes = 64e9;
  return facts;
}

TEST(DoctorChecksTest, CpuOnlyMachineSkipsGpuChecksHonestly) {
  SystemFacts facts;
  facts.driver_probe_note = "nvidia-smi not found on PATH";
  facts.disk_path = "/tmp";
  facts.disk_free_bytes = 1e12;
  facts.shm_total_bytes = 8e9;
  auto checks = RunChecks(facts, Table(), DoctorOptions{});
  const auto& driver = Find(checks, "nvidia-driver");
  EXPECT_EQ(driver.status, CheckStatus::kSkipped);
  EXPECT_NE(driver.finding.find("nvidia-smi not found"), std::string::npos);
  EXPECT_EQ(Find(checks, "persistence-mode").status, CheckStatus::kSkipped);
  EXPECT_EQ(Find(checks, "disk-free").status, CheckStatus::kOk);
}

TEST(DoctorChecksTest, OldDriverForToolkitFailsWithFix) {
  SystemFacts facts = GpuMachine("470.82.01");
  facts.cuda_toolkit_version = "12.4.131";
  facts.cuda_toolkit_source = "nvcc";
  auto checks = RunChecks(facts, Table(), DoctorOptions{});
  const auto& toolkit = Find(checks, "cuda-toolkit");
  EXPECT_EQ(toolkit.status, CheckStatus::kFail);
  EXPECT_NE(toolkit.fix.find("550.54.14"), std::string::npos) << toolkit.fix;
}

TEST(DoctorChecksTest, MinorVersionCompatibilityIsAWarning) {
  SystemFacts facts = GpuMachine("535.104.05");
  facts.cuda_toolkit_version = "12.4";
  auto checks = RunChecks(facts, Table(), DoctorOptions{});
  EXPECT_EQ(Find(checks, "cuda-toolkit").status, CheckStatus::kWarn);
}

TEST(DoctorChecksTest, FrameworkChecks) {
  SystemFacts facts = GpuMachine("550.54.15");
  facts.frameworks = {{"torch", "2.3.0", "12.1", true}, {"jax", "0.4", std::nullopt, std::nullopt}};
  auto checks = RunChecks(facts, Table(), DoctorOptions{});
  EXPECT_EQ(Find(checks, "framework:torch").status, CheckStatus::kOk);
  EXPECT_EQ(Find(checks, "framework:jax").status, CheckStatus::kFail);  // CPU build on a GPU box

  facts.driver_version = "470.82.01";
  checks = RunChecks(facts, Table(), DoctorOptions{});
  EXPECT_EQ(Find(checks, "framework:torch").status, CheckStatus::kFail);

  facts.driver_version = "550.54.15";
  facts.frameworks = {{"torch", "2.3.0", "12.1", false}};
  checks = RunChecks(facts, Table(), DoctorOptions{});
  const auto& torch = Find(checks, "framework:torch");
  EXPECT_EQ(torch.status, CheckStatus::kFail);
  EXPECT_NE(torch.finding.find("sees no GPU"), std::string::npos);
}

TEST(DoctorChecksTest, VisibilityPersistenceEccClocks) {
  SystemFacts facts = GpuMachine("550.54.15");
  facts.env["CUDA_VISIBLE_DEVICES"] = "";
  facts.gpus[1].persistence_mode = false;
  facts.gpus[0].ecc_enabled = false;
  facts.gpus[1].application_sm_clock_mhz = 1000;
  auto checks = RunChecks(facts, Table(), DoctorOptions{});
  EXPECT_EQ(Find(checks, "gpu-visibility").status, CheckStatus::kWarn);
  const auto& pm = Find(checks, "persistence-mode");
  EXPECT_EQ(pm.status, CheckStatus::kWarn);
  EXPECT_NE(pm.finding.find("GPU 1"), std::string::npos);
  EXPECT_EQ(Find(checks, "ecc-mode").status, CheckStatus::kWarn);
  EXPECT_EQ(Find(checks, "clocks").status, CheckStatus::kWarn);

  facts.env["CUDA_VISIBLE_DEVICES"] = "0,5";
  checks = RunChecks(facts, Table(), DoctorOptions{});
  EXPECT_NE(Find(checks, "gpu-visibility").finding.find("GPU 5"), std::string::npos);
}

TEST(DoctorChecksTest, DiskShmAndNccl) {
  SystemFacts facts = GpuMachine("550.54.15");
  facts.disk_free_bytes = 100e9;
  facts.shm_total_bytes = 64e6;  // Docker's default
  facts.env.emplace("NCCL_P2P_DISABLE", "1");
  DoctorOptions options;
  options.checkpoint_bytes = 98e9;  // llama-2-7b, 14 bytes/param
  auto checks = RunChecks(facts, Table(), options);
  EXPECT_EQ(Find(checks, "disk-free").status, CheckStatus::kWarn);
  EXPECT_EQ(Find(checks, "shared-memory").status, CheckStatus::kWarn);
  EXPECT_EQ(Find(checks, "nccl-env").status, CheckStatus::kWarn);
  facts.disk_free_bytes = 10e9;
  checks = RunChecks(facts, Table(), options);
  EXPECT_EQ(Find(checks, "disk-free").status, CheckStatus::kFail);
}

}  // namespace
}  // namespace fulcrum::nodecheck
