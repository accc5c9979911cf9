#include "core/row_reader.h"

#include <gtest/gtest.h>

namespace fulcrum {
namespace {

const TableSchema kSchema = {{"name", "size"}, {"count", "flag"}};

Result<CsvTable> Parse(const std::string& text) { return ParseTable(text, "t.csv", kSchema); }

TEST(RowReaderTest, TypedCellsByColumnName) {
  auto table = Parse("# comment\nsize,name,count,flag\n 2.5 ,a,3,yes\n1,b,,\n");
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  ASSERT_EQ(table->size(), 2u);
  RowReader first = table->Row(0);
  EXPECT_EQ(first.line(), 3);
  EXPECT_EQ(first.Text("name"), "a");
  EXPECT_EQ(*first.Number("size", 0, 10), 2.5);
  EXPECT_EQ(*first.OptionalInt("count", 0, 10), 3);
  EXPECT_EQ(*first.OptionalBool("flag"), true);
  RowReader second = table->Row(1);
  EXPECT_FALSE(second.OptionalInt("count", 0, 10)->has_value());
  EXPECT_FALSE(second.OptionalBool("flag")->has_value());
}

TEST(RowReaderTest, NonFiniteNumbersRefusedInEveryNumberField) {
  for (const char* bad : {"nan", "NaN", "inf", "-inf", "infinity", "1e400", "-1e400", ".inf"}) {
    auto table = Parse(std::string("name,size,count\nx,") + bad + "," + bad + "\n");
    ASSERT_TRUE(table.ok()) << table.status().ToString();
    RowReader row = table->Row(0);
    auto number = row.Number("size", -1e308, 1e308);
    ASSERT_FALSE(number.ok()) << bad;
    EXPECT_EQ(number.status().message(),
              "t.csv:2: size: expected a number from -1e+308 to 1e+308, found \"" +
                  std::string(bad) + "\"")
        << number.status().message();
    EXPECT_FALSE(row.OptionalNumber("size", -1e308, 1e308).ok()) << bad;
    EXPECT_FALSE(row.OptionalInt("count", -1000, 1000).ok()) << bad;
  }
}

TEST(RowReaderTest, ErrorsCarryDetail) {
  auto table = Parse("name,size\nx,big\n");
  ASSERT_TRUE(table.ok());
  Status status = table->Row(0).Number("size", 0, 10).status();
  EXPECT_EQ(status.code(), StatusCode::kInvalidInput);
  ASSERT_NE(status.detail(), nullptr);
  EXPECT_EQ(status.detail()->file, "t.csv");
  EXPECT_EQ(status.detail()->line, 2);
  EXPECT_EQ(status.detail()->field, "size");
  EXPECT_EQ(status.detail()->expected, "a number from 0 to 10");
  EXPECT_EQ(status.detail()->found, "big");
}

TEST(RowReaderTest, UnknownColumnNamesTheNearest) {
  auto table = Parse("name,sise\n");
  ASSERT_FALSE(table.ok());
  EXPECT_EQ(table.status().message(),
            "t.csv:1: header: expected columns name,size (optional: count,flag), found unknown "
            "column \"sise\"; did you mean size?");
  ASSERT_NE(table.status().detail(), nullptr);
  EXPECT_EQ(table.status().detail()->nearest, std::vector<std::string>{"size"});
}

TEST(RowReaderTest, MissingColumnEmptyFileAndRepeatedColumn) {
  auto missing = Parse("name,count\n");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("found no column \"size\""), std::string::npos);
  auto empty = Parse("# only a comment\n");
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.status().message(),
            "t.csv:1: header: expected columns name,size, found an empty file");
  auto twice = Parse("name,size,name\n");
  ASSERT_FALSE(twice.ok());
  EXPECT_NE(twice.status().message().find("\"name\" twice"), std::string::npos);
}

TEST(RowReaderTest, CsvSyntaxErrorsCarryDetail) {
  auto table = Parse("name,size\nx,1,2\n");
  ASSERT_FALSE(table.ok());
  EXPECT_EQ(table.status().message(), "t.csv:2: expected 2 fields as in the header, found 3");
  ASSERT_NE(table.status().detail(), nullptr);
  EXPECT_EQ(table.status().detail()->line, 2);
}

TEST(RowReaderTest, LoadTableFileNamesAMissingFile) {
  auto table = LoadTableFile("/nonexistent-dir/x.csv", kSchema);
  ASSERT_FALSE(table.ok());
  EXPECT_EQ(table.status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace fulcrum
