// Sharing GPUs on Slurm: the --gres a job that wants part of one GPU asks for (`shard:N`, Slurm's
// shard plugin, N = its memory / the shard size rounded up; `mps:P` with --share mps, P a share of
// compute in percent, not memory) and the gres.conf / slurm.conf lines that give a node those
// shards (`fulcrum slurm conf`). Sizes are bytes. Pure functions; thread-safe.
// Slurm's documentation (22.05, https://slurm.schedmd.com/gres.html, "Sharding" and "MPS
// Management"): GresTypes lists gpu,shard (or gpu,mps); gres.conf `Name=shard Count=N` (or
// `Name=mps Count=N`) per node, split evenly over its GPUs when no File= says otherwise; a job's
// shards all come from one GPU; an MPS count of 100 per GPU makes mps:P mean P percent.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/status.h"

namespace fulcrum::cluster {

struct SlurmShareRequest {
  std::optional<double> memory_bytes;      // --gpu-memory
  std::optional<double> fraction;          // --gpu-fraction
  std::optional<double> gpu_memory_bytes;  // the cluster's GPU size (--node-gpus NxSIZE)
  double shard_bytes = 0;                  // --shard-size
  bool mps = false;                        // --share mps
};

// "shard:3" or "mps:38". kInvalidInput when the GPU size is needed (a fraction with shards, a
// memory with MPS) and unknown.
Result<std::string> SlurmShareGres(const SlurmShareRequest& request);

// One node's sharing lines.
struct SlurmShareConf {
  std::string node = "gpu-node";
  int gpus = 0;
  double gpu_memory_bytes = 0;
  double shard_bytes = 0;
  double reserve_fraction = 0.10;  // memory of each GPU no shard stands for
  bool mps = false;
  std::string gpu_files;  // gres.conf File= of the GPUs ("" = /dev/nvidia[0-N-1])
};

struct SlurmShareLines {
  int per_gpu = 0;  // shards (or MPS percent) per GPU
  int count = 0;    // per node
  std::vector<std::string> gres_conf;
  std::vector<std::string> slurm_conf;
};

SlurmShareLines SlurmShareConfLines(const SlurmShareConf& conf);

}  // namespace fulcrum::cluster
