// Prometheus text exposition (format 0.0.4) of the latest snapshot. Under fulcrum's names
// (MetricsNames::kFulcrum): one `fulcrum_<metric>` family per telemetry metric with labels gpu,
// uuid, model, hostname, plus `fulcrum_gpu_xid_errors_total{xid}` and `fulcrum_gpu_info`. Under
// dcgm-exporter's names (kDcgm): its DCGM_FI_* families, labels and units (telemetry::
// DcgmMetrics()); kBoth renders both. A GPU whose field is unknown has no series for it (never
// 0). Plus the agent's own `fulcrum_agent_*` counters in every mode. Pure function, thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "core/status.h"
#include "server/agent_state.h"
#include "telemetry/gpu_sample.h"

namespace fulcrum::server {

enum class MetricsNames { kFulcrum, kDcgm, kBoth };
// "fulcrum" | "dcgm" | "both"; anything else is kInvalidInput naming the accepted values.
Result<MetricsNames> ParseMetricsNames(std::string_view text);

std::string RenderMetrics(const telemetry::GpuSnapshot& snapshot, const std::string& hostname,
                          const AgentCounters& counters, const IdleStatus& idle,
                          MetricsNames names = MetricsNames::kFulcrum);

// Escapes a label value: backslash, double quote and newline.
std::string EscapeLabelValue(const std::string& value);

}  // namespace fulcrum::server
