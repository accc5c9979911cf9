#include "core/subprocess.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>

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

TEST(SubprocessTest, SpawnToFilesStartsALongLivedChildInItsOwnGroup) {
  char dir[] = "/tmp/spawn-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string out = std::string(dir) + "/out", err = std::string(dir) + "/err";
  SpawnOptions options;
  options.out_path = out;
  options.err_path = err;
  options.env = {{"FULCRUM_SPAWN_TEST", "seen"}};
  auto pid = SpawnToFiles({"sh", "-c", "echo $FULCRUM_SPAWN_TEST; echo oops >&2; exit 4"}, options);
  ASSERT_TRUE(pid.ok()) << pid.status().ToString();
  EXPECT_EQ(getpgid(*pid), *pid) << "its own process group";
  int status = 0;
  ASSERT_EQ(waitpid(*pid, &status, 0), *pid);
  EXPECT_EQ(WEXITSTATUS(status), 4);
  auto read = [](const std::string& path) {
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  EXPECT_EQ(read(out), "seen\n");
  EXPECT_EQ(read(err), "oops\n");
  // One file for both streams.
  options.err_path = out;
  pid = SpawnToFiles({"sh", "-c", "echo one; echo two >&2"}, options);
  ASSERT_TRUE(pid.ok());
  waitpid(*pid, &status, 0);
  EXPECT_EQ(read(out), "one\ntwo\n");
  std::filesystem::remove_all(dir);
  EXPECT_EQ(SpawnToFiles({"fulcrum-no-such-program-xyz"}, options).status().code(),
            StatusCode::kNotFound);
}

}  // namespace
}  // namespace fulcrum
