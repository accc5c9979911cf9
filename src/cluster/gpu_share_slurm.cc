#include "cluster/gpu_share_slurm.h"

#include <algorithm>
#include <cmath>

#include "core/parse.h"

namespace fulcrum::cluster {

Result<std::string> SlurmShareGres(const SlurmShareRequest& r) {
  if (r.mps) {
    double share = r.fraction.value_or(0);
    if (!r.fraction) {
      if (!r.gpu_memory_bytes || *r.gpu_memory_bytes <= 0) {
        return Status::InvalidInput(
            "--share mps with --gpu-memory: mps:P is a share of compute in percent, so the GPU's "
            "size is needed; give --node-gpus NxSIZE (e.g. 8x80GiB) or use --gpu-fraction");
      }
      share = r.memory_bytes.value_or(0) / *r.gpu_memory_bytes;
    }
    const int pct = std::clamp(static_cast<int>(std::ceil(share * 100 - 1e-9)), 1, 100);
    return "mps:" + std::to_string(pct);
  }
  double bytes = r.memory_bytes.value_or(0);
  if (!r.memory_bytes) {
    if (!r.gpu_memory_bytes || *r.gpu_memory_bytes <= 0) {
      return Status::InvalidInput(
          "--gpu-fraction on Slurm: shards stand for memory, so the GPU's size is needed; give "
          "--node-gpus NxSIZE (e.g. 8x80GiB) or use --gpu-memory");
    }
    bytes = r.fraction.value_or(0) * *r.gpu_memory_bytes;
  }
  const int shards = std::max(1, static_cast<int>(std::ceil(bytes / r.shard_bytes - 1e-9)));
  return "shard:" + std::to_string(shards);
}

SlurmShareLines SlurmShareConfLines(const SlurmShareConf& c) {
  SlurmShareLines out;
  const std::string type = c.mps ? "mps" : "shard";
  if (c.mps) {
    out.per_gpu = 100;
  } else {
    const double usable = c.gpu_memory_bytes * (1 - c.reserve_fraction);
    out.per_gpu = std::max(0, static_cast<int>(std::floor(usable / c.shard_bytes + 1e-9)));
  }
  out.count = out.per_gpu * c.gpus;
  const std::string files =
      c.gpu_files.empty() ? (c.gpus == 1 ? std::string("/dev/nvidia0")
                                         : "/dev/nvidia[0-" + std::to_string(c.gpus - 1) + "]")
                          : c.gpu_files;
  out.gres_conf.push_back("NodeName=" + c.node + " Name=gpu File=" + files);
  out.gres_conf.push_back("NodeName=" + c.node + " Name=" + type +
                          " Count=" + std::to_string(out.count));
  out.slurm_conf.push_back("GresTypes=gpu," + type);
  out.slurm_conf.push_back("NodeName=" + c.node + " Gres=gpu:" + std::to_string(c.gpus) + "," +
                           type + ":" + std::to_string(out.count));
  return out;
}

}  // namespace fulcrum::cluster
