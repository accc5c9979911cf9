#include "resume_accuracy.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <sstream>

#include "calibration_data.h"
#include "calibration_fit.h"

namespace fulcrum::calibrate {
namespace {

std::string Gib(double bytes) { return Format("%.2f", bytes / (1024.0 * 1024 * 1024)); }

// Summary lines: the error of the resume figure and the measured resume / fresh ratio, per
// framework and format and over every row.
void SummaryTable(const std::vector<CalibrationRow>& rows, std::ostringstream& out) {
  // ratio_errors: the predicted resume / fresh ratio against the measured one, which takes the
  // fresh model's own error out of the figure.
  std::map<std::string, std::vector<double>> errors, ratios, ratio_errors;
  const estimate::TimeCalibration unused;
  for (const CalibrationRow& row : rows) {
    const std::optional<double> e = RelativeError(row, unused);
    const std::string key =
        row.input ? std::string(workload::FrameworkName(row.input->training.framework)) + " / " +
                        std::string(workload::CheckpointFormatName(row.resume_memory.format))
                  : "refused";
    const double measured_ratio = row.measured / row.fresh_measured;
    const double predicted_ratio =
        row.input ? row.memory_value / row.memory.allocated_bytes : 10 * measured_ratio;
    for (const std::string& k : {key, std::string("all")}) {
      errors[k].push_back(std::abs(e.value_or(10)));
      ratios[k].push_back(measured_ratio - 1);
      ratio_errors[k].push_back(std::abs(predicted_ratio / measured_ratio - 1));
    }
  }
  out << "| framework / format | rows | median error | P90 error | max error | measured resume "
         "over fresh: median | max | resume / fresh ratio error: median | P90 "
         "|\n|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& [key, e] : errors) {
    const ErrorSummary s = Summarize(e);
    std::vector<double> r = ratios[key];
    std::sort(r.begin(), r.end());
    out << "| " << key << " | " << s.rows << " | " << Percent(s.median) << " | " << Percent(s.p90)
        << " | " << Percent(s.max) << " | " << SignedPercent(r[r.size() / 2]) << " | "
        << SignedPercent(r.back()) << " | " << Percent(Summarize(ratio_errors[key]).median) << " | "
        << Percent(Summarize(ratio_errors[key]).p90) << " |\n";
  }
}

void RowTable(const std::vector<CalibrationRow>& rows, std::ostringstream& out) {
  out << "| id | model | gpu x n | layout, format | fresh measured | resume measured | resume "
         "predicted (GiB allocated, last rank) | error | load transient | bound "
         "|\n|---|---|---|---|---|---|---|---|---|---|\n";
  const estimate::TimeCalibration unused;
  for (const CalibrationRow& row : rows) {
    out << "| " << row.id << " | " << row.model << " | " << row.gpu << " | " << row.layout << " | "
        << Gib(row.fresh_measured) << " | " << Gib(row.measured)
        << " (" + SignedPercent(row.measured / row.fresh_measured - 1) + ")"
        << " | ";
    if (!row.input) {
      out << "refused | " << row.refused << " | | |\n";
      continue;
    }
    const estimate::ResumeMemory& r = row.resume_memory;
    out << Gib(row.memory_value) << " | " << SignedPercent(RelativeError(row, unused).value_or(0))
        << " | " << Gib(r.load_transient_bytes) << " | "
        << (r.load_bound ? "load" : "training step") << " |\n";
  }
}

std::string ResumeMarkdown(const std::vector<CalibrationRow>& rows) {
  std::ostringstream out;
  out << "\n## Memory at resume\n\n"
         "`memory.peak_at_resume_bytes_per_gpu` (estimate --json; plan and fit use the larger of "
         "it and the fresh peak) is the peak of a process that resumes from its checkpoint: the "
         "larger of the load (the model states with what the format's load path materialises "
         "beside them: src/estimate/resume.cc names the code of each framework's load path) and a "
         "training step (the fresh peak plus what the load leaves allocated). Scored against "
         "the resume tests of Megatron-LM's CI (data/calibration/resume.csv: the largest "
         "`mem-max-allocated-bytes` the last rank logs in the resumed run, `*_2nd.json` golden "
         "values, beside the fresh run's peak from the same test). These are the only sourced "
         "resume measurements found: DeepSpeed, PyTorch FSDP/DCP and the HF Trainer publish no "
         "memory figure of a resumed run, so their formats are modelled from their load code "
         "only. The memory model has no fitted constant: the figures are left-out figures.\n\n";
  SummaryTable(rows, out);
  out << "\nThe errors compare the predicted resume peak with the measured one, so they hold the "
         "fresh model's error on these small models (docs/ACCURACY.md, \"Memory, per row\"); the "
         "ratio error compares the predicted resume / fresh ratio with the measured one: what the "
         "resume model itself gets wrong.\n";
  out << "\nWhat the measurements say: in most tests the resumed peak equals the fresh one "
         "within 0.5 % (median +0.0 %): Megatron's torch_dist and torch loads fill the live "
         "tensors in place, and the load holds no activations, so a training step sets the "
         "peak. The exceptions are not modelled: on some platforms a copy about the size of "
         "the optimizer states stays allocated after a torch_dist resume (tp 2 pp 2 cp 2 and "
         "the cross-entropy-fusion test on H100, +10-20 %; the tp 1 pp 4 interleaved and tp 4 "
         "overlap tests on A100, +6 %; the same tests on the other platforms +0 %); the MoE "
         "test with two distributed-optimizer instances peaks +33 % above fresh during the load "
         "on H100; and Megatron-FSDP's fsdp_dtensor resume keeps about 1.9 GiB more allocated "
         "through the resumed run than the fresh run (+76 % peak), of which the model explains "
         "only the load's dummy optimizer step.\n\n";
  RowTable(rows, out);
  return out.str();
}

}  // namespace

bool AddResumeAccuracy(const std::string& root,
                       std::vector<std::pair<std::string, std::string>>& outputs) {
  Result<std::vector<CalibrationRow>> rows = LoadResumeRows(root);
  if (!rows.ok()) {
    std::cerr << "fulcrum-calibrate: " << rows.status().message() << "\n";
    return false;
  }
  for (auto& [path, text] : outputs) {
    if (path == root + "/docs/ACCURACY.md") text += ResumeMarkdown(*rows);
  }
  return true;
}

}  // namespace fulcrum::calibrate
