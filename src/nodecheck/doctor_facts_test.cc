#include "nodecheck/doctor_facts.h"

#include <gtest/gtest.h>

namespace fulcrum::nodecheck {
namespace {

TEST(DoctorFactsTest, ParsesNvidiaSmiQuery) {
  auto gpus = ParseNvidiaSmiQuery(
      "NVIDIA H100 80GB HBM3, 550.54.15, Enabled, Enabled, 1980, 1980, 1755\n"
      "Tesla T4, 535.104.05, Disabled, [N/A], 300, 1590, [N/A]\n");
  ASSERT_EQ(gpus.size(), 2u);
  EXPECT_EQ(gpus[0].name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(gpus[0].driver_version, "550.54.15");
  EXPECT_EQ(gpus[0].persistence_mode, true);
  EXPECT_EQ(gpus[0].application_sm_clock_mhz, 1755);
  EXPECT_EQ(gpus[1].persistence_mode, false);
  EXPECT_FALSE(gpus[1].ecc_enabled.has_value());
  EXPECT_FALSE(gpus[1].application_sm_clock_mhz.has_value());
}

TEST(DoctorFactsTest, ParsesNvccAndFrameworkProbe) {
  EXPECT_EQ(ParseNvccVersion("nvcc: NVIDIA (R) Cuda compiler driver\nCuda compilation tools, "
                             "release 12.4, V12.4.131\n"),
            "12.4.131");
  EXPECT_FALSE(ParseNvccVersion("garbage").has_value());
  auto fws = ParseFrameworkProbe(
      "{\"name\": \"torch\", \"version\": \"2.3.0\", \"cuda_build\": \"12.1\", \"gpu_available\": "
      "true}\n"
      "not json\n"
      "{\"name\": \"jax\", \"version\": \"0.4.30\", \"cuda_build\": \"12030\", \"gpu_available\": "
      "false}\n"
      "{\"name\": \"tensorflow\", \"version\": \"2.16\", \"cuda_build\": null}\n");
  ASSERT_EQ(fws.size(), 3u);
  EXPECT_EQ(fws[0].cuda_build, "12.1");
  EXPECT_EQ(fws[1].cuda_build, "12.3");
  EXPECT_FALSE(fws[2].cuda_build.has_value());
}

}  // namespace
}  // namespace fulcrum::nodecheck
