// --on-hang's pieces: the action names, which stalled ranks are the job's (its process group, or
// FULCRUM_JOB_UID in a process's environment), and the text that names them.
#include "supervise/nccl_hang.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include "supervise/process.h"

namespace fulcrum::supervise {
namespace {

telemetry::NcclLaggingRank Lagging(int rank, int pid, std::vector<int> comm_pids) {
  telemetry::NcclLaggingRank l;
  l.comm_hash = "0x1f";
  l.rank.rank = rank;
  l.rank.host = "10.0.0.2";
  l.rank.pid = pid;
  l.rank.cuda_dev = 3;
  l.reason = "AllReduce op 41 of 42";
  l.comm_pids = std::move(comm_pids);
  return l;
}

TEST(NcclHangTest, ActionsByName) {
  EXPECT_EQ(*ParseHangAction("requeue"), HangAction::kRequeue);
  EXPECT_EQ(*ParseHangAction("stop"), HangAction::kStop);
  EXPECT_EQ(*ParseHangAction("ignore"), HangAction::kIgnore);
  auto bad = ParseHangAction("restart");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidInput);
  EXPECT_NE(bad.status().message().find("--on-hang: expected requeue, stop or ignore"),
            std::string::npos);
  EXPECT_STREQ(HangActionName(HangAction::kStop), "stop");
}

TEST(NcclHangTest, OnlyTheJobsOwnCommunicatorsCount) {
  // Another job on the node serves the RAS socket too: its stalled rank 2 (pids 700-703) is not
  // this job's (pids 900-903, rank 1 in another process, rank 3 remote with only its own pid).
  const std::vector<telemetry::NcclLaggingRank> stalled = {
      Lagging(2, 702, {700, 701, 702, 703}), Lagging(1, 901, {900, 901}), Lagging(3, 1234, {})};
  auto ours = JobStalledRanks(stalled, [](int pid) { return pid >= 900 && pid <= 903; });
  ASSERT_EQ(ours.size(), 1u);
  EXPECT_EQ(ours[0].rank.rank, 1);
  EXPECT_TRUE(JobStalledRanks(stalled, [](int) { return false; }).empty());
}

TEST(NcclHangTest, DescribeNamesRankHostPidAndGpu) {
  EXPECT_EQ(DescribeHang({}), "");
  const std::vector<telemetry::NcclLaggingRank> one = {Lagging(5, 4005, {4005})};
  EXPECT_EQ(DescribeHang(one),
            "NCCL hang: rank 5 (pid 4005 on 10.0.0.2, GPU 3): AllReduce op 41 of 42 in comm 0x1f");
}

TEST(NcclHangTest, AProcessIsTheJobsByGroupOrByItsEnvironment) {
  PosixProcessRunner runner;
  ChildSpec spec;
  spec.argv = {"sleep", "30"};
  spec.env["FULCRUM_JOB_UID"] = "train#3";
  ASSERT_TRUE(runner.Start(spec).ok());
  const int64_t pid = runner.pid();
  // /proc/PID/environ is written at exec: wait for it to hold the child's environment.
  bool exec_done = false;
  for (int i = 0; i < 200 && !exec_done; ++i) {
    exec_done = ProcessOfJob(pid, -1, "train#3");
    if (!exec_done) ::usleep(10000);
  }
  EXPECT_TRUE(exec_done) << "FULCRUM_JOB_UID in its environment";
  EXPECT_TRUE(ProcessOfJob(pid, pid, "")) << "a member of the job's process group";
  EXPECT_FALSE(ProcessOfJob(pid, -1, "train#4")) << "another job's uid";
  EXPECT_FALSE(ProcessOfJob(::getpid(), pid, "train#3")) << "this test is not the job";
  EXPECT_FALSE(ProcessOfJob(-1, pid, "train#3"));
  runner.SignalGroup(SIGKILL);
  runner.Wait(5, [](Stream, std::string_view) {});
}

}  // namespace
}  // namespace fulcrum::supervise
