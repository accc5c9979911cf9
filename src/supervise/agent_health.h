// Asks a local fulcrum agent (GET <url>/v1/gpus, docs/API.md) which GPUs are unfit for a restart:
// those whose last XID is 79 ("GPU has fallen off the bus"; NVIDIA Xid catalog,
// https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html). No agent, or an answer
// that cannot be read, means "no opinion" (an empty list): the supervisor works without an agent.
// Thread-compatible.
#pragma once

#include <string>
#include <vector>

namespace fulcrum::supervise {

std::vector<int> UnhealthyGpusFromAgent(const std::string& agent_url, double timeout_seconds);

}  // namespace fulcrum::supervise
