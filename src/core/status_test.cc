#include "core/status.h"

#include <gtest/gtest.h>

namespace fulcrum {
namespace {

TEST(StatusTest, DetailSurvivesContextAndCopies) {
  Status st = Status::InvalidInput("gpus.csv:3: tflops_bf16: expected a number, found 'x'")
                  .WithDetail({"gpus.csv", 3, "tflops_bf16", "a number", "x", {}});
  Status wrapped = st.WithContext("loading the catalog");
  ASSERT_NE(wrapped.detail(), nullptr);
  EXPECT_EQ(wrapped.detail()->file, "gpus.csv");
  EXPECT_EQ(wrapped.detail()->line, 3);
  EXPECT_EQ(wrapped.detail()->found, "x");
  EXPECT_EQ(wrapped.message(),
            "loading the catalog: gpus.csv:3: tflops_bf16: expected a number, found 'x'");
  EXPECT_EQ(wrapped.ExitCode(), 2);
}

TEST(StatusTest, NoDetailByDefault) {
  EXPECT_EQ(Status::IoError("disk").detail(), nullptr);
  EXPECT_EQ(Status::Ok().detail(), nullptr);
}

}  // namespace
}  // namespace fulcrum
