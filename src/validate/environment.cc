// The environment phase: `fulcrum doctor` and a short `fulcrum bench` (children of this binary,
// with the same --source and --sim-* flags), judged against the datasheet and, with --expect,
// against what the plan assumed.
#include <nlohmann/json.hpp>

#include "core/subprocess.h"
#include "core/table.h"
#include "validate/validation.h"

namespace fulcrum::validate {

void ScanBenchVerdicts(const nlohmann::json& j, const std::string& where,
                       std::vector<std::string>& failures) {
  if (j.is_object()) {
    if (j.contains("verdict") && j["verdict"].is_string()) {
      const std::string v = j["verdict"].get<std::string>();
      if (v == "low" || v == "unstable") {
        std::string figure = "bench " + where + ": " + v;
        if (j.contains("percent_of_spec") && j["percent_of_spec"].is_number())
          figure += " (" + FormatNumber(j["percent_of_spec"].get<double>(), 0) + " % of spec)";
        failures.push_back(figure);
      }
    }
    for (const auto& [key, value] : j.items())
      ScanBenchVerdicts(value, where.empty() ? key : where + "." + key, failures);
  } else if (j.is_array()) {
    for (size_t i = 0; i < j.size(); ++i) {
      std::string name = where + "[" + std::to_string(i) + "]";
      if (j[i].is_object() && j[i].contains("dtype") && j[i]["dtype"].is_string())
        name = where + " " + j[i]["dtype"].get<std::string>();
      ScanBenchVerdicts(j[i], name, failures);
    }
  }
}

std::vector<std::string> Validation::SourceArgs() const {
  std::vector<std::string> args = {"--source", options_.source};
  if (options_.source == "sim") {
    args.insert(args.end(),
                {"--sim-gpu", options_.sim_gpu, "--sim-gpus", std::to_string(options_.sim_gpus),
                 "--sim-fraction", FormatNumber(options_.sim_fraction, 6), "--sim-swing",
                 FormatNumber(options_.sim_swing, 6)});
    if (!options_.sim_scenario.empty())
      args.insert(args.end(), {"--sim-scenario", options_.sim_scenario});
  }
  return args;
}

namespace {

// The bench against what the plan assumed: its GPU model, at least its GPUs per node, and the
// GEMM in its precision near the datasheet (the planner's step time assumes the datasheet peak
// times its MFU, so a GEMM at 80 % of spec makes every step about 25 % slower than planned).
void CompareWithPlan(const nlohmann::json& bench, const Result<supervise::PlannedRun>& plan,
                     PhaseResult& phase, std::vector<std::string>& failures) {
  if (!plan.ok()) {
    failures.push_back(plan.status().message());
    return;
  }
  const std::string& planned_gpu = plan->gpu;
  const int planned_gpus = plan->gpus_per_node;
  const std::string precision = plan->precision.empty() ? "bf16" : plan->precision;
  const auto& gpu = bench.contains("gpu") ? bench["gpu"] : nlohmann::json();
  if (!gpu.is_object() || !gpu.contains("datasheet_gpu")) {
    phase.reasons.push_back("--expect: no GPU figures to compare with the plan");
    return;
  }
  const std::string found =
      gpu["datasheet_gpu"].is_string() ? gpu["datasheet_gpu"].get<std::string>() : "";
  const int count = gpu.contains("device") ? gpu["device"].value("gpu_count", 0) : 0;
  nlohmann::json& m = phase.metrics["expect"];
  m = {{"plan_gpu", planned_gpu},
       {"plan_gpus_per_node", planned_gpus},
       {"gpu", found},
       {"gpu_count", count}};
  if (!planned_gpu.empty() && found != planned_gpu)
    failures.push_back("the plan assumed " + planned_gpu + ", this server has " + found);
  if (planned_gpus > 0 && count < planned_gpus) {
    failures.push_back("the plan assumed " + std::to_string(planned_gpus) +
                       " GPUs per node, this server has " + std::to_string(count));
  }
  for (const auto& g : gpu.value("gemm", nlohmann::json::array())) {
    if (g.value("dtype", "") != precision || !g.contains("percent_of_spec") ||
        !g["percent_of_spec"].is_number())
      continue;
    const double percent = g["percent_of_spec"].get<double>();
    m["gemm_percent_of_spec"] = percent;
    if (percent < 90) {
      failures.push_back("the plan's step time assumes the datasheet's " + precision +
                         " GEMM; this server delivers " + FormatNumber(percent, 0) +
                         " % of it (steps about " + FormatNumber(100 / percent * 100 - 100, 0) +
                         " % slower than planned)");
    }
  }
}

// doctor's compatibility verdict (nodecheck/compat.h): fail fails the phase with its fix;
// minor-version and forward-compat are warnings.
void ScanCompat(const nlohmann::json& compat, PhaseResult& phase,
                std::vector<std::string>& failures) {
  if (!compat.is_object()) return;
  const std::string verdict = compat.value("verdict", "");
  phase.metrics["compat"] = compat;
  std::string reason = "doctor compat: " + verdict;
  if (compat.contains("reasons") && compat["reasons"].is_array() && !compat["reasons"].empty() &&
      compat["reasons"][0].is_string())
    reason += ": " + compat["reasons"][0].get<std::string>();
  if (compat.contains("fix") && compat["fix"].is_string())
    reason += "; fix: " + compat["fix"].get<std::string>();
  if (verdict == "fail")
    failures.push_back(reason);
  else if (verdict != "ok")
    phase.reasons.push_back(reason + " (warning)");
}

}  // namespace

PhaseResult Validation::Environment() {
  PhaseResult phase;
  phase.name = "environment";
  std::vector<std::string> failures;
  CaptureOptions capture;
  capture.timeout_seconds = 300;
  std::vector<std::string> global = {options_.fulcrum_binary};
  if (!options_.catalog_dir.empty())
    global.insert(global.end(), {"--catalog", options_.catalog_dir});
  std::vector<std::string> doctor_argv = global;
  doctor_argv.insert(doctor_argv.end(), {"doctor", "--json", "--checkpoint-dir", work_dir_});
  const std::vector<std::string> source = SourceArgs();
  doctor_argv.insert(doctor_argv.end(), source.begin(), source.end());
  Say("environment: fulcrum doctor --source " + options_.source);
  auto doctor = RunCapture(doctor_argv, capture);
  // Exit 3: the checks ran and the compatibility verdict is fail (read from the JSON below).
  if (!doctor.ok() || (doctor->exit_code != 0 && doctor->exit_code != 3)) {
    failures.push_back("fulcrum doctor did not run: " +
                       (doctor.ok() ? doctor->err : doctor.status().message()));
  } else {
    auto json = nlohmann::json::parse(doctor->out, nullptr, false);
    int counts[4] = {0, 0, 0, 0};  // ok, warn, fail, skipped
    for (const auto& check : json.value("checks", nlohmann::json::array())) {
      const std::string status = check.value("status", "");
      const std::string line =
          "doctor " + check.value("name", "") + ": " + check.value("finding", "");
      if (status == "fail") {
        ++counts[2];
        failures.push_back(line);
      } else if (status == "warn") {
        ++counts[1];
        phase.reasons.push_back(line + " (warning)");
      } else {
        ++counts[status == "ok" ? 0 : 3];
      }
    }
    phase.metrics["doctor"] = {
        {"ok", counts[0]}, {"warn", counts[1]}, {"fail", counts[2]}, {"skipped", counts[3]}};
    ScanCompat(json.value("compat", nlohmann::json()), phase, failures);
  }
  Say("environment: fulcrum bench --quick --source " + options_.source);
  std::vector<std::string> bench_argv = global;
  bench_argv.insert(bench_argv.end(),
                    {"bench", "--quick", "--json", "--checkpoint-dir", work_dir_});
  bench_argv.insert(bench_argv.end(), source.begin(), source.end());
  capture.timeout_seconds = 900;
  auto bench = RunCapture(bench_argv, capture);
  if (!bench.ok() || bench->exit_code != 0) {
    failures.push_back("fulcrum bench did not run: " +
                       (bench.ok() ? bench->err : bench.status().message()));
  } else {
    auto json = nlohmann::json::parse(bench->out, nullptr, false);
    if (json.is_object()) {
      phase.metrics["bench"] = json;
      ScanBenchVerdicts(json, "", failures);
      if (json.contains("gpu_skipped_reason") && json["gpu_skipped_reason"].is_string()) {
        // A rented GPU server whose GPU cannot be measured is not ready for a training job.
        failures.push_back(
            "no GPU measured: " + json["gpu_skipped_reason"].get<std::string>() +
            (options_.source == "nvml" ? " (on a machine without GPUs: --source sim)" : ""));
      }
      if (plan_) CompareWithPlan(json, *plan_, phase, failures);
    } else {
      failures.push_back("fulcrum bench printed no JSON: " + bench->err);
    }
  }
  phase.verdict = failures.empty() ? Verdict::kPass : Verdict::kFail;
  if (failures.empty()) {
    phase.reasons.insert(phase.reasons.begin(),
                         "doctor found no failure; bench figures within their datasheet" +
                             std::string(options_.expect_plan.empty() ? "" : " and the plan"));
  } else {
    phase.reasons.insert(phase.reasons.begin(), failures.begin(), failures.end());
  }
  return phase;
}

}  // namespace fulcrum::validate
