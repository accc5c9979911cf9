// The HTML view of a serve-plan result: a self-contained page (no network access) with the
// scatter of time per output token vs $ per million output tokens (the Pareto front joined) and
// the table of the top candidates, built from plan/report.h's HTML pieces. Pure; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "serve/plan.h"

namespace fulcrum::serve {

struct ServePlanSummary {
  std::string model_name;
  Engine engine = Engine::kVllm;
  double parameters = 0;
  Precision precision = Precision::kBf16;
  int64_t input_len = 0, output_len = 0;
  double requests_per_second = 0;  // 0 = one instance per offer
  size_t top = 20;
};

std::string ServePlanHtml(const std::vector<ServeCandidate>& candidates,
                          const ServePlanSummary& summary);

}  // namespace fulcrum::serve
