// Reading a torchrun command line (argv words): where torchrun's own options start and whether
// the user already set one. Shared by the Slurm script writer and the SkyPilot/dstack exports,
// which both add the multi-node options a torchrun needs when the user left them out.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace fulcrum {

// Where torchrun's own options start in `command`: 1 for `torchrun ...` (any path), 3 for
// `python... -m torch.distributed.run ...`; 0 when it is not torchrun.
size_t TorchrunOptionsAt(const std::vector<std::string>& command);

// True when the user already gave torchrun option `name` (e.g. --rdzv-endpoint, also spelled
// --rdzv_endpoint, with its value after a space or '=').
bool HasTorchrunOption(const std::vector<std::string>& command, const std::string& name);

// True when the user already said where torchrun's nodes meet (--standalone, --rdzv-endpoint or
// --master-addr): a writer that adds multi-node options then adds no rendezvous of its own.
bool HasTorchrunRendezvous(const std::vector<std::string>& command);

}  // namespace fulcrum
