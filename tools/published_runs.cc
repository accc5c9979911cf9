#include "published_runs.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>

#include "calibration_data.h"
#include "calibration_fit.h"
#include "estimate/estimate.h"
#include "estimate/uncertainty.h"

namespace fulcrum::calibrate {
namespace {

// The generated bands as the estimator's table (views into `bands`, which must outlive it).
estimate::UncertaintyTable TableOf(const GeneratedBands& bands) {
  estimate::UncertaintyTable table;
  for (const GeneratedFamilyBand& b : bands.families) {
    table.families.push_back({b.family, b.step, b.step_new_architecture, b.memory});
  }
  table.points = bands.points;
  return table;
}

struct Scored {
  double predicted = 0, low = 0, high = 0;  // the metric, and its P10-P90 band
  bool inside = false;
  double error = 0;           // (predicted - published) / published
  double left_out_error = 0;  // the same, fitted without the band's calibration family
  std::string left_out;       // that family
  std::string fit;            // fits | tight | does not fit, and which peak bounds it
};

using LeftOutFits = std::map<std::string, estimate::TimeCalibration>;

double MetricOf(const PublishedRun& run, const estimate::StepTime& st) {
  return run.metric == "mfu" ? st.mfu : st.tokens_per_second_per_gpu;
}

std::optional<Scored> Score(const PublishedRun& run, const estimate::TimeCalibration& fitted,
                            const LeftOutFits& left_out, const estimate::UncertaintyTable& table) {
  if (!run.input) return std::nullopt;
  const estimate::EstimateInput& in = *run.input;
  const std::optional<estimate::Hardware> hw =
      estimate::HardwareFor(in.gpu, run.node, in.training.precision, fitted);
  if (!hw) return std::nullopt;
  const estimate::StepTime st = estimate::EstimateStepTime(in.model, in.training, *hw, fitted);
  const estimate::StepBand band = estimate::BandFor(table, in.model, in.gpus, true);
  Scored s;
  // Throughput and MFU are inverse to the step time: the slow end (P90 step) is the low end.
  s.predicted = MetricOf(run, st);
  s.low = s.predicted / band.step_p90_ratio;
  s.high = s.predicted / band.step_p10_ratio;
  s.inside = run.published >= s.low && run.published <= s.high;
  s.error = (s.predicted - run.published) / run.published;
  // Left out: the constants fitted without the family whose band the run takes ("dle/resnet50"
  // is family dle), i.e. as if the calibration rows nearest to the run had not been seen.
  s.left_out = std::string(band.family.substr(0, band.family.find('/')));
  s.left_out_error = s.error;
  const auto without = left_out.find(s.left_out);
  if (without != left_out.end()) {
    const std::optional<estimate::Hardware> hw_out =
        estimate::HardwareFor(in.gpu, run.node, in.training.precision, without->second);
    if (hw_out) {
      const estimate::StepTime out =
          estimate::EstimateStepTime(in.model, in.training, *hw_out, without->second);
      s.left_out_error = (MetricOf(run, out) - run.published) / run.published;
    }
  }
  const estimate::EstimateResult r = estimate::Evaluate(in);
  s.fit = std::string(estimate::FitVerdictName(r.verdict)) + " (" +
          estimate::FitBoundName(r.memory, r.resume) + ")";
  return s;
}

std::string Metric(const PublishedRun& run, double v) {
  return run.metric == "mfu" ? Percent(v) + " MFU" : Format("%.0f", v) + " tok/s/GPU";
}

std::string PublishedMarkdown(const std::vector<PublishedRun>& runs,
                              const estimate::TimeCalibration& fitted, const LeftOutFits& left_out,
                              const GeneratedBands& bands) {
  const estimate::UncertaintyTable table = TableOf(bands);
  std::ostringstream rows;
  std::map<std::string, std::vector<double>> errors, left_out_errors;
  std::map<std::string, int> inside;
  for (const PublishedRun& run : runs) {
    rows << "| " << run.id << " | " << run.kind << " | " << run.model << " | " << run.gpu << " | "
         << run.layout << " | " << run.batch << " | " << run.precision << " | "
         << Metric(run, run.published) << " | ";
    const std::optional<Scored> s = Score(run, fitted, left_out, table);
    if (!s) {
      rows << "refused: " << (run.refused.empty() ? "no peak for the precision" : run.refused)
           << " | | | | | |\n";
      for (const std::string& k : {run.kind, std::string("all")}) {
        errors[k].push_back(10);
        left_out_errors[k].push_back(10);
      }
      continue;
    }
    rows << Metric(run, s->predicted) << " | " << SignedPercent(s->error) << " | "
         << SignedPercent(s->left_out_error) << " (" << s->left_out << ") | " << Metric(run, s->low)
         << " - " << Metric(run, s->high) << " | " << (s->inside ? "yes" : "no") << " | " << s->fit
         << " |\n";
    for (const std::string& k : {run.kind, std::string("all")}) {
      errors[k].push_back(std::abs(s->error));
      left_out_errors[k].push_back(std::abs(s->left_out_error));
      inside[k] += s->inside ? 1 : 0;
    }
  }
  std::ostringstream out;
  out << "\n## Published runs\n\n"
         "Public training runs with the layout their paper, model card or benchmark table reports "
         "(data/calibration/published_runs.csv, each row with its source), against the estimate "
         "under the fitted constants and its P10-P90 band (the band of the calibration family the "
         "run resembles most, as `estimate` reports it). Only the BLOOM row is in the fit; the "
         "others are out of sample. `tuned_benchmark`: a vendor's benchmark table; "
         "`production_run`: a run that trained a released model. Goal (issue 31): at least 80 % "
         "inside the band, median error at most 15 %. **Left out**: predicted with the constants "
         "fitted without the calibration family whose band the run takes (named in brackets), "
         "as if the measurements nearest to the run had not been seen.\n\n"
         "| runs | rows | median error | P90 error | left-out median | left-out P90 | inside "
         "P10-P90 |\n|---|---|---|---|---|---|---|\n";
  for (const auto& [kind, e] : errors) {
    const ErrorSummary s = Summarize(e);
    const ErrorSummary out_of_fit = Summarize(left_out_errors[kind]);
    out << "| " << kind << " | " << s.rows << " | " << Percent(s.median) << " | " << Percent(s.p90)
        << " | " << Percent(out_of_fit.median) << " | " << Percent(out_of_fit.p90) << " | "
        << inside[kind] << " of " << s.rows << " |\n";
  }
  out << "\n| id | kind | model | gpu x n | layout as published | micro/global batch x seq | "
         "precision | published | predicted | error | left-out error | P10-P90 | inside | "
         "memory |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n"
      << rows.str();
  return out.str();
}

}  // namespace

bool AddPublishedRuns(const std::string& root, const estimate::TimeCalibration& fitted,
                      const std::map<std::string, estimate::TimeCalibration>& left_out,
                      const GeneratedBands& bands,
                      std::vector<std::pair<std::string, std::string>>& outputs) {
  Result<std::vector<PublishedRun>> runs = LoadPublishedRuns(root);
  if (!runs.ok()) {
    std::cerr << "fulcrum-calibrate: " << runs.status().message() << "\n";
    return false;
  }
  for (auto& [path, text] : outputs) {
    if (path == root + "/docs/ACCURACY.md")
      text += PublishedMarkdown(*runs, fitted, left_out, bands);
  }
  return true;
}

}  // namespace fulcrum::calibrate
