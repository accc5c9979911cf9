#include "core/input_error.h"

#include <gtest/gtest.h>

namespace fulcrum {
namespace {

TEST(InputErrorTest, MessageAndDetail) {
  Status s = InputError({"f.yaml", 3, "tokens", "a count such as 20B", "lots", {"a", "b"}});
  EXPECT_EQ(s.code(), StatusCode::kInvalidInput);
  EXPECT_EQ(s.message(),
            "f.yaml:3: tokens: expected a count such as 20B, found \"lots\"; did you mean a, b?");
  ASSERT_NE(s.detail(), nullptr);
  EXPECT_EQ(s.detail()->found, "lots");
  Status described = InputError({"f.csv", std::nullopt, "", "a header", "an empty file", {}},
                                FoundIs::kDescription);
  EXPECT_EQ(described.message(), "f.csv: expected a header, found an empty file");
}

TEST(InputErrorTest, NearestNames) {
  std::vector<std::string> known = {"tokens", "samples", "epochs", "seq_len"};
  EXPECT_EQ(NearestNames("tokenz", known), std::vector<std::string>{"tokens"});
  EXPECT_EQ(NearestNames("TOKENS", known), std::vector<std::string>{"tokens"});
  EXPECT_TRUE(NearestNames("zzzzzzzz", known).empty());
  EXPECT_EQ(NearestNames("epoch", known), std::vector<std::string>{"epochs"});
  EXPECT_EQ(EditDistance("kitten", "sitting"), 3u);
}

}  // namespace
}  // namespace fulcrum
