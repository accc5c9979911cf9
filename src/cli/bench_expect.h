// `fulcrum bench --expect plan.json [--pick N]` / `--offer PROVIDER:INSTANCE`: what the plan
// assumed of the node, as nodecheck::NodeExpectation, from the plan file (read with the one
// plan-file reader, supervise/plan_file.h) or a catalog offer, and the planner's own hardware
// model (estimate::HardwareFor, plan::LoadCostAssumptions).
#pragma once

#include <string>

#include "catalog/catalog.h"
#include "core/status.h"
#include "nodecheck/acceptance.h"

namespace fulcrum::cli {

// Candidate of rank `pick` of `path`. Errors name the file and field (exit 2).
Result<nodecheck::NodeExpectation> ExpectationFromPlan(const std::string& path, int pick,
                                                       const catalog::Catalog& cat,
                                                       const std::string& catalog_dir);
// "PROVIDER:INSTANCE" (e.g. nebius:gpu-h100-sxm_8gpu-128vcpu-1600gb), planned in bf16.
Result<nodecheck::NodeExpectation> ExpectationFromOffer(const std::string& provider_instance,
                                                        const catalog::Catalog& cat,
                                                        const std::string& catalog_dir);

}  // namespace fulcrum::cli
