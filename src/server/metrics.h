// Prometheus text exposition (format 0.0.4) of the latest snapshot: one `fulcrum_<metric>`
// family per telemetry metric with labels gpu, uuid, model, hostname; a GPU whose field is
// unknown has no series for it (never 0). Plus the agent's own `fulcrum_agent_*` counters.
// Pure function, thread-safe.
#pragma once

#include <string>

#include "server/agent_state.h"
#include "telemetry/gpu_sample.h"

namespace fulcrum::server {

std::string RenderMetrics(const telemetry::GpuSnapshot& snapshot, const std::string& hostname,
                          const AgentCounters& counters, const IdleStatus& idle);

// Escapes a label value: backslash, double quote and newline.
std::string EscapeLabelValue(const std::string& value);

}  // namespace fulcrum::server
