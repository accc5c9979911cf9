#include "core/subprocess.h"

#include <gtest/gtest.h>

namespace fulcrum {
namespace {

TEST(SubprocessTest, CapturesStdoutStderrAndExitCode) {
  auto r = RunCapture({"sh", "-c", "echo out; echo err >&2; exit 3"});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->out, "out\n");
  EXPECT_EQ(r->err, "err\n");
  EXPECT_EQ(r->exit_code, 3);
}

TEST(SubprocessTest, ArgvIsNotInterpretedByAShell) {
  auto r = RunCapture({"echo", "$HOME; rm -rf /"});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->out, "$HOME; rm -rf /\n");
}

TEST(SubprocessTest, MissingProgramIsNotFound) {
  auto r = RunCapture({"fulcrum-no-such-program-xyz"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
}

TEST(SubprocessTest, TimeoutKillsTheChild) {
  CaptureOptions options;
  options.timeout_seconds = 0.3;
  auto r = RunCapture({"sleep", "30"}, options);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->timed_out);
  EXPECT_EQ(r->exit_code, 128 + 9);
}

TEST(SubprocessTest, StdinIsPassed) {
  CaptureOptions options;
  options.stdin_text = "hello\n";
  auto r = RunCapture({"cat"}, options);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->out, "hello\n");
}

}  // namespace
}  // namespace fulcrum
