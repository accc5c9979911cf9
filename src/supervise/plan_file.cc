#include "supervise/plan_file.h"

#include <cmath>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/text_file.h"

namespace fulcrum::supervise {
namespace {

using nlohmann::json;

std::optional<double> Number(const json& object, const char* key) {
  if (!object.is_object()) return std::nullopt;
  auto it = object.find(key);
  if (it == object.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

Status PlanError(const std::string& path, const std::string& field, const std::string& expected,
                 const std::string& found) {
  return Status::InvalidInput(path + ": " + field + ": expected " + expected + ", found " + found)
      .WithDetail({path, std::nullopt, field, expected, found, {}});
}

std::string Layout(const json& c) {
  const json& par = c.value("parallel", json::object());
  std::ostringstream out;
  out << c.value("provider", "?") << "/" << c.value("instance_type", "?") << " x"
      << c.value("nodes", 1) << " " << c.value("pricing", "") << ": tp" << par.value("tp", 1)
      << " pp" << par.value("pp", 1) << " dp" << par.value("dp", 1) << " zero"
      << par.value("zero", 0) << " mb" << par.value("micro_batch", 1) << " ("
      << par.value("framework", "?") << ")";
  return out.str();
}

}  // namespace

Result<PlannedRun> ParsePlanJson(const std::string& text, const std::string& path, int pick) {
  json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    return PlanError(path, "(file)", "the JSON of fulcrum plan --json", "text that is not JSON");
  }
  auto candidates = doc.find("candidates");
  if (candidates == doc.end() || !candidates->is_array()) {
    return PlanError(path, "candidates", "an array (the output of fulcrum plan --json)", "none");
  }
  const json* chosen = nullptr;
  for (const json& c : *candidates) {
    if (c.is_object() && c.value("rank", 0) == pick) chosen = &c;
  }
  if (chosen == nullptr) {
    return PlanError(path, "--pick", "a rank from 1 to " + std::to_string(candidates->size()),
                     std::to_string(pick));
  }
  const json& c = *chosen;
  const json& time = c.value("time", json::object());
  PlannedRun out;
  store::JobPlan& plan = out.plan;
  plan.layout = Layout(c);
  plan.provider = c.value("provider", "");
  plan.instance_type = c.value("instance_type", "");
  plan.gpu = c.value("gpu", "");
  plan.pricing = c.value("pricing", "");
  if (auto n = Number(c, "gpus_per_node"); n && *n >= 1) plan.gpus_per_node = static_cast<int>(*n);
  if (auto n = Number(c, "nodes"); n && *n >= 1) plan.nodes = static_cast<int>(*n);
  plan.step_seconds = Number(time, "step_seconds");
  if (!plan.step_seconds || *plan.step_seconds <= 0) {
    return PlanError(path, "candidates[rank " + std::to_string(pick) + "].time.step_seconds",
                     "a positive number", "none");
  }
  plan.step_seconds_p90 = Number(time, "step_seconds_p90");
  plan.total_hours = Number(time, "total_hours");
  plan.total_hours_p90 = Number(time, "p90_hours");
  plan.interruptions = Number(time, "expected_interruptions");
  plan.checkpoint_interval_seconds = Number(time, "checkpoint_interval_seconds");
  plan.peak_bytes_per_gpu = Number(c.value("memory", json::object()), "peak_bytes_per_gpu");
  const json& cost = c.value("cost", json::object());
  plan.cost_usd = Number(cost, "expected_usd");
  plan.cost_p90_usd = Number(cost, "p90_usd");
  out.usd_per_hour = Number(cost, "usd_per_hour");
  out.provider = c.value("provider", "");
  out.instance_type = c.value("instance_type", "");
  out.region = c.value("region", "");
  out.gpu = c.value("gpu", "");
  out.precision = c.value("parallel", json::object()).value("precision", "");
  out.gpus_per_node = c.value("gpus_per_node", 0);
  // The spec's limits: absent in plans written before them, null where the spec had none.
  const json& limits = doc.value("constraints", json::object());
  for (auto [key, field] : {std::pair{"deadline_seconds", &out.deadline_seconds},
                            std::pair{"budget_usd", &out.budget_usd}}) {
    if (!limits.is_object() || !limits.contains(key) || limits[key].is_null()) continue;
    *field = Number(limits, key);
    if (!*field || !(**field > 0) || !std::isfinite(**field)) {
      return PlanError(path, std::string("constraints.") + key, "a positive number or null",
                       limits[key].dump());
    }
  }
  // Work per step: global_batch sequences of seq_len tokens (units "tokens"), or samples.
  const json& work = doc.value("work", json::object());
  const std::optional<double> amount = Number(work, "amount");
  const std::optional<double> batch = Number(c.value("parallel", json::object()), "global_batch");
  const std::optional<double> seq_len = Number(work, "seq_len");
  const bool tokens = work.value("units", "") == "tokens";
  if (batch && *batch > 0) {
    if (tokens && seq_len) plan.tokens_per_step = *batch * *seq_len;
    const double per_step = tokens && seq_len ? *batch * *seq_len : *batch;
    if (amount && *amount > 0) {
      plan.total_steps = static_cast<int64_t>(std::ceil(*amount / per_step));
    }
  }
  return out;
}

Result<PlannedRun> ReadPlanFile(const std::string& path, int pick) {
  FULCRUM_ASSIGN_OR_RETURN(std::string text, ReadTextFile(path, "a `fulcrum plan --json` result"));
  return ParsePlanJson(text, path, pick);
}

}  // namespace fulcrum::supervise
