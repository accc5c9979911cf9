#include "goodput_accuracy.h"

#include <algorithm>
#include <cstddef>
#include <iostream>

#include <fmt/format.h>

#include "plan/cost.h"

namespace fulcrum::calibrate {
namespace {

std::string GoodputMarkdown(const std::vector<plan::GoodputRun>& runs) {
  plan::CostAssumptions all;
  plan::FitGoodput(runs, all);
  std::string out =
      "\n## Goodput of long runs (plan time and cost)\n\n"
      "Rows: catalog/goodput.csv (published runs: GPUs, steady-state days = the work at the "
      "run's steady throughput, end-to-end days; each row names its sources and the figures it "
      "is computed from). `plan` quotes a run's time as its steady-state time plus start-up, "
      "checkpoint writes, hardware interruptions (Llama 3 Table 5 rates: restart, checkpoint "
      "load, work since the last checkpoint) and the losses beyond those: the mean over the "
      "rows of the end-to-end / steady-state overhead the hardware model leaves unexplained " +
      fmt::format("({:.3f} of the steady-state time)", all.goodput_extra_overhead) +
      ", in proportion to the GPUs below the smallest run's " +
      fmt::format("({:.0f} GPUs)", all.goodput_reference_gpus) +
      ". Quote = steady / expected time (goodput_fraction); **left-out** = fitted without the "
      "row; inside = the published end-to-end time is within the left-out quote's P90 time.\n\n"
      "| run | GPUs | steady d | published end-to-end d | published ratio | quote (all) | "
      "quote (left out) | left-out P90 d | inside |\n"
      "| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n";
  for (size_t i = 0; i < runs.size(); ++i) {
    std::vector<plan::GoodputRun> others = runs;
    others.erase(others.begin() + static_cast<std::ptrdiff_t>(i));
    plan::CostAssumptions left_out;
    plan::FitGoodput(others, left_out);
    const plan::GoodputRun& r = runs[i];
    const plan::RunCost quote = plan::QuotePublishedRun(r, all);
    const plan::RunCost loo = plan::QuotePublishedRun(r, left_out);
    const double p90_days = loo.p90_seconds / 86400.0;
    out += fmt::format(
        "| {} | {} | {:.2f} | {:.2f} | {:.3f} | {:.3f} | {:.3f} | {:.2f} | {} |\n", r.run, r.gpus,
        r.steady_days, r.end_to_end_days, r.steady_days / r.end_to_end_days, quote.goodput_fraction,
        loo.goodput_fraction, p90_days, r.end_to_end_days <= p90_days ? "yes" : "no (longer)");
  }
  double lost_min = 1, lost_max = 0, hardware_min = 1, hardware_max = 0;
  plan::CostAssumptions hardware;  // no table: hardware interruptions only
  for (const plan::GoodputRun& r : runs) {
    const double lost = 1 - r.steady_days / r.end_to_end_days;
    lost_min = std::min(lost_min, lost);
    lost_max = std::max(lost_max, lost);
    const double h = 1 - plan::QuotePublishedRun(r, hardware).goodput_fraction;
    hardware_min = std::min(hardware_min, h);
    hardware_max = std::max(hardware_max, h);
  }
  out += fmt::format(
      "\nThe hardware model alone loses {:.1f}-{:.1f} % of these runs' time; they lost "
      "{:.1f}-{:.1f} %. The fit is a mean over very different runs (a public supercomputer, a "
      "managed platform, Meta's own tooling): a run's losses depend on its software and "
      "operators more than on its size, so a left-out quote misses by the spread of the rows. "
      "OPT-175B's logbook (facebookresearch/metaseq) was not reduced to a steady-state / "
      "end-to-end pair: it is not in the table.\n",
      100 * hardware_min, 100 * hardware_max, 100 * lost_min, 100 * lost_max);
  return out;
}

}  // namespace

bool AddGoodputAccuracy(const std::string& root,
                        std::vector<std::pair<std::string, std::string>>& outputs) {
  Result<std::vector<plan::GoodputRun>> runs = plan::LoadGoodputRuns(root + "/catalog");
  if (!runs.ok()) {
    std::cerr << "fulcrum-calibrate: " << runs.status().message() << "\n";
    return false;
  }
  for (auto& [path, text] : outputs) {
    if (path == root + "/docs/ACCURACY.md") text += GoodputMarkdown(*runs);
  }
  return true;
}

}  // namespace fulcrum::calibrate
