#include "cli/plan_calibration.h"

#include <algorithm>
#include <sstream>

#include "core/input_error.h"
#include "core/parse.h"
#include "core/table.h"

namespace fulcrum::cli {
namespace {

using nlohmann::json;

json Optional(const std::optional<double>& value) { return value ? json(*value) : json(nullptr); }

// The interconnect of the job's offer: its catalog row, else any offer of the same GPU model and
// count (the catalog's rows of one GPU and count share it), else "unknown".
std::string InterconnectOf(const store::JobPlan& plan, const catalog::Catalog& catalog) {
  const catalog::Offer* same_class = nullptr;
  for (const catalog::Offer& o : catalog.offers()) {
    if (o.provider == plan.provider && o.instance_type == plan.instance_type) {
      return catalog::InterconnectLabel(o.interconnect);
    }
    if (same_class == nullptr && o.gpu == plan.gpu && o.gpu_count == plan.gpus_per_node) {
      same_class = &o;
    }
  }
  return same_class != nullptr ? catalog::InterconnectLabel(same_class->interconnect) : "unknown";
}

json OfferJson(const std::string& provider, const std::string& instance_type,
               std::optional<int> nodes, const std::string& pricing) {
  return {{"provider", provider},
          {"instance_type", instance_type},
          {"nodes", nodes ? json(*nodes) : json(nullptr)},
          {"pricing", pricing}};
}

json CandidateOffer(const plan::Candidate& c, const catalog::Catalog& catalog) {
  const catalog::Offer& o = catalog.offers()[c.offer];
  json j = OfferJson(o.provider, o.instance_type, c.nodes,
                     std::string(plan::PricingModelName(c.pricing)));
  j["rank"] = c.rank;
  j["step_seconds"] = c.layout.step.step_seconds;
  j["expected_usd"] = c.run.expected_usd;
  j["total_hours"] = c.run.total_seconds / 3600;
  return j;
}

// What the new first pick changes versus the job's plan, in words.
std::vector<std::string> Changes(const store::JobPlan& was, const json& pick) {
  std::vector<std::string> out;
  const std::string provider = pick["provider"], instance = pick["instance_type"];
  const std::string pricing = pick["pricing"];
  const int nodes = pick["nodes"];
  if (provider != was.provider || instance != was.instance_type) {
    out.push_back("another offer: " + was.provider + "/" + was.instance_type + " -> " + provider +
                  "/" + instance);
  }
  if (was.nodes && nodes != *was.nodes) {
    out.push_back(std::string(nodes > *was.nodes ? "more" : "fewer") +
                  " nodes: " + std::to_string(*was.nodes) + " -> " + std::to_string(nodes));
  }
  if (pricing != was.pricing) {
    out.push_back(pricing == "on_demand"
                      ? "on-demand for the rest: " + was.pricing + " -> on_demand"
                      : "pricing: " + was.pricing + " -> " + pricing);
  }
  if (out.empty()) out.push_back("none: the job's offer, node count and pricing stay the best");
  return out;
}

}  // namespace

Result<Calibration> ReadCalibration(const std::string& data_dir, const std::string& job_id,
                                    const catalog::Catalog& catalog) {
  FULCRUM_ASSIGN_OR_RETURN(store::JobsDb db,
                           store::JobsDb::OpenInDataDir(data_dir, /*read_only=*/true));
  FULCRUM_ASSIGN_OR_RETURN(std::optional<store::JobRecord> found, db.GetJob(job_id));
  ErrorDetail detail;
  detail.file = data_dir + "/jobs.db";
  detail.field = "--calibrate-from";
  if (!found) {
    FULCRUM_ASSIGN_OR_RETURN(std::vector<store::JobRecord> jobs, db.ListJobs());
    std::vector<std::string> names;
    for (const auto& j : jobs) names.push_back(j.id);
    detail.expected =
        "a job of this data dir (" + (names.empty() ? "none" : JoinNames(names)) + ")";
    detail.found = job_id;
    detail.nearest = NearestNames(job_id, names);
    return InputError(detail);
  }
  Calibration out;
  out.job = std::move(*found);
  const store::JobPlan& plan = out.job.plan;
  if (plan.gpu.empty() || !plan.gpus_per_node || !plan.step_seconds) {
    detail.expected = "a job run with --plan (its offer's hardware class and step time)";
    detail.found = "job '" + job_id + "' without a plan file";
    return InputError(detail, FoundIs::kDescription);
  }
  const std::optional<double> measured = out.job.measured.step_seconds;
  if (!measured || !(*measured > 0)) {
    detail.expected = "a job whose step time was measured (progress regex or heartbeat)";
    detail.found = "job '" + job_id + "' with no measured step time yet";
    return InputError(detail, FoundIs::kDescription);
  }
  plan::MeasuredFactors& f = out.factors;
  f.gpu = plan.gpu;
  f.gpus_per_node = *plan.gpus_per_node;
  f.interconnect = InterconnectOf(plan, catalog);
  f.step_time_factor = *measured / *plan.step_seconds;
  const std::optional<double> peak = out.job.measured.peak_bytes_per_gpu;
  if (peak && plan.peak_bytes_per_gpu && *plan.peak_bytes_per_gpu > 0) {
    f.memory_factor = *peak / *plan.peak_bytes_per_gpu;
    if (f.memory_factor < 1) {
      out.notes.push_back(
          "memory: the measured peak is below the plan's; not applied (a peak "
          "seen so far bounds the true peak from below)");
    }
  } else {
    const std::string why = out.job.measured.agent_reason;
    out.notes.push_back("memory: no measured GPU memory peak" +
                        (why.empty() ? std::string(" (no agent figures)") : " (" + why + ")") +
                        "; the estimator's memory is kept");
  }
  return out;
}

void ApplyCalibration(Calibration& c, double now, plan::PlanSpec& spec) {
  const store::JobRecord& job = c.job;
  const store::JobState state = store::EffectiveState(job);
  if (store::IsFinishedState(state) || !job.plan.total_steps || *job.plan.total_steps <= 0 ||
      !job.step || *job.step <= 0) {
    return;
  }
  const double done =
      std::min(1.0, static_cast<double>(*job.step) / static_cast<double>(*job.plan.total_steps));
  if (done >= 1) return;
  c.remaining_fraction = 1 - done;
  if (spec.tokens) *spec.tokens *= *c.remaining_fraction;
  if (spec.samples) *spec.samples *= *c.remaining_fraction;
  c.notes.push_back("work: the job is " + std::string(store::JobStateName(state)) + " at step " +
                    std::to_string(*job.step) + " of " + std::to_string(*job.plan.total_steps) +
                    ": planned the remaining " + FormatNumber(100 * *c.remaining_fraction, 0) +
                    " %");
  if (!spec.constraints.deadline_seconds && job.plan.deadline_at) {
    const double left = *job.plan.deadline_at - now;
    if (left > 0) {
      spec.constraints.deadline_seconds = left;
      c.notes.push_back("deadline: the job's own, " + FormatDuration(left) + " from now");
    } else {
      c.notes.push_back("deadline: the job's own has passed; planned without one");
    }
  }
}

json CalibrationJson(const Calibration& c, const plan::PlanResult& result,
                     const catalog::Catalog& catalog) {
  const store::JobPlan& plan = c.job.plan;
  const plan::MeasuredFactors& f = c.factors;
  json j;
  j["job"] = c.job.id;
  j["uid"] = c.job.uid();
  j["state"] = store::JobStateName(store::EffectiveState(c.job));
  j["hardware_class"] = {
      {"gpu", f.gpu}, {"gpus_per_node", f.gpus_per_node}, {"interconnect", f.interconnect}};
  j["planned_step_seconds"] = Optional(plan.step_seconds);
  j["measured_step_seconds"] = Optional(c.job.measured.step_seconds);
  j["step_time_factor"] = f.step_time_factor;
  j["planned_peak_bytes_per_gpu"] = Optional(plan.peak_bytes_per_gpu);
  j["measured_peak_bytes_per_gpu"] = Optional(c.job.measured.peak_bytes_per_gpu);
  j["memory_factor"] = std::max(1.0, f.memory_factor);
  j["applies_to"] = {{"step_time", "offers of the same GPU model, GPUs per node and interconnect"},
                     {"memory", "every offer"}};
  j["remaining_fraction"] = Optional(c.remaining_fraction);
  j["job_plan"] = OfferJson(plan.provider, plan.instance_type, plan.nodes, plan.pricing);
  j["job_plan"]["layout"] = plan.layout;
  j["pick"] = nullptr;
  j["job_offer_now"] = nullptr;
  j["changes"] = json::array();
  if (!result.candidates.empty()) {
    j["pick"] = CandidateOffer(result.candidates.front(), catalog);
    j["changes"] = Changes(plan, j["pick"]);
  }
  for (const plan::Candidate& cand : result.candidates) {
    const catalog::Offer& o = catalog.offers()[cand.offer];
    if (o.provider == plan.provider && o.instance_type == plan.instance_type &&
        cand.nodes == plan.nodes.value_or(cand.nodes) &&
        plan::PricingModelName(cand.pricing) == plan.pricing) {
      j["job_offer_now"] = CandidateOffer(cand, catalog);
      break;
    }
  }
  j["notes"] = c.notes;
  return j;
}

std::string CalibrationText(const Calibration& c, const plan::PlanResult& result,
                            const catalog::Catalog& catalog) {
  const json j = CalibrationJson(c, result, catalog);
  const json& hc = j["hardware_class"];
  std::ostringstream out;
  out << "Calibrated from job " << c.job.uid() << " (" << j["state"].get<std::string>() << ") on "
      << hc["gpu"].get<std::string>() << " x" << hc["gpus_per_node"].get<int>() << " "
      << hc["interconnect"].get<std::string>() << ":\n";
  out << "  step time  measured " << FormatNumber(j["measured_step_seconds"].get<double>(), 3)
      << " s vs planned " << FormatNumber(j["planned_step_seconds"].get<double>(), 3) << " s: x"
      << FormatNumber(c.factors.step_time_factor, 2)
      << " on offers of that GPU model, GPUs per node and interconnect (others keep the "
         "estimate)\n";
  out << "  memory     x" << FormatNumber(j["memory_factor"].get<double>(), 2)
      << " on every offer\n";
  const json& was = j["job_plan"];
  out << "  job's plan " << was["provider"].get<std::string>() << "/"
      << was["instance_type"].get<std::string>() << " x"
      << (was["nodes"].is_null() ? std::string("?") : std::to_string(was["nodes"].get<int>()))
      << " " << was["pricing"].get<std::string>() << "\n";
  if (!j["job_offer_now"].is_null()) {
    const json& now = j["job_offer_now"];
    out << "  that offer now: rank " << now["rank"].get<int>() << ", step "
        << FormatNumber(now["step_seconds"].get<double>(), 3) << " s, "
        << FormatUsd(now["expected_usd"].get<double>()) << "\n";
  }
  for (const json& change : j["changes"])
    out << "  change     " << change.get<std::string>() << "\n";
  for (const json& note : j["notes"]) out << "  note       " << note.get<std::string>() << "\n";
  out << "\n";
  return out.str();
}

}  // namespace fulcrum::cli
