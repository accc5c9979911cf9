#include "supervise/gpu_share.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace fulcrum::supervise {
namespace {

constexpr double kGiB = 1024.0 * 1024 * 1024;

ShareRequest Memory(double gib) {
  ShareRequest r;
  r.memory_bytes = gib * kGiB;
  return r;
}

TEST(GpuShareTest, ParsesNodeGpusAsCountOrCountTimesSize) {
  auto two = ParseNodeGpus("2x80GiB");
  ASSERT_TRUE(two.ok()) << two.status().message();
  ASSERT_EQ(two->size(), 2u);
  EXPECT_EQ((*two)[1].index, 1);
  EXPECT_EQ(*(*two)[1].memory_bytes, 80 * kGiB);
  EXPECT_EQ(FormatNodeGpus(*two), "2x80GiB");
  auto eight = ParseNodeGpus("8");
  ASSERT_TRUE(eight.ok());
  EXPECT_EQ(eight->size(), 8u);
  EXPECT_FALSE((*eight)[0].memory_bytes.has_value()) << "unknown, not 0";
  for (const char* bad : {"two", "2x", "2xlots", "-1", "2x0GiB"}) {
    auto r = ParseNodeGpus(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidInput);
    EXPECT_NE(r.status().message().find("2x80GiB"), std::string::npos) << r.status().message();
  }
}

TEST(GpuShareTest, TheAgentsSamplesGiveIndexAndMemory) {
  telemetry::GpuSample a, b;
  a.index = 1;
  a.memory_total_bytes = 141e9;
  b.index = 0;  // no memory figure: unknown, not 0
  const auto gpus = NodeGpusFromSamples({a, b});
  ASSERT_EQ(gpus.size(), 2u);
  EXPECT_EQ(gpus[0].index, 0);
  EXPECT_FALSE(gpus[0].memory_bytes.has_value());
  EXPECT_EQ(*gpus[1].memory_bytes, 141e9);
}

TEST(GpuShareTest, ReserveIsAPercentageOrASize) {
  ShareRequest r;
  ASSERT_TRUE(ParseReserve("20%", r).ok());
  EXPECT_DOUBLE_EQ(*r.reserve_fraction, 0.20);
  ASSERT_TRUE(ParseReserve("8GiB", r).ok());
  EXPECT_EQ(*r.reserve_bytes, 8 * kGiB);
  EXPECT_FALSE(r.reserve_fraction.has_value());
  EXPECT_FALSE(ParseReserve("100%", r).ok());
  EXPECT_FALSE(ParseReserve("lots", r).ok());
}

TEST(GpuShareTest, NeverOverCommitsAGpuAndKeepsTheReserve) {
  const std::vector<NodeGpu> gpus = *ParseNodeGpus("2x80GiB");
  std::vector<GpuLoad> loads(gpus.size());
  std::vector<int> placed;
  for (int i = 0; i < 6; ++i) {
    auto fit = FitShare(Memory(30), gpus, loads, false);
    if (fit) {
      placed.push_back(fit->gpu);
      EXPECT_EQ(fit->mode, "time");
      EXPECT_EQ(fit->reservation_bytes, 30 * kGiB);
    }
  }
  // 80 GiB less 10 % = 72 GiB: two of 30 GiB per GPU, never three.
  EXPECT_EQ(placed, (std::vector<int>{0, 0, 1, 1}));
  EXPECT_LE(loads[0].reserved_bytes, 72 * kGiB);
  // A smaller job still fits in what is left of GPU 0 (12 GiB).
  EXPECT_EQ(FitShare(Memory(12), gpus, loads, false)->gpu, 0);
  // GPU 0 is at 72 GiB, GPU 1 at 60: 13 GiB fits nowhere.
  EXPECT_FALSE(FitShare(Memory(13), gpus, loads, false).has_value());
  // With a 0 % reserve the same GPU would have taken it.
  ShareRequest no_reserve = Memory(8);
  no_reserve.reserve_fraction = 0;
  EXPECT_TRUE(FitShare(no_reserve, gpus, loads, false).has_value());
}

TEST(GpuShareTest, WholeGpusAreNotShared) {
  const std::vector<NodeGpu> gpus = *ParseNodeGpus("2x80GiB");
  std::vector<GpuLoad> loads(2);
  loads[0].whole = true;
  EXPECT_EQ(FitShare(Memory(10), gpus, loads, false)->gpu, 1);
}

TEST(GpuShareTest, FractionIsOfTheGpusMemory) {
  const std::vector<NodeGpu> gpus = *ParseNodeGpus("1x80GiB");
  ShareRequest r;
  r.fraction = 0.25;
  EXPECT_EQ(*ReservationOn(r, gpus[0]), 20 * kGiB);
  std::vector<GpuLoad> loads(1);
  auto fit = FitShare(r, gpus, loads, true);
  ASSERT_TRUE(fit.has_value());
  EXPECT_EQ(fit->mode, "mps");
  const auto env = ShareEnv(*fit, r, gpus[0]);
  EXPECT_EQ(env.at("CUDA_VISIBLE_DEVICES"), "0");
  EXPECT_EQ(env.at("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"), "0=20480MB");
  EXPECT_EQ(env.at("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"), "25");
}

TEST(GpuShareTest, TimeSlicingSetsNoMpsLimits) {
  const std::vector<NodeGpu> gpus = *ParseNodeGpus("2x80GiB");
  std::vector<GpuLoad> loads(2);
  loads[0].whole = true;
  auto fit = FitShare(Memory(30), gpus, loads, false);
  const auto env = ShareEnv(*fit, Memory(30), gpus[1]);
  EXPECT_EQ(env.at("CUDA_VISIBLE_DEVICES"), "1");
  EXPECT_EQ(env.count("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"), 0u);
}

TEST(GpuShareTest, MigGetsTheSmallestFreeInstanceThatFits) {
  NodeGpu gpu{0, 80 * kGiB, {}};
  gpu.mig = {{"3g.40gb", 40 * kGiB, "MIG-aaa"},
             {"1g.10gb", 10 * kGiB, "MIG-bbb"},
             {"2g.20gb", 20 * kGiB, "MIG-ccc"},
             {"1g.10gb", 10 * kGiB, "MIG-ddd"}};
  const std::vector<NodeGpu> gpus = {gpu};
  std::vector<GpuLoad> loads(1);
  auto first = FitShare(Memory(8), gpus, loads, false);
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->mode, "mig");
  EXPECT_EQ(first->mig_uuid, "MIG-bbb");
  EXPECT_EQ(ShareEnv(*first, Memory(8), gpu).at("CUDA_VISIBLE_DEVICES"), "MIG-bbb");
  EXPECT_EQ(FitShare(Memory(8), gpus, loads, false)->mig_uuid, "MIG-ddd");
  EXPECT_EQ(FitShare(Memory(8), gpus, loads, false)->mig_profile, "2g.20gb") << "1g ones in use";
  EXPECT_EQ(FitShare(Memory(30), gpus, loads, false)->mig_uuid, "MIG-aaa");
  EXPECT_FALSE(FitShare(Memory(1), gpus, loads, false).has_value()) << "every instance in use";
  // A request no instance can hold is bad input naming the profiles the GPU has.
  Status too_big = CheckShareFits(Memory(50), gpus);
  EXPECT_EQ(too_big.code(), StatusCode::kInvalidInput);
  EXPECT_NE(too_big.message().find("3g.40gb"), std::string::npos) << too_big.message();
  EXPECT_NE(too_big.message().find("1g.10gb"), std::string::npos) << too_big.message();
}

TEST(GpuShareTest, BadRequestsNameWhatFits) {
  const std::vector<NodeGpu> gpus = *ParseNodeGpus("2x80GiB");
  Status big = CheckShareFits(Memory(75), gpus);
  EXPECT_EQ(big.code(), StatusCode::kInvalidInput);
  EXPECT_NE(big.message().find("72.0 GiB"), std::string::npos) << big.message();
  EXPECT_TRUE(CheckShareFits(Memory(72), gpus).ok());
  ShareRequest fraction;
  for (double f : {0.0, -0.5, 1.5}) {
    fraction.fraction = f;
    Status s = CheckShareFits(fraction, gpus);
    EXPECT_EQ(s.code(), StatusCode::kInvalidInput) << f;
    EXPECT_NE(s.message().find("(0, 1]"), std::string::npos) << s.message();
  }
  Status unknown = CheckShareFits(Memory(10), *ParseNodeGpus("2"));
  EXPECT_EQ(unknown.code(), StatusCode::kInvalidInput);
  EXPECT_NE(unknown.message().find("2x80GiB"), std::string::npos) << unknown.message();
  EXPECT_EQ(CheckShareMode("mig").code(), StatusCode::kInvalidInput);
}

TEST(GpuShareTest, FindsTheMpsControlDaemonInProc) {
  const std::string root = (std::filesystem::temp_directory_path() / "gpu-share-proc").string();
  std::filesystem::remove_all(root);
  std::filesystem::create_directories(root + "/42");
  std::ofstream(root + "/42/comm") << "python3\n";
  EXPECT_FALSE(MpsControlRunning(root));
  std::filesystem::create_directories(root + "/77");
  std::ofstream(root + "/77/comm") << "nvidia-cuda-mps\n";
  EXPECT_TRUE(MpsControlRunning(root));
  std::filesystem::remove_all(root);
}

}  // namespace
}  // namespace fulcrum::supervise
