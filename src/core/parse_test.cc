#include "core/parse.h"

#include <gtest/gtest.h>

#include "core/table.h"

namespace fulcrum {
namespace {

TEST(ParseDurationTest, Units) {
  EXPECT_DOUBLE_EQ(*ParseDurationSeconds("90s"), 90);
  EXPECT_DOUBLE_EQ(*ParseDurationSeconds("30m"), 1800);
  EXPECT_DOUBLE_EQ(*ParseDurationSeconds("1h30m"), 5400);
  EXPECT_DOUBLE_EQ(*ParseDurationSeconds("7d"), 7 * 86400);
  EXPECT_DOUBLE_EQ(*ParseDurationSeconds("250ms"), 0.25);
  EXPECT_DOUBLE_EQ(*ParseDurationSeconds("120"), 120);
  EXPECT_DOUBLE_EQ(*ParseDurationSeconds("1.5h"), 5400);
}

TEST(ParseDurationTest, RejectsGarbageWithMessage) {
  auto r = ParseDurationSeconds("10 parsecs");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidInput);
  EXPECT_NE(r.status().message().find("10 parsecs"), std::string::npos);
  EXPECT_FALSE(ParseDurationSeconds("").ok());
  EXPECT_FALSE(ParseDurationSeconds("-5m").ok());
  EXPECT_FALSE(ParseDurationSeconds("5x").ok());
}

TEST(ParseCountTest, Suffixes) {
  EXPECT_DOUBLE_EQ(*ParseCount("20B"), 20e9);
  EXPECT_DOUBLE_EQ(*ParseCount("1.5M"), 1.5e6);
  EXPECT_DOUBLE_EQ(*ParseCount("2T"), 2e12);
  EXPECT_DOUBLE_EQ(*ParseCount("3000"), 3000);
  EXPECT_FALSE(ParseCount("20Q").ok());
}

TEST(ParseBytesTest, DecimalAndBinary) {
  EXPECT_DOUBLE_EQ(*ParseBytes("80GiB"), 80.0 * 1024 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(*ParseBytes("500MB"), 500e6);
  EXPECT_DOUBLE_EQ(*ParseBytes("512"), 512);
  EXPECT_FALSE(ParseBytes("12 apples").ok());
}

TEST(ParseNumberTest, WholeStringMustParse) {
  EXPECT_DOUBLE_EQ(*ParseDouble(" 3.25 "), 3.25);
  EXPECT_FALSE(ParseDouble("3.25x").ok());
  EXPECT_FALSE(ParseDouble("").ok());
  EXPECT_EQ(*ParseInt("42"), 42);
  EXPECT_FALSE(ParseInt("4.2").ok());
}

TEST(FormatTest, HumanForms) {
  EXPECT_EQ(FormatUsd(1234.5), "$1,234.50");
  EXPECT_EQ(FormatUsd(-3), "-$3.00");
  EXPECT_EQ(FormatBytes(80.0 * 1024 * 1024 * 1024), "80.0 GiB");
  EXPECT_EQ(FormatDuration(5400), "1.5 h");
}

TEST(TableTest, AlignsColumns) {
  Table t({"name", "price"}, {Align::kLeft, Align::kRight});
  t.AddRow({"a", "1.00"});
  t.AddRow({"longer", "10.00"});
  EXPECT_EQ(t.Render(),
            "name    price\n"
            "------  -----\n"
            "a        1.00\n"
            "longer  10.00\n");
}

TEST(StatusTest, ExitCodesAndContext) {
  EXPECT_EQ(Status::Ok().ExitCode(), 0);
  EXPECT_EQ(Status::InvalidInput("x").ExitCode(), 2);
  EXPECT_EQ(Status::NotFound("x").ExitCode(), 2);
  EXPECT_EQ(Status::IoError("x").ExitCode(), 1);
  EXPECT_EQ(Status::InvalidInput("bad").WithContext("file.csv:3").message(), "file.csv:3: bad");
}

Result<int> Half(int x) {
  if (x % 2) return Status::InvalidInput("odd");
  return x / 2;
}

Result<int> Quarter(int x) {
  FULCRUM_ASSIGN_OR_RETURN(int half, Half(x));
  FULCRUM_ASSIGN_OR_RETURN(int quarter, Half(half));
  return quarter;
}

TEST(StatusTest, AssignOrReturnPropagates) {
  EXPECT_EQ(*Quarter(8), 2);
  EXPECT_FALSE(Quarter(6).ok());
}

// issue 19: `tokens: 1e400` (and --tokens 1e400) read as infinity; every quantity parser
// refuses non-finite numbers and products that overflow.
TEST(ParseTest, NonFiniteQuantitiesRefused) {
  for (const char* bad : {"1e400", "-1e400", "nan", "inf", "infinity"}) {
    EXPECT_FALSE(ParseDouble(bad).ok()) << bad;
    EXPECT_FALSE(ParseCount(bad).ok()) << bad;
    EXPECT_FALSE(ParseBytes(bad).ok()) << bad;
    EXPECT_FALSE(ParseDurationSeconds(bad).ok()) << bad;
  }
  EXPECT_FALSE(ParseCount("1e300T").ok());
  EXPECT_FALSE(ParseBytes("1e300TiB").ok());
  EXPECT_FALSE(ParseDurationSeconds("1e308w").ok());
  EXPECT_DOUBLE_EQ(*ParseCount("20B"), 2e10);
}

// Issue 29: `tokens: 1e-320` planned: a number below the smallest normal double (or one that
// rounds to 0) is out of range, not a tiny count or zero.
TEST(ParseTest, UnderflowingNumbersRefused) {
  for (const char* bad : {"1e-320", "-1e-320", "1e-400", "4.9e-324"}) {
    EXPECT_FALSE(ParseDouble(bad).ok()) << bad;
    EXPECT_FALSE(ParseCount(bad).ok()) << bad;
    EXPECT_FALSE(ParseBytes(std::string(bad) + "GiB").ok()) << bad;
    EXPECT_FALSE(ParseDurationSeconds(std::string(bad) + "s").ok()) << bad;
  }
  EXPECT_DOUBLE_EQ(*ParseDouble("1e-300"), 1e-300);
  EXPECT_DOUBLE_EQ(*ParseDouble("0"), 0);
  EXPECT_DOUBLE_EQ(*ParseDouble("0.0e-400"), 0);
}

}  // namespace
}  // namespace fulcrum
