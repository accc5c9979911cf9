#include "nodecheck/driver_table.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace fulcrum::nodecheck {
namespace {

DriverTable Shipped() {
  auto table = LoadDriverTable(FULCRUM_SOURCE_DIR "/catalog");
  EXPECT_TRUE(table.ok()) << table.status().ToString();
  return table.ok() ? *table : DriverTable{};
}

TEST(DriverTableTest, CompareVersionsIsNumeric) {
  EXPECT_LT(CompareVersions("525.60.13", "550.54.14"), 0);
  EXPECT_GT(CompareVersions("550.100", "550.54.14"), 0);
  EXPECT_EQ(CompareVersions("12.4", "12.4.0"), 0);
}

TEST(DriverTableTest, DriverTableHasSourcedRows) {
  DriverTable table = Shipped();
  EXPECT_EQ(MinDriverFor(table, "12.4.131"), "550.54.14");
  EXPECT_EQ(MinDriverFor(table, "11.8"), "520.61.05");
  EXPECT_FALSE(MinDriverFor(table, "99.1").has_value());
  EXPECT_EQ(table.min_driver_minor_compat.at(12), "525.60.13");
  // What minor-version compatibility does not cover is part of the row.
  EXPECT_NE(table.minor_compat_excludes.at(12).find("PTX JIT"), std::string::npos);
}

// The tables load through the one CSV loader: quoted cells with commas are cells, not columns,
// and a bad cell names file, line and column like every catalog table.
TEST(DriverTableTest, LoadsThroughTheTableLoader) {
  const std::string dir = std::string(FULCRUM_BUILD_DIR) + "/Testing/driver_table";
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/cuda_driver.csv") << "cuda_version,min_driver_linux,source,note\n"
                                          << "12.4,550.54.14,\"notes, table 3\",\n";
  std::ofstream(dir + "/cuda_minor_compat.csv") << "cuda_major,min_driver_linux,source\n"
                                                << "12,525.60.13,compat page\n";
  auto table = LoadDriverTable(dir);
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  EXPECT_EQ(MinDriverFor(*table, "12.4"), "550.54.14");

  std::ofstream(dir + "/cuda_minor_compat.csv") << "cuda_major,min_driver_linux,source\n"
                                                << "twelve,525.60.13,compat page\n";
  table = LoadDriverTable(dir);
  ASSERT_FALSE(table.ok());
  EXPECT_EQ(table.status().message(),
            dir +
                "/cuda_minor_compat.csv:2: cuda_major: expected a whole number from 1 to 1000, "
                "found \"twelve\"");
  ASSERT_NE(table.status().detail(), nullptr);
  EXPECT_EQ(table.status().detail()->field, "cuda_major");

  std::ofstream(dir + "/cuda_driver.csv") << "cuda_version,min_drivr_linux,source\n";
  table = LoadDriverTable(dir);
  ASSERT_FALSE(table.ok());
  EXPECT_NE(table.status().message().find("did you mean min_driver_linux?"), std::string::npos)
      << table.status().message();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace fulcrum::nodecheck
