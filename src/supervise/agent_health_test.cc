#include "supervise/agent_health.h"

#include <gtest/gtest.h>

namespace fulcrum::supervise {
namespace {

telemetry::GpuSample Gpu(int index, std::optional<std::vector<telemetry::GpuProcess>> processes) {
  telemetry::GpuSample g;
  g.index = index;
  g.utilization_gpu_pct = 80 + index;
  g.power_watts = 300 + index;
  g.processes = std::move(processes);
  return g;
}

TEST(AgentFiguresTest, TheJobsOwnGpusGiveMemoryUtilisationAndPower) {
  // pids 10 and 11 are the job's (its process group); GPU 2 runs someone else's pid 99.
  const auto figures = JobFiguresFromSamples(
      {Gpu(0, {{{10, 30e9}, {11, 2e9}}}), Gpu(1, {{{11, 40e9}}}), Gpu(2, {{{99, 70e9}}})},
      {10, 11});
  EXPECT_EQ(figures.peak_bytes_per_gpu, 40e9) << "the most one GPU holds for the job";
  EXPECT_EQ(figures.gpu_utilization_pct, 80.5) << "mean of GPUs 0 and 1";
  EXPECT_EQ(figures.power_watts, 601) << "GPUs 0 and 1 together";
  EXPECT_EQ(figures.reason, "");
}

TEST(AgentFiguresTest, AGpuSharedWithAnotherProcessKeepsOnlyTheMemory) {
  const auto figures =
      JobFiguresFromSamples({Gpu(0, {{{10, 30e9}}}), Gpu(1, {{{10, 20e9}, {99, 5e9}}})}, {10});
  EXPECT_EQ(figures.peak_bytes_per_gpu, 30e9);
  EXPECT_FALSE(figures.gpu_utilization_pct) << "GPU 1's utilisation is not the job's alone";
  EXPECT_FALSE(figures.power_watts);
  EXPECT_NE(figures.reason.find("GPU 1 also runs another process"), std::string::npos)
      << figures.reason;
}

TEST(AgentFiguresTest, WithoutPerProcessDataNothingIsInvented) {
  const auto figures = JobFiguresFromSamples({Gpu(0, std::nullopt)}, {10});
  EXPECT_FALSE(figures.peak_bytes_per_gpu);
  EXPECT_FALSE(figures.gpu_utilization_pct);
  EXPECT_FALSE(figures.power_watts);
  EXPECT_NE(figures.reason.find("no per-process data"), std::string::npos) << figures.reason;
  const auto unseen = JobFiguresFromSamples({Gpu(0, {{{99, 1e9}}})}, {10});
  EXPECT_FALSE(unseen.peak_bytes_per_gpu);
  EXPECT_NE(unseen.reason.find("no GPU process of the agent is the job's"), std::string::npos)
      << unseen.reason;
  const auto no_memory = JobFiguresFromSamples({Gpu(0, {{{10, std::nullopt}}})}, {10});
  EXPECT_FALSE(no_memory.peak_bytes_per_gpu);
  EXPECT_EQ(no_memory.power_watts, 300) << "the GPU is the job's alone";
  EXPECT_NE(no_memory.reason.find("no memory for the job's pids"), std::string::npos);
}

TEST(AgentFiguresTest, NoAgentIsUnavailable) {
  EXPECT_EQ(GpuSamplesFromAgent("none", 0.1).status().code(), StatusCode::kUnavailable);
}

}  // namespace
}  // namespace fulcrum::supervise
