#include "estimate/calibration_coverage.h"

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

namespace fulcrum::estimate {
namespace {

catalog::Catalog Shipped() {
  catalog::LoadOptions options;
  options.include_user_offers = false;
  auto loaded = catalog::Catalog::Load(std::string(FULCRUM_SOURCE_DIR) + "/catalog", options);
  EXPECT_TRUE(loaded.ok());
  return std::move(*loaded);
}

TEST(CalibrationCoverageTest, ArchitecturesComeFromTheMeasuredRows) {
  const std::string dir = ::testing::TempDir() + "/coverage";
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/measured.csv";
  std::ofstream(path) << "id,kind,gpu,measured_value,source\n"
                         "a,throughput,A100-80GB,1,\"x, y\"\n"
                         "b,throughput,H100-80GB,2,z\n"
                         "c,throughput,NoSuchGpu,3,z\n"
                         "d,throughput,A100-SXM4-40GB,4,z\n";
  Result<std::vector<std::string>> archs = CalibratedArchitectures(path, Shipped());
  ASSERT_TRUE(archs.ok()) << archs.status().message();
  EXPECT_EQ(*archs, (std::vector<std::string>{"Ampere", "Hopper"}));
  EXPECT_FALSE(CalibratedArchitectures(dir + "/missing.csv", Shipped()).ok());
  std::ofstream(path) << "id,kind\n";
  EXPECT_FALSE(CalibratedArchitectures(path, Shipped()).ok());
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace fulcrum::estimate
