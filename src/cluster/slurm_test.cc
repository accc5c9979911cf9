#include "cluster/slurm.h"

#include <gtest/gtest.h>

namespace fulcrum::cluster {
namespace {

TEST(SlurmTest, ShellQuoteSurvivesQuotesAndSpaces) {
  EXPECT_EQ(ShellQuote("abc"), "'abc'");
  EXPECT_EQ(ShellQuote("it's a test"), "'it'\\''s a test'");
  EXPECT_EQ(ShellQuote("$(rm -rf /)"), "'$(rm -rf /)'");
}

TEST(SlurmTest, ScriptRequestsGpusRequeueAndNoticeAndRunsUnderFulcrum) {
  SbatchSpec spec;
  spec.job_name = "llama";
  spec.nodes = 2;
  spec.gpus_per_node = 8;
  spec.partition = "gpu";
  spec.fulcrum_binary = "/opt/fulcrum/bin/fulcrum";
  spec.run_args = {"--name", "llama", "--checkpoint-dir", "/shared/ckpt"};
  spec.command = {"torchrun", "--nproc-per-node", "8", "train.py", "--note", "it's"};
  std::string script = GenerateSbatch(spec);
  for (const char* line : {"#!/bin/bash\n", "#SBATCH --nodes=2\n", "#SBATCH --gres=gpu:8\n",
                           "#SBATCH --partition=gpu\n", "#SBATCH --requeue\n",
                           "#SBATCH --signal=B:USR1@120\n", "export FULCRUM_QUEUE=slurm\n"}) {
    EXPECT_NE(script.find(line), std::string::npos) << line << " missing in\n" << script;
  }
  EXPECT_NE(script.find("cmd=('/opt/fulcrum/bin/fulcrum' run '--name' 'llama' '--checkpoint-dir' "
                        "'/shared/ckpt' -- "
                        "srun --ntasks-per-node=1 'torchrun' '--nproc-per-node' '8' 'train.py' "
                        "'--note' 'it'\\''s')"),
            std::string::npos)
      << script;
  EXPECT_NE(script.find("trap 'notice=1; kill -USR1 $pid' USR1"), std::string::npos);
  EXPECT_NE(script.find("scontrol requeue"), std::string::npos);
  spec.nodes = 1;
  spec.gpus_per_node = 0;
  script = GenerateSbatch(spec);
  EXPECT_EQ(script.find("--gres"), std::string::npos);
  EXPECT_EQ(script.find("srun"), std::string::npos) << "one node: no srun";
}

}  // namespace
}  // namespace fulcrum::cluster
