// The model, hardware and training flags shared by `fulcrum estimate` and `fulcrum fit` (and any
// command that evaluates one configuration): registers them on a CLI11 subcommand, writing into
// an estimate::EstimateRequest that outlives the parse. Help texts state units and defaults.
#pragma once

#include "estimate/estimate.h"

namespace CLI {
class App;
}

namespace fulcrum::cli {

void AddWorkloadOptions(CLI::App* cmd, estimate::EstimateRequest& request);

}  // namespace fulcrum::cli
