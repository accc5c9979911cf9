// Views of one PlanResult: the text table of the top N (core/table.h), the JSON document (the
// contract of `fulcrum plan --json`, see README "fulcrum plan") and a self-contained HTML report
// (inline SVG Pareto scatter of time vs cost, per-candidate breakdowns; no network access).
// Pure functions of the result and the catalog it was planned on; thread-safe.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "catalog/catalog.h"
#include "plan/search.h"

namespace fulcrum::plan {

nlohmann::json PlanJson(const PlanResult& result, const catalog::Catalog& catalog);
std::string PlanTable(const PlanResult& result, const catalog::Catalog& catalog);
std::string PlanHtml(const PlanResult& result, const catalog::Catalog& catalog);

// The framework that runs a planned layout: workload::FrameworkName, except LoRA under Megatron
// conventions, which Megatron-LM has no code for and NeMo Megatron-Bridge runs on Megatron-Core
// ("megatron-bridge"; see PeftRunsLayout in search.cc for the sources).
std::string FrameworkLabel(const workload::Training& t);

// The pieces every HTML report is built from (plan, serve-plan): an inline SVG scatter on log-log
// axes with a joined front, and the self-contained page around a body (text escaping:
// fulcrum::HtmlEscape, core/html.h).
struct ScatterPoint {
  double x = 0, y = 0;     // data units (both axes log10; clamped to x_min / y_min)
  bool front = false;      // drawn large, blue
  bool highlight = false;  // drawn orange (e.g. the top N)
  std::string title;       // hover text
  std::string label;       // drawn beside the point when not empty
};
struct ScatterAxes {
  std::string aria_label, x_label, y_label;
  std::function<std::string(double)> x_tick, y_tick;  // label of a decade tick
  double x_min = 1e-3, y_min = 1e-2;
};
// `front`: indices into `points`, joined by a line in that order.
std::string ScatterSvg(const std::vector<ScatterPoint>& points, const std::vector<int>& front,
                       const ScatterAxes& axes);
// <!DOCTYPE html> ... <h1>title</h1> body ...: the one style sheet of the reports.
std::string HtmlPage(const std::string& title, const std::string& body);

// "tp2 pp1 dp4 z1 sel mb2" (vpp shown when > 1).
std::string LayoutLabel(const workload::Training& t);

// What a catalog-caveat warning rests on: " (offer price-unverified; provider terms-unverified)";
// "" where the offer, its GPU and its provider carry no caveat. plan and serve-plan warnings.
std::string CaveatDetail(const catalog::Offer& o, const catalog::Catalog& catalog);

}  // namespace fulcrum::plan
