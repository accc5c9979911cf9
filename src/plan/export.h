// Writes a planned candidate as a launch file for the tools teams already use: a SkyPilot task
// YAML (resources: cloud, region, instance_type, accelerators "H100:8", use_spot; num_nodes;
// run: the user's command under `fulcrum run` with the planned checkpoint interval) or a dstack
// task configuration (nodes, resources.gpu, spot_policy, backends, regions, commands). Pure
// text generation; thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "catalog/catalog.h"
#include "core/status.h"
#include "plan/search.h"

namespace fulcrum::plan {

enum class ExportFormat { kSkypilot, kDstack };

Result<ExportFormat> ParseExportFormat(std::string_view text);  // "skypilot" | "dstack"

// The accelerator name the launchers use: the shortest of the GPU's name and aliases
// ("H100-SXM5-80GB" -> "H100", "A100-SXM4-80GB" -> "A100-80GB").
std::string AcceleratorName(const catalog::Catalog& catalog, const std::string& gpu);

// Renders candidate `pick` (1-based rank). InvalidInput when there is no such rank.
Result<std::string> ExportCandidate(const PlanResult& result, const catalog::Catalog& catalog,
                                    int pick, ExportFormat format);

}  // namespace fulcrum::plan
