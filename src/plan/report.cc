#include "plan/report.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/html.h"
#include "core/parse.h"
#include "core/table.h"
#include "plan/host.h"
#include "plan/pitfalls.h"
#include "plan/ranking.h"

namespace fulcrum::plan {
namespace {

using nlohmann::json;

std::string RecomputeShort(workload::Recompute r) {
  switch (r) {
    case workload::Recompute::kNone:
      return "none";
    case workload::Recompute::kSelective:
      return "sel";
    case workload::Recompute::kFull:
      return "full";
  }
  return "?";
}

json Finite(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

json Round(double v, int digits) {
  if (!std::isfinite(v)) return nullptr;
  const double scale = std::pow(10.0, digits);
  return std::round(v * scale) / scale;
}

// What time.goodput_fraction is made of.
std::string_view GoodputSource(const RunCost& run) {
  return run.goodput_published
             ? "hardware interruptions (arXiv 2407.21783 sec. 3.3.4, Table 5: restart, checkpoint "
               "load, work since the last checkpoint) plus the losses of published runs beyond "
               "them, fitted on catalog/goodput.csv (end-to-end / steady-state ratios, each row "
               "sourced)"
             : "hardware interruptions only (arXiv 2407.21783 sec. 3.3.4, Table 5): no "
               "catalog/goodput.csv";
}

json CandidateJson(const Candidate& c, const PlanResult& r, const catalog::Catalog& catalog) {
  const catalog::Offer& o = catalog.offers()[c.offer];
  const workload::Training& t = c.layout.training;
  const estimate::MemoryBreakdown& m = c.layout.memory;
  const estimate::StepTime& st = c.layout.step;
  json j;
  j["rank"] = c.rank;
  j["provider"] = o.provider;
  j["instance_type"] = o.instance_type;
  j["region"] = o.region;
  j["gpu"] = o.gpu;
  j["gpu_count"] = o.gpu_count * c.nodes;
  j["gpus_per_node"] = o.gpu_count;
  j["nodes"] = c.nodes;
  j["pricing"] = std::string(PricingModelName(c.pricing));
  j["parallel"] = {{"tp", t.tp},
                   {"pp", t.pp},
                   {"dp", t.dp},
                   {"cp", t.cp},
                   {"ep", t.ep},
                   {"zero", t.zero_stage},
                   {"recompute", std::string(workload::RecomputeName(t.recompute))},
                   {"micro_batch", t.micro_batch},
                   {"vpp", t.vpp},
                   {"sequence_parallel", t.sequence_parallel},
                   {"global_batch", t.global_batch},
                   {"framework", FrameworkLabel(t)},
                   {"precision", std::string(workload::PrecisionName(c.precision))}};
  if (c.warnings & kPitfallGlobalBatchChanged) {
    j["parallel"]["spec_global_batch"] = r.spec.training.global_batch;
  }
  if (t.pp > 1 && r.model.layers % t.pp != 0) {
    // Uneven stages: what Megatron-LM's --decoder-first-pipeline-num-layers /
    // --decoder-last-pipeline-num-layers must be given.
    const workload::StageLayers stages = workload::PipelineStageLayers(r.model, t);
    j["parallel"]["stage_layers"] = {
        {"first", stages.first}, {"middle", stages.middle}, {"last", stages.last}};
  }
  const estimate::ResumeMemory& resume = c.layout.resume;
  j["memory"] = {{"peak_bytes_per_gpu", Round(m.peak_bytes_per_gpu, 0)},
                 {"peak_at_resume_bytes_per_gpu", Round(resume.peak_at_resume_bytes_per_gpu, 0)},
                 {"checkpoint_format", std::string(workload::CheckpointFormatName(resume.format))},
                 {"fit_bound", estimate::FitBoundName(m, resume)},
                 {"capacity_bytes", Round(c.capacity_bytes, 0)},
                 {"used_fraction", Round(m.peak_bytes_per_gpu / c.capacity_bytes, 4)},
                 {"headroom_fraction", Round(c.layout.headroom_fraction, 4)},
                 {"weights_bytes", Round(m.weights_bytes, 0)},
                 {"gradients_bytes", Round(m.gradients_bytes, 0)},
                 {"optimizer_bytes", Round(m.optimizer_bytes, 0)},
                 {"activations_bytes", Round(m.activations_bytes, 0)},
                 {"other_bytes", Round(m.other_bytes, 0)}};
  j["time"] = {
      {"tokens_per_second", Round(c.work_units_per_second, 1)},
      {"unit", r.units_are_samples ? "samples" : "tokens"},
      {"total_hours", Round(c.run.total_seconds / 3600.0, 3)},
      {"p90_hours", Round(c.run.p90_seconds / 3600.0, 3)},
      {"step_seconds", Round(st.step_seconds, 4)},
      {"step_seconds_p10", Round(st.step_seconds * c.band.step_p10_ratio, 4)},
      {"step_seconds_p90", Round(st.step_seconds * c.band.step_p90_ratio * c.network_p90_ratio, 4)},
      {"uncertainty_family", std::string(c.band.family)},
      {"tokens_per_second_per_gpu", Round(st.tokens_per_second_per_gpu, 1)},
      {"mfu", Round(st.mfu, 4)},
      {"hfu", Round(st.hfu, 4)},
      {"breakdown",
       {{"compute_seconds", Round(st.compute_seconds, 4)},
        {"communication_seconds", Round(st.communication_seconds, 4)},
        {"bubble_seconds", Round(st.bubble_seconds, 4)},
        {"exposed_seconds", Round(st.exposed_seconds, 4)}}},
      {"checkpoint_interval_seconds", c.run.checkpoint_interval_seconds > 0
                                          ? Round(c.run.checkpoint_interval_seconds, 0)
                                          : json(nullptr)},
      {"goodput_fraction", Round(c.run.goodput_fraction, 4)},
      {"goodput_source", std::string(GoodputSource(c.run))}};
  const catalog::Provider* p = catalog.FindProvider(o.provider);
  j["cost"] = {{"expected_usd", Round(c.run.expected_usd, 2)},
               {"p90_usd", Round(c.run.p90_usd, 2)},
               {"usd_per_hour", Finite(c.run.expected_usd > 0 && c.run.total_seconds > 0
                                           ? *HourlyPriceUsd(o, p, c.pricing) * c.nodes
                                           : NAN)},
               {"risk_adjusted", c.run.risk_adjusted},
               {"spot_policy",
                c.run.spot_policy.empty() ? json(nullptr) : json(std::string(c.run.spot_policy))},
               {"deadline_met_fraction",
                IsSpot(c.pricing) ? json(c.run.deadline_met_fraction) : json(nullptr)},
               {"reserved_commitment", c.run.reserved_commitment},
               {"breakdown",
                {{"compute_usd", Round(c.run.breakdown.compute_usd, 2)},
                 {"storage_usd", Round(c.run.breakdown.storage_usd, 2)},
                 {"egress_usd", Round(c.run.breakdown.egress_usd, 2)},
                 {"failures_usd", Round(c.run.breakdown.failures_usd, 2)},
                 {"restarts_usd", Round(c.run.breakdown.restarts_usd, 2)},
                 {"checkpoint_usd", Round(c.run.breakdown.checkpoint_usd, 2)},
                 {"commitment_usd", Round(c.run.breakdown.commitment_usd, 2)}}}};
  j["time"]["expected_interruptions"] = Round(c.run.expected_interruptions, 4);
  j["miss_factor"] = c.meets_constraints ? json(nullptr) : Round(c.miss_factor, 4);
  j["near_miss"] =
      !c.meets_constraints && c.miss_factor <= r.nearest_miss_factor * (1 + kNearMissTolerance);
  j["score"] = {{"total", Round(c.score.total, 4)},
                {"stability", Round(c.score.stability, 4)},
                {"performance", Round(c.score.performance, 4)},
                {"cost", Round(c.score.cost, 4)},
                {"usability", Round(c.score.usability, 4)},
                {"support", Round(c.score.support, 4)},
                {"unknown", UnknownAttributeNames(c.score.unknown)}};
  const HostNeeds host = HostNeedsOf(o, r.model, t, c.precision, r.spec.command);
  j["host"] = {{"ram_needed_gib", Round(host.ram_needed_gib, 1)},
               {"ram_gib", host.ram_gib ? json(*host.ram_gib) : json(nullptr)},
               {"vcpus_needed", host.vcpus_needed},
               {"vcpus", host.vcpus ? json(*host.vcpus) : json(nullptr)}};
  j["warnings"] = PitfallCodes(c.warnings);
  j["unconfirmed"] = UnconfirmedNames(c.unconfirmed);
  j["meets_constraints"] = c.meets_constraints;
  j["pareto"] = c.pareto;
  return j;
}

std::string GpuLabel(const Candidate& c, const catalog::Offer& o) {
  return c.nodes > 1 ? fmt::format("{}x{} {}", c.nodes, o.gpu_count, o.gpu)
                     : fmt::format("{} {}", o.gpu_count, o.gpu);
}

std::string Rate(double v) {
  if (v >= 1e6) return fmt::format("{:.2f}M", v / 1e6);
  if (v >= 1e3) return fmt::format("{:.1f}k", v / 1e3);
  return fmt::format("{:.0f}", v);
}

std::string RankedByLine(const PlanResult& r) {
  std::string how;
  // ReferenceOf falls back to every candidate when none meets the constraints.
  const bool any_feasible = std::any_of(r.candidates.begin(), r.candidates.end(),
                                        [](const Candidate& c) { return c.meets_constraints; });
  // ReferenceOf leaves out unverified prices where unconfirmed rows rank last.
  const bool any_confirmed_feasible =
      r.spec.unconfirmed_last &&
      std::any_of(r.candidates.begin(), r.candidates.end(),
                  [&](const Candidate& c) { return SetsReference(c, r.spec); });
  switch (r.objective) {
    case Objective::kBalanced:
      how = fmt::format(
          "weighted score; performance saturates at a P90 of {}, P90 cost relative to the "
          "cheapest {} P90 {}",
          FormatDuration(r.reference.saturation_seconds),
          !any_feasible            ? "(none meets the constraints)"
          : any_confirmed_feasible ? "feasible confirmed-price"
                                   : "feasible",
          FormatUsd(std::max(r.reference.cheapest_usd, r.reference.cheapest_p90_usd)));
      break;
    case Objective::kCheapest:
      how = "expected cost, P90 cost breaks ties";
      break;
    case Objective::kFastest:
      how = "P90 time";
      break;
  }
  const size_t shown = std::min(r.candidates.size(), static_cast<size_t>(std::max(1, r.spec.top)));
  const bool misses_shown = std::any_of(r.candidates.begin(), r.candidates.begin() + shown,
                                        [](const Candidate& c) { return !c.meets_constraints; });
  std::string misses;
  if (misses_shown) {
    misses = fmt::format(
        ", then the misses (miss = the larger of P90 / deadline and cost / budget; nearest "
        "{:.3f}): those within {:.0f} % of the nearest by {}, then the rest by how far they miss",
        r.nearest_miss_factor, 100 * kNearMissTolerance,
        r.objective == Objective::kFastest    ? "P90 time"
        : r.objective == Objective::kCheapest ? "expected cost"
                                              : "P90 cost");
  }
  return fmt::format(
      "ranked by: {} ({}); candidates meeting the deadline (P90) and the budget "
      "first{}\n",
      ObjectiveName(r.objective), how, misses);
}

size_t TopCount(const PlanResult& r) {
  return std::min(r.candidates.size(), static_cast<size_t>(std::max(1, r.spec.top)));
}

// The kind of a caveat ("price-unverified" of "price-unverified: ...").
std::string CaveatKind(const std::string& caveat) { return caveat.substr(0, caveat.find(':')); }

}  // namespace

// What a catalog-caveat warning rests on: " (offer price-unverified; provider terms-unverified)".
std::string CaveatDetail(const catalog::Offer& o, const catalog::Catalog& catalog) {
  std::vector<std::string> parts;
  if (!o.caveat.empty()) parts.push_back("offer " + CaveatKind(o.caveat));
  if (const catalog::Gpu* g = catalog.FindGpu(o.gpu); g != nullptr && !g->caveat.empty()) {
    parts.push_back("GPU " + CaveatKind(g->caveat));
  }
  if (const catalog::Provider* p = catalog.FindProvider(o.provider);
      p != nullptr && !p->caveat.empty()) {
    parts.push_back("provider " + CaveatKind(p->caveat));
  }
  std::string out;
  for (const std::string& part : parts) out += (out.empty() ? " (" : "; ") + part;
  return out.empty() ? out : out + ")";
}

std::string FrameworkLabel(const workload::Training& t) {
  if (t.framework == workload::Framework::kMegatron && t.method != workload::Method::kFull) {
    return "megatron-bridge";
  }
  return std::string(workload::FrameworkName(t.framework));
}

std::string ScatterSvg(const std::vector<ScatterPoint>& points, const std::vector<int>& front,
                       const ScatterAxes& axes) {
  double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
  for (const ScatterPoint& p : points) {
    const double x = std::log10(std::max(p.x, axes.x_min));
    const double y = std::log10(std::max(p.y, axes.y_min));
    x0 = std::min(x0, x), x1 = std::max(x1, x), y0 = std::min(y0, y), y1 = std::max(y1, y);
  }
  if (!(x1 > x0)) x0 -= 0.5, x1 += 0.5;
  if (!(y1 > y0)) y0 -= 0.5, y1 += 0.5;
  const double w = 720, h = 420, left = 80, bottom = 50, pad = 20;
  auto px = [&](double x) {
    return left + (std::log10(std::max(x, axes.x_min)) - x0) / (x1 - x0) * (w - left - pad);
  };
  auto py = [&](double y) {
    return h - bottom - (std::log10(std::max(y, axes.y_min)) - y0) / (y1 - y0) * (h - bottom - pad);
  };
  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} "
      "{1}\" role=\"img\" aria-label=\"{9}\">\n"
      "<rect x=\"0\" y=\"0\" width=\"{0}\" height=\"{1}\" fill=\"#fff\"/>\n"
      "<line x1=\"{2}\" y1=\"{3}\" x2=\"{4}\" y2=\"{3}\" stroke=\"#333\"/>\n"
      "<line x1=\"{2}\" y1=\"{5}\" x2=\"{2}\" y2=\"{3}\" stroke=\"#333\"/>\n"
      "<text x=\"{6}\" y=\"{7}\" text-anchor=\"middle\">{10}</text>\n"
      "<text x=\"16\" y=\"{8}\" transform=\"rotate(-90 16 {8})\" text-anchor=\"middle\">{11}"
      "</text>\n",
      w, h, left, h - bottom, w - pad, pad, (w + left) / 2, h - 10, (h - bottom) / 2,
      HtmlEscape(axes.aria_label), HtmlEscape(axes.x_label), HtmlEscape(axes.y_label));
  for (int k = static_cast<int>(std::floor(x0)); k <= static_cast<int>(std::ceil(x1)); ++k) {
    if (k < x0 - 1e-9 || k > x1 + 1e-9) continue;
    svg += fmt::format(
        "<text x=\"{:.1f}\" y=\"{}\" font-size=\"11\" text-anchor=\"middle\">{}"
        "</text>\n",
        px(std::pow(10.0, k)), h - bottom + 16, HtmlEscape(axes.x_tick(std::pow(10.0, k))));
  }
  for (int k = static_cast<int>(std::floor(y0)); k <= static_cast<int>(std::ceil(y1)); ++k) {
    if (k < y0 - 1e-9 || k > y1 + 1e-9) continue;
    svg += fmt::format(
        "<text x=\"{}\" y=\"{:.1f}\" font-size=\"11\" text-anchor=\"end\">{}"
        "</text>\n",
        left - 4, py(std::pow(10.0, k)) + 4, HtmlEscape(axes.y_tick(std::pow(10.0, k))));
  }
  std::string front_path;
  for (int i : front) {
    const ScatterPoint& p = points[static_cast<size_t>(i)];
    front_path += fmt::format("{}{:.1f},{:.1f}", front_path.empty() ? "M" : " L", px(p.x), py(p.y));
  }
  if (!front_path.empty()) {
    svg +=
        "<path d=\"" + front_path + "\" fill=\"none\" stroke=\"#1f77b4\" stroke-width=\"1.5\"/>\n";
  }
  for (const ScatterPoint& p : points) {
    svg += fmt::format(
        "<circle class=\"{}\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"{}\" fill=\"{}\" "
        "fill-opacity=\"{}\"><title>{}</title></circle>\n",
        p.front ? "pareto" : "point", px(p.x), py(p.y), p.front ? 5 : 3,
        p.front ? "#1f77b4" : (p.highlight ? "#ff7f0e" : "#999"),
        p.front || p.highlight ? 0.95 : 0.45, HtmlEscape(p.title));
    if (!p.label.empty()) {
      svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"10\">{}</text>\n",
                         px(p.x) + 6, py(p.y) - 6, HtmlEscape(p.label));
    }
  }
  return svg + "</svg>\n";
}

std::string HtmlPage(const std::string& title, const std::string& body) {
  return fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
      "<title>{0}</title>\n<style>\n"
      "body{{font-family:system-ui,sans-serif;margin:2em;color:#222}}"
      "table{{border-collapse:collapse}}td,th{{padding:4px 8px;border-bottom:1px solid #ddd;"
      "text-align:left;vertical-align:top}}tr.detail td{{font-size:0.85em;color:#555}}"
      "ul.warn{{color:#a33;margin:4px 0}}\n</style></head><body>\n"
      "<h1>{0}</h1>\n{1}</body></html>\n",
      HtmlEscape(title), body);
}

std::string LayoutLabel(const workload::Training& t) {
  std::string s = fmt::format("tp{} pp{} dp{} z{} {} mb{}", t.tp, t.pp, t.dp, t.zero_stage,
                              RecomputeShort(t.recompute), t.micro_batch);
  if (t.vpp > 1) s += fmt::format(" v{}", t.vpp);
  if (t.cp > 1) s += fmt::format(" cp{}", t.cp);
  if (t.ep > 1) s += fmt::format(" ep{}", t.ep);
  return s;
}

json PlanJson(const PlanResult& r, const catalog::Catalog& catalog) {
  json candidates = json::array();
  for (size_t i = 0; i < TopCount(r); ++i) {
    candidates.push_back(CandidateJson(r.candidates[i], r, catalog));
  }
  json pareto = json::array();
  for (int i : r.pareto) {
    const Candidate& c = r.candidates[i];
    const catalog::Offer& o = catalog.offers()[c.offer];
    pareto.push_back({{"rank", c.rank},
                      {"provider", o.provider},
                      {"instance_type", o.instance_type},
                      {"region", o.region},
                      {"gpu", o.gpu},
                      {"gpu_count", o.gpu_count * c.nodes},
                      {"nodes", c.nodes},
                      {"pricing", std::string(PricingModelName(c.pricing))},
                      {"parallel", LayoutLabel(c.layout.training)},
                      {"total_hours", Round(c.run.total_seconds / 3600.0, 3)},
                      {"expected_usd", Round(c.run.expected_usd, 2)}});
  }
  json j;
  j["model"] = {{"name", r.model.name},
                {"parameters", workload::ParameterCount(r.model)},
                {"kind", std::string(workload::ModelKindName(r.model.kind))}};
  j["work"] = {{"units", r.units_are_samples ? "samples" : "tokens"},
               {"amount", r.work_units},
               {"seq_len", r.spec.training.seq_len},
               {"precision", std::string(workload::PrecisionName(r.spec.training.precision))},
               {"method", std::string(workload::MethodName(r.spec.training.method))}};
  j["objective"] = std::string(ObjectiveName(r.objective));
  // The spec's limits, for `fulcrum run --plan` (its --deadline / --budget-usd when not given).
  const Constraints& limits = r.spec.constraints;
  j["constraints"] = {
      {"deadline_seconds", limits.deadline_seconds ? json(*limits.deadline_seconds) : json()},
      {"budget_usd", limits.budget_usd ? json(*limits.budget_usd) : json()}};
  j["reference"] = {{"saturation_hours", Round(r.reference.saturation_seconds / 3600.0, 3)},
                    {"cheapest_feasible_usd", Round(r.reference.cheapest_usd, 2)},
                    {"cheapest_feasible_p90_usd", Round(r.reference.cheapest_p90_usd, 2)},
                    {"nearest_miss_factor",
                     r.nearest_miss_factor > 0 ? Round(r.nearest_miss_factor, 4) : json(nullptr)},
                    {"near_miss_tolerance", kNearMissTolerance}};
  j["candidates"] = std::move(candidates);
  j["pareto"] = std::move(pareto);
  j["searched"] = {{"configurations", r.configurations},
                   {"seconds", Round(r.seconds, 4)},
                   {"offers", r.offers_considered},
                   {"hardware_classes", r.hardware_classes},
                   {"candidates", r.candidates.size()},
                   {"spot_not_simulated", r.spot_pruned},
                   {"threads", r.threads}};
  // The frameworks the layouts were tried under (names --framework takes) and why.
  std::vector<std::string> frameworks;
  for (int i = 0; i < workload::kFrameworkCount; ++i) {
    const auto f = static_cast<workload::Framework>(i);
    if (r.frameworks & workload::FrameworkBit(f))
      frameworks.emplace_back(workload::FrameworkName(f));
  }
  j["searched"]["frameworks"] = frameworks;
  j["searched"]["frameworks_from"] =
      r.frameworks_reason.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.frameworks_reason);
  j["notes"] = r.notes;
  return j;
}

std::string PlanTable(const PlanResult& r, const catalog::Catalog& catalog) {
  const std::string unit = r.units_are_samples ? "samples/s" : "tok/s";
  Table table({"#", "provider", "instance", "region", "GPUs", "pricing", "framework", "layout",
               "mem", unit, "time", "cost", "score", "warn"},
              {Align::kRight, Align::kLeft, Align::kLeft, Align::kLeft, Align::kLeft, Align::kLeft,
               Align::kLeft, Align::kLeft, Align::kRight, Align::kRight, Align::kRight,
               Align::kRight, Align::kRight, Align::kRight});
  std::string footnotes;
  bool any_resume_bound = false;
  bool any_unconfirmed = false;
  for (size_t i = 0; i < TopCount(r); ++i) {
    const Candidate& c = r.candidates[i];
    const catalog::Offer& o = catalog.offers()[c.offer];
    // The larger of the fresh and the resume peak; "R" where the resume (checkpoint load) is it.
    const bool resume_bound =
        c.layout.resume.peak_at_resume_bytes_per_gpu > c.layout.memory.peak_bytes_per_gpu;
    any_resume_bound = any_resume_bound || resume_bound;
    const double used = estimate::FitPeakBytes(c.layout.memory, c.layout.resume) / c.capacity_bytes;
    const std::vector<std::string> codes = PitfallCodes(c.warnings);
    // A global batch other than the spec's stands in the layout itself (gb129), not only in
    // the footnotes.
    std::string layout = LayoutLabel(c.layout.training);
    if (c.warnings & kPitfallGlobalBatchChanged) {
      layout += fmt::format(" gb{}", c.layout.training.global_batch);
    }
    any_unconfirmed = any_unconfirmed || c.unconfirmed != 0;
    table.AddRow({std::to_string(c.rank) + (c.unconfirmed ? "?" : "") + (c.pareto ? "*" : ""),
                  o.provider, o.instance_type, o.region, GpuLabel(c, o),
                  std::string(PricingModelName(c.pricing)), FrameworkLabel(c.layout.training),
                  layout, fmt::format("{:.0f}%{}", used * 100, resume_bound ? "R" : ""),
                  Rate(c.work_units_per_second), FormatDuration(c.run.total_seconds),
                  FormatUsd(c.run.expected_usd), fmt::format("{:.3f}", c.score.total),
                  codes.empty() ? "-" : std::to_string(codes.size())});
    for (const std::string& code : codes) {
      std::string detail;
      if (code == PitfallCode(kPitfallGlobalBatchChanged)) {
        detail = fmt::format(" (spec {} -> {} sequences)", r.spec.training.global_batch,
                             c.layout.training.global_batch);
      } else if (code == PitfallCode(kPitfallCatalogCaveat)) {
        detail = CaveatDetail(o, catalog);
      }
      footnotes += fmt::format("  #{} {}{}\n", c.rank, code, detail);
    }
  }
  std::string out =
      fmt::format("plan: {} ({:.3g} B parameters), {:.3g} {}{}, {} {}\n", r.model.name,
                  workload::ParameterCount(r.model) / 1e9, r.work_units,
                  r.units_are_samples ? "samples" : "tokens",
                  r.units_are_samples ? "" : fmt::format(" at seq {}", r.spec.training.seq_len),
                  workload::PrecisionName(r.spec.training.precision),
                  workload::MethodName(r.spec.training.method));
  if (r.candidates.empty()) {
    out +=
        "no offer fits: no layout leaves the required memory headroom on any offer that passes "
        "the filters (try more GPUs with --max-gpus, another method, or fewer filters)\n";
  } else {
    out += table.Render();
    out += RankedByLine(r);
    if (any_unconfirmed) {
      out += UnconfirmedFootnote(r.spec.unconfirmed_last, "rows that meet the constraints",
                                 "the objective");
    }
    out += any_resume_bound
               ? "mem: the larger of the fresh and the resume peak per GPU; R: the resume "
                 "(checkpoint load) peak is the larger\n"
               : "mem: the larger of the fresh and the resume peak per GPU (here the fresh one)\n";
  }
  out += fmt::format(
      "searched {} configurations on {} offers ({} hardware classes) in {:.3f} s on {} threads; "
      "{} candidates, {} on the Pareto front (*)\n",
      r.configurations, r.offers_considered, r.hardware_classes, r.seconds, r.threads,
      r.candidates.size(), r.pareto.size());
  if (r.spot_pruned > 0) {
    out += fmt::format(
        "({} spot candidates provably outside the top {} and the Pareto front were not "
        "simulated)\n",
        r.spot_pruned, r.spec.top);
  }
  if (!footnotes.empty()) out += "warnings:\n" + footnotes;
  for (const std::string& note : r.notes) out += "note: " + note + "\n";
  return out;
}

std::string PlanHtml(const PlanResult& r, const catalog::Catalog& catalog) {
  std::vector<ScatterPoint> points;
  for (const Candidate& c : r.candidates) {
    const catalog::Offer& o = catalog.offers()[c.offer];
    ScatterPoint p;
    p.x = c.run.total_seconds / 3600.0;
    p.y = c.run.expected_usd;
    p.front = c.pareto;
    p.highlight = c.rank <= r.spec.top;
    p.title = fmt::format("#{} {} {} {} {} - {} - {}", c.rank, o.provider, o.instance_type,
                          GpuLabel(c, o), PricingModelName(c.pricing),
                          FormatDuration(c.run.total_seconds), FormatUsd(c.run.expected_usd));
    if (p.highlight) p.label = std::to_string(c.rank);
    points.push_back(std::move(p));
  }
  std::vector<int> front(r.pareto.begin(), r.pareto.end());
  ScatterAxes axes;
  axes.aria_label = "Pareto front of total time and expected cost";
  axes.x_label = "total time (hours, log scale)";
  axes.y_label = "expected cost (USD, log scale)";
  axes.x_tick = [](double hours) { return FormatDuration(hours * 3600); };
  axes.y_tick = [](double usd) { return fmt::format("${}", Rate(usd)); };
  const std::string svg = ScatterSvg(points, front, axes);

  std::string rows;
  for (size_t i = 0; i < TopCount(r); ++i) {
    const Candidate& c = r.candidates[i];
    const catalog::Offer& o = catalog.offers()[c.offer];
    const estimate::StepTime& st = c.layout.step;
    const estimate::MemoryBreakdown& m = c.layout.memory;
    std::string warnings;
    for (int bit = 0; bit < kPitfallCount; ++bit) {
      if (c.warnings & (1u << bit)) {
        warnings += "<li>" + HtmlEscape(PitfallMessage(static_cast<Pitfall>(1u << bit))) + "</li>";
      }
    }
    rows += fmt::format(
        "<tr><td>{}{}</td><td>{} / {} / {}</td><td>{}</td><td>{}</td><td>{}</td>"
        "<td>{:.0f}%</td><td>{}</td><td>{}</td><td>{}</td><td>{:.3f}</td></tr>\n"
        "<tr class=\"detail\"><td></td><td colspan=\"9\">step {:.3f} s: compute {:.3f} s, "
        "communication {:.3f} s (exposed {:.3f} s), bubble {:.3f} s; MFU {:.1f}%, HFU {:.1f}%. "
        "Memory per GPU: weights {}, gradients {}, optimizer {}, activations {}, other {} "
        "(peak {} of {}). Scores: stability {:.2f}, performance {:.2f}, cost {:.2f}, usability "
        "{:.2f}, support {:.2f}.{}</td></tr>\n",
        c.rank, c.pareto ? "*" : "", HtmlEscape(o.provider), HtmlEscape(o.instance_type),
        HtmlEscape(o.region), HtmlEscape(GpuLabel(c, o)), PricingModelName(c.pricing),
        HtmlEscape(LayoutLabel(c.layout.training)), 100 * m.peak_bytes_per_gpu / c.capacity_bytes,
        Rate(c.work_units_per_second), FormatDuration(c.run.total_seconds),
        HtmlEscape(FormatUsd(c.run.expected_usd)), c.score.total, st.step_seconds,
        st.compute_seconds, st.communication_seconds, st.exposed_seconds, st.bubble_seconds,
        100 * st.mfu, 100 * st.hfu, FormatBytes(m.weights_bytes), FormatBytes(m.gradients_bytes),
        FormatBytes(m.optimizer_bytes), FormatBytes(m.activations_bytes),
        FormatBytes(m.other_bytes), FormatBytes(m.peak_bytes_per_gpu),
        FormatBytes(c.capacity_bytes), c.score.stability, c.score.performance, c.score.cost,
        c.score.usability, c.score.support,
        warnings.empty() ? "" : "<ul class=\"warn\">" + warnings + "</ul>");
  }
  std::string notes;
  for (const std::string& n : r.notes) notes += "<li>" + HtmlEscape(n) + "</li>";
  return HtmlPage(
      "fulcrum plan: " + r.model.name,
      fmt::format(
          "<p>{0:.2f} B parameters, {1:.3g} {2}, sequence length {3}, {4}, {5}. Searched {6} "
          "configurations on {7} offers in {8:.3f} s.</p>\n"
          "<h2>Time vs cost</h2>\n<p>Every candidate (offer x nodes x pricing, with its fastest "
          "layout); blue: the Pareto front; orange: the top {9} by score (labels are ranks).</p>\n"
          "{10}<h2>Top candidates</h2>\n<table><thead><tr><th>#</th><th>offer</th><th>GPUs</th>"
          "<th>pricing</th><th>layout</th><th>memory</th><th>{11}</th><th>time</th><th>cost</th>"
          "<th>score</th></tr></thead><tbody>\n{12}</tbody></table>\n<ul>{13}</ul>\n",
          workload::ParameterCount(r.model) / 1e9, r.work_units,
          r.units_are_samples ? "samples" : "tokens", r.spec.training.seq_len,
          workload::PrecisionName(r.spec.training.precision),
          workload::MethodName(r.spec.training.method), r.configurations, r.offers_considered,
          r.seconds, r.spec.top, svg, r.units_are_samples ? "samples/s" : "tokens/s", rows, notes));
}

}  // namespace fulcrum::plan
