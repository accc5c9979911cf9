#include "cluster/gpu_share_slurm.h"

#include <gtest/gtest.h>

#include "cluster/slurm.h"

namespace fulcrum::cluster {
namespace {

constexpr double kGiB = 1024.0 * 1024 * 1024;

TEST(GpuShareSlurmTest, ShardsAreTheReservationOverTheShardSizeRoundedUp) {
  SlurmShareRequest r;
  r.shard_bytes = 10 * kGiB;
  r.memory_bytes = 30 * kGiB;
  EXPECT_EQ(*SlurmShareGres(r), "shard:3");
  r.memory_bytes = 31 * kGiB;
  EXPECT_EQ(*SlurmShareGres(r), "shard:4") << "never less than asked";
  r.memory_bytes = 1;
  EXPECT_EQ(*SlurmShareGres(r), "shard:1");
  r.memory_bytes.reset();
  r.fraction = 0.5;
  EXPECT_EQ(SlurmShareGres(r).status().code(), StatusCode::kInvalidInput)
      << "a fraction needs the GPU's size";
  r.gpu_memory_bytes = 80 * kGiB;
  EXPECT_EQ(*SlurmShareGres(r), "shard:4");
}

TEST(GpuShareSlurmTest, MpsIsAShareOfComputeInPercent) {
  SlurmShareRequest r;
  r.mps = true;
  r.fraction = 0.25;
  EXPECT_EQ(*SlurmShareGres(r), "mps:25");
  r.fraction.reset();
  r.memory_bytes = 30 * kGiB;
  EXPECT_EQ(SlurmShareGres(r).status().code(), StatusCode::kInvalidInput);
  r.gpu_memory_bytes = 80 * kGiB;
  EXPECT_EQ(*SlurmShareGres(r), "mps:38") << "30/80 = 37.5 %, rounded up";
}

TEST(GpuShareSlurmTest, ConfGivesEachGpuTheShardsItsMemoryLessTheReserveHolds) {
  SlurmShareConf c;
  c.node = "gpu1";
  c.gpus = 8;
  c.gpu_memory_bytes = 80 * kGiB;
  c.shard_bytes = 10 * kGiB;
  const SlurmShareLines lines = SlurmShareConfLines(c);
  EXPECT_EQ(lines.per_gpu, 7) << "72 GiB usable: 7 shards of 10 GiB";
  EXPECT_EQ(lines.count, 56);
  EXPECT_EQ(lines.gres_conf,
            (std::vector<std::string>{"NodeName=gpu1 Name=gpu File=/dev/nvidia[0-7]",
                                      "NodeName=gpu1 Name=shard Count=56"}));
  EXPECT_EQ(lines.slurm_conf,
            (std::vector<std::string>{"GresTypes=gpu,shard", "NodeName=gpu1 Gres=gpu:8,shard:56"}));
  c.mps = true;
  const SlurmShareLines mps = SlurmShareConfLines(c);
  EXPECT_EQ(mps.count, 800);
  EXPECT_EQ(mps.slurm_conf.front(), "GresTypes=gpu,mps");
}

TEST(GpuShareSlurmTest, TheSbatchScriptAsksForTheShare) {
  SbatchSpec spec;
  spec.job_name = "small";
  spec.gres = "shard:3";
  spec.command = {"python", "train.py"};
  const std::string script = GenerateSbatch(spec);
  EXPECT_NE(script.find("#SBATCH --gres=shard:3\n"), std::string::npos) << script;
  EXPECT_EQ(script.find("--gres=gpu"), std::string::npos) << script;
}

}  // namespace
}  // namespace fulcrum::cluster
