#include "core/csv.h"

#include <gtest/gtest.h>

namespace fulcrum {
namespace {

TEST(CsvTest, ParsesHeaderAndRecordsWithLines) {
  auto doc = ParseCsv("# comment\na,b\n1,2\n\n3,4\n", "t.csv");
  ASSERT_TRUE(doc.ok()) << doc.status().message();
  EXPECT_EQ(doc->header_line, 2);
  EXPECT_EQ(doc->header, (std::vector<std::string>{"a", "b"}));
  ASSERT_EQ(doc->records.size(), 2u);
  EXPECT_EQ(doc->records[0].line, 3);
  EXPECT_EQ(doc->records[1].line, 5);
  EXPECT_EQ(doc->records[1].fields, (std::vector<std::string>{"3", "4"}));
}

TEST(CsvTest, QuotedFieldsHoldCommasQuotesAndNewlines) {
  auto doc = ParseCsv("a,b\r\n\"x, \"\"y\"\"\",\"two\nlines\"\r\nnext,row\r\n", "t.csv");
  ASSERT_TRUE(doc.ok()) << doc.status().message();
  ASSERT_EQ(doc->records.size(), 2u);
  EXPECT_EQ(doc->records[0].fields[0], "x, \"y\"");
  EXPECT_EQ(doc->records[0].fields[1], "two\nlines");
  EXPECT_EQ(doc->records[1].line, 4);  // the quoted newline counts as a line
}

TEST(CsvTest, EmptyFieldsAndMissingFinalNewline) {
  auto doc = ParseCsv(
      "\xEF\xBB\xBF"
      "a,b,c\n,,\n1,,3",
      "t.csv");
  ASSERT_TRUE(doc.ok()) << doc.status().message();
  EXPECT_EQ(doc->header[0], "a");
  ASSERT_EQ(doc->records.size(), 2u);
  EXPECT_EQ(doc->records[0].fields, (std::vector<std::string>{"", "", ""}));
  EXPECT_EQ(doc->records[1].fields, (std::vector<std::string>{"1", "", "3"}));
}

TEST(CsvTest, EmptyTextHasNoHeader) {
  auto doc = ParseCsv("# only a comment\n\n", "t.csv");
  ASSERT_TRUE(doc.ok());
  EXPECT_EQ(doc->header_line, 0);
}

TEST(CsvTest, WrongFieldCountNamesLine) {
  auto doc = ParseCsv("a,b\n1,2\n1,2,3\n", "t.csv");
  ASSERT_FALSE(doc.ok());
  EXPECT_EQ(doc.status().code(), StatusCode::kInvalidInput);
  EXPECT_EQ(doc.status().message(), "t.csv:3: expected 2 fields as in the header, found 3");
}

TEST(CsvTest, UnterminatedQuoteNamesOpeningLine) {
  auto doc = ParseCsv("a,b\n1,\"open\n\n", "t.csv");
  ASSERT_FALSE(doc.ok());
  EXPECT_NE(doc.status().message().find("t.csv:2: expected a closing"), std::string::npos)
      << doc.status().message();
}

TEST(CsvTest, TextAfterClosingQuoteIsRefused) {
  auto doc = ParseCsv("a,b\n\"x\"y,2\n", "t.csv");
  ASSERT_FALSE(doc.ok());
  EXPECT_NE(doc.status().message().find("t.csv:2:"), std::string::npos);
  EXPECT_NE(doc.status().message().find("found \"y\""), std::string::npos);
}

TEST(CsvTest, EscapeRoundTrips) {
  std::vector<std::string> fields = {"plain", "a,b", "say \"hi\"", "two\nlines", "#x", ""};
  auto doc = ParseCsv("h1,h2,h3,h4,h5,h6\n" + CsvLine(fields), "t.csv");
  ASSERT_TRUE(doc.ok()) << doc.status().message();
  ASSERT_EQ(doc->records.size(), 1u);
  EXPECT_EQ(doc->records[0].fields, fields);
  EXPECT_EQ(CsvEscape("plain"), "plain");
  EXPECT_EQ(CsvEscape("a,b"), "\"a,b\"");
}

// Issue 29: offers.d accepted a NUL byte in a provider name; any cell with one is refused at
// file:line:column, quoted or not, header included.
TEST(CsvTest, ANulByteInAnyCellIsRefusedAtItsColumn) {
  using namespace std::string_literals;
  for (const auto& [text, where] : std::vector<std::pair<std::string, std::string>>{
           {"provider,price\nacme,1\nac\0me,2\n"s, "t.csv:3:3:"},
           {"provider,price\n\"x\ny\",1\nok,\"1\0\"\n"s, "t.csv:4:6:"},
           {"prov\0ider,price\n"s, "t.csv:1:5:"}}) {
    SCOPED_TRACE(where);
    auto doc = ParseCsv(text, "t.csv");
    ASSERT_FALSE(doc.ok());
    EXPECT_EQ(doc.status().code(), StatusCode::kInvalidInput);
    EXPECT_EQ(doc.status().message().rfind(where, 0), 0u) << doc.status().message();
    EXPECT_NE(doc.status().message().find("found a NUL byte"), std::string::npos);
  }
}

}  // namespace
}  // namespace fulcrum
