#include "serve/report.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/html.h"
#include "plan/report.h"

namespace fulcrum::serve {
namespace {

std::string OfferLabel(const ServeCandidate& c) {
  return fmt::format("{} {} {} ({}x{}, tp {})", c.offer->provider, c.offer->instance_type,
                     c.offer->region, c.offer->gpu_count, c.gpu->name, c.tp);
}

std::string Rows(const std::vector<ServeCandidate>& candidates, size_t top) {
  std::string rows;
  for (size_t i = 0; i < candidates.size() && i < top; ++i) {
    const ServeCandidate& c = candidates[i];
    const ServeEstimate& e = c.estimate;
    std::string warnings;
    for (const std::string& w : c.warnings) warnings += "<li>" + HtmlEscape(w) + "</li>";
    rows += fmt::format(
        "<tr><td>{}{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.0f} / {:.0f}</td>"
        "<td>{:.1f} / {:.1f}</td><td>{:.2f}</td><td>{:.3f}</td><td>{:.0f}%</td></tr>\n"
        "<tr class=\"detail\"><td></td><td colspan=\"8\">weights {:.1f} GiB, KV cache {:.1f} "
        "KiB per token, peak {:.1f} of {:.1f} GiB per GPU (at most {} sequences); {:.0f} output "
        "tokens/s per replica; ${:.3f} per million input tokens.{}</td></tr>\n",
        std::to_string(i + 1) + (c.unconfirmed ? "?" : ""), c.pareto ? "*" : "",
        HtmlEscape(OfferLabel(c)), c.replicas, c.concurrency, e.speed.prefill_seconds * 1000,
        c.ttft_p90_seconds * 1000, e.speed.tpot_seconds * 1000, c.tpot_p90_seconds * 1000,
        c.usd_per_hour, c.usd_per_million_output_tokens, 100 * c.utilization,
        e.memory.weights_bytes / (1 << 30), e.memory.kv_cache_bytes_per_token / 1024,
        e.memory.peak_bytes_per_gpu / (1 << 30), e.memory.budget_bytes_per_gpu / (1 << 30),
        e.memory.max_concurrency, e.speed.output_tokens_per_second, c.usd_per_million_input_tokens,
        warnings.empty() ? "" : "<ul class=\"warn\">" + warnings + "</ul>");
  }
  return rows;
}

}  // namespace

std::string ServePlanHtml(const std::vector<ServeCandidate>& candidates,
                          const ServePlanSummary& s) {
  std::vector<plan::ScatterPoint> points;
  std::vector<int> front;
  for (size_t i = 0; i < candidates.size(); ++i) {
    const ServeCandidate& c = candidates[i];
    plan::ScatterPoint p;
    p.x = c.tpot_p90_seconds * 1000;  // what the targets and the Pareto front use
    p.y = c.usd_per_million_output_tokens;
    p.front = c.pareto;
    p.highlight = i < s.top;
    p.title = fmt::format("#{} {} - {:.1f} ms/token - ${:.3f}/M output tokens", i + 1,
                          OfferLabel(c), p.x, p.y);
    if (p.highlight) p.label = std::to_string(i + 1);
    if (c.pareto) front.push_back(static_cast<int>(i));
    points.push_back(std::move(p));
  }
  std::sort(front.begin(), front.end(), [&](int a, int b) {
    return points[static_cast<size_t>(a)].x < points[static_cast<size_t>(b)].x;
  });
  plan::ScatterAxes axes;
  axes.aria_label = "Pareto front of time per output token and cost per million output tokens";
  axes.x_label = "P90 time per output token (ms, log scale)";
  axes.y_label = "$ per million output tokens (log scale)";
  axes.x_tick = [](double ms) { return fmt::format("{:g} ms", ms); };
  axes.y_tick = [](double usd) { return fmt::format("${:g}", usd); };
  axes.x_min = 1e-2;
  axes.y_min = 1e-4;
  const std::string traffic = s.requests_per_second > 0
                                  ? fmt::format("{:g} requests/s", s.requests_per_second)
                                  : std::string("one instance per offer at full load");
  return plan::HtmlPage(
      "fulcrum serve-plan: " + s.model_name,
      fmt::format("<p>{:.2f} B parameters, engine {}, {}, {} input / {} output tokens per request, "
                  "{}. {} "
                  "candidates (offer x tensor-parallel layout), on-demand prices.</p>\n"
                  "<h2>Time per output token vs cost</h2>\n<p>blue: the Pareto front; orange: "
                  "the top {} by $ per million output tokens (labels are ranks).</p>\n{}"
                  "<h2>Top candidates</h2>\n<table><thead><tr><th>#</th><th>offer</th>"
                  "<th>replicas</th><th>sequences</th><th>TTFT ms (est / P90)</th><th>TPOT ms "
                  "(est / P90)</th><th>$/h</th><th>$/M out</th><th>util</th></tr></thead>"
                  "<tbody>\n{}</tbody></table>\n",
                  s.parameters / 1e9, EngineName(s.engine), PrecisionName(s.precision), s.input_len,
                  s.output_len, HtmlEscape(traffic), candidates.size(), s.top,
                  plan::ScatterSvg(points, front, axes), Rows(candidates, s.top)));
}

}  // namespace fulcrum::serve
