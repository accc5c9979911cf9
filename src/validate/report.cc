#include "validate/report.h"

#include <fmt/format.h>

#include "core/html.h"
#include "core/table.h"
#include "server/web_assets.h"

namespace fulcrum::validate {
namespace {

nlohmann::json OrNull(const std::optional<double>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json();
}

// JSON inside <script>: "</" must not close the element.
std::string ScriptJson(const nlohmann::json& j) {
  std::string text = j.dump();
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '<' && i + 1 < text.size() && text[i + 1] == '/') {
      out += "<\\/";
      ++i;
    } else {
      out += text[i];
    }
  }
  return out;
}

std::string Cell(const std::optional<double>& v) {
  return v ? FormatNumber(*v, 2) : std::string("-");
}

}  // namespace

const char* VerdictName(Verdict verdict) {
  switch (verdict) {
    case Verdict::kPass:
      return "pass";
    case Verdict::kFail:
      return "fail";
    case Verdict::kSkipped:
      return "skipped";
  }
  return "skipped";
}

int ValidateExitCode(const ValidateReport& report) {
  for (const PhaseResult& p : report.phases)
    if (p.verdict == Verdict::kFail) return 3;
  return 0;
}

nlohmann::json ReportJson(const ValidateReport& report) {
  nlohmann::json phases = nlohmann::json::array();
  for (const PhaseResult& p : report.phases) {
    phases.push_back({{"name", p.name},
                      {"verdict", VerdictName(p.verdict)},
                      {"reasons", p.reasons},
                      {"metrics", p.metrics}});
  }
  nlohmann::json drills = nlohmann::json::array();
  for (const DrillResult& d : report.drills) {
    drills.push_back(
        {{"fault", d.fault},
         {"verdict", VerdictName(d.verdict)},
         {"detect_seconds", OrNull(d.detect_seconds)},
         {"resume_seconds", OrNull(d.resume_seconds)},
         {"lost_steps", d.lost_steps ? nlohmann::json(*d.lost_steps) : nlohmann::json()},
         {"resumed_from",
          d.resumed_from.empty() ? nlohmann::json() : nlohmann::json(d.resumed_from)},
         {"reason", d.reason}});
  }
  return {{"phases", phases}, {"drills", drills}};
}

std::string ReportText(const ValidateReport& report) {
  std::string out;
  for (const PhaseResult& p : report.phases) {
    out += fmt::format("{:<12} {:<8} {}\n", p.name, VerdictName(p.verdict),
                       p.reasons.empty() ? "" : p.reasons.front());
    for (size_t i = 1; i < p.reasons.size(); ++i) out += fmt::format("{:22}{}\n", "", p.reasons[i]);
  }
  if (!report.drills.empty()) {
    Table table({"drill", "verdict", "detect s", "resume s", "lost steps", "reason"});
    for (const DrillResult& d : report.drills) {
      table.AddRow({d.fault, VerdictName(d.verdict), Cell(d.detect_seconds), Cell(d.resume_seconds),
                    d.lost_steps ? std::to_string(*d.lost_steps) : "-", d.reason});
    }
    out += '\n';
    out += table.Render();
  }
  const int code = ValidateExitCode(report);
  out += code == 0 ? "\nvalidate: pass\n" : "\nvalidate: FAIL (exit 3)\n";
  return out;
}

std::string ReportHtml(const ValidateReport& report) {
  auto asset = [](std::string_view path) {
    const server::WebAsset* a = server::FindWebAsset(path);
    return a ? std::string(a->body) : std::string();
  };
  std::string body;
  body += "<h1>fulcrum validate: " + std::string(ValidateExitCode(report) == 0 ? "pass" : "FAIL") +
          "</h1>\n";
  body += "<table><tr><th>phase</th><th>verdict</th><th>reasons</th></tr>\n";
  for (const PhaseResult& p : report.phases) {
    std::string reasons;
    for (const auto& r : p.reasons) reasons += HtmlEscape(r) + "<br>";
    body += fmt::format("<tr class=\"{0}\"><td>{1}</td><td>{0}</td><td>{2}</td></tr>\n",
                        VerdictName(p.verdict), HtmlEscape(p.name), reasons);
  }
  body += "</table>\n";
  if (!report.drills.empty()) {
    body +=
        "<h2>Fault drills</h2>\n<table><tr><th>drill</th><th>verdict</th><th>detect s</th>"
        "<th>resume s</th><th>lost steps</th><th>resumed from</th><th>reason</th></tr>\n";
    for (const DrillResult& d : report.drills) {
      body += fmt::format(
          "<tr class=\"{0}\"><td>{1}</td><td>{0}</td><td>{2}</td><td>{3}</td><td>{4}</td>"
          "<td>{5}</td><td>{6}</td></tr>\n",
          VerdictName(d.verdict), HtmlEscape(d.fault), Cell(d.detect_seconds),
          Cell(d.resume_seconds), d.lost_steps ? std::to_string(*d.lost_steps) : "-",
          HtmlEscape(d.resumed_from), HtmlEscape(d.reason));
    }
    body += "</table>\n";
  }
  // The charts: one uPlot per series (the dashboard's chart library, embedded).
  nlohmann::json charts = nlohmann::json::array();
  if (!report.throughput.empty()) {
    nlohmann::json xs = nlohmann::json::array(), ys = nlohmann::json::array();
    for (const auto& [t, v] : report.throughput) xs.push_back(t), ys.push_back(v);
    charts.push_back({{"title", "job throughput (steps/s)"}, {"x", xs}, {"y", ys}});
  }
  for (const SeriesData& s : report.series) {
    nlohmann::json xs = nlohmann::json::array(), ys = nlohmann::json::array();
    for (const auto& [t, v] : s.points) xs.push_back(t), ys.push_back(v * s.scale);
    charts.push_back({{"title", s.title}, {"x", xs}, {"y", ys}});
  }
  if (!charts.empty()) body += "<h2>Stress</h2>\n<div id=\"charts\"></div>\n";
  std::string html =
      "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">\n"
      "<title>fulcrum validate</title>\n<style>\n" +
      asset("/assets/uPlot.min.css") +
      "\nbody{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
      "td,th{border:1px solid #ccc;padding:4px 8px;vertical-align:top}"
      "tr.pass td:nth-child(2){color:#080}tr.fail td:nth-child(2){color:#c00}"
      "tr.skipped td:nth-child(2){color:#888}.chart{display:inline-block;margin:8px}"
      "\n</style>\n<script>\n" +
      asset("/assets/uPlot.iife.min.js") + "\n</script>\n</head><body>\n" + body;
  html += "<script>\nconst CHARTS = " + ScriptJson(charts) + ";\n" +
          R"(for (const c of CHARTS) {
  const box = document.createElement('div');
  box.className = 'chart';
  box.dataset.title = c.title;
  box.dataset.points = c.x.length;
  document.getElementById('charts').appendChild(box);
  new uPlot({title: c.title, width: 520, height: 220,
             series: [{}, {label: c.title, stroke: '#3366cc', width: 1.5}]},
            [c.x, c.y], box);
}
</script>
</body></html>
)";
  return html;
}

}  // namespace fulcrum::validate
