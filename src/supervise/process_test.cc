// The real PosixProcessRunner: exec failures come back from Start, output to a file, and a
// detached child that outlives its runner in its own session.
#include "supervise/process.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

namespace fulcrum::supervise {
namespace {
namespace fs = std::filesystem;

std::string TempDir(const std::string& name) {
  auto dir = fs::path(FULCRUM_BUILD_DIR) / "Testing" / "tmp" / ("process-" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir.string();
}

std::string ReadFile(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

std::optional<ChildExit> WaitExit(ProcessRunner& runner, std::vector<std::string>* lines) {
  for (int i = 0; i < 500; ++i) {
    auto exit = runner.Wait(0.02, [&](Stream, std::string_view line) {
      if (lines != nullptr) lines->emplace_back(line);
    });
    if (exit) return exit;
  }
  return std::nullopt;
}

TEST(PosixProcessRunnerTest, ACommandThatCannotRunIsAStartError) {
  PosixProcessRunner runner;
  Status s = runner.Start({{"/nonexistent/cmd"}, {}, "", "", false});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_NE(s.message().find("command not found"), std::string::npos) << s.message();
  EXPECT_FALSE(runner.running());
  Status missing_dir = runner.Start({{"true"}, {}, "/nonexistent-dir", "", false});
  EXPECT_EQ(missing_dir.code(), StatusCode::kNotFound) << missing_dir.message();
}

TEST(PosixProcessRunnerTest, PipesOrAFileAndTheEnvironment) {
  const std::string dir = TempDir("output");
  PosixProcessRunner runner;
  ChildSpec spec{{"sh", "-c", "echo \"$GREETING\"; echo oops >&2; exit 3"},
                 {{"GREETING", "hi"}},
                 "",
                 "",
                 false};
  ASSERT_TRUE(runner.Start(spec).ok());
  std::vector<std::string> lines;
  auto exit = WaitExit(runner, &lines);
  ASSERT_TRUE(exit);
  EXPECT_EQ(exit->exit_code, 3);
  EXPECT_EQ(lines, (std::vector<std::string>{"hi", "oops"}));
  spec.output_file = dir + "/out.log";
  ASSERT_TRUE(runner.Start(spec).ok());
  exit = WaitExit(runner, nullptr);
  ASSERT_TRUE(exit);
  EXPECT_EQ(ReadFile(dir + "/out.log"), "hi\noops\n");
  fs::remove_all(dir);
}

TEST(PosixProcessRunnerTest, ADetachedChildOutlivesItsRunnerInItsOwnSession) {
  const std::string dir = TempDir("detached");
  const std::string out = dir + "/out.log";
  {
    PosixProcessRunner runner;
    ChildSpec spec{{"sh", "-c", "sleep 0.3; echo $$ $(ps -o sid= -p $$)"}, {}, dir, out, true};
    ASSERT_TRUE(runner.Start(spec).ok());
    EXPECT_FALSE(runner.running()) << "a detached child is not held";
  }  // the runner's destructor would kill a held child
  std::string text;
  for (int i = 0; i < 250 && text.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    text = ReadFile(out);
  }
  std::istringstream words(text);
  long pid = 0, sid = 0;
  words >> pid >> sid;
  ASSERT_GT(pid, 0) << text;
  // A new session (led by the intermediate child, which exited: the job cannot regain a terminal).
  EXPECT_NE(sid, static_cast<long>(getsid(0))) << "it runs in a session of its own";
  fs::remove_all(dir);
}

// Alive means: /proc shows it and it is not a zombie (an orphan's zombie waits for init).
bool Alive(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return false;
  const size_t paren = line.rfind(')');
  return paren != std::string::npos && line.size() > paren + 2 && line[paren + 2] != 'Z';
}

bool GoneWithin(pid_t pid, double seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (Alive(pid) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return !Alive(pid);
}

// The reported bug: kill -9 of the supervisor left the job's grandchildren (torchrun's workers)
// running under init. Here the "supervisor" is a forked copy of this test holding a runner.
TEST(PosixProcessRunnerTest, TheJobsGrandchildrenDieWithAKilledSupervisor) {
  const std::string dir = TempDir("keeper");
  const std::string pid_file = dir + "/sleep.pid";
  const pid_t supervisor = ::fork();
  ASSERT_GE(supervisor, 0);
  if (supervisor == 0) {
    PosixProcessRunner runner;
    ChildSpec spec{{"sh", "-c",
                    "sleep 1000 & echo $! > " + pid_file + ".tmp && mv " + pid_file + ".tmp " +
                        pid_file + "; wait"},
                   {},
                   "",
                   dir + "/out.log",
                   false};
    if (!runner.Start(spec).ok()) _exit(3);
    while (true) ::pause();
  }
  pid_t sleep_pid = 0;
  for (int i = 0; i < 500 && sleep_pid == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    std::istringstream(ReadFile(pid_file)) >> sleep_pid;
  }
  ASSERT_GT(sleep_pid, 0) << ReadFile(dir + "/out.log");
  ASSERT_TRUE(Alive(sleep_pid));
  ASSERT_EQ(::kill(supervisor, SIGKILL), 0);
  ASSERT_EQ(::waitpid(supervisor, nullptr, 0), supervisor);
  EXPECT_TRUE(GoneWithin(sleep_pid, 10)) << "the grandchild outlived its supervisor";
  if (Alive(sleep_pid)) ::kill(sleep_pid, SIGKILL);
  fs::remove_all(dir);
}

TEST(PosixProcessRunnerTest, AStaleGroupIsEndedOnlyWhenItsLeaderIsTheRecordedOne) {
  const pid_t leader = ::fork();
  ASSERT_GE(leader, 0);
  if (leader == 0) {
    ::setpgid(0, 0);
    ::execlp("sleep", "sleep", "1000", static_cast<char*>(nullptr));
    _exit(127);
  }
  ::setpgid(leader, leader);
  std::optional<int64_t> ticks;
  for (int i = 0; i < 100 && !ticks; ++i) ticks = ProcessStartTicks(leader);
  ASSERT_TRUE(ticks);
  EXPECT_EQ(EndStaleProcessGroup(leader, *ticks + 1), 0) << "another process with that pid";
  EXPECT_TRUE(Alive(leader));
  EXPECT_EQ(EndStaleProcessGroup(leader, *ticks), 1);
  int status = 0;
  ASSERT_EQ(::waitpid(leader, &status, 0), leader);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  EXPECT_FALSE(ProcessStartTicks(leader)) << "no such process any more";
}

}  // namespace
}  // namespace fulcrum::supervise

namespace fulcrum::supervise {
namespace {

TEST(ProcessGroupPidsTest, ListsTheGroupsLiveMembers) {
  const std::vector<int64_t> mine = ProcessGroupPids(::getpgrp());
  EXPECT_NE(std::find(mine.begin(), mine.end(), static_cast<int64_t>(::getpid())), mine.end());
  EXPECT_TRUE(ProcessGroupPids(1).empty()) << "init's group is never a job's";
}

}  // namespace
}  // namespace fulcrum::supervise
