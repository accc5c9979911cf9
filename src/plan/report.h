// Views of one PlanResult: the text table of the top N (core/table.h), the JSON document (the
// contract of `fulcrum plan --json`, see README "fulcrum plan") and a self-contained HTML report
// (inline SVG Pareto scatter of time vs cost, per-candidate breakdowns; no network access).
// Pure functions of the result and the catalog it was planned on; thread-safe.
#pragma once

#include <string>

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

// "tp2 pp1 dp4 z1 sel mb2" (vpp shown when > 1).
std::string LayoutLabel(const workload::Training& t);

}  // namespace fulcrum::plan
